"""Encoding and decoding of frames, and the one cattrs converter that owns wire naming.

``decode_frame`` runs on the reader thread for every inbound frame, so it does the
least it can: parse JSON (orjson when the ``fast`` extra is installed), check the
envelope, and hand back a :class:`SessionMessage` tuple. Typed models are built later,
by whoever needs them, with :func:`structure` (lenient: see
:mod:`daemon_client.protocol.lenient`). Unknown message types become :class:`UnknownMessage`;
anything malformed raises :class:`MalformedFrame`, which the reader logs and skips.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
import cattrs
from cattrs.gen import make_dict_unstructure_fn, override

from daemon_client import _nesting as nesting
from daemon_client._brackets import few_brackets
from daemon_client._nesting import MAX_DEPTH, is_depth_error, too_deep
from daemon_client.errors import ProtocolError
from daemon_client.protocol import lenient
from daemon_client.protocol.lenient import EXTRA_FIELDS, RAW_FIELD, to_camel
from daemon_client.protocol.models import ServerInfo, SessionMessage, UnknownMessage
from daemon_client.protocol.server_info import read_server_info

if TYPE_CHECKING:
    from daemon_client.protocol.frame_models import Hello, HelloRejected, Pong, StatusPayload
    from daemon_client.protocol.models import InboundFrame

T = TypeVar("T")

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_loads: Callable[[str], Any]
_dumps: Callable[[Any], str]
try:  # the optional ``fast`` extra
    import orjson

    _loads = orjson.loads

    def _dumps(obj: Any) -> str:
        return orjson.dumps(obj).decode("utf-8")

except ImportError:  # pragma: no cover - exercised when orjson is absent
    _loads = json.loads
    _dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


class MalformedFrame(ProtocolError):
    """An inbound frame that is not a usable protocol frame; it is logged and skipped."""


def _too_deep(text: str) -> MalformedFrame:
    return MalformedFrame(f"frame of {len(text)} chars is nested more than {MAX_DEPTH} levels deep (the nesting limit)")


converter = cattrs.Converter()
"""Unstructures models to their wire form; reading them is :func:`structure`'s job."""


def _unstructure_factory(cls: type[Any]) -> Callable[[Any], Any]:
    overrides = {
        a.name: override(rename=to_camel(a.name), omit_if_default=a.default is None)
        for a in attrs.fields(cls)
        if a.name not in (RAW_FIELD, EXTRA_FIELDS)
    }
    if any(a.name == EXTRA_FIELDS for a in attrs.fields(cls)):
        overrides[EXTRA_FIELDS] = override(omit=True)
    return make_dict_unstructure_fn(cls, converter, **overrides)  # type: ignore[arg-type]


converter.register_unstructure_hook_factory(attrs.has, _unstructure_factory)


def structure(payload: Mapping[str, Any], cls: type[T]) -> T:
    """Build a model from a wire payload, leniently (:mod:`daemon_client.protocol.lenient`):
    odd values become defaults and are kept in ``extra_fields``. Raises :class:`ProtocolError`
    when the payload is not an object or the model's identity field is missing."""
    return lenient.structure(payload, cls)


def unstructure(model: Any) -> dict[str, Any]:
    """The wire dict of a model (camelCase keys, unset optional fields omitted)."""
    result: dict[str, Any] = converter.unstructure(model)
    return result


def parse_server_info(payload: Mapping[str, Any]) -> ServerInfo:
    """``server_info`` payload → :class:`ServerInfo` (see :mod:`daemon_client.protocol.server_info`:
    ``null`` or unusable optional fields read as empty; ``ProtocolError`` names a bad ``serverId``)."""
    return read_server_info(payload).info


def parse_status(payload: Mapping[str, Any]) -> StatusPayload:
    """Any ``status`` payload; unknown ``status`` values are kept, not rejected."""
    from daemon_client.protocol.frame_models import StatusPayload

    return StatusPayload(status=str(payload.get("status", "")), raw=dict(payload))


@functools.cache
def _pong() -> Pong:
    """The one ``Pong`` (the frame has no fields), built with the first one read."""
    from daemon_client.protocol.frame_models import Pong

    return Pong()


def _hello_rejected(obj: dict[str, Any]) -> HelloRejected:
    from daemon_client.protocol.frame_models import HelloRejected

    accepts = obj.get("accepts")
    return HelloRejected(
        reason=str(obj.get("reason") or "unknown"),
        accepts=tuple(str(a) for a in accepts) if isinstance(accepts, list) else (),
    )


_new_session_message = functools.partial(tuple.__new__, SessionMessage)
"""``SessionMessage`` from a ``(type, payload)`` pair, without the Python-level ``__new__``."""


def _with_lone_surrogates(text: str, error: ValueError) -> Any:
    """orjson refuses a lone UTF-16 surrogate (``\\ud83d``), which a daemon writes when it splits
    a message between the halves of an emoji; the standard parser keeps it. Anything else that
    failed to parse is a :class:`MalformedFrame`."""
    if is_depth_error(error):
        raise _too_deep(text) from None
    if _loads is not json.loads and _SURROGATE_ESCAPE.search(text) is not None:
        try:
            return json.loads(text)
        except RecursionError:
            raise _too_deep(text) from None
        except ValueError as exc:
            error = exc
    raise MalformedFrame(f"frame is not valid JSON ({preview(str(error), 120)})") from None


def decode_frame(text: str) -> InboundFrame:
    """Decode one inbound text frame (reader thread). Raises :class:`MalformedFrame`, also for a
    frame nested deeper than :data:`~daemon_client._nesting.MAX_DEPTH`."""
    try:
        obj = _loads(text)
    except RecursionError:
        raise _too_deep(text) from None
    except ValueError as exc:
        obj = _with_lone_surrogates(text, exc)
    if type(obj) is not dict:
        raise MalformedFrame("frame is not a JSON object")
    if not few_brackets(text, MAX_DEPTH) and too_deep(obj):  # fewer brackets cannot nest deeper
        raise _too_deep(text)
    kind = obj.get("type")
    if kind == "session":
        message = obj.get("message")
        if type(message) is dict:  # the envelope of nearly every frame, in one step
            message_type, payload = message.get("type"), message.get("payload")
            if type(message_type) is str and type(payload) is dict:
                return _new_session_message((message_type, payload))
        if type(message) is not dict:
            raise MalformedFrame("session frame without a message object")
        message_type = message.get("type")
        if type(message_type) is not str:
            raise MalformedFrame("session message without a string type")
        payload = message.get("payload")
        if payload is None:
            payload = {key: value for key, value in message.items() if key != "type"}
        elif type(payload) is not dict:
            raise MalformedFrame(f"{preview(message_type, 80)} payload is not an object")
        return SessionMessage(message_type, payload)
    if kind == "pong":
        return _pong()
    if kind == "hello.rejected":
        return _hello_rejected(obj)
    return UnknownMessage(obj)


def loads(data: str | bytes, what: str = "the JSON text") -> Any:
    """Parse JSON text or UTF-8 bytes (orjson when installed); ``ValueError`` if it is not JSON,
    :class:`~daemon_client._nesting.NestingTooDeep` (naming ``what``) if it nests deeper
    than the limit."""
    return nesting.loads(data, what, parse=_loads)


def encode(obj: Mapping[str, Any]) -> str:
    """Compact JSON text of a frame."""
    return _dumps(obj)


def encode_hello(hello: Hello) -> str:
    """The ``hello`` frame's text."""
    body = unstructure(hello)
    return _dumps({"type": body.pop("type"), **body})


def encode_session(message: Mapping[str, Any]) -> str:
    """Wrap a client → daemon message (fields flat beside ``type``) in the session envelope."""
    return _dumps({"type": "session", "message": message})


PING_FRAME = '{"type":"ping"}'


def redact_hello(text: str) -> str:
    """A hello frame's text with the password removed, for logs."""
    try:
        obj = json.loads(text)
    except ValueError:
        return "<hello>"
    auth = obj.get("auth")
    if isinstance(auth, dict) and "password" in auth:
        auth["password"] = "***"
    return json.dumps(obj, separators=(",", ":"))


def preview(data: str | bytes, limit: int = 200) -> str:
    """A frame truncated for a log line."""
    text = data if isinstance(data, str) else data.decode("utf-8", errors="replace")
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} chars)"
