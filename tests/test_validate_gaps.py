"""Where `harness validate` said ok and `run` then exited 2 (a review, 2026-12): a retriever's optional extra not
installed, an external run's hits that name no chunk of the corpus; and a TREC qrels file read as a native golden
set, which gave one "not valid JSON" line per row. validate makes run's checks through the same function
(``check_before_retrieval``), so each case checks that both say the same lines."""

from __future__ import annotations

import sys

import pytest

from clihelp import ROOT, assert_input_error, demo_config, harness
from conftest import require_installed

CONFIGS = ROOT / "configs"


def _errors(proc) -> list[str]:
    """The error lines of a command (warnings and progress aside)."""
    lines = proc.stderr.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("error:"))
    return [line for line in lines[start:] if line.strip()]


# ---- 1. a backend's optional extra is not installed ------------------------------------------------------------

def _missing(monkeypatch, *modules: str) -> None:
    for name in modules:  # `import name` raises ImportError, installed or not
        monkeypatch.setitem(sys.modules, name, None)


@pytest.mark.parametrize("config, module, extra", [("demo-qdrant.yaml", "qdrant_client", "qdrant"),
                                                   ("demo-lancedb.yaml", "lancedb", "lancedb"),
                                                   ("demo-pgvector.yaml", "psycopg", "pgvector")])
def test_validate_names_a_missing_backend_extra_in_runs_words(tmp_path, monkeypatch, config, module, extra):
    _missing(monkeypatch, module)
    checked = harness("validate", CONFIGS / config)
    assert_input_error(checked, f"needs {module}: pip install 'rag-harness[{extra}]'")
    ran = harness("run", CONFIGS / config, "--out", tmp_path / "out", "-q")
    assert_input_error(ran)
    assert _errors(checked) == _errors(ran) == [f"error: retriever.kind {extra}: needs {module}: pip install "
                                                f"'rag-harness[{extra}]'"]
    assert not (tmp_path / "out").exists()  # said before any work


def test_a_hybrids_children_missing_extras_are_each_one_line(tmp_path, monkeypatch):
    _missing(monkeypatch, "tantivy", "faiss")
    cfg = demo_config(tmp_path, retriever="{kind: hybrid, children: [{kind: tantivy}, {kind: dense, weight: 0.5}, "
                                          "{kind: tantivy, tokenizer: default}]}")
    proc = harness("validate", cfg)
    assert_input_error(proc, "pip install 'rag-harness[tantivy]'", "dense retrieval needs faiss-cpu")
    assert sum("rag-harness[tantivy]" in line for line in _errors(proc)) == 1  # two tantivy children, one line


def test_a_pgvector_server_given_by_dsn_does_not_need_pgserver(tmp_path, monkeypatch):
    require_installed("psycopg")
    require_installed("pgvector")
    _missing(monkeypatch, "pgserver")
    monkeypatch.setenv("PG_DSN", "postgresql://nobody@127.0.0.1:1/none")  # validate connects to nothing
    proc = harness("validate", CONFIGS / "demo-pgvector.yaml", "--set", "retriever.dsn_env=PG_DSN")
    assert proc.returncode == 0, proc.stderr
    assert_input_error(harness("validate", CONFIGS / "demo-pgvector.yaml"), "needs pgserver")
