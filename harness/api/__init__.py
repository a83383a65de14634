"""The Python API: thin functions over the library, the names a notebook needs (``harness.run``, ``evaluate``,
``compare``, ``fuse``, ``gate``...). Each takes what a caller has at hand (a path, a loaded object, a dict, a pandas
DataFrame), turns it into the library's types with located errors, and calls the same code as the CLI.

Nothing heavy is imported here at module level: ``import harness`` stays light, and each function imports what it
calls. A wrong argument is a HarnessError naming the argument and what was expected, never an AttributeError or
KeyError from deep inside.

``run`` returns the typed ``Result`` (result/model), ``compare`` the typed ``Comparison`` and ``gate`` the typed
``GateOutcome`` (core/outcomes), each with its Markdown (and JUnit) rendering as methods for notebooks.
"""

from .decisions import Comparison, GateOutcome, compare, gate
from .evaluation import evaluate, fuse
from .runs import load_config, run

__all__ = ["load_config", "run", "evaluate", "fuse", "compare", "gate", "Comparison", "GateOutcome"]
