"""Per-query verdicts at the context window, with the evidence for each, and aggregates with advice.

Precedence (exactly one kind per query): goldset_error, unanswerable, no_gold, missing_document, wrong_chunk, incomplete,
buried_evidence, ok. ``incomplete``: the window holds evidence of some of the query's evidence groups, not all
(``hits.groups``; a query that names no group has one group, so it is never incomplete). Flags (any number):
partial, noisy_context, unjudged_in_window (``FLAGS_TEXT``).

Diagnosed from the golden set, its problems against the corpus, the diagnostics settings, the ranked lists and the
judgments at both levels only: no pipeline object, no half-built result.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from itertools import islice
from typing import TYPE_CHECKING, Collection, Mapping, Sequence

from ..result.model import FLAGS, KINDS, RETRIEVER_FAILURES, KindCounts, Verdict, VerdictSummary  # noqa: F401
from ..hits.groups import coverage as group_coverage, group_label
from .geometry import geometry_advice, geometry_counts
from .stages import attributed, lost_counts
from ..hits.table import HitTable
from ..hits.levelgrades import grades_at
from ..result.querystore import stored_mapping
from ..core.types import GoldSet, RankedList

if TYPE_CHECKING:
    from ..config.schema import DiagnosticsConfig
    from ..hits.geometry import Geometry
    from ..gold.resolve import GoldProblem


def _distance(a: tuple[int, int], b: tuple[int, int]) -> int:
    """Characters between two spans (0 when they touch or overlap)."""
    return max(0, max(a[0], b[0]) - min(a[1], b[1]))


def diagnose(gold: GoldSet, problems: Sequence["GoldProblem"], settings: "DiagnosticsConfig",
             lists: Sequence[RankedList], window_k: Sequence[int], doc_qrels: Mapping[str, Mapping[str, int]],
             chunk_qrels: Mapping[str, Mapping[str, int]], absent: Collection[str] = (), *,
             stages: Mapping | None = None, units=None, chunks: Mapping | None = None) -> Mapping[str, Verdict]:
    """One verdict per golden-set query, keyed by query id, in golden-set order. ``absent``: queries the retriever
    had no answer for at all (an external run that lacks them), told apart from a ranking that found nothing
    relevant. A large run's verdicts are spooled as they are made (``core.querystore``), a small run's are a dict.
    ``stages`` (query id -> a composite retriever's stage records), with the evidence ``units`` and the run's
    ``chunks``, adds each query's ladder and ``lost_at`` (``diagnostics.stages``)."""
    by_query = defaultdict(list)
    for p in problems:
        by_query[p.query_id].append(p)
    absent = set(absent)
    # A HitTable's lists with hits made as the verdict reads them (the window, a few below it), not all of them
    ranked_lists = (lists.lazy(i) for i in range(len(lists))) if isinstance(lists, HitTable) else lists
    made = ((qid, _staged(_verdict(ranked, k, grades_at(doc_qrels, i, qid), grades_at(chunk_qrels, i, qid),
                                   judgments, by_query.get(qid, []), settings, qid in absent,
                                   qid in gold.unanswerable),
                          stages, i, qid, units, chunks, judgments, k))
            for i, (qid, judgments, ranked, k) in enumerate(zip(gold.query_ids(), gold.judgments_per_query(),
                                                                 ranked_lists, window_k)))
    return stored_mapping(Verdict, made, len(gold.queries))


def _staged(verdict: Verdict, stages, i, qid, units, chunks, judgments, k) -> Verdict:
    """``verdict`` with its query's stage ladder and ``lost_at`` when the retriever recorded stages."""
    if stages is None or units is None:
        return verdict
    detail = attributed(verdict.kind, verdict.detail, stages.get(qid), units.at(i, qid), chunks or {}, judgments, k)
    return verdict if detail is verdict.detail else verdict.model_copy(update={"detail": detail})


def flags_text(settings: "DiagnosticsConfig") -> str:
    """The flag rules in words, for every result's conventions."""
    return (f"noisy_context: the window's relevant chunks are below {settings.noisy_below:g} of the most it could "
            "hold (min(k, R) for R relevant chunks); unjudged_in_window: a chunk of an unjudged document outranks "
            "the first relevant chunk of the window (detail.unjudged_share gives the unjudged share of every "
            "window); partial: some relevant documents or evidence spans are missing from the window. Not a flag: a "
            f"missing_document's detail.near says its first relevant document ranks within {settings.near_cutoff} "
            "past the window")


def _v(kind: str, reason: str, detail: dict | None = None, flags: Sequence[str] = ()) -> Verdict:
    return Verdict(kind=kind, reason=reason, detail=detail or {}, flags=list(flags))


def _verdict(ranked, k, dq, cq, judgments, problems, s, absent: bool, unanswerable: bool = False) -> Verdict:
    if problems:
        return _v("goldset_error",
                  f"the gold cannot be checked: {problems[0].message}"
                  + (f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""),
                  {"problems": [{"doc_id": p.doc_id, "kind": p.kind, "message": p.message} for p in problems]})
    if unanswerable:
        top = ranked.hits[0].score if ranked is not None and ranked.hits and not absent else None
        return _v("unanswerable", "marked answerable: false (its answer is not in the corpus): judged for abstention "
                  "(summary.abstention), not ranked", {"top_score": top})
    relevant_docs = {d for d, g in dq.items() if g >= 1}
    if not relevant_docs:
        return _v("no_gold", "the golden set lists no relevant document for this query")
    if absent:
        return _v("missing_document", "the run has no ranking for this query (absent from the run): it scores 0",
                  {"window": k, "where": "absent_from_run", "first_rank": None, "near": False,
                   "best_rank": {d: None for d in sorted(relevant_docs)}})

    window = ranked.hits[:k]
    flags, detail = [], {"window": k}

    # Flags first: they accompany whichever kind the query gets.
    docs_in_window = {h.doc_id for h in window}
    missing_docs = sorted(relevant_docs - docs_in_window)
    evidence_spans = [(j.doc_id, sp.start, sp.end) for j in judgments if j.relevance >= 1 for sp in j.evidence]
    missing_spans = [e for e in evidence_spans
                     if not any(h.doc_id == e[0] and h.start < e[2] and e[1] < h.end for h in window)]
    found_any = bool(docs_in_window & relevant_docs)
    if found_any and (missing_docs or (evidence_spans and missing_spans and len(missing_spans) < len(evidence_spans))):
        flags.append("partial")
        detail["partial"] = {"missing_documents": missing_docs,
                             "missing_evidence": [{"doc_id": d, "start": a, "end": b} for d, a, b in missing_spans]}
    if k:
        # Noise is judged against what the query allows: with R relevant chunks a k-chunk window holds at most
        # min(k, R) of them (one relevant abstract caps P@10 at 0.1), so precision is read relative to that.
        found = sum(1 for h in window if cq.get(h.chunk_id, 0) >= 1)
        possible = min(k, sum(1 for g in cq.values() if g >= 1))
        relative = found / possible if possible else None
        if relative is not None and relative < s.noisy_below:
            flags.append("noisy_context")
            detail["noisy_context"] = {"chunk_precision": found / k, "possible_precision": possible / k,
                                       "relative_precision": relative, "threshold": s.noisy_below}
        # The unjudged share is a number on every query; the flag only says when it matters: an unjudged chunk
        # outranks the first relevant one in the window (or the window has none), so a relevant chunk the
        # golden set never judged could be what the retriever preferred.
        unjudged = [h for h in window if h.doc_id not in dq]
        detail["unjudged_share"] = len(unjudged) / k
        first_relevant = next((h.rank for h in window if cq.get(h.chunk_id, 0) >= 1), k + 1)
        above = [h.chunk_id for h in unjudged if h.rank < first_relevant]
        if above:
            flags.append("unjudged_in_window")
            detail["unjudged_in_window"] = {"share": len(unjudged) / k, "above_first_relevant": above}
    flags_t = tuple(flags)

    if not found_any:
        best = {}
        for h in ranked.hits:
            if h.doc_id in relevant_docs and h.doc_id not in best:
                best[h.doc_id] = h.rank
                if len(best) == len(relevant_docs):
                    break
        detail["best_rank"] = {d: best.get(d) for d in sorted(relevant_docs)}
        if best:
            first = min(best.values())
            # near is relative to the window: within near_cutoff ranks past it (k < rank <= k + near_cutoff)
            detail.update(where="beyond_cutoff", first_rank=first, near=first <= k + s.near_cutoff)
            reason = f"no relevant document in the window; found at rank {first}; the window holds {k}"
        else:
            detail.update(where="not_retrieved", first_rank=None, near=False)
            reason = (f"no relevant document in the window, nor in the top {len(ranked.hits)} retrieved")
        return _v("missing_document", reason, detail, flags_t)

    relevant_in_window = [h for h in window if cq.get(h.chunk_id, 0) >= 1]
    if not relevant_in_window:
        # A relevant document is in the window, but none of its window chunks overlaps the evidence.
        doc = next(h.doc_id for h in window if h.doc_id in relevant_docs)
        spans = [(a, b) for d, a, b in evidence_spans if d == doc]
        retrieved = [{"chunk_id": h.chunk_id, "start": h.start, "end": h.end, "rank": h.rank}
                     for h in window if h.doc_id == doc]
        evidence_hit = next((h for h in islice(ranked.hits, k, None) if cq.get(h.chunk_id, 0) >= 1), None)
        distance = min((_distance((r["start"], r["end"]), sp) for r in retrieved for sp in spans), default=None)
        detail.update(doc_id=doc, retrieved_chunks=retrieved, evidence=[{"start": a, "end": b} for a, b in spans],
                      evidence_rank=evidence_hit.rank if evidence_hit else None,
                      evidence_chunk_id=evidence_hit.chunk_id if evidence_hit else None, distance_chars=distance)
        where = f"ranked {evidence_hit.rank}" if evidence_hit else f"not in the top {len(ranked.hits)}"
        return _v("wrong_chunk",
                  f"document {doc!r} is in the window but not the chunk with the evidence ({where}; "
                  f"{distance} character{'' if distance == 1 else 's'} away)", detail, flags_t)

    first = relevant_in_window[0]
    if k - s.edge < first.rank:
        position = "end"
    elif first.rank <= s.edge:
        position = "top"
    else:
        position = "middle"
    in_middle = k >= s.middle_min_window and position == "middle"
    detail.update(rank=first.rank, chunk_id=first.chunk_id, position=position,
                  above=[{"rank": h.rank, "chunk_id": h.chunk_id, "doc_id": h.doc_id} for h in window[: first.rank - 1]])
    if any(j.group is not None for j in judgments):
        covered = group_coverage(judgments, ranked.hits, k, cq)
        if covered.missing:
            return _incomplete(covered, len(ranked.hits), detail, flags_t)
    if first.rank > s.buried_after or in_middle:
        why = (f"after rank {s.buried_after}" if first.rank > s.buried_after
               else f"in the middle of a {k}-chunk window")
        return _v("buried_evidence",
                  f"the evidence is in the window but first at rank {first.rank} of {k} ({why})", detail, flags_t)
    return _v("ok", f"the evidence is at rank {first.rank} of {k}", detail, flags_t)


def _incomplete(covered, depth: int, detail: dict, flags: tuple) -> Verdict:
    """The window holds evidence of some groups but not of ``covered.missing``: each named with where it ranked."""
    ranks = covered.first_rank
    detail["groups"] = [{"group": g, "first_rank": ranks[g], "in_window": covered.in_window(g)} for g in ranks]
    detail["missing_groups"] = [{"group": g, "first_rank": ranks[g]} for g in covered.missing]
    held = [group_label(g) for g in ranks if covered.in_window(g)]
    missing = ", ".join(f"{group_label(g)} ({f'ranked {ranks[g]}' if ranks[g] else f'not in the top {depth}'})"
                        for g in covered.missing)
    return _v("incomplete", f"the window ({covered.window}) holds evidence of group{'' if len(held) == 1 else 's'} "
              f"{', '.join(held)} but not of {missing}", detail, flags)


def _share(n: int, total: int) -> float:
    return n / total if total else 0.0


class _Tally:
    """What the summary and the advice read of the verdicts, gathered in one pass over them (a large run's are
    spooled: read once, none held)."""

    def __init__(self, verdicts: Mapping[str, Verdict], gold: GoldSet):
        self.total = 0
        self.counts: Counter = Counter()
        self.flags: Counter = Counter()
        self.where: Counter = Counter()  # missing documents by detail.where
        self.near_ranks: list[int] = []  # first ranks of the missing documents found just past the cutoff
        self.never_tags: Counter = Counter()  # tags of the queries that found nothing relevant in the ranking
        self.distances: list = []  # wrong_chunk's distance_chars, where known
        self.middle = 0  # buried_evidence in the middle of the window
        self.buried_ranks: list[int] = []  # buried_evidence's first evidence rank
        self.buried_early: list[int] = []  # ... of those not at the window's end (a smaller window could keep it)
        self.noisy_found = 0  # noisy_context with at least one relevant chunk in the window (the others: a miss)
        self.missing_groups: Counter = Counter()  # incomplete's missing groups, by name
        self.group_ranks: list[int] = []  # ... the ranks they were first found at, past the window
        self.groups_unretrieved = 0  # ... and how many were not in the ranking at all
        self.staged = False  # the retriever recorded stages (``diagnostics.stages``)
        self.lost: list[str] = []  # lost_at.stage of each query that lost its evidence
        kind_of: dict[str, int] = {}
        tags_of = gold.tags_by_query()  # only the queries that have tags: no dict of every query
        for qid, v in verdicts.items():
            self.total += 1
            self.counts[v.kind] += 1
            self.flags.update(v.flags)
            if qid in tags_of:
                kind_of[qid] = KINDS.index(v.kind)
            if v.kind == "missing_document":
                self.where[v.detail["where"]] += 1
                if v.detail.get("near"):
                    self.near_ranks.append(v.detail["first_rank"])
                if v.detail["where"] == "not_retrieved":
                    self.never_tags.update(f"{t}={val}" for t, val in tags_of.get(qid, {}).items())
            elif v.kind == "wrong_chunk" and v.detail.get("distance_chars") is not None:
                self.distances.append(v.detail["distance_chars"])
            elif v.kind == "incomplete":
                for m in v.detail.get("missing_groups", []):
                    self.missing_groups[group_label(m.get("group"))] += 1
                    if isinstance(m.get("first_rank"), int):
                        self.group_ranks.append(m["first_rank"])
                    else:
                        self.groups_unretrieved += 1
            elif v.kind == "buried_evidence":
                self.middle += v.detail.get("position") == "middle"
                if v.detail.get("rank") is not None:
                    self.buried_ranks.append(v.detail["rank"])
                    if v.detail.get("position") != "end":
                        self.buried_early.append(v.detail["rank"])
            if "stages" in v.detail:
                self.staged = True
                if isinstance(v.detail.get("lost_at"), dict):
                    self.lost.append(v.detail["lost_at"]["stage"])
            noisy = v.detail.get("noisy_context")
            if "noisy_context" in v.flags and isinstance(noisy, dict) and noisy.get("chunk_precision", 0) > 0:
                self.noisy_found += 1
        self.by_slice: dict[str, dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
        for qid, tags in tags_of.items():
            for tag, value in tags.items():
                self.by_slice[tag][value][KINDS[kind_of[qid]]] += 1


def summarize_verdicts(verdicts: Mapping[str, Verdict], gold: GoldSet,
                       metric_means: Mapping[str, Mapping[str, float]],
                       geometry: "Geometry | None" = None) -> VerdictSummary:
    """Counts and shares (of all queries), per slice and per ``detail.where``, and advice. ``metric_means`` (kind
    -> "level.metric" -> mean over the kind's counted queries) come from the metric tables, not from here;
    ``geometry`` (``hits.geometry``, a pipeline run's) adds its counts and advice."""
    t = _Tally(verdicts, gold)
    total, counts = t.total, t.counts
    kind_counts = lambda c: KindCounts(**{k: c.get(k, 0) for k in KINDS})
    return VerdictSummary(
        total=total,
        counts=kind_counts(counts),
        shares={k: _share(counts.get(k, 0), total) for k in KINDS},
        flags={f: t.flags.get(f, 0) for f in FLAGS},
        by_slice={tag: {value: kind_counts(c) for value, c in values.items()} for tag, values in t.by_slice.items()},
        by_where={"beyond_cutoff": t.where.get("beyond_cutoff", 0), "not_retrieved": t.where.get("not_retrieved", 0),
                  "near_cutoff": len(t.near_ranks), "absent_from_run": t.where.get("absent_from_run", 0)},
        metric_means={k: dict(m) for k, m in metric_means.items()},
        wrong_chunk_possible=gold.has_evidence,
        advice=advice(t, gold) + (geometry_advice(geometry) if geometry is not None else []),
        geometry=geometry_counts(geometry) if geometry is not None else None,
        lost_at=lost_counts(t.lost) if t.staged else None,
    )


def advice(t: _Tally, gold: GoldSet) -> list[str]:
    """Advice computed from the verdicts' numbers (``_Tally``); nothing is said that the data does not show."""
    out = []
    missing = t.counts.get("missing_document", 0)
    if missing:
        near = len(t.near_ranks)
        if near:
            lo, hi = min(t.near_ranks), max(t.near_ranks)
            out.append(f"{near / missing:.0%} of missing documents ({near} of {missing}) "
                       f"{'was' if near == 1 else 'were'} found just past the cutoff "
                       f"({f'rank {lo}' if lo == hi else f'ranks {lo}–{hi}'}): a reranker or a larger window would "
                       f"bring {'it' if near == 1 else 'them'} in")
        absent = t.where.get("absent_from_run", 0)
        if absent:
            out.append(f"{absent} quer{'y is' if absent == 1 else 'ies are'} absent from the run (no "
                       f"ranking at all; scored 0): check that the run covers every query of the golden set")
        never = t.where.get("not_retrieved", 0)
        if never:
            tags = t.never_tags
            where = f", mostly in slice {tags.most_common(1)[0][0]}" if tags else ""
            out.append(f"{never} quer{'y' if never == 1 else 'ies'} found no relevant document in the "
                       f"whole ranking{where}: vocabulary mismatch or coverage; try dense or hybrid retrieval, or "
                       f"query rewriting")
    wrong = t.counts.get("wrong_chunk", 0)
    if wrong:
        dists = t.distances
        mean = round(sum(dists) / len(dists)) if dists else 0
        avg = (f", evidence on average {mean} character{'' if mean == 1 else 's'} from the retrieved chunk"
               if dists else "")
        out.append(f"wrong chunk in {wrong} quer{'y' if wrong == 1 else 'ies'}{avg}: try larger chunks, "
                   f"more overlap, or chunk-level reranking")
    buried = t.counts.get("buried_evidence", 0)
    if buried:
        ranks = t.buried_ranks
        where = (f"first evidence at rank {min(ranks)}" if ranks and min(ranks) == max(ranks)
                 else f"first evidence at ranks {min(ranks)}–{max(ranks)}" if ranks else "")
        line = (f"evidence buried in {buried} quer{'y' if buried == 1 else 'ies'} ({where + '; ' if where else ''}"
                f"{t.middle} in the middle of the window): a reranker would put it first")
        early, late = t.buried_early, buried - len(t.buried_early)
        if early:
            # a window cut below the evidence's rank would drop it: only those not at the window's end can shrink
            those = "that query" if len(early) == 1 else ("those" if not late else f"the {len(early)} not at its end")
            line += (f"; a smaller window of at least {max(early)} chunks would keep the evidence of {those} and "
                     f"cut the chunks after it")
        if late:
            line += (f" (the {late} with the evidence at the window's end would lose it in a smaller window)" if early
                     else "; the evidence sits at the window's end, so a smaller window would drop it")
        out.append(line)
    incomplete = t.counts.get("incomplete", 0)
    if incomplete:
        groups = ", ".join(f"{g} ({n})" for g, n in t.missing_groups.most_common(3))
        ranks, never = t.group_ranks, t.groups_unretrieved
        line = f"incomplete evidence in {incomplete} quer{'y' if incomplete == 1 else 'ies'} (missing most: {groups})"
        if ranks:
            at = f"rank {ranks[0]}" if len(set(ranks)) == 1 else f"ranks {min(ranks)}–{max(ranks)}"
            line += (f"; {len(ranks)} missing group{'' if len(ranks) == 1 else 's'} found past the window at {at}: "
                     f"a larger window or a reranker would bring {'it' if len(ranks) == 1 else 'them'} in")
        if never:
            line += (f"; {never} not retrieved at all: query decomposition or multi-query retrieval would look for "
                     f"{'it' if never == 1 else 'them'}")
        out.append(line)
    noisy, noisy_found = t.flags.get("noisy_context", 0), t.noisy_found
    if noisy_found and noisy_found >= t.total / 4:
        missed = noisy - noisy_found
        out.append(f"{noisy_found / t.total:.0%} of queries have noisy context (relevant chunks in the window, but "
                   f"below the threshold of the most the window could hold): a reranker or a smaller window would "
                   f"cut the noise" + (f"; {missed} more quer{'y is' if missed == 1 else 'ies are'} flagged with no "
                                        f"relevant chunk in the window at all: a retrieval miss, not noise"
                                        if missed else ""))
    errors = t.counts.get("goldset_error", 0)
    if errors:
        out.append(f"{errors} quer{'y' if errors == 1 else 'ies'} cannot be checked (gold ids or quotes "
                   f"that match nothing): fix the golden set or rebuild the index before trusting those numbers")
    if not gold.has_evidence:
        out.append("the golden set has no evidence spans: wrong_chunk cannot be diagnosed; add evidence quotes")
    return out
