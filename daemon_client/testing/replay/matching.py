"""How a client frame is matched to a recorded one, and how a recorded answer is adapted.

Two frames match when they are equal once the *volatile* fields are removed, wherever they
occur: by default the IDs a client makes up anew in every run (``requestId``, ``clientId``,
``subscriptionId``, ``messageId``, ``clientMessageId``, ``idempotencyKey``) and
``clientSentAt`` (a clock reading), plus the fields a test names. The values of volatile
fields become a mapping (recorded value → this client's value) that rewrites the daemon's
recorded frames, so a reply carries the ``requestId`` this client sent. Pure functions, run
on a replay connection's thread.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "DEFAULT_VOLATILE",
    "diff",
    "frame_type",
    "id_mapping",
    "is_heartbeat",
    "message_of",
    "normalize",
    "request_id_of_reply",
    "request_id_of_request",
    "rewrite",
]

DEFAULT_VOLATILE = frozenset(
    {"requestId", "clientId", "subscriptionId", "messageId", "clientMessageId", "idempotencyKey", "clientSentAt"}
)
_MAX_DIFFS = 12


def message_of(frame: Mapping[str, Any]) -> Mapping[str, Any]:
    """The session message of a ``{"type":"session","message":..}`` frame, else the frame."""
    message = frame.get("message")
    if frame.get("type") == "session" and isinstance(message, Mapping):
        return message
    return frame


def frame_type(frame: Mapping[str, Any]) -> str:
    """The inner type of a session frame, else the top-level type."""
    return str(message_of(frame).get("type"))


def is_heartbeat(frame: Mapping[str, Any]) -> bool:
    """A top-level ``ping``/``pong`` (not wrapped in a session message)."""
    return frame.get("type") in ("ping", "pong") and "message" not in frame


def request_id_of_request(frame: Mapping[str, Any]) -> str | None:
    value = message_of(frame).get("requestId")
    return value if isinstance(value, str) else None


def request_id_of_reply(frame: Mapping[str, Any]) -> str | None:
    message = message_of(frame)
    payload = message.get("payload")
    value = payload.get("requestId") if isinstance(payload, Mapping) else None
    if value is None:
        value = message.get("requestId")
    return value if isinstance(value, str) else None


def normalize(value: Any, volatile: frozenset[str]) -> Any:
    """``value`` without the volatile keys, at any depth."""
    if isinstance(value, Mapping):
        return {key: normalize(item, volatile) for key, item in value.items() if key not in volatile}
    if isinstance(value, list):
        return [normalize(item, volatile) for item in value]
    return value


def id_mapping(recorded: Any, sent: Any, volatile: frozenset[str]) -> dict[str, str]:
    """Recorded value → sent value of every volatile string field present in both frames."""
    found: dict[str, str] = {}
    if isinstance(recorded, Mapping) and isinstance(sent, Mapping):
        for key, item in recorded.items():
            if key not in sent:
                continue
            other = sent[key]
            if key in volatile:
                if isinstance(item, str) and isinstance(other, str) and item != other:
                    found[item] = other
            else:
                found.update(id_mapping(item, other, volatile))
    elif isinstance(recorded, list) and isinstance(sent, list):
        for item, other in zip(recorded, sent, strict=False):
            found.update(id_mapping(item, other, volatile))
    return found


def rewrite(value: Any, mapping: Mapping[str, str]) -> Any:
    """``value`` with every string equal to a key of ``mapping`` replaced by its value."""
    if not mapping:
        return value
    if isinstance(value, str):
        return mapping.get(value, value)
    if isinstance(value, Mapping):
        return {key: rewrite(item, mapping) for key, item in value.items()}
    if isinstance(value, list):
        return [rewrite(item, mapping) for item in value]
    return value


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= 120 else text[:117] + "..."


def _walk(recorded: Any, sent: Any, path: str, out: list[str]) -> None:
    if isinstance(recorded, Mapping) and isinstance(sent, Mapping):
        for key in recorded:
            where = f"{path}.{key}" if path else str(key)
            if key not in sent:
                out.append(f"{where}: recorded {_show(recorded[key])}, not sent")
            else:
                _walk(recorded[key], sent[key], where, out)
        for key in sent:
            if key not in recorded:
                where = f"{path}.{key}" if path else str(key)
                out.append(f"{where}: sent {_show(sent[key])}, not in the recording")
        return
    if isinstance(recorded, list) and isinstance(sent, list) and len(recorded) == len(sent):
        for index, (item, other) in enumerate(zip(recorded, sent, strict=True)):
            _walk(item, other, f"{path}[{index}]", out)
        return
    if recorded != sent or type(recorded) is not type(sent):
        out.append(f"{path or '(frame)'}: recorded {_show(recorded)}, sent {_show(sent)}")


def diff(recorded: Any, sent: Any) -> list[str]:
    """The differences between two (normalized) frames, one line each, paths from the frame."""
    out: list[str] = []
    _walk(recorded, sent, "", out)
    return out


def describe_diff(lines: Iterable[str]) -> str:
    """At most a dozen difference lines, indented, with a count of the rest."""
    shown = list(lines)
    rest = len(shown) - _MAX_DIFFS
    text = "\n".join(f"    {line}" for line in shown[:_MAX_DIFFS])
    return text + (f"\n    ... and {rest} more" if rest > 0 else "")
