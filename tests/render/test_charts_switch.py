"""HARNESS_CHARTS (docs/cli.md, "Environment variables"): ``off`` leaves the charts out of report.html and writes no
PNG file, with every number unchanged; any value but on or off is exit 2 before any work."""

import json

import pytest

import harness as api
from harness.core.errors import ConfigError
from clihelp import harness
from conftest import ROOT

CONFIG = ROOT / "configs" / "demo-bm25.yaml"


def test_off_writes_no_chart_and_the_page_says_so(demo_bm25_run, tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CHARTS", "off")
    proc = harness("run", CONFIG, "--out", tmp_path / "off", "-q")
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in (tmp_path / "off").glob("*.png")) == []
    page = (tmp_path / "off" / "report.html").read_text(encoding="utf-8")
    assert "Charts are off (HARNESS_CHARTS=off)." in page and "<svg" not in page.replace('<svg id="top-score-histogram"', "")
    # the numbers are those of the session's demo run (made as a user's run, charts drawn unless the suite's
    # environment turned them off)
    for name in ("per_query.csv", "run.trec", "run.chunks.trec"):
        assert (tmp_path / "off" / name).read_bytes() == (demo_bm25_run / name).read_bytes(), name
    summaries = [json.loads((folder / "results.json").read_text(encoding="utf-8"))["summary"]
                 for folder in (tmp_path / "off", demo_bm25_run)]
    assert summaries[0] == summaries[1]


@pytest.mark.charts
def test_on_is_the_default_and_a_rerun_with_off_removes_the_pngs_it_wrote(tmp_path, monkeypatch):
    out = tmp_path / "run"
    monkeypatch.setenv("HARNESS_CHARTS", "ON")  # either case
    assert harness("run", CONFIG, "--out", out, "-q").returncode == 0
    assert len(list(out.glob("plot_*.png"))) == 5
    monkeypatch.setenv("HARNESS_CHARTS", "off")
    assert harness("run", CONFIG, "--out", out, "-q").returncode == 0
    assert list(out.glob("plot_*.png")) == []  # files harness wrote and this run did not: not left to mislead


@pytest.mark.parametrize("value", ["maybe", "0", "no"])
def test_another_value_is_exit_2_in_one_line_before_any_work(value, tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CHARTS", value)
    proc = harness("run", CONFIG, "--out", tmp_path / "out", "-q")
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"error: environment variable HARNESS_CHARTS={value!r}: expected on or off"
    assert not (tmp_path / "out").exists()
    with pytest.raises(ConfigError, match="HARNESS_CHARTS"):
        api.run(CONFIG, out=tmp_path / "api")
    assert not (tmp_path / "api").exists()
