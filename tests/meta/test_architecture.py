"""The architecture's rules, checked: the layer contract (import-linter), no reach-ins into
other modules' private attributes, no import cycle at run time, one list of public names
resolved lazily (the package's and ``daemon_client.transport``'s), no class over the size limit.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import daemon_client
import daemon_client.testing
import daemon_client.transport
from daemon_client.testing import FakeDaemon
from daemon_client.transport.memory import MemoryTransport
from daemon_client.transport.websocket import WebSocketTransport

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "daemon_client"
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"

# Documented friend pairs: (module, attribute) reads across modules that are allowed.
# None today; add a pair here only with a comment in both modules saying why.
FRIENDS: frozenset[tuple[str, str]] = frozenset()

MAX_CLASS_LINES = 420
NAMEDTUPLE_API = frozenset({"_replace", "_asdict", "_fields", "_make"})  # public despite the underscore


def _modules(root: Path = PACKAGE) -> Iterator[tuple[str, Path, ast.Module]]:
    for path in sorted(root.rglob("*.py")):
        name = ".".join(path.relative_to(root.parent).with_suffix("").parts)
        yield name.removesuffix(".__init__"), path, ast.parse(path.read_text(encoding="utf-8"))


def _defined_private_names(tree: ast.Module) -> set[str]:
    """Underscore names a module defines: methods, class attributes, ``self._x`` assignments."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name.startswith("_"):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.Expr) and isinstance(item.value, ast.Constant):
                    continue
    return names


def reach_ins(root: Path = PACKAGE) -> list[str]:
    """``obj._name`` where ``obj`` is not ``self``/``cls`` and ``_name`` is not defined in the
    same module: a read or write of another module's private state."""
    found = []
    for module, path, tree in _modules(root):
        own = _defined_private_names(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute):
                continue
            attr = node.attr
            if not attr.startswith("_") or attr.startswith("__"):
                continue
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            if isinstance(node.value, ast.Name) and node.value.id in ("sys", "os", "threading", "socket", "ssl"):
                continue  # the standard library's documented underscore names (sys._getframe, ...)
            if attr in NAMEDTUPLE_API or attr in own or (module, attr) in FRIENDS:
                continue
            found.append(f"{path.relative_to(root.parent)}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_module_reaches_into_another_modules_private_attributes() -> None:
    assert reach_ins() == []


def test_the_reach_in_check_finds_a_planted_reach_in(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "owner.py").write_text("class Owner:\n    def __init__(self):\n        self._secret = 1\n")
    (package / "user.py").write_text("def peek(owner):\n    return owner._secret\n")
    assert reach_ins(package) == ["pkg/user.py:2: owner._secret"]


def _lint_imports(cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    if not LINT_IMPORTS.exists():
        pytest.fail(f"lint-imports is not installed beside {sys.executable}: install the test extra")
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_the_layer_contract_is_kept() -> None:
    result = _lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "violation"),
    [
        ("runtime/timers.py", "import daemon_client.api.agents.namespace"),  # the runtime imports the API
        ("protocol/hosts.py", "import daemon_client.runtime.dispatch"),  # protocol imports the runtime
        ("api/agents/namespace.py", "import daemon_client.runtime.connection"),  # the API bypasses the context
        ("testing/threads.py", "import daemon_client.subscriptions.lifecycle"),  # testing uses internals
        # an annotation counts too: a TYPE_CHECKING import may not point upwards
        ("subscriptions/flow.py", "import typing\nif typing.TYPE_CHECKING:\n    import daemon_client.api.projects"),
    ],
)
def test_a_violating_import_breaks_the_contract(tmp_path: Path, module: str, violation: str) -> None:
    shutil.copytree(PACKAGE, tmp_path / "daemon_client", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / "daemon_client" / module
    target.write_text(target.read_text(encoding="utf-8") + f"\n{violation}  # planted\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    result = _lint_imports(tmp_path, env)
    assert result.returncode != 0, result.stdout
    assert "BROKEN" in result.stdout


def import_cycles(package: str = "daemon_client") -> list[list[str]]:
    """Every set of modules that import each other in a circle, counting every import: those
    under ``TYPE_CHECKING`` and inside functions too (an import of an ancestor package is no
    edge: it is always imported first)."""
    import grimp

    graph = grimp.build_graph(package, exclude_type_checking_imports=False, cache_dir=None)
    edges: dict[str, set[str]] = {}
    for module in graph.modules:
        ancestors = {".".join(module.split(".")[:depth]) for depth in range(1, module.count(".") + 1)}
        edges[module] = set(graph.find_modules_directly_imported_by(module)) - ancestors - {module}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def strongly_connect(node: str) -> None:  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(edges[node]):
            if nxt not in index:
                strongly_connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = [stack.pop()]
            while component[-1] != node:
                component.append(stack.pop())
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            strongly_connect(node)
    return cycles


def test_no_import_cycle_annotations_included() -> None:
    assert import_cycles() == []


def test_the_cycle_check_finds_a_planted_annotation_cycle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "cyclic"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("import cyclic.b\n")
    (package / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import cyclic.a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert import_cycles("cyclic") == [["cyclic.a", "cyclic.b"]]


MAX_ROOT_MODULES = 12


def test_the_package_root_keeps_few_modules() -> None:
    """The tree shows the architecture: the root holds the public values and the entry points,
    everything else lives in a folder named for its layer."""
    root_modules = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert len(root_modules) <= MAX_ROOT_MODULES, root_modules


def _type_checking_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            return {
                alias.asname or alias.name
                for imp in node.body
                if isinstance(imp, ast.ImportFrom)
                for alias in imp.names
            }
    return set()


@pytest.mark.parametrize("package", [daemon_client, daemon_client.testing])
def test_public_names_have_one_source(package: object) -> None:
    lazy: dict[str, str] = package._LAZY  # type: ignore[attr-defined]
    exported = set(package.__all__)  # type: ignore[attr-defined]
    assert exported - {"__version__", "COMPILED"} == set(lazy)  # COMPILED: computed on first access
    assert package.__all__ == sorted(package.__all__)  # type: ignore[attr-defined]
    assert _type_checking_names(Path(package.__file__)) == set(lazy)  # type: ignore[attr-defined]
    for name, module in lazy.items():
        assert getattr(__import__(module, fromlist=[name]), name) is getattr(package, name)


def test_the_package_resolves_its_testing_helpers_lazily_and_refuses_unknown_names() -> None:
    assert daemon_client.__getattr__("testing").FakeDaemon is FakeDaemon
    names = dir(daemon_client)
    assert "testing" in names
    assert "TerminalStream" in names
    with pytest.raises(AttributeError):
        daemon_client.__getattr__("NoSuchName")


def test_the_transport_package_names_its_transports_lazily_and_nothing_else() -> None:
    assert daemon_client.transport.WebSocketTransport is WebSocketTransport
    assert daemon_client.transport.MemoryTransport is MemoryTransport
    with pytest.raises(AttributeError, match=r"module 'daemon_client\.transport' has no attribute 'Nope'"):
        daemon_client.transport.Nope  # noqa: B018 - the attribute access is the test


def test_every_public_name_is_in_the_api_reference() -> None:
    pages = sorted((ROOT / "docs" / "api").glob("*.md"))
    reference = {line.removeprefix("::: ") for page in pages for line in page.read_text(encoding="utf-8").splitlines()}
    public = [
        f"{package.__name__}.{name}" for package in (daemon_client, daemon_client.testing) for name in package.__all__
    ]
    assert [path for path in public if path not in reference] == []


def test_no_class_is_over_the_size_limit() -> None:
    large = []
    for _module, path, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.end_lineno and node.end_lineno - node.lineno > MAX_CLASS_LINES:
                large.append(f"{path.relative_to(ROOT)}:{node.name}: {node.end_lineno - node.lineno} lines")
    assert large == []


def test_every_module_says_what_it_owns() -> None:
    undocumented = [str(path.relative_to(ROOT)) for _m, path, tree in _modules() if not ast.get_docstring(tree)]
    assert undocumented == []
