"""The architecture's rules, checked: the layer contract (import-linter), no reach-ins into
other modules' private attributes, no import cycle at run time, one list of public names,
no class over the size limit.
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
        ("runtime/timers.py", "import daemon_client.agents"),  # the runtime imports the API
        ("protocol/hosts.py", "import daemon_client.runtime.dispatch"),  # protocol imports the runtime
        ("agents.py", "import daemon_client.runtime.connection"),  # the API bypasses the context
        ("testing/threads.py", "import daemon_client.subscriptions.lifecycle"),  # testing uses internals
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


def _runtime_imports(tree: ast.Module, module: str) -> set[str]:
    """Modules of the package imported when ``module`` is imported (not under TYPE_CHECKING,
    not inside functions)."""
    imported: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            continue
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            imported.add(node.module)
            imported.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level:
            base = module.rsplit(".", node.level)[0]
            imported.add(f"{base}.{node.module}" if node.module else base)
    return {name for name in imported if name.startswith("daemon_client")}


def test_no_import_cycle_at_run_time() -> None:
    graph: dict[str, set[str]] = {}
    trees = {module: tree for module, _path, tree in _modules()}
    for module, tree in trees.items():
        # an ancestor package is always imported before its submodules: an edge to it is no cycle
        ancestors = {".".join(module.split(".")[:depth]) for depth in range(1, module.count(".") + 1)}
        imported = _runtime_imports(tree, module) & set(trees)
        graph[module] = imported - ancestors - {module}
    cycles: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    assert cycles == []


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
    assert exported - {"__version__"} == set(lazy)
    assert package.__all__ == sorted(package.__all__)  # type: ignore[attr-defined]
    assert _type_checking_names(Path(package.__file__)) == set(lazy)  # type: ignore[attr-defined]
    for name, module in lazy.items():
        assert getattr(__import__(module, fromlist=[name]), name) is getattr(package, name)


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
