"""A sweep's leaderboard as Markdown (leaderboard.md): the leaderboard dict ``pipeline.sweep`` builds, one row per
grid point, best first."""

from __future__ import annotations

from .outputs import md, md_table


def leaderboard_markdown(board: dict) -> str:
    """leaderboard.md; sweep values are user strings, so every cell and value goes through report's escaping."""
    na = lambda value, spec: "n/a" if value is None else format(value, spec)  # no counted query: no number
    rows = [[i, r["run"], ", ".join(f"{k}={v}" for k, v in r["params"].items()), na(r["mean"], ".4f"),
             r.get("queries", ""), na(r["delta_vs_best"], "+.4f"),
             "" if r["p_corrected"] is None else f"{r['p_corrected']:.4f}",
             "yes" if r["tied_with_best"] else "no", na(r.get("mean_window_tokens"), ".1f"),
             na(r.get("mean_window_chars"), ".0f")] for i, r in enumerate(board["runs"], 1)]
    out = [f"# Sweep {md(board['name'])}: leaderboard by {md(board['metric'])}", "",
           f"Compared against the best run ({md(board['best'])}) with a paired {md(board['test'])} test, "
           f"{md(board['correction'])} correction; 'tied' = not significantly different from the best.", ""]
    out += md_table(["rank", "run", "params", "mean", "queries", "delta vs best", "p (corrected)", "tied with best",
                     "window tokens", "window chars"], rows)
    out += [line for note in board.get("notes", []) for line in ("", f"Note: {md(note)}")]
    if "selected_on" in board:
        rep = board["reported"]
        value = "n/a" if rep["mean"] is None else f"{rep['mean']:.4f}"
        out += ["", f"Runs ranked on {md(board['selected_on'])} (the selection queries). The best configuration, "
                    f"run on {md(board['reported_on'])}: {md(rep['metric'])} {value} over {rep['queries']} queries "
                    f"({md(rep['run'])}/). Report that number: the others were tuned on the queries they score."]
    out += _runner_up(board.get("runner_up")) + _kfold(board.get("kfold"))
    return "\n".join(out) + "\n"


def _runner_up(second: dict | None) -> list[str]:
    if second is None:
        return []
    na = lambda value, spec: "n/a" if value is None else format(value, spec)
    return ["", "## Winner against runner-up", "",
            f"{md(second['winner'])} against {md(second['run'])} on {md(second['metric'])} over {second['n']} "
            f"paired queries: delta {na(second['delta_vs_winner'], '+.4f')} (runner-up minus winner), "
            f"p {na(second['p'], '.4f')}, {md(second['correction'])}-corrected p {na(second['p_corrected'], '.4f')}: "
            + ("significant." if second["significant"] else "not significantly different.")]


def _kfold(kfold: dict | None) -> list[str]:
    if kfold is None:
        return []
    rows = [[f["fold"], md(f["chosen"]), ", ".join(f"{k}={v}" for k, v in f["params"].items()), f["train_queries"],
             f"{f['train_mean']:.4f}", f["heldout_queries"], f"{f['heldout_mean']:.4f}"] for f in kfold["folds"]]
    return ["", f"## {kfold['k']}-fold selection (seed {kfold['seed']})", "",
            f"The {kfold['queries']} selection queries in {kfold['k']} folds ({md(kfold['assignment'])}). Each fold's "
            f"point is chosen by {md(kfold['metric'])} on the other folds' queries and scored on the fold.", ""] \
        + md_table(["fold", "chosen", "params", "train queries", "train mean", "held-out queries",
                    "held-out mean"], rows) \
        + ["", f"Mean training score {kfold['mean_train']:.4f}, mean held-out score {kfold['mean_heldout']:.4f}: "
               f"optimism gap {kfold['optimism_gap']:+.4f}. The final configuration ({md(kfold['final'])}) is "
               f"chosen on all selection queries."]
