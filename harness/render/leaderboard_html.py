"""The sweep's leaderboard in ``leaderboard.html``: every value read from the board that ``leaderboard.json`` and
``leaderboard.md`` are written from (``pipeline.sweep``), only formatted here. Every interpolation goes through
``e``, as in ``html``."""

from __future__ import annotations

from . import plots as charts_of
from .fmt import e, fmt
from .svg_html import svgs as _svgs


def _p(value) -> str:
    return "" if value is None else format(value, ".4f")


def _params(params: dict) -> str:
    """A grid point's values as text, ``key=value, ...`` (as leaderboard.md writes them); the caller escapes it
    (plain concatenation: this module's f-strings hold only escaped values)."""
    return ", ".join(str(k) + "=" + str(v) for k, v in params.items())


def _signed(value) -> str:
    return "n/a" if value is None else format(value, "+.4f")


def _runner_up_html(board: dict) -> str:
    """The winner against the runner-up: the leaderboard's ``runner_up`` (the paired comparison's row, as in
    leaderboard.json); nothing with fewer than two points."""
    second = board.get("runner_up")
    if second is None:
        return ""
    winner_params = next((r["params"] for r in board["runs"] if r["run"] == second["winner"]), {})
    rows = [("winner", second["winner"], winner_params, second["winner_mean"]),
            ("runner-up", second["run"], second["params"], second["mean"])]
    rows_html = "".join(f"<tr><td>{e(role)}</td><td>{e(run)}</td><td>{e(_params(params))}</td>"
                        f"<td>{e(fmt(mean, 4))}</td></tr>" for role, run, params, mean in rows)
    verdict = ("The winner and the runner-up differ significantly." if second["significant"]
               else "The winner and the runner-up are not significantly different.")
    return ('<h2 id="runner-up">Winner vs runner-up</h2>'
            f"<p class=\"muted\">{e(second['metric'])} on the queries both count, paired ({e(second['test'])} test, "
            f"{e(second['correction'])} correction over every point's comparison against the best)</p>"
            '<table id="runner-up-points"><thead><tr><th>point</th><th>run</th><th>params</th>'
            f"<th>mean over the paired queries</th></tr></thead><tbody>{rows_html}</tbody></table>"
            '<table id="runner-up-test"><thead><tr><th>paired queries</th><th>delta (runner-up minus winner)</th>'
            f"<th>p</th><th>{e(second['correction'])}-corrected p</th><th>significant at 0.05</th></tr></thead>"
            f"<tbody><tr><td>{e(second['n'])}</td><td>{e(_signed(second['delta_vs_winner']))}</td>"
            f"<td>{e(fmt(second['p'], 4))}</td><td>{e(fmt(second['p_corrected'], 4))}</td>"
            f"<td>{e('yes' if second['significant'] else 'no')}</td></tr></tbody></table>"
            f'<p id="runner-up-verdict">{e(verdict)}</p>')


def _kfold_html(board: dict) -> str:
    """The k-fold estimate of the choice: the leaderboard's ``kfold`` (as in leaderboard.json); nothing without
    ``select_on.kfold``."""
    kf = board.get("kfold")
    if kf is None:
        return ""
    rows_html = "".join(
        f"<tr><td>{e(f['fold'])}</td><td>{e(f['chosen'])}</td><td>{e(_params(f['params']))}</td>"
        f"<td>{e(f['train_queries'])}</td><td>{e(fmt(f['train_mean'], 4))}</td>"
        f"<td>{e(f['heldout_queries'])}</td><td>{e(fmt(f['heldout_mean'], 4))}</td></tr>" for f in kf["folds"])
    final_params = next((r["params"] for r in board["runs"] if r["run"] == kf["final"]), {})
    return (f'<h2 id="kfold">k-fold estimate: {e(kf["k"])} folds, seed {e(kf["seed"])}</h2>'
            f"<p class=\"muted\">The {e(kf['queries'])} selection queries in {e(kf['k'])} folds "
            f"({e(kf['assignment'])}). Each fold's point is chosen by {e(kf['metric'])} on the other folds' queries "
            "and scored on the fold.</p>"
            '<table id="kfold-folds" class="sortable"><thead><tr><th>fold</th><th>chosen point</th><th>params</th>'
            "<th>train queries</th><th>train mean</th><th>held-out queries</th><th>held-out mean</th></tr></thead>"
            f"<tbody>{rows_html}</tbody></table>"
            '<table id="kfold-means"><thead><tr><th>mean train</th><th>mean held-out</th>'
            "<th>optimism gap (train minus held-out)</th></tr></thead>"
            f"<tbody><tr><td>{e(fmt(kf['mean_train'], 4))}</td><td>{e(fmt(kf['mean_heldout'], 4))}</td>"
            f"<td>{e(_signed(kf['optimism_gap']))}</td></tr></tbody></table>"
            f'<p id="kfold-final">Final choice: {e(kf["final"])} ({e(_params(final_params))}), chosen on all '
            "selection queries; the folds only estimate how much choosing flattered it.</p>")


def section(board: dict) -> str:
    """The sweep's leaderboard at the top of its page: the ranked table, the number to report, the winner against
    the runner-up, the k-fold estimate and the charts over each swept key."""
    rows_html = "".join(
        f"<tr><td>{e(i)}</td><td>{e(r['run'])}</td><td>{e(_params(r['params']))}</td>"
        f"<td>{e(fmt(r['mean'], 4))}</td><td>{e(r.get('queries', ''))}</td>"
        f"<td>{e('n/a' if r['delta_vs_best'] is None else format(r['delta_vs_best'], '+.4f'))}</td>"
        f"<td>{e(_p(r['p_corrected']))}</td>"
        f"<td>{e('yes' if r['tied_with_best'] else 'no')}</td>"
        f"<td>{e(fmt(r.get('mean_window_tokens'), 1))}</td><td>{e(fmt(r.get('mean_window_chars'), 0))}</td></tr>"
        for i, r in enumerate(board["runs"], 1))
    charts = charts_of.sweep_charts(board)
    try:
        charts_html = _svgs(charts) if charts != [] else ""
    finally:
        charts_of.close(charts)
    return (f"<h1>Sweep {e(board['name'])}: leaderboard by {e(board['metric'])}</h1><p class=\"muted\">tied = not "
            f"significantly different from the best ({e(board['test'])} test, {e(board['correction'])} correction)</p>"
            '<table class="sortable"><thead><tr><th>rank</th><th>run</th><th>params</th><th>mean</th><th>queries</th>'
            "<th>delta vs best</th>"
            f"<th>p corrected</th><th>tied with best</th><th>window tokens</th><th>window chars</th></tr></thead>"
            f"<tbody>{rows_html}</tbody></table>"
            + "".join(f'<p class="muted">Note: {e(note)}</p>' for note in board.get("notes", []))
            + _reported_html(board) + _runner_up_html(board) + _kfold_html(board) + charts_html)


def _reported_html(board: dict) -> str:
    """With ``select_on``: the ranks above are on the selection queries; the number to report is the best
    configuration's on the reported golden set (the Markdown's paragraph, from the same board keys)."""
    if "selected_on" not in board:
        return ""
    rep = board["reported"]
    value = fmt(rep["mean"], 4)
    return (f"<p><strong>Runs ranked on {e(board['selected_on'])}</strong> (the selection queries). The best "
            f"configuration, run on {e(board['reported_on'])}: {e(rep['metric'])} <strong>{e(value)}</strong> over "
            f"{e(rep['queries'])} queries ({e(rep['run'])}/). Report that number: the others were tuned on the "
            "queries they score.</p>")
