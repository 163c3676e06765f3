"""Lenient structuring of daemon objects: one odd value never hides the rest of a frame.

The daemon grows new optional fields, nullable fields and new shapes without notice
(protocol.md 1.2), so every model of a daemon object is read with one rule, written once here:

* A missing or ``null`` value of a field with a default gets that default.
* A value of an unexpected shape (a string where a number belongs, an object where a
  string belongs, a list that is not a list) leaves the field at its default and is kept
  as it came in the model's ``extra_fields``, under its wire name.
* A field without a default is the object's identity (``id``, ``provider``,
  ``projectKey``...). An object whose identity is missing or unusable cannot be read:
  inside a list it is skipped (one WARNING naming the entry and the field, and counted in
  :func:`skipped_entries`) and the rest of the list is kept, with the whole list also
  kept raw in the parent's ``extra_fields``; in a field of another object it is treated as
  a value of unexpected shape; at the top level :func:`structure` raises
  :class:`MissingIdentity`.
* Keys the model does not know are kept in ``extra_fields``.

Readers are built once per type and cached; a model's reader is generated as Python source
and compiled (:mod:`daemon_client.protocol.reader_codegen`) the first time it is needed. They
run on whichever thread first needs the typed value (the callback thread for pushes, the
caller's thread for replies) and share nothing but the skip counter and the warning memory,
both behind one lock.
"""

from __future__ import annotations

import json
import logging
import threading
import types
import typing
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import attrs
import cattrs

from daemon_client.errors import ProtocolError
from daemon_client.protocol.reader_codegen import FieldPlan, ModelPlan, compile_reader

T = TypeVar("T")

EXTRA_FIELDS = "extra_fields"
"""A model attribute of this name collects wire fields the model does not know or could not read."""
RAW_FIELD = "raw"
"""A model attribute of this name keeps the whole wire object (its wire name is ``raw`` too)."""

_log = logging.getLogger("daemon_client.protocol")
_ABSENT: Any = object()
_WARNED_MAX = 512

Where = tuple[Any, ...]
"""Where a value sits, outermost first, as :func:`report_skipped` takes it: accessors such as
``"features[0]"``, or ``(accessor, id)`` pairs for objects whose identity was read."""
At = tuple[Any, Any, Any, Any]
"""Where a value sits, as the readers pass it on: ``(outer, outer_id, part, index)``: the
location of the object around it (``None`` at the top) and that object's identity (``None``
until read), the accessor (a wire name, or ``(accessor, index)`` for a list in a list), and
the index in the list it is an element of (``None`` if none). One tuple per nested value,
formatted only for log lines and errors (:func:`_path`)."""
Reader = Callable[[Any, At], Any]


def to_camel(name: str) -> str:
    """``server_id`` → ``serverId``: the wire's naming of a snake_case attribute."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


class MissingIdentity(ProtocolError):
    """A daemon object whose identity field is missing or unusable: it cannot be read."""

    def __init__(self, model: str, field: str, where: str) -> None:
        super().__init__(f"cannot read {model} from the daemon's payload: no usable {field!r} at {where}")
        self.model = model
        self.field = field
        self.where = where


class _Unfit(Exception):
    """A value of a shape its field cannot take (internal; never leaves this module)."""


class _Partial(Exception):
    """A container read with some elements left out; ``value`` holds the rest (internal)."""

    def __init__(self, value: Any) -> None:
        super().__init__()
        self.value = value


# ------------------------------------------------------------------------------ skip accounting

_lock = threading.Lock()
_skipped: Counter[str] = Counter()
_warned: OrderedDict[str, None] = OrderedDict()


def skipped_entries() -> dict[str, int]:
    """How many daemon objects were skipped because their identity was missing, by model
    name, since the process started (all clients together)."""
    with _lock:
        return dict(_skipped)


def _preview(value: Any, limit: int = 200) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=repr)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} chars)"


def _accessor(part: Any) -> str:
    return f"{_accessor(part[0])}[{part[1]}]" if type(part) is tuple else str(part)


def _path(at: At | None, ident: Any = None) -> str:
    """``at`` as log lines show it; ``ident``: the identity of the object at ``at``."""
    parts = []
    while at is not None:
        outer, outer_id, part, index = at
        text = _accessor(part) if index is None else f"{_accessor(part)}[{index}]"
        parts.append(f"{text} {_preview(ident, 60)}" if type(ident) is str else text)
        at, ident = outer, outer_id
    return " › ".join(reversed(parts))


def report_skipped(model: str, field: str | None, where: Where, raw: Any) -> None:
    """Count a skipped entry and log one WARNING naming it and its missing identity ``field``
    (``None``: the entry is not an object). The same entry skipped again (an update re-sending
    it) is counted and logged at DEBUG only."""
    path = " › ".join(f"{part[0]} {_preview(part[1], 60)}" if type(part) is tuple else str(part) for part in where)
    _report(model, field, path, raw)


def _skip(model: str, field: str | None, at: At, raw: Any) -> None:
    _report(model, field, _path(at), raw)


def _report(model: str, field: str | None, path: str, raw: Any) -> None:
    reason = "it is not an object" if field is None else f"no usable {field!r}"
    shown = _preview(raw)
    key = f"{model}|{reason}|{path}|{shown}"
    with _lock:
        _skipped[model] += 1
        first = key not in _warned
        if first:
            _warned[key] = None
            if len(_warned) > _WARNED_MAX:
                _warned.popitem(last=False)
    level = logging.WARNING if first else logging.DEBUG
    if _log.isEnabledFor(level):
        _log.log(level, "skipped %s at %s (%s): %s", model, path, reason, shown)


# ------------------------------------------------------------------------------ readers

_fallback: list[cattrs.Converter] = []  # built on first use (slow to build, rarely needed)
_readers: dict[Any, Reader] = {}
_identities: dict[type[Any], tuple[str, ...]] = {}


def _any(value: Any, where: At) -> Any:
    return value


def _str(value: Any, where: At) -> str:
    if type(value) is str:
        return value
    raise _Unfit("not a string")


def _bool(value: Any, where: At) -> bool:
    if type(value) is bool:
        return value
    raise _Unfit("not a boolean")


def _int(value: Any, where: At) -> int:
    if type(value) is int:
        return value
    if type(value) is float and value.is_integer():
        return int(value)
    raise _Unfit("not an integer")


def _float(value: Any, where: At) -> float:
    if type(value) is float or type(value) is int:
        return float(value)
    raise _Unfit("not a number")


_SCALARS: dict[Any, Reader] = {str: _str, bool: _bool, int: _int, float: _float, Any: _any, object: _any}
_EXACT: dict[Any, type[Any]] = {str: str, bool: bool, int: int, float: float}


def _key(tp: Any) -> Any:
    """``tp`` as the key of its reader: unions equal whatever their order (``int | float ==
    float | int``) but are read in their own order, so a type is keyed with its spelling too."""
    return tp if type(tp) is type else (tp, repr(tp))


def _reader(tp: Any) -> Reader:
    reader = _readers.get(_key(tp))
    if reader is None:
        if _is_object(tp):
            return _model_reader(tp)
        reader = _build(tp)
        _readers[_key(tp)] = reader
    return reader


def _is_object(tp: Any) -> bool:
    return isinstance(tp, type) and attrs.has(tp)


def _build(tp: Any) -> Reader:
    scalar = _SCALARS.get(tp)
    if scalar is not None:
        return scalar
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Union or origin is types.UnionType:
        return _union_reader([arg for arg in args if arg is not type(None)])
    if origin in (tuple, Sequence, list) and (origin is not tuple or (len(args) == 2 and args[1] is Ellipsis)):
        return _sequence_reader(args[0] if args else Any, origin is list)
    if origin in (dict, Mapping):
        return _mapping_reader(args[1] if len(args) == 2 else Any)
    return _fallback_reader(tp)


def _fallback_converter() -> cattrs.Converter:
    with _lock:
        if not _fallback:
            _fallback.append(cattrs.Converter())
        return _fallback[0]


def _fallback_reader(tp: Any) -> Reader:
    def read(value: Any, where: At) -> Any:
        try:
            return _fallback_converter().structure(value, tp)
        except Exception as exc:  # noqa: BLE001 - any failure means the value does not fit
            raise _Unfit(str(exc)) from None

    return read


def _union_reader(options: list[Any]) -> Reader:
    if len(options) == 1:
        return _reader(options[0])
    readers = [_reader(option) for option in options]

    def read(value: Any, where: At) -> Any:
        for reader in readers:
            try:
                return reader(value, where)
            except (_Unfit, MissingIdentity):
                continue
        raise _Unfit("fits none of the union's types")

    return read


def _sequence_reader(item_type: Any, as_list: bool) -> Reader:
    item = _reader(item_type)
    model = item_type.__name__ if _is_object(item_type) else None
    exact = _EXACT.get(item_type)  # an element of this type is read as it is

    def read(value: Any, where: At) -> Any:
        if type(value) is not list and type(value) is not tuple:
            raise _Unfit("not a list")
        outer, outer_id, part, at = where
        if at is not None:  # a list in a list
            part = (part, at)
        out = []
        lossy = False
        for index, element in enumerate(value):
            if type(element) is exact:
                out.append(element)
                continue
            at = (outer, outer_id, part, index)
            try:
                out.append(item(element, at))
            except MissingIdentity as exc:
                lossy = True
                _skip(exc.model, exc.field, at, element)
            except _Unfit:
                lossy = True
                if model is not None:
                    _skip(model, None, at, element)
        result = out if as_list else tuple(out)
        if lossy:
            raise _Partial(result)
        return result

    return read


def _mapping_reader(value_type: Any) -> Reader:
    if value_type is Any or value_type is object:

        def read_any(value: Any, where: At) -> Any:
            if type(value) is not dict:
                raise _Unfit("not an object")
            return dict(value)

        return read_any
    item = _reader(value_type)
    exact = _EXACT.get(value_type)  # a value of this type is read as it is

    def read(value: Any, where: At) -> Any:
        if type(value) is not dict:
            raise _Unfit("not an object")
        out = {}
        lossy = False
        for key, element in value.items():
            if type(element) is exact:
                out[key] = element
                continue
            try:
                out[key] = item(element, (where, None, key if type(key) is str else str(key), None))
            except (_Unfit, MissingIdentity):
                lossy = True
            except _Partial as partial:
                out[key] = partial.value
                lossy = True
        if lossy:
            raise _Partial(out)
        return out

    return read


# ------------------------------------------------------------------------------ model readers
# Each model's reader is generated and compiled (reader_codegen) the first time a reader of it
# is asked for, with its fields' readers, so the models it contains are prepared with it. A
# model met again while it is being prepared on this thread (it contains itself), or whose
# annotations cannot be resolved yet, gets a reader that prepares it on first use. Two threads
# may prepare one model at once: both compile the same source; either result is kept.

_preparing = threading.local()


def _model_reader(cls: type[Any]) -> Reader:
    active: set[type[Any]] = _preparing.__dict__.setdefault("models", set())
    if cls in active:
        return _deferred(cls)
    nested = bool(active)
    active.add(cls)
    try:
        reader = compile_reader(_plan(cls), _RUNTIME, _reader)
    except Exception:
        if not nested:
            raise
        return _deferred(cls)  # fails, or reads, on first use: as if prepared then
    finally:
        active.discard(cls)
    _readers[_key(cls)] = reader
    return reader


def _deferred(cls: type[Any]) -> Reader:
    def read(value: Any, where: At) -> Any:
        reader = _readers.get(_key(cls)) or _model_reader(cls)
        return reader(value, where)

    return read


def _plan(cls: type[Any]) -> ModelPlan:
    """The fields of ``cls`` as the rule reads them (see the module docstring)."""
    hints = typing.get_type_hints(cls)
    fields = [field for field in attrs.fields(cls) if field.name != EXTRA_FIELDS]
    required = [field.name for field in fields if field.default is attrs.NOTHING]
    naming = "id" if "id" in required else required[0] if required else None
    plans = []
    for field in fields:
        tp = hints.get(field.name, Any)
        wire = RAW_FIELD if field.name == RAW_FIELD else to_camel(field.name)
        plans.append(FieldPlan(field, wire, tp, _reader(tp), tp not in _SCALARS, field.name == naming))
    extra = next((field for field in attrs.fields(cls) if field.name == EXTRA_FIELDS), None)
    return ModelPlan(cls, tuple(plans), extra)


def _kept_raw(model: str, wire: str, exc: Exception, at: At, ident: Any) -> None:
    _log.debug("%s.%s kept raw at %s: %s", model, wire, _path(at, ident), exc)


def _missing(model: str, wire: str, at: At, ident: Any) -> MissingIdentity:
    return MissingIdentity(model, wire, _path(at, ident))


def _refused(model: str, wire: str, exc: Exception, at: At, ident: Any) -> MissingIdentity:
    field = f"{wire}.{exc.field}" if isinstance(exc, MissingIdentity) else wire
    return MissingIdentity(model, field, _path(at, ident))


_RUNTIME: dict[str, Any] = {
    "_Unfit": _Unfit,
    "_Partial": _Partial,
    "MissingIdentity": MissingIdentity,
    "_ABSENT": _ABSENT,
    "_kept_raw": _kept_raw,
    "_missing": _missing,
    "_refused": _refused,
    "_skip": _skip,
}


# ------------------------------------------------------------------------------ entry points


def structure(payload: Any, cls: type[T]) -> T:
    """Read one daemon object leniently (see the module docstring).

    Raises :class:`MissingIdentity` when its identity is missing or unusable (the object is
    counted in :func:`skipped_entries`; the caller skips it or reports the error) and
    :class:`ProtocolError` when ``payload`` is not an object.
    """
    reader = _readers.get(cls) if type(cls) is type else None  # a model read before: the common case
    try:
        result: T = (reader or _reader(cls))(payload, (None, None, cls.__name__, None))
    except MissingIdentity as exc:
        with _lock:
            _skipped[exc.model] += 1
        raise MissingIdentity(exc.model, exc.field, f"{exc.where} in {_preview(payload)}") from None
    except _Unfit as exc:
        raise ProtocolError(f"cannot read {cls.__name__} from the daemon's payload: {exc}") from None
    except _Partial as partial:  # only for a container type passed as cls
        result = partial.value
    return result


def structure_optional(payload: Any, cls: type[T], where: str) -> T | None:
    """``payload`` read as ``cls``, or ``None`` when it is absent, not an object, or has no
    usable identity (then logged at DEBUG: the caller keeps or drops the raw value)."""
    if type(payload) is not dict:
        return None
    try:
        return _reader(cls)(payload, (None, None, where, None))  # type: ignore[no-any-return]
    except (_Unfit, MissingIdentity) as exc:
        _log.debug("%s at %s not read: %s", cls.__name__, where, exc)
        return None


def structure_each(items: Iterable[Any] | None, cls: type[T], where: str) -> tuple[T, ...]:
    """Read every entry of a list; an entry without a usable identity (or not an object) is
    skipped with one WARNING and counted, the others are returned in order."""
    reader = _reader(cls)
    out: list[T] = []
    for index, item in enumerate(items or ()):
        at = (None, None, where, index)
        try:
            out.append(reader(item, at))
        except MissingIdentity as exc:
            _skip(exc.model, exc.field, at, item)
        except _Unfit:
            _skip(cls.__name__, None, at, item)
    return tuple(out)


def identity_fields(cls: type[Any]) -> tuple[str, ...]:
    """The wire names of a model's identity fields (its fields without a default)."""
    if cls not in _identities:
        names = []
        for field in attrs.fields(cls):
            if field.default is attrs.NOTHING and field.name != EXTRA_FIELDS:
                names.append(RAW_FIELD if field.name == RAW_FIELD else to_camel(field.name))
        _identities[cls] = tuple(names)
    return _identities[cls]


def unknown_fields(payload: Mapping[str, Any], known: Iterable[str]) -> dict[str, Any]:
    """The entries of ``payload`` whose keys are not in ``known`` (for hand-built models)."""
    names = set(known)
    return {key: value for key, value in payload.items() if key not in names}
