"""The package's shape (ARCHITECTURE.md): imports flow one way (no module imports one that imports it back, even
lazily inside a function), modules stay small, and every stage folder says what flows in and out."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "harness"
MAX_LINES = 400


def _modules() -> dict[str, Path]:
    mods = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        mods[".".join(parts[:-1] if path.name == "__init__.py" else parts)] = path
    return mods


def _imports(module: str, path: Path, mods: dict[str, Path]) -> set[str]:
    """Every harness module ``module`` imports anywhere in its body (a lazy import is still a dependency). Importing
    one's own parent package does not count: a package's ``__init__`` is where its children are registered."""
    is_pkg = path.name == "__init__.py"
    here = module.split(".")
    out: set[str] = set()
    tree = ast.parse(path.read_text())
    typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If) and _is_type_checking(block.test)
                   for stmt in block.body for n in ast.walk(stmt)}
    for node in ast.walk(tree):
        if id(node) in typing_only:  # `if TYPE_CHECKING:` imports are for annotations, not a runtime dependency
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here if is_pkg else here[:-1]
                base = base[: len(base) - node.level + 1]
                root = ".".join(base + ([node.module] if node.module else []))
            else:
                root = node.module or ""
            names = [root] + [f"{root}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        out |= {n for n in names if n in mods and n != module and not module.startswith(n + ".")}
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def test_no_import_cycles():
    mods = _modules()
    edges = {m: _imports(m, p, mods) for m, p in mods.items()}

    def reachable(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for nxt in edges[todo.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    cycles = sorted({tuple(sorted((a, b))) for a in mods for b in edges[a] if a in reachable(b)})
    assert not cycles, "import cycles: " + "; ".join(f"{a} <-> {b}" for a, b in cycles)


def test_every_stage_folder_says_what_flows_in_and_out():
    for init in sorted(PACKAGE.glob("*/__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        assert len(doc.split()) >= 8, f"{init.relative_to(ROOT)} needs a docstring saying what the stage does"
