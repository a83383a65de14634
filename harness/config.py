"""Experiment configs: YAML -> frozen pydantic models, with errors that name the file, key path and expectation.

Relative paths resolve against the config file's folder; ``${VAR}`` is replaced from the environment.
Retriever sections are validated by the model their ``kind`` registered (see ``harness.retrievers``).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .errors import ConfigError, MetricError
from .metricspec import DEFAULT_METRICS, parse_metrics


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CorpusConfig(Strict):
    path: Path
    format: Literal["jsonl", "folder", "beir"] = "jsonl"


class ChunkingConfig(Strict):
    strategy: Literal["none", "tokens", "sentences", "paragraphs"] = "none"
    size: int = Field(200, ge=1, description="words/tokens per chunk (tokens) or sentences/paragraphs per chunk")
    overlap: int = Field(0, ge=0)
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


class GoldsetConfig(Strict):
    path: Path
    format: Literal["native", "beir", "trec"] = "native"
    split: str = "test"
    queries: Path | None = Field(None, description="trec format: the queries TSV (id<TAB>text)")
    evidence: Path | None = Field(None, description="beir format: optional evidence JSONL (SciFact style)")


class CutoffConfig(Strict):
    k: int | None = Field(None, ge=1)
    token_budget: int | None = Field(None, ge=1)
    tokenizer: str = "words"

    @model_validator(mode="after")
    def _one(self) -> "CutoffConfig":
        if (self.k is None) == (self.token_budget is None):
            raise ValueError("give exactly one of k or token_budget")
        return self

    def describe(self) -> str:
        return f"k={self.k}" if self.k else f"token_budget={self.token_budget} ({self.tokenizer})"


class EvaluationConfig(Strict):
    query_policy: Literal["exclude", "zero"] = "exclude"
    order: Literal["score", "rank"] = "score"


class DiagnosticsConfig(Strict):
    buried_after: int = Field(3, ge=1)
    edge: int = Field(2, ge=0)
    middle_min_window: int = Field(6, ge=1)
    noisy_below: float = Field(0.2, ge=0, le=1)
    near_cutoff: int = Field(10, ge=1, description="beyond_cutoff ranks up to this count as 'just past'")
    on_gold_error: Literal["flag", "fail"] = "flag"


class ExperimentConfig(Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
    corpus: CorpusConfig
    chunking: ChunkingConfig = ChunkingConfig()
    goldset: GoldsetConfig
    retriever: dict[str, Any]
    cutoff: CutoffConfig = CutoffConfig(k=5)
    depth: int = Field(100, ge=1)
    metrics: tuple[str, ...] = DEFAULT_METRICS
    evaluation: EvaluationConfig = EvaluationConfig()
    diagnostics: DiagnosticsConfig = DiagnosticsConfig()
    output: Path | None = None
    batch_size: int = Field(256, ge=1)
    sweep: dict[str, list[Any]] | None = None

    def output_dir(self) -> Path:
        return self.output or Path("reports") / self.name

    def resolved(self) -> dict:
        """JSON-ready resolved config (paths absolute, defaults filled)."""
        return json.loads(self.model_dump_json())

    def config_hash(self) -> str:
        data = self.resolved()
        data.pop("output", None)
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


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


def _model_at(model: type[BaseModel], loc: tuple) -> type[BaseModel] | None:
    """The pydantic model that owns the last key of ``loc`` (for suggesting a near key)."""
    current: Any = model
    for part in loc[:-1]:
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return None
        field = current.model_fields.get(str(part))
        if field is None:
            return None
        current = field.annotation
        args = getattr(current, "__args__", ())
        for a in args:
            if isinstance(a, type) and issubclass(a, BaseModel):
                current = a
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def format_validation_error(exc: ValidationError, model: type[BaseModel], prefix: tuple = ()) -> list[str]:
    problems = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        path = ".".join(str(p) for p in prefix + loc) or "<root>"
        if err["type"] == "extra_forbidden":
            owner = _model_at(model, loc)
            hint = ""
            if owner is not None:
                near = difflib.get_close_matches(str(loc[-1]), list(owner.model_fields), n=1, cutoff=0.6)
                valid = ", ".join(sorted(owner.model_fields))
                hint = f"; did you mean '{near[0]}'?" if near else f"; valid keys: {valid}"
            problems.append(f"{path}: unknown key{hint}")
            continue
        msg = err["msg"]
        if err["type"] == "missing":
            problems.append(f"{path}: required key is missing")
            continue
        got = err.get("input")
        got_text = "" if isinstance(got, dict) else f" (got {got!r})"
        problems.append(f"{path}: {msg}{got_text}")
    return problems


def _resolve_paths(data: dict, base: Path) -> None:
    def fix(section: dict | None, key: str) -> None:
        if isinstance(section, dict) and isinstance(section.get(key), str):
            p = Path(section[key]).expanduser()
            section[key] = str(p if p.is_absolute() else (base / p).resolve())
    fix(data.get("corpus"), "path")
    fix(data.get("goldset"), "path")
    fix(data.get("goldset"), "queries")
    fix(data.get("goldset"), "evidence")
    fix(data.get("chunking"), "tokenizer")
    cutoff = data.get("cutoff")
    if isinstance(cutoff, dict) and isinstance(cutoff.get("tokenizer"), str) and cutoff["tokenizer"] != "words":
        fix(cutoff, "tokenizer")
    if isinstance(data.get("output"), str):
        fix(data, "output")

    def fix_retriever(node: Any) -> None:
        if not isinstance(node, dict):
            return
        for key in ("path", "model"):
            value = node.get(key)
            if not isinstance(value, str) or ":" in value.split("/")[0]:
                continue  # bundled:..., hub:... and URLs are names, not paths
            # a model is a path only when it looks like one; 'path' always is
            if key == "path" or value.startswith((".", "/", "~")):
                p = Path(value).expanduser()
                node[key] = str(p if p.is_absolute() else (base / p).resolve())
        stage = node.get("stage")
        if isinstance(stage, dict) and isinstance(stage.get("model"), str) and stage["model"].startswith((".", "/", "~")):
            p = Path(stage["model"]).expanduser()
            stage["model"] = str(p if p.is_absolute() else (base / p).resolve())
        for child in node.get("children", []) or []:
            fix_retriever(child)
        fix_retriever(node.get("child"))
    fix_retriever(data.get("retriever"))


def parse_config(data: Any, source: str = "<config>", base: Path | None = None) -> ExperimentConfig:
    """Validate a config mapping; every problem is reported in one ConfigError."""
    from .retrievers import validate_retriever_config

    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the config must be a mapping of keys, got {type(data).__name__}")
    problems: list[str] = []
    data = _interpolate(data, "", problems)
    _resolve_paths(data, base or Path.cwd())
    config = None
    try:
        config = ExperimentConfig.model_validate(data)
    except ValidationError as exc:
        problems += format_validation_error(exc, ExperimentConfig)
    if isinstance(data.get("retriever"), dict):
        problems += validate_retriever_config(data["retriever"], ("retriever",))
    elif "retriever" in data:
        problems.append("retriever: expected a mapping with a 'kind'")
    if isinstance(data.get("metrics"), list):
        try:
            parse_metrics([str(m) for m in data["metrics"]])
        except MetricError as exc:
            problems += [f"metrics: {p}" for p in exc.problems]
    if problems:
        raise ConfigError(f"{source}: invalid config", sorted(set(problems), key=problems.index))
    assert config is not None
    return config


def load_config(path: str | Path) -> ExperimentConfig:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: config file not found")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise ConfigError(f"{path}{where}: not valid YAML: {getattr(exc, 'problem', exc)}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    return parse_config(data, str(path), path.parent.resolve())
