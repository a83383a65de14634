"""What a retriever needs of its chunks to make hits, as plain arrays instead of ``Chunk`` objects: ids as one
UTF-8 buffer with offsets, a document number per chunk, spans, and each chunk's rank in chunk-id order (what the
tie rule compares). Pickles as a few buffers; slices into contiguous shards that keep the global id ranks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..core.types import Chunk, Hit, RankedList
from .ranking import rank_of


def _pack(strings: Sequence[str]) -> tuple[bytes, np.ndarray]:
    encoded = [s.encode("utf-8", "surrogatepass") for s in strings]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)), out=offsets[1:])
    return b"".join(encoded), offsets


def _unpack(data: bytes, offsets: np.ndarray, indices: list[int]) -> list[str]:
    starts, ends = offsets[indices].tolist(), offsets[np.asarray(indices, dtype=np.int64) + 1].tolist()
    return [data[a:b].decode("utf-8", "surrogatepass") for a, b in zip(starts, ends)]


@dataclass
class ChunkTable:
    id_data: bytes  # the chunk ids, UTF-8, one after another
    id_offsets: np.ndarray
    doc_of: np.ndarray  # int32: which of the document ids
    doc_data: bytes
    doc_offsets: np.ndarray
    start: np.ndarray
    end: np.ndarray
    id_rank: np.ndarray  # int64: rank of the chunk id among all chunks of the corpus (not only of a shard)

    @classmethod
    def from_chunks(cls, chunks: Sequence[Chunk]) -> "ChunkTable":
        ids = [c.chunk_id for c in chunks]
        docs: dict[str, int] = {}
        doc_of = np.fromiter((docs.setdefault(c.doc_id, len(docs)) for c in chunks), dtype=np.int32,
                             count=len(chunks))
        return cls(*_pack(ids), doc_of, *_pack(list(docs)),
                   np.fromiter((c.start for c in chunks), dtype=np.int64, count=len(chunks)),
                   np.fromiter((c.end for c in chunks), dtype=np.int64, count=len(chunks)), rank_of(ids))

    @classmethod
    def from_columns(cls, ids: list[str], doc_ids: list[str], start: list[int], end: list[int]) -> "ChunkTable":
        docs: dict[str, int] = {}
        doc_of = np.fromiter((docs.setdefault(d, len(docs)) for d in doc_ids), dtype=np.int32, count=len(doc_ids))
        return cls(*_pack(ids), doc_of, *_pack(list(docs)), np.array(start, dtype=np.int64),
                   np.array(end, dtype=np.int64), rank_of(ids))

    def __len__(self) -> int:
        return len(self.doc_of)

    def chunk_id(self, i: int) -> str:
        return _unpack(self.id_data, self.id_offsets, [i])[0]

    def ranked_list(self, query_id: str, indices: np.ndarray, scores: np.ndarray) -> RankedList:
        """Hits for chunks ``indices``, already in rank order."""
        at = indices.tolist()
        chunk_ids = _unpack(self.id_data, self.id_offsets, at)
        doc_ids = _unpack(self.doc_data, self.doc_offsets, self.doc_of[at].tolist())
        hits = tuple(map(Hit, chunk_ids, doc_ids, scores.tolist(), range(1, len(at) + 1), self.start[at].tolist(),
                         self.end[at].tolist()))
        return RankedList(query_id, hits)

    def slice(self, lo: int, hi: int) -> "ChunkTable":
        a, b = self.id_offsets[lo], self.id_offsets[hi]
        return ChunkTable(self.id_data[a:b], self.id_offsets[lo:hi + 1] - a, self.doc_of[lo:hi].copy(),
                          self.doc_data, self.doc_offsets, self.start[lo:hi].copy(), self.end[lo:hi].copy(),
                          self.id_rank[lo:hi].copy())
