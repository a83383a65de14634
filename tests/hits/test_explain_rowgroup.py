"""``ParquetHits.hits`` (what ``harness explain`` reads for a query whose hits results.json does not keep) reads only
the row group(s) holding the query: the one group whose query_id statistics admit the id, else the group of the
query's batch found by its position in results.json and the batch starts ``write_hits`` records in the file's
metadata. Every answer is the one the filter over the whole file gives: on runs of 3,500 queries (4 row groups of
``BATCH_QUERIES``) with ids in sorted, mixed and random order, queries with no hit, a batch split over several row
groups, a file written before the index and a result that does not match the file."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pyarrow.parquet as pq
import pytest

from harness.core.errors import InputError
from harness.hits.judge import BATCH_QUERIES
from harness.hits.table import HitTableBuilder
from harness.core.types import Chunk, Hit
from harness.hits import parquet as hitsfile, parquet_index as hitsindex
from harness.hits.parquet import ParquetHits, RunHits, write_hits
from harness.hits.parquet_index import INDEX_KEY
from harness.retrievers.ranking import rank_hits

N_QUERIES = 3_500


def _ids(kind: str, rng: random.Random) -> list[str]:
    if kind == "sorted":  # zero-padded: each row group's statistics admit its own ids only
        return [f"q{i:05d}" for i in range(N_QUERIES)]
    if kind == "mixed":  # q0..q3499: q5 is admitted by one group, q1500 by two
        return [f"q{i}" for i in range(N_QUERIES)]
    ids = list(dict.fromkeys(f"{rng.getrandbits(40):x}" for _ in range(N_QUERIES * 2)))[:N_QUERIES]
    return ids  # random: every group admits nearly every id, only the position finds the group


def _run(kind: str, columns: bool = True, seed: int = 3) -> RunHits:
    rng = random.Random(seed)
    chunks = [Chunk(f"d{d}#{c}", f"d{d}", c * 10, c * 10 + 10, "x", "x") for d in range(30) for c in range(3)]
    lists, chunk_grades, doc_grades = [], {}, {}
    for qid in _ids(kind, rng):
        depth = 0 if rng.random() < 0.05 else rng.randint(1, 8)  # some queries have no hit: no row in the file
        picked = rng.sample(chunks, depth)
        lists.append(rank_hits(qid, [Hit(c.chunk_id, c.doc_id, float(rng.randint(0, 4)), 0, c.start, c.end)
                                     for c in picked]))
        judged = rng.sample(chunks, 4)
        chunk_grades[qid] = {c.chunk_id: rng.choice([0, 1, 2]) for c in judged}
        doc_grades[qid] = {c.doc_id: rng.choice([-1, 0, 1]) for c in judged}
    window_k = [rng.randint(0, 8) for _ in lists]
    by_id = {c.chunk_id: c for c in chunks}
    if not columns:
        return RunHits(lists, chunk_grades, doc_grades, window_k, by_id)
    builder = HitTableBuilder(chunks)
    builder.add(lists)
    return RunHits(builder.build(chunks), chunk_grades, doc_grades, window_k, by_id)


def _records(run: RunHits) -> list:
    """Stand-ins for results.json's records: what ParquetHits reads of them is their order and ids."""
    ids = run.lists.query_ids.tolist() if hasattr(run.lists, "query_ids") else [r.query_id for r in run.lists]
    return [SimpleNamespace(id=q) for q in ids]


@pytest.fixture
def spy(monkeypatch):
    """Which row groups each read takes, and whether the whole-file filter answered."""
    seen = SimpleNamespace(groups=[], filtered=[])
    read, filtered = pq.ParquetFile.read_row_groups, ParquetHits._filtered

    def read_row_groups(self, groups, *args, **kwargs):
        seen.groups.append(list(groups))
        return read(self, groups, *args, **kwargs)

    def whole_file(self, path, query_id):
        seen.filtered.append(query_id)
        return filtered(self, path, query_id)

    monkeypatch.setattr(pq.ParquetFile, "read_row_groups", read_row_groups)
    monkeypatch.setattr(ParquetHits, "_filtered", whole_file)
    return seen


def _by_filter(path, query_id: str) -> list:
    table = pq.read_table(path, filters=[("query_id", "==", query_id)])
    return sorted(table.drop(["query_id"]).to_pylist(), key=lambda r: r["rank"])


@pytest.mark.parametrize("kind,columns", [("random", True), ("mixed", True), ("sorted", True), ("random", False)])
def test_every_query_is_read_from_its_row_group(tmp_path, spy, kind, columns):
    run = _run(kind, columns)
    path = tmp_path / "hits.parquet"
    write_hits(path, run)
    meta = pq.ParquetFile(path).metadata
    assert meta.num_row_groups == -(-N_QUERIES // BATCH_QUERIES) == 4 and INDEX_KEY.encode() in meta.metadata
    saved = ParquetHits(path, queries=_records(run))
    answered = 0
    for i, q in enumerate(_records(run)):
        got = saved.hits(q.id)
        assert got == run.records(i)  # the run's own records: what results.json would keep
        if i % 97 == 0:
            assert [h.model_dump() for h in got] == _by_filter(path, q.id)
        answered += bool(got)
    # every query with a hit was found in one row group (no whole-file filter); one without reads as before
    empty = {q.id for i, q in enumerate(_records(run)) if not run.lists[i].hits}
    assert empty and answered + len(empty) == N_QUERIES and set(spy.filtered) <= empty
    assert all(len(g) == 1 for g in spy.groups)


@pytest.mark.parametrize("kind", ["random", "mixed"])
def test_first_and_last_query_of_each_row_group(tmp_path, spy, kind):
    run = _run(kind)
    path = tmp_path / "hits.parquet"
    write_hits(path, run)
    records = _records(run)
    saved = ParquetHits(path, queries=records)
    edges = sorted({p for g in range(4) for p in (g * BATCH_QUERIES, min((g + 1) * BATCH_QUERIES, N_QUERIES) - 1)})
    for p in edges:
        spy.groups.clear()
        assert saved.hits(records[p].id) == run.records(p)
        if run.lists[p].hits:
            assert spy.groups == [[p // BATCH_QUERIES]], (p, spy.groups)


def test_a_query_with_no_hit_or_not_in_the_file(tmp_path, spy):
    run = _run("random")
    path = tmp_path / "hits.parquet"
    write_hits(path, run)
    records = _records(run)
    saved = ParquetHits(path, queries=records)
    none = next(q.id for i, q in enumerate(records) if not run.lists[i].hits)
    assert saved.hits(none) == [] and spy.filtered == [none]
    assert saved.hits("not-a-query") == [] and ParquetHits(path).hits("not-a-query") == []
    # sorted ids: no group's statistics admit an absent id, so it is known to have no rows without reading any
    run = _run("sorted")
    write_hits(path, run)
    spy.groups.clear()
    assert ParquetHits(path, queries=_records(run)).hits("q99999") == [] and spy.groups == []


def test_a_batch_split_over_several_row_groups(tmp_path, spy, monkeypatch):
    """A batch longer than the writer's row group limit spans several groups: every one of them is read."""
    write_batch = pq.ParquetWriter.write_batch
    monkeypatch.setattr(pq.ParquetWriter, "write_batch",
                        lambda self, batch, row_group_size=None: write_batch(self, batch, row_group_size=1_000))
    run = _run("random")
    path = tmp_path / "hits.parquet"
    write_hits(path, run)
    assert pq.ParquetFile(path).metadata.num_row_groups > 8
    records = _records(run)
    saved = ParquetHits(path, queries=records)
    for i in range(0, N_QUERIES, 7):
        assert saved.hits(records[i].id) == run.records(i)
    assert spy.filtered == [q.id for i, q in enumerate(records) if i % 7 == 0 and not run.lists[i].hits]
    assert max(len(g) for g in spy.groups) > 1


def test_a_file_without_the_index_or_another_runs_falls_back_to_the_filter(tmp_path, spy):
    run = _run("random")
    path = tmp_path / "hits.parquet"
    write_hits(path, run)
    # the same row groups without INDEX_KEY: a hits.parquet written before it
    old = tmp_path / "old.parquet"
    source = pq.ParquetFile(path)
    with pq.ParquetWriter(old, source.schema_arrow) as writer:
        for g in range(source.num_row_groups):
            writer.write_table(source.read_row_group(g))
    assert INDEX_KEY.encode() not in (pq.ParquetFile(old).metadata.metadata or {})
    records = _records(run)
    meta = pq.ParquetFile(path).metadata
    # queries with hits whose id more than one group's statistics admit (nearly all random ids)
    picked = [i for i in range(0, N_QUERIES, 113) if run.lists[i].hits
              and len(hitsindex.admitting(meta, records[i].id)) > 1]
    assert len(picked) > 20
    for saved in (ParquetHits(old, queries=records), ParquetHits(path), ParquetHits(path, queries=records[:-1])):
        spy.filtered.clear()
        assert [saved.hits(records[i].id) for i in picked] == [run.records(i) for i in picked]
        assert spy.filtered == [records[i].id for i in picked]


def test_a_spooled_result_finds_the_position_by_its_records(tmp_path, spy):
    """A large run's records are a QueryStore (as load_result gives): the position comes from ``index_of``."""
    from pydantic import BaseModel

    from harness.result.querystore import QueryStore

    class Rec(BaseModel):  # a record starts with its id, as a QueryResult's does
        id: str
        text: str = ""

    run = _run("random")
    path = tmp_path / "hits.parquet"
    write_hits(path, run)
    store = QueryStore(Rec).extend(Rec(id=q.id) for q in _records(run))
    saved = ParquetHits(path, queries=store)
    for i in (0, 1_234, 2_999, 3_000, N_QUERIES - 1):
        assert saved.hits(store[i].id) == run.records(i)
    assert spy.filtered == [store[i].id for i in (0, 1_234, 2_999, 3_000, N_QUERIES - 1) if not run.lists[i].hits]
    store.close()


def test_a_bad_file_fails_as_before(tmp_path):
    from harness.core.errors import InputError

    path = tmp_path / "hits.parquet"
    path.write_bytes(b"PAR1 not a parquet file at all")
    records = [SimpleNamespace(id="q1")]
    with pytest.raises(Exception) as before:
        ParquetHits(path).hits("q1")
    with pytest.raises(Exception) as now:
        ParquetHits(path, queries=records).hits("q1")
    assert type(now.value) is type(before.value) and str(now.value) == str(before.value)
    with pytest.raises(InputError, match="not found"):
        ParquetHits(tmp_path / "absent.parquet", queries=records).hits("q1")


def test_the_index_is_small(tmp_path):
    """Two numbers per batch of queries, never one per query."""
    import json

    run = _run("random")
    write_hits(tmp_path / "hits.parquet", run)
    index = json.loads(pq.ParquetFile(tmp_path / "hits.parquet").metadata.metadata[INDEX_KEY.encode()])
    assert index == {"queries": N_QUERIES, "first_query": [0, 1_000, 2_000, 3_000],
                     "first_row": index["first_row"]} and index["first_row"][0] == 0
    sizes = [b.num_rows for b in run.batches()]
    assert index["first_row"] == [sum(sizes[:i]) for i in range(len(sizes))]
    assert hitsfile.BATCH_QUERIES == BATCH_QUERIES


def test_chunk_texts_read_a_row_group_at_a_time_equal_the_filter(tmp_path, monkeypatch):
    """``ParquetHits.texts`` (explain's window snippets) reads chunks.parquet's ids a group at a time and the texts
    of the groups holding a wanted id: the same dict as the filter, ids absent from the file left out."""
    from harness.hits.parquet import write_chunks

    monkeypatch.setattr(hitsfile, "BATCH_CHUNKS", 7)
    rng = random.Random(5)
    chunks = [Chunk(f"d{d}#{c}", f"d{d}", c, c + 3, f"text of d{d} chunk {c} " + "é" * rng.randint(0, 3), "")
              for d in range(12) for c in range(rng.randint(1, 4))]
    rng.shuffle(chunks)
    path = tmp_path / "chunks.parquet"
    write_chunks(path, chunks)
    assert pq.ParquetFile(path).metadata.num_row_groups > 3
    saved = ParquetHits(tmp_path / "hits.parquet", path)
    for wanted in ([chunks[0].chunk_id], [c.chunk_id for c in rng.sample(chunks, 9)] + ["nope"],
                   [c.chunk_id for c in chunks], ["nope"]):
        table = pq.read_table(path, columns=["chunk_id", "text"], filters=[("chunk_id", "in", wanted)])
        expected = dict(zip(table.column("chunk_id").to_pylist(), table.column("text").to_pylist()))
        got = saved.texts(wanted)
        assert got == expected == {c.chunk_id: c.text for c in chunks if c.chunk_id in wanted}
        assert list(got) == list(expected)
    assert hitsindex.texts_by_group(path, {"nope"}) == {}  # the new path answered, not the fallback
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1 not a parquet file")
    assert hitsindex.texts_by_group(bad, {"x"}) is None
    with pytest.raises(Exception) as arrow:
        pq.read_table(bad, columns=["chunk_id", "text"], filters=[("chunk_id", "in", ["x"])])
    with pytest.raises(InputError) as now:  # a damaged file is named, Arrow's reason kept
        ParquetHits(tmp_path / "hits.parquet", bad).texts(["x"])
    assert str(now.value).startswith(f"{bad}: cannot be read as the Parquet file harness run writes")
    assert "magic bytes" in str(arrow.value) and "magic bytes" in str(now.value)
