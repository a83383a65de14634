"""The reports a RAG engineer acts on: the drill-down of a failing query (in Chromium and in report.md), sortable
tables, the plots (inline SVG and PNG files), and comparison tables with per-slice deltas and the CI note.

Expected values are read from the golden set and the corpus files directly (the evidence quote, the gold
document), or from the run's hits in results.json, not from the renderers under test."""

import json
import shutil

import pytest

from clihelp import harness
from conftest import ROOT, charts_drawn, require_installed

require_installed("playwright")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
GOLD = {g["id"]: g for g in map(json.loads, (ROOT / "goldsets/demo/goldset.jsonl").read_text().splitlines())}
DOCS = {d["id"]: d for d in map(json.loads, (ROOT / "goldsets/demo/corpus.jsonl").read_text().splitlines())}


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("drill")
    with charts_drawn():  # the charts are what several tests here read
        for name in ("demo-bm25", "demo-hybrid"):
            proc = harness("run", ROOT / f"configs/{name}.yaml", "--out", tmp / name, "-q")
            assert proc.returncode == 0, proc.stderr
    return tmp


def first_relevant(results: dict, qid: str) -> tuple[int, str]:
    """The rank and chunk of the first hit overlapping the query's evidence quote, located in the corpus here."""
    gold = GOLD[qid]["relevant"][0]
    doc, quote = gold["doc"], gold["evidence"][0]["quote"]
    start = DOCS[doc]["text"].index(quote)
    q = next(q for q in results["queries"] if q["id"] == qid)
    hit = next(h for h in q["hits"] if h["doc_id"] == doc and h["start"] < start + len(quote) and start < h["end"])
    return hit["rank"], hit["chunk_id"]


def with_page(chromium, path, fn):
    if CHROMIUM is None:
        pytest.skip("no chromium installed")
    # The session's one Chromium (conftest.chromium); a new context per page isolates it as a new browser would.
    context = chromium.new_context()
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(path.as_uri())
    try:
        return fn(page), errors
    finally:
        context.close()


def expand(page, qid):
    row = page.locator("#queries tr.q", has=page.locator(f"td:text-is('{qid}')"))
    row.click()
    return page.locator("#" + row.get_attribute("data-detail"))


def test_browser_expands_wrong_chunk_and_missing_document_rows(chromium, demo):
    results = json.loads((demo / "demo-bm25/results.json").read_text())
    kinds = {q["id"]: q["verdict"]["kind"] for q in results["queries"]}
    assert kinds["q16"] == "wrong_chunk" and kinds["q43"] == "missing_document"
    rank16, chunk16 = first_relevant(results, "q16")
    rank43, chunk43 = first_relevant(results, "q43")
    quote16 = GOLD["q16"]["relevant"][0]["evidence"][0]["quote"]
    quote43 = GOLD["q43"]["relevant"][0]["evidence"][0]["quote"]
    k = next(q for q in results["queries"] if q["id"] == "q16")["effective_k"]

    def drive(page):
        out = {}
        for qid in ("q16", "q43"):
            d = expand(page, qid)
            out[qid] = {"visible": d.is_visible(), "ev_text": d.locator(".evidence .ev-text").inner_text(),
                        "ev_rank": d.locator(".evidence .ev-rank").inner_text(),
                        "headline": d.locator(".headline").inner_text(),
                        "evidence_row": d.locator("tr.m-evidence").inner_text(),
                        "above": d.locator(".ranking tbody tr.m-evidence ~ tr").count(),
                        "ranks": [int(t) for t in d.locator(".ranking tbody tr:not(.window-end):not(.gap) td:first-child")
                                  .all_inner_texts()],
                        "window_end": d.locator("tr.window-end").inner_text(),
                        "gold_docs": d.locator(".gold-docs").inner_text() if d.locator(".gold-docs").count() else "",
                        "mark": d.locator("tr.m-evidence mark").inner_text()}
        return out
    out, errors = with_page(chromium, demo / "demo-bm25/report.html", drive)
    assert errors == []
    for qid, rank, chunk, quote in (("q16", rank16, chunk16, quote16), ("q43", rank43, chunk43, quote43)):
        o = out[qid]
        assert o["visible"] and o["ev_text"] == quote and o["ev_rank"] == str(rank) and rank > k
        assert f"ranked {rank}, {rank - k} past the {k}-chunk window" in o["headline"]
        assert chunk in o["evidence_row"] and o["mark"] == quote  # its chunk, the quote marked inside it
        assert o["ranks"] == list(range(1, rank + 1))  # every chunk that outranked it, then it
        assert o["window_end"] == f"end of the window ({k} chunks)"
    assert "trouble-slow" in out["q43"]["gold_docs"] and f"\t{rank43}\t" in out["q43"]["gold_docs"]
    assert out["q16"]["gold_docs"] == ""  # only a missing document shows the gold document table


def test_tables_sort_by_any_column_and_details_follow(chromium, demo):
    results = json.loads((demo / "demo-bm25/results.json").read_text())
    by_first = {q["id"]: next((h["rank"] for h in q["hits"] if h["relevant"]), 10 ** 9) for q in results["queries"]}
    expected = sorted(by_first, key=lambda i: by_first[i])

    def drive(page):
        head = page.locator("#queries thead th", has_text="first relevant chunk rank")
        head.click()
        asc = page.locator("#queries tbody tr.q td:first-child").all_inner_texts()
        pairs = page.evaluate("""() => [...document.querySelectorAll('#queries tbody tr.q')].map(
            r => r.nextElementSibling.id === r.dataset.detail)""")
        head.click()
        desc = page.locator("#queries tbody tr.q td:first-child").all_inner_texts()
        page.locator("#queries thead th", has_text="id").first.click()
        by_id = page.locator("#queries tbody tr.q td:first-child").all_inner_texts()
        verdicts = page.locator("table.sortable:has(thead th:first-child:text-is('verdict'))")
        verdicts.locator("thead th", has_text="queries").click()
        counts = [int(x) for x in verdicts.locator("tbody td:nth-child(2)").all_inner_texts()]
        metrics = page.locator("table#metrics.sortable")
        metrics.locator("thead th", has_text="doc level").click()
        doc_level = [float(x) for x in metrics.locator("tbody td:nth-child(2)").all_inner_texts()]
        metrics.locator("thead th", has_text="metric").click()
        names = metrics.locator("tbody td:first-child").all_inner_texts()
        return asc, pairs, desc, by_id, counts, doc_level, names
    (asc, pairs, desc, by_id, counts, doc_level, names), errors = with_page(chromium, demo / "demo-bm25/report.html", drive)
    assert errors == []
    assert [by_first[i] for i in asc] == sorted(by_first.values()) and set(asc) == set(expected)
    # n/a cells (queries not counted at chunk level) sort last whichever way
    na = {q["id"] for q in results["queries"] if not q["counted"]["chunk"]}
    assert na and set(asc[-len(na):]) == na and set(desc[-len(na):]) == na
    assert [by_first[i] for i in desc if i not in na] == sorted((v for i, v in by_first.items() if i not in na),
                                                                reverse=True)
    assert all(pairs) and len(pairs) == len(results["queries"])
    assert by_id == sorted(by_first)
    assert counts == sorted(counts)
    assert doc_level == sorted(doc_level) and len(doc_level) == len(results["summary"]["doc"])
    assert names == sorted(names, key=str.lower)


def test_report_md_worst_queries_show_the_evidence(demo):
    results = json.loads((demo / "demo-bm25/results.json").read_text())
    md = (demo / "demo-bm25/report.md").read_text()
    worst = md.split("## Worst queries", 1)[1].split("## Conventions", 1)[0]
    rank16, chunk16 = first_relevant(results, "q16")
    q16 = worst.split("**q16**", 1)[1].split("\n- **", 1)[0]
    assert GOLD["q16"]["relevant"][0]["evidence"][0]["quote"] in q16
    assert f"ranked {rank16}" in q16 and "outranked by:" in q16
    window = [h for h in next(q for q in results["queries"] if q["id"] == "q16")["hits"]][:8]
    for h in window:  # the chunks above the evidence, with their scores
        assert f"{h['rank']}. `{h['chunk_id']}` score {h['score']:.3f}" in q16
    assert "(right document)" in q16
    q43 = worst.split("**q43**", 1)[1].split("\n- **", 1)[0]
    assert "gold document `trouble-slow`" in q43 and GOLD["q43"]["relevant"][0]["evidence"][0]["quote"] in q43
    assert "### missing_document (1, by first relevant rank, not retrieved last)" in worst


def test_png_plots_beside_the_report_and_curves_match_the_summary(demo):
    from harness.result.read import load_result
    from harness.render.plots import curves, ndcg_curve

    folder = demo / "demo-bm25"
    pngs = sorted(p.name for p in folder.glob("*.png"))
    assert pngs == ["plot_first_rank.png", "plot_precision.png", "plot_recall_ndcg.png",
                    "plot_verdicts_by_difficulty.png", "plot_verdicts_by_topic.png"]
    assert all((folder / p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    marker = json.loads((folder / ".harness-output").read_text())
    assert set(pngs) <= set(marker["files"])  # written through the output folder: harness owns them
    r = load_result(folder / "results.json")
    assert ndcg_curve(r)[9] == pytest.approx(r.summary.doc["ndcg@10"], rel=1e-12)
    assert curves(r)[0][4] == pytest.approx(r.summary.chunk["recall@5"], rel=1e-12)
    page = (folder / "report.html").read_text()
    # each plot inline once, beside the calibration section's histogram of top scores (no PNG of its own)
    assert page.count("<svg") - page.count('<svg id="top-score-histogram"') == len(pngs)
    assert page.count('<svg id="top-score-histogram"') == 1


def test_flags_carry_information_on_the_demo(demo):
    results = json.loads((demo / "demo-bm25/results.json").read_text())
    flags = results["summary"]["verdicts"]["flags"]
    # Before: unjudged_in_window on 43 of 46 queries and noisy_context wherever one chunk is relevant.
    assert flags["unjudged_in_window"] <= 15 and flags["noisy_context"] <= 5
    for q in results["queries"]:
        v = q["verdict"]
        if v["kind"] in ("goldset_error", "no_gold"):
            continue
        window = q["hits"][:q["effective_k"]]
        judged = {g["doc_id"] for g in q["gold"]}
        assert v["detail"]["unjudged_share"] == pytest.approx(sum(h["doc_id"] not in judged for h in window) / len(window))
        first = next((h["rank"] for h in window if h["relevant"]), len(window) + 1)
        above = [h["chunk_id"] for h in window if h["doc_id"] not in judged and h["rank"] < first]
        assert ("unjudged_in_window" in v["flags"]) == bool(above), q["id"]
    assert "flags" in results["conventions"] and "min(k, R)" in results["conventions"]["flags"]


def test_compare_table_shows_slices_and_the_ci_note(demo):
    a, b = demo / "demo-bm25/results.json", demo / "demo-hybrid/results.json"
    table = harness("compare", a, b, "-m", "ndcg@10")
    md = harness("compare", a, b, "-m", "ndcg@10", "--format", "md")
    assert table.returncode == md.returncode == 0
    for out in (table.stdout, md.stdout):
        assert "95% CI (uncorrected)" in out and "NOT corrected" in out and "p (corrected)" in out
        assert "difficulty=hard" in out and "topic=billing" in out
    results = json.loads(a.read_text())
    hard = [q["id"] for q in results["queries"] if q["tags"].get("difficulty") == "hard" and q["counted"]["doc"]]
    assert f"(n={len(hard)})" in md.stdout.split("difficulty=hard", 1)[1].splitlines()[0]


def test_report_of_two_runs_puts_windows_side_by_side(chromium, demo, tmp_path):
    a, b = demo / "demo-bm25/results.json", demo / "demo-hybrid/results.json"
    proc = harness("report", a, b, "-o", tmp_path / "cmp.html")
    assert proc.returncode == 0, proc.stderr
    ra, rb = json.loads(a.read_text()), json.loads(b.read_text())
    kb = {q["id"]: q["verdict"]["kind"] for q in rb["queries"]}
    changed = [q["id"] for q in ra["queries"] if q["verdict"]["kind"] != kb[q["id"]]]
    rank16_b, chunk16_b = first_relevant(rb, "q16")

    def drive(page):
        page.select_option("select[data-filter=changed]", "yes")
        shown = page.locator("#side-by-side tbody tr.q:visible td:first-child").all_inner_texts()
        row = page.locator("#side-by-side tr.q", has=page.locator("td:text-is('q16')"))
        row.click()
        d = page.locator("#" + row.get_attribute("data-detail"))
        cols = d.locator(".sbs .col")
        return shown, row.inner_text(), cols.count(), cols.nth(1).inner_text(), page.locator("#ci-note").inner_text()
    (shown, row, n_cols, right, note), errors = with_page(chromium, tmp_path / "cmp.html", drive)
    assert errors == [] and shown == changed and n_cols == 2
    assert f"{ra['queries'][15]['verdict']['kind']} → {kb['q16']}" in row
    assert rank16_b <= rb["queries"][15]["effective_k"] and chunk16_b in right  # the evidence in the new window
    assert "NOT corrected" in note


def test_texts_stitch_a_span_from_chunks_and_never_guess():
    from harness.render.drilldown import Texts

    t = Texts({"d#0-5": "Hello", "d#5-11": " world", "e#0-3": "abc"})
    assert t.span("d", 3, 8) == "lo wo"
    assert t.span("d", 3, 12) is None  # past the known chunks: no text rather than a wrong one
    assert Texts({"d#0-5": "Hell"}).span("d", 0, 2) is None  # a text that does not match its span is not used
    assert Texts(docs={"d": "Hello world"}).span("d", 6, 11) == "world"


@pytest.mark.charts  # reads the charts
def test_pages_fit_a_phone_and_tables_scroll_inside(chromium, demo, tmp_path):
    """At a 390 px phone viewport the page does not scroll sideways (a viewport meta tag; wide tables scroll in
    place), and rows still expand; an expanded row's reason wraps inside the screen (it was laid out at the whole
    table's width, 955 px, and cut mid-word at the screen's edge)."""
    if CHROMIUM is None:
        pytest.skip("no chromium installed")
    proc = harness("report", demo / "demo-bm25/results.json", demo / "demo-hybrid/results.json",
                   "-o", tmp_path / "cmp.html")
    assert proc.returncode == 0, proc.stderr
    for path in (demo / "demo-bm25/report.html", tmp_path / "cmp.html"):
        assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in path.read_text()
        context = chromium.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
        try:
            page = context.new_page()
            page.goto(path.as_uri())
            row = page.locator("tr.q").first
            row.click()
            detail = page.locator("#" + row.get_attribute("data-detail"))
            assert detail.is_visible()
            widths = page.evaluate("() => [window.innerWidth, document.documentElement.scrollWidth,"
                                   " parseFloat(getComputedStyle(document.body).fontSize)]")
            assert widths[0] == 390 and widths[1] <= 390 and widths[2] >= 14, (path, widths)
            reason = detail.locator("p.reason")
            if reason.count():
                box = reason.first.bounding_box()
                assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, (path, box)
            # A chart keeps at least 3/4 of its own width (verdicts by topic, 722 px, was shrunk to half and its
            # labels could not be read) and scrolls in its box; a table wider than the screen shows a shadow at the
            # edge that has more (it was cut at the edge with nothing saying it scrolls).
            charts = page.evaluate("""() => [...document.querySelectorAll('.plot svg')].map(s => [
                s.getBoundingClientRect().width, s.viewBox.baseVal.width * 4 / 3,
                s.parentElement.clientWidth <= 390])""")
            assert charts and all(shown >= 0.75 * own - 1 and fits for shown, own, fits in charts), charts
            assert any(own > 390 / 0.75 for _, own, _ in charts)  # (a chart that does scroll on this screen)
            cues = page.evaluate("""() => [...document.querySelectorAll('table')].filter(
                t => t.scrollWidth > t.clientWidth).map(t => getComputedStyle(t).backgroundImage)""")
            assert cues and all(cue.count("gradient(") == 4 for cue in cues), cues
        finally:
            context.close()


def test_queries_not_counted_show_no_numbers(chromium, demo):
    """A query not counted at a level (goldset_error, no_gold) shows n/a in that level's cells, not a number its
    judgments cannot support, and sorts after the numbers in both directions (sorted descending, the n/a rows came
    first)."""
    results = json.loads((demo / "demo-bm25/results.json").read_text())
    uncounted = {q["id"] for q in results["queries"] if not q["counted"]["doc"] and not q["counted"]["chunk"]}
    assert {"q45", "q46"} <= uncounted

    def drive(page):
        cells = {qid: page.locator("#queries tr.q", has=page.locator(f"td:text-is('{qid}')"))
                 .locator("td").all_inner_texts()[5:8] for qid in sorted(uncounted)}
        header = page.locator("#queries thead th", has_text="doc nDCG@10")
        header.click()
        order = page.locator("#queries tbody tr.q td:first-child").all_inner_texts()
        header.click()
        descending = page.locator("#queries tbody tr.q td:first-child").all_inner_texts()
        return cells, order, descending
    (cells, order, descending), errors = with_page(chromium, demo / "demo-bm25/report.html", drive)
    assert errors == []
    assert all(c == ["n/a", "n/a", "n/a"] for c in cells.values()), cells
    assert set(order[-len(uncounted):]) == uncounted
    assert set(descending[-len(uncounted):]) == uncounted and descending[0] != order[0]


def test_nothing_in_window_cards_name_their_level(demo):
    import re

    from harness.render.fmt import plural

    results = json.loads((demo / "demo-bm25/results.json").read_text())
    page = (demo / "demo-bm25/report.html").read_text()
    cards = dict((label, value) for value, label in re.findall(r'<div class="card"><b>([^<]*)</b>([^<]*)</div>', page))
    for level in ("doc", "chunk"):
        n = results["summary"]["counts"][level]["nothing_found_in_window"]
        assert cards[f"nothing in window ({level} level)"] == plural(n, "query", "queries")
    assert "nothing in window" not in cards


@pytest.mark.charts  # reads the charts
def test_verdict_chart_legends_cover_no_bar(demo):
    """The verdicts-by-tag charts' legend sits below the axes (inside, it covered the tallest bar)."""
    from harness.result.read import load_result
    from harness.render import plots

    charts = plots.run_charts([load_result(demo / "demo-bm25/results.json")])
    try:
        mixes = [c for c in charts if c.name.startswith("plot_verdicts_by_")]
        assert mixes
        for c in mixes:
            fig = c.figure
            fig.canvas.draw()
            renderer = fig.canvas.get_renderer()
            (ax,) = fig.axes
            assert not ax.get_legend() and len(fig.legends) == 1
            legend, axes = fig.legends[0].get_window_extent(renderer), ax.get_window_extent(renderer)
            assert legend.y1 <= axes.y0, c.name
            ticks = ax.get_xaxis().get_tightbbox(renderer)
            assert legend.y1 <= ticks.y0 + 1, c.name  # below the rotated tick labels too
    finally:
        plots.close(charts)


def test_whole_document_evidence_says_which_text_it_shows(chromium, demo):
    """A whole-document judgment's evidence row shows one chunk's text, and says so (not just "evidence text")."""
    results = json.loads((demo / "demo-bm25/results.json").read_text())
    q = next(q for q in results["queries"] if q["id"] == "q08")
    best = next(h for h in q["hits"] if h["doc_id"] == "trouble-login")

    def drive(page):
        detail = expand(page, "q08")
        row = detail.locator("table.evidence tbody tr", has=page.locator("td:text-is('whole document')"))
        return row.locator("td.ev-text").inner_text()
    text, errors = with_page(chromium, demo / "demo-bm25/report.html", drive)
    assert errors == []
    assert text.startswith(f"its best-ranked chunk, {best['chunk_id']}:")


def test_metric_tables_say_how_at_k_and_at_window_count_documents(demo):
    md = (demo / "demo-bm25/report.md").read_text()
    table, after = md.split("## Metrics", 1)[1].split("\n\n", 1)
    assert "| hit@5 |" in table and "| hit@window |" in table
    assert after.startswith("At doc level, @5 counts the top 5 distinct documents; @window counts the documents of "
                            "the window's chunks")
    assert 'id="at-k">At doc level, @5 counts' in (demo / "demo-bm25/report.html").read_text()


@pytest.mark.charts  # reads the charts
def test_every_run_chart_labels_its_axes(demo):
    from harness.result.read import load_result
    from harness.render import plots

    charts = plots.run_charts([load_result(demo / "demo-bm25/results.json")])
    try:
        for c in charts:
            (ax,) = c.figure.axes
            assert ax.get_xlabel() or c.name.startswith("plot_verdicts_by_"), c.name  # tick labels name the slices
            assert ax.get_ylabel(), c.name
    finally:
        plots.close(charts)
