"""Columnar runs and qrels: the form the metric engine reads.

Both group rows by query with CSR ``offsets`` and name documents by integer codes into a vocabulary. A run's
vocabulary is sorted, so comparing codes is comparing doc ids as strings (what trec_eval's tie rule needs) without
touching strings; or, when a reader interned ids in order of appearance, the run carries ``doc_order``, each
code's position in sorted order, for the same comparisons.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from .vocab import DocCodes, DocVocab, encode, sorted_vocab, vocab_as_stored  # noqa: F401  (encode, sorted_vocab: their old home)


def offsets_of(lengths: np.ndarray) -> np.ndarray:
    """The row offsets of a CSR layout whose rows hold ``lengths`` items: row ``i`` is ``offsets[i]:offsets[i + 1]``."""
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return offsets


def object_array(items: Sequence) -> np.ndarray:
    """``items`` as a 1-D object array: the array itself when it is one already (a golden set's ids, shared by every
    table that names its queries, not copied at 8 bytes a query each time), else a new one (``np.array`` would
    split items that are tuples or lists)."""
    if isinstance(items, np.ndarray) and items.dtype == object and items.ndim == 1:
        return items
    out = np.empty(len(items), dtype=object)
    out[:] = items if isinstance(items, list) else list(items)
    return out


def _gathered(offsets: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the positions of the items of rows ``rows``, in order; the offsets of those rows from 0) of a CSR layout. Rows
    that follow each other (an engine batch of a run with the judgments' queries) are one slice: views, no copy."""
    if rows.dtype.kind in "iu" and len(rows) and rows[-1] - rows[0] == len(rows) - 1 and (np.diff(rows) == 1).all():
        lo, hi = int(offsets[rows[0]]), int(offsets[rows[-1] + 1])
        return slice(lo, hi), offsets[rows[0]:rows[-1] + 2] - lo
    lengths = np.diff(offsets)[rows]
    starts = offsets_of(lengths)
    return np.repeat(offsets[rows] - starts[:-1], lengths) + np.arange(int(starts[-1])), starts


def _described(value) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of dtype {value.dtype} and shape {value.shape}"
    return type(value).__name__


def _ids_problems(ids, where: str, unique: bool) -> list[str]:
    if not isinstance(ids, np.ndarray) or ids.ndim != 1:
        return [f"{where}: expected a one-dimensional NumPy array of ids (dtype object), got {_described(ids)}"]
    from . import textcolumns  # (pyarrow: loaded when a run is first checked, not with the types)

    values = ids.tolist()
    column = textcolumns.text_column(values) if len(values) >= textcolumns.BULK_MIN else None
    if column is not None:  # every id text: the rest is checked in bulk
        return [f"{where}: an id is given twice"] if unique and not textcolumns.unique(column) else []
    bad = next((j for j, i in enumerate(values) if not isinstance(i, str)), None)  # (by place: None may be one)
    if bad is not None:
        return [f"{where}: ids are text, got {type(values[bad]).__name__} {values[bad]!r}"[:200]]
    if unique and len(set(values)) != len(values):
        return [f"{where}: an id is given twice"]
    return []


def _offsets_problems(columns, name: str, rows_field: str) -> list[str]:
    """The query ids and the offsets that cut ``rows_field`` into each query's rows (query i owns
    ``offsets[i]:offsets[i+1]``)."""
    out = _ids_problems(columns.query_ids, f"{name}.query_ids", unique=True)
    offsets, rows = columns.offsets, getattr(columns, rows_field)
    if not isinstance(offsets, np.ndarray) or offsets.ndim != 1 or offsets.dtype.kind not in "iu":
        return out + [f"{name}.offsets: expected a one-dimensional NumPy array of whole numbers, got "
                      f"{_described(offsets)}"]
    n_rows = len(rows) if isinstance(rows, np.ndarray) else None
    if isinstance(columns.query_ids, np.ndarray) and len(offsets) != len(columns.query_ids) + 1:
        out.append(f"{name}.offsets: {len(offsets)} offsets for {len(columns.query_ids)} queries (one more than "
                   f"the queries: query i owns rows offsets[i]:offsets[i+1])")
    elif len(offsets) and (offsets[0] != 0 or (np.diff(offsets) < 0).any()
                           or n_rows is not None and offsets[-1] != n_rows):
        out.append(f"{name}.offsets: expected to rise from 0 to the {n_rows} rows of {rows_field}")
    return out


def _same_columns(a, b) -> bool:
    """Two runs (or two sets of judgments) with the same fields, array by array."""
    if type(a) is not type(b):
        return NotImplemented
    for field in a.__dataclass_fields__:
        x, y = getattr(a, field), getattr(b, field)
        if (x is None) != (y is None) or x is not None and not (np.shape(x) == np.shape(y) and np.array_equal(x, y)):
            return False
    return True


def checked(columns, vocab_text=None):
    """``columns`` (a Run or Qrels) marked as built by the library from input it checked as it read it: ``evaluate``
    takes it as sound without checking its arrays again. A Run or Qrels built by hand from arrays is checked.
    ``vocab_text``: a Run's vocabulary as the Arrow text (``textcolumns.TextVocab``) it was built from, kept to
    code judgments against."""
    object.__setattr__(columns, "_checked", True)  # (not a field: equality and replace() do not see it)
    if vocab_text is not None:
        object.__setattr__(columns, "_vocab_text", vocab_text)
    return columns


def vocab_text(run: "Run"):
    """The Arrow text of a library-built run's vocabulary, if it kept it (else None)."""
    vocab_as_stored(run)  # (a run holding UncodedHits: coded first)
    return vars(run).get("_vocab_text")


def is_checked(columns) -> bool:
    return bool(vars(columns).get("_checked"))


def remembered(columns, key: str, make):
    """``make()``, kept on a library-built Run or Qrels (one built by hand is computed each time): evaluating the same
    objects again reuses what was derived from them. They are frozen, and what is kept is never handed out for
    writing."""
    if not is_checked(columns):
        return make()
    memo = vars(columns).setdefault("_memo", {})
    if key not in memo:
        memo[key] = make()
    return memo[key]


def doc_keys(qrels: "Qrels"):
    """The packed keys (``io.packed_ids``) of library-built judgments' doc ids, one a judgment, when their reader
    kept them (``metrics.frames.bulk_qrels``); else None."""
    return vars(qrels).get("_memo", {}).get("doc_keys")


@dataclass(frozen=True, eq=False)
class Run:
    """Hits of many queries: query ``i`` owns rows ``offsets[i]:offsets[i+1]``."""

    query_ids: np.ndarray  # (Q,) object, unique
    offsets: np.ndarray  # (Q+1,) int64
    doc_vocab: np.ndarray  # (V,) object, unique; sorted unless doc_order is given
    doc_codes: np.ndarray  # (n,) int32 or int64
    scores: np.ndarray  # (n,) float64
    ranks: np.ndarray | None = None  # (n,) int64, as given by the producer
    doc_order: np.ndarray | None = None  # (V,) position of each vocabulary entry in sorted order, if not sorted

    @property
    def n_queries(self) -> int:
        return len(self.query_ids)

    def __eq__(self, other: object) -> bool:  # (the dataclass's would compare arrays: "truth value ... ambiguous")
        return _same_columns(self, other)

    __hash__ = None  # type: ignore[assignment]  (equal by content, and its arrays can change)

    def problems(self, name: str) -> list[str]:
        """What breaks this run's invariants, each naming ``name``'s field: a run built by hand from arrays (the
        readers and ``from_dict``/``from_lists`` make only sound ones) is checked before it is scored."""
        out = _offsets_problems(self, name, "doc_codes")
        out += _ids_problems(self.doc_vocab, f"{name}.doc_vocab", unique=True)
        for field, kinds in (("doc_codes", "iu"), ("scores", "fi"), ("ranks", "iu")):
            values = getattr(self, field)
            if values is None and field == "ranks":
                continue
            if not isinstance(values, np.ndarray) or values.ndim != 1 or values.dtype.kind not in kinds:
                out.append(f"{name}.{field}: expected a one-dimensional NumPy array of "
                           f"{'whole numbers' if kinds == 'iu' else 'numbers'}, got {_described(values)}")
            elif field != "doc_codes" and isinstance(self.doc_codes, np.ndarray) and len(values) != len(self.doc_codes):
                out.append(f"{name}.{field}: {len(values)} values for {len(self.doc_codes)} hits")
        if not out:
            vocab = len(self.doc_vocab)
            if len(self.doc_codes) and (self.doc_codes.min() < 0 or self.doc_codes.max() >= vocab):
                out.append(f"{name}.doc_codes: a code outside the vocabulary of {vocab} documents")
            if not np.isfinite(self.scores).all():
                out.append(f"{name}.scores: a NaN or infinite score (scores are finite numbers)")
            out += self._order_problems(name)
        return out

    def _order_problems(self, name: str) -> list[str]:
        """Ties are broken by the vocabulary's sorted order: ``doc_vocab`` is sorted, or ``doc_order`` says where
        each entry sorts (an unsorted vocabulary read as sorted ranked tied documents wrongly)."""
        from . import textcolumns

        vocab = self.doc_vocab
        if self.doc_order is None:
            column = textcolumns.text_column(vocab) if len(vocab) >= textcolumns.BULK_MIN else None
            ordered = textcolumns.strictly_sorted(column) if column is not None else (vocab[:-1] < vocab[1:]).all()
            if len(vocab) > 1 and not ordered:
                return [f"{name}.doc_vocab: not sorted (sort it, or give doc_order: each entry's sorted position)"]
            return []
        order = self.doc_order
        if (not isinstance(order, np.ndarray) or order.dtype.kind not in "iu"
                or not np.array_equal(np.sort(order), np.arange(len(vocab)))):
            return [f"{name}.doc_order: not an order of the {len(vocab)} vocabulary entries"]
        in_order = vocab[np.argsort(order)]
        if len(vocab) > 1 and not (in_order[:-1] < in_order[1:]).all():
            return [f"{name}.doc_order: does not put the vocabulary in sorted order"]
        return []

    @classmethod
    def empty(cls) -> "Run":
        """No query at all (with ranks, which ``order="rank"`` asks for)."""
        return cls(np.zeros(0, object), np.zeros(1, np.int64), np.zeros(0, object), np.zeros(0, np.int64), np.zeros(0),
                   np.zeros(0, np.int64))

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    @classmethod
    def from_lists(cls, lists: Mapping[str, Sequence[tuple[str, float]]],
                   ranks: Mapping[str, Sequence[int]] | None = None) -> "Run":
        """From ``{query_id: [(doc_id, score), ...]}`` (the order given is kept; ``ranks``: each hit's given rank,
        for ``order="rank"``), its ids, scores and ranks checked as ``harness.evaluate`` checks a dict: an
        InputError naming each bad entry."""
        from .dictinput import checked_lists, checked_ranks

        checked = checked_lists(lists, "Run.from_lists")
        return cls.from_checked_lists(checked, None if ranks is None else checked_ranks(ranks, lists, "ranks"))

    @classmethod
    def from_checked_lists(cls, lists: Mapping[str, Sequence[tuple[str, float]]],
                           ranks: Mapping[str, Sequence[int]] | None = None,
                           doc_vocab: np.ndarray | None = None) -> "Run":
        """``from_lists`` for lists a reader has checked already (string ids, finite float scores)."""
        query_ids = np.array(list(lists), dtype=object)
        lengths = np.array([len(v) for v in lists.values()], dtype=np.int64)
        docs = [d for hits in lists.values() for d, _ in hits]
        scores = np.array([s for hits in lists.values() for _, s in hits], dtype=np.float64)
        vocab = sorted_vocab(docs) if doc_vocab is None else doc_vocab
        codes = encode(vocab, docs)
        if (codes < 0).any():
            raise ValueError("doc_vocab does not contain every doc id of the run")
        rank_arr = None
        if ranks is not None:
            rank_arr = np.array([r for q in lists for r in ranks[q]], dtype=np.int64)
        return checked(cls(query_ids, offsets_of(lengths), vocab, codes, scores, rank_arr))

    def select(self, rows: np.ndarray) -> "Run":
        """The queries at ``rows``, in that order (the vocabulary shared)."""
        take, offsets = _gathered(self.offsets, rows)
        out = Run(self.query_ids[rows], offsets, vocab_as_stored(self), self.doc_codes[take], self.scores[take],
                  None if self.ranks is None else self.ranks[take], self.doc_order)
        return checked(out, vocab_text(self)) if is_checked(self) else out

    @classmethod
    def from_dict(cls, run: Mapping[str, Mapping[str, float]]) -> "Run":
        """From the dict-of-dicts form pytrec_eval and ranx use, checked as ``harness.evaluate`` checks it (ids read
        as strings: ``{"1": {2: 1.0}}`` names document "2"; scores finite numbers): an InputError naming each bad
        entry."""
        return cls.read_dict(run, "Run.from_dict")

    @classmethod
    def read_dict(cls, run: Mapping[str, Mapping[str, float]], name: str) -> "Run":
        """``from_dict``, its errors naming ``name``: the usual dict (string ids, float scores) read in bulk, any
        other entry by entry, each problem named."""
        from .dictcolumns import bulk_scores
        from .dictinput import checked_scores

        columns = bulk_scores(run)
        if columns is None:
            return cls.from_checked_dict(checked_scores(run, name))
        query_ids, lengths, vocab, codes, scores = columns  # (vocab: a TextVocab, made strings when first read)
        return checked(cls(query_ids, offsets_of(lengths), vocab, codes, scores), vocab)

    @classmethod
    def from_checked_dict(cls, run: Mapping[str, Mapping[str, float]]) -> "Run":
        """``from_dict`` for a dict a reader has checked already."""
        return cls.from_checked_lists({q: list(d.items()) for q, d in run.items()})

    def to_dict(self) -> dict[str, dict[str, float]]:
        """``{query_id: {doc_id: score}}`` in row order; a doc repeated in one query keeps its highest score (the
        copy the metric engine counts)."""
        out: dict[str, dict[str, float]] = {}
        docs, scores = self.doc_vocab[self.doc_codes].tolist(), self.scores.tolist()
        for i, q in enumerate(self.query_ids.tolist()):
            hits: dict[str, float] = {}
            for d, s in zip(docs[self.offsets[i]:self.offsets[i + 1]], scores[self.offsets[i]:self.offsets[i + 1]]):
                if d not in hits or s > hits[d]:
                    hits[str(d)] = float(s)
            out[str(q)] = hits
        return out


@dataclass(frozen=True, eq=False)
class Qrels:
    """Graded judgments; query ``i`` owns rows ``offsets[i]:offsets[i+1]``. Every query listed is judged."""

    query_ids: np.ndarray  # (Q,) object, unique, in golden-set order
    offsets: np.ndarray  # (Q+1,)
    doc_ids: np.ndarray  # (m,) object
    grades: np.ndarray  # (m,) int64
    # Optional: the same documents as codes into a run's vocabulary (the harness's in-memory form, where both
    # were encoded against the corpus); the engine then skips the string lookup.
    doc_vocab: np.ndarray | None = None
    doc_codes: np.ndarray | None = None

    @property
    def n_queries(self) -> int:
        return len(self.query_ids)

    def __eq__(self, other: object) -> bool:
        return _same_columns(self, other)

    __hash__ = None  # type: ignore[assignment]

    def problems(self, name: str) -> list[str]:
        """What breaks these judgments' invariants (``Run.problems``'s, for judgments built by hand)."""
        out = _offsets_problems(self, name, "doc_ids")
        out += _ids_problems(self.doc_ids, f"{name}.doc_ids", unique=False)
        grades = self.grades
        if not isinstance(grades, np.ndarray) or grades.ndim != 1 or grades.dtype.kind not in "iu":
            out.append(f"{name}.grades: expected a one-dimensional NumPy array of whole numbers, got "
                       f"{_described(grades)}")
        elif isinstance(self.doc_ids, np.ndarray) and len(grades) != len(self.doc_ids):
            out.append(f"{name}.grades: {len(grades)} grades for {len(self.doc_ids)} judgments")
        if (self.doc_vocab is None) != (self.doc_codes is None):
            out.append(f"{name}: doc_vocab and doc_codes come together (or neither)")
        return out

    def select(self, rows: np.ndarray) -> "Qrels":
        """The queries at ``rows``, in that order (the vocabulary and codes shared)."""
        take, offsets = _gathered(self.offsets, rows)
        out = Qrels(self.query_ids[rows], offsets, self.doc_ids[take], self.grades[take], self.doc_vocab,
                    None if self.doc_codes is None else self.doc_codes[take])
        return checked(out) if is_checked(self) else out

    def codes_for(self, vocab: np.ndarray, text=None) -> np.ndarray:
        """The judged doc ids' codes in ``vocab`` (-1: not in it); for library-built judgments, coded once per
        vocabulary (a weak reference: the judgments do not keep a run's vocabulary alive)."""
        if self.doc_vocab is vocab and self.doc_codes is not None:
            return self.doc_codes
        import weakref

        memo = remembered(self, "codes", dict)
        known, codes = memo.get("last", (None, None))  # (one tuple, read at once: another thread may replace it)
        if known is not None and known() is vocab:
            return codes
        keys, known = doc_keys(self), getattr(text if text is not None else vocab, "keys", None)
        if keys is not None and known is not None:  # both packed (a table's judgments, a run's vocabulary)
            from .textcolumns import key_positions

            codes = key_positions(known, keys)
        else:
            codes = encode(vocab, self.doc_ids.tolist(), text)
        codes.setflags(write=False)
        memo["last"] = (weakref.ref(vocab), codes)
        return codes

    @classmethod
    def from_dict(cls, qrels: Mapping[str, Mapping[str, int]]) -> "Qrels":
        """From ``{query_id: {doc_id: grade}}``; a query with an empty dict is judged with nothing relevant. Checked
        as ``harness.evaluate`` checks it (ids read as strings, grades whole numbers: ``1.5`` is refused, not read
        as 1): an InputError naming each bad entry."""
        return cls.read_dict(qrels, "Qrels.from_dict")

    @classmethod
    def read_dict(cls, qrels: Mapping[str, Mapping[str, int]], name: str) -> "Qrels":
        """``from_dict``, its errors naming ``name`` (``Run.read_dict``'s two paths)."""
        from .dictcolumns import bulk_grades
        from .dictinput import checked_grades

        columns = bulk_grades(qrels)
        if columns is None:
            return cls.from_checked_dict(checked_grades(qrels, name))
        query_ids, lengths, doc_ids, grades = columns
        return checked(cls(query_ids, offsets_of(lengths), doc_ids, grades))

    @classmethod
    def from_checked_dict(cls, qrels: Mapping[str, Mapping[str, int]]) -> "Qrels":
        """``from_dict`` for a dict a reader has checked already (string ids, whole grades)."""
        query_ids = np.array(list(qrels), dtype=object)
        lengths = np.array([len(v) for v in qrels.values()], dtype=np.int64)
        docs = np.array([d for v in qrels.values() for d in v], dtype=object)
        grades = np.array([int(g) for v in qrels.values() for g in v.values()], dtype=np.int64)
        return checked(cls(query_ids, offsets_of(lengths), docs, grades))

    def to_dict(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for i, q in enumerate(self.query_ids):
            lo, hi = self.offsets[i], self.offsets[i + 1]
            out[str(q)] = {str(d): int(g) for d, g in zip(self.doc_ids[lo:hi], self.grades[lo:hi])}
        return out


Run.doc_vocab = DocVocab()  # type: ignore[assignment]  (after @dataclass, which made the field and its __init__)
Run.doc_codes = DocCodes()  # type: ignore[assignment]

ColumnarRun = Run  # the older name of Run, kept for code that imports it
