"""What a newcomer's session found in configs (a helper walking backends, live retrievers, executors and sweeps as
a careless user, 2026-12-04): a backend handed a user's folder (pgserver even changed its owner), tracebacks from a
database client, booleans read as numbers, sweep points overwriting each other, settings silently ignored. Each
case runs the command as a user does and checks the exit code, the located message, and the user's files."""

from __future__ import annotations

import json
import os

import pytest

from clihelp import DEMO, ROOT, assert_input_error, demo_config, harness
from conftest import require_installed

CONFIGS = ROOT / "configs"


def _user_files(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("hi\n")
    folder = tmp_path / "userdir"
    folder.mkdir()
    (folder / "meta.json").write_text('{"my": "notes"}')  # looks like a Qdrant store's file, is not one
    return afile, folder


def _state(*paths):
    return [(p.stat().st_uid, p.stat().st_mode, p.read_text() if p.is_file() else sorted(os.listdir(p)))
            for p in paths]


@pytest.mark.parametrize("kind", ["pgvector", "qdrant", "lancedb"])
def test_a_store_path_that_is_a_users_file_or_folder_is_refused_before_anything_touches_it(tmp_path, kind):
    afile, folder = _user_files(tmp_path)
    before = _state(afile, folder, folder / "meta.json")
    cfg = CONFIGS / f"demo-{kind}.yaml"
    assert_input_error(harness("validate", cfg, "--set", f"retriever.path={afile}"), "retriever.path", "is a file")
    if kind != "lancedb":  # a LanceDB database is a folder of table folders: it may share a folder
        proc = harness("run", cfg, "--set", f"retriever.path={folder}", "--out", tmp_path / "out", "-q")
        assert_input_error(proc, "retriever.path", "holds other files")
    assert _state(afile, folder, folder / "meta.json") == before  # owner, mode and content as they were


def test_a_qdrant_server_that_is_not_there_is_one_line(tmp_path):
    require_installed("qdrant_client")
    proc = harness("run", CONFIGS / "demo-qdrant.yaml", "--set", "retriever.url=http://127.0.0.1:1",
                   "--set", "retriever.path=null", "--out", tmp_path / "out", "-q")
    assert_input_error(proc, "retriever.kind qdrant (http://127.0.0.1:1)", "failed")


def test_a_ray_address_with_no_cluster_is_one_line(tmp_path):
    require_installed("ray")
    proc = harness("run", CONFIGS / "demo-bm25.yaml", "--set", "executor.kind=ray", "--set", "executor.address=auto",
                   "--out", tmp_path / "out", "-q", fresh=True, env={"RAY_ADDRESS": ""})
    assert_input_error(proc, "executor.address 'auto': cannot connect")


def test_shards_of_a_retriever_that_cannot_be_sharded_are_found_by_validate(tmp_path):
    require_installed("ray")
    cfg = demo_config(tmp_path, retriever="{kind: bm25}", executor="{kind: ray, shards: 2}")
    assert_input_error(harness("validate", cfg), "executor.shards: 2", "backend: fast")
    cfg = demo_config(tmp_path, "h.yaml", retriever="{kind: hybrid, children: [{kind: bm25, backend: fast}]}",
                      executor="{kind: ray, shards: 2}")
    assert_input_error(harness("validate", cfg), "executor.shards: 2", "'hybrid' cannot be sharded")


@pytest.mark.parametrize("setting", ["cutoff.k=true", "retriever.k1=yes", "depth=false",
                                     "executor.num_workers=true"])
def test_a_boolean_is_not_a_number(tmp_path, setting):
    key = setting.split("=")[0]
    assert_input_error(harness("validate", CONFIGS / "demo-bm25.yaml", "--set", setting), key, "is a boolean")


@pytest.mark.parametrize("config, setting, keys", [
    ("demo-bm25.yaml", "cutoff=12", "(k, token_budget, tokenizer)"),
    ("demo-dense.yaml", "retriever.windows=12", "(overlap, size)"),
    ("demo-dense.yaml", "retriever.hnsw=[1]", "(M, efConstruction, efSearch)"),
])
def test_a_section_given_as_a_value_names_the_keys_it_takes(config, setting, keys):
    """Not pydantic's "a valid dictionary or instance of CutoffConfig": the class name means nothing to a user."""
    proc = harness("validate", CONFIGS / config, "--set", setting)
    assert_input_error(proc, setting.split("=")[0] + ": should be a mapping of keys " + keys)
    assert "instance of" not in proc.stderr


def test_the_same_set_key_twice_is_refused():
    proc = harness("validate", CONFIGS / "demo-bm25.yaml", "--set", "retriever.k1=1", "--set", "retriever.k1=2")
    assert_input_error(proc, "--set retriever.k1=2", "already set by --set retriever.k1=1")


@pytest.mark.parametrize("section, fragment", [
    ("{kind: http, url: 'http://127.0.0.1:9/s', method: GET, body: {q: '{query}'}}", "body: is not sent with method: GET"),
    ("{kind: http, url: 'http://127.0.0.1:9/s', params: {q: '{query}'}}", "params: is not sent with method: POST"),
    ("{kind: hybrid, children: [{kind: bm25, backend: fast}, {kind: http, url: 'http://127.0.0.1:9/s', "
     "on_error: skip}]}", "children.1.on_error: skip is not allowed inside a hybrid"),
])
def test_live_settings_that_would_be_ignored_or_hide_failures_are_refused(tmp_path, section, fragment):
    assert_input_error(harness("validate", demo_config(tmp_path, retriever=section)), fragment)


# ---- sweeps -------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("sweep, fragment", [
    ('{retriever.tokenizer.pattern: ["\\\\w+", "\\\\w+?"]}', "are both named"),  # both labelled w
    ("{retriever.k1: [1.2, 1.2]}", "sweep.retriever.k1.1: 1.2 repeats sweep.retriever.k1.0"),
    ('{retriever.k1: [1.2, "1.2"]}', "repeats"),
    ("{chunking.size: [1, 4], chunking: [{strategy: sentences, size: 2}]}", "sweep.chunking.size: inside sweep.chunking"),
])
def test_sweep_points_that_would_overwrite_or_undo_each_other_are_refused(tmp_path, sweep, fragment):
    cfg = demo_config(tmp_path, retriever="{kind: bm25, backend: fast, tokenizer: {pattern: '\\w+'}}")
    cfg.write_text(cfg.read_text() + f"sweep: {sweep}\n")
    assert_input_error(harness("validate", cfg), fragment)


# ---- run files and live answers -----------------------------------------------------------------------------------

def test_an_external_run_is_read_by_validate_and_its_scores_are_finite(tmp_path):
    run = tmp_path / "run.jsonl"
    cfg = demo_config(tmp_path, retriever=f"{{kind: external, path: {run}}}")
    for text, fragment in (("not json\n", "run.jsonl:1"),
                           ('{"query_id": "q01", "hits": [{"doc_id": "install-desktop", "score": 1e400}]}\n',
                            "not a finite number"),
                           ('{"query_id": "q01", "hits": [{"doc_id": "install-desktop", "score": 1' + "0" * 400 + '}]}\n',
                            "not a finite number")):
        run.write_text(text)
        assert_input_error(harness("validate", cfg), "retriever.path", fragment)
        assert_input_error(harness("eval", DEMO / "goldset.jsonl", run), "run.jsonl:1", fragment)


def test_an_external_run_of_other_query_ids_says_so(tmp_path):
    run = tmp_path / "run.jsonl"
    run.write_text('{"query_id": "Q01", "hits": [{"doc_id": "install-desktop", "score": 1.0}]}\n')
    cfg = demo_config(tmp_path, retriever=f"{{kind: external, path: {run}}}")
    proc = harness("run", cfg, "--out", tmp_path / "out", "-q")
    assert proc.returncode == 0, proc.stderr
    assert "no query in common with the golden set" in proc.stderr
    run.write_text('{"query_id": "q01", "hits": [{"doc_id": "install-desktop", "score": 1.0}]}\n')
    proc = harness("run", cfg, "--out", tmp_path / "out", "-q")
    assert "45 of 46 golden-set queries are absent from the run and score 0" in proc.stderr


def test_a_live_service_repeating_items_keeps_depth_distinct_ones(tmp_path):
    from test_backends_live import BASE, Service, run

    service = Service()
    try:
        bm25 = run({"kind": "bm25", "backend": "fast"}, tmp_path)
        service.answers = {q.text: [{"chunk_id": h.chunk_id, "score": h.score} for h in q.hits] * 3
                           for q in bm25.queries}
        service.shape = lambda hits: {"hits": hits * 3}  # each item three times, more than depth in all
        live = run({"kind": "http", "url": service.url + "/s"}, tmp_path)
        assert [[h.chunk_id for h in q.hits] for q in live.queries] == [[h.chunk_id for h in q.hits]
                                                                       for q in bm25.queries]
        assert live.summary.doc == bm25.summary.doc
        # and a score no float can hold is the service's error, said per query (on_error: fail), not a crash
        service.shape = lambda hits: {"hits": [{"chunk_id": hits[0]["chunk_id"], "score": 10 ** 400}]}
        cfg = demo_config(tmp_path, "big.yaml", retriever=f"{{kind: http, url: '{service.url}/s'}}")
        proc = harness("run", cfg, "--out", tmp_path / "big", "-q")
        assert_input_error(proc, "is not a finite number")
    finally:
        service.stop()
    assert BASE["depth"] == 20


# ---- a review of the fixes above -------------------------------------------------------------------------------------

def test_a_missing_qdrant_client_is_still_one_line(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "qdrant_client", None)  # `import qdrant_client` raises ImportError
    proc = harness("run", CONFIGS / "demo-qdrant.yaml", "--out", tmp_path / "out", "-q")
    assert_input_error(proc, "rag-harness[qdrant]")


def test_cache_clear_names_files_it_cannot_remove(tmp_path, monkeypatch):
    from pathlib import Path

    kind = tmp_path / "c" / "embeddings"
    kind.mkdir(parents=True)
    for suffix in (".npz", ".sha256"):
        (kind / ("0123456789abcdef" * 2 + suffix)).write_bytes(b"x")
    unlink = Path.unlink

    def refuse(self, *args, **kwargs):  # another user's file in a shared cache (root may delete anything)
        if self.suffix == ".npz":
            raise PermissionError(1, "Operation not permitted")
        return unlink(self, *args, **kwargs)

    monkeypatch.setattr(Path, "unlink", refuse)
    assert_input_error(harness("cache", "clear", "--cache-dir", tmp_path / "c"), "1 of 2 cache files could not be "
                       "removed", "Operation not permitted")
    assert harness("cache", "info", "--cache-dir", tmp_path / "c", cwd=tmp_path / "c").returncode == 0  # absolute


def test_a_model_folder_with_a_sentencepiece_tokenizer_passes(tmp_path):
    from harness.retrievers.encoders import model_folder_problems

    (tmp_path / "config.json").write_text('{"model_type": "deberta-v2"}')
    (tmp_path / "spm.model").write_bytes(b"x")
    header = b'{"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}'
    (tmp_path / "model.safetensors").write_bytes(len(header).to_bytes(8, "little") + header + bytes(4))
    assert model_folder_problems(str(tmp_path), "retriever.model") == []


@pytest.mark.parametrize("settings, said", [
    (["chunking.strategy=none", "chunking.overlap=3"], ["chunking.size: has no effect with strategy none",
                                                        "chunking.overlap: has no effect with strategy none"]),
    (["chunking.unit=tokenizer", "chunking.tokenizer=tokenizer.json"],
     ["chunking.unit: has no effect with strategy sentences", "chunking.tokenizer: has no effect with strategy"]),
    (["cutoff.tokenizer=tokenizer.json"], ["cutoff.tokenizer: has no effect with k"]),
])
def test_a_setting_nothing_reads_is_a_warning_in_validate_and_run(tmp_path, settings, said):
    """A user who sets overlap for strategy none, or a tokenizer for a k cutoff, expects it to act: it is named."""
    cfg = demo_config(tmp_path, cutoff="{k: 3}", retriever="{kind: bm25}")
    args = [a for s in settings for a in ("--set", s)]
    for proc in (harness("validate", cfg, *args), harness("run", cfg, *args, "--out", tmp_path / "out", "-q")):
        assert proc.returncode == 0, proc.stderr
        for text in said:
            assert f"warning: {cfg}: {text}" in proc.stderr
    quiet = harness("validate", cfg)  # the settings as given act: nothing to say
    assert "has no effect" not in quiet.stderr


def test_a_token_budget_that_depth_cuts_short_is_a_warning(tmp_path):
    cfg = demo_config(tmp_path, retriever="{kind: bm25}", metrics="[hit@3]",
                      cutoff="{token_budget: 100000}", depth=3)
    proc = harness("run", cfg, "--out", tmp_path / "out", "-q")
    assert proc.returncode == 0, proc.stderr
    assert "queries all 3 retrieved chunks fit in the token budget (100000), so their window stops at depth (3)" \
        in proc.stderr
    enough = harness("run", cfg, "--set", "cutoff.token_budget=20", "--out", tmp_path / "out2", "-q")
    assert enough.returncode == 0 and "retrieved chunks fit" not in enough.stderr


@pytest.mark.parametrize("args, named", [
    (["run", "CFG", "--out", "A", "-o", "B"], "--out / -o"),
    (["cache", "info", "--dir", "A", "--cache-dir", "B"], "--cache-dir / --dir"),
    (["eval", "Q", "R", "--format=json", "--format", "tsv"], "--format"),
])
def test_an_option_of_one_value_given_twice_is_refused(tmp_path, args, named):
    """click keeps the last value and drops the other: the user meant one of them, and we cannot know which."""
    cfg = demo_config(tmp_path)
    args = [str(cfg) if a == "CFG" else str(tmp_path / a) if a in ("A", "B", "Q", "R") else a for a in args]
    proc = harness(*args)
    assert_input_error(proc, named, "given more than once")
    assert not (tmp_path / "A").exists() and not (tmp_path / "B").exists()
    repeatable = harness("run", cfg, "--set", "depth=120", "--set", "cutoff.k=4", "-q", "-q", "-o", tmp_path / "out")
    assert repeatable.returncode == 0, repeatable.stderr


def test_a_key_given_twice_is_reported_with_the_configs_other_problems(tmp_path):
    """A newcomer's walk: the duplicate hid the unknown key until it was fixed; every problem is said at once."""
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(f"name: x\ncorpus: {{path: {DEMO / 'corpus.jsonl'}}}\ngoldset: {{path: {DEMO / 'goldset.jsonl'}}}\n"
                   "retriever: {kind: bm25}\ndepth: 100\ndepth: 200\ncutof: {k: 3}\n")
    proc = harness("validate", cfg)
    assert_input_error(proc, f"{cfg}:6: depth: key given twice (first on line 5)")
    assert "cutof: unknown key; did you mean 'cutoff'?" in proc.stderr
    cfg.write_text(cfg.read_text().replace("cutof: {k: 3}\n", ""))  # alone, it is still refused
    assert_input_error(harness("validate", cfg), "1 key(s) given twice", f"{cfg}:6: depth")


def test_a_golden_set_line_with_a_key_given_twice_is_reported_with_the_other_lines(tmp_path):
    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"id": "q1", "id": "q1b", "query": "a", "relevant": [{"doc": "d1", "grade": 1}]}\n'
                    '{"id": "q2", "query": "b", "relevant": [{"doc": "d1", "grade": 1, "evidence": [{"quot": "x"}]}]}\n'
                    '{"id": "q3", "query": "", "relevant": [{"doc": "d1", "grade": 1}]}\n')
    proc = harness("goldset", "stats", gold)
    assert_input_error(proc, f"{gold}:1: key 'id' is given twice in one object")
    assert f"{gold}:2:" in proc.stderr and f"{gold}:3:" in proc.stderr


def test_a_cache_folder_from_the_environment_is_named_as_such(tmp_path, monkeypatch):
    afile = tmp_path / "afile"
    afile.write_text("x")
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(afile))
    assert_input_error(harness("cache", "info"), f"HARNESS_CACHE_DIR {afile}: is a file")
    assert_input_error(harness("cache", "info", "--cache-dir", afile), f"--cache-dir {afile}: is a file")


def test_an_unquoted_env_variable_inside_a_flow_mapping_gets_a_hint(tmp_path):
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("name: x\ncorpus: {path: ${HOME}/corpus.jsonl}\n")
    assert_input_error(harness("validate", cfg), f"{cfg} (line 2, column 17): not valid YAML",
                       'must be quoted: path: "${VAR}/file"')


def test_a_runs_own_chunk_level_trec_file_imports_as_an_external_run(tmp_path):
    """A newcomer fed run.chunks.trec back as `kind: external`: every line was 'document ... is not in the corpus'.
    A TREC docno that is no document but a chunk of the run is that chunk: the same numbers come back."""
    cfg = CONFIGS / "demo-bm25.yaml"
    first = harness("run", cfg, "--out", tmp_path / "a", "-q")
    assert first.returncode == 0, first.stderr
    again = harness("run", cfg, "--set", f"retriever={{kind: external, path: {tmp_path / 'a' / 'run.chunks.trec'}}}",
                    "--out", tmp_path / "b", "-q")
    assert again.returncode == 0, again.stderr
    a, b = (json.loads((tmp_path / x / "results.json").read_text())["summary"] for x in "ab")
    assert a["chunk"] == b["chunk"] and a["doc"] == b["doc"]


def test_a_config_written_out_whole_and_run_again_says_nothing_unused():
    """`harness.run(config.resolved())` (the pattern of docs/python-api.md) warned of chunking.unit, chunking.tokenizer and
    cutoff.tokenizer: the dump writes every default, which read as settings the user chose."""
    import warnings

    import harness as harness_api

    config = harness_api.load_config(ROOT / "configs" / "demo-bm25.yaml")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = harness_api.run(config.resolved())
    assert [str(w.message) for w in caught if "has no effect" in str(w.message)] == []
    assert again.config_hash == harness_api.run(config).config_hash
