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

Readers are built once per type and cached; they run on whichever thread first needs the
typed value (the callback thread for pushes, the caller's thread for replies) and share
nothing but the skip counter and the warning memory, both behind one lock.
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

T = TypeVar("T")

EXTRA_FIELDS = "extra_fields"
"""A model attribute of this name collects wire fields the model does not know or could not read."""
RAW_FIELD = "raw"
"""A model attribute of this name keeps the whole wire object (its wire name is ``raw`` too)."""

_log = logging.getLogger("daemon_client.protocol")
_ABSENT: Any = object()
_WARNED_MAX = 512

Where = tuple[Any, ...]
"""Where a value sits, outermost first: accessors such as ``"features[0]"``, or ``(accessor, id)``
pairs for objects whose identity was read; formatted only for log lines (:func:`_path`)."""
Reader = Callable[[Any, Where], Any]


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


def _path(where: Where) -> str:
    return " › ".join(f"{part[0]} {_preview(part[1], 60)}" if type(part) is tuple else str(part) for part in where)


def report_skipped(model: str, field: str | None, where: Where, raw: Any) -> None:
    """Count a skipped entry and log one WARNING naming it and its missing identity ``field``
    (``None``: the entry is not an object). The same entry skipped again (an update re-sending
    it) is counted and logged at DEBUG only."""
    path = _path(where)
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


def _any(value: Any, where: Where) -> Any:
    return value


def _str(value: Any, where: Where) -> str:
    if type(value) is str:
        return value
    raise _Unfit("not a string")


def _bool(value: Any, where: Where) -> bool:
    if type(value) is bool:
        return value
    raise _Unfit("not a boolean")


def _int(value: Any, where: Where) -> int:
    if type(value) is int:
        return value
    if type(value) is float and value.is_integer():
        return int(value)
    raise _Unfit("not an integer")


def _float(value: Any, where: Where) -> float:
    if type(value) is float or type(value) is int:
        return float(value)
    raise _Unfit("not a number")


_SCALARS: dict[Any, Reader] = {str: _str, bool: _bool, int: _int, float: _float, Any: _any, object: _any}


def _reader(tp: Any) -> Reader:
    reader = _readers.get(tp)
    if reader is None:
        reader = _build(tp)
        _readers[tp] = reader
    return reader


def _is_object(tp: Any) -> bool:
    return isinstance(tp, type) and attrs.has(tp)


def _build(tp: Any) -> Reader:
    scalar = _SCALARS.get(tp)
    if scalar is not None:
        return scalar
    if _is_object(tp):
        return _object_reader(tp)
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
    def read(value: Any, where: Where) -> Any:
        try:
            return _fallback_converter().structure(value, tp)
        except Exception as exc:  # noqa: BLE001 - any failure means the value does not fit
            raise _Unfit(str(exc)) from None

    return read


def _union_reader(options: list[Any]) -> Reader:
    if len(options) == 1:
        return _reader(options[0])
    readers = [_reader(option) for option in options]

    def read(value: Any, where: Where) -> Any:
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

    def read(value: Any, where: Where) -> Any:
        if type(value) is not list and type(value) is not tuple:
            raise _Unfit("not a list")
        out = []
        lossy = False
        for index, element in enumerate(value):
            try:
                out.append(item(element, (*where[:-1], f"{where[-1]}[{index}]")))
            except MissingIdentity as exc:
                lossy = True
                report_skipped(exc.model, exc.field, (*where[:-1], f"{where[-1]}[{index}]"), element)
            except _Unfit:
                lossy = True
                if model is not None:
                    report_skipped(model, None, (*where[:-1], f"{where[-1]}[{index}]"), element)
        result = out if as_list else tuple(out)
        if lossy:
            raise _Partial(result)
        return result

    return read


def _mapping_reader(value_type: Any) -> Reader:
    if value_type is Any or value_type is object:

        def read_any(value: Any, where: Where) -> Any:
            if type(value) is not dict:
                raise _Unfit("not an object")
            return dict(value)

        return read_any
    item = _reader(value_type)

    def read(value: Any, where: Where) -> Any:
        if type(value) is not dict:
            raise _Unfit("not an object")
        out = {}
        lossy = False
        for key, element in value.items():
            try:
                out[key] = item(element, (*where, str(key)))
            except (_Unfit, MissingIdentity):
                lossy = True
            except _Partial as partial:
                out[key] = partial.value
                lossy = True
        if lossy:
            raise _Partial(out)
        return out

    return read


_Field = tuple[str, str, bool, bool, Reader, bool, Any]
"""One field of a model, as its reader uses it: (init alias, wire name, is identity, nested
value (needs a location), value reader, names the object in log lines, exact scalar type for
the fast path or ``None``)."""
_EXACT = {str: str, bool: bool, int: int, float: float}


def _object_reader(cls: type[Any]) -> Reader:
    """The reader of one attrs model; its field readers are resolved on first use (models may
    refer to each other, and to names defined after them)."""
    name = cls.__name__
    prepared: tuple[tuple[_Field, ...], frozenset[str], bool] | None = None

    def prepare() -> tuple[tuple[_Field, ...], frozenset[str], bool]:
        hints = typing.get_type_hints(cls)
        fields = [field for field in attrs.fields(cls) if field.name != EXTRA_FIELDS]
        required = [field.name for field in fields if field.default is attrs.NOTHING]
        naming = "id" if "id" in required else required[0] if required else None
        specs: list[_Field] = []
        for field in fields:
            wire = RAW_FIELD if field.name == RAW_FIELD else to_camel(field.name)
            tp = hints.get(field.name, Any)
            specs.append(
                (
                    field.alias,
                    wire,
                    field.default is attrs.NOTHING,
                    tp not in _SCALARS,
                    _reader(tp),
                    field.name == naming,
                    _EXACT.get(tp),
                )
            )
        keeps_extra = len(fields) < len(attrs.fields(cls))
        return tuple(specs), frozenset(spec[1] for spec in specs), keeps_extra

    def read(value: Any, where: Where) -> Any:
        nonlocal prepared
        if prepared is None:
            prepared = prepare()  # two threads may both prepare: the results are equal
        specs, known, keeps_extra = prepared
        if type(value) is not dict:
            raise _Unfit("not an object")
        get = value.get
        kwargs: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        label = where[-1]
        present = 0
        for alias, wire, required, nested, reader, names, exact in specs:
            raw = get(wire, _ABSENT)
            if raw is _ABSENT or raw is None:
                if required:
                    raise MissingIdentity(name, wire, _path((*where[:-1], label)))
                present += raw is None
                continue
            present += 1
            if type(raw) is exact:  # the common case: a scalar of the field's own type
                kwargs[alias] = raw
            else:
                try:
                    kwargs[alias] = reader(raw, (*where[:-1], label, wire) if nested else where)
                except _Partial as partial:
                    kwargs[alias] = partial.value
                    extra[wire] = raw
                except (MissingIdentity, _Unfit) as exc:
                    if required:
                        field = f"{wire}.{exc.field}" if isinstance(exc, MissingIdentity) else wire
                        raise MissingIdentity(name, field, _path((*where[:-1], label))) from None
                    extra[wire] = raw
                    _log.debug("%s.%s kept raw at %s: %s", name, wire, _path((*where[:-1], label)), exc)
            if names and type(raw) is str:
                label = (label, raw)
        if keeps_extra:
            if present < len(value):
                for key, item in value.items():
                    if key not in known:
                        extra[key] = item
            if extra:
                kwargs[EXTRA_FIELDS] = extra
        try:
            return cls(**kwargs)
        except (TypeError, ValueError) as exc:  # a model's own validation refused a value
            raise _Unfit(str(exc)) from None

    return read


# ------------------------------------------------------------------------------ entry points


def structure(payload: Any, cls: type[T]) -> T:
    """Read one daemon object leniently (see the module docstring).

    Raises :class:`MissingIdentity` when its identity is missing or unusable (the object is
    counted in :func:`skipped_entries`; the caller skips it or reports the error) and
    :class:`ProtocolError` when ``payload`` is not an object.
    """
    try:
        result: T = _reader(cls)(payload, (cls.__name__,))
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
        return _reader(cls)(payload, (where,))  # type: ignore[no-any-return]
    except (_Unfit, MissingIdentity) as exc:
        _log.debug("%s at %s not read: %s", cls.__name__, where, exc)
        return None


def structure_each(items: Iterable[Any] | None, cls: type[T], where: str) -> tuple[T, ...]:
    """Read every entry of a list; an entry without a usable identity (or not an object) is
    skipped with one WARNING and counted, the others are returned in order."""
    reader = _reader(cls)
    out: list[T] = []
    for index, item in enumerate(items or ()):
        at = (f"{where}[{index}]",)
        try:
            out.append(reader(item, at))
        except MissingIdentity as exc:
            report_skipped(exc.model, exc.field, at, item)
        except _Unfit:
            report_skipped(cls.__name__, None, at, item)
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
