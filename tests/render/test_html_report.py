"""The HTML report in a real headless browser (system Chromium via playwright; skipped without either): it works,
and nothing from a result runs as script."""

import json
import shutil

import pytest
from conftest import charts_drawn, require_installed

require_installed("playwright")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium installed (apt-get install chromium)")

HOSTILE = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'


@pytest.fixture(scope="module")
def page_html(tmp_path_factory):
    from harness.config.schema import parse_config
    from harness.pipeline.assemble import run_experiment
    from harness.render.html import render

    tmp = tmp_path_factory.mktemp("html")
    docs = [{"id": "evil", "title": "T", "text": f"Rotate keys here. {HOSTILE} More text."},
            {"id": "plain", "title": "P", "text": "Invoices are monthly. Cards can change."}]
    (tmp / "c.jsonl").write_text("\n".join(json.dumps(d) for d in docs))
    gold = [{"id": "q1", "query": "rotate keys", "relevant": [{"doc": "evil", "evidence": [{"quote": "Rotate keys"}]}],
             "tags": {"topic": "security"}},
            {"id": "q2", "query": f"invoices {HOSTILE}", "relevant": [{"doc": "plain"}], "tags": {"topic": "billing"}},
            {"id": "q3", "query": "cards", "relevant": [{"doc": "evil"}], "tags": {"topic": "billing"}}]
    (tmp / "g.jsonl").write_text("\n".join(json.dumps(g) for g in gold))
    cfg = parse_config({"name": "html-test", "corpus": {"path": "c.jsonl"}, "goldset": {"path": "g.jsonl"},
                        "chunking": {"strategy": "sentences", "size": 1}, "retriever": {"kind": "bm25"},
                        "cutoff": {"k": 1}, "depth": 100}, "t", tmp)
    result = run_experiment(cfg, progress=False, log=lambda m: None)
    path = tmp / "report.html"
    with charts_drawn():  # the page is checked with its charts
        path.write_text(render([result], [result.chunk_text]))
    return path, result


def with_page(chromium, path, fn, dialogs=None):
    # The session's one Chromium (conftest.chromium); a new context per page isolates it as a new browser would.
    context = chromium.new_context()
    page = context.new_page()
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    if dialogs is not None:  # record every alert/confirm/prompt and dismiss it, so none blocks the page
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(path.as_uri())
    try:
        return fn(page), errors
    finally:
        context.close()


def test_loads_without_console_errors_and_is_self_contained(chromium, page_html):
    path, _ = page_html
    text = path.read_text()
    import re
    # nothing is fetched: no src/href to a remote address, no stylesheet links (SVG namespaces are only names)
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text) and "<link" not in text
    (title, n_svg), errors = with_page(chromium, path, lambda page: (page.title(), page.locator("svg").count()))
    # recall/nDCG, precision, first-relevant rank, the verdict mix by its one tag (topic), the top-score histogram
    assert errors == [] and title == "html-test" and n_svg == 5


def test_user_text_renders_as_text(chromium, page_html):
    path, _ = page_html

    def check(page):
        return (page.evaluate("window.pwned === undefined"), page.locator("script").count(),
                page.locator("#queries").inner_text())
    (safe, n_scripts, table_text), errors = with_page(chromium, path, check)
    assert safe and n_scripts == 1 and errors == []
    assert "<script>window.pwned = 1</script>" in table_text


def test_filters_and_row_expansion_work(chromium, page_html):
    path, result = page_html
    kinds = {q.id: q.verdict.kind for q in result.queries}

    def drive(page):
        out = {"all": page.locator("tr.q:visible").count()}
        page.select_option("select[data-filter=tag0]", "billing")
        out["billing"] = page.locator("tr.q:visible").count()
        page.select_option("select[data-filter=tag0]", "")
        page.select_option("select[data-filter=verdict]", kinds["q1"])
        out["verdict"] = page.locator("tr.q:visible").count()
        page.select_option("select[data-filter=verdict]", "")
        page.locator("tr.q").first.click()
        out["expanded"] = page.locator("#d0").is_visible()
        out["mark"] = page.locator("#d0 mark").first.inner_text()
        return out
    out, errors = with_page(chromium, path, drive)
    assert errors == []
    assert out["all"] == 3 and out["billing"] == 2
    assert out["verdict"] == sum(1 for k in kinds.values() if k == kinds["q1"])
    assert out["expanded"] and out["mark"] == "Rotate keys"


def test_report_command_on_a_result_with_payloads_in_every_string(chromium, tmp_path):
    """``harness report`` on a results.json whose every free-text string (query text, tags, ids, advice, reasons,
    conventions, metric names, config values...) carries markup that breaks out of text, attributes and code: the
    schema accepts it, the page fires no dialog and runs no script of it, and each payload shows as text."""
    from clihelp import ROOT, harness
    from test_schema_and_escaping import poison

    out = tmp_path / "demo"
    assert harness("run", ROOT / "configs/demo-bm25.yaml", "--out", out, "-q").returncode == 0
    bad, made = poison(json.loads((out / "results.json").read_text()))
    (tmp_path / "hostile.json").write_text(json.dumps(bad))
    proc = harness("report", tmp_path / "hostile.json", "--out", tmp_path / "page.html")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    q = bad["queries"][0]
    topic = made["topic"]
    shown = [q["id"], q["text"], q["verdict"]["reason"], q["hits"][0]["chunk_id"], topic, q["tags"][topic],
             bad["config"]["retriever"]["kind"], bad["cutoff"]["describe"], bad["created_at"],
             bad["summary"]["verdicts"]["advice"][0], next(iter(bad["conventions"])),
             next(iter(bad["conventions"].values())), next(iter(bad["summary"]["doc"]))]

    def check(page):
        body = page.text_content("body")
        billing = made["billing"]
        tag = sorted(q["tags"]).index(topic)
        page.select_option(f"select[data-filter=tag{tag}]", billing)  # a payload round-trips through an attribute
        return {"missing": [s for s in shown if s not in body], "scripts": page.locator("script").count(),
                "imgs": page.locator("img").count(), "shown": page.locator("tr.q:visible").count()}
    dialogs = []
    out, errors = with_page(chromium, tmp_path / "page.html", check, dialogs)
    assert dialogs == [] and errors == []
    assert out["missing"] == [] and out["scripts"] == 1 and out["imgs"] == 0
    assert out["shown"] == sum(1 for q in bad["queries"] if q["tags"].get(topic) == made["billing"]) > 0


def test_incomplete_shows_like_every_verdict(chromium, tmp_path):
    """docs/groups.md: a query whose window holds one of its two evidence groups is `incomplete`: its colour, the
    verdict filter, the counts table, and the drill-down naming the missing group and where it ranked."""
    from harness.config.schema import parse_config
    from harness.pipeline.assemble import run_experiment
    from harness.render.html import render

    docs = [{"id": "keys", "text": "Rotate keys from the settings page."},
            {"id": "bills", "text": "Invoices are sent monthly."},
            {"id": "other", "text": "Nothing relevant here at all."}]
    (tmp_path / "c.jsonl").write_text("\n".join(json.dumps(d) for d in docs))
    gold = [{"id": "q1", "query": "rotate keys settings invoices", "relevant": [
                {"doc": "keys", "group": "how", "evidence": [{"quote": "Rotate keys"}]},
                {"doc": "bills", "group": "cost", "evidence": [{"quote": "Invoices are sent monthly."}]}]},
            {"id": "q2", "query": "invoices monthly", "relevant": [{"doc": "bills"}]}]
    (tmp_path / "g.jsonl").write_text("\n".join(json.dumps(g) for g in gold))
    cfg = parse_config({"name": "groups", "corpus": {"path": "c.jsonl"}, "goldset": {"path": "g.jsonl"},
                        "chunking": {"strategy": "sentences", "size": 1}, "retriever": {"kind": "bm25"},
                        "cutoff": {"k": 1}, "depth": 100}, "t", tmp_path)
    result = run_experiment(cfg, progress=False, log=lambda m: None)
    kinds = {q.id: q.verdict.kind for q in result.queries}
    assert kinds == {"q1": "incomplete", "q2": "ok"}  # bm25 ranks "keys" first for q1; the window holds 1 chunk
    path = tmp_path / "report.html"
    path.write_text(render([result], [result.chunk_text]))

    def drive(page):
        out = {"options": page.locator("select[data-filter=verdict] option").all_inner_texts()}
        page.select_option("select[data-filter=verdict]", "incomplete")
        out["shown"] = page.locator("tr.q:visible").all_inner_texts()
        cell = page.locator("tr.q:visible td.k-incomplete")
        out["colour"] = cell.evaluate("td => getComputedStyle(td).color")
        page.locator("tr.q:visible").first.click()
        out["reason"] = page.locator("tr.detail:visible p.reason").inner_text()
        out["evidence"] = page.locator("tr.detail:visible table.evidence").inner_text()
        return out
    out, errors = with_page(chromium, path, drive)
    assert errors == []
    assert "incomplete" in out["options"]
    assert len(out["shown"]) == 1 and out["shown"][0].startswith("q1")
    assert out["colour"] == "rgb(193, 21, 116)"  # .k-incomplete, #c11574
    assert out["reason"] == "the window (1) holds evidence of group how but not of cost (ranked 2)"
    assert "(group cost)" in out["evidence"] and "(group how)" in out["evidence"]
