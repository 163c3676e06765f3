"""The reader of one attrs model, generated as Python source and compiled once.

:mod:`daemon_client.protocol.lenient` owns the reading rule and hands this module a
:class:`ModelPlan`: each field with its wire name, resolved type, value reader, whether it is the
identity and whether it names the object in log lines. This module owns turning the plan into
one function ``read(value, where)``, the way attrs generates ``__init__``: the fields unrolled,
their wire names as constants, the exact-type check of the common case inline (a value the
field's reader would return unchanged is taken as it is), the field's reader called only on the
branch that needs it, unknown keys looked for only when the object has more keys than the
fields it carried, and the model built in one step. The rule's outcomes (kept raw, skipped,
``MissingIdentity``) are the runtime helpers lenient passes in, so both read alike.

The model is built by setting its slots directly when its ``__init__`` is attrs' own and would
only set them (no validators, converters, ``__attrs_pre_init__``/``__attrs_post_init__``): as
an instance of the model's assignable subclass (:mod:`daemon_client.protocol.assignable`), which
becomes the model's own by ``__class__`` assignment, or through the slots' descriptors where
that is refused.
Otherwise it is built by calling the class with every argument, positionally, and through a
keyword dict, as given, when its ``__init__`` takes other arguments than its fields or a
default needs the instance. The instances are the same either way.

Runs on whichever thread first reads a model (lenient prepares readers on first use); it builds
a new namespace per call and shares nothing, so two threads preparing one model get equal
functions.
"""

from __future__ import annotations

import linecache
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import attrs

from daemon_client.protocol.assignable import assignable

Reader = Callable[[Any, Any], Any]

_TAKES: dict[Any, frozenset[type[Any]]] = {
    str: frozenset({str}),
    bool: frozenset({bool}),
    int: frozenset({int, float}),
    float: frozenset({float, int}),
}
"""The exact scalar types and the value types each one's reader accepts."""


class FieldPlan(NamedTuple):
    """One field as the reader reads it."""

    field: attrs.Attribute[Any]
    wire: str
    tp: Any
    reader: Reader
    nested: bool
    """Its reader needs the value's location (it may read objects)."""
    names: bool
    """Its value names the object in log lines (the identity a location shows)."""


class ModelPlan(NamedTuple):
    """One model: its class, the fields read from the wire, and its ``extra_fields`` field."""

    cls: type[Any]
    fields: tuple[FieldPlan, ...]
    extra: attrs.Attribute[Any] | None


def compile_reader(plan: ModelPlan, runtime: Mapping[str, Any], reader_of: Callable[[Any], Reader]) -> Reader:
    """The reader of ``plan``'s model; ``runtime`` holds the rule's names the generated code
    calls: ``_Unfit``, ``_Partial``, ``MissingIdentity``, ``_ABSENT``, ``_kept_raw``,
    ``_missing``, ``_refused``, ``_skip`` (see :mod:`daemon_client.protocol.lenient`);
    ``reader_of`` gives the reader of a type (the elements of a list of models, read inline)."""
    source = _Source(plan, runtime, reader_of)
    text = source.function()
    filename = f"<lenient reader {plan.cls.__module__}.{plan.cls.__qualname__}>"
    exec(compile(text, filename, "exec"), source.namespace)
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    read: Reader = source.namespace["read"]
    return read


def _keep(extra: dict[str, Any] | None, wire: str, raw: Any) -> dict[str, Any]:
    """``extra`` (made on first use) with ``raw`` kept under ``wire``."""
    if extra is None:
        extra = {}
    extra[wire] = raw
    return extra


def _unknown(value: dict[str, Any], known: frozenset[str], extra: dict[str, Any] | None) -> dict[str, Any]:
    """``extra`` (made on first use) with the keys of ``value`` the model does not know."""
    if extra is None:
        extra = {}
    for key, item in value.items():
        if key not in known:
            extra[key] = item
    return extra


# ------------------------------------------------------------------------------ how to build


def _mode(cls: type[Any], fields: Sequence[attrs.Attribute[Any]], extra: attrs.Attribute[Any] | None) -> str:
    """``"slots"``, ``"call"`` or ``"kwargs"`` (see the module docstring)."""
    if extra is not None and extra.default is attrs.NOTHING:
        return "kwargs"  # built without it when nothing is kept: refused by the model, as before
    if any(not field.init or _needs_self(field.default) for field in fields) or not _takes_fields(cls, fields):
        return "kwargs"
    return "slots" if _plain_slots(cls, fields) else "call"


def _needs_self(default: Any) -> bool:
    return isinstance(default, attrs.Factory) and bool(default.takes_self)  # type: ignore[arg-type]


def _takes_fields(cls: type[Any], fields: Sequence[attrs.Attribute[Any]]) -> bool:
    """Whether ``cls.__init__`` takes exactly its fields, by alias, in attrs' order."""
    code = getattr(cls.__init__, "__code__", None)
    if code is None:
        return False
    names = code.co_varnames
    positional = tuple(field.alias for field in fields if not field.kw_only)
    keywords = tuple(field.alias for field in fields if field.kw_only)
    return (
        names[1 : code.co_argcount] == positional
        and names[code.co_argcount : code.co_argcount + code.co_kwonlyargcount] == keywords
        and not code.co_flags & (0x04 | 0x08)  # no *args, no **kwargs
    )


def _plain_slots(cls: type[Any], fields: Sequence[attrs.Attribute[Any]]) -> bool:
    """Whether attrs' ``__init__`` of ``cls`` only sets one slot per field."""
    if not cls.__init__.__code__.co_filename.startswith("<attrs generated"):
        return False
    if getattr(cls, "__attrs_pre_init__", None) or getattr(cls, "__attrs_post_init__", None):
        return False
    if any(field.validator is not None or field.converter is not None for field in fields):
        return False
    slots: set[str] = set()
    for klass in cls.__mro__[:-1]:
        if "__slots__" not in vars(klass):
            return False
        declared = vars(klass)["__slots__"]
        slots.update((declared,) if isinstance(declared, str) else declared)
    names = {field.name for field in fields}
    return slots - {"__weakref__"} == names and all(
        type(getattr(cls, name, None)) is types.MemberDescriptorType for name in names
    )


# ------------------------------------------------------------------------------ fast paths


def _fast_paths(tp: Any) -> list[tuple[str, str]]:
    """``(test, value)`` pairs: when ``test`` holds for ``v``, the field's reader would return
    ``value``; a test ``""`` holds for every value that is not ``None``."""
    if tp is Any or tp is object:
        return [("", "v")]
    if tp in _TAKES:
        return [(f"type(v) is {tp.__name__}", "v")]
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Union or origin is types.UnionType:
        options = [arg for arg in args if arg is not type(None)]
        return _fast_paths(options[0]) if len(options) == 1 else _union_fast_paths(options)
    if origin in (dict, Mapping) and (len(args) != 2 or args[1] is Any or args[1] is object):
        return [("type(v) is dict", "dict(v)")]
    if _is_sequence(origin, args):
        return [("type(v) is list and not v", "[]" if origin is list else "()")]
    return []


def _model_items(tp: Any) -> tuple[type[Any], bool] | None:
    """``(model, as_list)`` when ``tp`` (or ``tp | None``) is a list or tuple of a model."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Union or origin is types.UnionType:
        options = [arg for arg in args if arg is not type(None)]
        return _model_items(options[0]) if len(options) == 1 else None
    if _is_sequence(origin, args) and args and isinstance(args[0], type) and attrs.has(args[0]):
        return args[0], origin is list
    return None


def _is_sequence(origin: Any, args: tuple[Any, ...]) -> bool:
    return origin in (tuple, Sequence, list) and (origin is not tuple or (len(args) == 2 and args[1] is Ellipsis))


def _union_fast_paths(options: list[Any]) -> list[tuple[str, str]]:
    """A union's reader tries its types in order: a scalar is taken as it is when no type
    before it would take (or convert) a value of its type."""
    paths: list[tuple[str, str]] = []
    taken: set[type[Any]] = set()
    for option in options:
        if option in _TAKES:
            if option not in taken:
                paths.append((f"type(v) is {option.__name__}", "v"))
            taken |= _TAKES[option]
        elif not _refuses_scalars(option):
            break
    return paths


def _refuses_scalars(tp: Any) -> bool:
    """Whether the reader of ``tp`` refuses every string, boolean and number."""
    if isinstance(tp, type) and attrs.has(tp):
        return True
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    return origin in (dict, Mapping) or _is_sequence(origin, args)


# ------------------------------------------------------------------------------ source


class _Source:
    """The source of one model's reader and the namespace it runs in."""

    def __init__(self, plan: ModelPlan, runtime: Mapping[str, Any], reader_of: Callable[[Any], Reader]) -> None:
        self.plan = plan
        self.reader_of = reader_of
        self.every = [field.field for field in plan.fields] + ([plan.extra] if plan.extra is not None else [])
        ordered = [field for field in attrs.fields(plan.cls) if field in self.every]
        self.mode = _mode(plan.cls, ordered, plan.extra)
        self.ordered = ordered
        self.keeps = plan.extra is not None
        self.name = repr(plan.cls.__name__)
        self.namespace: dict[str, Any] = {**runtime, "_cls": plan.cls, "_new": object.__new__}
        self.namespace.update(_keep=_keep, _unknown=_unknown)
        self.lines: list[str] = []
        self.unfinished = assignable(plan.cls) if self.mode == "slots" else None
        if self.unfinished is not None:
            self.namespace["_unfinished"] = self.unfinished

    def bind(self, prefix: str, index: int, value: Any) -> str:
        name = f"_{prefix}{index}"
        self.namespace[name] = value
        return name

    def emit(self, depth: int, *lines: str) -> None:
        self.lines.extend("    " * depth + line for line in lines)

    def function(self) -> str:
        self.emit(0, "def read(value, where):")
        self.emit(1, "if type(value) is not dict:", "    raise _Unfit('not an object')")
        self.emit(1, "get = value.get", "n = None", "extra = None")
        if self.keeps:
            self.emit(1, "missing = 0")
        if self.mode == "slots":
            self.emit(1, "o = _new(_cls)" if self.unfinished is None else "o = _new(_unfinished)")
        elif self.mode == "kwargs":
            self.emit(1, "kw = {}")
        for index, field in enumerate(self.plan.fields):
            _FieldSource(self, index, field).emit()
        self.extras()
        self.construct()
        return "\n".join(self.lines) + "\n"

    def store(self, field: attrs.Attribute[Any], index: int, expr: str) -> str:
        """The statement that gives ``field`` the value of ``expr``."""
        if self.mode == "slots" and self.unfinished is not None:
            return f"o.{field.name} = {expr}"
        if self.mode == "slots":
            return f"{self.bind('set', index, getattr(self.plan.cls, field.name).__set__)}(o, {expr})"
        if self.mode == "call":
            return f"a{index} = {expr}"
        return f"kw[{field.alias!r}] = {expr}"

    def default(self, field: attrs.Attribute[Any], index: int) -> str:
        """The statement that gives ``field`` its default (nothing to do in ``kwargs`` mode)."""
        if self.mode == "kwargs":
            return "pass"
        value: Any = field.default
        if isinstance(value, attrs.Factory):  # type: ignore[arg-type]
            factory = value.factory
            expr = "{}" if factory is dict else "[]" if factory is list else f"{self.bind('f', index, factory)}()"
        elif value is None or type(value) is bool:
            expr = repr(value)
        else:
            expr = self.bind("d", index, value)
        return self.store(field, index, expr)

    def extras(self) -> None:
        extra = self.plan.extra
        if extra is None:
            return
        self.namespace["_known"] = frozenset(field.wire for field in self.plan.fields)
        self.emit(1, f"if len(value) > {len(self.plan.fields)} - missing:")
        self.emit(2, "extra = _unknown(value, _known, extra)")
        index = len(self.plan.fields)
        if self.mode == "kwargs":
            self.emit(1, "if extra:", f"    kw[{extra.name!r}] = extra")
            return
        self.emit(1, "if extra is None:")
        self.emit(2, self.default(extra, index))
        self.emit(1, "else:")
        self.emit(2, self.store(extra, index, "extra"))

    def construct(self) -> None:
        if self.mode == "slots":
            if self.unfinished is not None:
                self.emit(1, "o.__class__ = _cls")
            self.emit(1, "return o")
            return
        if self.mode == "call":
            local = {id(field): f"a{index}" for index, field in enumerate(self.every)}
            args = [local[id(field)] for field in self.ordered if not field.kw_only]
            args += [f"{field.alias}={local[id(field)]}" for field in self.ordered if field.kw_only]
            call = f"_cls({', '.join(args)})"
        else:
            call = "_cls(**kw)"
        self.emit(1, "try:", f"    return {call}", "except (TypeError, ValueError) as exc:")
        self.emit(2, "raise _Unfit(str(exc)) from None  # the model's own validation refused a value")


class _FieldSource:
    """The statements that read one field (``v`` holds its wire value meanwhile)."""

    def __init__(self, source: _Source, index: int, plan: FieldPlan) -> None:
        self.source = source
        self.index = index
        self.plan = plan
        self.field = plan.field
        self.wire = repr(plan.wire)
        self.required = plan.field.default is attrs.NOTHING
        self.reader = source.bind("r", index, plan.reader)

    def store(self, expr: str) -> str:
        return self.source.store(self.field, self.index, expr)

    def emit(self) -> None:
        source = self.source
        source.emit(1, f"v = get({self.wire}, _ABSENT)" if source.keeps else f"v = get({self.wire})")
        branches = self.fast() + self.empty()
        anything = any(test == "" for test, _ in self.fast())
        for number, (test, body) in enumerate(branches):
            source.emit(1, f"{'if' if number == 0 else 'elif'} {test}:")
            source.emit(2, *body)
        source.emit(1, "else:")
        if anything:
            source.emit(2, self.store("v"))
        else:
            self.slow()
        if self.plan.names:
            source.emit(1, "n = v")

    def fast(self) -> list[tuple[str, list[str]]]:
        items = _model_items(self.plan.tp)
        if items is not None:
            return [("type(v) is list", self.elements(*items))]
        return [(test, [self.store(value)]) for test, value in _fast_paths(self.plan.tp) if test]

    def elements(self, model: type[Any], as_list: bool) -> list[str]:
        """A list of models read in place, as the list's own reader reads it: an element
        that cannot be read is skipped (and reported), the whole list kept raw beside."""
        item = self.source.bind("item", self.index, self.source.reader_of(model))
        at = f"(where, n, {self.wire}, i)"
        return [
            "out = []",
            "lossy = False",
            "for i, e in enumerate(v):",
            "    try:",
            f"        out.append({item}(e, {at}))",
            "    except MissingIdentity as exc:",
            "        lossy = True",
            f"        _skip(exc.model, exc.field, {at}, e)",
            "    except _Unfit:",
            "        lossy = True",
            f"        _skip({model.__name__!r}, None, {at}, e)",
            self.store("out" if as_list else "tuple(out)"),
            "if lossy:",
            f"    extra = _keep(extra, {self.wire}, v)",
        ]

    def empty(self) -> list[tuple[str, list[str]]]:
        """The branches of an absent and a ``null`` value."""
        source = self.source
        if self.required:
            test = "v is None or v is _ABSENT" if source.keeps else "v is None"
            return [(test, [f"raise _missing({source.name}, {self.wire}, where, n)"])]
        default = source.default(self.field, self.index)
        if not source.keeps:
            return [("v is None", [default])]
        return [("v is _ABSENT", ["missing += 1", default]), ("v is None", [default])]

    def slow(self) -> None:
        """The field's reader, with the rule's outcomes when it does not read the whole value."""
        source = self.source
        where = f"(where, n, {self.wire}, None)" if self.plan.nested else "where"
        source.emit(2, "try:", f"    {self.store(f'{self.reader}(v, {where})')}")
        source.emit(2, "except _Partial as exc:", f"    {self.store('exc.value')}")
        source.emit(3, f"extra = _keep(extra, {self.wire}, v)")
        source.emit(2, "except (MissingIdentity, _Unfit) as exc:")
        if self.required:
            source.emit(3, f"raise _refused({source.name}, {self.wire}, exc, where, n) from None")
        else:
            source.emit(3, source.default(self.field, self.index))
            source.emit(3, f"extra = _keep(extra, {self.wire}, v)")
            source.emit(3, f"_kept_raw({source.name}, {self.wire}, exc, where, n)")
