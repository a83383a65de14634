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

    def to_dict(self) -> dict:
        out = asdict(self)
        out["ci95"] = None if self.ci95 is None else list(self.ci95)
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

    def row(self, run: str, metric: str) -> ComparisonRow:
        return next(r for r in self.rows if r.run == run and r.metric == metric)

    def to_dict(self) -> dict:
        return {"baseline": self.baseline, "runs": list(self.runs), "test": self.test, "correction": self.correction,
                "permutations": self.permutations, "warnings": list(self.warnings),
                "rows": [r.to_dict() for r in self.rows], "transitions": self.transitions}


@dataclass(frozen=True)
class Rule:
    name: str
    kind: str  # metric | verdict | regression
    target: str
    op: str = ""
    value: float = 0.0
    slice: tuple = ()
    budget: float = 0.0
    where: str = ""  # "rules.3": where the rule sits in its file, so errors about it can be located


@dataclass(frozen=True)
class GateResult:
    rule: Rule
    passed: bool
    observed: float | None
    message: str
    skipped: bool = False  # not checked (a regression rule without a baseline): neither passed nor failed
    n: int | None = None  # the queries the observed value is over (None for verdict shares)

    @property
    def failed(self) -> bool:
        return not self.passed and not self.skipped

    def to_dict(self) -> dict:
        return {"rule": self.rule.name, "kind": self.rule.kind, "target": self.rule.target,
                "passed": self.passed, "skipped": self.skipped, "failed": self.failed, "observed": self.observed,
                "n": self.n, "message": self.message}


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

    def to_dict(self) -> dict:
        return {"name": self.name, "passed": self.passed, "failed": self.failed, "skipped": self.skipped,
                "results": [r.to_dict() for r in self.results]}


def distinct_names(runs: Sequence) -> list:
    """The runs (``core.result.Result``), each named ``name#i`` (its place) when two share a name: a comparison names its runs, and the
    same results.json given twice, or two runs of one config, must stay apart. The one rule for compare and its
    report. Only the names that collide change: a run with a name of its own keeps it (``--baseline`` finds it)."""
    names = [r.name for r in runs]
    if len(set(names)) == len(names):
        return list(runs)
    taken = set(names)
    out = []
    for i, r in enumerate(runs):
        if names.count(r.name) == 1:
            out.append(r)
            continue
        name = f"{r.name}#{i + 1}"
        while name in taken:  # a run already named like that ("t#2" beside two "t"s)
            name += "'"
        taken.add(name)
        out.append(r.model_copy(update={"name": name}))
    return out
