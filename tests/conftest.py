import importlib.util
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "datasets"


def shared_dataset(name: str) -> Path:
    path = SHARED / name
    if not path.is_dir():
        pytest.skip(f"../shared/datasets/{name} is not present")
    return path


def require_installed(name: str) -> None:
    """Skip the module when ``name`` is not installed, without importing it: ``pytest.importorskip`` imports at
    collection, and sentence_transformers (torch, transformers) alone took ~18 s of every run's collection. The
    tests import it when they run, as the code under test does."""
    if importlib.util.find_spec(name) is None:
        pytest.skip(f"{name} is not installed", allow_module_level=True)


CHARTS = "HARNESS_CHARTS"


@contextmanager
def charts_drawn() -> Iterator[None]:
    """Charts on inside the block, whatever the suite's setting: for a module fixture whose charts its tests read (a
    module fixture is made before ``_charts_off_unless_read`` applies to a test)."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv(CHARTS, "on")
        yield


@pytest.fixture(autouse=True)
def _charts_off_unless_read(request, monkeypatch):
    """Charts are drawn only for tests marked ``charts``: matplotlib took two fifths of the suite's CPU time, drawing
    charts no other test reads. Session fixtures (made before this one applies) draw them as a user's run does.
    ``HARNESS_CHARTS=on`` in the environment draws them everywhere."""
    if request.node.get_closest_marker("charts") is not None:
        monkeypatch.setenv(CHARTS, "on")  # even when the shell that started the suite turned them off
    elif CHARTS not in os.environ:
        monkeypatch.setenv(CHARTS, "off")


CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]


@pytest.fixture(scope="session")
def chromium():
    """One headless system Chromium for the whole session (playwright); each test opens its own context (fresh
    storage, cookies, scripts), which isolates it as a new browser would. Closed, with playwright, at the end."""
    import shutil

    sync_api = pytest.importorskip("playwright.sync_api")
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.skip("no chromium installed (apt-get install chromium)")
    p = sync_api.sync_playwright().start()
    try:
        browser = p.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
    finally:
        p.stop()


@pytest.fixture(scope="session")
def demo_bm25_run(tmp_path_factory) -> Path:
    """The demo BM25 run, made once per test session (once per worker under xdist) through the CLI as a user runs
    it: the folder it wrote. For tests that only READ its files; a test that changes one copies it first."""
    from clihelp import harness

    out = tmp_path_factory.mktemp("demo-bm25") / "demo-bm25"
    proc = harness("run", ROOT / "configs" / "demo-bm25.yaml", "--out", out, "-q")
    assert proc.returncode == 0, proc.stderr
    return out
