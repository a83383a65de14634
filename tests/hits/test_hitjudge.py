"""The columnar paths over a run's hits (core/hitjudge, HitTable.trec_blocks) against the object paths they replace
(a Hit and a HitRecord per hit): hits.parquet's rows, both TREC files, the relevance flags and doc gains the report's
curves read, and the chunks chunks.parquet keeps, equal on random runs with ties, repeated documents, empty
rankings, grades of 0 and below, and judgments of chunks and documents the run never retrieved."""

from __future__ import annotations

import random

import numpy as np
import pytest

from harness.hits.table import HitTableBuilder
from harness.core.types import Chunk, Hit, RankedList, RankedRun
from harness.hits.parquet import RunHits
from harness.retrievers.ranking import rank_hits


def _run(seed: int, n_docs: int = 40, n_queries: int = 2_300, depth: int = 12):
    rng = random.Random(seed)
    chunks = [Chunk(f"d{d}#{c * 10}-{c * 10 + 10}", f"d{d}", c * 10, c * 10 + 10, "x", "x")
              for d in range(n_docs) for c in range(rng.randint(1, 4))]
    lists, chunk_grades, doc_grades = [], {}, {}
    for q in range(n_queries):
        qid = f"q{q}"
        picked = rng.sample(chunks, rng.randint(0, min(depth, len(chunks))))
        hits = [Hit(c.chunk_id, c.doc_id, float(rng.randint(0, 5)) / 3, 0, c.start, c.end) for c in picked]
        lists.append(rank_hits(qid, hits))
        judged = rng.sample(chunks, rng.randint(0, 6))  # retrieved or not
        chunk_grades[qid] = {c.chunk_id: rng.choice([-1, 0, 1, 2]) for c in judged}
        doc_grades[qid] = {c.doc_id: rng.choice([-1, 0, 1, 3]) for c in judged}
    builder = HitTableBuilder(chunks)
    builder.add(lists)
    table = builder.build(chunks)
    window_k = [rng.randint(0, depth) for _ in lists]
    by_id = {c.chunk_id: c for c in chunks}
    return (RunHits(lists, chunk_grades, doc_grades, window_k, by_id),
            RunHits(table, chunk_grades, doc_grades, window_k, by_id))


@pytest.mark.parametrize("seed", [0, 1])
def test_hits_parquet_rows_are_the_records(seed):
    import pyarrow as pa

    objects, columns = _run(seed)
    assert columns.judged is not None and objects.judged is None
    expected = pa.Table.from_batches(list(objects.batches()))
    got = pa.Table.from_batches(list(columns.batches()))
    assert got.schema == expected.schema
    assert got.to_pylist() == expected.to_pylist()
    assert sum(b.num_rows for b in columns.batches()) == sum(len(r.hits) for r in objects.lists)
    # and each row is the query's HitRecord, as results.json keeps it
    rows = got.to_pylist()
    i = 0
    for q, ranked in enumerate(objects.lists):
        for record in objects.records(q):
            assert {"query_id": ranked.query_id, **record.model_dump()} == rows[i]
            i += 1


@pytest.mark.parametrize("level", ["doc", "chunk"])
def test_trec_files_from_columns_match_line_by_line(level):
    objects, columns = _run(3)
    by_objects = "".join(RankedRun("r", tuple(objects.lists)).trec_lines(level))
    by_columns = "".join(RankedRun("r", columns.lists).trec_lines(level))
    assert by_columns == by_objects
    assert by_columns.count("\n") == sum(len({h.doc_id if level == "doc" else h.chunk_id for h in r.hits})
                                         for r in objects.lists)


def test_relevance_doc_gains_and_chunk_ids_match():
    objects, columns = _run(4)
    for a, b in zip(objects.relevance(), columns.relevance(), strict=True):
        assert a[0] == b[0] and a[1].tolist() == b[1].tolist()
    for a, b in zip(objects.doc_gains(), columns.doc_gains(), strict=True):
        assert a[0] == b[0] and a[1].tolist() == b[1].tolist()
    assert columns.hit_chunk_ids() == objects.hit_chunk_ids()
    # found independently: the first query with a relevant hit has its flags where its chunk grades say
    for ranked, (qid, flags) in zip(objects.lists, columns.relevance()):
        grades = objects.chunk_grades[qid]
        assert flags.tolist() == [grades.get(h.chunk_id, 0) >= 1 for h in ranked.hits]


def test_hits_of_one_query_from_a_table_does_not_walk_the_run():
    _, columns = _run(5, n_queries=50)
    records = columns.hits("q17")
    assert [r.rank for r in records] == list(range(1, len(records) + 1))
    assert all(isinstance(r.score, float) for r in records)
    assert np.array_equal([r.chunk_id for r in records], [h.chunk_id for h in columns.lists[17].hits])


def test_empty_run_and_no_judgments():
    chunks = [Chunk("a#0-1", "a", 0, 1, "x", "x")]
    builder = HitTableBuilder(chunks)
    builder.add([RankedList("q", ())])
    table = builder.build(chunks)
    store = RunHits(table, {}, {}, [0], {c.chunk_id: c for c in chunks})
    assert [b.num_rows for b in store.batches()] == [0]
    assert [(q, f.tolist()) for q, f in store.relevance()] == [("q", [])]
    assert "".join(RankedRun("r", table).trec_lines("doc")) == ""


@pytest.mark.parametrize("read_rows", [65_536, 7])
def test_a_saved_runs_relevance_and_doc_gains_read_back(tmp_path, monkeypatch, read_rows):
    """hits.parquet read back (``ParquetHits``, what report and compare use on a loaded results.json), a batch of
    whole queries at a time: with 7-row reads every query of more than a few hits is cut across reads."""
    from harness.hits import parquet as hitsfile

    monkeypatch.setattr(hitsfile, "READ_ROWS", read_rows)
    objects, columns = _run(6, n_queries=400)
    hitsfile.write_hits(tmp_path / "hits.parquet", columns)
    saved = hitsfile.ParquetHits(tmp_path / "hits.parquet")
    answered = [r.query_id for r in objects.lists if r.hits]  # a query with no hit has no row in the file
    assert [q for q, _ in saved.relevance()] == answered
    want = {q: f.tolist() for q, f in objects.relevance()}
    assert all(f.tolist() == want[q] for q, f in saved.relevance())
    want = {q: g.tolist() for q, g in objects.doc_gains()}
    got = list(saved.doc_gains())
    assert [q for q, _ in got] == answered and all(g.tolist() == want[q] for q, g in got)
