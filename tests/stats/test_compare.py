import itertools
import math

import numpy as np
import pytest

from harness.stats.compare import (bootstrap_ci, compare_runs, correct, mde, p_value, randomization_p, split_metric)
from harness.core.errors import InputError
from resultfactory import fake_result


def exact_sign_flip_p(d):
    observed = abs(d.mean())
    flips = [abs((np.array(s) * d).mean()) >= observed - 1e-12 for s in itertools.product([-1, 1], repeat=len(d))]
    return sum(flips) / len(flips)


@pytest.mark.parametrize("d", [[0.1, 0.2, -0.05, 0.3, 0.0, 0.15, 0.2, 0.1], [0.5, -0.5, 0.25, 0.1, -0.2, 0.05],
                               [0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.1]])
def test_randomization_matches_exact_enumeration(d):
    d = np.array(d)
    assert randomization_p(d, 10_000, seed=1) == pytest.approx(exact_sign_flip_p(d), abs=0.012)


def test_randomization_p_formula_floor():
    d = np.full(30, 0.2)  # every flip but the identity is smaller: p is (count + 1)/(perms + 1)
    p = randomization_p(d, 999)
    assert p == pytest.approx(1 / 1000)


def test_ttest_and_wilcoxon_match_scipy():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(3)
    a = rng.random(40)
    b = a + rng.normal(0.05, 0.1, 40)
    assert p_value("ttest", a, b) == pytest.approx(stats.ttest_rel(b, a).pvalue)
    assert p_value("wilcoxon", a, b) == pytest.approx(stats.wilcoxon(b, a).pvalue)


def test_holm_and_bonferroni_arithmetic():
    p = [0.01, 0.04, 0.03]
    assert correct(p, "bonferroni") == pytest.approx([0.03, 0.12, 0.09])
    # Holm: sorted 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 -> max(0.06, 0.04) = 0.06
    assert correct(p, "holm") == pytest.approx([0.03, 0.06, 0.06])
    assert correct(p, "none") == p


def test_bootstrap_ci_covers_the_mean_and_mde_formula():
    d = np.array([0.1, 0.2, 0.0, 0.3, 0.1, 0.2])
    lo, hi, _ = bootstrap_ci(d)
    assert lo < d.mean() < hi
    assert mde(d) == pytest.approx((1.959963984540054 + 0.8416212335729143) * d.std(ddof=1) / np.sqrt(6))


def test_metric_names_split_by_level():
    assert split_metric("nDCG@10") == ("doc", "ndcg@10")
    assert split_metric("chunk.R@5") == ("chunk", "recall@5")
    assert split_metric("chunk.recall@window") == ("chunk", "recall@window")


def fake(name, values, kinds, gold="g1", counted=None, describe="k=5"):
    return fake_result(name, values, kinds, gold=gold, counted=counted, describe=describe)


def test_compare_rows_and_transitions():
    a = fake("a", [0.5, 0.2, 1.0, 0.0], ["ok", "buried_evidence", "ok", "missing_document"])
    b = fake("b", [0.7, 0.2, 0.9, 0.4], ["ok", "ok", "ok", "ok"])
    c = compare_runs([a, b], ["ndcg@10"])
    row = c.rows[0]
    assert row.delta == pytest.approx((0.2 + 0 - 0.1 + 0.4) / 4)
    assert (row.wins, row.ties, row.losses) == (2, 1, 1)
    assert c.transitions["b"] == {"buried_evidence -> ok": ["q1"], "missing_document -> ok": ["q3"]}
    assert row.slices["topic=a"]["delta"] == pytest.approx((0 + 0.4) / 2)
    assert c.to_dict()["rows"][0]["ci95"] == list(row.ci95)


def test_compare_pairs_only_the_counted_queries():
    """The baseline mean is the run's summary mean: queries a run does not count are not paired, whatever their
    verdict kind or relevant counts say; a query counted by one run only is left out, with a warning."""
    a = fake("a", [0.5, 0.9, 1.0, 0.0], ["ok"] * 4, counted=[True, False, True, True])
    b = fake("b", [0.7, 0.1, 0.9, 0.4], ["ok"] * 4, counted=[True, False, True, False])
    c = compare_runs([a, b], ["ndcg@10"])
    row = c.rows[0]
    assert row.n == 2 and row.baseline_mean == pytest.approx((0.5 + 1.0) / 2) and row.mean == pytest.approx(0.8)
    assert c.warnings == ["a and b count different queries at doc level; 1 left out of the pairing: q3"]
    same = compare_runs([a, fake("c", [0.1, 0.2, 0.3, 0.4], ["ok"] * 4, counted=[True, False, True, True])],
                        ["ndcg@10"])
    assert same.rows[0].baseline_mean == a.summary.doc["ndcg@10"] and same.rows[0].n == 3 and not same.warnings


def test_compare_refuses_different_golden_sets_and_warns_on_cutoffs():
    a = fake("a", [0.5], ["ok"])
    with pytest.raises(InputError, match="different golden sets"):
        compare_runs([a, fake("b", [0.5], ["ok"], gold="g2")], ["ndcg@10"])
    b = fake("b", [0.5], ["ok"], describe="k=10")
    assert compare_runs([a, b], ["ndcg@10"]).warnings == ["cutoffs differ: a k=5, b k=10"]


def test_markdown_warnings_stand_apart_from_the_table():
    """`> warning: ...` right before the table made CommonMark readers swallow the table into the quote (and two
    warnings into one paragraph): each warning is its own quote, followed by a blank line."""
    from markdown_it import MarkdownIt

    from harness.render.compare_view import to_markdown

    a = fake("a", [0.5, 0.9, 1.0, 0.0], ["ok"] * 4, counted=[True, True, True, True])
    b = fake("b", [0.7, 0.1, 0.9, 0.4], ["ok"] * 4, counted=[True, True, True, False], describe="k=10")
    c = compare_runs([a, b], ["ndcg@10"])
    assert len(c.warnings) == 2
    tokens = MarkdownIt("commonmark").enable("table").parse(to_markdown(c))
    depth, quotes, tables_in_quote, tables = 0, 0, 0, 0
    for t in tokens:
        depth += {"blockquote_open": 1, "blockquote_close": -1}.get(t.type, 0)
        quotes += t.type == "blockquote_open"
        tables += t.type == "table_open"
        tables_in_quote += t.type == "table_open" and depth > 0
    assert quotes == 2 and tables >= 1 and tables_in_quote == 0


@pytest.mark.parametrize("columns", [60, 80, 100, 120, 160])
def test_terminal_table_never_cuts_a_number(columns, capsys, monkeypatch):
    """`harness compare` in a terminal: every number of every row appears whole at any width (rich's ellipsis cut
    them at 80-120 columns); a too-narrow terminal gets one block per row."""
    import sys

    from harness.render.compare_view import cells, print_table

    a = fake("a", [0.5, 0.2, 1.0, 0.0], ["ok", "buried_evidence", "ok", "missing_document"])
    b = fake("a-long-run-name-for-the-hybrid-retriever", [0.7, 0.2, 0.9, 0.4], ["ok"] * 4)
    c = compare_runs([a, b], ["ndcg@10", "chunk.ndcg@10"])
    monkeypatch.setenv("COLUMNS", str(columns))
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    print_table(c)
    import re

    out = re.sub(r"\x1b\[[0-9;]*m", "", capsys.readouterr().out)
    assert "…" not in out
    assert max(len(line) for line in out.splitlines()) <= columns
    for r in c.rows:
        for x in cells(r)[2:]:
            for word in x.split():
                assert word in out, (columns, word)


def test_the_note_names_what_makes_a_ci_and_a_p_disagree():
    """A CI that excludes 0 on a row that is not significant: the note blames the correction only when the
    uncorrected p is below 0.05; otherwise the test and the CI disagree (in every format)."""
    from dataclasses import replace

    from harness.render.compare_html import html_tables
    from harness.render.compare_view import disagreements, to_markdown

    a = fake("a", [0.5, 0.2, 1.0, 0.0], ["ok"] * 4)
    b = fake("b", [0.7, 0.2, 0.9, 0.4], ["ok"] * 4)
    c = compare_runs([a, b], ["ndcg@10"])
    base = c.rows[0]
    c = replace(c, rows=[replace(base, ci95=(0.01, 0.2), p=0.1255, p_corrected=0.1255, significant=False, wins=4, ties=39,
                      losses=0, n=43),
              replace(base, metric="doc.rr@10", ci95=(0.01, 0.2), p=0.02, p_corrected=0.06, significant=False),
              replace(base, metric="doc.ap", ci95=(-0.01, 0.2), p=0.3, p_corrected=0.3, significant=False)])
    method, correction = disagreements(c)
    assert "uncorrected p (0.1255, the same as the corrected p) is above 0.05" in method
    assert "4 of 43 queries differ" in method and "correction is not the cause" in method
    assert "uncorrected p (0.0200) is below 0.05" in correction and "correction for multiple comparisons" in correction
    assert "doc.ap" not in method + correction  # ap's CI and p agree: the note does not name it
    for out in (to_markdown(c), html_tables(c)):
        assert "correction is not the cause" in out and "makes the difference" in out


def test_comparison_cells_sort_by_their_numbers_in_the_page():
    """report.html's sorter reads a cell's data-sort when it has one (as the queries table's ranks do), else its
    text, a number only when the text is one: W/T/L sorts by wins minus losses ("12/80/3" is text and would sort
    below "3/90/2"), a significant delta ("+0.0120 *") by its value, the CI by its lower end, n/a last (empty key)."""
    import re
    from dataclasses import replace

    from harness.render.compare_html import html_tables

    a = fake("a", [0.5, 0.2, 1.0, 0.0], ["ok"] * 4)
    b = fake("b", [0.7, 0.2, 0.9, 0.4], ["ok"] * 4)
    base = compare_runs([a, b], ["ndcg@10"]).rows[0]
    rows = [replace(base, metric="doc.ap", wins=12, ties=80, losses=3, delta=0.012, significant=True,
                    ci95=(0.004, 0.02)),
            replace(base, metric="doc.rr@10", wins=3, ties=90, losses=2, delta=-0.05, significant=False,
                    ci95=(-0.09, -0.01)),
            replace(base, metric="doc.ndcg@10", n=0, wins=0, ties=0, losses=0, baseline_mean=None, mean=None,
                    delta=None, ci95=None, p=None, p_corrected=None, significant=False, mde=None)]
    c = replace(compare_runs([a, b], ["ndcg@10"]), rows=rows)
    table = html_tables(c).split('id="comparison"', 1)[1].split("</table>", 1)[0]
    body_rows = re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>", 1)[1])
    cells = [re.findall(r'<td(?: data-sort="([^"]*)")?>([^<]*)</td>', row) for row in body_rows]
    header = re.findall(r"<th>([^<]*)</th>", table)
    at = {h: header.index(h) for h in ("delta", "95% CI (uncorrected)", "W/T/L", "baseline")}
    assert [row[at["W/T/L"]] for row in cells] == [("9", "12/80/3"), ("1", "3/90/2"), ("0", "0/0/0")]
    assert [row[at["delta"]] for row in cells] == [("0.012", "+0.0120 *"), ("-0.05", "-0.0500"), ("", "n/a")]
    assert [row[at["95% CI (uncorrected)"]][0] for row in cells] == ["0.004", "-0.09", ""]
    assert cells[0][at["baseline"]][0] == "" and cells[2][at["baseline"]] == ("", "n/a")  # a number: its own text


def test_without_a_correction_nothing_says_corrected():
    """`--correction none` showed "p (corrected)", "none correction" and "significant after correction"."""
    from harness.render.compare_html import html_tables
    from harness.render.compare_view import to_markdown

    a = fake("a", [0.5, 0.2, 1.0, 0.0], ["ok"] * 4)
    b = fake("b", [0.7, 0.2, 0.9, 0.4], ["ok"] * 4)
    for correction, said in (("none", ("| p |", "(randomization test, no correction)", "significant (p < 0.05, not "
                                       "corrected)")),
                             ("holm", ("| p (corrected) |", "(randomization test, holm correction)",
                                       "significant after correction"))):
        c = compare_runs([a, b], ["ndcg@10"], correction=correction)
        markdown = to_markdown(c)
        assert all(text in markdown for text in said), markdown
        claims = ("p (corrected)", "corrected p", "after correction")
        assert any(claim in markdown for claim in claims) == (correction != "none"), markdown
        assert ("corrected" in html_tables(c).split("<th>p")[1][:12]) == (correction != "none")


def test_a_delta_is_the_difference_of_the_means_it_is_shown_with():
    """The mean of the paired differences is the difference of the means only up to rounding: delta was
    0.0016121730680606265 beside means whose difference is 0.0016121730680606072 (the gate showed the first)."""
    rng = np.random.default_rng(7)
    values_a, values_b = rng.random(997).tolist(), rng.random(997).tolist()
    a = fake("a", values_a, ["ok"] * 997)
    b = fake("b", values_b, ["ok"] * 997)
    row = compare_runs([a, b], ["ndcg@10"]).rows[0]
    assert row.delta == row.mean - row.baseline_mean
    assert row.mean == math.fsum(values_b) / 997 and row.baseline_mean == math.fsum(values_a) / 997
