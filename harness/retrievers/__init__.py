"""Retrievers: the protocol, the registry of kinds and ``build_retriever`` (``base``), what their output must be
(``contract``), and the built-in kinds (bm25, dense, hybrid, reranked, external), each registered by its module."""

from __future__ import annotations

from types import MappingProxyType

from . import base as _base
from .base import (BuildContext, Retriever, RetrieverKind, build_retriever, kinds, parse_retriever_config,
                   register, register_retriever, validate_retriever_config)
from .contract import HitPlacer, HitProblem, check_output
from .ranking import rank_hits

# Read-only for readers outside this package: kinds are added through register/register_retriever alone (base), so
# a stray write cannot put an unchecked kind in the one registry the whole process shares.
REGISTRY = MappingProxyType(_base.REGISTRY)

__all__ = ["REGISTRY", "BuildContext", "HitPlacer", "HitProblem", "Retriever", "RetrieverKind", "build_retriever",
           "check_output", "kinds", "parse_retriever_config", "rank_hits", "register", "register_retriever",
           "validate_retriever_config"]
