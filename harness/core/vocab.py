"""A run's document vocabulary: ids coded against it, and the field that keeps a library-built run's vocabulary in
the form it was coded in (``textcolumns.TextVocab``) until its doc ids are read as strings."""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np


def sorted_vocab(ids: Iterable[str]) -> np.ndarray:
    return np.array(sorted(set(ids)), dtype=object)


def encode(vocab, ids: Sequence[str], vocab_text=None) -> np.ndarray:
    """Codes (positions) of ``ids`` in ``vocab`` (an object array, or a ``textcolumns.TextVocab``); -1 for an id not in
    it. ``vocab_text``: the vocabulary as Arrow text, when the caller has it (see ``vocab_text``)."""
    if len(ids) == 0:
        return np.zeros(0, dtype=np.int64)
    if len(vocab) + len(ids) > 100_000 or not isinstance(vocab, np.ndarray):  # in C: a large vocabulary is not
        from .textcolumns import positions_in  # walked in Python

        found = positions_in(vocab if vocab_text is None else vocab_text, ids)
        if found is not None:
            return found
    # A dict beats searchsorted here: comparing object strings in searchsorted goes through Python.
    wanted = {v: -1 for v in ids}
    for code, v in enumerate(vocab.tolist() if isinstance(vocab, np.ndarray) else vocab.text.to_pylist()):
        if v in wanted:
            wanted[v] = code
    return np.fromiter((wanted[v] for v in ids), dtype=np.int64, count=len(ids))


class UncodedHits:
    """A run's doc ids as their packed keys (``io.packed_ids``), one a hit, not yet coded: what a run read from a table
    holds in both ``doc_vocab`` and ``doc_codes`` until either is read (then they are coded once, by the keys' sort,
    ``textcolumns.sorted_codes``). The engine scores such a run on the keys themselves (``metrics.join.keyed``): they
    compare as the ids do, so sorting three million of them to number the ids is not needed to score them."""

    def __init__(self, keys: np.ndarray):
        self.keys = keys
        self._coded = None

    def coded(self):
        """(the sorted vocabulary, a ``textcolumns.TextVocab``; each hit's code in it), made once."""
        if self._coded is None:
            from .textcolumns import TextVocab, key_codes

            distinct, codes = key_codes(self.keys)
            self._coded = (TextVocab(None, distinct), codes)
        return self._coded


def _coded(run) -> None:
    """A run holding ``UncodedHits`` given its vocabulary and codes (two threads may each do it: equal arrays)."""
    stored = vars(run)
    hits = stored["doc_codes"]
    if isinstance(hits, UncodedHits):
        vocab, codes = hits.coded()
        stored["_vocab_text"] = vocab
        if isinstance(stored["doc_vocab"], UncodedHits):
            stored["doc_vocab"] = vocab
        stored["doc_codes"] = codes


def uncoded_hits(run) -> "UncodedHits | None":
    """The ``UncodedHits`` a run still holds, or None once coded (or never so held)."""
    hits = vars(run)["doc_codes"]
    return hits if isinstance(hits, UncodedHits) else None


class DocVocab:
    """``Run.doc_vocab``, in front of the field. A run read from a table or a dict keeps its vocabulary as it was
    coded (``textcolumns.TextVocab``: packed keys, or Arrow text) and makes it the object array of str when it is
    first read: evaluating never reads it (the engine codes judgments against the keys, ``vocab_as_stored``), and
    a 3M-hit run's million doc ids as Python strings cost a tenth of a second."""

    def __get__(self, run, owner=None):
        if run is None:
            return self
        vocab = vocab_as_stored(run)
        if not isinstance(vocab, np.ndarray):  # made once, then kept (two threads may each make one: equal arrays)
            vocab = vars(run)["doc_vocab"] = vocab.objects()
        return vocab

    def __set__(self, run, value) -> None:  # (the frozen dataclass's __init__ assigns through object.__setattr__)
        vars(run)["doc_vocab"] = value


class DocCodes:
    """``Run.doc_codes``, in front of the field: a run holding ``UncodedHits`` is coded when its codes are first
    read."""

    def __get__(self, run, owner=None):
        if run is None:
            return self
        _coded(run)
        return vars(run)["doc_codes"]

    def __set__(self, run, value) -> None:
        vars(run)["doc_codes"] = value


def vocab_as_stored(run: "Run"):
    """A run's vocabulary as it is held: the object array, or the ``TextVocab`` it is made from when first read.
    What the engine codes judgments against and tells vocabularies apart by; it has a length, like the array. (A
    run holding ``UncodedHits`` is coded first.)"""
    _coded(run)
    return vars(run)["doc_vocab"]
