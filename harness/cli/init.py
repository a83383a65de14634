"""``harness init``: a starter project that runs at once: a config, a tiny corpus and golden set, and gate rules.

The files are the user's to edit from then on, so init never replaces one: a folder that already holds any of them
is refused, naming them. It writes all of them or none, so a failed init can be run again."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..core.errors import InputError, OutputAppeared
from ..io.files import make_folders, remove_folders, write_together

CONFIG = """\
# A starter experiment: BM25 over corpus.jsonl, judged by goldset.jsonl, a context window of 3 chunks.
# Run it:      harness run {config}
# Gate it:     harness gate {out}/results.json --rules {gates}
# Swap the retriever for a dense one: retriever: {{kind: dense}}  (or --set 'retriever={{kind: dense}}')
name: starter
corpus:
  path: corpus.jsonl          # one JSON object per line: id, title, text
chunking:
  strategy: sentences
  size: 2                     # sentences per chunk
goldset:
  path: goldset.jsonl         # queries with their relevant documents, grades and evidence quotes
retriever:
  kind: bm25
  k1: 1.2
  b: 0.75
cutoff:
  k: 3                        # the chunks your generator sees
metrics: [ndcg@10, recall@5, rr@10, hit@3]
# The outputs go to reports/starter/ in the folder you run harness from (output: would change it, from there too).
"""

GATES = """\
# Release gates: harness gate RESULTS --rules gates.yaml [--baseline MAIN/results.json]
rules:
  - "doc.ndcg@10 >= 0.70"
  - "chunk.recall@window >= 0.60"
  - "missing_document <= 0.25"
  - {regression: doc.ndcg@10, budget: 0.02}   # checked only with --baseline
"""

DOCUMENTS = [
    ("returns", "Returning an order",
     "You can return most items within 30 days of delivery. Start a return from the Orders page and print the "
     "prepaid label. Refunds reach your card five to seven business days after the parcel arrives at our "
     "warehouse. Gift cards and opened software cannot be returned."),
    ("shipping", "Shipping options",
     "Standard shipping takes three to five business days and is free above 50 euros. Express shipping arrives the "
     "next business day when you order before 2 pm. We ship to every country in the European Union and to "
     "Switzerland and Norway."),
    ("warranty", "Warranty",
     "Every device carries a two-year warranty against manufacturing defects. The warranty does not cover water "
     "damage or a cracked screen. To make a claim, send the serial number and a photo of the fault to support."),
    ("account", "Your account",
     "You can change your email address under Settings > Profile. Two-factor authentication is available with an "
     "authenticator app or a hardware key. Deleting your account removes your order history after 90 days."),
    ("payment", "Paying for an order",
     "We accept credit cards, PayPal and bank transfer. A bank transfer order ships once the payment arrives, "
     "usually within two business days. Invoices are sent by email as PDF files."),
]

QUERIES = [
    ("q1", "How long do refunds take?", "returns", "Refunds reach your card five to seven business days"),
    ("q2", "Is shipping free?", "shipping", "free above 50 euros"),
    ("q3", "Does the warranty cover a cracked screen?", "warranty", "does not cover water damage or a cracked screen"),
    ("q4", "How do I turn on two-factor authentication?", "account",
     "Two-factor authentication is available with an authenticator app or a hardware key"),
    ("q5", "When does a bank transfer order ship?", "payment", "ships once the payment arrives"),
    ("q6", "Can I return a gift card?", "returns", "Gift cards and opened software cannot be returned"),
]


def starter_files(folder: Path) -> dict[Path, str]:
    config, gates = folder / "harness.yaml", folder / "gates.yaml"
    corpus = "".join(json.dumps({"id": i, "title": t, "text": x}) + "\n" for i, t, x in DOCUMENTS)
    gold = "".join(json.dumps({"id": q, "query": text, "relevant": [{"doc": doc, "grade": 2,
                                                                      "evidence": [{"quote": quote}]}]}) + "\n"
                   for q, text, doc, quote in QUERIES)
    return {config: CONFIG.format(config=config, gates=gates, out=Path("reports") / "starter"),
            folder / "corpus.jsonl": corpus, folder / "goldset.jsonl": gold, gates: GATES}


def init_project(folder: Path) -> list[Path]:
    """Write the starter files into ``folder`` (created if missing); returns their paths."""
    if folder.exists() and not folder.is_dir():
        raise InputError(f"{folder}: is a file, not a folder; give a folder for the starter project")
    if folder.is_symlink() and not folder.exists():
        raise InputError(f"{folder}: is a link to nothing ({os.readlink(folder)}); give a folder for the starter "
                         f"project")
    above = next((p for p in folder.parents if p.exists()), None)
    if above is not None and not above.is_dir():
        raise InputError(f"{folder}: {above} is a file, not a folder; give a folder for the starter project")
    files = starter_files(folder)
    taken = [p for p in files if p.exists() or p.is_symlink()]
    if taken:
        raise InputError(f"{folder}: already has {', '.join(p.name for p in taken)}; harness init never replaces "
                         f"a file (yours to edit): choose another folder or move them away")
    # All or nothing: a half-written project (a full disk) would be refused by the next init, every file of it
    # being "yours". The files are staged, then published together, never over a file that appeared meanwhile.
    made: list[Path] = []
    try:
        made = make_folders(folder)
        write_together([(path, text.encode("utf-8"), False) for path, text in files.items()])
    except BaseException as exc:
        remove_folders(made)
        if isinstance(exc, OutputAppeared):
            raise InputError(f"{exc.path}: appeared while harness init ran; not replaced (your file is kept; the "
                             f"starter project is not written)") from None
        if isinstance(exc, OSError):  # checked above; a race, a read-only place or a full disk: still one line
            raise InputError(f"{folder}: cannot write the starter project: {exc.strerror or exc} (nothing was "
                             f"written)") from None
        raise
    return list(files)
