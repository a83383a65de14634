"""Configs that cannot crash or explode, and ``validate`` = ``run`` minus the retrieval.

Every bad-input row runs through the CLI twice, as ``validate`` and as ``run``: both must exit 2 with a located
message (file and key path), no traceback, the output folder untouched, and the same error text.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import time

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clihelp import DEMO, ROOT, Case, demo_config, harness, run_case
from harness.config.schema import MAX_RANK, ExperimentConfig, load_config
from harness.core.errors import ConfigError, HarnessError, InputError
from harness.io.safeyaml import MAX_ALIAS_NODES, parse_yaml

BOMB = "".join(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 10))
BOMB = "l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + BOMB  # 9^10 values from ~600 bytes


def raw(text: str):
    """A config written verbatim (for YAML-level problems demo_config cannot express)."""
    def setup(tmp):
        (tmp / "cfg.yaml").write_text(text.format(demo=DEMO))
        return ["cfg.yaml"]
    return setup


def cfg(**overrides):
    def setup(tmp):
        demo_config(tmp, **overrides)
        return ["cfg.yaml"]
    return setup


def with_files(files: dict[str, str | bytes], **overrides):
    """Extra files in the temp folder (a tokenizer, a model folder), then a demo config with ``overrides``."""
    def setup(tmp):
        for rel, content in files.items():
            path = tmp / rel
            if rel.endswith("/"):
                path.mkdir(parents=True)
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content if isinstance(content, bytes) else content.encode())
        demo_config(tmp, **{k: v.format(tmp=tmp) for k, v in overrides.items()})
        return ["cfg.yaml"]
    return setup


BASE = "name: t\ncorpus: {{path: {demo}/corpus.jsonl}}\ngoldset: {{path: {demo}/goldset.jsonl}}\n"
HYBRID = "{kind: hybrid, children: [{kind: bm25, weight: %s}, {kind: bm25, depth: %s}]}"

# setup(tmp) returns the arguments after the command; the test runs each row as validate and as run.
CASES = [
    Case("alias-bomb", raw(BOMB), ("cfg.yaml", "alias bomb", f"{MAX_ALIAS_NODES:,}")),
    Case("alias-bomb-inside-config", raw(BASE + "retriever: {{kind: bm25}}\n" + BOMB),
         ("cfg.yaml", "alias bomb")),
    Case("recursive-alias", raw("a: &x [*x]\n"), ("cfg.yaml (line 1)", "recursive alias")),
    Case("recursive-alias-in-mapping", raw(BASE + "retriever: &r {{kind: bm25, child: *r}}\n"),
         ("cfg.yaml (line 4)", "recursive alias")),
    Case("duplicate-top-level-key", raw(BASE + "retriever: {{kind: bm25}}\nname: u\n"),
         ("cfg.yaml:5: name: key given twice (first on line 1)",)),
    Case("duplicate-nested-key", raw(BASE + "retriever:\n  kind: bm25\n  k1: 1.2\n  b: 0.5\n  k1: 0.9\n"),
         ("cfg.yaml:8: retriever.k1: key given twice (first on line 6)",)),
    Case("metric-parameter-twice", cfg(metrics="['ndcg(gain=exp,gain=linear)@10']"),
         ("cfg.yaml", "metrics:", "parameter 'gain' is given twice")),
    Case("bad-token-regex", cfg(retriever="{kind: bm25, tokenizer: {pattern: '('}}"),
         ("cfg.yaml", "retriever.tokenizer.pattern: not a valid regular expression")),
    Case("regex-two-groups", cfg(retriever="{kind: bm25, tokenizer: {pattern: '(a)(b)'}}"),
         ("retriever.tokenizer.pattern: has 2 capturing groups",)),
    Case("regex-matches-empty", cfg(retriever="{kind: bm25, tokenizer: {pattern: '\\w*'}}"),
         ("retriever.tokenizer.pattern: matches the empty string",)),
    Case("hybrid-weight-not-a-number", cfg(retriever=HYBRID % ("foo", 10)),
         ("cfg.yaml", "retriever.children.0.weight: Input should be a valid number")),
    Case("hybrid-weight-negative-depth-zero", cfg(retriever=HYBRID % (-5, 0)),
         ("retriever.children.0.weight: Input should be greater than or equal to 0 (got -5)",
          "retriever.children.1.depth: Input should be greater than or equal to 1 (got 0)")),
    Case("hybrid-child-not-a-mapping", cfg(retriever="{kind: hybrid, children: [7]}"),
         ("retriever.children.0: expected a retriever mapping",)),
    Case("reranked-child-weight-ignored", cfg(retriever="{kind: reranked, child: {kind: bm25, weight: 2}}"),
         ("retriever.child.weight: only a hybrid's children take weight",)),
    Case("cutoff-tokenizer-not-json", with_files({"tok.json": "not json {"}, cutoff="{{token_budget: 50, tokenizer: tok.json}}"),
         ("cfg.yaml: cutoff.tokenizer:", "tok.json is not a Hugging Face tokenizer.json")),
    Case("cutoff-tokenizer-missing", cfg(cutoff="{token_budget: 50, tokenizer: missing.json}"),
         ("cfg.yaml: cutoff.tokenizer:", "missing.json': no such file")),
    Case("chunking-tokenizer-not-json", raw(BASE + "retriever: {{kind: bm25}}\nchunking: {{strategy: tokens, size: 50, "
                                            "unit: tokenizer, tokenizer: cfg.yaml}}\n"),
         ("cfg.yaml: chunking.tokenizer:", "is not a Hugging Face tokenizer.json")),
    Case("model-empty-folder", with_files({"emptydir/": ""}, retriever="{{kind: dense, model: {tmp}/emptydir}}"),
         ("cfg.yaml: retriever.model:", "emptydir is not a model folder: config.json is missing")),
    Case("model-nonexistent", cfg(retriever="{kind: dense, model: /nonexistent/model}"),
         ("cfg.yaml: retriever.model: '/nonexistent/model' is not a local folder",)),
    Case("model-config-without-model-type", with_files({"m/config.json": '{"hidden_size": 8}'},
                                                       retriever="{{kind: dense, model: {tmp}/m}}"),
         ("cfg.yaml: retriever.model:", 'config.json has no "model_type"')),
    Case("model-modules-json-broken", with_files({"m/modules.json": "[{", "m/config.json": '{"model_type": "bert"}'},
                                                 retriever="{{kind: dense, model: {tmp}/m}}"),
         ("cfg.yaml: retriever.model:", "modules.json is not readable JSON")),
    Case("cross-encoder-stage-folder", with_files({"ce/config.json": "[1, 2"},
                                                  retriever="{{kind: reranked, child: {{kind: bm25}}, stage: "
                                                            "{{type: cross-encoder, model: {tmp}/ce}}}}"),
         ("cfg.yaml: retriever.stage.model:", "config.json is not readable JSON")),
    Case("external-run-file-missing", cfg(retriever="{kind: external, path: nope.trec}"),
         ("cfg.yaml: retriever.path:", "nope.trec: external run file not found")),
    Case("depth-1e8-is-text-in-yaml", cfg(depth="1e8"),
         ("cfg.yaml", "depth: Input should be a valid integer", "write it out (100000000)")),
    Case("depth-above-bound", cfg(depth="100000000"),
         ("cfg.yaml", f"depth: Input should be less than or equal to {MAX_RANK}")),
    Case("cutoff-k-above-bound", cfg(cutoff="{k: 100000000}", depth=str(MAX_RANK)),
         (f"cutoff.k: Input should be less than or equal to {MAX_RANK}",)),
    Case("metric-cutoff-above-bound", cfg(metrics="[recall@100000000]", depth=str(MAX_RANK)),
         (f"metrics: recall@100000000: the cutoff must be at most {MAX_RANK:,}",)),
    Case("depth-below-metric-cutoff", cfg(depth="3", metrics="[ndcg@10]", cutoff="{k: 3}"),
         ("cfg.yaml", "depth: 3 hits per query are fewer than ndcg@10 needs; set depth: 10 or more",)),
    Case("depth-below-default-cutoff", cfg(depth="3"),  # (the default metrics follow the depth: test_first_project)
         ("depth: 3 hits per query are fewer than cutoff.k (5) (cutoff: {{k: 5}} is the default) needs",)),
    Case("sweep-point-depth-below-cutoff", cfg(metrics="[ndcg@10]", sweep="{depth: [20, 5]}"),
         ("cfg.yaml: sweep point {{'depth': 5}}", "depth: 5 hits per query are fewer than ndcg@10")),
    Case("sweep-path-not-an-index", cfg(retriever="{kind: hybrid, children: [{kind: bm25}]}",
                                        sweep="{retriever.children.x.weight: [1]}"),
         ("cfg.yaml", "sweep.retriever.children.x.weight: 'retriever.children.x' does not exist")),
    Case("every-file-problem-at-once",
         raw("name: t\ncorpus: {{path: nocorpus.jsonl}}\ngoldset: {{path: nogold.jsonl}}\n"
             "retriever: {{kind: dense, model: /nonexistent/model}}\ncutoff: {{token_budget: 9, tokenizer: no.json}}\n"),
         ("cfg.yaml: 4 problems", "cfg.yaml: retriever.model:", "cfg.yaml: cutoff.tokenizer:",
          "nocorpus.jsonl: corpus file not found", "nogold.jsonl: golden set file not found")),
]


def _error_part(stderr: str) -> str:
    return stderr[stderr.index("error:"):] if "error:" in stderr else stderr


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_config_is_one_located_error_in_validate_and_run_alike(case, tmp_path):
    def out_kept(tmp, proc):
        assert (tmp / "out" / "keep.txt").read_text() == "mine"
        assert not (tmp / "out" / "report.md").exists()

    procs = {}
    for command in ("validate", "run"):
        tmp = tmp_path / command
        tmp.mkdir()
        (tmp / "out").mkdir()
        (tmp / "out" / "keep.txt").write_text("mine")
        extra = ["--out", "out"] if command == "run" else []
        row = dataclasses.replace(case, setup=lambda t, c=command, e=extra: [c, *case.setup(t), *e],
                                  keep=("out",), check=out_kept)
        started = time.perf_counter()
        procs[command] = run_case(row, tmp)
        assert time.perf_counter() - started < 60  # an alias bomb is refused, not expanded
        assert procs[command].stderr.count("error:") == 1
    # run and validate agree word for word on what is wrong (paths differ only by the temp folder)
    assert (_error_part(procs["validate"].stderr).replace(str(tmp_path / "validate"), "T")
            == _error_part(procs["run"].stderr).replace(str(tmp_path / "run"), "T"))


def test_readme_example_validates_with_the_warnings_run_prints(tmp_path):
    """The demo gold has two deliberate problems that run flags (on_gold_error: flag): warnings in both, exit 0."""
    checked = harness("validate", "configs/demo-bm25.yaml")
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.strip() == "configs/demo-bm25.yaml: ok (36 documents, 79 chunks, 46 queries, 2 warnings)"
    ran = harness("run", "configs/demo-bm25.yaml", "--out", str(tmp_path / "o"), "-q")
    assert ran.returncode == 0, ran.stderr
    warnings = [line for line in checked.stderr.splitlines() if line.startswith("warning: ")]
    assert warnings == [line for line in ran.stderr.splitlines() if line.startswith("warning: ")]
    gold = ROOT / "goldsets" / "demo" / "goldset.jsonl"
    assert warnings == [
        f"warning: {gold}: query 'q44': relevant document 'api-pagination' is not in the corpus "
        f"(the query is flagged goldset_error)",
        f"warning: {gold}: query 'q45': evidence quote 'LAN sync copies files directly between computers on the "
        f"s...' not found in document 'sync-bandwidth' (the query is flagged goldset_error)"]
    result = json.loads((tmp_path / "o" / "results.json").read_text())
    assert sorted(p["query_id"] for p in result["goldset"]["problems"]) == ["q44", "q45"]


def test_gold_errors_fail_both_when_configured(tmp_path):
    demo_config(tmp_path, diagnostics="{on_gold_error: fail}")
    procs = [harness(cmd, "cfg.yaml", *extra, cwd=tmp_path) for cmd, extra in
             (("validate", []), ("run", ["--out", "o"]))]
    for proc in procs:
        assert proc.returncode == 2, proc.stderr
        assert "goldset.jsonl: the golden set does not match the corpus (diagnostics.on_gold_error: fail)" in proc.stderr
        assert "query 'q44': relevant document 'api-pagination' is not in the corpus" in proc.stderr
    assert _error_part(procs[0].stderr) == _error_part(procs[1].stderr)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("rules, expect", [
    ("rules:\n  - 'doc.ndcg@20 >= 0.5'\n", ["rules.yaml: rules.0: doc.ndcg@20: cfg.yaml does not compute ndcg@20"]),
    ("rules:\n  - 'chunk.recall@window >= 0.5'\n  - 'chunk.recall@window >= 0.6'\nrules: []\n",
     ["rules.yaml:4: rules: key given twice (first on line 1)"]),
    ("rules: &r [*r]\n", ["rules.yaml (line 1)", "recursive alias"]),
    (BOMB + "rules: ['doc.ndcg@10 >= 0.5']\n", ["rules.yaml", "alias bomb"]),
    ("rules:\n  - 'nope >= 1'\n", ["rules.yaml: invalid rules", "rules.0"]),
    # What gate would refuse is refused here too, all at once (the walk found validate passing these)
    ("rules:\n  - {check: 'doc.ndcg@10 >= 0.5', slice: {topc: billing}}\n"
     "  - {check: 'doc.ndcg@10 >= 0.5', slice: {topic: bilingg}}\n  - 'doc.ndcg@20 >= 0.5'\n",
     ["rules.yaml: rules.0: slice tag 'topc' is not in the golden set; its tags are difficulty, topic",
      "rules.yaml: rules.1: slice topic=bilingg matches no query; topic values in the golden set are account",
      "rules.yaml: rules.2: doc.ndcg@20: cfg.yaml does not compute ndcg@20"]),
], ids=["metric-not-computed", "duplicate-key", "recursive-alias", "alias-bomb", "unreadable-rule", "slices-and-all"])
def test_validate_checks_gate_rules(tmp_path, rules, expect):
    demo_config(tmp_path, metrics="[ndcg@10, recall@5]")
    (tmp_path / "rules.yaml").write_text(rules)
    proc = harness("validate", "cfg.yaml", "--rules", "rules.yaml", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    for fragment in expect:
        assert fragment in proc.stderr


def test_validate_accepts_the_shipped_rules_and_a_sweep():
    proc = harness("validate", "configs/demo-sweep.yaml", "--rules", "configs/gates.yaml")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ("configs/demo-sweep.yaml: ok (6 sweep points; first: 36 documents, 145 chunks, "
                                   "46 queries, 2 warnings)")


def test_good_model_folders_pass_and_hub_names_are_not_checked(tmp_path):
    from harness.retrievers.dense import model_folder_problems

    (tmp_path / "st" / "0_Transformer").mkdir(parents=True)
    (tmp_path / "st" / "modules.json").write_text('[{"path": "0_Transformer", "type": "x.Transformer"}]')
    (tmp_path / "st" / "0_Transformer" / "config.json").write_text('{"model_type": "bert"}')
    [tokenizer, weights] = model_folder_problems(str(tmp_path / "st"), "retriever.model")
    assert "has no tokenizer files" in tokenizer and "has no weights" in weights  # a run would read [UNK]s
    (tmp_path / "st" / "0_Transformer" / "vocab.txt").write_text("[UNK]\n")
    header = b'{"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}'
    weights = tmp_path / "st" / "0_Transformer" / "model.safetensors"
    weights.write_bytes(len(header).to_bytes(8, "little") + header + bytes(4))  # 4 of the 8 bytes it says
    [truncated] = model_folder_problems(str(tmp_path / "st"), "retriever.model")
    assert "is not a complete safetensors file" in truncated and "truncated?" in truncated
    weights.write_bytes(len(header).to_bytes(8, "little") + header + bytes(8))
    assert model_folder_problems(str(tmp_path / "st"), "retriever.model") == []
    assert model_folder_problems("hub:someone/model", "retriever.model") == []
    (tmp_path / "st" / "0_Transformer" / "config.json").unlink()
    [problem] = model_folder_problems(str(tmp_path / "st"), "retriever.model")
    assert problem.startswith("retriever.model: ") and "config.json is missing from" in problem


# ---- fuzzing: the loader gives a config or a HarnessError, never another exception ----------------------------

VALID = {
    "name": "fz", "corpus": {"path": str(DEMO / "corpus.jsonl"), "format": "jsonl"},
    "chunking": {"strategy": "sentences", "size": 2, "overlap": 0},
    "goldset": {"path": str(DEMO / "goldset.jsonl")},
    "retriever": {"kind": "hybrid", "fusion": "rrf", "children": [
        {"kind": "bm25", "k1": 1.2, "tokenizer": {"pattern": "\\w+", "stemmer": "english"}, "weight": 1.0},
        {"kind": "reranked", "top_n": 5, "child": {"kind": "bm25"}, "depth": 20}]},
    "cutoff": {"k": 5}, "depth": 100, "metrics": ["ndcg@10", "recall@5"],
    "diagnostics": {"on_gold_error": "flag"}, "sweep": {"chunking.size": [1, 2]},
}

WEIRD = st.sampled_from(["", "~", "~nobody_here/x", "${NOT_SET_X}", "a\x00b", "(", "\\w*", "1e8", "-0", "words",
                         "bundled:all-MiniLM-L6-v2", "hub:x/y", "/nonexistent", "ndcg(gain=exp,gain=exp)@10",
                         "P@5", "ndcg@99999999999999999999", "kind", "children.0.weight", ".inf", "\u202e\ufeff"])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2 ** 70, 2 ** 70),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12), WEIRD)
GARBAGE = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(st.one_of(st.text(max_size=6), WEIRD),
                                                                       inner, max_size=3)), max_leaves=8)
# Values of the right shape, so that edited configs often load and reach the file checks too.
NEAR = st.one_of(st.integers(-3, 200), st.floats(-2, 3), st.sampled_from(
    ["tokens", "sentences", "paragraphs", "none", "words", "tokenizer", "fail", "flag", "rrf", "minmax", "zscore",
     "dense", "bm25", "external", "reranked", "hub:x/y", "fast", "ndcg@10", "ap", "beir", "trec", "folder", "porter",
     str(DEMO), str(DEMO / "corpus.jsonl"), str(DEMO / "goldset.jsonl"), str(ROOT / "configs")]))


def _paths(node, prefix=()):
    yield prefix
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        yield from _paths(value, prefix + (key,))


def _edit(data, path, op, value):
    *parents, last = path
    node = data
    for key in parents:
        node = node[key]
    if op == "drop":
        del node[last]
    elif op == "add" and isinstance(node[last], dict):
        node[last][str(value)[:10]] = value
    else:
        node[last] = value


def _loads_or_harness_error(path):
    try:
        return load_config(path)
    except HarnessError:
        return None


# Modest by default (the file runs in seconds); HARNESS_FUZZ_EXAMPLES=2000 for a longer hunt.
EXAMPLES = int(os.environ.get("HARNESS_FUZZ_EXAMPLES", "60"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)


@FUZZ
@given(st.binary(max_size=400))
def test_fuzz_random_bytes(tmp_path_factory, blob):
    path = tmp_path_factory.mktemp("fz") / "c.yaml"
    path.write_bytes(blob)
    _loads_or_harness_error(path)


@FUZZ
@given(st.lists(st.tuples(st.sampled_from(["drop", "dup", "swap", "garble"]), st.integers(0, 40),
                          st.text(max_size=12)), min_size=1, max_size=4))
def test_fuzz_text_edits_of_a_valid_config(tmp_path_factory, edits):
    lines = yaml.safe_dump(VALID, sort_keys=False).splitlines()
    for op, at, text in edits:
        i = at % len(lines)
        if op == "drop":
            del lines[i]
        elif op == "dup":
            lines.insert(i, lines[i])  # usually a key given twice
        elif op == "swap":
            lines[i], lines[-1 - i] = lines[-1 - i], lines[i]
        else:
            lines[i] = lines[i][: len(lines[i]) // 2] + text
        if not lines:
            lines = ["{}"]
    path = tmp_path_factory.mktemp("fz") / "c.yaml"
    path.write_text("\n".join(lines))
    _loads_or_harness_error(path)


@settings(max_examples=EXAMPLES + 20, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(st.data())
def test_fuzz_structured_edits_then_the_pre_retrieval_checks(tmp_path_factory, data):
    """Drop a key, give a wrong type, a huge number, a weird string or nested garbage anywhere; load it, and if it
    is a config, run every pre-retrieval check too: a config or a HarnessError, nothing else."""
    from harness.pipeline.assemble import check_before_retrieval

    doc = json.loads(json.dumps(VALID))
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from([p for p in _paths(doc) if p]))
        _edit(doc, path, data.draw(st.sampled_from(["drop", "set", "add"])), data.draw(st.one_of(NEAR, GARBAGE)))
    folder = tmp_path_factory.mktemp("fz")
    (folder / "c.yaml").write_text(yaml.safe_dump(doc))
    config = _loads_or_harness_error(folder / "c.yaml")
    if config is not None:
        assert isinstance(config, ExperimentConfig)
        try:
            check_before_retrieval(config, source="c.yaml", log=lambda m: None)
        except HarnessError:
            pass


# ---- the shared loader ---------------------------------------------------------------------------------------

def test_shared_loader_raises_the_callers_error_class():
    class RulesError(InputError):
        pass

    with pytest.raises(RulesError, match=re.escape("r.yaml:3: a.b: key given twice (first on line 2)")):
        parse_yaml("a:\n  b: 1\n  b: 2\n", "r.yaml", RulesError)
    with pytest.raises(RulesError, match="nested more than 100 levels"):
        parse_yaml("x: " + "[" * 150 + "]" * 150, "r.yaml", RulesError)
    with pytest.raises(RulesError, match=r"r.yaml \(line 1, column 4\): not valid YAML: cannot read this timestamp"):
        parse_yaml("a: 2020-13-45\n", "r.yaml", RulesError)
    # anchors reused a few times, and merge keys overriding merged values, are ordinary YAML
    assert parse_yaml("base: &b {x: 1, y: 2}\nc:\n  <<: *b\n  x: 3\nd: [*b, *b]\n", "r.yaml", RulesError) == {
        "base": {"x": 1, "y": 2}, "c": {"x": 3, "y": 2}, "d": [{"x": 1, "y": 2}, {"x": 1, "y": 2}]}


def test_bomb_is_refused_fast_and_small():
    started = time.perf_counter()
    with pytest.raises(ConfigError, match="alias bomb"):
        parse_yaml(BOMB, "b.yaml", ConfigError)
    assert time.perf_counter() - started < 1.0


def test_a_name_of_other_characters_is_told_the_rule_in_words(tmp_path):
    """pydantic's "String should match pattern '^[A-Za-z0-9]...'" was what a Unicode run name got."""
    from clihelp import DEMO, assert_input_error, harness

    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"name: 'résumé run/x'\ncorpus: {{path: {DEMO / 'corpus.jsonl'}}}\n"
                   f"goldset: {{path: {DEMO / 'goldset.jsonl'}}}\nretriever: {{kind: bm25}}\n")
    proc = harness("validate", cfg)
    assert_input_error(proc, "name: a run's name is its folder's and files' name: ASCII letters, digits and _ . -")
    assert "should match pattern" not in proc.stderr
