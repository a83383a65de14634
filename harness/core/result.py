"""The schema of ``results.json``: typed pydantic models of exactly what ``harness run`` writes, and the loader
that every command reading a saved result goes through.

Strict on purpose: a number must be a number (no "3" -> 3), a string a string, unknown and missing fields are
errors. A results.json is rendered into HTML and Markdown and fed to statistics, so a hand-made or truncated file
is refused with one located line per problem instead of reaching a renderer. The sections that echo the config
(``config``, ``corpus.chunking``, ``diagnostics_settings``) and the free-form verdict ``detail`` stay JSON objects
(still JSON-typed): they follow the config models, which have their own validation.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import typing
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from ..diagnostics import FLAGS, KINDS
from .errors import HarnessError, InputError

MAX_SHOWN = 20  # problems listed in one error; the rest are counted

Kind = Literal[KINDS]  # type: ignore[valid-type]  # the verdict kinds, from the code that decides them
Flag = Literal[FLAGS]  # type: ignore[valid-type]
Count = Annotated[int, Field(ge=0)]
Span = Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=2, max_length=2)]  # [start, end)
JsonObject = dict[str, JsonValue]


class Record(BaseModel):
    """Base of every results.json model: unknown keys are errors and nothing is coerced (ints pass as floats)."""

    model_config = ConfigDict(extra="forbid", strict=True)


# ---- one query -------------------------------------------------------------------------------------------------

class HitRecord(Record):
    rank: Annotated[int, Field(ge=1)]
    chunk_id: str
    doc_id: str
    start: Count
    end: Count
    score: float
    relevant: bool
    doc_relevant: bool
    grade: int | None  # the document's judged grade; null when unjudged
    in_window: bool


class GoldRecord(Record):
    doc_id: str
    grade: int
    evidence: list[Span]


class VerdictRecord(Record):
    """The JSON form of ``diagnostics.Verdict`` (``Verdict.to_dict``)."""

    kind: Kind
    reason: str
    detail: JsonObject
    flags: list[Flag]


class QueryMetrics(Record):
    doc: dict[str, float]
    chunk: dict[str, float]


class LevelCounts(Record):
    doc: Count
    chunk: Count


class QueryResult(Record):
    id: str
    text: str
    tags: dict[str, str]
    metrics: QueryMetrics
    n_relevant: LevelCounts
    effective_k: Count
    gold: list[GoldRecord]
    verdict: VerdictRecord
    hits: list[HitRecord]


# ---- the summary -----------------------------------------------------------------------------------------------

class Counts(Record):
    """``MetricTable.counts`` of one level plus the window's ``nothing_found_in_window``."""

    judged_queries: Count
    evaluated_queries: Count
    no_relevant_queries: Count
    no_relevant_query_ids: list[str]
    absent_from_run: Count
    absent_from_run_query_ids: list[str]
    unjudged_run_queries: Count
    dropped_duplicates: Count
    nothing_found_in_window: Count


class SummaryCounts(Record):
    doc: Counts
    chunk: Counts


class KindCounts(Record):
    """One count per verdict kind (fields = ``diagnostics.KINDS``, checked by a test)."""

    goldset_error: Count
    no_gold: Count
    missing_document: Count
    wrong_chunk: Count
    buried_evidence: Count
    ok: Count


class KindShares(Record):
    goldset_error: float
    no_gold: float
    missing_document: float
    wrong_chunk: float
    buried_evidence: float
    ok: float


class FlagCounts(Record):
    partial: Count
    noisy_context: Count
    unjudged_in_window: Count


class WhereCounts(Record):
    beyond_cutoff: Count
    not_retrieved: Count
    near_cutoff: Count


class VerdictSummary(Record):
    """``diagnostics.summarize_verdicts``."""

    total: Count
    counts: KindCounts
    shares: KindShares
    flags: FlagCounts
    by_slice: dict[str, dict[str, KindCounts]]  # tag -> value -> counts
    by_where: WhereCounts
    metric_means: dict[Kind, dict[str, float]]  # kind -> "level.metric" -> mean
    wrong_chunk_possible: bool
    advice: list[str]


class Summary(Record):
    doc: dict[str, float | None]  # a mean is null when no query enters it
    chunk: dict[str, float | None]
    counts: SummaryCounts
    verdicts: VerdictSummary


# ---- the run's context -----------------------------------------------------------------------------------------

class CutoffRecord(Record):
    k: Annotated[int, Field(ge=1)] | None
    token_budget: Annotated[int, Field(ge=1)] | None
    tokenizer: str | None
    depth: Annotated[int, Field(ge=1)]
    describe: str
    mean_effective_k: float


class CorpusRecord(Record):
    documents: Count
    chunks: Count
    chunking: JsonObject
    fingerprint: str


class GoldProblemRecord(Record):
    """``goldset.GoldProblem``; its kinds are open-ended, so ``kind`` is any string."""

    query_id: str
    doc_id: str
    kind: str
    message: str


class GoldsetRecord(Record):
    name: str
    queries: Count
    judgments: Count
    has_evidence: bool
    fingerprint: str
    query_ids_fingerprint: str
    problems: list[GoldProblemRecord]


class HitProblemRecord(Record):
    query_id: str
    rank: Annotated[int, Field(ge=0)]
    reason: str
    message: str


class HitProblemsRecord(Record):
    """Hits a run dropped because they name no chunk of the corpus (``retriever_hits.unplaceable: skip``)."""

    unplaceable: Literal["fail", "skip"]
    skipped: Count
    queries: Count
    by_reason: dict[str, Count]
    duplicates: Count
    examples: list[HitProblemRecord]


class RetrieverRecord(Record):
    """Only ``kind`` is read from a saved result; the rest is the retriever's own validated config."""

    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, JsonValue]
    kind: str


class ConfigRecord(Record):
    """The resolved config echoed into the result (``ExperimentConfig.resolved``); checked again by ``parse_config``
    when a command runs it (explain, report's snippets), so only what renderers read is typed here."""

    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, JsonValue]
    name: str
    retriever: RetrieverRecord


class Timings(Record):
    index_s: float
    retrieve_s: float
    queries_per_s: float


class Result(Record):
    """A whole results.json (``experiment.build_result`` without its in-memory ``_`` keys)."""

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")]  # a config name
    config: ConfigRecord
    config_hash: str
    harness_version: str
    created_at: str
    conventions: dict[str, str]
    cutoff: CutoffRecord
    corpus: CorpusRecord
    goldset: GoldsetRecord
    hit_problems: HitProblemsRecord | None = None  # absent from results written before the hit contract
    summary: Summary
    diagnostics_settings: JsonObject
    timings: Timings
    queries: list[QueryResult]


# ---- checks across fields --------------------------------------------------------------------------------------

def _ids_fingerprint(ids: list[str]) -> str:
    # experiment.fingerprint(sorted(ids)); not imported, so this module stays light. The round-trip test over the
    # demo runs fails if the two ever disagree.
    return hashlib.sha256(json.dumps(sorted(ids), sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]


def consistency_problems(result: Result) -> list[str]:
    """What the types cannot say but the readers rely on: unique query ids that match the golden set's count and
    fingerprint (compare pairs queries by id), and every query carrying the summary's metrics (gate and compare
    read per-query values by the summary's names)."""
    problems = []
    seen: dict[str, int] = {}
    for i, q in enumerate(result.queries):
        if q.id in seen:
            problems.append(f"queries.{i}.id: duplicate query id {q.id!r} (first at queries.{seen[q.id]})")
        seen.setdefault(q.id, i)
    if result.goldset.queries != len(result.queries):
        problems.append(f"goldset.queries: says {result.goldset.queries} queries, but 'queries' has "
                        f"{len(result.queries)}")
    elif not problems and result.goldset.query_ids_fingerprint != _ids_fingerprint(list(seen)):
        problems.append("goldset.query_ids_fingerprint: does not match the ids in 'queries' (edited by hand?)")
    for level in ("doc", "chunk"):
        names = set(getattr(result.summary, level))
        for i, q in enumerate(result.queries):
            have = set(getattr(q.metrics, level))
            if have != names:
                missing, extra = sorted(names - have), sorted(have - names)
                problems.append(f"queries.{i}.metrics.{level}: metric names differ from summary.{level}"
                                + (f"; missing {', '.join(missing)}" if missing else "")
                                + (f"; not in the summary: {', '.join(extra)}" if extra else ""))
    return problems


# ---- messages --------------------------------------------------------------------------------------------------

def _got(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _field_type(annotation: Any, key: Any) -> Any:
    """The type one step of a location down from ``annotation`` (a model field, list item or dict value)."""
    while typing.get_origin(annotation) is Annotated:
        annotation = typing.get_args(annotation)[0]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        field = annotation.model_fields.get(key)
        return field.annotation if field else None
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is list and isinstance(key, int):
        return args[0]
    if origin is dict:
        return args[1]
    if args:  # X | None: follow the non-null member
        inner = [a for a in args if a is not type(None)]
        return _field_type(inner[0], key) if len(inner) == 1 else None
    return None


def _unknown_field(loc: tuple) -> str:
    owner: Any = Result
    for key in loc[:-1]:
        owner = _field_type(owner, key)
    while typing.get_origin(owner) is Annotated:
        owner = typing.get_args(owner)[0]
    if isinstance(owner, type) and issubclass(owner, BaseModel):
        fields = list(owner.model_fields)
        near = difflib.get_close_matches(str(loc[-1]), fields, n=1, cutoff=0.6)
        return "unknown field" + (f"; did you mean {near[0]!r}?" if near else f"; expected {', '.join(fields)}")
    return "unknown field"


_EXPECTED = {"int_type": "a whole number", "int_parsing": "a whole number", "int_from_float": "a whole number",
             "float_type": "a number", "float_parsing": "a number", "string_type": "a string",
             "bool_type": "true or false", "dict_type": "an object", "model_type": "an object",
             "model_attributes_type": "an object", "list_type": "a list"}


def _message(err: dict) -> str:
    kind, got = err["type"], err.get("input")
    ctx = err.get("ctx") or {}
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        return _unknown_field(tuple(err["loc"]))
    if kind in _EXPECTED:
        return f"expected {_EXPECTED[kind]}, got {_got(got)}"
    if kind == "literal_error":
        return f"expected one of {ctx.get('expected')}, got {_got(got)}"
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        bound = next(iter(ctx.values()), "?")
        words = {"greater_than_equal": "at least", "greater_than": "more than",
                 "less_than_equal": "at most", "less_than": "less than"}[kind]
        return f"must be {words} {bound}, got {_got(got)}"
    if kind in ("too_short", "too_long") and ctx.get("min_length") == 2 == ctx.get("max_length", 2):
        return f"expected a [start, end] pair, got {_got(got)}"
    if kind == "string_pattern_mismatch":
        return f"expected a run name (letters, digits, '_', '.', '-'), got {_got(got)}"
    return f"{err['msg']}, got {_got(got)}"


def schema_problems(data: Any) -> list[str]:
    """Every problem of ``data`` (a parsed results.json) as ``key.path: message`` lines; empty when it is valid."""
    if not isinstance(data, dict):
        return [f"<root>: expected a JSON object, got {_got(data)}"]
    try:
        model = Result.model_validate(data)
    except ValidationError as exc:
        return [_located(err) for err in exc.errors()]
    return consistency_problems(model)


def _located(err: dict) -> str:
    loc, key = tuple(err["loc"]), ""
    if len(loc) >= 2 and loc[-1] == "[key]":  # pydantic's marker for a bad mapping key
        loc, key = loc[:-2], f"key {loc[-2]!r}: "
    return f"{'.'.join(str(p) for p in loc) or '<root>'}: {key}{_message(err)}"


def _shown(where: str, problems: list[str]) -> list[str]:
    lines = [f"{where}: {p}" for p in problems[:MAX_SHOWN]]
    if len(problems) > MAX_SHOWN:
        lines.append(f"... and {len(problems) - MAX_SHOWN} more")
    return lines


def load_result(path: Path) -> dict:
    """Read and validate a results.json; the plain dict comes back (what today's readers index into)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: results file not found")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start}): a results.json written by harness run?") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg}, column {exc.colno}): a truncated or "
                         f"hand-edited results.json?") from None
    except RecursionError:
        raise InputError(f"{path}: JSON nested too deeply: not a results.json written by harness run") from None
    problems = schema_problems(data)
    if problems:
        raise InputError(f"{path}: not a valid results.json ({len(problems)} problem(s))", _shown(str(path), problems))
    return data


def check_result(result: dict) -> str:
    """The results.json text for an in-memory result, checked against the schema before anything is written.

    A failure here is a bug in the writer (the schema and ``build_result`` disagree), not bad input."""
    text = json.dumps({k: v for k, v in result.items() if not k.startswith("_")}, indent=2, ensure_ascii=False)
    problems = schema_problems(json.loads(text))
    if problems:
        raise HarnessError(f"internal error: the result of run {result.get('name')!r} does not match the results.json "
                           "schema (please report this)\n" + "\n".join(_shown("results.json", problems)))
    return text
