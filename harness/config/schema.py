"""Experiment configs: YAML -> frozen pydantic models, with errors that name the file, key path and expectation.

Relative paths resolve against the config file's folder; ``${VAR}`` is replaced from the environment.
Retriever sections are validated by the model their ``kind`` registered (see ``harness.retrievers``).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Callable, Literal, Sequence

from pydantic import Field, ValidationError, field_validator, model_validator

from ..core.fingerprint import fingerprint
from ..core.errors import ConfigError, MetricError
from ..core.schema import MAX_RANK, Strict, format_validation_error  # noqa: F401  (re-exported)
from ..metrics.spec import DEFAULT_METRICS, WINDOW_METRICS, default_metrics, parse_metrics
from ..text.stopwords import BUILTIN as STOPWORD_LISTS


class CorpusConfig(Strict):
    path: Path
    format: Literal["jsonl", "folder", "beir"] = "jsonl"
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


# A chunk of more units than any document has is the whole document; the bound keeps sizes within int64.
MAX_CHUNK_UNITS = 1_000_000_000


class ChunkingConfig(Strict):
    strategy: Literal["none", "tokens", "sentences", "paragraphs"] = "none"
    size: int = Field(200, ge=1, le=MAX_CHUNK_UNITS,
                      description="words/tokens per chunk (tokens) or sentences/paragraphs per chunk")
    overlap: int = Field(0, ge=0, le=MAX_CHUNK_UNITS)
    unit: Literal["words", "tokenizer"] = "words"
    tokenizer: Path | None = None
    include_title: bool = True

    @model_validator(mode="after")
    def _check(self) -> "ChunkingConfig":
        if self.overlap >= self.size and self.strategy != "none":
            raise ValueError(f"overlap ({self.overlap}) must be smaller than size ({self.size})")
        if self.unit == "tokenizer" and self.tokenizer is None:
            raise ValueError("unit 'tokenizer' needs tokenizer: <path to a tokenizer.json>")
        return self

    def idle_fields(self) -> list[str]:
        """The fields this strategy does not read, whatever their values."""
        if self.strategy == "none":
            return ["size", "overlap", "unit", "tokenizer"]
        if self.strategy != "tokens":
            return ["unit", "tokenizer"]
        return ["tokenizer"] if self.unit == "words" else []

    def unused(self) -> list[str]:
        """The settings given that this strategy does not read (a user who set them expects them to act)."""
        given = self.settings_given()
        why = f"strategy {self.strategy}" if self.strategy != "tokens" else "unit words"
        return [f"chunking.{f}: has no effect with {why}" for f in self.idle_fields() if f in given]


class GoldColumns(Strict):
    """Which column of a CSV/TSV/Parquet golden set holds what (one row per judgment)."""

    query_id: str = "query_id"
    query: str = "query"
    doc: str = "doc_id"
    grade: str = "grade"
    quote: str = "quote"
    start: str = "start"
    end: str = "end"
    tags: list[str] = []


class GoldsetConfig(Strict):
    path: Path
    format: Literal["native", "beir", "trec", "csv", "tsv", "parquet"] = "native"
    columns: GoldColumns | None = Field(None, description="csv, tsv, parquet: the column of each field")
    split: str = "test"
    queries: Path | None = Field(None, description="trec format: the queries TSV (id<TAB>text)")
    evidence: Path | None = Field(None, description="beir format: optional evidence JSONL (SciFact style)")


class CutoffConfig(Strict):
    k: int | None = Field(None, ge=1, le=MAX_RANK)
    token_budget: int | None = Field(None, ge=1)
    tokenizer: str = "words"

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
    order: Literal["score", "rank"] = "score"


class DiagnosticsConfig(Strict):
    buried_after: int = Field(3, ge=1)
    edge: int = Field(2, ge=0)
    middle_min_window: int = Field(6, ge=1)
    noisy_below: float = Field(0.2, ge=0, le=1)
    near_cutoff: int = Field(10, ge=1, description="beyond_cutoff ranks up to this many past the window count as 'just past'")
    on_gold_error: Literal["flag", "fail"] = "flag"


class RetrieverHitsConfig(Strict):
    """What a run does with hits that name no chunk of the corpus (see ``harness.retrievers.contract``, the
    hit contract): ``fail`` lists them and stops; ``skip`` drops them, counts them and lists them in results.json."""

    unplaceable: Literal["fail", "skip"] = "fail"


class ExecutorConfig(Strict):
    """Where retrieval runs (``harness.executors``): ``local`` in this process, or ``ray`` on a local or existing
    Ray cluster. It changes where the work runs, never the result: it is not part of the config hash."""

    kind: Literal["local", "ray"] = "local"
    address: str = Field("local", description="ray: 'local' starts a private Ray on this machine, 'auto' joins the "
                                              "cluster this machine is part of, 'ray://host:port' a remote one")
    num_workers: int = Field(1, ge=1, le=4096, description="ray: actors holding the index (per shard)")
    num_gpus_per_worker: float = Field(0, ge=0, le=64)
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
    corpus: CorpusConfig
    chunking: ChunkingConfig = ChunkingConfig()
    goldset: GoldsetConfig
    retriever: dict[str, Any]
    cutoff: CutoffConfig = CutoffConfig(k=5)
    depth: int = Field(100, ge=1, le=MAX_RANK)
    metrics: tuple[str, ...] = Field(DEFAULT_METRICS, min_length=1)
    evaluation: EvaluationConfig = EvaluationConfig()
    diagnostics: DiagnosticsConfig = DiagnosticsConfig()
    retriever_hits: RetrieverHitsConfig = RetrieverHitsConfig()
    output: Path | None = None
    batch_size: int = Field(256, ge=1)
    sweep: dict[str, list[Any]] | None = None
    # What a sweep ranks its runs by ("level.metric", one of metrics; default: the first metric at doc level).
    sweep_metric: str | None = None
    # Choose the best run on another golden set (keys merged over goldset:, e.g. {split: train}), then report the
    # best configuration on goldset:: no tuning on the test queries.
    select_on: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _metrics_follow_depth(self) -> "ExperimentConfig":
        if "metrics" not in self.model_fields_set:  # the defaults, at the depth the user set
            object.__setattr__(self, "metrics", default_metrics(self.depth))  # (frozen: set once, while validating)
        return self

    def unused_settings(self) -> list[str]:
        """Settings given that nothing reads: run and validate warn of them (a typo'd intent, not an error)."""
        return self.chunking.unused() + self.cutoff.unused()

    def ranking_metric(self) -> str:
        return self.sweep_metric or self.metrics[0]

    def selection_goldset(self) -> GoldsetConfig | None:
        if self.select_on is None:
            return None
        return GoldsetConfig.model_validate({**self.goldset.model_dump(), **self.select_on})

    def unplaceable(self) -> str:
        """What the run does with hits that name no chunk: ``retriever_hits.unplaceable``, or ``skip`` for a
        retriever configured with ``placement: lenient``."""
        if isinstance(self.retriever, dict) and self.retriever.get("placement") == "lenient":
            return "skip"
        return self.retriever_hits.unplaceable
    executor: ExecutorConfig = ExecutorConfig()

    def output_dir(self) -> Path:
        return self.output or Path("reports") / self.name

    def resolved(self) -> dict:
        """JSON-ready resolved config (paths absolute, defaults filled)."""
        return json.loads(self.model_dump_json())

    def config_hash(self) -> str:
        data = self.resolved()
        data.pop("output", None)
        data.pop("executor", None)  # where a run ran does not change what it computes
        if data["corpus"].get("encoding") is None:  # UTF-8, as before the key existed: the same hash as then
            data["corpus"].pop("encoding", None)
        return fingerprint(data, ascii_only=True)


_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _interpolate(node: Any, path: str, problems: list[str]) -> Any:
    if isinstance(node, str):
        def sub(m: re.Match) -> str:
            if m[1] not in os.environ:
                problems.append(f"{path or '<root>'}: environment variable ${{{m[1]}}} is not set")
                return m[0]
            return os.environ[m[1]]
        return _ENV.sub(sub, node)
    if isinstance(node, dict):
        return {k: _interpolate(v, f"{path}.{k}" if path else str(k), problems) for k, v in node.items()}
    if isinstance(node, list):
        return [_interpolate(v, f"{path}.{i}", problems) for i, v in enumerate(node)]
    return node


def _absolute(value: str, base: Path, where: str, problems: list[str]) -> str:
    try:
        p = Path(value).expanduser()
        return str(p if p.is_absolute() else (base / p).resolve())
    except (RuntimeError, ValueError, OSError) as exc:  # ~nouser/..., an embedded NUL byte, a loop of links
        problems.append(f"{where}: {value!r} is not a usable path ({exc})")
        return value


def _map_paths(data: dict, fn: Callable[[str, str], str]) -> None:
    """Replace every path value of a config mapping (in place) by ``fn(value, key_path)``: the one list of which keys
    are paths, used to make them absolute when a config is read and relative when one is written (best.yaml)."""
    def fix(section: dict | None, key: str, where: str) -> None:
        if isinstance(section, dict) and isinstance(section.get(key), str):
            section[key] = fn(section[key], f"{where}.{key}" if where else key)
    fix(data.get("corpus"), "path", "corpus")
    for key in ("path", "queries", "evidence"):
        fix(data.get("goldset"), key, "goldset")
        fix(data.get("select_on"), key, "select_on")
    fix(data.get("chunking"), "tokenizer", "chunking")
    cutoff = data.get("cutoff")
    if isinstance(cutoff, dict) and isinstance(cutoff.get("tokenizer"), str) and cutoff["tokenizer"] != "words":
        fix(cutoff, "tokenizer", "cutoff")
    if isinstance(data.get("output"), str):
        fix(data, "output", "")

    def fix_retriever(node: Any, where: str) -> None:
        if not isinstance(node, dict):
            return
        for key in ("path", "model"):
            value = node.get(key)
            if not isinstance(value, str) or ":" in value.split("/")[0]:
                continue  # bundled:..., hub:... and URLs are names, not paths
            # a model is a path only when it looks like one; 'path' always is
            if key == "path" or value.startswith((".", "/", "~")):
                node[key] = fn(value, f"{where}.{key}")
        tokenizer = node.get("tokenizer")
        if isinstance(tokenizer, dict) and isinstance(tokenizer.get("stopwords"), str) \
                and tokenizer["stopwords"] not in STOPWORD_LISTS:  # any other text is a file of stopwords
            tokenizer["stopwords"] = fn(tokenizer["stopwords"], f"{where}.tokenizer.stopwords")
        stage = node.get("stage")
        if isinstance(stage, dict) and isinstance(stage.get("model"), str) and stage["model"].startswith((".", "/", "~")):
            stage["model"] = fn(stage["model"], f"{where}.stage.model")
        children = node.get("children")
        for i, child in enumerate(children if isinstance(children, list) else []):
            fix_retriever(child, f"{where}.children.{i}")
        fix_retriever(node.get("child"), f"{where}.child")
    fix_retriever(data.get("retriever"), "retriever")


def _resolve_paths(data: dict, base: Path, problems: list[str]) -> None:
    _map_paths(data, lambda value, where: _absolute(value, base, where, problems))


def relative_paths(data: dict, base: Path) -> dict:
    """A resolved config (``ExperimentConfig.resolved()``) with every path relative to the folder ``base``, so a
    config written there (best.yaml) runs wherever that folder is copied with its inputs beside it. Each starts
    with ``./`` or ``../``: a bare ``my-model`` would be read as a model name, not a folder."""
    def rel(value: str, where: str) -> str:
        if not os.path.isabs(value):
            return value
        out = os.path.relpath(value, os.path.abspath(base))
        return out if out.startswith("..") else f"./{out}"
    data = json.loads(json.dumps(data))
    _map_paths(data, rel)
    return data


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
            problems += [f"metrics: {p}" for p in exc.problems]
        else:
            if config is not None:
                problems += _rank_problems(config, specs) + _sweep_problems(config, specs)
    if problems:
        raise ConfigError(f"{source}: invalid config", sorted(set(problems), key=problems.index))
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
