"""Each query's context window at the cutoff (a k, or the chunks that fit in a token budget), and the warnings
about windows the user's settings left empty or cut at depth."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..config.schema import CutoffConfig
from ..core.errors import ConfigError
from ..hits.table import HitTable
from ..core.types import Chunk, RankedList
from ..text.analysis import TokenCounter


def window_sizes(lists: Sequence[RankedList], cutoff: CutoffConfig, chunk_text: dict[str, str]) -> list[int]:
    """The effective k of each query: ``k``, or as many chunks in rank order as fit in the token budget."""
    if cutoff.k is not None:
        if isinstance(lists, HitTable):  # from the columns: no list is made
            return np.minimum(lists.lengths, cutoff.k).tolist()
        return [min(cutoff.k, len(r.hits)) for r in lists]
    counter = TokenCounter(cutoff.tokenizer)
    budget = cutoff.token_budget or 0
    costs: dict[str, int] = {}  # a chunk is counted once, however many rankings it appears in
    sizes = []
    for ranked in lists:
        used, n = 0, 0
        for hit in ranked.hits:
            cost = costs.get(hit.chunk_id)
            if cost is None:
                cost = costs[hit.chunk_id] = counter.count(chunk_text[hit.chunk_id])
            if used + cost > budget:
                break
            used += cost
            n += 1
        sizes.append(n)
    return sizes


def window_tokenizer(cutoff: CutoffConfig) -> str:
    """What a window's tokens are counted with: the token budget's tokenizer, else whitespace words."""
    return cutoff.tokenizer if cutoff.token_budget is not None else "words"


def window_size_means(lists: Sequence[RankedList], sizes: Sequence[int], cutoff: CutoffConfig,
                      chunk_text: dict[str, str]) -> tuple[float, float]:
    """The mean size of the queries' context windows: characters (the chunks' spans) and tokens (whitespace words,
    or the token budget's ``cutoff.tokenizer``: with k it is read by nothing, so it may name no file), summed over
    each window's chunks as the model receives them (overlapping chunks count twice), over every query with a
    ranked list. The one place these numbers are computed: the leaderboard, compare's note and the report read
    them from the result."""
    if not len(lists):
        return 0.0, 0.0
    counter = TokenCounter(window_tokenizer(cutoff))
    costs: dict[str, int] = {}
    chars = tokens = 0
    for ranked, k in zip(lists, sizes):
        for hit in ranked.hits[:k]:
            cost = costs.get(hit.chunk_id)
            if cost is None:
                text = chunk_text.get(hit.chunk_id)
                if text is None:  # a chunk adopted for a hit's own span: the table knows it
                    text = next(c.text for c in lists.chunks if c.chunk_id == hit.chunk_id)
                cost = costs[hit.chunk_id] = counter.count(text)
            chars += hit.end - hit.start
            tokens += cost
    return chars / len(lists), tokens / len(lists)


def check_token_budget(cutoff: CutoffConfig, chunks: Sequence[Chunk]) -> None:
    """A token budget smaller than every chunk would leave every query's context window empty whatever the
    retriever does: an error before any retrieval, naming the smallest chunk's cost. Counting stops at the first
    chunk that fits (usually the first one), so a sound budget costs almost nothing to check."""
    budget = cutoff.token_budget
    if budget is None or not chunks:
        return
    counter = TokenCounter(cutoff.tokenizer)
    smallest: tuple[int, str] | None = None
    for chunk in chunks:
        cost = counter.count(chunk.text)
        if cost <= budget:
            return
        if smallest is None or cost < smallest[0]:
            smallest = (cost, chunk.chunk_id)
    assert smallest is not None
    unit = "words" if cutoff.tokenizer == "words" else "tokens"
    raise ConfigError(f"cutoff.token_budget: {budget} {unit} is smaller than every chunk, so every context window "
                      f"would be empty; the smallest chunk ({smallest[1]!r}) costs {smallest[0]} {unit}: give a "
                      f"budget of at least {smallest[0]}, or make smaller chunks")


def empty_window_warning(cutoff: CutoffConfig, lists: Sequence[RankedList], sizes: Sequence[int]) -> str | None:
    """The warning for queries whose first hit alone is over the token budget (their window holds 0 chunks)."""
    if cutoff.token_budget is None:
        return None
    if isinstance(lists, HitTable):
        empty = [str(q) for q, k, n in zip(lists.query_ids, sizes, lists.lengths.tolist()) if k == 0 and n]
    else:
        empty = [r.query_id for r, k in zip(lists, sizes) if k == 0 and r.hits]
    if not empty:
        return None
    shown = ", ".join(empty[:5]) + (f" and {len(empty) - 5} more" if len(empty) > 5 else "")
    return (f"warning: cutoff.token_budget: the context window is empty (0 chunks) for {len(empty)} of {len(lists)} "
            f"queries, whose first hit alone costs more than {cutoff.token_budget}: {shown}")


def depth_cut_warning(cutoff: CutoffConfig, depth: int, lists: Sequence[RankedList], sizes: Sequence[int]
                      ) -> str | None:
    """The warning for queries whose whole ranked list (``depth`` hits) fit in the token budget: their window was
    cut at ``depth``, not by the budget, so it is smaller than the budget the user set."""
    if cutoff.token_budget is None:
        return None
    lengths = lists.lengths.tolist() if isinstance(lists, HitTable) else [len(r.hits) for r in lists]
    cut = sum(1 for k, n in zip(sizes, lengths) if k == n == depth)
    if not cut:
        return None
    return (f"warning: cutoff.token_budget: for {cut} of {len(lists)} queries all {depth} retrieved chunks fit in the "
            f"token budget ({cutoff.token_budget}), so their window stops at depth ({depth}), not at the budget: raise "
            f"depth to fill the budget")
