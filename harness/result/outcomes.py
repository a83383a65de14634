"""What ``compare`` and ``gate`` produce: typed, with ``to_dict`` for their JSON output."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Iterator, Sequence


@dataclass(frozen=True)
class ComparisonRow:
    """One run against the baseline on one metric, over the queries both runs count (``n`` of them)."""

    run: str
    metric: str  # "level.metric"
    n: int
    # None (n/a) from here to p_corrected when no query is counted in both runs (n == 0): nothing was compared
    baseline_mean: float | None
    mean: float | None
    delta: float | None
    ci95: tuple[float, float] | None
    p: float | None
    wins: int
    ties: int
    losses: int
    mde: float | None
    slices: dict[str, dict[str, float]]  # "tag=value" -> {"n": ..., "delta": ...}
    p_corrected: float | None
    significant: bool

    @property
    def decision(self) -> str:
        """Who won on this metric: "better" or "worse" (the run against the baseline, significant after the
        correction), "not distinguishable" (not significant: at this golden set's size, see the MDE), or "n/a"
        (no query counted in both runs)."""
        if self.delta is None:
            return "n/a"
        if not self.significant:
            return "not distinguishable"
        return "better" if self.delta > 0 else "worse"

    def to_dict(self) -> dict:
        out = asdict(self)
        out["ci95"] = None if self.ci95 is None else list(self.ci95)
        out["decision"] = self.decision
        return out


@dataclass(frozen=True)
class Comparison:
    baseline: str
    runs: list[str]
    test: str
    correction: str
    permutations: int
    warnings: list[str]
    rows: list[ComparisonRow]
    transitions: dict[str, dict[str, list[str]]]  # run -> "from -> to" -> query ids
    # composite run -> which child it followed per query (``stats.followed``); only composites compared with children
    followed: dict[str, dict] = field(default_factory=dict)

    def row(self, run: str, metric: str) -> ComparisonRow:
        return next(r for r in self.rows if r.run == run and r.metric == metric)

    def to_dict(self) -> dict:
        return {"baseline": self.baseline, "runs": list(self.runs), "test": self.test, "correction": self.correction,
                "permutations": self.permutations, "warnings": list(self.warnings),
                "rows": [r.to_dict() for r in self.rows], "transitions": self.transitions, "followed": self.followed}


@dataclass(frozen=True)
class Rule:
    name: str
    kind: str  # metric | verdict | latency | score (summary.abstention, .calibration) | regression
    target: str
    op: str = ""
    value: float = 0.0
    slice: tuple = ()
    budget: float = 0.0
    where: str = ""  # "rules.3": where the rule sits in its file, so errors about it can be located
    policy: str = "non_inferiority"  # regression rules: non_inferiority | significant_drop
    on_inconclusive: str | None = None  # pass | fail; None: the gate's default (fail unless --on-inconclusive)
    confidence: float | None = None  # threshold rules: decide on the interval at this level, not the point value
    min_queries: int | None = None  # threshold rules: fewer counted queries than this is inconclusive


# A rule's decision. INCONCLUSIVE: the golden set cannot tell (too few queries for the interval to clear the
# threshold or budget); it fails the gate unless the rule accepts it (on_inconclusive: pass).
DECISIONS = ("PASS", "FAIL", "INCONCLUSIVE", "SKIPPED")


@dataclass(frozen=True)
class GateResult:
    rule: Rule
    passed: bool
    observed: float | None
    message: str
    skipped: bool = False  # not checked (a regression rule without a baseline): neither passed nor failed
    n: int | None = None  # the queries the observed value is over (None for verdict shares)
    decision: str = ""  # one of DECISIONS; "" reads as PASS/FAIL/SKIPPED from passed and skipped
    interval: tuple[float, float] | None = None  # the interval the decision read, when it read one
    needed: int | None = None  # INCONCLUSIVE: about how many queries would decide (None: no size would)

    @property
    def failed(self) -> bool:
        return not self.passed and not self.skipped

    @property
    def verdict(self) -> str:
        if self.decision:
            return self.decision
        return "SKIPPED" if self.skipped else ("PASS" if self.passed else "FAIL")

    @property
    def accepted(self) -> bool:
        """An INCONCLUSIVE the rule (or the gate) accepted: passed, but shown as inconclusive everywhere."""
        return self.verdict == "INCONCLUSIVE" and self.passed

    def to_dict(self) -> dict:
        return {"rule": self.rule.name, "kind": self.rule.kind, "target": self.rule.target,
                "passed": self.passed, "skipped": self.skipped, "failed": self.failed, "observed": self.observed,
                "n": self.n, "message": self.message, "decision": self.verdict,
                "interval": None if self.interval is None else list(self.interval),
                "threshold": None if self.rule.kind == "regression" else self.rule.value,
                "budget": self.rule.budget if self.rule.kind == "regression" else None,
                "policy": self.rule.policy if self.rule.kind == "regression" else None,
                "accepted_inconclusive": self.accepted, "queries_needed": self.needed}


@dataclass(frozen=True)
class GateOutcome:
    """Every rule's result for one candidate run; iterating gives the results in rule order."""

    name: str
    results: list[GateResult] = field(default_factory=list)

    def __iter__(self) -> Iterator[GateResult]:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def __getitem__(self, i: int) -> GateResult:
        return self.results[i]

    @property
    def failed(self) -> int:
        return sum(r.failed for r in self.results)

    @property
    def skipped(self) -> int:
        return sum(r.skipped for r in self.results)

    @property
    def passed(self) -> bool:
        return not self.failed

    @property
    def inconclusive(self) -> int:
        return sum(r.verdict == "INCONCLUSIVE" for r in self.results)

    def to_dict(self) -> dict:
        return {"name": self.name, "passed": self.passed, "failed": self.failed, "skipped": self.skipped,
                "inconclusive": self.inconclusive, "results": [r.to_dict() for r in self.results]}


def distinct_names(runs: Sequence) -> list:
    """The runs (``result.model.Result``), each renamed when two share a name: by the settings that differ between
    them (``demo-bm25+k1=0.9`` beside ``demo-bm25+k1=1.2``: ``setting_labels``), else by its place (``name#i``:
    the same results.json given twice). A comparison names its runs, and two runs of one config must stay apart.
    The one rule for compare and its report. Only the names that collide change: a run with a name of its own
    keeps it (``--baseline`` finds it)."""
    names = [r.name for r in runs]
    if len(set(names)) == len(names):
        return list(runs)
    labels = list(names)
    for name in sorted(set(names)):
        group = [i for i, n in enumerate(names) if n == name]
        if len(group) < 2:
            continue
        settings = setting_labels([getattr(runs[i], "config", None) for i in group])
        for i, label in zip(group, settings):
            labels[i] = f"{name}+{label}" if label else name
    taken = set(names)
    out = []
    for i, r in enumerate(runs):
        if labels.count(labels[i]) == 1 and (labels[i] == r.name or labels[i] not in taken):
            taken.add(labels[i])
            out.append(r if labels[i] == r.name else r.model_copy(update={"name": labels[i]}))
            continue
        name = f"{r.name}#{i + 1}"
        while name in taken:  # a run already named like that ("t#2" beside two "t"s)
            name += "'"
        taken.add(name)
        out.append(r.model_copy(update={"name": name}))
    return out


# Settings that say where or how a run ran, not what it computed: they never tell runs apart in a label.
_NOT_SETTINGS = ("name", "output", "executor")


def setting_labels(configs: Sequence) -> list[str]:
    """For runs of one name, each run's values of the settings that differ between them, as ``k1=0.9`` (the
    last key of the setting's path, or the whole path when two differing settings end alike), joined by ','.
    Empty strings when the configs are alike (or unknown)."""
    flats = [_flatten(c.as_dict() if hasattr(c, "as_dict") else (c or {})) for c in configs]
    paths = sorted({p for f in flats for p in f if p.split(".")[0] not in _NOT_SETTINGS})
    differ = [p for p in paths if len({repr(f.get(p)) for f in flats}) > 1]
    leaves = [p.rsplit(".", 1)[-1] for p in differ]
    keys = [leaf if leaves.count(leaf) == 1 else path for path, leaf in zip(differ, leaves)]
    return [",".join(f"{k}={_shown_value(f.get(p))}" for k, p in zip(keys, differ)) for f in flats]


def _flatten(node, prefix: str = "") -> dict:
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            out.update(_flatten(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: node}


def _shown_value(value) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_shown_value(v) for v in value) + "]"
    return str(value)
