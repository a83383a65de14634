"""Metric declarations: one canonical name per metric, parsed from the names people already type.

A canonical name is ``family[(param=value,...)][@k]``, e.g. ``precision@5``, ``ndcg(gain=exp)@10``,
``precision(rel=2)@5``. ``parse_metric(spec.name) == spec`` for every spec.

``@window`` is a cutoff too: each query's context window (the effective k from ``cutoff``: k hits, or as many as
fit in the token budget), for the families whose definition reads naturally per window (``hit``, ``recall``,
``precision``, ``rr``). Only a pipeline run has windows; ``harness eval`` refuses these names.

``evidence_recall``, ``evidence_precision`` and ``evidence_iou`` (``@k`` hits or ``@window``) read the hits' text
against the evidence spans (``hits.evidence``): a pipeline run's too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..core.errors import MetricError


@dataclass(frozen=True)
class Family:
    name: str
    definition: str
    k: str  # "required" | "optional" | "forbidden" | "window" (@window only)
    params: tuple[str, ...]
    reference: str
    window: bool = False  # takes ``@window``
    evidence: bool = False  # read from the hits' text and the evidence spans (a pipeline run's), not from labels


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("precision", "relevant hits in the top k divided by k (k, not the number retrieved)", "required",
               ("rel",), "trec_eval P_k", window=True),
        Family("recall", "relevant hits in the top k divided by all relevant documents of the query", "required",
               ("rel",), "trec_eval recall_k", window=True),
        Family("hit", "1 if any relevant hit is in the top k, else 0 (success@k)", "required", ("rel",),
               "trec_eval success_k", window=True),
        Family("nothing_found", "1 if no relevant hit is in the top k (reported beside MRR)", "required", ("rel",),
               "TREC-8 QA track report"),
        Family("ap", "mean of precision at each relevant rank (<= k), divided by all relevant documents", "optional",
               ("rel",), "trec_eval map / map_cut_k"),
        Family("rr", "1 / rank of the first relevant hit; 0 when it is past k or absent", "optional", ("rel",),
               "trec_eval recip_rank; RR@k as in ir_measures", window=True),
        Family("rprec", "precision at rank R, R = number of relevant documents of the query", "forbidden", ("rel",),
               "trec_eval Rprec"),
        Family("dcg", "sum of gain / log2(rank + 1) over the top k", "optional", ("gain",),
               "Jarvelin & Kekalainen 2002 with trec_eval's discount"),
        Family("ndcg", "DCG@k / ideal DCG@k; ideal from all judged documents by default", "optional",
               ("gain", "ideal"), "trec_eval ndcg / ndcg_cut_k"),
        Family("judged", "share of the top k that is judged (a grade >= 0), over min(k, retrieved); all retrieved "
               "without k", "optional", (), "ir_measures Judged@k (a negative grade is unjudged, as in trec_eval)"),
        Family("bpref", "binary preference: each relevant hit scores 1 - min(judged non-relevant above, R) / "
               "min(judged non-relevant, R); the sum over R; unjudged hits skipped", "forbidden", ("rel",),
               "trec_eval 10 bpref (Buckley & Voorhees 2004)"),
        Family("infAP", "inferred AP: AP estimated from the judged share of each relevant hit's prefix; a negative "
               "grade is a pooled but unjudged document", "forbidden", ("rel",),
               "trec_eval 10 infAP (Yilmaz & Aslam 2006)"),
        Family("evidence_recall", "share of the evidence characters (or tokens) inside the first k hits' text, "
               "overlapping hits merged", "required", (), "Chroma chunking evaluation (token recall), exact",
               window=True, evidence=True),
        Family("evidence_precision", "share of the first k hits' characters (or tokens), overlapping hits merged, "
               "that are evidence", "required", (), "Chroma chunking evaluation (token precision), exact",
               window=True, evidence=True),
        Family("evidence_iou", "evidence characters in the first k hits' text over the union of both", "required",
               (), "Chroma chunking evaluation (token IoU), exact", window=True, evidence=True),
        Family("sufficient", "1 when every required evidence group has a unit in the window, else 0 (one group per "
               "query when the golden set names none: then hit@window)", "window", (),
               "AutoRAG's retrieval_gt groups (docs/groups.md)", window=True),
    )
}

PARAM_CHOICES = {"gain": ("linear", "exp"), "ideal": ("judged", "retrieved")}
PARAM_DEFAULTS = {"rel": "1", "gain": "linear", "ideal": "judged"}

ALIASES = {
    "p": "precision", "prec": "precision", "precision": "precision",
    "r": "recall", "recall": "recall",
    "hit": "hit", "success": "hit", "hit_rate": "hit", "hitrate": "hit",
    "nothing_found": "nothing_found",
    "ap": "ap", "map": "ap",
    "rr": "rr", "mrr": "rr", "recip_rank": "rr",
    "rprec": "rprec", "r-prec": "rprec", "r_prec": "rprec", "r-precision": "rprec", "rprecision": "rprec",
    "dcg": "dcg",
    "ndcg": "ndcg",
    "judged": "judged",
    "bpref": "bpref",
    "infap": "infAP", "inf_ap": "infAP",
    "evidence_recall": "evidence_recall", "evidence_precision": "evidence_precision", "evidence_iou": "evidence_iou",
    "sufficient": "sufficient",
}
# trec_eval spellings: P_5, recall_100, ndcg_cut_10, map_cut_10, success_5.
_TREC_EVAL = {"p": "precision", "recall": "recall", "ndcg_cut": "ndcg", "map_cut": "ap", "success": "hit"}

_NAME = re.compile(r"^(?P<family>[A-Za-z][A-Za-z_\-]*?)(?:\((?P<params>[^)]*)\))?(?:@(?P<k>\d+|window))?$",
                   re.IGNORECASE)
WINDOW = "window"
_TREC_NAME = re.compile(r"^(?P<family>P|recall|ndcg_cut|map_cut|success)_(?P<k>\d+)$", re.IGNORECASE)


# 2^grade - 1 is infinite in float64 from grade 1024, and a query's DCG over 2^20 ranks from grade ~1004: above
# this, an exponential gain would be NaN or infinity, so such grades are refused.
MAX_EXP_GRADE = 1000


def exp_gain_problem(specs, top_grade: int) -> str | None:
    """Why the highest grade of the judgments cannot be scored by these metrics (None when it can)."""
    exp = [spec.name for spec in specs if spec.gain == "exp"]
    if not exp or top_grade <= MAX_EXP_GRADE:
        return None
    return (f"grade {top_grade} is too large for {exp[0]} (2^grade - 1 overflows a float): use grades up to "
            f"{MAX_EXP_GRADE} with gain=exp, or gain=linear")


@dataclass(frozen=True, order=True)
class MetricSpec:
    family: str
    k: int | None = None
    rel: int = 1
    gain: str = "linear"
    ideal: str = "judged"
    window: bool = False  # the cutoff is each query's context window (``@window``); k is then None

    @property
    def name(self) -> str:
        params = []
        fam = FAMILIES[self.family]
        for p in fam.params:
            value = str(getattr(self, p))
            if value != PARAM_DEFAULTS[p]:
                params.append(f"{p}={value}")
        text = self.family + (f"({','.join(params)})" if params else "")
        if self.window:
            return text + "@" + WINDOW
        return text + (f"@{self.k}" if self.k is not None else "")

    def __str__(self) -> str:
        return self.name


def known_metrics_help() -> str:
    return ", ".join(sorted(FAMILIES))


def parse_metric(text: str | MetricSpec) -> MetricSpec:
    """Parse a metric name or alias (``P@5``, ``MRR@10``, ``nDCG@10``, ``ndcg_cut_10``) into its spec."""
    if isinstance(text, MetricSpec):
        return _checked_spec(text)
    if not isinstance(text, str):
        raise MetricError(f"a metric is a name such as 'ndcg@10' or a MetricSpec, got {type(text).__name__} {text!r}")
    raw = text.strip()
    trec = _TREC_NAME.match(raw)
    if trec:
        return _build(raw, _TREC_EVAL[trec["family"].lower()], {}, int(trec["k"]))
    m = _NAME.match(raw)
    if not m:
        raise MetricError(f"cannot parse metric name {text!r}; expected e.g. ndcg@10, precision(rel=2)@5 "
                          f"(families: {known_metrics_help()})")
    family = ALIASES.get(m["family"].lower())
    if m["family"].lower() == "hits":
        raise MetricError(_hits_is_ambiguous(text, m["k"] or "k"))
    if family is None:
        raise MetricError(f"unknown metric {m['family']!r} in {text!r}; known metrics: {known_metrics_help()}")
    params: dict[str, str] = {}
    if m["params"]:
        for part in m["params"].split(","):
            if "=" not in part:
                raise MetricError(f"metric {text!r}: parameter {part.strip()!r} must look like name=value")
            key, value = (s.strip() for s in part.split("=", 1))
            if key in params:  # ndcg(gain=exp,gain=linear): which one was meant?
                raise MetricError(f"metric {text!r}: parameter {key!r} is given twice")
            params[key] = value
    window = (m["k"] or "").lower() == WINDOW
    return _build(text, family, params, int(m["k"]) if m["k"] and not window else None, window)


def _hits_is_ambiguous(text: str, k: str) -> str:
    # ranx's hits@k counts the relevant hits in the top k; others (and harness until now) read it as a 0/1 hit: a
    # list ported from ranx would silently get another measure, so the name is refused with both readings.
    return (f"{text!r} is ambiguous: ranx's hits@{k} is the number of relevant hits in the top {k}, elsewhere a 0/1 "
            f"hit. Write hit@{k} (1 if any relevant hit is in the top {k}: ranx's hit_rate@{k}) or precision@{k} "
            f"(ranx's hits@{k} divided by {k})")


def _checked_spec(spec: MetricSpec) -> MetricSpec:
    """A MetricSpec made by hand, held to what its name would parse to: a cutoff of -5 or 5.5, an unknown gain or
    family would otherwise reach the engine (``ndcg@-5`` scored 0.0; 5.5 was a TypeError deep inside)."""
    if spec.family not in FAMILIES:
        raise MetricError(f"{spec!r}: unknown metric family {spec.family!r}; known metrics: {known_metrics_help()}")
    try:
        parsed = parse_metric(spec.name)
    except MetricError as exc:
        raise MetricError(f"{spec!r}: {exc}") from None
    if parsed != spec:
        raise MetricError(f"{spec!r}: not a metric as given (it reads as {parsed.name}); set only the parameters "
                          f"its family takes, and k or window, not both")
    return spec


def _build(text: str, family: str, params: dict[str, str], k: int | None, window: bool = False) -> MetricSpec:
    fam = FAMILIES[family]
    if window:
        if not fam.window:
            allowed = ", ".join(f"{f.name}@{WINDOW}" for f in FAMILIES.values() if f.window)
            raise MetricError(f"metric {text!r}: {family} takes no @{WINDOW} cutoff (window metrics: {allowed})")
    elif fam.k == "window":
        raise MetricError(f"metric {text!r}: {family} is measured at the context window only: {family}@{WINDOW}")
    elif fam.k == "required" and k is None:
        raise MetricError(f"metric {text!r} needs a cutoff, e.g. {family}@10")
    if fam.k == "forbidden" and k is not None:
        raise MetricError(f"metric {text!r} takes no cutoff (use {family})")
    if k is not None and k < 1:
        raise MetricError(f"metric {text!r}: the cutoff must be >= 1")
    values: dict[str, object] = {}
    for key, value in params.items():
        if key not in fam.params:
            allowed = ", ".join(fam.params) or "none"
            raise MetricError(f"metric {text!r}: unknown parameter {key!r} for {family} (allowed: {allowed})")
        if key == "rel":
            if not value.isdigit() or int(value) < 1:
                raise MetricError(f"metric {text!r}: rel must be a whole number >= 1, got {value!r}")
            values["rel"] = int(value)
        else:
            if value not in PARAM_CHOICES[key]:
                raise MetricError(f"metric {text!r}: {key} must be one of {', '.join(PARAM_CHOICES[key])}")
            values[key] = value
    return MetricSpec(family=family, k=k, window=window, **values)  # type: ignore[arg-type]


def split_metric(name: str) -> tuple[str, str]:
    """``chunk.recall@5`` -> ("chunk", "recall@5"); a bare name is document level."""
    level, _, metric = name.partition(".") if name.startswith(("doc.", "chunk.")) else ("doc", "", name)
    return level, parse_metric(metric).name


def parse_metrics(names) -> list[MetricSpec]:
    """Parse many names, reporting every bad one at once; duplicates (after normalising) are dropped."""
    seen: dict[MetricSpec, None] = {}  # ordered and hashed: 20,000 names took 70 s as a list searched each time
    problems: list[str] = []
    for name in names:
        try:
            spec = parse_metric(name)
        except MetricError as exc:
            problems.append(str(exc))
            continue
        seen.setdefault(spec)
    if problems:
        raise MetricError("invalid metric names:", problems)
    return list(seen)


# Computed for every pipeline run, at both levels, after the configured metrics.
WINDOW_METRICS = ("hit@window", "recall@window", "precision@window", "rr@window", "sufficient@window")
# Scored beside the engine (``hits.groups``: it reads the evidence groups, not grades alone).
GROUP_METRICS = ("sufficient@window",)

DEFAULT_METRICS = ("precision@5", "recall@5", "hit@5", "rr@10", "nothing_found@10", "ap", "rprec", "ndcg@10",
                   "recall@100")


def default_metrics(depth: int) -> tuple[str, ...]:
    """The metrics of a config that names none, for its ``depth``: each default whose cutoff is past the depth is
    taken at the depth instead (depth 20: recall@20 for recall@100), a repeat dropped. A cutoff past the depth would
    be computed from fewer hits than it names, which a config is refused for; the user chose the depth, not these."""
    out: list[str] = []
    for name in DEFAULT_METRICS:
        base, at, k = name.rpartition("@")
        name = f"{base}@{depth}" if at and int(k) > depth else name
        if name not in out:
            out.append(name)
    return tuple(out)
