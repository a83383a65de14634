"""The report's charts (matplotlib, Agg): inline SVG for report.html and PNG files beside it for slides.

- recall@k (chunk level) and nDCG@k (doc level) per run on one chart, and precision@k (chunk level);
- the first-relevant-chunk rank histogram;
- the verdict mix per slice as stacked bars;
- for a sweep, the ranking metric against each swept parameter.

Curves are over each level's counted queries (the ``counted`` flags), so at the configured cutoffs they are the
summary's numbers (a test checks recall@5, precision@5 and ndcg@10). matplotlib is an optional extra: without it
the page says so and no PNG is written. ``HARNESS_CHARTS=off`` leaves them out too (``charts_off``).
"""

from __future__ import annotations

import io
import os
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from ..core.errors import ConfigError
from ..diagnostics.kinds import COLOURS

if TYPE_CHECKING:
    from ..result.model import Result

KIND_COLORS = COLOURS  # the verdict kinds' table (diagnostics.kinds)
CHARTS_ENV = "HARNESS_CHARTS"


# Up to this configured depth the hits are read ONCE: the sums are kept that deep and cut to the deepest counted
# query at the end (a prefix of a cumulative sum is the same numbers). Deeper (a depth of 10^8 is allowed), they are
# read twice, the deepest query first, as before.
ONE_PASS_DEPTH = 10_000
BATCH_VALUES = 1_000_000  # queries x depth values per NumPy block of the curves


def _rows(stream, ids: list[str]):
    """``(row in ids, values)`` of ``stream`` ((query id, values)); row -1 for a query not in ``ids``. By position
    while the stream lists the queries in the order of ``ids`` (a run's hits do), by a dict of every id only when
    it does not: a large run's curves hold no dict a query."""
    from ..hits.positions import Positions

    positions, at = Positions(ids), 0
    for qid, values in stream:
        row = positions.find(qid, at)
        at = row + 1 if row >= 0 else at
        yield row, values


def _blocks(stream, ids: list[str], wanted, depth: int):
    """``stream`` ((query id, values)) cut into lists of (row in ``ids``, values) of the ``wanted`` rows (a bool
    mask over ``ids``), about BATCH_VALUES values each."""
    size, block = max(1, BATCH_VALUES // max(depth, 1)), []
    for row, values in _rows(stream, ids):
        if row >= 0 and wanted[row]:
            block.append((row, values))
            if len(block) == size:
                yield block
                block = []
    if block:
        yield block


def _matrix(block, depth: int, dtype) -> "np.ndarray":
    import numpy as np

    out = np.zeros((len(block), depth), dtype=dtype)
    for j, (_, values) in enumerate(block):
        part = values[:depth]
        out[j, :len(part)] = part
    return out


def curves(result: Result):
    """Mean recall@k and precision@k for k = 1..depth (chunk level), and first-relevant ranks, over the queries
    counted at chunk level (the summary's queries). Every query's relevance flags are read as a stream (from the
    run, the result, or hits.parquet when it keeps a bounded set of hits), in blocks of queries."""
    import numpy as np

    from ..result import querycolumns

    columns = querycolumns.of(result)  # not the records: a large run's are spooled
    counted, n_relevant_of = columns.counted["chunk"], columns.n_relevant["chunk"]
    # As deep as the hits go (not the configured depth, which may be 10^8): past them the curves carry nothing.
    upper = result.cutoff.depth
    if upper > ONE_PASS_DEPTH:
        upper = min(upper, max((len(f) for row, f in _rows(result.relevance(), columns.ids)
                                if row >= 0 and counted[row]), default=1))
    ks = np.arange(1, upper + 1)
    recall, precision, longest = np.zeros(upper), np.zeros(upper), 1
    first = np.zeros(len(columns), dtype=np.int64)  # by row; 0: no relevant chunk in the hits (or no hits)
    for block in _blocks(result.relevance(), columns.ids, counted, upper):
        longest = max(longest, max(len(rel) for _, rel in block))
        found = np.cumsum(_matrix(block, upper, np.int64), axis=1)
        n_relevant = n_relevant_of[[row for row, _ in block]].astype(np.int64)
        shares, per_k = found / np.maximum(n_relevant, 1)[:, None], found / ks
        for j, (row, rel) in enumerate(block):  # summed query by query, in stream order
            if n_relevant[j]:  # query_policy zero: a query with nothing relevant adds 0
                recall += shares[j]
            precision += per_k[j]
            where = np.flatnonzero(rel[:upper])
            first[row] = int(where[0]) + 1 if len(where) else 0
    depth = min(upper, longest)
    recall, precision = recall[:depth], precision[:depth]
    n = int(np.count_nonzero(counted))
    if n:
        recall, precision = recall / n, precision / n
    return recall.tolist(), precision.tolist(), [f or None for f in first[counted].tolist()]


def _doc_ndcg(gains, ideal, depth: int):
    """nDCG@k (linear gain = grade, log2 discount, as trec_eval's ndcg_cut) at k = 1..depth, one row per query at
    doc level: ``gains`` are its documents' grades at their best chunk, in rank order; ``ideal`` its judged
    grades > 0 sorted descending (both a query x depth matrix, zero-padded)."""
    import numpy as np

    discount = 1.0 / np.log2(np.arange(2, depth + 2))
    dcg = np.cumsum(gains * discount, axis=1)
    idcg = np.cumsum(ideal * discount, axis=1)
    return np.divide(dcg, idcg, out=np.zeros(dcg.shape), where=idcg > 0)


def ndcg_curve(result: Result) -> list[float]:
    """Mean doc-level nDCG@k, k = 1..depth (in documents), over the queries counted at doc level. The hits are
    read as a stream, in blocks of queries, never held for every query at once."""
    import numpy as np

    from ..result import querycolumns

    columns = querycolumns.of(result)  # not the records: a large run's are spooled
    counted = columns.counted["doc"]
    upper = result.cutoff.depth
    if upper > ONE_PASS_DEPTH:
        upper = None
    else:  # one pass, unless a query has more documents than the configured depth (not from harness run)
        total, longest = _ndcg_sums(result, columns, counted, upper)
        if longest > upper:
            upper = None
    if upper is None:
        upper = max((len(g) for row, g in _rows(result.doc_gains(), columns.ids) if row >= 0 and counted[row]),
                    default=1)
        total, longest = _ndcg_sums(result, columns, counted, upper)
    total = total[:longest]
    # A counted query with no hits at all scores 0 at every k (it adds nothing to the totals).
    n = int(np.count_nonzero(counted))
    return (total / n if n else total).tolist()


def _ndcg_sums(result: Result, columns, counted, depth: int):
    """(the sum over the ``counted`` queries (a mask over ``columns``) of nDCG@k for k = 1..depth, the most
    documents a counted query has)."""
    import numpy as np

    total, longest = np.zeros(depth), 1
    for block in _blocks(result.doc_gains(), columns.ids, counted, depth):
        longest = max(longest, max(len(gains) for _, gains in block))
        ideal = [(row, columns.ideal(row)) for row, _ in block]
        for row in _doc_ndcg(_matrix(block, depth, float), _matrix(ideal, depth, float), depth):
            total += row  # query by query, in stream order
    return total, longest


@dataclass(frozen=True)
class Chart:
    name: str  # file stem of its PNG
    title: str
    figure: Any  # a matplotlib Figure
    _box: list = field(default_factory=list, repr=False, compare=False)  # the tight box, once worked out

    def svg(self) -> str:
        buf = io.StringIO()
        with matplotlib_quiet():
            self.figure.savefig(buf, format="svg", bbox_inches=self.tight_box(), metadata={"Date": None})
        text = buf.getvalue()
        return text[text.index("<svg"):]

    def png(self) -> bytes:
        buf = io.BytesIO()
        with matplotlib_quiet():
            self.figure.savefig(buf, format="png", bbox_inches=self.tight_box(), dpi=150, metadata={"Software": None})
        return buf.getvalue()

    def tight_box(self):
        """The figure laid out (its layout engine run) and its tight bounding box (inches, padded as savefig pads
        'tight'), worked out once: the SVG and the PNG are two drawings of it. savefig's bbox_inches="tight" laid
        the figure out again for each file, about a third of a chart's time, in every run and sweep point."""
        if not self._box:
            import matplotlib

            fig = self.figure
            with matplotlib_quiet():
                fig.draw_without_rendering()  # the layout engine (constrained) places the axes here
                box = fig.get_tightbbox(fig.canvas.get_renderer())
                fig.set_layout_engine("none")  # the places stay; the files drawn later keep them
            self._box.append(box.padded(matplotlib.rcParams["savefig.pad_inches"]))
        return self._box[0]


@contextmanager
def matplotlib_quiet() -> Iterator[None]:
    """matplotlib's own warnings (a glyph missing from the font for a run name, a layout it could not fit) held
    back: they name matplotlib's source files, not anything the user can act on, and reached stderr under -q. What
    a chart cannot show is no part of a number (the tables hold them)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def charts_off() -> bool:
    """``HARNESS_CHARTS=off``: no charts in report.html and no PNG files (a pipeline that never opens them saves
    about a second and a half a run, the largest part of a small run's time). ``on`` or unset: charts. Any other
    value is an error (a typo must not silently keep or drop them)."""
    value = os.environ.get(CHARTS_ENV, "").strip()
    if value.lower() in ("", "on"):
        return False
    if value.lower() == "off":
        return True
    raise ConfigError(f"environment variable {CHARTS_ENV}={value!r}: expected on or off")


def _pyplot():
    if charts_off():
        return None
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    plt.rcParams["svg.fonttype"] = "none"
    return plt


def log_x(ax) -> None:
    """A log k axis labelled in plain numbers (1, 10, 100), as matplotlib's own log formatter writes them without
    its mathtext (10 to a power): parsing that text anew for every file drawn was a fifth of a chart's time."""
    from matplotlib.ticker import LogFormatter

    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(LogFormatter(10))
    ax.xaxis.set_minor_formatter(LogFormatter(10, labelOnlyBase=False))  # (what the log scale sets, in plain text)


def label(name: str) -> str:
    """A run name as a matplotlib label: '$' would start mathtext (a parse error on odd input), a leading '_'
    hides the entry. matplotlib escapes the text itself when it writes the SVG."""
    return name.replace("$", r"\$").lstrip("_") or "run"


def run_charts(results: Sequence[Result]) -> list[Chart] | None:
    with matplotlib_quiet():
        return _run_charts(results)


def _run_charts(results: Sequence[Result]) -> list[Chart] | None:
    """The charts of one run or of several compared (None without matplotlib)."""
    plt = _pyplot()
    if plt is None:
        return None
    import numpy as np

    out = []
    cs = [curves(r) for r in results]  # one pass per run serves three charts
    fig, ax = plt.subplots(figsize=(4.8, 3.2))
    for r, c in zip(results, cs):
        line, = ax.plot(range(1, len(c[0]) + 1), c[0], label=label(r.name) + " chunk recall@k")
        nd = ndcg_curve(r)
        ax.plot(range(1, len(nd) + 1), nd, linestyle="--", color=line.get_color(), label=label(r.name) + " doc nDCG@k")
        if r.cutoff.k:
            ax.axvline(r.cutoff.k, color="#98a2b3", linewidth=0.8)
    log_x(ax)
    ax.set_xlabel("k (grey line: the window)")
    ax.set_ylabel("mean recall@k / nDCG@k")
    ax.set_ylim(0, 1.02)
    ax.set_title("recall@k (chunk) and nDCG@k (doc)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    out.append(Chart("plot_recall_ndcg", "recall@k and nDCG@k", fig))
    fig, ax = plt.subplots(figsize=(4.8, 3.2))
    for r, c in zip(results, cs):
        ax.plot(range(1, len(c[1]) + 1), c[1], label=label(r.name))
    log_x(ax)
    ax.set_xlabel("k")
    ax.set_ylabel("mean precision@k")
    ax.set_title("precision@k (chunk level)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    out.append(Chart("plot_precision", "precision@k", fig))
    fig, ax = plt.subplots(figsize=(4.8, 3.2))
    for r, c in zip(results, cs):
        depth = r.cutoff.depth
        # an array: matplotlib turns a list into objects one by one (264 MB for 1M queries; an array: 1 MB)
        ranks = np.fromiter((f if f is not None else depth + 1 for f in c[2]), dtype=np.int64, count=len(c[2]))
        # the not-found bin as wide as a doubling: on the log axis [depth+1, depth+2) was a hairline
        bins = sorted({b for b in (1, 2, 3, 4, 5, 6, 11, 21, 51) if b <= depth} | {depth + 1, 2 * (depth + 1)})
        ax.hist(ranks, bins=bins, alpha=0.6, label=label(r.name))
    log_x(ax)
    ax.set_xlabel("rank of the first relevant chunk")
    ax.set_ylabel("queries")
    ax.set_title("first relevant chunk rank (right bin: not found)")
    ax.legend(fontsize=8)
    out.append(Chart("plot_first_rank", "first relevant rank", fig))
    for r in results:
        out += verdict_mix(plt, r, named=len(results) > 1)
    return out


def verdict_mix(plt, result: Result, named: bool = False) -> list[Chart]:
    """Stacked bars: per slice value, how many queries got each verdict (one chart per tag)."""
    by_slice = result.summary.verdicts.by_slice
    out = []
    for tag in sorted(by_slice):
        values = sorted(by_slice[tag])
        fig, ax = plt.subplots(figsize=(max(4.8, 0.45 * len(values) + 2), 4), layout="constrained")
        bottom = [0] * len(values)
        for kind, color in KIND_COLORS.items():
            counts = [getattr(by_slice[tag][v], kind) for v in values]
            if any(counts):
                ax.bar(range(len(values)), counts, bottom=bottom, color=color, label=kind)
                bottom = [b + c for b, c in zip(bottom, counts)]
        ax.set_xticks(range(len(values)), [label(v) for v in values], rotation=45, ha="right", fontsize=8)
        ax.set_title(f"verdicts by {label(tag)}" + (f": {label(result.name)}" if named else ""))
        ax.set_ylabel("queries")
        ax.yaxis.get_major_locator().set_params(integer=True)  # counts: no 2.5 queries
        # below the axes and their tick labels: inside, it covered the tallest bars (on the right, it made a
        # wide chart wider still, tiny on a phone)
        fig.legend(fontsize=8, loc="outside lower center", ncol=3, frameon=False)
        out.append(Chart("plot_verdicts_by_" + "".join(ch if ch.isalnum() else "_" for ch in tag), tag, fig))
    return out


def sweep_charts(board: dict) -> list[Chart] | None:
    with matplotlib_quiet():
        return _sweep_charts(board)


def _sweep_charts(board: dict) -> list[Chart] | None:
    """The leaderboard's metric against each swept parameter (numbers on a line, other values as categories)."""
    plt = _pyplot()
    if plt is None:
        return None
    runs = board.get("runs", [])
    params = sorted({p for r in runs for p in r.get("params", {})})
    out = []
    for p in params:
        points = [(r["params"][p], r["mean"]) for r in runs if p in r.get("params", {}) and r.get("mean") is not None]
        if not points:
            continue
        fig, ax = plt.subplots(figsize=(4.4, 3))
        if all(isinstance(x, (int, float)) and not isinstance(x, bool) for x, _ in points):
            ax.scatter([x for x, _ in points], [y for _, y in points])
        else:
            cats = sorted({str(x) for x, _ in points})
            ax.scatter([cats.index(str(x)) for x, _ in points], [y for _, y in points])
            ax.set_xticks(range(len(cats)), [label(c) for c in cats], rotation=30, ha="right", fontsize=8)
        ax.set_xlabel(label(p))
        ax.set_ylabel(label(board["metric"]))
        ax.set_title(f"{label(board['metric'])} by {label(p)}")
        ax.grid(alpha=0.3)
        out.append(Chart("plot_sweep_" + "".join(ch if ch.isalnum() else "_" for ch in p), p, fig))
    return out


def close(charts: Sequence[Chart] | None) -> None:
    if charts:
        import matplotlib.pyplot as plt
        for c in charts:
            plt.close(c.figure)


def write_sweep_plots(folder, board: dict) -> None:
    """The sweep's charts as PNG files (``plot_sweep_<parameter>.png``) in ``folder``, a staging folder of the
    output folder (core/outdir), so they are files harness wrote and replaces."""
    from pathlib import Path

    from ..io.files import write_bytes

    charts = sweep_charts(board)
    try:
        for chart in charts or []:
            write_bytes(Path(folder) / f"{chart.name}.png", chart.png())
    finally:
        close(charts)
