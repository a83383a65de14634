"""The Result of a run: typed pydantic models of exactly what ``harness run`` writes to ``results.json``.

``pipeline.assemble`` builds one ``Result``; ``results.json`` is ``result.to_json()``; ``load_result(path)`` gives
the same object back, and compare, gate, report, explain and sweep read its attributes, never raw dicts.

Strict on purpose: a number must be a number (no "3" -> 3), a string a string, unknown and missing fields are
errors. A results.json is rendered into HTML and Markdown and fed to statistics, so a hand-made or truncated file
is refused with one located line per problem instead of reaching a renderer. The sections that echo the config
(``config``, ``corpus.chunking``, ``diagnostics_settings``) and the free-form verdict ``detail`` stay JSON objects
(still JSON-typed): they follow the config models, which have their own validation.
"""

from __future__ import annotations

import numbers
from typing import Annotated, Any, Literal, Sequence

from pydantic import ConfigDict, Field, JsonValue, PrivateAttr, ValidationError

from ..core.errors import InputError
from .outcomes import Comparison, GateOutcome  # noqa: F401  (the typed outputs of compare and gate live beside)
from .querycolumns import Cache as ColumnsCache
from .querystore import QueryStore, Spooled
from .records import ChunkRecord, Count, HitRecord, MetricValue, Record, StoredHits  # noqa: F401  (hit storage beside)
from .records import GEOMETRY_SHOWN, GeometryCounts  # noqa: F401
from .run_records import (ExecutorRecord, HitProblemRecord, HitProblemsRecord, LatencyRecord,  # noqa: F401
                          RequestLogRecord, RequestsRecord, Timings)
from .calibration import Abstention, Calibration, ScoreHistogram  # noqa: F401
from .check import MAX_SHOWN, consistency_problems, got, located, shown  # noqa: F401

from ..diagnostics.kinds import FLAGS, KINDS, RETRIEVER_FAILURES  # noqa: F401  (one table of kinds)
from .verdicts import (Flag, FlagCounts, Kind, KindCounts, KindShares, Verdict, VerdictRecord,  # noqa: F401
                       VerdictSummary, WhereCounts)
LEVELS = ("doc", "chunk")


def _level(level: str) -> str:
    """``level`` when it names one ("doc", "chunk"): read as an attribute name, "copy" or "DOC" would find a method
    or nothing."""
    if level not in LEVELS:
        raise InputError(f"level: expected 'doc' or 'chunk', got {level!r}")
    return level


Level = Literal[LEVELS]  # type: ignore[valid-type]
Span = Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=2, max_length=2)]  # [start, end)
JsonObject = dict[str, JsonValue]


# ---- one query -------------------------------------------------------------------------------------------------

class GoldRecord(Record):
    doc_id: str
    grade: int
    evidence: list[Span]
    evidence_text: list[str] | None = None  # the text of each span (absent from results written before it was kept)
    group: str | None = None  # its evidence group (docs/groups.md); None: the query's unnamed group


class QueryMetrics(Record):
    doc: dict[str, MetricValue]
    chunk: dict[str, MetricValue]


class LevelCounts(Record):
    doc: Count
    chunk: Count


class LevelFlags(Record):
    doc: bool
    chunk: bool


class QueryResult(Record):
    id: str
    text: str
    tags: dict[str, str]
    metrics: QueryMetrics
    n_relevant: LevelCounts
    # Whether this query enters the means at each level: ``harness.metrics.table.included`` decided it once, and
    # every reader (summary, per_query.csv, compare, gate, HTML, leaderboard) uses this flag.
    counted: LevelFlags
    effective_k: Count
    gold: list[GoldRecord]
    verdict: Verdict
    # null: not kept in this results.json (a run over KEEP_ALL_HITS_UP_TO queries); ``Result.hits_of`` reads them
    hits: list[HitRecord] | None = None

    def value(self, level: str, metric: str) -> float:
        values = getattr(self.metrics, _level(level))
        if metric not in values:
            raise InputError(f"metric {metric!r} is not in query {self.id!r} at {level} level; it has "
                             f"{', '.join(values) or 'none'}")
        return values[metric]

    def is_counted(self, level: str) -> bool:
        return getattr(self.counted, _level(level))


Queries = Annotated[list[QueryResult], Spooled]  # a list, or a large run's QueryStore


# ---- the summary -----------------------------------------------------------------------------------------------

class Counts(Record):
    """``MetricTable.counts`` of one level plus the window's ``nothing_found_in_window``. Every judged query is
    either counted (``evaluated_queries``) or listed once under the reason it is not: a golden-set error, marked
    ``answerable: false`` (``unanswerable_queries``), or no relevant item at this level (listed but counted as 0
    under ``query_policy: zero``)."""

    judged_queries: Count
    evaluated_queries: Count
    no_relevant_queries: Count
    no_relevant_query_ids: list[str]
    excluded_goldset_error: Count
    excluded_goldset_error_query_ids: list[str]
    absent_from_run: Count
    absent_from_run_query_ids: list[str]
    unjudged_run_queries: Count
    dropped_duplicates: Count
    nothing_found_in_window: Count
    unanswerable_queries: Count = 0  # (absent from results without unanswerable queries)
    unanswerable_query_ids: list[str] = Field(default_factory=list)


class SummaryCounts(Record):
    doc: Counts
    chunk: Counts


class Summary(Record):
    doc: dict[str, MetricValue | None]  # a mean is null when no query enters it
    chunk: dict[str, MetricValue | None]
    counts: SummaryCounts
    verdicts: VerdictSummary
    # can the scores tell a miss (``pipeline.calibrate``); absent from results written before they were computed
    calibration: Calibration | None = None
    abstention: Abstention | None = None

    def means(self, level: str) -> dict[str, float | None]:
        return getattr(self, _level(level))

    def level_counts(self, level: str) -> Counts:
        return getattr(self.counts, _level(level))


# ---- the run's context -----------------------------------------------------------------------------------------

class CutoffRecord(Record):
    k: Annotated[int, Field(ge=1)] | None
    token_budget: Annotated[int, Field(ge=1)] | None
    tokenizer: str | None
    depth: Annotated[int, Field(ge=1)]
    describe: str
    mean_effective_k: float
    # the mean context window in characters and in tokens (words; a token budget's tokenizer's tokens);
    # absent from results written before they were kept
    mean_window_chars: Annotated[float, Field(ge=0)] | None = None
    mean_window_tokens: Annotated[float, Field(ge=0)] | None = None


class CorpusRecord(Record):
    documents: Count
    chunks: Count
    chunking: JsonObject
    fingerprint: str


class GoldProblemRecord(Record):
    """``gold.resolve.GoldProblem``; its kinds are open-ended, so ``kind`` is any string."""

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
    # doc id -> core.fingerprint.document_fingerprint of each judged document in the corpus (absent from results
    # written before it): `harness goldset check --against results.json` finds the documents changed since the run.
    judged_documents: dict[str, str] = Field(default_factory=dict)


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

    def as_dict(self) -> dict:
        return self.model_dump(mode="json")


class Result(StoredHits, Record):
    """A whole results.json, and, for a run made in this process, the in-memory run (for the TREC writers), chunk
    texts and hits (for hits.parquet and the reports), which are not written."""

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
    queries: Queries  # a list, or a large run's QueryStore: read it as a sequence (len, iteration, indexing)
    # Where the hits are (``core.selection``): "all" in ``queries``, or "selected" queries there and every hit in
    # ``hits_file``; ``chunks`` holds the texts of the kept hits' windows, ``chunks_file`` those of every hit.
    hits_kept: Literal["all", "selected"] = "all"
    hits_file: str | None = None
    chunks: dict[str, ChunkRecord] | None = None  # null: a results.json written before results carried texts
    chunks_file: str | None = None
    executor: ExecutorRecord | None = None
    # What a backend kind reports about its search (vector databases: mode, index, ann_recall_at_10 against exact).
    retriever_info: JsonObject | None = None
    latency: LatencyRecord | None = None  # absent from results written before latency was recorded
    requests: RequestsRecord | None = None  # live retrievers only
    overrides: list[str] | None = None  # the --set KEY.PATH=VALUE a run was made with, as typed (None: none)

    _run: Any = PrivateAttr(default=None)
    _chunk_text: dict[str, str] = PrivateAttr(default_factory=dict)
    _hits: Any = PrivateAttr(default=None)  # io.hitsfile.RunHits (this process) or ParquetHits (a loaded file)
    _units: Any = PrivateAttr(default=None)  # (hits.units.EvidenceUnits, their LevelGrades): run in this process
    _columns: Any = PrivateAttr(default_factory=ColumnsCache)  # per-query columns, read once (querycolumns.of)

    # ---- reading ----

    @property
    def run_id(self) -> str:
        """What names this run in the Parquet files written beside its results.json (their footer), so a reader
        never takes another run's hits.parquet or chunks.parquet for its own: the config and when it ran."""
        return f"{self.config_hash}@{self.created_at}"

    def query(self, query_id: str) -> QueryResult | None:
        """The query of that id, None when the run has none. A whole number is read as its decimal text, as
        ``evaluate`` reads ids (SciFact's ``1``); anything else that is not text is an error, not None."""
        if isinstance(query_id, numbers.Integral) and not isinstance(query_id, bool):  # (NumPy's integers too)
            query_id = str(int(query_id))
        if not isinstance(query_id, str):
            raise InputError(f"query id: expected text (or a whole number), got {type(query_id).__name__} "
                             f"{query_id!r}"[:200])
        if isinstance(self.queries, QueryStore):  # found by its bytes, not by decoding every record
            i = self.queries.index_of(query_id)
            return None if i is None else self.queries[i]
        return next((q for q in self.queries if q.id == query_id), None)

    def counted(self, level: str) -> list[QueryResult]:
        """The queries that enter the means at ``level`` (their ``counted`` flag), in golden-set order."""
        return [q for q in self.queries if q.is_counted(level)]

    def effective_ks(self) -> Sequence[int]:
        """Each query's effective k, in golden-set order: the run's own window sizes while it is in memory (no
        record decoded), else its records'."""
        window = getattr(self._hits, "window_k", None)
        return window if window is not None else [q.effective_k for q in self.queries]

    @property
    def run(self):
        """The ``core.types.Run`` this result was built from; None for a loaded results.json."""
        return self._run

    @property
    def chunk_text(self) -> dict[str, str]:
        """Every chunk's text for a run in memory; the kept windows' texts for a loaded results.json."""
        return self._chunk_text or {cid: c.text for cid, c in (self.chunks or {}).items()}

    def with_memory(self, run=None, chunk_text: dict[str, str] | None = None, hits=None, units=None) -> "Result":
        """A shallow copy (the records shared) with the in-memory parts beside them; this result stays as it was."""
        copy = self.model_copy()
        copy._run, copy._chunk_text, copy._hits = run, dict(chunk_text or {}), hits if hits is not None else self._hits
        copy._units = units if units is not None else self._units
        return copy

    @property
    def units(self):
        """(evidence units, the chunk level's judgments over them) of a run in memory; None for a loaded one."""
        return self._units

    # ---- writing and reading back ----

    def to_dict(self) -> dict:
        return self.model_dump(mode="json")

    def to_json(self) -> str:
        """results.json text (``write_json`` into a string)."""
        import io

        buf = io.StringIO()
        self.write_json(buf)
        return buf.getvalue()

    def write_json(self, fh) -> None:
        """results.json into an open text file, a query at a time, checked against the schema as it goes (a
        failure is a bug in the writer, raised after the last record, not bad input)."""
        from .write import write_json

        write_json(self, fh)

    @classmethod
    def from_dict(cls, data: Any, where: str = "results.json") -> "Result":
        """A parsed results.json as a Result; every problem is reported, located, in one InputError."""
        model, problems = _validated(data)
        if problems:
            raise InputError(f"{where}: not a valid results.json ({len(problems)} problem(s))", shown(where, problems))
        return model


# ---- checks across fields --------------------------------------------------------------------------------------

def schema_problems(data: Any) -> list[str]:
    """Every problem of ``data`` (a parsed results.json) as ``key.path: message`` lines; empty when it is valid."""
    return _validated(data)[1]


def _validated(data: Any) -> tuple[Result | None, list[str]]:
    """(the Result, no problems), or (None or the Result, its problems): validated once, which on a 100k-query
    result takes seconds."""
    if not isinstance(data, dict):
        return None, [f"<root>: expected a JSON object, got {got(data)}"]
    try:
        model = Result.model_validate(data)
    except ValidationError as exc:
        return None, [located(Result, err) for err in exc.errors()]
    return model, consistency_problems(model)


def as_result(value: Result | dict, where: str = "results.json") -> Result:
    """A Result as it is; a plain dict (a results.json parsed by the caller) validated into one."""
    return value if isinstance(value, Result) else Result.from_dict(value, where)
