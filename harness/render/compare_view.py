"""The one renderer of comparison tables: ``harness compare`` as table or md, the API's ``to_markdown``, and (through
``compare_html``, which uses the cells and notes here) the HTML report of several runs.

Every table shows the delta, the 95% CI beside the corrected p, and a note that the CI is not corrected; the
per-slice deltas follow in every format. Numbers come from the ``Comparison`` (stats/compare), never recomputed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..result.outcomes import Comparison, ComparisonRow

MDE_NOTE = ("MDE: the smallest true difference the paired test detects with 80% power at the spread of these two "
            "runs' per-query differences (0 when they never differ; `goldset stats --results` estimates it from one "
            "run before there are two); a smaller |delta| that is not significant may be too few queries, not no "
            "effect.")
SLICE_NOTE = "Per-slice deltas (no tests; slices are small):"
HEADERS = ("run", "metric", "n", "baseline", "run mean", "delta", "95% CI (uncorrected)", "p (corrected)", "W/T/L",
           "MDE")
P_COLUMN = HEADERS.index("p (corrected)")


def headers(c: Comparison) -> tuple[str, ...]:
    """``HEADERS``, with the p column named "p" when no correction was asked for (``--correction none``)."""
    if c.correction != "none":
        return HEADERS
    return HEADERS[:P_COLUMN] + ("p",) + HEADERS[P_COLUMN + 1:]


def _tested(c: Comparison) -> str:
    """"(wilcoxon test, holm correction)", or "(..., no correction)"."""
    return f"({c.test} test, {'no' if c.correction == 'none' else c.correction} correction)"


def _f(value, spec: str = ".4f") -> str:
    # A mean is None when no query is counted at the metric's level: n/a, never a crash.
    return "n/a" if value is None else format(value, spec)


def cells(r: ComparisonRow) -> list[str]:
    """One comparison row as display strings, in ``HEADERS`` order (every format uses these)."""
    return [r.run, r.metric, str(r.n), _f(r.baseline_mean), _f(r.mean),
            _f(r.delta, "+.4f") + (" *" if r.significant else ""),
            "n/a" if r.ci95 is None else f"[{r.ci95[0]:+.4f}, {r.ci95[1]:+.4f}]",
            _f(r.p_corrected), f"{r.wins}/{r.ties}/{r.losses}", _f(r.mde)]


def disagreements(c: Comparison) -> list[str]:
    """One sentence per row whose CI and significance disagree, naming what differs: the correction (the
    uncorrected p is below 0.05, the corrected one is not) or the method (the bootstrap CI against the test's p,
    which differ most with few non-tied queries)."""
    out = []
    for r in c.rows:
        if r.ci95 is None or r.p is None or r.p_corrected is None:
            continue
        excludes = r.ci95[0] > 0 or r.ci95[1] < 0
        if excludes == r.significant:
            continue
        name = f"{r.run} {r.metric}"
        wtl = f"{r.wins + r.losses} of {r.n} queries differ, W/T/L {r.wins}/{r.ties}/{r.losses}"
        if excludes and r.p < 0.05:
            out.append(f"{name}: the CI excludes 0 and the uncorrected p ({r.p:.4f}) is below 0.05, but the corrected "
                       f"p ({r.p_corrected:.4f}) is not: the {c.correction} correction for multiple comparisons makes "
                       "the difference.")
        elif excludes:
            if c.correction == "none":
                out.append(f"{name}: the CI excludes 0 but p ({r.p:.4f}) is above 0.05: the bootstrap CI and the "
                           f"{c.test} test disagree, as they can when few queries differ ({wtl}).")
                continue
            same = "the same as the corrected p" if r.p == r.p_corrected else f"corrected {r.p_corrected:.4f}"
            out.append(f"{name}: the CI excludes 0 but even the uncorrected p ({r.p:.4f}, {same}) is above 0.05: "
                       f"the bootstrap CI and the {c.test} test disagree, as they can when few queries differ ({wtl}); "
                       "the correction is not the cause.")
        else:
            p_shown = f"p {r.p:.4f}" if c.correction == "none" else f"corrected p {r.p_corrected:.4f}"
            out.append(f"{name}: significant ({p_shown}) though the CI includes 0: the bootstrap CI and the "
                       f"{c.test} test disagree ({wtl}).")
    return out


def note(c: Comparison) -> str:
    """The note under a comparison table: what the star, the CI and the MDE mean, and, where a row's CI and
    significance disagree, why."""
    if c.correction == "none":
        head = ("`*` significant (p < 0.05, not corrected). The 95% CI is a bootstrap percentile interval of the mean "
                "difference for that row alone: it is not the significance test, so it can disagree with p.")
    else:
        head = ("`*` significant after correction (p < 0.05). The 95% CI is a bootstrap percentile interval of the "
                "mean difference for that row alone: it is NOT corrected for the multiple comparisons, and it is not "
                "the significance test, so it can disagree with the corrected p.")
    return " ".join([head, MDE_NOTE, *disagreements(c)])


def slice_table(c: Comparison) -> tuple[list[str], list[list[str]]]:
    """Headers and rows of the per-slice deltas: one row per slice ("tag=value"), one column per run and metric
    (slices can be many, runs and metrics are few)."""
    slices = sorted({k for r in c.rows for k in r.slices})
    heads = ["slice"] + [f"{r.run} {r.metric}" for r in c.rows]
    rows = [[k] + [f"{r.slices[k]['delta']:+.3f} (n={r.slices[k]['n']})" if k in r.slices else "" for r in c.rows]
            for k in slices]
    return heads, rows


def decision_lines(c: Comparison) -> list[str]:
    """The comparison's opening: for each run and metric, better / worse / not distinguishable at this golden set's
    size, with the MDE (the row's ``decision``, from its corrected significance)."""
    out = []
    for r in c.rows:
        head = f"{r.run} vs {c.baseline} on {r.metric}:"
        if r.decision == "n/a":
            out.append(f"{head} n/a (no query counted in both runs)")
        elif r.decision == "not distinguishable":
            mde = "n/a" if r.mde is None or r.mde == float("inf") else f"{r.mde:.4f}"
            out.append(f"{head} not distinguishable at {r.n} queries (delta {r.delta:+.4f}, MDE {mde}: a true "
                       f"difference smaller than the MDE is likely missed)")
        else:
            p = f"p {r.p:.4f}" if c.correction == "none" else f"corrected p {r.p_corrected:.4f}"
            out.append(f"{head} {r.decision.upper()} (delta {r.delta:+.4f}, {p}, {r.wins} wins, {r.losses} losses "
                       f"of {r.n} queries, MDE {r.mde:.4f})")
    return out


def title(c: Comparison) -> str:
    return f"against {c.baseline} {_tested(c)}"


def transition_lines(c: Comparison) -> list[tuple[str, str, list[str]]]:
    return [(run, k, ids) for run, trans in c.transitions.items() for k, ids in trans.items()]


def followed_lines(c: Comparison) -> list[tuple[str, list[tuple[str, list[str]]]]]:
    """(the sentence, [(label, its query ids)]) per composite compared with its children (``stats.followed``)."""
    from ..stats.followed import followed_sentence

    out = []
    for run, f in c.followed.items():
        by_label: dict[str, list[str]] = {}
        for qid, label in f["queries"].items():
            by_label.setdefault(label, []).append(qid)
        out.append((followed_sentence(run, f), [(label, by_label[label]) for label in f["counts"]]))
    return out


def to_markdown(c: Comparison) -> str:
    """Run names, metric names, slice tags and values, ids and warnings are user text: each goes through ``md``."""
    from .fmt import md, md_code

    out = [f"## Comparison against {md_code(c.baseline)} {_tested(c)}", ""]
    out += [f"- {md(line)}" for line in decision_lines(c)] + [""]
    for w in c.warnings:  # a blank line after each: a table right after a quote is read as part of the quote
        out += [f"> warning: {md(w)}", ""]
    out += ["| " + " | ".join(headers(c)) + " |", "|" + "---|" * len(HEADERS)]
    out += ["| " + " | ".join([md(r.run), md(r.metric)] + cells(r)[2:]) + " |" for r in c.rows]
    out += ["", note(c)]
    heads, rows = slice_table(c)
    if rows:
        out += ["", SLICE_NOTE, "", "| " + " | ".join(md(h) for h in heads) + " |", "|" + "---|" * len(heads)]
        out += ["| " + " | ".join([md(row[0])] + row[1:]) + " |" for row in rows]
    for run, trans in c.transitions.items():
        if trans:
            out += ["", f"Verdict transitions, {md(c.baseline)} -> {md(run)}:"]
            out += [f"- {md(k)}: {len(v)} ({md(', '.join(v[:12]))}{' …' if len(v) > 12 else ''})"
                    for k, v in trans.items()]
    for sentence, labels in followed_lines(c):
        out += ["", f"Which child it followed, per query: {md(sentence)}:"]
        out += [f"- {md(label)}: {len(ids)} ({md(', '.join(ids[:12]))}{' …' if len(ids) > 12 else ''})"
                for label, ids in labels]
    return "\n".join(out) + "\n"


HEAD_WORD = 20  # the widest a header makes a number column (longer ones fold)
TEXT_MIN = 10  # the narrowest a name column gets before a table is printed as one block per row


def _longest_word(x: str) -> int:
    return max((len(w) for w in x.split()), default=0)


def _print_fitting(console, title_text: str, heads, rows, n_text: int, styles=None) -> None:
    """Print a table whose first ``n_text`` columns are names (folded when narrow) and the rest numbers, never cut:
    a number column is as wide as its longest cell (or its longest word, wrapping at spaces, when that does not
    fit); when even that does not fit the terminal, one block of "column value" lines per row."""
    from rich.table import Table
    from rich.text import Text

    styles = styles or [None] * len(rows)
    nums = range(n_text, len(heads))
    overhead = 3 * len(heads) + 1  # borders and padding of rich's default box
    # widest first: whole headers on one line, then headers wrapped (a longer word folds: a run's name in the
    # per-slice table's heads), then cells wrapped at spaces
    for cell_width, head_width in ((len, len), (len, _longest_word), (_longest_word, _longest_word)):
        widths = {i: max([cell_width(r[i]) for r in rows] + [min(head_width(heads[i]), HEAD_WORD)]) for i in nums}
        if sum(widths.values()) + TEXT_MIN * n_text + overhead <= console.width:
            break
    else:
        console.print(Text(title_text))
        for row, style in zip(rows, styles):
            block = Table(show_header=False, box=None, title=Text(" ".join(row[:n_text]), style="bold"),
                          title_justify="left", padding=(0, 2, 0, 2))
            block.add_column(overflow="fold", ratio=1)
            block.add_column(no_wrap=True)
            for i in nums:
                block.add_row(Text(heads[i]), Text(row[i], style=style[i] if style and style.get(i) else ""))
            console.print(block)
        return
    table = Table(title=Text(title_text))
    for i, h in enumerate(heads):
        if i < n_text:
            table.add_column(Text(h, overflow="fold"), overflow="fold", min_width=min(TEXT_MIN, max(len(r[i]) for r in rows)))
        else:
            table.add_column(Text(h, overflow="fold"), width=widths[i], justify="right")
    for row, style in zip(rows, styles):
        cells_ = [Text(x) for x in row]  # names are never parsed as rich markup
        for i, st in (style or {}).items():
            cells_[i].stylize(st)
        table.add_row(*cells_)
    console.print(table)


def print_table(c: Comparison) -> None:
    """The default ``harness compare`` output: the comparison, the per-slice deltas, the note, transitions. Numbers
    are never cut at any terminal width (``_print_fitting``); names fold."""
    import sys

    from rich.console import Console
    from rich.text import Text

    console = Console(width=None if sys.stdout.isatty() else 160)  # piped output gets 80 columns otherwise
    for line in decision_lines(c):
        console.print(Text(line))
    styles = []
    for r in c.rows:
        style = "bold green" if r.significant and r.delta > 0 else ("bold red" if r.significant else "")
        styles.append({5: style} if style else None)
    _print_fitting(console, title(c), list(headers(c)), [cells(r) for r in c.rows], 2, styles)
    heads, rows = slice_table(c)
    if rows:
        _print_fitting(console, SLICE_NOTE, heads, rows, 1)
    console.print(Text(note(c).replace("`", "")))
    for run, k, ids in transition_lines(c):
        console.print(Text(f"{run}: {k}: {len(ids)} ({', '.join(ids[:12])})"))
    for sentence, labels in followed_lines(c):
        console.print(Text(sentence))
        for label, ids in labels:
            console.print(Text(f"  {label}: {len(ids)} ({', '.join(ids[:12])}{' …' if len(ids) > 12 else ''})"))
