"""A loaded golden set held as columns (core/goldcolumns, issue 14) reads exactly as the tuples of Query and
Judgment objects it replaces: checked against an independent object-building resolver on random raw golden sets
(tags, unicode texts, queries without judgments, unknown documents, quotes and spans that resolve or not), by
index, slice, iteration, per query and through every GoldSet method; and the memory it saves is measured."""

from __future__ import annotations

import random
import sys

import pytest

from harness.gold.columns import GoldColumnsBuilder, JudgmentColumn, QueryColumn
from harness.core.types import Chunk, Document, GoldSet, Judgment, Query, Span
from harness.gold.load import RawEvidence, RawJudgment, RawQuery
from harness.gold.resolve import chunk_qrels, doc_qrels, resolve_goldset

WORDS = ["alpha", "beta", "gamma", "délta", "ε", "日本語", "x"]


def _corpus(rng: random.Random) -> dict[str, Document]:
    return {f"d{i}": Document(f"d{i}", " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12))))
            for i in range(rng.randint(1, 6))}


def _raw(rng: random.Random, docs: dict[str, Document]) -> list[RawQuery]:
    out = []
    for i in range(rng.randint(0, 15)):
        relevant = []
        for doc in rng.sample(sorted(docs) + ["missing"], rng.randint(0, min(3, len(docs) + 1))):
            evidence = []
            for _ in range(rng.randint(0, 3)):
                text = docs[doc].text if doc in docs else "zzz"
                if rng.random() < 0.5:  # a quote, found or not
                    a = rng.randrange(len(text))
                    evidence.append(RawEvidence(quote=text[a:a + rng.randint(1, 5)] if rng.random() < 0.8 else "nope"))
                else:  # a span, in range or not
                    a = rng.randrange(len(text) + 3)
                    evidence.append(RawEvidence(a, a + rng.randint(1, 6)))
            relevant.append(RawJudgment(doc, rng.randint(-1, 3), evidence))
        tags = {"lang": rng.choice(["en", "fr"])} if rng.random() < 0.4 else {}
        if tags and rng.random() < 0.5:
            tags["kind"] = rng.choice(["how", "why"])
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 5)))
        out.append(RawQuery(f"q{i}", text, tags, relevant, f"g.jsonl:{i + 1}"))
    return out


def _by_objects(raw: list[RawQuery], docs: dict[str, Document]) -> GoldSet:
    """What resolve_goldset built before the columns: a tuple of Query and of Judgment objects (written again here:
    a quote found once is its place in the text; a span past the text's end is dropped, as are quotes found
    nowhere or more than once)."""
    queries, judgments = [], []
    for rq in raw:
        queries.append(Query(rq.query_id, rq.text, dict(rq.tags)))
        for rj in rq.relevant:
            doc = docs.get(rj.doc_id)
            spans = []
            for ev in rj.evidence if doc is not None else ():
                if ev.quote is not None:
                    places = [i for i in range(len(doc.text)) if doc.text.startswith(ev.quote, i)]
                    if len(places) == 1:
                        spans.append(Span(places[0], places[0] + len(ev.quote)))
                elif ev.end <= len(doc.text):
                    spans.append(Span(ev.start, ev.end))
            judgments.append(Judgment(rq.query_id, rj.doc_id, rj.grade, tuple(spans)))
    return GoldSet("g", tuple(queries), tuple(judgments))


@pytest.mark.parametrize("seed", range(40))
def test_a_resolved_golden_set_reads_as_its_objects(seed):
    rng = random.Random(seed)
    docs = _corpus(rng)
    raw = _raw(rng, docs)
    gold, _ = resolve_goldset(raw, docs, "g")
    want = _by_objects(raw, docs)
    assert isinstance(gold.queries, QueryColumn) and isinstance(gold.judgments, JudgmentColumn)
    assert gold == want and want == gold  # either way round
    assert list(gold.queries) == list(want.queries) and list(gold.judgments) == list(want.judgments)
    assert gold.queries == want.queries and gold.judgments == want.judgments
    assert len(gold.queries) == len(want.queries) and len(gold.judgments) == len(want.judgments)
    for seq, ref in ((gold.queries, want.queries), (gold.judgments, want.judgments)):
        for i in range(len(ref)):
            assert seq[i] == ref[i] and seq[i - len(ref)] == ref[i - len(ref)]
        for lo, hi in ((0, 3), (2, None), (None, None), (-3, -1)):
            assert seq[lo:hi] == list(ref[lo:hi])
        assert seq[::2] == list(ref[::2])
        for bad in (len(ref), -len(ref) - 1):
            with pytest.raises(IndexError):
                seq[bad]
    assert list(gold.query_ids()) == want.query_ids()
    assert [list(x) for x in gold.judgments_per_query()] == [list(x) for x in want.judgments_per_query()]
    assert gold.judgments_by_query() == want.judgments_by_query()
    assert gold.tags_by_query() == want.tags_by_query()
    assert list(gold.tags_by_query()) == [q.query_id for q in want.queries if q.tags]
    assert gold.has_evidence == want.has_evidence
    # the levels made from either are the same
    chunks = [Chunk(f"{d}#0-{len(doc.text)}", d, 0, len(doc.text), doc.text, doc.text) for d, doc in docs.items()]
    assert doc_qrels(gold) == doc_qrels(want) and chunk_qrels(gold, chunks) == chunk_qrels(want, chunks)


def test_columns_are_not_equal_to_other_things():
    gold = resolve_goldset([RawQuery("q1", "t", {}, [], "g:1")], {}, "g")[0]
    assert gold.queries == (Query("q1", "t"),) and gold.queries == [Query("q1", "t")]
    assert gold.queries != (Query("q1", "other"),) and gold.queries != () and gold.queries != "q1"
    assert gold.queries != 3 and gold.judgments == () and gold.judgments != (Judgment("q1", "d", 1),)
    with pytest.raises(TypeError):
        hash(gold.queries)


def test_an_empty_golden_set():
    gold = GoldSet("g", *GoldColumnsBuilder().build())
    assert len(gold.queries) == 0 and not gold.queries and list(gold.judgments) == []
    assert not gold.has_evidence and list(gold.judgments_per_query()) == [] and gold.tags_by_query() == {}


def test_a_query_text_round_trips_any_unicode():
    texts = ["", "plain", "naïve café", "日本語のテキスト", "emoji 🙂 and \u0000 nul", "a\nb\tc"]
    builder = GoldColumnsBuilder()
    for i, text in enumerate(texts):
        builder.add_query(f"q{i}", text, {})
    queries, _ = builder.build()
    assert [q.text for q in queries] == texts and [queries.text(i) for i in range(len(texts))] == texts


def test_the_columns_hold_far_less_than_the_objects():
    """~340 bytes a query as objects (Query, its text and tags dict, a Judgment, the tuples) against ~110 as
    columns, the id strings (shared by every table) aside: a 1M-query run holds ~230 MB less."""
    n = 20_000
    builder, objects = GoldColumnsBuilder(), ([], [])
    ids = [f"q{i:07d}" for i in range(n)]
    for i, qid in enumerate(ids):
        text = f"zqi zqb zqa zqa zqbf {i:06d}"
        builder.add_query(qid, text, {})
        builder.add_judgment("d1", 1, ())
        objects[0].append(Query(qid, text, {}))
        objects[1].append(Judgment(qid, "d1", 1, ()))
    queries, judgments = builder.build()

    def size(x):  # an array's own bytes (its object pointers for the ids), a bytes object's size
        return x.nbytes if hasattr(x, "nbytes") else sys.getsizeof(x)

    columns = sum(map(size, (queries.ids, queries._text_data, queries._text_offsets, judgments.query_offsets,
                             judgments.doc_ids, judgments.grades, judgments.span_offsets)))
    as_objects = (sys.getsizeof(tuple(objects[0])) + sys.getsizeof(tuple(objects[1]))
                  + sum(sys.getsizeof(q) + sys.getsizeof(q.text) + sys.getsizeof(q.tags) for q in objects[0])
                  + sum(map(sys.getsizeof, objects[1])))
    assert columns / n < 90 and as_objects / n > 250, (columns / n, as_objects / n)
