"""The documentation cannot drift from the API.

- docs/api.md is what docs/gen_api.py generates from the docstrings;
- every ```python block of the README and the guides compiles;
- every ``dc.X`` / ``daemon_client.X`` name they mention exists.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import inspect
import re
import types
from pathlib import Path

import attrs
import pytest

import daemon_client
import daemon_client.testing

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
GENERATED = DOCS / "api.md"
PAGES = sorted([ROOT / "README.md", *(page for page in DOCS.glob("*.md") if page != GENERATED)])
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)
REFERENCE = re.compile(r"(?<![\w.])(?:dc|daemon_client)((?:\.[A-Za-z_]\w*)+)")


def _generator() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("gen_api", DOCS / "gen_api.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _blocks() -> list[object]:
    blocks = []
    for page in PAGES:
        name = page.relative_to(ROOT).as_posix()
        for index, code in enumerate(BLOCK.findall(page.read_text(encoding="utf-8"))):
            blocks.append(pytest.param(name, index, code, id=f"{name}#{index}"))
    return blocks


def _resolves(dotted: str) -> bool:
    """Whether ``daemon_client`` + ``dotted`` names a module, class, member or field."""
    current: object = daemon_client
    path = "daemon_client"
    for name in dotted.strip(".").split("."):
        path = f"{path}.{name}"
        if isinstance(current, types.ModuleType):
            if hasattr(current, name):
                current = getattr(current, name)
                continue
            try:
                current = importlib.import_module(path)
            except ImportError:
                return False
        elif inspect.isclass(current):
            if not hasattr(current, name):
                return attrs.has(current) and name in attrs.fields_dict(current)
            current = getattr(current, name)
        else:
            return True  # an instance attribute or a value: beyond what a name check can see
    return True


def test_api_reference_is_up_to_date() -> None:
    expected = _generator().render()
    actual = GENERATED.read_text(encoding="utf-8") if GENERATED.exists() else ""
    diff = difflib.unified_diff(actual.splitlines(), expected.splitlines(), "docs/api.md", "generated", lineterm="")
    assert actual == expected, "docs/api.md is out of date: run python docs/gen_api.py\n" + "\n".join(list(diff)[:40])


@pytest.mark.parametrize(("page", "index", "code"), _blocks())
def test_code_blocks_compile(page: str, index: int, code: str) -> None:
    compile(code, f"{page}, python block {index}", "exec")


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_referenced_names_exist(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    missing = sorted({match.group(0) for match in REFERENCE.finditer(text) if not _resolves(match.group(1))})
    assert not missing, f"{page.name} mentions names daemon_client does not have: {', '.join(missing)}"


def test_the_name_check_catches_a_missing_name() -> None:
    assert _resolves(".AgentFilter.include_archived")
    assert _resolves(".testing.FakeDaemon")
    assert not _resolves(".NoSuchName")
    assert not _resolves(".AgentFilter.no_such_field")
