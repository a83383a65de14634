"""harness: evaluate RAG retrievers with numbers you can trust, and say why they fail.

The Python API (docs/python-api.md): ``load_config``, ``run``, ``evaluate``, ``compare``, ``fuse``, ``gate``,
``register_retriever`` and the types ``Qrels``, ``Run``, ``Result``, ``MetricTable``, ``HarnessError``.
``import harness`` loads none of numpy, pydantic, pandas or torch: the types are imported when first named, and
each function imports what it calls.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

from .core.errors import HarnessError, InputError  # noqa: E402

# name -> (module, attribute): imported on first use (PEP 562), so `import harness` stays light (the console
# script imports this package before it can install its Ctrl-C handling: the less here, the shorter that window).
_LAZY = {
    **{name: ("harness.api", name) for name in ("Comparison", "GateOutcome", "compare", "evaluate", "fuse", "gate",
                                                "load_config", "run")},
    "register_retriever": ("harness.retrievers.base", "register_retriever"),
    "Qrels": ("harness.core.runtable", "Qrels"),
    "Run": ("harness.core.runtable", "Run"),  # the columnar run
    "ColumnarRun": ("harness.core.runtable", "Run"),  # Run's older name, kept for code that imports it
    "Result": ("harness.result.model", "Result"),  # the results.json schema; what run() returns
    "MetricTable": ("harness.metrics.engine", "MetricTable"),
    "MetricSpec": ("harness.metrics.spec", "MetricSpec"),
    "parse_metric": ("harness.metrics.spec", "parse_metric"),
}

if TYPE_CHECKING:
    from .api import Comparison, GateOutcome, compare, evaluate, fuse, gate, load_config, run
    from .result.model import Result
    from .core.runtable import Run, Qrels
    from .core.runtable import Run as ColumnarRun
    from .metrics.engine import MetricTable
    from .metrics.spec import MetricSpec, parse_metric

__all__ = ["__version__", "load_config", "run", "evaluate", "compare", "fuse", "gate", "register_retriever",
           "Qrels", "Run", "ColumnarRun", "Result", "MetricTable", "Comparison", "GateOutcome", "HarnessError",
           "InputError", "MetricSpec", "parse_metric"]


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    module, attribute = _LAZY[name]
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value  # once imported, an ordinary attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
