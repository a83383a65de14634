"""Executors: where retrieval runs. In: the config, the built retriever, the chunks and the golden-set queries.
Out: ``Executed`` = the placed ranked lists (``pipeline.execute.Retrieved``, the same whichever executor ran),
the executor's record for results.json and its per-stage timings. ``local`` runs in this process; ``ray`` spreads
encoding (Ray Data) and retrieval (actors holding the index, or one shard of it each) over a Ray cluster."""

from __future__ import annotations

from .local import Executed, execute  # noqa: F401
