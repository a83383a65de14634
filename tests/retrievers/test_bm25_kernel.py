"""The compiled top k (bm25_kernel, numba) against the exhaustive ranking and the NumPy path: the same chunks in
the same order with the same floats, on corpora full of exact ties (repeated texts), with repeated, unknown and no
query terms, at depths from 1 to past the corpus; the NumPy path when numba is absent; and the compiled ASCII token
cut against the NumPy cut and the Analyzer, on SciFact's text when it is there."""

import itertools
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import harness.retrievers
import harness.retrievers.bm25_index as bm25_index
from harness.retrievers.bm25 import BM25Config, FastBM25
from harness.retrievers import bm25_tokens
from harness.retrievers.bm25_index import BM25Index
from harness.retrievers.bm25_tokens import tokenize_corpus
from harness.retrievers.ranking import top_k
from harness.text.analysis import Analyzer

pytest.importorskip("numba")
from harness.retrievers import bm25_kernel  # noqa: E402


def tied_corpus(rng, n_docs, vocab):
    p = 1.0 / np.arange(1, vocab + 1) ** 1.1
    p /= p.sum()
    base = [[f"w{w}" for w in rng.choice(vocab, size=int(rng.integers(0, 14)), p=p)] for _ in range(n_docs // 3)]
    # Each text two or three times (exact score ties, broken by chunk id), some texts sharing a length.
    docs = [list(base[int(i)]) for i in rng.integers(0, len(base), n_docs)]
    queries = [[f"w{w}" for w in rng.choice(vocab, size=int(rng.integers(1, 7)), p=p)] for _ in range(30)]
    queries += [["w0", "w0", "w1"], ["w3", "unknown", "w3", "w3"], ["unknown"], [], ["w1", "w0"] * 3,
                [f"w{vocab - 1}"], [f"w{vocab - 1}", "w0", "w0"],
                [f"w{w}" for w in range(0, vocab, 3)], [f"w{w}" for w in range(vocab)] * 2]  # long: greedy, no mask
    return docs, queries


def _index(docs, cfg, dense_share):
    fast = FastBM25(docs, cfg)
    lengths = np.array([len(d) for d in docs], dtype=np.int64)
    ids = np.array([fast.vocab[t] for d in docs for t in d], dtype=np.int32)
    fast.index = BM25Index.build(ids, lengths, len(fast.vocab), cfg, dense_share=dense_share)
    return fast


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("variant", ["okapi", "l", "plus"])
def test_compiled_top_k_equals_exhaustive_and_numpy_path(seed, variant, monkeypatch):
    rng = np.random.default_rng(100 + seed)
    docs, queries = tied_corpus(rng, int(rng.integers(60, 1500)), int(rng.integers(4, 80)))
    cfg = BM25Config(variant=variant, k1=float(rng.choice([0.0, 0.9, 1.5])), b=float(rng.choice([0.0, 0.75, 1.0])))
    monkeypatch.setattr(bm25_index, "SEED_SIZE", int(rng.choice([2, 16, 4096])))
    monkeypatch.setattr(bm25_index, "JIT_MIN_CHUNKS", 0)  # these corpora are small: the kernel still answers
    fast = _index(docs, cfg, float(rng.choice([0.1, 0.3, 2.0])))
    id_rank = rng.permutation(len(docs)).astype(np.int64)
    used = 0
    for q in queries:
        terms = fast.term_ids(q)
        exhaustive = fast.get_scores(q)
        for k in (1, 2, 7, 10, 50, 100, 1000, len(docs) + 3):
            want = top_k(exhaustive, k, id_rank)
            idx, scores = fast.index.top(terms, k, id_rank)
            assert idx.tolist() == want.tolist(), (q, k)
            assert scores.tolist() == exhaustive[want].tolist(), (q, k)  # the same floats, not merely close
            monkeypatch.setattr(bm25_index, "JIT", False)
            np_idx, np_scores = fast.index.top(terms, k, id_rank)
            monkeypatch.setattr(bm25_index, "JIT", True)
            assert np_idx.tolist() == idx.tolist() and np_scores.tolist() == scores.tolist()
            order = fast.index._summation_order(terms.tolist())
            if fast.index.nonnegative and min(k, fast.index.n) > 0:
                got = bm25_kernel.top_k(np.asarray(order, dtype=np.int64), min(k, fast.index.n),
                                        fast.index.constant(terms), id_rank, fast.index.n, fast.index.indptr,
                                        fast.index.docs, fast.index.weights, fast.index.dense_slot, fast.index.dense,
                                        *bm25_kernel.quantise(fast.index.dense), fast.index.bound, fast.index.seed_ptr, fast.index.seed_docs)
                if got[2]:  # the kernel's own answer, when it gives one
                    used += 1
                    assert got[0].tolist() == want.tolist() and got[1].tolist() == exhaustive[want].tolist()
    assert used > 0  # the kernel answered, not only the fallback


def test_repeated_terms_count_again_and_unknown_terms_add_nothing(monkeypatch):
    monkeypatch.setattr(bm25_index, "JIT_MIN_CHUNKS", 0)
    docs = [["a", "b"], ["a"], ["b", "b", "c"], ["c"], ["a", "c"]] * 20
    fast = _index(docs, BM25Config(), 2.0)
    ranks = np.arange(len(docs), dtype=np.int64)
    once, twice = fast.index.top(fast.term_ids(["a", "c"]), 5, ranks), fast.index.top(fast.term_ids(["a", "a", "c", "zz"]), 5, ranks)
    assert once[0].tolist() != [] and twice[1].tolist() == fast.get_scores(["a", "a", "c"])[twice[0]].tolist()
    empty = fast.index.top(fast.term_ids([]), 3, ranks)
    assert empty[0].tolist() == [99, 98, 97] and empty[1].tolist() == [0.0, 0.0, 0.0]  # ties: id descending


def test_the_kernel_prunes_with_the_index_margin():
    # A copy, not an import: numba freezes another module's constant into its cached code and would not see it change.
    assert bm25_kernel.MARGIN == bm25_index.MARGIN


def test_a_small_index_is_answered_without_compiling(monkeypatch):
    """Below JIT_MIN_CHUNKS the NumPy path answers: a demo-sized run never waits for numba's compile."""
    rng = np.random.default_rng(11)
    docs, queries = tied_corpus(rng, 300, 20)
    fast = _index(docs, BM25Config(), 0.3)
    ranks = rng.permutation(len(docs)).astype(np.int64)

    def no_kernel():
        raise AssertionError("the compiled kernel was asked for on a 300-chunk index")

    monkeypatch.setattr(bm25_index, "_kernel", no_kernel)
    for q in queries:
        idx, scores = fast.index.top(fast.term_ids(q), 10, ranks)
        assert idx.tolist() == top_k(fast.get_scores(q), 10, ranks).tolist()
    monkeypatch.setattr(bm25_index, "JIT_MIN_CHUNKS", len(docs))  # at the threshold the kernel is asked for
    with pytest.raises(AssertionError, match="compiled kernel"):
        fast.index.top(fast.term_ids(queries[0]), 10, ranks)


def test_without_numba_the_numpy_path_answers(monkeypatch):
    rng = np.random.default_rng(7)
    docs, queries = tied_corpus(rng, 300, 20)
    fast = _index(docs, BM25Config(), 0.3)
    ranks = rng.permutation(len(docs)).astype(np.int64)
    monkeypatch.setattr(bm25_index, "JIT_MIN_CHUNKS", 0)
    want = [fast.index.top(fast.term_ids(q), 10, ranks) for q in queries]
    monkeypatch.delitem(sys.modules, "harness.retrievers.bm25_kernel")
    monkeypatch.delattr(harness.retrievers, "bm25_kernel")
    monkeypatch.setitem(sys.modules, "numba", None)  # import numba raises ImportError
    assert bm25_index._kernel() is None
    got = [fast.index.top(fast.term_ids(q), 10, ranks) for q in queries]
    assert all(a[0].tolist() == b[0].tolist() and a[1].tolist() == b[1].tolist() for a, b in zip(got, want))


# ---- the compiled ASCII cut == the NumPy cut == the Analyzer ----------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]
# Beside the checkout (../shared) or, from a git worktree, one level further up.
SCIFACT = next((b / "shared/datasets/scifact/corpus.jsonl" for b in (ROOT.parent, ROOT.parent.parent)
                if (b / "shared/datasets/scifact/corpus.jsonl").exists()), None)


def _texts():
    rng = np.random.default_rng(3)
    alphabet = np.array(list("abcXYZ019_ .,;-'\n\t\r\x0b\x0c\x1f!\"#$%&()*+/:<=>?@[\\]^`{|}~"))
    texts = ["".join(rng.choice(alphabet, int(rng.integers(0, 60)))) for _ in range(400)]
    texts += ["", " ", "_", "a", "a b", "\n", "x\ny", "end_"]
    if SCIFACT is not None:  # real text, unicode included (those batches take the other path, checked all the same)
        with SCIFACT.open() as fh:
            texts += [json.loads(line)["text"] for line in itertools.islice(fh, 2000)]
    return texts


@pytest.mark.parametrize("pattern", [r"\w+", r"\S+"])
@pytest.mark.parametrize("lowercase", [True, False])
def test_compiled_ascii_cut_gives_the_analyzers_tokens(pattern, lowercase, monkeypatch):
    texts = _texts()
    analyzer = Analyzer(lowercase, pattern, "none", "none")
    assert SCIFACT is None or len(texts) > 2000
    compiled = tokenize_corpus(texts, analyzer, batch=50)
    monkeypatch.setattr(bm25_tokens, "_compiled", lambda: None)
    plain = tokenize_corpus(texts, analyzer, batch=50)
    assert compiled.terms == plain.terms
    assert compiled.ids.tolist() == plain.ids.tolist() and compiled.lengths.tolist() == plain.lengths.tolist()
    bounds = np.concatenate([[0], np.cumsum(compiled.lengths)])
    assert [[compiled.terms[i] for i in compiled.ids[a:b]] for a, b in zip(bounds, bounds[1:])] == \
        [analyzer(t) for t in texts]
