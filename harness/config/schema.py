"""Experiment configs: YAML -> frozen pydantic models, with errors that name the file, key path and expectation.

Relative paths resolve against the config file's folder; ``${VAR}`` is replaced from the environment.
Retriever sections are validated by the model their ``kind`` registered (see ``harness.retrievers``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal, Sequence

from pydantic import Field, ValidationError, field_validator, model_validator

from ..core.fingerprint import fingerprint
from ..core.errors import ConfigError, MetricError
from ..core.schema import MAX_RANK, EnvText, Strict, format_validation_error  # noqa: F401  (re-exported)
from ..metrics.spec import DEFAULT_METRICS, WINDOW_METRICS, default_metrics, parse_metrics
from .paths import _interpolate, _resolve_paths, relative_paths  # noqa: F401  (relative_paths re-exported)
from .selection import fold_problems, goldset_overrides
from .chunking import (MAX_CHUNK_UNITS, LIBRARY_STRATEGIES, RECURSIVE_STRATEGIES, DEFAULT_SEPARATORS, NEWER_CHUNKING_KEYS, ChunkingConfig)  # noqa: F401  (re-exported)


class CorpusConfig(Strict):
    path: Path
    """the corpus: a JSONL file (may be .gz), a folder of documents, or a BEIR folder"""
    format: Literal["jsonl", "folder", "beir"] = "jsonl"
    """jsonl: a document a line ({id, text, title?, metadata?}); folder: every .txt, .md, .html, .pdf and .docx file
    under the folder, its id the file's path there; beir: a BEIR folder's corpus.jsonl"""
    encoding: str | None = Field(None, description="folder: the encoding of its .txt/.md/.html files (default "
                                                   "UTF-8; a file that is not is skipped with a warning)")

    @field_validator("encoding")
    @classmethod
    def _known_encoding(cls, value: str | None) -> str | None:
        import codecs

        if value is None:
            return None
        try:
            info = codecs.lookup(value)
        except (LookupError, ValueError):
            raise ValueError("not an encoding Python knows (e.g. utf-8, cp1252, latin-1, utf-16)") from None
        if not getattr(info, "_is_text_encoding", True):  # rot13, base64: codecs, not encodings of text files
            raise ValueError("a codec, not an encoding of text files")
        return value

    @model_validator(mode="after")
    def _encoding_for_folders(self) -> "CorpusConfig":
        if self.encoding is not None and self.format != "folder":
            raise ValueError("encoding: only for format: folder (JSONL corpora are UTF-8)")
        return self


class GoldColumns(Strict):
    """Which column of a CSV/TSV/Parquet golden set holds what (one row per judgment)."""

    query_id: str = "query_id"
    """the column of the query id"""
    query: str = "query"
    """the column of the query text"""
    doc: str = "doc_id"
    """the column of the judged document's id (an empty cell: a query with no judgment)"""
    grade: str = "grade"
    """the column of the grade, a whole number"""
    quote: str = "quote"
    """the column of an evidence quote, located in its document"""
    start: str = "start"
    """the column of an evidence span's start offset"""
    end: str = "end"
    """the column of an evidence span's end offset"""
    group: str = "group"
    """the column of the row's evidence group (docs/groups.md); the column is optional"""
    answerable: str = "answerable"
    """the column saying true or false: false marks a query whose answer is not in the corpus (docs/calibration.md);
    the column is optional, an empty cell is true"""
    tags: list[str] = []
    """columns kept as the query's tags (slices)"""


class GoldsetConfig(Strict):
    path: Path
    """the golden set: a native JSONL or YAML file, a BEIR folder, TREC qrels, or a CSV, TSV or Parquet table"""
    format: Literal["native", "beir", "trec", "csv", "tsv", "parquet"] = "native"
    """native: harness's JSONL (queries, relevant documents, evidence); beir; trec (with queries); csv, tsv, parquet
    (a row per judgment, see columns)"""
    columns: GoldColumns | None = Field(None, description="csv, tsv, parquet: the column of each field")
    split: str = "test"
    """beir: the qrels split read (qrels/<split>.tsv)"""
    queries: Path | None = Field(None, description="trec format: the queries TSV (id<TAB>text)")
    evidence: Path | None = Field(None, description="beir format: optional evidence JSONL (SciFact style)")


class CutoffConfig(Strict):
    k: int | None = Field(None, ge=1, le=MAX_RANK)
    """the context window is the top k hits"""
    token_budget: int | None = Field(None, ge=1)
    """the context window is as many hits, in rank order, as fit in this many tokens"""
    tokenizer: str = "words"
    """token_budget: words (whitespace words), or the path of a tokenizer.json whose tokens are counted"""

    @model_validator(mode="after")
    def _one(self) -> "CutoffConfig":
        if (self.k is None) == (self.token_budget is None):
            raise ValueError("give exactly one of k or token_budget")
        return self

    def describe(self) -> str:
        return f"k={self.k}" if self.k else f"token_budget={self.token_budget} ({self.tokenizer})"

    def idle_fields(self) -> list[str]:
        """``tokenizer`` counts a token budget's tokens: with ``k`` it is read by nothing."""
        return ["tokenizer"] if self.k is not None else []

    def unused(self) -> list[str]:
        return ["cutoff.tokenizer: has no effect with k (it counts a token_budget)"] \
            if "tokenizer" in self.idle_fields() and "tokenizer" in self.settings_given() else []


class EvaluationConfig(Strict):
    query_policy: Literal["exclude", "zero"] = "exclude"
    """queries with no relevant item: exclude them from the means (listed), or count them as 0"""
    order: Literal["score", "rank"] = "score"
    """score: hits ordered by score, ties by id descending (trec_eval); rank: by the ranks the retriever gave"""


class AbstentionConfig(Strict):
    """Answer a query only when its top score reaches a threshold (summary.abstention, docs/calibration.md)."""

    threshold: float | None = Field(None, strict=True)
    """answer when the top score is at least this; null: the suggested threshold (the one minimising false answer
    rate + lost answer rate over the run's top scores)"""


class DiagnosticsConfig(Strict):
    buried_after: int = Field(3, ge=1)
    """evidence first ranked after this is buried_evidence"""
    edge: int = Field(2, ge=0)
    """ranks at the top and at the end of the window that are not its middle"""
    middle_min_window: int = Field(6, ge=1)
    """a window of at least this many chunks has a middle, where evidence counts as buried"""
    noisy_below: float = Field(0.2, ge=0, le=1)
    """noisy_context: the window holds fewer relevant chunks than this share of min(k, relevant chunks)"""
    near_cutoff: int = Field(10, ge=1, description="beyond_cutoff ranks up to this many past the window count as 'just past'")
    on_gold_error: Literal["flag", "fail"] = "flag"
    """flag: golden-set problems become goldset_error verdicts and warnings; fail: the run exits 2"""


class RetrieverHitsConfig(Strict):
    """What a run does with hits that name no chunk of the corpus (see ``harness.retrievers.contract``, the
    hit contract): ``fail`` lists them and stops; ``skip`` drops them, counts them and lists them in results.json."""

    unplaceable: Literal["fail", "skip"] = "fail"
    """hits that name no chunk of the corpus: fail stops the run listing each; skip drops them, counted and listed in
    results.json"""


class ExecutorConfig(Strict):
    """Where retrieval runs (``harness.executors``): ``local`` in this process, or ``ray`` on a local or existing
    Ray cluster. It changes where the work runs, never the result: it is not part of the config hash."""

    kind: Literal["local", "ray"] = "local"
    """where retrieval runs: local (this process) or ray (a Ray cluster, local or remote)"""
    address: str = Field("local", description="ray: 'local' starts a private Ray on this machine, 'auto' joins the "
                                              "cluster this machine is part of, 'ray://host:port' a remote one")
    num_workers: int = Field(1, ge=1, le=4096, description="ray: actors holding the index (per shard)")
    num_gpus_per_worker: float = Field(0, ge=0, le=64)
    """ray: GPUs each actor reserves; encoding actors move their model there"""
    batch_size: int | None = Field(None, ge=1, description="ray: queries per task (default: the config's "
                                                           "batch_size, so query embeddings share the cache)")
    shards: int = Field(1, ge=1, le=4096, description="ray: split the index into this many slices, one per actor")

    @field_validator("address")
    @classmethod
    def _address(cls, value: str) -> str:
        if value in ("local", "auto"):
            return value
        # A Ray Client address names its port: without one (or without a host) Ray waited 30 s for a connection
        # that could not be, then said "ray client connection timeout".
        host, _, port = value[len("ray://"):].rpartition(":") if value.startswith("ray://") else ("", "", "")
        if not host.strip("[]") or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError("expected 'local', 'auto' or 'ray://host:port'")
        return value


class ExperimentConfig(Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
    """the experiment's name: its default output folder reports/<name>/ and its name in comparisons"""
    corpus: CorpusConfig
    """the documents"""
    chunking: ChunkingConfig = ChunkingConfig()
    """how documents are cut into chunks"""
    goldset: GoldsetConfig
    """the golden set: queries, judgments, evidence"""
    retriever: dict[str, Any]
    """the retriever: its kind and that kind's keys (see Retriever kinds below)"""
    cutoff: CutoffConfig = CutoffConfig(k=5)
    """the context window that verdicts and the @window metrics judge: k or token_budget"""
    depth: int = Field(100, ge=1, le=MAX_RANK)
    """hits kept per query; must cover every metric's cutoff and cutoff.k"""
    metrics: tuple[str, ...] = Field(DEFAULT_METRICS, min_length=1)
    """metrics computed at both levels: canonical names or aliases (ndcg@10, P@5, MRR@10, ap...)"""
    evaluation: EvaluationConfig = EvaluationConfig()
    """which queries count, and how hits are ordered"""
    diagnostics: DiagnosticsConfig = DiagnosticsConfig()
    """the verdicts' settings"""
    abstention: AbstentionConfig = AbstentionConfig()
    """the score threshold below which a query is not answered (summary.abstention)"""
    retriever_hits: RetrieverHitsConfig = RetrieverHitsConfig()
    """what a run does with hits that name no chunk"""
    output: Path | None = None
    """the output folder (default reports/<name>/)"""
    batch_size: int = Field(256, ge=1)
    """queries per retrieval batch"""
    sweep: dict[str, list[Any]] | None = None
    """a grid, key path -> list of values (chunking.size: [1, 2, 4]): one run per point"""
    sweep_metric: str | None = None
    """what a sweep ranks its runs by: level.metric, one of metrics (default: the first metric at doc level)"""
    select_on: dict[str, Any] | None = None
    """choose a sweep's best run on another golden set (keys merged over goldset, e.g. {split: train}), then report
    it on goldset; kfold (a whole number, 2 up to the number of selection queries counted at the ranking metric's level) adds a k-fold estimate of the
    choice: each fold's best point chosen on the other folds' queries and scored on the fold, with the optimism gap;
    seed (default 0) shuffles the queries into folds (docs/tuning.md)"""

    @model_validator(mode="after")
    def _metrics_follow_depth(self) -> "ExperimentConfig":
        if "metrics" not in self.model_fields_set:  # the defaults, at the depth the user set
            object.__setattr__(self, "metrics", default_metrics(self.depth))  # (frozen: set once, while validating)
        return self

    def unused_settings(self) -> list[str]:
        """Settings given that nothing reads: run and validate warn of them (a typo'd intent, not an error)."""
        # an evidence metric counts cutoff.tokenizer's tokens (hits.evidence), with k too
        evidence = any(str(m).strip().lower().startswith("evidence_") for m in self.metrics)
        return self.chunking.unused() + ([] if evidence else self.cutoff.unused())

    def ranking_metric(self) -> str:
        return self.sweep_metric or self.metrics[0]

    def selection_goldset(self) -> GoldsetConfig | None:
        if self.select_on is None:
            return None
        return GoldsetConfig.model_validate({**self.goldset.model_dump(), **goldset_overrides(self.select_on)})

    def selects_elsewhere(self) -> bool:
        """``select_on`` names another golden set (not only folds): the best point is then run again on goldset."""
        return bool(goldset_overrides(self.select_on))

    def unplaceable(self) -> str:
        """What the run does with hits that name no chunk: ``retriever_hits.unplaceable``, or ``skip`` for a
        retriever configured with ``placement: lenient``."""
        if isinstance(self.retriever, dict) and self.retriever.get("placement") == "lenient":
            return "skip"
        return self.retriever_hits.unplaceable
    executor: ExecutorConfig = ExecutorConfig()
    """where retrieval runs; not part of the config hash"""

    def output_dir(self) -> Path:
        """``output:``, else ``reports/<name>/``: both from the current folder (where harness runs), as --out is."""
        return self.output or Path("reports") / self.name

    def resolved(self) -> dict:
        """JSON-ready resolved config (paths absolute, defaults filled)."""
        return json.loads(self.model_dump_json())

    def config_hash(self) -> str:
        data = self.resolved()
        data.pop("output", None)
        data.pop("executor", None)  # where a run ran does not change what it computes
        chunking = data.get("chunking") or {}
        for key in NEWER_CHUNKING_KEYS:  # at their defaults they change nothing: a config keeps its earlier hash
            if key in chunking and chunking[key] == ChunkingConfig.model_fields[key].default:
                chunking.pop(key)
        if data.get("abstention") == AbstentionConfig().model_dump(mode="json"):  # as before the key existed
            data.pop("abstention")
        columns = data["goldset"].get("columns") or {}
        if columns.get("answerable") == "answerable":  # at its default, as before the key existed
            columns.pop("answerable")
        if data["corpus"].get("encoding") is None:  # UTF-8, as before the key existed: the same hash as then
            data["corpus"].pop("encoding", None)
        return fingerprint(data, ascii_only=True)


def _sweep_problems(config: ExperimentConfig, specs: list) -> list[str]:
    problems = [f"{key}: only with sweep: (it chooses among a sweep's runs)"
                for key in ("sweep_metric", "select_on") if getattr(config, key) is not None and not config.sweep]
    if config.sweep_metric is not None:
        level, _, name = (config.sweep_metric.partition(".") if config.sweep_metric.startswith(("doc.", "chunk."))
                          else ("doc", "", config.sweep_metric))
        try:
            wanted = parse_metrics([name])[0].name
        except MetricError as exc:
            problems += [f"sweep_metric: {p}" for p in exc.problems] or [f"sweep_metric: {exc}"]
        else:
            if wanted not in {s.name for s in specs} | set(WINDOW_METRICS):  # a run's summary always has these
                problems.append(f"sweep_metric: {config.sweep_metric!r} is not among metrics: "
                                f"({', '.join(s.name for s in specs)}) nor a window metric; add it there")
    if config.select_on is not None:
        problems += fold_problems(config.select_on)
        try:
            config.selection_goldset()
        except ValidationError as exc:
            problems += [p.replace("goldset", "select_on", 1) if p.startswith("goldset") else f"select_on.{p}"
                         for p in format_validation_error(exc, GoldsetConfig)]
    return problems


def _rank_problems(config: ExperimentConfig, specs: list) -> list[str]:
    """A metric at k computed from fewer than k retrieved hits is silently wrong (ndcg@10 from 3 hits): the
    depth must cover every cutoff. Metrics without a cutoff (ap, rr, rprec, ndcg) are over the depth by design."""
    problems = []
    for spec in specs:
        if spec.k is not None and spec.k > MAX_RANK:
            problems.append(f"metrics: {spec.name}: the cutoff must be at most {MAX_RANK:,}")
    needs = [(spec.k, spec.name) for spec in specs if spec.k is not None and config.depth < spec.k <= MAX_RANK]
    if config.cutoff.k is not None and config.depth < config.cutoff.k:
        needs.append((config.cutoff.k, f"cutoff.k ({config.cutoff.k})"))
    if needs:
        most = max(k for k, _ in needs)
        named = ", ".join(name for _, name in sorted(needs, reverse=True))
        # The default metrics follow the depth (default_metrics); the default cutoff (k 5) does not: it is the window.
        default = " (cutoff: {k: 5} is the default)" if "cutoff" not in config.model_fields_set and any(
            name.startswith("cutoff.k") for _, name in needs) else ""
        problems.append(f"depth: {config.depth} hits per query are fewer than {named}{default} "
                        f"need{'s' if len(needs) == 1 else ''}; set depth: {most} or more, or lower the cutoff")
    return problems


SHOWN_PROBLEMS = 20  # a list longer than this is its first ones and a count: 20,000 bad names made a 228 KB line


def summarised(problems: list[str], what: str) -> list[str]:
    """``problems``, or its first ``SHOWN_PROBLEMS`` and how many more ``what`` there are."""
    if len(problems) <= SHOWN_PROBLEMS + 1:
        return problems
    return problems[:SHOWN_PROBLEMS] + [f"... and {len(problems) - SHOWN_PROBLEMS:,} more {what}"]


def parse_config(data: Any, source: str = "<config>", base: Path | None = None) -> ExperimentConfig:
    """Validate a config mapping; every problem is reported in one ConfigError."""
    from ..retrievers import validate_retriever_config

    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the config must be a mapping of keys, got {type(data).__name__}")
    problems: list[str] = []
    data = _interpolate(data, "", problems)
    _resolve_paths(data, base or Path.cwd(), problems)
    config = None
    try:
        config = ExperimentConfig.model_validate(data)
    except ValidationError as exc:
        problems += format_validation_error(exc, ExperimentConfig)
    if isinstance(data.get("retriever"), dict):
        problems += validate_retriever_config(data["retriever"], ("retriever",))
    elif "retriever" in data:
        problems.append("retriever: expected a mapping with a 'kind'")
    metrics = data.get("metrics", list(config.metrics if config is not None else DEFAULT_METRICS))
    if isinstance(metrics, (list, tuple)):
        try:
            specs = parse_metrics([str(m) for m in metrics])
        except MetricError as exc:
            problems += summarised([f"metrics: {p}" for p in dict.fromkeys(exc.problems)], "invalid metric names")
        else:
            if config is not None:
                problems += _rank_problems(config, specs) + _sweep_problems(config, specs)
    if problems:
        raise ConfigError(f"{source}: invalid config", summarised(list(dict.fromkeys(problems)), "problems"))
    assert config is not None
    return config


def load_config(path: str | Path, overrides: Sequence[str] = ()) -> ExperimentConfig:
    """Read and validate a config file; ``overrides`` (``--set KEY.PATH=VALUE``) are applied before validation, as
    if written in the file (``config.overrides``)."""
    from ..io.safeyaml import load_yaml
    from ..io.textfile import require_file
    from .overrides import apply_overrides

    path = Path(path)
    require_file(path, "config file", ConfigError)
    duplicates: list[str] = []  # reported with the config's other problems, all together
    data = load_yaml(path, ConfigError, duplicates)
    if isinstance(data, dict) and {"harness_version", "summary", "queries"} <= data.keys():
        raise ConfigError(f"{path}: a harness results.json (of run {str(data.get('name'))!r}), not a config: harness "
                          "report, explain, compare and gate read it; harness run reads the config that made it")
    data = apply_overrides(data, overrides)
    source = str(path) + (f" (with {', '.join('--set ' + o for o in overrides)})" if overrides else "")
    try:
        config = parse_config(data, source, path.parent.resolve())
    except ConfigError as exc:
        if duplicates:
            raise ConfigError(str(exc).split("\n", 1)[0], duplicates + list(getattr(exc, "problems", []))) from None
        raise
    if duplicates:
        raise ConfigError(f"{path}: {len(duplicates)} key(s) given twice (YAML would keep only the last)", duplicates)
    return config
