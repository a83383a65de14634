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
    return "\n".join(out) + "\n"
