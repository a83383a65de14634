"""``harness goldset stats`` in its table form: the dict ``goldset.stats`` computes (and ``--format json`` prints
as it is), one fact a line."""

from __future__ import annotations


def stats_lines(stats: dict) -> list[str]:
    """The table form: one fact a line."""
    per = stats["judgments_per_query"]
    ev = stats["evidence"]
    unanswerable = stats.get("unanswerable_queries", 0)
    lines = [f"queries: {stats['queries']} ({stats['queries_without_relevant']} without a relevant document"
             + (f", {unanswerable} of them marked answerable: false" if unanswerable else "") + ")",
             f"judgments: {stats['judgments']} ({per['mean']} per query, min {per['min']}, max {per['max']})",
             "grades: " + (", ".join(f"{g}: {n}" for g, n in stats["grades"].items()) or "none"),
             f"evidence: {ev['with_evidence']} of {ev['relevant_judgments']} relevant judgments "
             f"({ev['coverage']:.0%}), {ev['evidence_spans']} spans or quotes"]
    for tag, values in stats["slices"].items():
        lines.append(f"slice {tag}: " + ", ".join(f"{v}: {n}" for v, n in values.items()))
    power = stats.get("power")
    if power:
        if power["mde"] is None:
            lines.append(f"power: too few counted queries in {power['run']} ({power['queries']})")
        else:
            lines.append(f"minimum detectable effect ({power['metric']}, {power['queries']} queries, 80% power, "
                         f"alpha 0.05, paired): {power['mde']:.4f}, estimated from one run's spread (per-query sd "
                         f"{power['sd']:.4f}, mean {power['mean']:.4f}, run {power['run']}); compare's MDE uses "
                         f"two runs' differences")
    return lines
