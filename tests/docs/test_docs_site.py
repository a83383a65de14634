"""The documentation site builds, and its config reference cannot drift from the schema.

The reference is generated from the pydantic models when the site is built (tools/docs_reference.py). The fields
it must list are found here another way, from each model's JSON schema, so a field the generator's walk misses
(a new section, a kind registered later, a nested model) fails a test by name.
"""

from __future__ import annotations

import html
import importlib.util
import os
import re
import subprocess
import sys

import pytest

from clihelp import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import docs_reference  # noqa: E402


def _schema_keys(schema: dict, defs: dict, prefix: str = "") -> dict[str, dict]:
    """{dotted key: its JSON-schema property} for every property, nested objects flattened (through $ref and the
    anyOf of an optional section)."""
    keys = {}
    for name, prop in schema.get("properties", {}).items():
        key = f"{prefix}{name}"
        keys[key] = {**prop, "required_here": name in schema.get("required", ())}
        for option in [prop, *prop.get("anyOf", [])]:
            ref = option.get("$ref")
            if ref:
                keys.update(_schema_keys(defs[ref.split("/")[-1]], defs, f"{key}."))
    return keys


def _keys_of(model) -> dict[str, dict]:
    schema = model.model_json_schema()
    return _schema_keys(schema, schema.get("$defs", {}))


def _enum(prop: dict) -> list:
    values = list(prop.get("enum", [])) + ([prop["const"]] if "const" in prop else [])
    for option in prop.get("anyOf", []):
        values += _enum(option)
    return values


def expected_rows() -> dict[str, dict]:
    """Every key a config accepts, by the path the reference names it with."""
    from harness.config.schema import ExperimentConfig
    from harness.retrievers import REGISTRY, kinds

    keys = _keys_of(ExperimentConfig)
    for kind in kinds():
        keys.update({f"[{kind}] retriever.{k}": v for k, v in _keys_of(REGISTRY[kind].config_model).items()})
    return keys


def reference_rows(page: str) -> dict[str, str]:
    """{key (with its kind, under a kind's heading): its table row} of the generated config reference."""
    rows, kind = {}, None
    for line in page.splitlines():
        heading = re.match(r"^### `([^`]+)`$", line)
        if heading:
            kind = heading[1]
        cell = re.match(r"^\| `([^`]+)` \|", line)
        if cell:
            rows[f"[{kind}] {cell[1]}" if cell[1].startswith("retriever.") and kind else cell[1]] = line
    return rows


def test_the_config_reference_lists_every_schema_field_with_its_choices_and_default():
    page = docs_reference.config_reference()
    rows = reference_rows(page)
    expected = expected_rows()
    assert len(expected) > 200  # the walk itself: every kind's keys, not an empty schema
    missing = sorted(set(expected) - set(rows))
    assert not missing, f"the config reference lacks {missing}"
    for key, prop in expected.items():
        row = rows[key]
        for choice in _enum(prop):
            if choice is not None and not key.endswith(".kind"):
                assert f"`{choice}`" in row, (key, choice, row)
        default = prop.get("default")
        if isinstance(default, bool):
            assert f"`{str(default).lower()}`" in row, (key, row)
        elif isinstance(default, (int, float, str)) and default != "":
            assert f"`{default}`" in row, (key, default, row)
        # required within its own section (a nested section's keys are required only when the section is given)
        assert (" | required | " in row) == prop["required_here"], (key, row)


def test_a_kind_registered_later_is_in_the_reference(monkeypatch):
    """The reference reads the registry when it is built: a plugin's kind and its keys show up by themselves."""
    from typing import Literal

    from pydantic import BaseModel, Field

    from harness.retrievers import base

    class EchoConfig(BaseModel):
        kind: Literal["echo-docs-test"] = "echo-docs-test"
        loudness: Literal["soft", "loud"] = Field("soft", description="how loud the echo is")

    monkeypatch.setitem(base.REGISTRY, "echo-docs-test",
                        base.RetrieverKind("echo-docs-test", EchoConfig, lambda c, ctx: None, "an echo"))
    rows = reference_rows(docs_reference.config_reference())
    row = rows["[echo-docs-test] retriever.loudness"]
    assert "`soft`, `loud`" in row and "how loud the echo is" in row and "| `soft` |" in row


def test_every_field_says_what_it_does():
    """Each key's description (its docstring or ``Field(description=...)``) reaches its row: the reference is where
    a newcomer reads what a key does, so a field added without one fails here by name."""
    rows = reference_rows(docs_reference.config_reference())
    silent = []
    for key, prop in expected_rows().items():
        text = prop.get("description")
        if text:
            shown = html.escape(" ".join(text.split()), quote=False).replace("|", "\\|")  # <name> is text, not a tag
            assert shown in rows[key], (key, rows[key])
        elif not key.endswith("] retriever.kind"):  # a kind's own kind field: "selects this retriever kind"
            silent.append(key)
    assert not silent, f"config keys without a description: {silent}"


@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None,
                    reason="mkdocs-material is not installed (pip install 'rag-harness[docs]')")
def test_the_site_builds_strict(tmp_path):
    """`make docs` as CI would run it: a broken link, a missing anchor or a page outside the nav fails the build."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    config = (tmp_path / "site" / "reference" / "config" / "index.html").read_text(encoding="utf-8")
    assert "retriever.hnsw.efSearch" in config and "executor.num_gpus_per_worker" in config
    commands = (tmp_path / "site" / "reference" / "commands" / "index.html").read_text(encoding="utf-8")
    assert "harness goldset build" in commands and "--unresolved" in commands
    assert not list(ROOT.glob("docs/reference/*.md")), "the generated pages are never written into docs/"


def test_the_annotated_config_of_the_docs_is_valid():
    """docs/retrievers.md's annotated config names real keys with valid values (read as if it sat in configs/)."""
    import yaml

    from harness.config.schema import parse_config

    page = (ROOT / "docs" / "retrievers.md").read_text(encoding="utf-8")
    block = re.search(r"^## A config, annotated\n\n```yaml\n(.*?)^```", page, flags=re.M | re.S)
    assert block, "docs/retrievers.md has no annotated config"
    config = parse_config(yaml.safe_load(block.group(1)), "docs/retrievers.md", ROOT / "configs")
    assert config.retriever["kind"] == "bm25" and config.cutoff.k == 5 and config.chunking.strategy == "sentences"
