import textwrap

import pytest

from harness.config.schema import load_config
from harness.core.errors import ConfigError

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


def test_duplicate_keys_name_both_lines_and_the_key_path(tmp_path):
    msg = problems_of(tmp_path, BASE + "retriever: {kind: bm25, b: 0.5}\ndepth: 50\ndepth: 60\n")
    assert "exp.yaml:8: depth: key given twice (first on line 7)" in msg
    assert "exp.yaml:6: retriever: key given twice (first on line 5)" in msg


def test_alias_bomb_and_recursive_alias_are_refused(tmp_path):
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{n}: &{n} [{', '.join([f'*{p}'] * 10)}]\n" for p, n in zip("abcdefgh", "bcdefghi"))
    assert "alias bomb" in problems_of(tmp_path, BASE + bomb)
    assert "recursive alias" in problems_of(tmp_path, BASE + "sweep: &s {a: [*s]}\n")


def test_plain_anchors_still_work(tmp_path):
    cfg = load_config(write(tmp_path, BASE.replace("{kind: bm25}", "{kind: hybrid, children: [{kind: bm25, tokenizer: "
                                                   "&tok {stopwords: english}}, {kind: bm25, tokenizer: *tok, b: 0.3}]}")))
    assert [c["tokenizer"] for c in cfg.retriever["children"]] == [{"stopwords": "english"}] * 2


def test_depth_must_cover_every_cutoff(tmp_path):
    msg = problems_of(tmp_path, BASE + "depth: 3\nmetrics: [ndcg@10, precision@5, ap]\ncutoff: {k: 4}\n")
    assert ("depth: 3 hits per query are fewer than ndcg@10, precision@5, cutoff.k (4) need; set depth: 10 or more"
            in msg)
    cfg = load_config(write(tmp_path, BASE + "depth: 10\nmetrics: [ndcg@10, ap, rprec]\n"))
    assert cfg.depth == 10  # metrics without a cutoff are over the depth by design


def test_rank_settings_have_one_documented_upper_bound(tmp_path):
    from harness.config.schema import MAX_RANK

    msg = problems_of(tmp_path, BASE.replace("kind: bm25", "kind: hybrid, depth: 2000000, children: [{kind: bm25, "
                                             "depth: 2000000}]") + f"depth: {MAX_RANK + 1}\n")
    for key in ("retriever.depth", "retriever.children.0.depth", "depth"):
        assert f"{key}: Input should be less than or equal to {MAX_RANK}" in msg
    assert load_config(write(tmp_path, BASE + f"depth: {MAX_RANK}\ncutoff: {{k: {MAX_RANK}}}\n")).depth == MAX_RANK


def test_metric_parameter_given_twice_and_inf_floats(tmp_path):
    msg = problems_of(tmp_path, BASE.replace("kind: bm25", "kind: bm25, k1: .inf")
                      + "metrics: ['ndcg(gain=exp,gain=linear)@10']\n")
    assert "metric 'ndcg(gain=exp,gain=linear)@10': parameter 'gain' is given twice" in msg
    assert "retriever.k1: Input should be a finite number" in msg


def test_bad_token_pattern_is_a_config_error_and_analyzer_checks_when_built(tmp_path):
    from harness.text.analysis import Analyzer

    msg = problems_of(tmp_path, BASE.replace("kind: bm25", "kind: bm25, tokenizer: {pattern: '[a-'}"))
    assert "retriever.tokenizer.pattern: not a valid regular expression: unterminated character set" in msg
    with pytest.raises(ConfigError, match="pattern '\\(': not a valid regular expression"):
        Analyzer(pattern="(")
