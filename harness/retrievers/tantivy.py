"""``kind: tantivy``: BM25 by tantivy (a Lucene-like engine in Rust, embedded), build mode over the run's chunks.

For comparison with our own ``bm25`` at scale. Its scores differ from ours by design: tantivy's BM25 has fixed
k1 = 1.2, b = 0.75, its own idf (Lucene's ``ln(1 + (N - df + 0.5) / (df + 0.5))``, never negative), its own
analyzers (``default``: lowercase, split on non-alphanumerics, long tokens dropped; ``en_stem``: plus an English
Snowball stemmer) and float32 scores, so rankings agree on most but not all of the top 10
(``bench/tantivy_vs_bm25.py`` measures the overlap). The query text is reduced to its words before parsing, so
query syntax (``AND``, ``-``, ``field:``) in a question is never read as operators.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Literal, Sequence

from pydantic import Field

from ..core.errors import MissingDependencyError
from ..core.schema import Strict
from ..core.types import Chunk, Hit, Query, RankedList
from .base import RetrieverKind, register
from .ranking import rank_hits

_WORD = re.compile(r"\w+")


class TantivyConfig(Strict):
    kind: Literal["tantivy"] = "tantivy"
    tokenizer: Literal["default", "en_stem"] = "en_stem"
    """tantivy's analyzer: default, or en_stem (English stemming)"""
    heap_mb: int = Field(128, ge=16, le=4096, description="the index writer's memory budget")
    threads: int = Field(1, ge=1, le=64, description="indexing threads")
    on_disk: bool = Field(False, description="build the index in a temporary folder instead of memory")

    def check_installed(self) -> None:
        _tantivy()


def _tantivy():
    try:
        import tantivy
    except ImportError:
        raise MissingDependencyError("retriever.kind 'tantivy' needs the tantivy package: "
                                     "pip install 'rag-harness[tantivy]'") from None
    return tantivy


class TantivyRetriever:
    def __init__(self, config: TantivyConfig):
        self.config = config
        self.t = _tantivy()
        self._index = None
        self._tmp: tempfile.TemporaryDirectory | None = None

    def index(self, chunks: Sequence[Chunk]) -> None:
        t = self.t
        builder = t.SchemaBuilder()
        builder.add_integer_field("pos", stored=True)
        builder.add_text_field("body", stored=False, tokenizer_name=self.config.tokenizer)
        schema = builder.build()
        if self.config.on_disk:
            self._tmp = tempfile.TemporaryDirectory(prefix="harness-tantivy-")
            self._index = t.Index(schema, path=str(Path(self._tmp.name)))
        else:
            self._index = t.Index(schema)
        writer = self._index.writer(heap_size=self.config.heap_mb * 1_000_000, num_threads=self.config.threads)
        for i, c in enumerate(chunks):
            writer.add_document(t.Document(pos=i, body=c.index_text))
        writer.commit()
        writer.wait_merging_threads()
        self._index.reload()
        self._chunks = chunks

    def retrieve(self, queries: Sequence[Query], k: int) -> list[RankedList]:
        searcher = self._index.searcher()
        out = []
        for q in queries:
            words = _WORD.findall(q.text.lower())  # lowercased: AND/OR/NOT are operators only in capitals
            hits: list[Hit] = []
            if words and self._chunks:
                query = self._index.parse_query(" ".join(words), ["body"])
                # Ask for more than k: tantivy breaks ties by its own doc order, ours by chunk id; hits tied with
                # the k-th are all fetched so rank_hits can order them.
                n = min(len(self._chunks), k)
                while True:
                    found = searcher.search(query, n).hits
                    if n >= len(self._chunks) or len(found) < n or found[-1][0] < found[min(k, len(found)) - 1][0]:
                        break
                    n = min(len(self._chunks), n * 2)
                for score, address in found:
                    c = self._chunks[searcher.doc(address)["pos"][0]]
                    hits.append(Hit(c.chunk_id, c.doc_id, float(score), 0, c.start, c.end))
            out.append(rank_hits(q.query_id, hits, k))
        return out


register(RetrieverKind("tantivy", TantivyConfig, lambda c, ctx: TantivyRetriever(c),
                       "BM25 by the embedded tantivy engine (its own analyzers; for comparison with bm25)"))
