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


# The stages in flow order (ARCHITECTURE.md): a module imports only from its own folder and earlier ones. ``api``
# is the one orchestration over every stage (harness.run, evaluate, compare, gate) and the CLI's commands call it;
# the top-level modules (cache, __init__, __main__) are outside the order: cache is a service any stage may use.
STAGES = ("core", "io", "config", "text", "gold", "retrievers", "executors", "hits", "metrics", "diagnostics",
          "result", "pipeline", "stats", "render", "api", "cli")

# Each exception is an import that reaches a later stage, with the reason it is allowed. Keep the list short: a new
# entry needs a reason a reviewer accepts, and one that no longer happens is removed (test below).
ALLOWED_LATER = {
    ("harness.core.textcolumns", "harness.io.packed_ids"):
        "ids given in memory are coded as the fast run reader codes them (packed uint64 keys, sorted as the ids); "
        "packed_ids depends on nothing, so the run's types stay below io",
    ("harness.io.documents", "harness.config.schema"):
        "a corpus is read as its config says (CorpusConfig: format, fields, limits); the config model is its input",
    ("harness.config.schema", "harness.retrievers"):
        "retriever kinds are validated against the registry, so the choices listed are the registered ones",
    ("harness.config.schema", "harness.metrics.spec"):
        "metric names are parsed when the config is read, so a typo is a located config error",
    ("harness.config.grid", "harness.metrics.spec"):
        "a sweep over depth without metrics: scores the default metrics at its smallest depth (metrics.spec's defaults)",
    ("harness.config.paths", "harness.text.stopwords"):
        "a stopwords value is a file path (resolved from the config's folder) unless it names a built-in list",
    ("harness.gold.rank", "harness.retrievers"):
        "goldset build places an ambiguous answer by ranking its candidate passages with the project's own BM25",
    ("harness.gold.resolve", "harness.hits.levelgrades"):
        "a resolved golden set hands its judgments to the run as the columns the hits are judged against",
    ("harness.gold.pool", "harness.result.model"):
        "the golden set's lifecycle (pool) reads saved results.json files: it runs after a run, as compare does",
    ("harness.gold.stats", "harness.result"):
        "goldset stats reads saved results.json files to show a run's spread: after a run, as compare does",
    ("harness.gold.stats", "harness.result.model"): "as above",
    ("harness.gold.stats", "harness.result.querycolumns"): "as above",
    ("harness.retrievers.contract", "harness.hits.table"):
        "the hit contract places a retriever's hits straight into the run's columnar hit table",
    ("harness.executors.retrieval", "harness.hits.table"):
        "the retrieval loop collects every batch's placed hits into the hit table",
    ("harness.executors.local", "harness.result.run_records"):
        "an executor reports where and how it ran as the results.json record of that (ExecutorRecord)",
    ("harness.executors.ray", "harness.result.run_records"): "as above",
    ("harness.hits.parquet", "harness.result.records"):
        "hits.parquet's rows are read back as the results.json hit records (HitRecord), one schema for both",
    ("harness.diagnostics.verdicts", "harness.result.model"):
        "verdicts are built as the results.json Verdict records; their schema is the Result's",
    ("harness.diagnostics.geometry", "harness.result.model"):
        "the evidence-geometry advice is built as its results.json record, as verdicts are",
    ("harness.diagnostics.verdicts", "harness.result.querystore"):
        "a large run's per-query records are spooled; diagnostics reads them through the store",
    ("harness.pipeline.prepare", "harness.stats.gates"):
        "validate and run check gate rules (--rules) against the config's metrics before any retrieval",
    ("harness.pipeline.sweep", "harness.stats.compare"):
        "a sweep's leaderboard marks the runs tied with the best by the paired test of compare",
    ("harness.pipeline.sweep", "harness.render.outputs"):
        "a sweep writes each point's outputs as it finishes, so memory holds one point at a time",
    ("harness.pipeline.sweep", "harness.render.sweep"): "as above: the leaderboard is written when the points are",
    ("harness.pipeline.sweep", "harness.render.html"): "as above",
    ("harness.pipeline.sweep", "harness.render.plots"): "as above",
}


def _stage(module: str) -> int | None:
    parts = module.split(".")
    return STAGES.index(parts[1]) if len(parts) > 1 and parts[1] in STAGES else None


def _later_imports() -> set[tuple[str, str]]:
    mods = _modules()
    found = set()
    for module, path in mods.items():
        here = _stage(module)
        if here is None:
            continue
        for target in _imports(module, path, mods):
            there = _stage(target)
            if there is not None and there > here:
                found.add((module, target))
    return found


def test_no_module_imports_a_later_stage():
    later = _later_imports() - set(ALLOWED_LATER)
    assert not later, "imports against the stage order (" + " -> ".join(STAGES) + "): " + "; ".join(
        f"{a} imports {b}" for a, b in sorted(later))


def test_every_allowed_exception_still_happens():
    stale = set(ALLOWED_LATER) - _later_imports()
    assert not stale, "exceptions no import needs any more (remove them): " + "; ".join(
        f"{a} -> {b}" for a, b in sorted(stale))


def test_every_stage_is_a_folder_and_every_folder_a_stage():
    folders = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert folders == set(STAGES), f"folders not in the stage order: {sorted(folders - set(STAGES))}; " \
                                   f"stages without a folder: {sorted(set(STAGES) - folders)}"


def test_modules_stay_small():
    big = {str(p.relative_to(ROOT)): n for p in PACKAGE.rglob("*.py")
           if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not big, f"modules over {MAX_LINES} lines (split by concept): {big}"
