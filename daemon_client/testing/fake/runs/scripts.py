"""Turn scripts of the fake daemon's simulated agents: what a prompt makes a turn do.

Pure data: :func:`choose_script` maps a prompt to a :class:`TurnScript` (rows to stream, an
optional pause for a permission or a hold, rows after the pause, failure, usage), following
the 0.1.65 mock provider where it was recorded (``emit N agent stream updates``, transcripts
03 and 05). The run threads of :mod:`daemon_client.testing.fake.runs.runs` play the scripts; nothing
here holds state or starts threads.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import attrs

__all__ = [
    "ANSWER_CHUNKS",
    "FAILURE_TEXT",
    "TurnScript",
    "choose_script",
    "custom_script",
    "permission_request",
]

ANSWER_CHUNKS = ("The answ", "er is 42.")
"""The default answer, split inside a word as the daemon's chunks are (``lastMessage`` joins them)."""
FAILURE_TEXT = "Simulated failure"
_CONTEXT_WINDOW = 128000
_EMIT_ROWS_PROMPT = re.compile(r"emit (\d+) agent stream updates")

Pause = Literal["permission", "hold"]


@attrs.frozen
class TurnScript:
    """What one turn streams: ``before``, then the ``pause`` (if any), then ``after``."""

    before: tuple[dict[str, Any], ...] = ()
    pause: Pause | None = None
    after: tuple[dict[str, Any], ...] = ()
    fail: bool = False
    """End with ``turn_failed`` instead of ``turn_completed``."""
    usage: Mapping[str, int] = attrs.field(factory=dict)


def _usage(input_tokens: int, output_tokens: int) -> dict[str, int]:
    return {"inputTokens": input_tokens, "outputTokens": output_tokens, "contextWindowMaxTokens": _CONTEXT_WINDOW,
            "contextWindowUsedTokens": output_tokens}  # fmt: skip


def _text(kind: str, chunks: Sequence[str]) -> tuple[dict[str, Any], ...]:
    return tuple({"type": kind, "text": chunk} for chunk in chunks)


def _tool_pair(call_id: str) -> tuple[dict[str, Any], ...]:
    running = {"type": "tool_call", "callId": call_id, "name": "read",
               "detail": {"type": "read", "filePath": "README.md"}, "status": "running", "error": None}  # fmt: skip
    done = {**running, "detail": {"type": "read", "filePath": "README.md", "content": "# demo\n"},
            "status": "completed"}  # fmt: skip
    return running, done


def choose_script(text: str, turn_key: str | None = None) -> TurnScript:
    """The script of a prompt.

    - ``emit N agent stream updates``: ``N`` ``todo`` rows, as the real mock provider;
    - contains ``please fail``: a reasoning chunk, then ``turn_failed``;
    - contains ``please hold``: the default turn, paused after its first reasoning chunk until
      released (:meth:`FakeRuns.finish`) or cancelled;
    - contains ``ask permission``: a reasoning chunk, a permission request, then (if allowed)
      a tool call and the answer;
    - anything else: reasoning chunks, a ``tool_call`` pair (``running`` then ``completed``,
      one ``callId``), and the answer in chunks that split a word.
    """
    key = turn_key or str(uuid.uuid4())
    reasoning = _text("reasoning", ("Let me think", " about this."))
    answer = _text("assistant_message", ANSWER_CHUNKS)
    match = _EMIT_ROWS_PROMPT.search(text)
    if match is not None:
        count = int(match.group(1))
        todos = tuple({"type": "todo", "items": [{"text": f"stress-update-{n}", "completed": n % 2 == 0}]}
                      for n in range(count))  # fmt: skip
        return TurnScript(before=todos, usage=_usage(1, count))
    lowered = text.lower()
    if "please fail" in lowered:
        return TurnScript(before=reasoning[:1], fail=True, usage=_usage(8, 2))
    if "please hold" in lowered:
        after = reasoning[1:] + _tool_pair(f"{key}:read:1") + answer
        return TurnScript(before=reasoning[:1], pause="hold", after=after, usage=_usage(12, 9))
    if "ask permission" in lowered:
        return TurnScript(before=reasoning[:1], pause="permission", after=_tool_pair(f"{key}:read:1") + answer,
                          usage=_usage(12, 9))  # fmt: skip
    return TurnScript(before=reasoning + _tool_pair(f"{key}:read:1") + answer, usage=_usage(12, 9))


def custom_script(items: Sequence[Mapping[str, Any]]) -> TurnScript:
    """A turn that streams exactly ``items`` and completes."""
    return TurnScript(before=tuple(dict(item) for item in items), usage=_usage(1, max(1, len(items))))


def permission_request(provider: str) -> dict[str, Any]:
    """An ``AgentPermissionRequest`` (protocol.md 5.8) with a fresh ``perm-<hex>`` id."""
    return {
        "id": f"perm-{uuid.uuid4().hex[:8]}",
        "provider": provider,
        "name": "Bash",
        "kind": "tool",
        "title": "Run git push",
        "detail": {"type": "shell", "command": "git push"},
        "actions": [
            {"id": "allow-once", "label": "Allow", "behavior": "allow", "variant": "primary"},
            {"id": "deny", "label": "Deny", "behavior": "deny", "variant": "danger"},
        ],
    }
