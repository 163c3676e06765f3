"""The documentation cannot drift from the API.

- the API reference (docs/api/*.md, rendered by mkdocstrings) documents every public name of
  ``daemon_client`` and ``daemon_client.testing`` once, and every class a documented attribute
  or property hands out;
- every ```python block of the README and the guides compiles;
- every ``dc.X`` / ``daemon_client.X`` name they mention exists;
- the README's command-line section has one usage line for every command, each naming only
  options the parser has, in brackets exactly when they are optional.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import itertools
import re
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

import daemon_client
import daemon_client.testing

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = sorted([ROOT / "README.md", *DOCS.glob("*.md"), *(DOCS / "api").glob("*.md")])
DIRECTIVE = re.compile(r"^::: (\S+)$", re.MULTILINE)
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)
REFERENCE = re.compile(r"(?<![\w.])(?:dc|daemon_client)((?:\.[A-Za-z_]\w*)+)")


def documented() -> list[str]:
    """The objects the API reference renders: the ``::: path`` lines of docs/api/*.md."""
    return [path for page in sorted((DOCS / "api").glob("*.md")) for path in DIRECTIVE.findall(page.read_text())]


def public_paths() -> list[str]:
    """``daemon_client.Name`` for every public name, and ``daemon_client.testing.Name``."""
    return [
        f"{package.__name__}.{name}" for package in (daemon_client, daemon_client.testing) for name in package.__all__
    ]


def _imported_names(module: types.ModuleType) -> dict[str, str]:
    """Name -> ``module.name`` for every ``from module import name`` of ``module``'s source,
    including those under ``TYPE_CHECKING`` (annotations name them)."""
    names: dict[str, str] = {}
    for node in ast.walk(ast.parse(inspect.getsource(module))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def _class_named(module: types.ModuleType, name: str) -> type | None:
    """The package class ``name`` denotes in ``module``, if it denotes one."""
    value = vars(module).get(name)
    if value is None and name in _imported_names(module):
        source, _, attribute = _imported_names(module)[name].rpartition(".")
        value = getattr(importlib.import_module(source), attribute, None)
    if inspect.isclass(value) and value.__module__.startswith("daemon_client") and not name.startswith("_"):
        return value
    return None


def _class_node(klass: type) -> ast.ClassDef:
    tree = ast.parse(inspect.getsource(sys.modules[klass.__module__]))
    return next(node for node in ast.walk(tree) if isinstance(node, ast.ClassDef) and node.name == klass.__name__)


def _documented_properties(node: ast.ClassDef) -> Iterator[tuple[str, ast.expr | None]]:
    """(name, return annotation) of the public properties with a docstring."""
    for item in node.body:
        is_property = isinstance(item, ast.FunctionDef) and any(
            isinstance(decorator, ast.Name) and decorator.id == "property" for decorator in item.decorator_list
        )
        if (
            is_property
            and isinstance(item, ast.FunctionDef)
            and not item.name.startswith("_")
            and ast.get_docstring(item)
        ):
            yield item.name, item.returns


def _documented_attributes(node: ast.ClassDef) -> Iterator[tuple[str, ast.expr | None]]:
    """(name, annotation or constructor called) of the public ``self.x`` set in ``__init__``
    and followed by a docstring."""
    init = next((item for item in node.body if isinstance(item, ast.FunctionDef) and item.name == "__init__"), None)
    body = init.body if init is not None else []
    for statement, following in itertools.pairwise(body):
        if not (isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)):
            continue
        if isinstance(statement, ast.AnnAssign):
            target, named = statement.target, statement.annotation
        elif isinstance(statement, ast.Assign):
            target = statement.targets[0]
            named = statement.value.func if isinstance(statement.value, ast.Call) else None
        else:
            continue
        if isinstance(target, ast.Attribute) and not target.attr.startswith("_"):
            yield target.attr, named


def _handed_out(cls: type) -> Iterator[tuple[str, type]]:
    """(attribute, class) for the documented public properties of ``cls`` that return a public
    package class, and its documented attributes set in ``__init__`` to one
    (``self.agents: AgentStore = ...``, ``self.timeline = FakeTimeline(...)``), over the
    package's classes of its MRO."""
    for klass in cls.__mro__:
        if not klass.__module__.startswith("daemon_client"):
            continue
        module = sys.modules[klass.__module__]
        node = _class_node(klass)
        for attribute, named in [*_documented_properties(node), *_documented_attributes(node)]:
            held = _class_named(module, named.id) if isinstance(named, ast.Name) else None
            if held is not None:
                yield attribute, held


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


def test_the_api_reference_documents_every_public_name_once() -> None:
    paths = documented()
    missing = [path for path in public_paths() if path not in paths]
    assert missing == [], f"add a '::: path' line to a page of docs/api/ for: {', '.join(missing)}"
    repeated = sorted({path for path in paths if paths.count(path) > 1})
    assert repeated == []


def test_the_api_reference_names_only_what_exists() -> None:
    assert [path for path in documented() if not _resolves(path.removeprefix("daemon_client"))] == []


def test_the_api_reference_documents_the_classes_it_hands_out() -> None:
    exported = {getattr(sys.modules[path.rpartition(".")[0]], path.rpartition(".")[2]) for path in public_paths()}
    paths = set(documented())
    missing = sorted(
        f"{held.__module__}.{held.__qualname__} ({cls.__name__}.{attribute})"
        for cls in exported
        if inspect.isclass(cls)
        for attribute, held in _handed_out(cls)
        if held not in exported and f"{held.__module__}.{held.__qualname__}" not in paths
    )
    assert missing == [], "document these classes (by module path) in docs/api/: " + ", ".join(missing)


@pytest.mark.parametrize(("page", "index", "code"), _blocks())
def test_code_blocks_compile(page: str, index: int, code: str) -> None:
    compile(code, f"{page}, python block {index}", "exec")


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.relative_to(ROOT).as_posix())
def test_referenced_names_exist(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    missing = sorted({match.group(0) for match in REFERENCE.finditer(text) if not _resolves(match.group(1))})
    assert not missing, f"{page.relative_to(ROOT)} mentions names daemon_client does not have: {', '.join(missing)}"


def test_the_name_check_catches_a_missing_name() -> None:
    assert _resolves(".AgentFilter.include_archived")
    assert _resolves(".testing.FakeDaemon")
    assert not _resolves(".NoSuchName")
    assert not _resolves(".AgentFilter.no_such_field")


def test_the_reference_check_sees_what_classes_hand_out() -> None:
    from daemon_client.api.agents.namespace import AgentsNamespace
    from daemon_client.testing.fake.runs.runs import FakeRuns

    assert ("agents", AgentsNamespace) in set(_handed_out(daemon_client.Client))
    assert ("runs", FakeRuns) in set(_handed_out(daemon_client.testing.FakeDaemon))
    assert "daemon_client.testing.RecordingHandler" in public_paths()
    assert "daemon_client.Client" in documented()


def test_the_request_table_is_the_one_the_declarations_make() -> None:
    spec = importlib.util.spec_from_file_location("request_table", DOCS / "_tooling" / "request_table.py")
    assert spec is not None
    assert spec.loader is not None
    tooling = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tooling)
    page = (DOCS / "requests.md").read_text(encoding="utf-8")
    assert page == tooling.render(page), "run python docs/_tooling/request_table.py"
    with pytest.raises(ValueError, match="markers"):
        tooling.render("# no table here\n")


# ----------------------------------------------------------------------------- the README's command line

COMMAND_SPAN = re.compile(r"`daemon-client ([^`]+)`")
OPTION = re.compile(r"--[a-z][a-z-]*")


def _command_line_section(readme: str) -> str:
    """The text of the README's one ``## Command line`` section."""
    assert readme.count("\n## Command line\n") == 1, "the README has one command-line section"
    section = readme.split("\n## Command line\n", 1)[1]
    return section.split("\n## ", 1)[0]


def _runnable(parser: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """(command words, parser) of every command that runs (a group like ``config`` runs only
    through its subcommands)."""
    if path and parser.get_default("handler") is not None:
        yield path, parser
    for name, sub in parser.subcommands.items():
        yield from _runnable(sub, (*path, name))


def _usage_problems(readme: str) -> tuple[list[str], list[tuple[str, ...]], set[tuple[str, ...]]]:
    """What the usage lines of the command-line section say that the parser does not; the
    commands a usage line names on its own (once per line); every command a line names, on its
    own or among alternatives (``terminals ls|new``)."""
    from daemon_client.cli.main import build_parser

    top = build_parser()
    problems: list[str] = []
    named: list[tuple[str, ...]] = []
    covered: set[tuple[str, ...]] = set()
    for usage in COMMAND_SPAN.findall(_command_line_section(readme)):
        words = usage.split()
        parsers = [((), top)]
        while words and all(choice in parsers[0][1].subcommands for choice in words[0].split("|")):
            choices = words.pop(0).split("|")
            parsers = [((*path, choice), parser.subcommands[choice]) for path, parser in parsers for choice in choices]
        if parsers[0][0] == ():
            problems.append(f"`daemon-client {usage}`: no such command")
            continue
        if len(parsers) == 1:
            named.append(parsers[0][0])
        covered.update(path for path, _parser in parsers)
        depth = 0
        mentioned: set[str] = set()
        for word in words:
            for option in OPTION.findall(word):
                mentioned.add(option)
                optional = depth > 0 or word.count("[") > 0 or "|" in word
                for path, parser in parsers:
                    actions = {string: action for action in parser.recorded for string in action.option_strings}
                    if option not in actions:
                        problems.append(f"`daemon-client {usage}`: {' '.join(path)} has no {option}")
                    elif not optional and not actions[option].required:
                        problems.append(f"`daemon-client {usage}`: {option} is optional: write [{option} ...]")
            depth += word.count("[") - word.count("]")
        for _path, parser in parsers:
            required = [
                action.option_strings[0] for action in parser.recorded if action.required and action.option_strings
            ]
            problems += [
                f"`daemon-client {usage}`: the required {option} is missing"
                for option in required
                if option not in mentioned
            ]
    return problems, named, covered


def test_the_readme_command_line_section_agrees_with_the_parser() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    problems, named, covered = _usage_problems(readme)
    assert problems == []
    from daemon_client.cli.main import build_parser

    commands = [path for path, _parser in _runnable(build_parser())]
    missing = [" ".join(path) for path in commands if path not in covered]
    assert missing == [], "give these commands a usage line in the README's command-line section"
    repeated = sorted({" ".join(path) for path in named if named.count(path) > 1})
    assert repeated == [], "one usage line per command: these have several"


def test_the_command_line_check_catches_drift() -> None:
    section = "x\n\n## Command line\n\n{}\n\n## Security\n"
    assert _usage_problems(section.format("- `daemon-client run --provider P --cwd DIR PROMPT`"))[0] == [
        "`daemon-client run --provider P --cwd DIR PROMPT`: --cwd is optional: write [--cwd ...]"
    ]
    assert _usage_problems(section.format("- `daemon-client run [--cwd DIR] PROMPT`"))[0] == [
        "`daemon-client run [--cwd DIR] PROMPT`: the required --provider is missing"
    ]
    assert _usage_problems(section.format("- `daemon-client tail AGENT [--no-such]`"))[0] == [
        "`daemon-client tail AGENT [--no-such]`: tail has no --no-such"
    ]
    assert _usage_problems(section.format("- `daemon-client nothing`"))[0] == [
        "`daemon-client nothing`: no such command"
    ]
    twice = section.format("- `daemon-client tail AGENT`\n- `daemon-client tail AGENT [--history N]`")
    assert _usage_problems(twice)[1] == [("tail",), ("tail",)]
