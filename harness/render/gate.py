"""A gate's outcome as the files CI reads: a Markdown summary (a step summary or a PR comment) and JUnit XML."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Sequence

from ..result.outcomes import GateResult
from .fmt import md, md_code


def icon(r: GateResult) -> str:
    """The decision as the summary's first column: an INCONCLUSIVE says whether the rule accepted it."""
    if r.verdict == "INCONCLUSIVE":
        return "⚠️ INCONCLUSIVE (accepted)" if r.passed else "❌ INCONCLUSIVE"
    return "⏭️ SKIPPED" if r.skipped else ("✅" if r.passed else "❌")


def summary_markdown(name: str, results: Sequence[GateResult]) -> str:
    failed = sum(r.failed for r in results)
    skipped = sum(r.skipped for r in results)
    unsure = sum(r.verdict == "INCONCLUSIVE" and r.failed for r in results)
    accepted = sum(r.accepted for r in results)
    checked = len(results) - skipped
    verdict = "PASS" if not failed else f"FAIL ({failed} of {checked} {'checked ' if skipped else ''}rules" + (
        f", {unsure} of them INCONCLUSIVE)" if unsure else ")")
    if accepted:
        verdict += f", {accepted} INCONCLUSIVE accepted"
    if skipped:
        verdict += f", {skipped} rule{'s' if skipped > 1 else ''} SKIPPED"
    head = f"## Retrieval gate for {md_code(name)}: {verdict}"
    # Rule names, slice tags and values are user text: escaped as report.md escapes them.
    rows = [f"| {icon(r)} | {md(r.rule.name)} | {md(r.message)} |" for r in results]
    return "\n".join([head, "", "| | rule | observed |", "|---|---|---|", *rows]) + "\n"


def junit_xml(name: str, results: Sequence[GateResult]) -> str:
    suite = ET.Element("testsuite", name=f"harness gate {name}", tests=str(len(results)),
                       failures=str(sum(r.failed for r in results)), skipped=str(sum(r.skipped for r in results)))
    for r in results:
        case = ET.SubElement(suite, "testcase", classname="harness.gate", name=r.rule.name)
        if r.skipped:
            ET.SubElement(case, "skipped", message=r.message)
        elif not r.passed:
            ET.SubElement(case, "failure", message=r.message).text = r.message
        else:
            ET.SubElement(case, "system-out").text = r.message
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"
