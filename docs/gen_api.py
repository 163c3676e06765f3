"""Generate docs/api.md from the docstrings of the public API.

The public API is ``daemon_client.__all__`` plus ``daemon_client.testing.__all__``. For each
class: its bases, its docstring, its fields (attrs classes), constructor (classes users build),
members (enums), public attributes with their docstrings, and public methods and properties
with their signatures and docstrings. For each function: its signature and docstring. For
each constant: its value. Classes that are not exported but held by a documented attribute of
an exported class (``Client.agents``, ``FakeDaemon.timeline``) follow, in the same form. The
output depends only on the source, so it is deterministic.

    python docs/gen_api.py          # write docs/api.md
    python docs/gen_api.py --check  # exit 1 if docs/api.md is out of date
"""

from __future__ import annotations

import argparse
import ast
import enum
import functools
import importlib
import inspect
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ForwardRef

import attrs

API_PATH = Path(__file__).resolve().parent / "api.md"
MODULES = ("daemon_client", "daemon_client.testing")
CONSTRUCTED = frozenset({"Client", "FakeDaemon", "FakeRelay", "RecordingHandler"})
"""Plain (non-attrs) classes that users construct themselves: their constructor is shown."""
PROTOCOLS = (("__call__", "calling it"), ("__iter__", "iteration"), ("__len__", "`len()`"), ("__enter__", "`with`"))
WIDTH = 88

_ROLE = re.compile(r":(?:class|meth|func|attr|data|mod|exc|obj):`(~?)([^`]+)`")
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_SECTION = re.compile(r"^(Args|Arguments|Returns|Raises|Yields|Attributes):\s*$")


# ----------------------------------------------------------------------------- text


def _markdown(doc: str | None) -> str:
    """A docstring in Markdown: reST roles and double backticks become code spans."""
    if not doc:
        return ""
    text = _ROLE.sub(lambda m: f"``{m.group(2).rsplit('.', 1)[-1] if m.group(1) else m.group(2)}``", doc)
    text = text.replace("``", "`")
    return "\n".join(_escape(line) for line in _sections(inspect.cleandoc(text).splitlines()))


def _escape(line: str) -> str:
    """Escape ``<`` outside code spans so that Markdown does not read it as HTML."""
    parts = line.split("`")
    return "`".join(part.replace("<", "&lt;") if index % 2 == 0 else part for index, part in enumerate(parts))


def _sections(lines: list[str]) -> Iterator[str]:
    """Google-style ``Args:`` blocks become bullet lists (``- `name`: text``)."""
    in_section = False
    for line in lines:
        if _SECTION.match(line):
            in_section = True
            yield f"**{line.strip()[:-1]}**"
            yield ""
            continue
        if in_section:
            if not line.startswith(" ") and line.strip():
                in_section = False
            else:
                match = re.match(r"^ {4}(\w+): (.*)$", line)
                if match:
                    yield f"- `{match.group(1)}`: {match.group(2)}"
                elif line.strip():
                    yield f"  {line.strip()}"
                continue
        yield line


def _annotation(value: Any) -> str | None:
    if value is inspect.Parameter.empty or value is inspect.Signature.empty:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, ForwardRef):
        return value.__forward_arg__
    return inspect.formatannotation(value)


def _default(value: Any) -> str:
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    if isinstance(value, str) and '"' not in value:  # double quotes, as the formatter writes them
        return '"' + repr(value)[1:-1].replace("\\'", "'") + '"'
    return _ADDRESS.sub("", repr(value))


def _params(signature: inspect.Signature, *, drop_first: bool) -> list[str]:
    params = list(signature.parameters.values())
    if drop_first and params:
        params = params[1:]
    rendered: list[str] = []
    positional_only_done = False
    keyword_marker_done = False
    for index, param in enumerate(params):
        kind = param.kind
        if kind is inspect.Parameter.KEYWORD_ONLY and not keyword_marker_done:
            rendered.append("*")
            keyword_marker_done = True
        if kind is inspect.Parameter.VAR_POSITIONAL:
            keyword_marker_done = True
        text = param.name
        if kind is inspect.Parameter.VAR_POSITIONAL:
            text = f"*{text}"
        elif kind is inspect.Parameter.VAR_KEYWORD:
            text = f"**{text}"
        annotation = _annotation(param.annotation)
        if annotation is not None:
            text += f": {annotation}"
        if param.default is not inspect.Parameter.empty:
            text += f" = {_default(param.default)}" if annotation is not None else f"={_default(param.default)}"
        rendered.append(text)
        last_positional = index + 1 == len(params) or params[index + 1].kind is not inspect.Parameter.POSITIONAL_ONLY
        if kind is inspect.Parameter.POSITIONAL_ONLY and last_positional and not positional_only_done:
            rendered.append("/")
            positional_only_done = True
    return rendered


def _call(prefix: str, params: list[str], returns: str | None) -> str:
    """``prefix(params) -> returns``, one parameter a line when it does not fit on one line."""
    tail = f" -> {returns}" if returns else ""
    flat = f"{prefix}({', '.join(params)}){tail}"
    if len(flat) <= WIDTH or not params:
        return flat
    body = "".join(f"    {param},\n" for param in params)
    return f"{prefix}(\n{body}){tail}"


def _signature(func: Callable[..., Any], prefix: str, *, drop_first: bool) -> str:
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        return f"{prefix}(...)"
    return _call(prefix, _params(signature, drop_first=drop_first), _annotation(signature.return_annotation))


# ----------------------------------------------------------------------------- source


def _own_classes(cls: type) -> list[type]:
    """``cls`` and its bases defined in this package, most derived first."""
    return [klass for klass in cls.__mro__ if klass.__module__.startswith("daemon_client")]


def _documented_assignments(body: list[ast.stmt], *, on_self: bool) -> Iterator[tuple[str, str | None, str | None]]:
    """(name, annotation, docstring) of public assignments in ``body``; a string right after
    an assignment is its docstring."""
    for index, statement in enumerate(body):
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, annotation = statement.targets[0], None
        elif isinstance(statement, ast.AnnAssign):
            target, annotation = statement.target, ast.unparse(statement.annotation)
        else:
            continue
        if on_self:
            if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)):
                continue
            if target.value.id != "self":
                continue
            name = target.attr
        elif isinstance(target, ast.Name):
            name = target.id
        else:
            continue
        if name.startswith("_"):
            continue
        following = body[index + 1] if index + 1 < len(body) else None
        doc = None
        if (
            isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            doc = following.value.value
        yield name, annotation, doc


@functools.cache
def _module_tree(module_name: str) -> ast.Module | None:
    try:
        return ast.parse(inspect.getsource(sys.modules[module_name]))
    except (KeyError, OSError, TypeError):
        return None


def _class_node(cls: type) -> ast.ClassDef | None:
    """The class statement of ``cls``, found by qualified name in its module's source."""
    tree = _module_tree(cls.__module__)
    body: list[ast.stmt] = tree.body if tree is not None else []
    node: ast.ClassDef | None = None
    for part in cls.__qualname__.split("."):
        node = next((n for n in body if isinstance(n, ast.ClassDef) and n.name == part), None)
        if node is None:
            return None
        body = node.body
    return node


def _source_annotations(cls: type) -> dict[str, str]:
    """Class-level annotations as written in the source, over the package's classes of the MRO."""
    found: dict[str, str] = {}
    for klass in reversed(_own_classes(cls)):
        node = _class_node(klass)
        for statement in node.body if node is not None else []:
            if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                found[statement.target.id] = ast.unparse(statement.annotation)
    return found


def _attributes(cls: type) -> dict[str, tuple[str | None, str | None]]:
    """Public attributes documented in the source: class-level assignments and ``self.x = ...``
    in ``__init__``, over the package's classes of the MRO (most derived wins)."""
    found: dict[str, tuple[str | None, str | None]] = {}
    for klass in _own_classes(cls):
        node = _class_node(klass)
        if node is None:
            continue
        items = list(_documented_assignments(node.body, on_self=False))
        for statement in node.body:
            if isinstance(statement, ast.FunctionDef) and statement.name == "__init__":
                items += list(_documented_assignments(statement.body, on_self=True))
        for name, annotation, doc in items:
            if name in found:
                known_annotation, known_doc = found[name]
                found[name] = (known_annotation or annotation, known_doc or doc)
            else:
                found[name] = (annotation, doc)
    return found


def _reached_classes(cls: type) -> Iterator[tuple[str, type]]:
    """(attribute, class) for the documented attributes of ``cls`` that hold an instance of a
    package class, built in place (``self.agents = AgentsNamespace(...)``) or annotated."""
    for klass in reversed(_own_classes(cls)):
        node = _class_node(klass)
        init = next((s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
        body = init.body if node is not None and init is not None else []
        namespace = vars(sys.modules[klass.__module__])
        for index, statement in enumerate(body[:-1]):
            following = body[index + 1]
            documented = isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
            if not documented or not isinstance(statement, ast.Assign | ast.AnnAssign):
                continue
            target = statement.targets[0] if isinstance(statement, ast.Assign) else statement.target
            value = statement.value
            if isinstance(statement, ast.AnnAssign):
                named = statement.annotation
            else:
                named = value.func if isinstance(value, ast.Call) else None
            held = namespace.get(named.id) if isinstance(named, ast.Name) else None
            if (
                isinstance(target, ast.Attribute)
                and inspect.isclass(held)
                and held.__module__.startswith("daemon_client")
            ):
                yield target.attr, held


def _constant_doc(name: str) -> str | None:
    """The ``#:`` comment above a module-level constant, searched in the package's modules."""
    for module_name in sorted(sys.modules):
        if not module_name.startswith("daemon_client"):
            continue
        module = sys.modules[module_name]
        if name not in vars(module):
            continue
        try:
            lines = inspect.getsource(module).splitlines()
        except (OSError, TypeError):
            continue
        for index, line in enumerate(lines):
            if re.match(rf"^{re.escape(name)}\s*(:[^=]*)?=", line):
                comments: list[str] = []
                back = index - 1
                while back >= 0 and lines[back].startswith("#:"):
                    comments.insert(0, lines[back][2:].strip())
                    back -= 1
                return " ".join(comments) or None
    return None


# ----------------------------------------------------------------------------- rendering


def _members(cls: type) -> Iterator[tuple[str, Any]]:
    """Public methods and properties over the package's classes of the MRO, in source order."""
    seen: set[str] = set()
    for klass in _own_classes(cls):
        for name, value in vars(klass).items():
            if name in seen:
                continue
            public = not name.startswith("_") or name == "__call__"
            if not public:
                continue
            if isinstance(value, property | staticmethod | classmethod) or inspect.isfunction(value):
                seen.add(name)
                yield name, value


def _render_member(cls: type, name: str, value: Any, lines: list[str]) -> None:
    if isinstance(value, property):
        returns = None
        if value.fget is not None:
            try:
                returns = _annotation(inspect.signature(value.fget).return_annotation)
            except (TypeError, ValueError):
                returns = None
        code = f"{name}: {returns}" if returns else name
        lines += [f"#### `{name}` (property)", "", "```python", code, "```", ""]
        doc = _markdown(value.__doc__)
    else:
        func = value.__func__ if isinstance(value, staticmethod | classmethod) else value
        drop_first = not isinstance(value, staticmethod)
        prefix = "classmethod def " if isinstance(value, classmethod) else "def "
        code = _signature(func, f"{prefix}{name}", drop_first=drop_first)
        title = f"`{name}` (calling the object)" if name == "__call__" else f"`{name}`"
        lines += [f"#### {title}", "", "```python", code, "```", ""]
        doc = _markdown(_method_doc(cls, name))
    if doc:
        lines += [doc, ""]


def _method_doc(cls: type, name: str) -> str | None:
    """The docstring of a method, inherited only from the package's own classes."""
    for klass in _own_classes(cls):
        value = vars(klass).get(name)
        if isinstance(value, staticmethod | classmethod):
            value = value.__func__
        if value is not None and getattr(value, "__doc__", None):
            return str(value.__doc__)
    return None


def _render_fields(cls: type, lines: list[str]) -> None:
    frozen = getattr(cls.__setattr__, "__name__", "") == "_frozen_setattrs"
    decorator = "@attrs.frozen" if frozen else "@attrs.define"
    written = _source_annotations(cls)  # field.type may have been resolved to objects since
    body = []
    for field in attrs.fields(cls):
        if not field.init:
            continue
        text = f"    {field.alias or field.name}"
        annotation = written.get(field.name) or (_annotation(field.type) if field.type is not None else None)
        if annotation:
            text += f": {annotation}"
        default = field.default
        if isinstance(default, attrs.Factory):
            factory = default.factory
            text += f" = attrs.Factory({getattr(factory, '__name__', repr(factory))})"
        elif default is not attrs.NOTHING:
            text += f" = {_default(default)}"
        body.append(text)
    lines += ["```python", decorator, f"class {cls.__name__}:", *(body or ["    pass"]), "```", ""]


def _render_class(name: str, cls: type, lines: list[str], reached_as: list[str] | None = None) -> None:
    lines += [f"### `{name}`", ""]
    if reached_as:
        lines += [f"`{cls.__module__}.{cls.__qualname__}`, reached as {', '.join(f'`{p}`' for p in reached_as)}.", ""]
    where = f"{cls.__module__}.{cls.__qualname__}"
    if cls.__name__ != name:
        lines += [f"Alias of `{where}`.", ""]
    bases = [base.__name__ for base in cls.__bases__ if base not in (object,) and base.__name__ != "Generic"]
    if bases:
        lines += ["Bases: " + ", ".join(f"`{base}`" for base in bases), ""]
    doc = _markdown(cls.__doc__) if "__doc__" in vars(cls) else ""
    if doc:
        lines += [doc, ""]
    attributes = _attributes(cls)
    if isinstance(cls, enum.EnumMeta):
        lines += [
            "```python",
            *(f"{cls.__name__}.{member.name} = {_default(member.value)}" for member in cls),
            "```",
            "",
        ]
        for member in cls:
            member_doc = attributes.get(member.name, (None, None))[1]
            if member_doc:
                lines.append(f"- `{member.name}`: {_markdown(member_doc)}")
        if any(attributes.get(member.name, (None, None))[1] for member in cls):
            lines.append("")
        return
    is_attrs = attrs.has(cls)
    is_tuple = issubclass(cls, tuple) and hasattr(cls, "_fields")
    if is_attrs:
        _render_fields(cls, lines)
    elif is_tuple:
        lines += ["```python", _signature(cls, f"class {cls.__name__}", drop_first=False), "```", ""]
    elif name in CONSTRUCTED or (
        issubclass(cls, BaseException) and any("__init__" in vars(klass) for klass in _own_classes(cls))
    ):
        signature = inspect.signature(cls.__init__)
        params = _params(signature, drop_first=True)
        lines += ["```python", _call(cls.__name__, params, None), "```", ""]
    documented = [(attr, info) for attr, info in attributes.items() if not (is_attrs or is_tuple) or info[1]]
    if documented:
        lines += ["Attributes:", ""]
        for attr, (annotation, attr_doc) in documented:
            label = f"`{attr}: {annotation}`" if annotation else f"`{attr}`"
            text = _markdown(attr_doc).replace("\n", " ") if attr_doc else ""
            lines.append(f"- {label}" + (f": {text}" if text else ""))
        lines.append("")
    supports = [label for dunder, label in PROTOCOLS if any(dunder in vars(k) for k in _own_classes(cls))]
    if supports and not is_attrs:
        lines += ["Supports: " + ", ".join(supports) + ".", ""]
    for member_name, value in _members(cls):
        _render_member(cls, member_name, value, lines)


def _render_function(name: str, func: Callable[..., Any], lines: list[str]) -> None:
    lines += [f"### `{name}`", "", "```python", _signature(func, f"def {name}", drop_first=False), "```", ""]
    doc = _markdown(inspect.getdoc(func))
    if doc:
        lines += [doc, ""]


def _render_constant(name: str, value: Any, lines: list[str]) -> None:
    lines += [f"### `{name}`", "", "```python", f"{name} = {_default(value)}", "```", ""]
    doc = _constant_doc(name)
    if doc:
        lines += [_markdown(doc), ""]


def render() -> str:
    """The whole of docs/api.md."""
    lines = [
        "# API reference",
        "",
        "Generated from the docstrings by `docs/gen_api.py`; do not edit by hand. Regenerate with",
        "`python docs/gen_api.py`. The guides: [index](index.md).",
        "",
    ]
    exported: set[type] = set()
    reached: dict[type, list[str]] = {}
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        names = list(module.__all__)
        lines += [f"## `{module_name}`", ""]
        index = [f"[`{name}`](#{name.lower()})" for name in names]
        lines += [", ".join(index), ""]
        for name in names:
            value = getattr(module, name)
            if inspect.isclass(value):
                exported.add(value)
                _render_class(name, value, lines)
                for attribute, klass in _reached_classes(value):
                    reached.setdefault(klass, []).append(f"{name}.{attribute}")
            elif callable(value):
                _render_function(name, value, lines)
            else:
                _render_constant(name, value, lines)
    reached = {klass: paths for klass, paths in reached.items() if klass not in exported}
    if reached:
        lines += ["## Reached through attributes", ""]
        lines += ["Classes not exported by name, whose instances the classes above hold.", ""]
        for klass, paths in reached.items():
            _render_class(klass.__name__, klass, lines, reached_as=paths)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n"


def is_up_to_date(path: Path = API_PATH) -> bool:
    """Whether ``path`` holds exactly what :func:`render` produces."""
    return path.exists() and path.read_text(encoding="utf-8") == render()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/api.md is out of date")
    args = parser.parse_args(argv)
    if args.check:
        if is_up_to_date():
            return 0
        print(f"{API_PATH} is out of date: run python docs/gen_api.py", file=sys.stderr)
        return 1
    API_PATH.write_text(render(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
