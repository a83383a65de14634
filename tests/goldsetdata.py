"""An old corpus built from the demo documents (multi-paragraph guides), a golden set of span and quote labels on
it, and a new corpus made by re-chunking and editing the old one, each edit aimed at one label classification."""

from __future__ import annotations

import json
from pathlib import Path

from clihelp import ROOT

DEMO = {json.loads(line)["id"]: json.loads(line)["text"]
        for line in (ROOT / "goldsets" / "demo" / "corpus.jsonl").read_text().splitlines() if line.strip()}

PASSWORD = "Passwords must be at least 12 characters long."
MOBILE = "Mark a file as Available offline to keep it on the device."
INVOICE = "Invoices are issued on the first day of each billing period and are emailed to the billing contact."
STARTER = "Starter costs 6 dollars per user per month"
SYNC_EDITED = "Files are split into 4 MB blocks, and only changed blocks are uploaded, so editing a large file sends little data."


def first_sentence(text: str) -> str:
    return text[: text.index(". ") + 1]


def last_sentence(text: str) -> str:
    return text[text.rstrip(".").rindex(". ") + 2:]


def paras(*ids: str) -> str:
    return "\n\n".join(DEMO[i] for i in ids)


def old_corpus() -> dict[str, str]:
    return {
        "guide-install": paras("install-desktop", "install-linux", "install-mobile"),
        "guide-account": paras("account-create", "account-password", "account-2fa"),
        "guide-billing": paras("billing-plans", "billing-invoices", "billing-refunds"),
        "guide-sync": paras("sync-overview", "sync-selective"),
        "sharing-links": DEMO["sharing-links"],
        "versions-restore": DEMO["versions-restore"],
    }


def new_corpus() -> dict[str, str]:
    refunds = DEMO["billing-refunds"]
    # the sentence after the first changed (the first is an evidence: its neighbour changed)
    second = refunds[len(first_sentence(refunds)):].strip().split(". ")[0] + "."
    changed_refunds = refunds.replace(second, "Refunds are handled by our partner, Paylane.")
    overview = DEMO["sync-overview"]
    assert SYNC_EDITED in overview
    selective = DEMO["sync-selective"]
    spread = first_sentence(selective).replace(" ", "\n  ", 3).replace("Selective", "selective", 1)
    restore_first = first_sentence(DEMO["versions-restore"])
    return {
        # a paragraph moved: the mobile paragraph now comes first
        "guide-install": paras("install-mobile", "install-desktop", "install-linux"),
        # re-chunked: one document per paragraph
        "account-create": DEMO["account-create"],
        "account-password": DEMO["account-password"],
        "account-2fa": DEMO["account-2fa"],
        # the invoices paragraph deleted; a sentence of the refunds paragraph changed (the evidence's neighbour)
        "guide-billing": DEMO["billing-plans"] + "\n\n" + changed_refunds,
        # the evidence sentence itself edited (4 MB -> 8 MB); another's whitespace and case changed
        "guide-sync": overview.replace("4 MB", "8 MB") + "\n\n" + selective.replace(first_sentence(selective), spread),
        "sharing-links": DEMO["sharing-links"],
        # versions-restore deleted; its first sentence now in two FAQ documents
        "faq-1": "Frequently asked. " + restore_first,
        "faq-2": restore_first + " See also Rewind.",
    }


def span(text: str, piece: str) -> dict:
    at = text.index(piece)
    return {"start": at, "end": at + len(piece)}


def goldset() -> list[dict]:
    old = old_corpus()
    acc, bill, inst, sync = old["guide-account"], old["guide-billing"], old["guide-install"], old["guide-sync"]
    create_last = last_sentence(DEMO["account-create"])
    plans_last = last_sentence(DEMO["billing-plans"])
    refunds_first = first_sentence(DEMO["billing-refunds"])

    def q(qid, doc, evidence=None):
        rel = {"doc": doc, "grade": 2}
        if evidence is not None:
            rel["evidence"] = [evidence]
        return {"id": qid, "query": f"question {qid}", "relevant": [rel]}

    return [
        q("valid_quote", "guide-billing", {"quote": STARTER}),
        q("valid_span", "sharing-links", span(old["sharing-links"], first_sentence(DEMO["sharing-links"]))),
        q("moved", "guide-install", span(inst, MOBILE)),
        q("rechunked", "guide-account", span(acc, PASSWORD)),
        q("deleted", "guide-billing", span(bill, INVOICE)),
        q("stale_near", "guide-billing", {"quote": refunds_first}),
        q("split_docs", "guide-account", span(acc, create_last + "\n\n" + PASSWORD)),
        q("split_deleted", "guide-billing", span(bill, plans_last + "\n\n" + first_sentence(DEMO["billing-invoices"]))),
        q("doc_gone", "versions-restore"),
        q("doc_changed", "guide-billing"),
        q("edited", "guide-sync", span(sync, SYNC_EDITED)),
        q("ambiguous", "versions-restore", {"quote": first_sentence(DEMO["versions-restore"])}),
        q("normalised", "guide-sync", span(sync, first_sentence(DEMO["sync-selective"]))),
    ]


EXPECTED = {
    "valid_quote": "valid", "valid_span": "valid", "moved": "re_anchorable", "rechunked": "re_anchorable",
    "deleted": "orphaned", "stale_near": "stale", "split_docs": "split", "split_deleted": "split",
    "doc_gone": "orphaned", "doc_changed": "stale", "edited": "stale", "ambiguous": "re_anchorable",
    "normalised": "re_anchorable",
}


def write_corpus(path: Path, docs: dict[str, str]) -> Path:
    path.write_text("".join(json.dumps({"id": k, "text": v}) + "\n" for k, v in docs.items()))
    return path


def write_all(tmp: Path) -> tuple[Path, Path, Path]:
    old = write_corpus(tmp / "old.jsonl", old_corpus())
    new = write_corpus(tmp / "new.jsonl", new_corpus())
    gold = tmp / "gold.jsonl"
    gold.write_text("".join(json.dumps(r) + "\n" for r in goldset()))
    return gold, old, new
