"""Paired comparison of saved runs over the same golden set: deltas with bootstrap CIs, significance tests with
a multiple-comparison correction, win/tie/loss, verdict transitions, per-slice deltas, and the minimum
detectable effect of the golden set (80% power, two-sided alpha 0.05).

Tables are rendered by ``render.compare_view`` (one renderer for every format). Queries are paired by id over those counted at the metric's level in both runs (each query's ``counted`` flag:
``metrics.table.included``), so a run's baseline mean here is its summary's number whenever both runs count the
same queries (runs under different query policies are refused; runs over corpora that leave different golden-set
entries uncheckable are compared with a warning naming the queries left out)."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Sequence

import numpy as np

from ..result import querycolumns
from ..core.errors import InputError
from ..result.outcomes import Comparison, ComparisonRow, distinct_names
from ..result.model import Result, as_result
from ..metrics.spec import split_metric
from ..metrics.table import mean_of
from .choices import CORRECTIONS, TESTS
from .followed import followed_of
Z_975, Z_80 = 1.959963984540054, 0.8416212335729143


def _check_metric(run: Result, level: str, metric: str) -> None:
    have = run.summary.means(level)
    if metric not in have:
        raise InputError(f"metric {level}.{metric} is not in run {run.name!r}; it has {', '.join(have) or 'none'}")


def pairing(a: Result, b: Result, level: str) -> tuple[np.ndarray, np.ndarray]:
    """Positions in a and in b of the queries both count at ``level`` (their ``counted`` flags), in a's order; read
    from the runs' per-query columns (``core.querycolumns``), not their records."""
    ca, cb = querycolumns.of(a), querycolumns.of(b)
    if ca.ids == cb.ids:  # the usual case: two runs over one golden set list its queries in the same order
        both = np.flatnonzero(ca.counted[level] & cb.counted[level])
        return both, both
    at_b = {cb.ids[j]: j for j in np.flatnonzero(cb.counted[level]).tolist()}
    pos_a, pos_b = [], []
    for i in np.flatnonzero(ca.counted[level]).tolist():
        j = at_b.get(ca.ids[i])
        if j is not None:
            pos_a.append(i)
            pos_b.append(j)
    return np.asarray(pos_a, dtype=np.int64), np.asarray(pos_b, dtype=np.int64)


def paired_vectors(a: Result, b: Result, level: str, metric: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Values of both runs on the queries both count at ``level`` (their ``counted`` flags), in a's order."""
    _check_metric(a, level, metric)
    _check_metric(b, level, metric)
    pos_a, pos_b = pairing(a, b, level)
    ca, cb = querycolumns.of(a), querycolumns.of(b)
    return ([ca.ids[i] for i in pos_a.tolist()], ca.value(level, metric)[pos_a].copy(),
            cb.value(level, metric)[pos_b].copy())


def counted_differently(a: Result, b: Result, level: str) -> list[str]:
    """Queries one run counts at ``level`` and the other does not (runs over different corpora can disagree on
    which golden-set entries can be checked): they are left out of the pairing, and the comparison says so."""
    ca, cb = querycolumns.of(a), querycolumns.of(b)
    counted = lambda c: {c.ids[i] for i in np.flatnonzero(c.counted[level]).tolist()}
    if ca.ids == cb.ids:
        return sorted(ca.ids[i] for i in np.flatnonzero(ca.counted[level] != cb.counted[level]).tolist())
    return sorted(counted(ca) ^ counted(cb))


# Random draws are made in the same calls as always (rows of 2,000 resamples), so results do not change, but
# each call is cut into blocks of at most this many values: memory stays bounded at 100k+ queries (2,000 x 100k
# indexes would be 1.6 GB). A block is a multiple of 4 rows: numpy draws 8-bit integers 4 to a 32-bit word and
# drops the rest at the end of a call, so cutting a call at a multiple of 4 values draws the same numbers.
BLOCK_VALUES = 4_000_000


def _blocks(rows: int, n: int):
    step = max(4, min(rows, BLOCK_VALUES // max(n, 1)) // 4 * 4)
    for start in range(0, rows, step):
        yield min(step, rows - start)


def randomization_p(d: np.ndarray, permutations: int = 10_000, seed: int = 0) -> float:
    """Two-sided paired randomization (sign-flip) test: p = (count + 1) / (permutations + 1)."""
    if len(d) == 0 or not d.any():
        return 1.0
    rng = np.random.default_rng(seed)
    observed = abs(d.mean())
    count = 0
    for start in range(0, permutations, 2000):  # batches keep memory flat for large golden sets
        for n in _blocks(min(2000, permutations - start), len(d)):
            signs = rng.integers(0, 2, size=(n, len(d)), dtype=np.int8) * 2 - 1
            count += int((np.abs(signs @ d / len(d)) >= observed - 1e-12).sum())
    return (count + 1) / (permutations + 1)


def bootstrap_ci(d: np.ndarray, resamples: int = 10_000, seed: int = 0,
                 confidence: float = 0.95) -> tuple[float, float, float]:
    """Percentile CI of the mean (95% unless told; the same draws at every level), and a two-sided bootstrap p
    (shifted to the null). Given paired differences, the interval is the delta's."""
    if len(d) == 0:
        return 0.0, 0.0, 1.0
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    done = 0
    for start in range(0, resamples, 2000):
        for n in _blocks(min(2000, resamples - start), len(d)):
            idx = rng.integers(0, len(d), size=(n, len(d)))
            means[done:done + n] = d[idx].mean(axis=1)
            done += n
    tail = (1 - confidence) / 2 * 100
    lo, hi = np.percentile(means, [tail, 100 - tail])
    centred = means - d.mean()
    p = (int((np.abs(centred) >= abs(d.mean()) - 1e-12).sum()) + 1) / (resamples + 1)
    return float(lo), float(hi), float(p)


def p_value(test: str, xa: np.ndarray, xb: np.ndarray) -> float:
    d = xb - xa
    if test == "randomization":
        return randomization_p(d)
    if test == "bootstrap":
        return bootstrap_ci(d)[2]
    if not d.any():
        return 1.0
    from scipy import stats

    if test == "ttest":
        return float(stats.ttest_rel(xb, xa).pvalue)
    return float(stats.wilcoxon(xb, xa).pvalue)


def correct(pvalues: list[float], how: str) -> list[float]:
    m = len(pvalues)
    if how == "none" or m == 0:
        return list(pvalues)
    if how == "bonferroni":
        return [min(1.0, p * m) for p in pvalues]
    order = sorted(range(m), key=lambda i: pvalues[i])  # Holm step-down, made monotone
    out, running = [0.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        out[i] = running
    return out


def mde(d: np.ndarray) -> float:
    """Smallest true mean difference detected with 80% power at alpha 0.05 (normal approximation)."""
    if len(d) < 2:
        return float("inf")
    return (Z_975 + Z_80) * float(d.std(ddof=1)) / math.sqrt(len(d))


def queries_needed(d: np.ndarray, effect: float) -> int | None:
    """How many queries make the MDE (``mde``, at the spread ``d`` shows) as small as ``effect``: the MDE shrinks
    as 1/sqrt(n). None when no size would do (an effect of 0, or fewer than two values to measure a spread)."""
    if len(d) < 2 or effect <= 0:
        return None
    spread = float(d.std(ddof=1))
    if spread == 0:
        return len(d)
    return max(len(d), math.ceil(((Z_975 + Z_80) * spread / effect) ** 2))


def check_comparable(runs: Sequence[Result]) -> list[str]:
    base = runs[0]
    for r in runs[1:]:
        if r.goldset.fingerprint != base.goldset.fingerprint:
            raise InputError(f"runs {base.name!r} and {r.name!r} use different golden sets "
                             f"(fingerprints {base.goldset.fingerprint} and {r.goldset.fingerprint}); "
                             f"paired comparison needs the same queries and judgments")
        if r.goldset.query_ids_fingerprint != base.goldset.query_ids_fingerprint:
            raise InputError(f"runs {base.name!r} and {r.name!r} cover different query sets")
        # (the API's stand-ins for MetricTables have no conventions: their inclusion flags were checked already)
        rule, other = (_counting_rule(run) for run in (base, r))
        if rule and other and rule != other:  # query_policy exclude against zero
            raise InputError(f"runs {base.name!r} and {r.name!r} count queries under different rules (queries "
                             f"without relevant items: {rule!r} against {other!r}: evaluation.query_policy); a "
                             f"paired comparison needs one rule, or neither run's mean is its summary's")
    warnings = [f"cutoffs differ: {base.name} {base.cutoff.describe}, {r.name} {r.cutoff.describe}"
                for r in runs[1:] if r.cutoff.describe != base.cutoff.describe]
    for r in runs[1:]:
        retagged = _retagged(base, r)
        if retagged:
            warnings.append(f"{base.name} and {r.name} tag {len(retagged)} queries differently (e.g. "
                            f"{', '.join(retagged[:5])}); the per-slice deltas use {base.name}'s tags")
    return warnings


WINDOW_SIZE_TOLERANCE = 0.10  # windows further apart than this make chunk-level metrics a contest of sizes


def window_size_note(a: Result, b: Result) -> str | None:
    """The note for chunk-level metrics of two runs whose mean windows differ by more than 10% in characters or
    in tokens (as ``results.json`` states them: ``cutoff.mean_window_chars`` / ``mean_window_tokens``)."""
    pairs = [(getattr(a.cutoff, f"mean_window_{unit}", None), getattr(b.cutoff, f"mean_window_{unit}", None), unit)
             for unit in ("tokens", "chars")]
    apart = [(x, y, unit) for x, y, unit in pairs if x and y and max(x, y) / min(x, y) - 1 > WINDOW_SIZE_TOLERANCE]
    if not apart:
        return None
    sizes = ", ".join(f"{x:.0f} against {y:.0f} {'characters' if unit == 'chars' else 'tokens'}"
                      for x, y, unit in pairs if x is not None and y is not None)
    return (f"{a.name} and {b.name} have context windows of different sizes (mean {sizes}): bigger windows win "
            f"chunk-level recall trivially; compare at an equal budget (cutoff.token_budget) or on the evidence "
            f"metrics")


def _counting_rule(run: Result) -> str | None:
    return (getattr(run, "conventions", None) or {}).get("no_relevant_queries")


def _retagged(a: Result, b: Result) -> list[str]:
    """The queries whose tags differ between two runs of one golden set (its fingerprint leaves tags out)."""
    ca, cb = querycolumns.of(a), querycolumns.of(b)
    if not ca.tags and not cb.tags:
        return []
    tags_b = dict(zip(cb.ids, cb.query_tags()))
    return [qid for qid, tags in zip(ca.ids, ca.query_tags()) if tags_b.get(qid, tags) != tags]


def compare_runs(runs: Sequence[Result | dict], metrics: Sequence[str], *, baseline: str | None = None,
                 test: str = "randomization", correction: str = "holm") -> Comparison:
    if len(runs) < 2:
        raise InputError("compare needs at least two results.json files")
    if test not in TESTS:
        raise InputError(f"unknown test {test!r}; choose from {', '.join(TESTS)}")
    if correction not in CORRECTIONS:
        raise InputError(f"unknown correction {correction!r}; choose from {', '.join(CORRECTIONS)}")
    runs = distinct_names([as_result(r) for r in runs])
    names = [r.name for r in runs]
    base_name = baseline or names[0]
    if base_name not in names:
        raise InputError(f"baseline {base_name!r} is not one of the runs: {', '.join(names)}")
    base = runs[names.index(base_name)]
    others = [r for r in runs if r is not base]
    warnings = check_comparable([base] + others)
    metrics = list(metrics) or ["ndcg@10", "chunk.recall@window"]
    # One row a metric however it was named (`-m ndcg@10 -m doc.nDCG@10`): a repeated row would enter the
    # correction's family twice and inflate every corrected p.
    parsed = list(dict.fromkeys(split_metric(m) for m in metrics))
    for r in others:
        for level in sorted({level for level, _ in parsed}):
            differ = counted_differently(base, r, level)
            if differ:
                warnings.append(f"{base.name} and {r.name} count different queries at {level} level; "
                                f"{len(differ)} left out of the pairing: {', '.join(differ[:10])}")
    if any(level == "chunk" for level, _ in parsed):
        warnings += [note for r in others if (note := window_size_note(base, r))]
    rows: list[dict] = []
    for r in others:
        for level, metric in parsed:
            _check_metric(base, level, metric)
            _check_metric(r, level, metric)
            pos, pos_r = pairing(base, r, level)
            xa = querycolumns.of(base).value(level, metric)[pos]
            xb = querycolumns.of(r).value(level, metric)[pos_r]
            d = xb - xa
            row = {"run": r.name, "metric": f"{level}.{metric}", "n": len(d), "baseline_mean": None, "mean": None,
                   "delta": None, "ci95": None, "p": None, "wins": 0, "ties": 0, "losses": 0, "mde": None,
                   "slices": {}}
            if len(d):  # no query counted in both runs: nothing to compare (n/a), not a delta of 0 and p 1
                lo, hi, _ = bootstrap_ci(d)
                # delta is the two shown means' difference (the mean of the differences can differ in the last
                # digit: each difference was rounded), so "run mean - baseline" is delta as printed, and a gate
                # regression rule reads the same number
                baseline_mean, mean = mean_of(xa), mean_of(xb)
                row.update({"baseline_mean": baseline_mean, "mean": mean, "delta": mean - baseline_mean,
                            "ci95": (lo, hi), "p": p_value(test, xa, xb), "wins": int((d > 0).sum()),
                            "ties": int((d == 0).sum()), "losses": int((d < 0).sum()), "mde": mde(d),
                            "slices": _slices(base, pos, d)})
            rows.append(row)
    # The correction's family is the rows that were tested (a row with nothing to compare has no p).
    tested = [i for i, row in enumerate(rows) if row["p"] is not None]
    corrected: list[float | None] = [None] * len(rows)
    for i, p in zip(tested, correct([rows[i]["p"] for i in tested], correction)):
        corrected[i] = p
    done = [ComparisonRow(**row, p_corrected=p, significant=p is not None and p < 0.05)
            for row, p in zip(rows, corrected)]
    return Comparison(baseline=base.name, runs=names, test=test, correction=correction, permutations=10_000,
                      warnings=warnings, rows=done, transitions={r.name: transitions(base, r) for r in others},
                      followed=followed_of([base] + others, *parsed[0]) if parsed else {})


def _slices(a: Result, pos: np.ndarray, d: np.ndarray) -> dict:
    """Mean paired difference per slice ("tag=value") over the paired queries (``pos``: their positions in a) that
    have it (``mean_of``)."""
    columns = querycolumns.of(a)
    groups: dict[str, list[np.ndarray]] = defaultdict(list)
    for tag, codes in columns.tags.items():
        mine = codes[pos]
        for code, value in enumerate(columns.tag_values[tag]):
            at = np.flatnonzero(mine == code)
            if len(at):
                groups[f"{tag}={value}"].append(at)
    out = {}
    for key in sorted(groups):  # two (tag, value) pairs may read alike ("a=b", "c" and "a", "b=c"): one slice
        at = np.sort(np.concatenate(groups[key]), kind="stable")
        out[key] = {"n": len(at), "delta": mean_of(d[at])}
    return out


def transitions(a: Result, b: Result) -> dict:
    """Queries whose verdict changed, grouped as 'from -> to'."""
    ca, cb = querycolumns.of(a), querycolumns.of(b)
    kinds_a, kinds_b = ca.kind_of(), cb.kind_of()
    if ca.ids == cb.ids:
        after_of = kinds_b
    else:
        at_b = dict(zip(cb.ids, kinds_b))
        after_of = [at_b.get(qid) for qid in ca.ids]
    out: dict[str, list[str]] = defaultdict(list)
    for qid, before, after in zip(ca.ids, kinds_a, after_of):
        if after is not None and before != after:
            out[f"{before} -> {after}"].append(qid)
    return dict(sorted(out.items()))
