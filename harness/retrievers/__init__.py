"""Retrievers: the protocol, the registry of kinds and ``build_retriever`` (all in ``base``), and the built-in
kinds (bm25, dense, hybrid, reranked, external), each registered by its own module."""

from __future__ import annotations

from .base import (REGISTRY, BuildContext, HitPlacer, HitProblem, Retriever, RetrieverKind, build_retriever,
                   check_output, kinds, parse_retriever_config, register, register_retriever,
                   validate_retriever_config)
from .ranking import rank_hits

__all__ = ["REGISTRY", "BuildContext", "HitPlacer", "HitProblem", "Retriever", "RetrieverKind", "build_retriever",
           "check_output", "kinds", "parse_retriever_config", "rank_hits", "register", "register_retriever",
           "validate_retriever_config"]
