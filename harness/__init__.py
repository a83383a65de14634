"""harness: evaluate RAG retrievers with numbers you can trust, and say why they fail.

Only light names are re-exported; heavy libraries load when a retriever that needs them is built.
"""

__version__ = "0.1.0"

from .metrics.spec import MetricSpec, parse_metric  # noqa: E402
from .metrics.engine import MetricTable, evaluate  # noqa: E402
from .core.runtable import ColumnarRun, Qrels  # noqa: E402
from .retrievers.base import register_retriever  # noqa: E402

__all__ = ["__version__", "MetricSpec", "parse_metric", "MetricTable", "evaluate", "ColumnarRun", "Qrels",
           "register_retriever"]
