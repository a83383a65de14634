"""Composite retrievers: ``hybrid`` fuses child retrievers' rankings on chunk ids; ``reranked`` re-scores a
child's top N with a second stage (late-interaction MaxSim over the bundled MiniLM, or a cross-encoder)."""

from __future__ import annotations

from typing import Any, Iterator, Literal, Sequence

import numpy as np
from pydantic import Field, ValidationError, model_validator

from ..cache import ArrayCache
from ..core.errors import RetrieverError
from ..core.schema import MAX_RANK, Strict, format_validation_error
from .fusion import contributions, normalise  # noqa: F401  (the one copy of the fusion arithmetic)
from ..core.types import Chunk, Hit, Query, RankedList
from .base import REGISTRY, BuildContext, RetrieverKind, build_retriever, register, validate_retriever_config
from .ranking import rank_hits
from .encoders import BUNDLED, Encoder, cross_encoder_problem, load_cross_encoder, model_folder_problems
from .stages import StageList, child_names, child_stages, output_path
from .windows import WindowsConfig, first_rows, window_texts

# Keys a parent reads from a child section; the child's own model never sees them.
CHILD_KEYS = ("weight", "depth")


def parts(retriever: Any) -> Iterator[Any]:
    """``retriever`` and every retriever inside it (a hybrid's children, a reranked child), depth first."""
    todo = [retriever]
    while todo:
        node = todo.pop()
        yield node
        todo += list(getattr(node, "children", []) or []) + ([node.child] if hasattr(node, "child") else [])


def dropped_duplicates(retriever: Any) -> int:
    """The repeated hits ``retriever`` and every retriever inside it dropped before the cut at depth, so far."""
    return sum(int(getattr(node, "duplicates_dropped", 0) or 0) for node in parts(retriever))


def split_child(section: dict) -> tuple[dict, dict]:
    own = {k: v for k, v in section.items() if k not in CHILD_KEYS}
    return own, {k: section[k] for k in CHILD_KEYS if k in section}


class ChildOptions(Strict):
    """What a hybrid reads from each child section besides the child's own settings."""

    weight: float = Field(1.0, ge=0, description="scales the child's contribution to the fused score; 0 mutes it")
    depth: int | None = Field(None, ge=1, le=MAX_RANK, description="hits taken from this child (default: the "
                                                                   "hybrid's depth)")


def child_problems(child: Any, parent_kind: str, prefix: tuple) -> list[str]:
    """Every problem of one child section: its own kind's validation, plus the parent's keys in it."""
    where = ".".join(str(p) for p in prefix)
    if not isinstance(child, dict):
        return [f"{where}: expected a retriever mapping with a 'kind', got {type(child).__name__} {child!r}"[:300]]
    own, extra = split_child(child)
    problems = validate_retriever_config(own, prefix)
    if own.get("on_error") == "skip":
        # A failed request leaves the query absent from the child's answers; inside a composite that absence
        # cannot be reported (the run's request log and absent queries are the top retriever's), so it would be
        # fused or reranked as an empty list, silently.
        problems.append(f"{where}.on_error: skip is not allowed inside a {parent_kind} (a failed request would be "
                        f"scored as an empty answer); use on_error: fail")
    if parent_kind != "hybrid":
        # A reranked child is cut at top_n; a weight or depth there would be silently ignored.
        return problems + [f"{where}.{key}: only a hybrid's children take {key} (a {parent_kind} child is cut at "
                           f"top_n)" for key in extra]
    try:
        ChildOptions.model_validate(extra)
    except ValidationError as exc:
        problems += format_validation_error(exc, ChildOptions, prefix)
    return problems


class Composite:
    """Mixin of the composite kinds' config models: the registry asks it for its children's problems (each child
    validated by its own kind's model, plus the parent's keys in it), so the registry never imports this module."""

    @classmethod
    def nested_problems(cls, section: dict, kind: str, prefix: tuple) -> list[str]:
        problems: list[str] = []
        fields = getattr(cls, "model_fields", {})
        if "children" in fields and isinstance(section.get("children"), list):
            for i, child in enumerate(section["children"]):
                problems += child_problems(child, kind, prefix + ("children", i))
        if "child" in fields and isinstance(section.get("child"), dict):
            problems += child_problems(section["child"], kind, prefix + ("child",))
        return problems


def _child_preflight(child: dict, where: str) -> list[str]:
    own, _ = split_child(child)
    cfg = REGISTRY[own["kind"]].config_model.model_validate(own)
    return cfg.preflight(where) if hasattr(cfg, "preflight") else []


class HybridConfig(Composite, Strict):
    kind: Literal["hybrid"] = "hybrid"
    children: list[dict[str, Any]] = Field(min_length=1)
    """the retrievers fused, each a retriever section; a child may add weight (default 1.0) and depth"""
    fusion: Literal["rrf", "minmax", "zscore"] = "rrf"
    """rrf: sum of weight / (rrf_k + rank); minmax, zscore: weighted sum of the children's normalised scores"""
    rrf_k: float = Field(60, gt=0)
    """RRF's k"""
    depth: int = Field(100, ge=1, le=MAX_RANK, description="hits taken from each child unless the child sets depth")

    def preflight(self, where: str) -> list[str]:
        return [p for i, child in enumerate(self.children) for p in _child_preflight(child, f"{where}.children.{i}")]


def fuse(child_lists: Sequence[RankedList], weights: Sequence[float], how: str, rrf_k: float) -> list[Hit]:
    """Fused hits by descending fused score (ties by chunk id descending), ranks 1..n."""
    fused: dict[str, float] = {}
    meta: dict[str, Hit] = {}
    for ranked, w in zip(child_lists, weights):
        shares = contributions(np.array([h.rank for h in ranked.hits]), np.array([h.score for h in ranked.hits]),
                               how, rrf_k, w).tolist()
        for h, c in zip(ranked.hits, shares):
            fused[h.chunk_id] = fused.get(h.chunk_id, 0.0) + c
            meta.setdefault(h.chunk_id, h)
    return list(rank_hits("", (Hit(cid, m.doc_id, fused[cid], 0, m.start, m.end, m.text)
                               for cid, m in meta.items())).hits)


class HybridRetriever:
    def __init__(self, config: HybridConfig, context: BuildContext):
        self.config = config
        self.children, self.weights, self.depths = [], [], []
        for section in config.children:
            own, extra = split_child(section)
            self.children.append(build_retriever(own, context))
            self.weights.append(float(extra.get("weight", 1.0)))
            self.depths.append(int(extra.get("depth", config.depth)))
        self.names = child_names(split_child(s)[0]["kind"] for s in config.children)
        self._stages: list[list[StageList]] | None = None

    def index(self, chunks: Sequence[Chunk]) -> None:
        for child in self.children:
            child.index(chunks)

    def info(self) -> dict | None:
        """The children's ``retriever_info`` in their order (a dense child's encoder), None when none reports."""
        infos = [child.info() if callable(getattr(child, "info", None)) else None for child in self.children]
        return {"children": infos} if any(infos) else None

    def retrieve(self, queries: Sequence[Query], k: int) -> list[RankedList]:
        per_child = [child.retrieve(queries, max(d, k)) for child, d in zip(self.children, self.depths)]
        out = [RankedList(q.query_id, tuple(fuse([lists[i] for lists in per_child], self.weights,
                                                 self.config.fusion, self.config.rrf_k)[:k]))
               for i, q in enumerate(queries)]
        children = [child_stages(child, name, "hybrid", [r.hits for r in lists], max(d, k))
                    for child, name, lists, d in zip(self.children, self.names, per_child, self.depths)]
        self._stages = []
        for i, ranked in enumerate(out):
            mine = [s for stages in children for s in stages[i]]
            inputs = tuple(output_path(stages[i]) for stages in children)
            self._stages.append(mine + [StageList("hybrid/fusion", "fusion", inputs, k, ranked.hits)])
        return out

    def stage_lists(self) -> list[list[StageList]] | None:
        """Each query's stages of the last ``retrieve`` (``retrievers.stages``): the children's, then the fusion."""
        return self._stages


class StageConfig(Strict):
    type: Literal["late-interaction", "cross-encoder"] = "late-interaction"
    """late-interaction: MaxSim over a model's token embeddings; cross-encoder: a CrossEncoder model folder"""
    model: str = BUNDLED
    """bundled:all-MiniLM-L6-v2, a local model folder, or hub:<name> (needs network)"""
    batch_size: int = Field(32, ge=1)
    """texts per encoding batch"""
    windows: WindowsConfig | None = None
    """late-interaction: encode each chunk as windows of words ({size, overlap}), each behind the chunk's title, and
    score MaxSim over the tokens of all its windows. Default: one text per chunk, truncated at the model's limit"""

    @model_validator(mode="after")
    def _windows_late_interaction(self):
        if self.windows is not None and self.type != "late-interaction":
            raise ValueError("windows: only a late-interaction stage reads windows (a cross-encoder reads each "
                             "(query, chunk) pair whole)")
        return self

    def preflight(self, where: str) -> list[str]:
        problems = model_folder_problems(self.model, f"{where}.model")
        if self.type == "cross-encoder" and not problems:
            problems += [p for p in [cross_encoder_problem(self.model, f"{where}.model")] if p]
        return problems


class RerankedConfig(Composite, Strict):
    kind: Literal["reranked"] = "reranked"
    child: dict[str, Any]
    """the first-stage retriever section"""
    stage: StageConfig = StageConfig()
    """the stage that re-scores the child's top hits"""
    top_n: int = Field(50, ge=1, le=MAX_RANK)
    """how many of the child's hits are re-scored"""
    cache: bool = True
    """cache token embeddings (late interaction), content-addressed"""

    def preflight(self, where: str) -> list[str]:
        return _child_preflight(self.child, f"{where}.child") + self.stage.preflight(f"{where}.stage")


class LateInteraction:
    """ColBERT-style MaxSim: for each query token, its best cosine with any chunk token, summed."""

    def __init__(self, cfg: StageConfig, cache: ArrayCache | None):
        self.cfg = cfg
        self.encoder = Encoder(cfg.model, cache, batch_size=cfg.batch_size)  # loaded on a cache miss only
        self.tokens: list[np.ndarray] = []

    def index(self, chunks: Sequence[Chunk]) -> None:
        if self.cfg.windows is None:
            self.tokens = self.encoder.token_vectors("token_embeddings", [c.index_text for c in chunks])
            return
        # A chunk's windows are consecutive texts, so its tokens are consecutive rows: one view per chunk, no copy.
        texts, owner = window_texts(chunks, self.cfg.windows)
        vectors, bounds = self.encoder.token_matrix("token_embeddings", texts)
        rows = bounds[first_rows(owner)]
        self.tokens = [vectors[rows[i]:rows[i + 1]] for i in range(len(chunks))]

    def score(self, queries: Sequence[str], candidates: Sequence[Sequence[int]],
              chunks: Sequence[Chunk]) -> list[np.ndarray]:
        query_tokens = self.encoder.token_vectors("query_token_embeddings", list(queries))
        return [np.array([float((q @ self.tokens[i].T).max(axis=1).sum()) for i in idx])
                for q, idx in zip(query_tokens, candidates)]


class CrossEncoderStage:
    def __init__(self, cfg: StageConfig, cache):
        self.cfg = cfg
        self.model = load_cross_encoder(cfg.model)

    def index(self, chunks: Sequence[Chunk]) -> None:
        pass

    def score(self, queries: Sequence[str], candidates: Sequence[Sequence[int]],
              chunks: Sequence[Chunk]) -> list[np.ndarray]:
        # All pairs of the batch in one predict call: the model batches across queries.
        pairs = [(q, chunks[i].index_text) for q, idx in zip(queries, candidates) for i in idx]
        flat = np.asarray(self.model.predict(pairs, batch_size=self.cfg.batch_size, show_progress_bar=False),
                          dtype=np.float64).reshape(-1)
        bounds = np.cumsum([0] + [len(idx) for idx in candidates])
        return [flat[bounds[i]:bounds[i + 1]] for i in range(len(candidates))]


class RerankedRetriever:
    def __init__(self, config: RerankedConfig, context: BuildContext):
        self.config = config
        own, _ = split_child(config.child)
        self.child = build_retriever(own, context)
        self.child_name = own["kind"]
        self._stages: list[list[StageList]] | None = None
        cache = ArrayCache(context.cache_dir) if config.cache else None
        stage_cls = LateInteraction if config.stage.type == "late-interaction" else CrossEncoderStage
        self.stage = stage_cls(config.stage, cache)

    def index(self, chunks: Sequence[Chunk]) -> None:
        self.chunks = chunks
        self.position = {c.chunk_id: i for i, c in enumerate(chunks)}
        self.child.index(chunks)
        self.stage.index(chunks)

    def retrieve(self, queries: Sequence[Query], k: int) -> list[RankedList]:
        child_lists = self.child.retrieve(queries, max(self.config.top_n, k))
        heads = [ranked.hits[: self.config.top_n] for ranked in child_lists]
        foreign = [(q.query_id, h.chunk_id) for q, head in zip(queries, heads) for h in head
                   if h.chunk_id not in self.position]
        if foreign:  # the stage scores the corpus's chunks; a span of the child's own has no text here
            raise RetrieverError(f"retriever.child (kind {self.config.child.get('kind')!r}): reranked re-scores "
                                 f"the corpus's chunks, but {len(foreign)} hit(s) name other chunks",
                                 [f"query {q!r}: chunk {c!r}" for q, c in foreign[:20]])
        all_scores = self.stage.score([q.text for q in queries],
                                      [[self.position[h.chunk_id] for h in head] for head in heads], self.chunks)
        out = []
        for q, ranked, head, scores in zip(queries, child_lists, heads, all_scores):
            hits = list(rank_hits(q.query_id, (Hit(h.chunk_id, h.doc_id, float(s), 0, h.start, h.end)
                                               for h, s in zip(head, scores))).hits)
            # Below the reranked head the child's order is kept, scored under the head's lowest score.
            floor = min((h.score for h in hits), default=0.0)
            for h in ranked.hits[self.config.top_n:k]:
                floor = np.nextafter(floor, -np.inf)
                hits.append(Hit(h.chunk_id, h.doc_id, float(floor), len(hits) + 1, h.start, h.end))
            out.append(RankedList(q.query_id, tuple(hits[:k])))
        depth, top_n = max(self.config.top_n, k), self.config.top_n
        child = child_stages(self.child, self.child_name, "reranked", [r.hits for r in child_lists], depth)
        self._stages = [stages + [StageList("reranked/candidates", "candidates", (output_path(stages),), top_n,
                                            tuple(head)),
                                  StageList("reranked/rerank", "rerank", ("reranked/candidates",), k, ranked.hits)]
                        for stages, head, ranked in zip(child, heads, out)]
        return out

    def stage_lists(self) -> list[list[StageList]] | None:
        """Each query's stages of the last ``retrieve`` (``retrievers.stages``): the child's, the candidates cut
        at ``top_n``, the reranked list (the child's order kept below the candidates)."""
        return self._stages


register(RetrieverKind("hybrid", HybridConfig, lambda c, ctx: HybridRetriever(c, ctx),
                       "fusion of child retrievers (rrf, minmax, zscore)"))
register(RetrieverKind("reranked", RerankedConfig, lambda c, ctx: RerankedRetriever(c, ctx),
                       "a child's top N re-scored by late interaction or a cross-encoder"))
