"""The package metadata agrees with what the project says it supports.

The ``Programming Language :: Python :: 3.N`` classifiers of setup.cfg name every minor version
from ``python_requires``'s minimum to the newest one the README claims ("Python 3.10 to 3.13"),
with no gap; ruff and mypy check the code against the minimum; every Python version the README
and the docs name lies in that range.
"""

from __future__ import annotations

import configparser
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLASSIFIER = re.compile(r"^Programming Language :: Python :: 3\.(\d+)$")
RANGE_CLAIM = re.compile(r"Python 3\.(\d+) to 3\.(\d+)")
ANY_CLAIM = re.compile(r"Python 3\.(\d+)")


def _setup_cfg() -> configparser.ConfigParser:
    parser = configparser.ConfigParser()
    parser.read(ROOT / "setup.cfg", encoding="utf-8")
    return parser


def classified_minors(classifiers: str) -> list[int]:
    """The ``N`` of every ``Python :: 3.N`` classifier, in order."""
    return [int(match[1]) for line in classifiers.splitlines() if (match := CLASSIFIER.match(line.strip()))]


def required_minimum(python_requires: str) -> int:
    """The ``N`` of ``>=3.N``."""
    match = re.fullmatch(r">=\s*3\.(\d+)", python_requires.strip())
    assert match, f"python_requires is not of the form >=3.N: {python_requires!r}"
    return int(match[1])


def claimed_range(text: str) -> tuple[int, int] | None:
    """The ``(low, high)`` of the first "Python 3.low to 3.high" in ``text``."""
    match = RANGE_CLAIM.search(text)
    return (int(match[1]), int(match[2])) if match else None


def test_the_classifiers_run_from_python_requires_to_the_newest_version_claimed() -> None:
    metadata = _setup_cfg()
    minors = classified_minors(metadata["metadata"]["classifiers"])
    minimum = required_minimum(metadata["options"]["python_requires"])
    claim = claimed_range((ROOT / "README.md").read_text(encoding="utf-8"))
    assert claim is not None, 'the README says which versions it runs on: "Python 3.10 to 3.13"'
    assert claim[0] == minimum, "the README's oldest Python is python_requires's"
    assert minors == list(range(minimum, claim[1] + 1)), "one classifier per version, python_requires to the README's"


def test_the_tools_check_against_the_oldest_version() -> None:
    minimum = required_minimum(_setup_cfg()["options"]["python_requires"])
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")  # tomllib is 3.11+: read the two lines
    assert re.findall(r'^target-version = "(.*)"$', pyproject, re.MULTILINE) == [f"py3{minimum}"]
    assert re.findall(r'^python_version = "(.*)"$', pyproject, re.MULTILINE) == [f"3.{minimum}"]


def test_every_python_version_the_docs_name_is_classified() -> None:
    minors = set(classified_minors(_setup_cfg()["metadata"]["classifiers"]))
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]
    outside = sorted(
        f"{page.relative_to(ROOT)}: Python 3.{minor}"
        for page in pages
        for minor in {int(found) for found in ANY_CLAIM.findall(page.read_text(encoding="utf-8"))}
        if minor not in minors
    )
    assert outside == []


def test_the_checks_read_what_they_are_given() -> None:
    assert classified_minors("Programming Language :: Python :: 3\n  Programming Language :: Python :: 3.11\n") == [11]
    assert required_minimum(">=3.10") == 10
    assert claimed_range("runs on Python 3.10 to 3.13, and") == (10, 13)
    assert claimed_range("Python 3.10+") is None
