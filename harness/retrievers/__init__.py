"""Retrievers: the protocol, the registry of kinds and ``build_retriever`` (``base``), what their output must be
(``contract``), and the built-in kinds (bm25, dense, hybrid, reranked, external), each registered by its module."""

from __future__ import annotations

from .base import (REGISTRY, BuildContext, Retriever, RetrieverKind, build_retriever, kinds, parse_retriever_config,
                   register, register_retriever, validate_retriever_config)
from .contract import HitPlacer, HitProblem, check_output
from .ranking import rank_hits

__all__ = ["REGISTRY", "BuildContext", "HitPlacer", "HitProblem", "Retriever", "RetrieverKind", "build_retriever",
           "check_output", "kinds", "parse_retriever_config", "rank_hits", "register", "register_retriever",
           "validate_retriever_config"]
