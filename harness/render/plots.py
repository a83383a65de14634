"""The report's charts (matplotlib, Agg): inline SVG for report.html and PNG files beside it for slides.

- recall@k (chunk level) and nDCG@k (doc level) per run on one chart, and precision@k (chunk level);
- the first-relevant-chunk rank histogram;
- the verdict mix per slice as stacked bars;
- for a sweep, the ranking metric against each swept parameter.

Curves are over each level's counted queries (the ``counted`` flags), so at the configured cutoffs they are the
summary's numbers (a test checks recall@5, precision@5 and ndcg@10). matplotlib is an optional extra: without it
the page says so and no PNG is written.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:
    from ..core.result import Result

KIND_COLORS = {"goldset_error": "#b42318", "no_gold": "#98a2b3", "missing_document": "#f04438",
               "wrong_chunk": "#f79009", "buried_evidence": "#7a5af8", "ok": "#17b26a"}


def curves(result: Result):
    """Mean recall@k and precision@k for k = 1..depth (chunk level), and first-relevant ranks, over the queries
    counted at chunk level (the summary's queries). Every query's relevance flags are read as a stream (from the
    run, the result, or hits.parquet when it keeps a bounded set of hits), twice: the depth first, then the sums."""
    import numpy as np

    # query id -> its relevant chunks, for the counted queries only (not their records: a large run's are spooled)
    counted = {q.id: q.n_relevant.chunk for q in result.queries if q.is_counted("chunk")}
    # As deep as the hits go (not the configured depth, which may be 10^8): past them the curves carry nothing.
    depth = min(result.cutoff.depth, max([len(f) for qid, f in result.relevance() if qid in counted] + [1]))
    ks = np.arange(1, depth + 1)
    recall, precision, first = np.zeros(depth), np.zeros(depth), {}
    for qid, rel in result.relevance():
        n_relevant = counted.get(qid)
        if n_relevant is None:
            continue
        rel = np.asarray(rel[:depth], dtype=np.int64)
        found = np.cumsum(np.pad(rel, (0, depth - len(rel))))
        if n_relevant:  # query_policy zero: a query with nothing relevant adds 0
            recall += found / n_relevant
        precision += found / ks
        where = np.flatnonzero(rel)
        first[qid] = int(where[0]) + 1 if len(where) else None
    n = len(counted)
    if n:
        recall, precision = recall / n, precision / n
    return recall.tolist(), precision.tolist(), [first.get(qid) for qid in counted]


def _doc_ndcg(gains, ideal, depth: int):
    """nDCG@k (linear gain = grade, log2 discount, as trec_eval's ndcg_cut) at k = 1..depth for one query at doc
    level: ``gains`` are its documents' grades at their best chunk, in rank order; ``ideal`` its judged grades > 0
    sorted descending."""
    import numpy as np

    discount = 1.0 / np.log2(np.arange(2, depth + 2))
    dcg = np.cumsum(np.pad(np.asarray(gains[:depth], dtype=float), (0, max(depth - len(gains), 0))) * discount)
    idcg = np.cumsum(np.pad(np.asarray(ideal[:depth], dtype=float), (0, max(depth - len(ideal), 0))) * discount)
    return np.divide(dcg, idcg, out=np.zeros(depth), where=idcg > 0)


def ndcg_curve(result: Result) -> list[float]:
    """Mean doc-level nDCG@k, k = 1..depth (in documents), over the queries counted at doc level. The hits are
    read twice as a stream (the depth first, then the curve), never held for every query at once."""
    import numpy as np

    # query id -> its ideal gains, for the counted queries only (not their records: a large run's are spooled)
    rows = {q.id: sorted((g.grade for g in q.gold if g.grade > 0), reverse=True)
            for q in result.queries if q.is_counted("doc")}
    depth = max([len(g) for qid, g in result.doc_gains() if qid in rows] + [1])
    total = np.zeros(depth)
    for qid, gains in result.doc_gains():
        ideal = rows.get(qid)
        if ideal is not None:
            total += _doc_ndcg(gains, ideal, depth)
    # A counted query with no hits at all scores 0 at every k (it adds nothing to the totals).
    return (total / len(rows) if rows else total).tolist()


@dataclass(frozen=True)
class Chart:
    name: str  # file stem of its PNG
    title: str
    figure: Any  # a matplotlib Figure

    def svg(self) -> str:
        buf = io.StringIO()
        self.figure.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
        text = buf.getvalue()
        return text[text.index("<svg"):]

    def png(self) -> bytes:
        buf = io.BytesIO()
        self.figure.savefig(buf, format="png", bbox_inches="tight", dpi=150, metadata={"Software": None})
        return buf.getvalue()


def _pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    plt.rcParams["svg.fonttype"] = "none"
    return plt


def label(name: str) -> str:
    """A run name as a matplotlib label: '$' would start mathtext (a parse error on odd input), a leading '_'
    hides the entry. matplotlib escapes the text itself when it writes the SVG."""
    return name.replace("$", r"\$").lstrip("_") or "run"


def run_charts(results: Sequence[Result]) -> list[Chart] | None:
    """The charts of one run or of several compared (None without matplotlib)."""
    plt = _pyplot()
    if plt is None:
        return None
    out = []
    cs = [curves(r) for r in results]  # one pass per run serves three charts
    fig, ax = plt.subplots(figsize=(4.8, 3.2))
    for r, c in zip(results, cs):
        line, = ax.plot(range(1, len(c[0]) + 1), c[0], label=label(r.name) + " chunk recall@k")
        nd = ndcg_curve(r)
        ax.plot(range(1, len(nd) + 1), nd, linestyle="--", color=line.get_color(), label=label(r.name) + " doc nDCG@k")
        if r.cutoff.k:
            ax.axvline(r.cutoff.k, color="#98a2b3", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("k (grey line: the window)")
    ax.set_ylim(0, 1.02)
    ax.set_title("recall@k (chunk) and nDCG@k (doc)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    out.append(Chart("plot_recall_ndcg", "recall@k and nDCG@k", fig))
    fig, ax = plt.subplots(figsize=(4.8, 3.2))
    for r, c in zip(results, cs):
        ax.plot(range(1, len(c[1]) + 1), c[1], label=label(r.name))
    ax.set_xscale("log")
    ax.set_xlabel("k")
    ax.set_title("precision@k (chunk level)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    out.append(Chart("plot_precision", "precision@k", fig))
    fig, ax = plt.subplots(figsize=(4.8, 3.2))
    for r, c in zip(results, cs):
        depth = r.cutoff.depth
        ranks = [f if f is not None else depth + 1 for f in c[2]]
        bins = sorted({b for b in (1, 2, 3, 4, 5, 6, 11, 21, 51) if b <= depth} | {depth + 1, depth + 2})
        ax.hist(ranks, bins=bins, alpha=0.6, label=label(r.name))
    ax.set_xscale("log")
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
        fig, ax = plt.subplots(figsize=(max(4.8, 0.45 * len(values) + 2), 3.4))
        bottom = [0] * len(values)
        for kind, color in KIND_COLORS.items():
            counts = [getattr(by_slice[tag][v], kind) for v in values]
            if any(counts):
                ax.bar(range(len(values)), counts, bottom=bottom, color=color, label=kind)
                bottom = [b + c for b, c in zip(bottom, counts)]
        ax.set_xticks(range(len(values)), [label(v) for v in values], rotation=45, ha="right", fontsize=7)
        ax.set_title(f"verdicts by {label(tag)}" + (f": {label(result.name)}" if named else ""))
        ax.set_ylabel("queries")
        ax.legend(fontsize=7)
        out.append(Chart("plot_verdicts_by_" + "".join(ch if ch.isalnum() else "_" for ch in tag), tag, fig))
    return out


def sweep_charts(board: dict) -> list[Chart] | None:
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
            ax.set_xticks(range(len(cats)), [label(c) for c in cats], rotation=30, ha="right", fontsize=7)
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

    from ..core.files import write_bytes

    charts = sweep_charts(board)
    try:
        for chart in charts or []:
            write_bytes(Path(folder) / f"{chart.name}.png", chart.png())
    finally:
        close(charts)
