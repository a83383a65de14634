"""Issue 38: MTEB's nAUC, the confidences and the suggested abstention threshold, as worked arithmetic."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.metrics.calibration import (abstention_curve, confidences, confidences_of_lists, nauc, rates_at,
                                         suggested_threshold)


def trapezoid(curve):  # over r = 0, 0.1, ..., 0.9
    return sum(0.1 * (a + b) / 2 for a, b in zip(curve, curve[1:]))


def test_confidences_are_top_score_margin_and_population_std():
    assert confidences([3.0, 9.0, 5.0]) == (9.0, 4.0, pytest.approx(math.sqrt(((3 - 17 / 3) ** 2 + (9 - 17 / 3) ** 2
                                                                               + (5 - 17 / 3) ** 2) / 3)))
    assert confidences([2.5]) == (2.5, 0.0, 0.0)  # one hit: no margin, no spread (MTEB's)
    assert confidences([]) == (-np.inf, -np.inf, -np.inf)  # no hit: the least confident


def test_nauc_of_four_queries_worked_by_hand():
    # queries 0..3: confidence 4, 3, 2, 1; values 1, 0.5, 0, 0.5. Abstaining on round(r * 4) least confident:
    # r = 0, 0.1 -> none; 0.2, 0.3 -> 1; 0.4, 0.5 (2.0), 0.6 (2.4) -> 2; 0.7, 0.8, 0.9 (3.6, capped at n - 1) -> 3
    conf, values = [4, 3, 2, 1], [1.0, 0.5, 0.0, 0.5]
    kept = [2 / 4, 2 / 4, 1.5 / 3, 1.5 / 3, 1.5 / 2, 1.5 / 2, 1.5 / 2, 1, 1, 1]  # drop q3, then q2, then q1
    assert abstention_curve(np.array(conf, float), np.array(values)).tolist() == pytest.approx(kept)
    oracle = [0.5, 0.5, 2 / 3, 2 / 3, 0.75, 0.75, 0.75, 1, 1, 1]  # drop the 0, then a 0.5, then the other 0.5
    flat = 0.5 * 0.9
    expected = (trapezoid(kept) - flat) / (trapezoid(oracle) - flat)
    assert expected == pytest.approx(6 / 7)
    assert nauc(conf, values) == pytest.approx(6 / 7)


def test_a_confidence_that_ranks_like_the_metric_is_the_oracle_and_its_reverse_is_below_zero():
    values = [0.1, 0.9, 0.4, 0.7, 0.0]
    assert nauc(values, values) == pytest.approx(1.0)
    assert nauc([-v for v in values], values) < 0


def test_tied_confidences_keep_their_group_mean():
    # every confidence equal: any cut keeps the mean of all, which is the flat curve: nAUC 0 (MTEB's #5613; a cut
    # by query order would have made it depend on the order of the golden set)
    assert nauc([1, 1, 1, 1], [1.0, 0.0, 0.0, 0.0]) == pytest.approx(0.0)
    assert nauc([1, 1, 1, 1], [0.0, 0.0, 0.0, 1.0]) == pytest.approx(0.0)


def test_against_mteb_nauc():
    # The value MTEB's own nauc (mteb 2.26.24, mteb/_evaluators/retrieval_metrics.py) gives for these inputs; ties
    # in confidence on purpose.
    conf = [0.5, 0.2, 0.9, 0.2, 0.7, 0.5, 0.1, 0.9]
    values = [0.3, 0.0, 1.0, 0.5, 0.6, 0.0, 0.2, 0.8]
    assert nauc(conf, values) == pytest.approx(0.8316555079235104, abs=1e-12)


def test_no_nauc_without_two_different_values():
    assert nauc([1.0], [1.0]) is None
    assert nauc([1.0, 2.0], [0.5, 0.5]) is None  # the oracle is no better than flat


def test_suggested_threshold_minimises_the_sum_of_both_rates():
    answerable, unanswerable = [9.0, 6.0, 4.0], [7.0, 3.0]
    # t = 3: lost 0/3, false 2/2 -> 1; t = 4: 0 + 1/2; t = 6: 1/3 + 1/2; t = 7: 2/3 + 1/2; t = 9: 2/3 + 0; above: 1
    assert suggested_threshold(answerable, unanswerable) == 4.0
    r = rates_at(4.0, answerable, unanswerable)
    assert (r.false_answers, r.unanswerable, r.lost_answers, r.answerable) == (1, 2, 0, 3)
    assert (r.false_answer_rate, r.lost_answer_rate) == (0.5, 0.0)


def test_equal_sums_take_the_lowest_threshold_and_missing_rates_add_nothing():
    # t = 2: 0 + 2/3; t = 4: 1/3 + 1/3; t = 6: 2/3 + 0 (and 1 at t = 1, 3, 5, above 6): the lowest of the three
    assert suggested_threshold([2.0, 4.0, 6.0], [1.0, 3.0, 5.0]) == 2.0
    # t = 1: 0/6 + 5/6; t = 5: 2/6 + 3/6; t = 6: 3/6 + 2/6; every other candidate more. Equal exactly (in floating
    # point 2/6 + 3/6 is 0.8333333333333333 and 5/6 is 0.8333333333333334: a float argmin picks 5)
    assert suggested_threshold([1.0, 2.0, 5.0, 6.0, 6.0, 6.0], [0.0, 4.0, 4.0, 5.0, 7.0, 10.0]) == 1.0
    # no unanswerable query: the lowest top score (every query answered, nothing lost)
    assert suggested_threshold([5.0, 2.0], []) == 2.0
    r = rates_at(2.0, [5.0, 2.0], [])
    assert r.false_answer_rate is None and r.lost_answer_rate == 0.0
    assert suggested_threshold([-np.inf], [-np.inf]) is None  # no hit anywhere: no top score to choose from


def test_a_query_without_hits_is_never_answered():
    r = rates_at(0.0, [-np.inf, 1.0], [-np.inf])
    assert (r.lost_answers, r.false_answers) == (1, 0)


def test_the_columns_give_each_query_its_own_confidences():
    # query 0 in rank order, query 1 empty, query 2 out of order (a run ordered by rank), query 3 one hit
    scores = [9.0, 5.0, 1.0, 2.0, 7.0, 3.0, 4.0]
    offsets = [0, 3, 3, 6, 7]
    got = confidences_of_lists(np.array(offsets), np.array(scores))
    for i in range(4):
        assert got[i].tolist() == pytest.approx(list(confidences(scores[offsets[i]:offsets[i + 1]])))
    assert got[2].tolist() == pytest.approx([7.0, 4.0, math.sqrt(((2 - 4) ** 2 + (7 - 4) ** 2 + (3 - 4) ** 2) / 3)])
    rng = np.random.default_rng(0)
    lengths = rng.integers(0, 6, 200)
    offsets = np.r_[0, np.cumsum(lengths)]
    scores = rng.normal(size=offsets[-1])
    got = confidences_of_lists(offsets, scores)
    for i in range(200):
        assert got[i].tolist() == pytest.approx(list(confidences(scores[offsets[i]:offsets[i + 1]])))
    assert np.array_equal(confidences_of_lists(offsets, scores, block=7), got)  # read a few queries at a time
