"""Every section of the wire reference the package cites exists in ``docs/protocol.md``.

Docstrings and comments cite sections as ``protocol.md 4.2``, ``protocol 1.6``,
``protocol.md sections 1.4 and 3``, ``protocol.md 4.4-4.6``, ``protocol.md 4.2, 4.3, 5.1``,
``protocol.md §7.5`` or ``protocol-surface.md 12.3`` (chapter 12 of the same file). A range
cites each section in it. ``protocol-relay.md 5.3`` cites section 5.3 of ``docs/protocol-relay.md``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "daemon_client"
REFERENCE = ROOT / "docs" / "protocol.md"

_NUMBER = r"\d+(?:\.\d+)*"
_ITEM = rf"§*\s*{_NUMBER}(?:\s*[-–]\s*{_NUMBER})?"
_JOIN = r"\s*(?:,|\band\b|&)\s*(?:sections?\s+|§\s*)?"
CITATION = re.compile(
    rf"\bprotocol(?P<document>-surface|-relay)?(?:\.md)?(?![\w-])\s*(?:§\s*|sections?\s+)?"
    rf"(?P<sections>{_NUMBER}(?:\s*[-–]\s*{_NUMBER})?(?:{_JOIN}{_ITEM})*)",
    re.IGNORECASE,
)
HEADING = re.compile(rf"^#{{2,6}}\s+(?P<number>{_NUMBER})\.?\s", re.MULTILINE)
# A comment continued on the next line: the newline, the indentation and the "#".
_CONTINUATION = re.compile(r"\n[ \t]*(?:#[ \t]*)?")


def headings(text: str) -> set[str]:
    """The section numbers of a Markdown document's numbered headings."""
    return {match.group("number") for match in HEADING.finditer(text)}


def cited_sections(text: str) -> list[tuple[str, list[str]]]:
    """Every citation in ``text`` as (document, cited section numbers), ranges expanded."""
    flat = _CONTINUATION.sub(" ", text)
    found: list[tuple[str, list[str]]] = []
    for match in CITATION.finditer(flat):
        document = f"protocol{(match.group('document') or '').lower()}.md"
        numbers: list[str] = []
        for item in re.split(_JOIN, match.group("sections")):
            bounds = [part.strip(" §") for part in re.split(r"[-–]", item.strip(" §"))]
            numbers.extend(_expand(*bounds) if len(bounds) == 2 else bounds)
        found.append((document, numbers))
    return found


def _expand(first: str, last: str) -> list[str]:
    """``4.4``-``4.6`` is 4.4, 4.5, 4.6; bounds that differ above the last level are kept as they are."""
    head, _, low = first.rpartition(".")
    other_head, _, high = last.rpartition(".")
    if head != other_head or int(low) > int(high):
        return [first, last]
    prefix = f"{head}." if head else ""
    return [f"{prefix}{n}" for n in range(int(low), int(high) + 1)]


def _package_citations() -> list[object]:
    params = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for document, numbers in cited_sections(path.read_text(encoding="utf-8")):
            for number in numbers:
                name = path.relative_to(ROOT).as_posix()
                params.append(pytest.param(name, document, number, id=f"{name}:{document}:{number}"))
    return params


CITATIONS = _package_citations()


def test_the_reader_understands_every_citation_form() -> None:
    text = '''
    """Rules (protocol.md 4.4-4.6) and hosts (protocol.md sections 1.4 and 3).
    Models (protocol.md 4.2, 4.3, 5.1); heartbeat (protocol 1.6); see protocol.md §7.5,
    protocol-surface.md 12.3, protocol.md § 6.6 and §6.7, protocol-relay.md 5.1."""
    # a comment citing protocol.md
    # 11.1-11.3 across a line break; protocol_version 1 and protocolVersion 2 are no citations
    '''
    assert cited_sections(text) == [
        ("protocol.md", ["4.4", "4.5", "4.6"]),
        ("protocol.md", ["1.4", "3"]),
        ("protocol.md", ["4.2", "4.3", "5.1"]),
        ("protocol.md", ["1.6"]),
        ("protocol.md", ["7.5"]),
        ("protocol-surface.md", ["12.3"]),
        ("protocol.md", ["6.6", "6.7"]),
        ("protocol-relay.md", ["5.1"]),
        ("protocol.md", ["11.1", "11.2", "11.3"]),
    ]
    assert _expand("4", "9") == ["4", "5", "6", "7", "8", "9"]
    assert _expand("4.8", "5.2") == ["4.8", "5.2"]


def test_the_reference_has_every_chapter() -> None:
    numbers = headings(REFERENCE.read_text(encoding="utf-8"))
    assert {str(chapter) for chapter in range(1, 13)} <= numbers
    assert {"4.2", "7.5", "12.3", "12.2.1"} <= numbers


def test_the_package_cites_the_reference() -> None:
    assert len(CITATIONS) > 50  # the reader still finds the package's citations


@pytest.mark.parametrize(("source", "document", "number"), CITATIONS)
def test_cited_section_exists(source: str, document: str, number: str) -> None:
    reference = REFERENCE if document != "protocol-relay.md" else ROOT / "docs" / document
    assert reference.exists(), f"{source} cites {document}, which is not kept in docs/: cite docs/protocol.md"
    numbers = headings(reference.read_text(encoding="utf-8"))
    assert number in numbers, f"{source} cites {document} {number}: no such section in {reference.name}"
