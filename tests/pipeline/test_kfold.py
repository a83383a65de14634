"""select_on: {kfold: k}: each fold's point chosen on the other folds' queries, scored on the fold; the optimism gap;
the winner against the runner-up. The fold numbers are recomputed here from each run's results.json."""

import json
from html.parser import HTMLParser

import numpy as np
import pytest

from harness.config.schema import parse_config
from harness.core.errors import ConfigError
from harness.pipeline.kfold import assign_folds
from harness.pipeline.sweep import expand, run_sweep

from conftest import ROOT


def config(tmp_path, select_on, sweep=None):
    return parse_config({"name": "kf", "corpus": {"path": str(ROOT / "goldsets/demo/corpus.jsonl")},
                         "goldset": {"path": str(ROOT / "goldsets/demo/goldset.jsonl")},
                         "chunking": {"strategy": "sentences", "size": 2},
                         "retriever": {"kind": "bm25", "k1": 1.2}, "metrics": ["ndcg@10", "rr@10"],
                         "sweep": sweep or {"retriever.k1": [0.1, 0.9, 3.0], "retriever.b": [0.2, 0.9]},
                         "select_on": select_on}, "t", tmp_path)


class _Tables(HTMLParser):
    """Every table of a page with an id: its body rows as lists of cell texts (entities decoded, as shown). Tables
    nested in a cell (the comparison's drill-downs) are left out."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tables, self._open, self._body, self._cell = {}, [], False, None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self._open.append(dict(attrs).get("id") if not self._open else None)
        elif self._open and self._open[-1] and len(self._open) == 1:
            if tag == "tbody":
                self._body = True
                self.tables[self._open[-1]] = []
            elif tag == "tr" and self._body:
                self.tables[self._open[-1]].append([])
            elif tag == "td" and self._body:
                self._cell = ""

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data

    def handle_endtag(self, tag):
        if tag == "td" and self._cell is not None and len(self._open) == 1:
            self.tables[self._open[-1]][-1].append(self._cell)
            self._cell = None
        elif tag == "tbody" and len(self._open) == 1:
            self._body = False
        elif tag == "table" and self._open:
            self._open.pop()


def html_tables(page: str) -> dict[str, list[list[str]]]:
    parser = _Tables()
    parser.feed(page)
    return parser.tables


def params_text(params: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items())


def test_folds_are_seeded_balanced_and_independent_of_order():
    ids = [f"q{i}" for i in range(23)]
    fold = assign_folds(ids, 5, seed=7)
    assert sorted(np.bincount(fold).tolist()) == [4, 4, 5, 5, 5]
    assert assign_folds(ids, 5, seed=7).tolist() == fold.tolist()
    assert assign_folds(ids, 5, seed=8).tolist() != fold.tolist()
    backwards = assign_folds(ids[::-1], 5, seed=7)
    assert backwards.tolist() == fold[::-1].tolist()  # a query's fold follows its id, not its place


def _by_hand(out, board, k, seed):
    """The k-fold numbers from the runs' results.json, with plain Python arithmetic."""
    per_run = {}
    for row in board["runs"]:
        data = json.loads((out / row["run"] / "results.json").read_text())
        per_run[row["run"]] = {q["id"]: q["metrics"]["doc"]["ndcg@10"] for q in data["queries"] if q["counted"]["doc"]}
    ids = sorted(set.intersection(*(set(v) for v in per_run.values())))
    perm = np.random.default_rng(seed).permutation(len(ids)).tolist()
    fold = {ids[i]: position % k for position, i in enumerate(perm)}
    return per_run, fold


def test_kfold_sweep_reports_each_fold_and_the_optimism_gap(tmp_path):
    cfg = config(tmp_path, {"kfold": 4, "seed": 3})
    board = run_sweep(cfg, tmp_path / "out", progress=False, log=lambda m: None)
    assert json.loads((tmp_path / "out/leaderboard.json").read_text()) == board
    kf = board["kfold"]
    assert (kf["k"], kf["seed"], kf["metric"], kf["final"]) == (4, 3, "doc.ndcg@10", board["best"])
    per_run, fold = _by_hand(tmp_path / "out", board, 4, 3)
    grid = [c.name for c, _ in expand(cfg, on_selection=True)]
    assert kf["queries"] == len(fold) and len(kf["folds"]) == 4
    for f in kf["folds"]:
        held = [q for q in fold if fold[q] == f["fold"] - 1]
        train = [q for q in fold if fold[q] != f["fold"] - 1]
        train_means = {run: sum(per_run[run][q] for q in train) / len(train) for run in grid}
        best = max(train_means.values())
        chosen = next(run for run in grid if train_means[run] == best)  # ties: the first in grid order
        assert f["chosen"] == chosen and (f["train_queries"], f["heldout_queries"]) == (len(train), len(held))
        assert f["train_mean"] == pytest.approx(best, abs=1e-12)
        assert f["heldout_mean"] == pytest.approx(sum(per_run[chosen][q] for q in held) / len(held), abs=1e-12)
    mean_train = sum(f["train_mean"] for f in kf["folds"]) / 4
    mean_held = sum(f["heldout_mean"] for f in kf["folds"]) / 4
    assert kf["optimism_gap"] == pytest.approx(mean_train - mean_held, abs=1e-12)
    # kfold alone selects on goldset itself: nothing is run again to report it
    assert "reported" not in board and not (tmp_path / "out" / f"{board['best']}-reported").exists()
    text = (tmp_path / "out/leaderboard.md").read_text()
    assert "## 4-fold selection (seed 3)" in text and f"optimism gap {kf['optimism_gap']:+.4f}" in text
    # leaderboard.html shows the same numbers as leaderboard.json, rounded as leaderboard.md rounds them
    saved = json.loads((tmp_path / "out/leaderboard.json").read_text())["kfold"]
    page = (tmp_path / "out/leaderboard.html").read_text()
    tables = html_tables(page)
    assert tables["kfold-folds"] == [[str(f["fold"]), f["chosen"], params_text(f["params"]), str(f["train_queries"]),
                                      f"{f['train_mean']:.4f}", str(f["heldout_queries"]), f"{f['heldout_mean']:.4f}"]
                                     for f in saved["folds"]]
    assert tables["kfold-means"] == [[f"{saved['mean_train']:.4f}", f"{saved['mean_heldout']:.4f}",
                                      f"{saved['optimism_gap']:+.4f}"]]
    assert '<h2 id="kfold">k-fold estimate: 4 folds, seed 3</h2>' in page
    final_params = next(r["params"] for r in board["runs"] if r["run"] == saved["final"])
    assert f"Final choice: {saved['final']} ({params_text(final_params)})" in page
    assert f"The {saved['queries']} selection queries in 4 folds" in page


def test_winner_against_runner_up_is_the_holm_corrected_row(tmp_path):
    board = run_sweep(config(tmp_path, None, {"retriever.k1": [0.1, 0.9, 3.0]}), tmp_path / "out", progress=False,
                      log=lambda m: None)
    second = board["runner_up"]
    row = board["runs"][1]
    assert (second["winner"], second["run"], second["correction"]) == (board["best"], row["run"], "holm")
    assert second["p_corrected"] == row["p_corrected"] and second["delta_vs_winner"] == row["delta_vs_best"]
    assert second["mean"] == pytest.approx(row["mean"], abs=1e-12)
    assert second["winner_mean"] == pytest.approx(board["runs"][0]["mean"], abs=1e-12)
    # Holm over the two comparisons against the best: the smaller p doubled, the larger at least that, each <= 1
    ps = sorted((r["run"], r["p_corrected"]) for r in board["runs"][1:])
    assert all(p is not None and p <= 1 for _, p in ps) and second["p"] <= second["p_corrected"]
    assert "## Winner against runner-up" in (tmp_path / "out/leaderboard.md").read_text()
    # leaderboard.html: both points with their params and means, n, delta, p, Holm p and the verdict, as saved
    saved = json.loads((tmp_path / "out/leaderboard.json").read_text())["runner_up"]
    page = (tmp_path / "out/leaderboard.html").read_text()
    tables = html_tables(page)
    na = lambda value, spec: "n/a" if value is None else format(value, spec)
    assert tables["runner-up-points"] == [
        ["winner", saved["winner"], params_text(board["runs"][0]["params"]), na(saved["winner_mean"], ".4f")],
        ["runner-up", saved["run"], params_text(saved["params"]), na(saved["mean"], ".4f")]]
    assert tables["runner-up-test"] == [[str(saved["n"]), na(saved["delta_vs_winner"], "+.4f"), na(saved["p"], ".4f"),
                                         na(saved["p_corrected"], ".4f"), "yes" if saved["significant"] else "no"]]
    assert "<th>holm-corrected p</th>" in page
    verdict = "differ significantly" if saved["significant"] else "are not significantly different"
    assert f'<p id="runner-up-verdict">The winner and the runner-up {verdict}.</p>' in page
    assert 'id="kfold"' not in page  # no select_on.kfold: no k-fold section, as leaderboard.md has none


def test_queries_counted_before_retrieval_are_the_runs_counted_queries(tmp_path):
    """The k-fold bound is checked before any run from the queries a run will count (``counted_before_retrieval``):
    they are the run's own ``counted`` flags at both levels, with golden-set errors, a query marked answerable:
    false, one judged only grade 0, and one judged without evidence among them, under both query policies."""
    import harness
    from harness.pipeline.measurable import counted_before_retrieval
    from harness.pipeline.prepare import prepare

    gold = tmp_path / "gold.jsonl"
    gold.write_text((ROOT / "goldsets/demo/goldset.jsonl").read_text() + "".join(json.dumps(r) + "\n" for r in [
        {"id": "u1", "query": "what does it cost in Japan?", "answerable": False},
        {"id": "z1", "query": "install on a phone", "relevant": [{"doc": "install-desktop", "grade": 0}]},
        {"id": "w1", "query": "install on a desktop", "relevant": ["install-desktop"]}]))
    for policy in ("exclude", "zero"):
        data = {"name": f"c-{policy}", "corpus": {"path": str(ROOT / "goldsets/demo/corpus.jsonl")},
                "goldset": {"path": str(gold)}, "chunking": {"strategy": "sentences", "size": 2},
                "retriever": {"kind": "bm25"}, "metrics": ["ndcg@10"], "evaluation": {"query_policy": policy}}
        cfg = parse_config(data, "t", tmp_path)
        loaded = prepare(cfg, log=lambda m: None)
        with pytest.warns(UserWarning, match="goldset_error"):  # the demo's q44 and q45
            result = harness.run(data)
        for level in ("doc", "chunk"):
            counted = {q.id for q in result.queries if q.is_counted(level)}
            assert counted_before_retrieval(loaded.gold, loaded.chunks, loaded.problems, policy, level) == counted
            assert "u1" not in counted and ("z1" in counted) == (policy == "zero")


@pytest.mark.parametrize("select_on, expect", [
    ({"kfold": 1}, "select_on.kfold: 1 folds; give 2 or more"),
    ({"kfold": 0}, "select_on.kfold: 0 folds; give 2 or more"),
    ({"kfold": "five"}, "select_on.kfold: expected a whole number of folds"),
    ({"kfold": True}, "select_on.kfold: expected a whole number of folds"),
    ({"seed": 3}, "select_on.seed: only with select_on.kfold"),
    ({"kfold": 3, "seed": -1}, "select_on.seed: expected a whole number >= 0"),
])
def test_bad_kfold_is_one_located_line(tmp_path, select_on, expect):
    with pytest.raises(ConfigError) as err:
        config(tmp_path, select_on)
    assert [p for p in err.value.problems if p.startswith("select_on")] == [p for p in err.value.problems
                                                                             if expect in p]
