"""Issue 35: a run with --set writes to its own folder and never replaces the base run's outputs; --name names a
run and its folder; compare labels runs of one name by the settings that differ between them."""

from __future__ import annotations

import json

import pytest

from clihelp import assert_input_error, demo_config, harness
from harness.config.overrides import variant_suffix
from harness.core.errors import ConfigError


def _snapshot(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_variant_suffix_is_readable_sorted_and_apart():
    assert variant_suffix(["retriever.k1=0.9", "cutoff.k=10"]) == "cutoff.k=10,retriever.k1=0.9"
    assert variant_suffix([" cutoff.k = 10"]) == "cutoff.k=10"
    hashed = variant_suffix(["metrics=[ndcg@10,recall@100]"])  # not plain: a digest, the same every time
    assert hashed.startswith("set-") and len(hashed) == 14 and hashed == variant_suffix(["metrics=[ndcg@10,recall@100]"])
    assert variant_suffix(["retriever.children.0.k1=0.9"]) != variant_suffix(["retriever.k1=0.9"])


@pytest.fixture(scope="module")
def base_and_variant(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("variants")
    cfg = demo_config(tmp, "cfg.yaml", retriever="{kind: bm25, backend: fast, k1: 1.2}")
    base = harness("run", cfg, cwd=tmp)
    assert base.returncode == 0, base.stderr
    before = _snapshot(tmp / "reports" / "t")
    variant = harness("run", cfg, "--set", "retriever.k1=0.9", cwd=tmp)
    assert variant.returncode == 0, variant.stderr
    return tmp, cfg, base, variant, before


def test_a_set_run_writes_its_own_folder_and_leaves_the_base_byte_identical(base_and_variant):
    tmp, _, base, variant, before = base_and_variant
    assert _snapshot(tmp / "reports" / "t") == before
    own = tmp / "reports" / "t+retriever.k1=0.9"
    assert variant.stdout == f"{own.relative_to(tmp)}/report.html\n"
    assert f"writes to its own folder {own.relative_to(tmp)}/" in variant.stderr
    assert f"wrote {own.relative_to(tmp)}/" in variant.stderr and "wrote reports/t/" in base.stderr
    data = json.loads((own / "results.json").read_text())
    assert data["overrides"] == ["retriever.k1=0.9"] and data["config"]["retriever"]["k1"] == 0.9
    assert json.loads((tmp / "reports" / "t" / "results.json").read_text())["overrides"] is None


def test_compare_labels_runs_of_one_name_by_the_settings_that_differ(base_and_variant):
    tmp = base_and_variant[0]
    proc = harness("compare", tmp / "reports" / "t", tmp / "reports" / "t+retriever.k1=0.9", "--format", "json",
                   "-m", "ndcg@10")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["runs"] == ["t+k1=1.2", "t+k1=0.9"] and data["rows"][0]["run"] == "t+k1=0.9"
    table = harness("compare", tmp / "reports" / "t", tmp / "reports" / "t+retriever.k1=0.9", "-m", "ndcg@10")
    assert "t+k1=0.9" in table.stdout and "#1" not in table.stdout and "#2" not in table.stdout


def test_name_names_the_run_and_its_folder(base_and_variant):
    tmp, cfg, *_ = base_and_variant
    proc = harness("run", cfg, "--set", "retriever.k1=0.5", "--name", "low-k1", "-q", cwd=tmp)
    assert proc.returncode == 0, proc.stderr
    data = json.loads((tmp / "reports" / "low-k1" / "results.json").read_text())
    assert data["name"] == "low-k1" and data["overrides"] == ["retriever.k1=0.5"]


@pytest.mark.parametrize("name, fragment", [("a/b", "without a path separator"), ("..", "expected letters"),
                                            ("a\\b", "without a path separator")])
def test_a_name_that_is_not_one_folder_name_is_refused(tmp_path, name, fragment):
    cfg = demo_config(tmp_path)
    assert_input_error(harness("run", cfg, "--name", name, cwd=tmp_path), f"--name {name}" if "/" in name else
                       "--name", fragment)
    assert not (tmp_path / "reports").exists()


def test_check_run_name_is_a_config_error():
    from harness.config.overrides import check_run_name

    with pytest.raises(ConfigError):
        check_run_name("x/y")
    check_run_name("ok-name_1.2")


def test_output_and_the_default_folder_both_resolve_from_the_current_folder(tmp_path):
    """`output: out` in configs/x.yaml wrote configs/out/ while the default wrote ./reports/<name>/: both are
    now from the folder harness runs in, like --out."""
    (tmp_path / "configs").mkdir()
    cfg = demo_config(tmp_path / "configs", "x.yaml", output="out")
    proc = harness("run", "configs/x.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "out/report.html\n" or proc.stdout == f"{tmp_path / 'out'}/report.html\n"
    assert (tmp_path / "out" / "results.json").is_file() and not (tmp_path / "configs" / "out").exists()
