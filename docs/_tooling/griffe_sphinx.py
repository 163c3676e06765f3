"""A griffe extension for the documentation site: the Sphinx conventions of the docstrings in Markdown.

The docstrings are written for ``help()`` and editors, with Sphinx roles
(``:class:`~daemon_client.Client```, ``:meth:`close```,
``:attr:`Client.url <daemon_client.Client.url>```). mkdocstrings renders Markdown, so each
role becomes the code span it names, linked to that object's entry when the reference pages
document it and left as plain code otherwise (an *optional* cross-reference: it never fails the
strict build). A name is resolved in the scope of the docstring's object, as Python would look
it up there. ``<`` outside code spans is escaped so that Markdown does not read it as HTML.
A module constant documented Sphinx's way, by ``#:`` comments right above it, gets them as its
docstring. A class's bases show only the public ones: a base of the package that is not exported
(``daemon_client.__all__``, ``daemon_client.testing.__all__``, ``daemon_client.gui.__all__``)
is left out of its "Bases:" line; bases from outside the package (``Enum``, ``Generic[T]``) stay.

Loaded by ``mkdocs.yml`` (``extensions: [docs/_tooling/griffe_sphinx.py]``); runs in the
``mkdocs`` process while griffe loads the package.
"""

from __future__ import annotations

import importlib
import inspect
import re
from typing import Any

from griffe import (
    Alias,
    Attribute,
    Class,
    Docstring,
    Expr,
    Extension,
    GriffeLoader,
    Module,
    NameResolutionError,
    Object,
)

PUBLIC_PACKAGES = ("", "testing", "gui")
"""The packages whose ``__all__`` names the public API, relative to ``daemon_client``."""

ROLE = re.compile(r":(?:class|meth|func|attr|data|mod|exc|obj):`(?P<tilde>~?)(?P<target>[^`]+)`")
EXPLICIT_TITLE = re.compile(r"^(?P<title>.+?)\s*<(?P<target>[^<>]+)>$")
"""``:attr:`title <target>```: the role's own title."""
CODE_SPAN = re.compile(r"(``.+?``|`[^`\n]+`)")


def _resolve(obj: Object, target: str) -> str:
    """The full path ``target`` names in ``obj``'s scope; ``target`` itself when unknown."""
    head, _, rest = target.partition(".")
    try:
        resolved = obj.resolve(head)
    except NameResolutionError:
        return target
    return f"{resolved}.{rest}" if rest else resolved


def _escape(text: str) -> str:
    """``<`` escaped outside code spans."""
    parts = CODE_SPAN.split(text)
    return "".join(part if index % 2 else part.replace("<", "&lt;") for index, part in enumerate(parts))


def convert(obj: Object, text: str) -> str:
    """``text`` (a docstring of ``obj``) with its roles as optional cross-references."""

    def link(match: re.Match[str]) -> str:
        target, title = match["target"], ""
        explicit = EXPLICIT_TITLE.match(target)
        if explicit:
            title, target = explicit["title"], explicit["target"]
        title = title or (target.rsplit(".", 1)[-1] if match["tilde"] else target)
        identifier = target if target.startswith("daemon_client") else _resolve(obj, target)
        return f'<autoref identifier="{identifier}" optional><code>{title}</code></autoref>'

    return ROLE.sub(link, _escape(text))


def comment_doc(attr: Attribute) -> str | None:
    """The ``#:`` comment lines right above a module attribute's assignment, joined."""
    if not attr.parent or not attr.parent.is_module or attr.lineno is None:
        return None
    lines = attr.parent.lines
    comment: list[str] = []
    index = attr.lineno - 2
    while index >= 0 and lines[index].startswith("#:"):
        comment.insert(0, lines[index][2:].strip())
        index -= 1
    return "\n".join(comment) or None


class SphinxConventions(Extension):
    """Rewrites every docstring of the loaded package once its object tree is complete."""

    def on_object(self, *, obj: Object, loader: GriffeLoader, **kwargs: Any) -> None:
        if obj.docstring is None and isinstance(obj, Attribute) and (comment := comment_doc(obj)):
            obj.docstring = Docstring(
                comment,
                lineno=obj.lineno,
                parent=obj,
                parser=loader.docstring_parser,
                parser_options=loader.docstring_options,
            )
        if obj.docstring is not None:
            obj.docstring.value = convert(obj, obj.docstring.value)


def public_paths(package: str) -> set[str]:
    """Where every class exported by the public packages of ``package`` is defined
    (``module.qualname``), read by importing them: their ``__all__`` is built at import time."""
    paths: set[str] = set()
    for relative in PUBLIC_PACKAGES:
        module = importlib.import_module(f"{package}.{relative}" if relative else package)
        for name in getattr(module, "__all__", ()):
            try:
                value = getattr(module, name)
            except ImportError:  # an optional dependency (PySide6): not a base of anything shown
                continue
            if inspect.isclass(value):
                paths.add(f"{value.__module__}.{value.__qualname__}")
    return paths


def _classes(module: Module) -> list[Class]:
    found: list[Class] = []
    stack: list[Object] = [module]
    while stack:
        current = stack.pop()
        for member in current.members.values():
            if isinstance(member, Alias):
                continue
            if isinstance(member, Class):
                found.append(member)
            if isinstance(member, (Module, Class)):
                stack.append(member)
    return found


def _base_path(base: Expr | str) -> str:
    return base.canonical_path if isinstance(base, Expr) else base


def drop_internal_bases(package: Module) -> None:
    """Removes from every class of ``package`` the bases of the package that are not public."""
    public = public_paths(package.name)
    for cls in _classes(package):
        cls.bases = [
            base
            for base in cls.bases
            if not _base_path(base).startswith(f"{package.name}.") or _base_path(base) in public
        ]


class PublicBases(Extension):
    """Shows only public bases once the package is loaded."""

    def on_package(self, *, pkg: Module, loader: GriffeLoader, **kwargs: Any) -> None:
        if pkg.name == "daemon_client":
            drop_internal_bases(pkg)
