import textwrap

import pytest

from harness.config import load_config
from harness.errors import ConfigError

BASE = """
name: t
corpus: {path: corpus.jsonl}
goldset: {path: gold.jsonl}
retriever: {kind: bm25}
"""


def write(tmp_path, text):
    p = tmp_path / "exp.yaml"
    p.write_text(textwrap.dedent(text))
    return p


def problems_of(tmp_path, text):
    with pytest.raises(ConfigError) as exc:
        load_config(write(tmp_path, text))
    return str(exc.value)


def test_valid_config_resolves_paths_against_its_folder(tmp_path):
    cfg = load_config(write(tmp_path, BASE))
    assert cfg.corpus.path == (tmp_path / "corpus.jsonl").resolve()
    assert cfg.cutoff.k == 5 and cfg.depth == 100
    assert len(cfg.config_hash()) == 16


def test_misspelt_key_names_file_path_and_suggestion(tmp_path):
    msg = problems_of(tmp_path, BASE.replace("retriever: {kind: bm25}", "retriever: {kind: bm25, k_1: 1.2}"))
    assert "exp.yaml" in msg and "retriever.k_1: unknown key; did you mean 'k1'?" in msg


def test_bad_value_names_key_value_and_expectation(tmp_path):
    msg = problems_of(tmp_path, BASE + "cutoff: {k: -3}\n")
    assert "cutoff.k" in msg and "-3" in msg and "greater than or equal to 1" in msg


def test_unknown_kind_lists_registered_kinds(tmp_path):
    msg = problems_of(tmp_path, BASE.replace("kind: bm25", "kind: bm99"))
    assert "retriever.kind: unknown retriever kind 'bm99'; registered kinds: bm25" in msg


def test_all_problems_reported_together(tmp_path):
    msg = problems_of(tmp_path, BASE.replace("kind: bm25", "kind: bm25, b: 7") + "depth: 0\nchunkin: {}\n"
                      + "metrics: [P@5, nope@3]\n")
    for fragment in ("retriever.b", "depth", "chunkin: unknown key; did you mean 'chunking'?", "nope"):
        assert fragment in msg


def test_env_interpolation_and_missing_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("DATA", str(tmp_path / "data"))
    cfg = load_config(write(tmp_path, BASE.replace("corpus.jsonl", "\"${DATA}/c.jsonl\"")))
    assert str(cfg.corpus.path) == str(tmp_path / "data" / "c.jsonl")
    msg = problems_of(tmp_path, BASE.replace("corpus.jsonl", "\"${NOT_SET_ANYWHERE}/c.jsonl\""))
    assert "corpus.path: environment variable ${NOT_SET_ANYWHERE} is not set" in msg


def test_yaml_syntax_error_names_line(tmp_path):
    assert "line" in problems_of(tmp_path, "name: [unclosed\n")


def test_cutoff_needs_exactly_one_of_k_or_budget(tmp_path):
    assert "exactly one of k or token_budget" in problems_of(tmp_path, BASE + "cutoff: {k: 3, token_budget: 100}\n")
