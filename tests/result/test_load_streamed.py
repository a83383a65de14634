"""Reading a large results.json in bounded memory (issue 14, "Loading a large results.json"): a file in the writer's
one-record-a-line layout is read a record at a time into a QueryStore (io/results_stream.py), equal record for
record to reading the whole document, and written back to the same bytes; a bad record line is located like any
other problem. compare, gate and report read per-query columns (core/querycolumns.py) and give the numbers they give
on the records in memory: checked on a spooled 6,000-query run (depth 3, so it is fast)."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np
import pytest

from clihelp import assert_input_error, harness

N_DOCS, N_QUERIES = 1_200, 6_000
TOPICS = ("billing", "install", "sync")


def _synthetic(folder: Path) -> None:
    """Documents of two 10-word sentences; queries judging one document (grade 1 or 2, its second sentence as
    evidence), tagged with a topic (two thirds of them) so slices exist; query words mostly from the document."""
    rng = random.Random(11)
    vocab = [f"w{i}" for i in range(2500)]
    docs = [(" ".join(rng.choices(vocab, k=10)) + ".", " ".join(rng.choices(vocab, k=10)) + ".")
            for _ in range(N_DOCS)]
    (folder / "corpus.jsonl").write_text("".join(
        json.dumps({"id": f"d{i}", "text": f"{a} {b}"}) + "\n" for i, (a, b) in enumerate(docs)))
    lines = []
    for q in range(N_QUERIES):
        d = rng.randrange(N_DOCS)
        words = " ".join(docs[d]).replace(".", "").split()
        row = {"id": f"q{q}", "query": " ".join(rng.sample(words, 3) + rng.choices(vocab, k=2)),
               "relevant": [{"doc": f"d{d}", "grade": rng.choice([1, 2]), "evidence": [{"quote": docs[d][1]}]}]}
        if q % 3:
            row["tags"] = {"topic": TOPICS[(q // 3) % len(TOPICS)]}
        lines.append(json.dumps(row) + "\n")
    (folder / "goldset.jsonl").write_text("".join(lines))


def _config(folder: Path, name: str, k: int) -> Path:
    cfg = folder / f"{name}.yaml"
    cfg.write_text(f"name: {name}\ncorpus: {{path: corpus.jsonl}}\nchunking: {{strategy: sentences, size: 1}}\n"
                   f"goldset: {{path: goldset.jsonl}}\nretriever: {{kind: bm25, backend: fast}}\ncutoff: {{k: {k}}}\n"
                   "depth: 3\nmetrics: [ndcg@3, recall@3, rr@3]\n")
    return cfg


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two runs over one golden set (windows of 1 and 3 chunks: different verdicts and window metrics), in memory
    (their records spooled) and written out."""
    from harness.config.schema import load_config
    from harness.pipeline.assemble import run_experiment
    from harness.render.outputs import write_outputs

    tmp = tmp_path_factory.mktemp("loadbig")
    _synthetic(tmp)
    out = []
    for name, k in (("narrow", 1), ("wide", 3)):
        result = run_experiment(load_config(_config(tmp, name, k)), progress=False, log=lambda m: None)
        out.append((result, write_outputs(result, tmp / name) / "results.json"))
    return out


def _whole(path: Path):
    from harness.result.model import Result

    return Result.from_dict(json.loads(path.read_text()), str(path))


def test_a_large_results_json_streams_into_a_store_equal_to_the_whole_document(runs):
    from harness.result.querystore import QueryStore
    from harness.result.read import load_result

    result, path = runs[0]
    assert isinstance(result.queries, QueryStore) and result.hits_kept == "selected"
    lines = path.read_text().splitlines()
    assert lines.count('  "queries": [') == 1 and lines[-2:] == ["  ]", "}"]  # the layout streamed
    streamed, whole = load_result(path), _whole(path)
    assert isinstance(streamed.queries, QueryStore) and isinstance(whole.queries, list)
    assert len(streamed.queries) == len(whole.queries) == N_QUERIES
    for a, b in zip(streamed.queries, whole.queries):  # record by record
        assert a == b
    assert streamed.queries == result.queries
    assert all(getattr(streamed, f) == getattr(whole, f) for f in type(whole).model_fields)
    assert streamed.to_json() == whole.to_json() == path.read_text()  # written back: the same bytes
    # found by id from the stored bytes (each record kept as read starts with its id)
    for qid in ("q0", "q2999", f"q{N_QUERIES - 1}"):
        assert streamed.query(qid) == whole.query(qid) is not None
    assert streamed.query("q6000") is None
    # the columns read while loading are those read from the records in memory
    from harness.result import querycolumns

    loaded, fresh = querycolumns.of(streamed), querycolumns.of(whole)
    assert loaded.source is streamed.queries and loaded.ids == fresh.ids
    for level in ("doc", "chunk"):
        assert (loaded.counted[level] == fresh.counted[level]).all() and loaded.counted[level].any()
        assert set(loaded.metrics(level)) == set(fresh.metrics(level)) == set(streamed.summary.means(level))
        for name in loaded.metrics(level):
            values = loaded.value(level, name)
            assert np.array_equal(values, fresh.value(level, name))
            assert values[loaded.counted[level]].mean() == pytest.approx(streamed.summary.means(level)[name])
    assert loaded.kind_of() == [q.verdict.kind for q in whole.queries]
    assert loaded.tag("topic") == [q.tags.get("topic") for q in whole.queries]
    assert [loaded.ideal(i) for i in (0, 1, 2)] == [[g.grade for g in q.gold] for q in whole.queries[:3]]


def test_a_small_run_still_loads_as_a_list(tmp_path):
    from harness.result.read import load_result

    proc = harness("run", _demo(tmp_path), "--out", tmp_path / "out", "-q")
    assert proc.returncode == 0, proc.stderr
    loaded = load_result(tmp_path / "out" / "results.json")
    assert isinstance(loaded.queries, list) and len(loaded.queries) == 46
    assert loaded.to_json() == (tmp_path / "out" / "results.json").read_text()


def _demo(tmp: Path) -> Path:
    from clihelp import demo_config

    return demo_config(tmp)


def _edited(path: Path, tmp: Path, edits: dict[int, tuple[str, str]]) -> Path:
    """A copy of results.json with record ``i``'s line edited (``old`` -> ``new``, once)."""
    lines = path.read_text().split("\n")
    start = lines.index('  "queries": [') + 1
    for i, (old, new) in edits.items():
        assert old in lines[start + i], (i, old)
        lines[start + i] = lines[start + i].replace(old, new, 1)
    out = tmp / "results.json"
    out.write_text("\n".join(lines))
    return out


def test_bad_record_lines_are_all_reported_located(runs, tmp_path):
    _, path = runs[0]
    bad = _edited(path, tmp_path, {3: ('"effective_k":1', '"effective_k":"1"'),
                                   10: ('"n_relevant":', '"n_relevent":'),
                                   4000: ('"kind":"', '"kind":"great_'),
                                   5990: ('"flags":[', '"flags":[,')})
    proc = harness("gate", bad, "--rules", _rules(tmp_path, ["chunk.ndcg@3 >= 0"]))
    assert_input_error(proc, f"{bad}: not a valid results.json (5 problem(s))",
                       f"{bad}: queries.3.effective_k: expected a whole number, got '1'",
                       f"{bad}: queries.10.n_relevent: unknown field; did you mean 'n_relevant'?",
                       f"{bad}: queries.10.n_relevant: required field is missing",
                       f"{bad}: queries.4000.verdict.kind: expected one of",
                       f"{bad}: queries.5990 (line {_line_of(bad, 5990)}): not valid JSON (expected value, column ")
    # consistency checks across records: a duplicated id, as the whole-document reader reports it
    dup = _edited(path, tmp_path, {7: ('"id":"q7"', '"id":"q6"')})
    proc = harness("explain", dup, "q6")
    assert_input_error(proc, f"{dup}: queries.7.id: duplicate query id 'q6' (first at queries.6)")


def test_a_file_not_in_the_streamed_layout_is_read_whole_and_located(runs, tmp_path):
    from harness.result.read import load_result

    _, path = runs[0]
    text = path.read_text()
    cut = tmp_path / "cut.json"
    cut.write_text(text[: text.index('{"id":"q100",')])  # truncated mid-file
    proc = harness("explain", cut, "q1")
    assert_input_error(proc, f"{cut}:", "not valid JSON")
    indented = tmp_path / "indented.json"  # the same result laid out by json.dumps: read whole, same Result
    indented.write_text(json.dumps(json.loads(text), indent=2))
    loaded = load_result(indented)
    assert isinstance(loaded.queries, list) and loaded.to_json() == text


def _line_of(path: Path, record: int) -> int:
    return path.read_text().split("\n").index('  "queries": [') + 2 + record


def _rules(tmp: Path, rules: list) -> Path:
    path = tmp / "rules.yaml"
    path.write_text(json.dumps({"rules": rules}))
    return path


def test_compare_and_gate_on_spooled_results_equal_the_records_in_memory(runs, tmp_path):
    from harness.result.read import load_result
    from harness.stats.compare import compare_runs
    from harness.stats.gates import evaluate_gates, load_rules

    (narrow, a), (wide, b) = runs
    as_list = lambda r: r.model_copy(update={"queries": list(r.queries)})  # noqa: E731
    loaded = [load_result(a), load_result(b)]
    metrics = ["ndcg@3", "chunk.recall@window", "rr@window", "chunk.precision@window"]
    expected = compare_runs([as_list(narrow), as_list(wide)], metrics).to_dict()
    assert compare_runs(loaded, metrics).to_dict() == expected
    assert compare_runs([narrow, wide], metrics).to_dict() == expected
    rows = {row["metric"]: row for row in expected["rows"]}
    # numbers computed independently from the records: the paired means, wins and the per-slice deltas
    for metric, (level, name) in (("doc.ndcg@3", ("doc", "ndcg@3")), ("chunk.recall@window", ("chunk", "recall@window"))):
        pairs = [(x.value(level, name), y.value(level, name), x.tags.get("topic"))
                 for x, y in zip(narrow.queries, wide.queries) if x.is_counted(level) and y.is_counted(level)]
        row = rows[metric]
        assert row["n"] == len(pairs) > 5_000
        assert row["baseline_mean"] == pytest.approx(sum(p[0] for p in pairs) / len(pairs), rel=1e-12)
        assert row["delta"] == pytest.approx(sum(p[1] - p[0] for p in pairs) / len(pairs), rel=1e-9, abs=1e-15)
        assert row["wins"] == sum(p[1] > p[0] for p in pairs) and row["losses"] == sum(p[1] < p[0] for p in pairs)
        for topic in TOPICS:
            mine = [p[1] - p[0] for p in pairs if p[2] == topic]
            assert row["slices"][f"topic={topic}"] == {"n": len(mine), "delta": math.fsum(mine) / len(mine)}
    moved = sum(x.verdict.kind != y.verdict.kind for x, y in zip(narrow.queries, wide.queries))
    assert 0 < moved == sum(len(ids) for ids in expected["transitions"]["wide"].values())

    rules = load_rules(_rules(tmp_path, ["chunk.ndcg@3 >= 0.2", {"check": "doc.rr@window >= 0.9",
                                         "slice": {"topic": "billing"}}, "wrong_chunk <= 0.5",
                                         {"regression": "chunk.recall@window", "budget": 0.01}]))
    plain = evaluate_gates(as_list(wide), rules, as_list(narrow))
    for candidate, base in ((loaded[1], loaded[0]), (wide, narrow)):
        outcome = evaluate_gates(candidate, rules, base)
        assert [(r.passed, r.observed, r.message, r.n) for r in outcome] == \
            [(r.passed, r.observed, r.message, r.n) for r in plain]
    billing = [q.value("doc", "rr@window") for q in wide.queries if q.tags.get("topic") == "billing"
               and q.is_counted("doc")]
    assert plain.results[1].observed == math.fsum(billing) / len(billing) and plain.results[1].n == len(billing)
    # the CLI over the saved files: the same outcome
    proc = harness("gate", b, "--rules", tmp_path / "rules.yaml", "--baseline", a)
    assert proc.returncode in (0, 1) and all(r.message in proc.stdout for r in plain), proc.stderr


def test_resampling_in_blocks_draws_the_same_numbers(monkeypatch):
    from harness.stats import compare

    rng = np.random.default_rng(5)
    for n in (3, 1001, 7919):
        d = rng.normal(0.01, 0.3, n) * (rng.random(n) < 0.6)
        monkeypatch.setattr(compare, "BLOCK_VALUES", 10**12)  # one draw per 2,000 resamples, as before
        whole = compare.randomization_p(d), compare.bootstrap_ci(d)
        monkeypatch.setattr(compare, "BLOCK_VALUES", 4 * n + 1)  # blocks of 4 rows
        assert list(compare._blocks(2000, n))[:2] == [4, 4]
        assert (compare.randomization_p(d), compare.bootstrap_ci(d)) == whole
        assert 0 < whole[0] <= 1 and whole[1][0] <= d.mean() <= whole[1][1]


def test_report_of_two_spooled_runs_stays_bounded(runs, tmp_path):
    (narrow, a), (wide, b) = runs
    proc = harness("report", a, b, "-o", tmp_path / "cmp.html", "-m", "ndcg@3")
    assert proc.returncode == 0, proc.stderr
    page = (tmp_path / "cmp.html").read_text()
    changed = sum(x.verdict.kind != y.verdict.kind for x, y in zip(narrow.queries, wide.queries))
    assert page.count('data-changed="yes"') == min(changed, 500) and page.count('data-detail="s') == 500
