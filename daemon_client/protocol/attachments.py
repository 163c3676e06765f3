"""Attachments of a first agent's context (``firstAgentContext.attachments``, protocol.md 12.5.1).

A workspace creation may carry the context its first agent will start from: a prompt and
attachments. The daemon uses them to name the worktree or branch. The kinds are the SDK's
``AgentAttachment`` union that a Python caller can build: an uploaded file (any MIME type,
images included: an image travels as an uploaded file, never inline), a plain text, a change
request (pull request) and an issue. The text of ``agent.fork_context`` (:class:`ForkAttachment`)
is accepted as a text attachment. Pure data and functions: no thread runs code here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from daemon_client.protocol.agent_settings import ForkAttachment

__all__ = [
    "Attachment",
    "ChangeRequestAttachment",
    "IssueAttachment",
    "TextAttachment",
    "UploadedFile",
    "attachments_to_wire",
]


def _text(value: object, what: str, *, blank: bool = False) -> str:
    if not isinstance(value, str) or (not blank and not value.strip()):
        raise ValueError(f"{what} must be a non-empty string, got {value!r}")
    return value


def _optional_text(value: object, what: str) -> None:
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{what} must be a string or None, got {value!r}")


def _positive(value: object, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{what} must be a positive integer, got {value!r}")


def _drop_none(fields: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in fields.items() if value is not None}


@attrs.frozen
class UploadedFile:
    """A file the daemon already holds (``uploaded_file``): its upload ``id``, name, MIME type,
    size in bytes and the ``path`` the daemon stored it at. Images are uploaded files with an
    ``image/...`` MIME type."""

    id: str
    file_name: str
    mime_type: str
    size: int
    path: str

    def __attrs_post_init__(self) -> None:
        for name in ("id", "file_name", "mime_type", "path"):
            _text(getattr(self, name), f"UploadedFile.{name}")
        if isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 0:
            raise ValueError(f"UploadedFile.size must be a non-negative integer, got {self.size!r}")

    @property
    def is_image(self) -> bool:
        return self.mime_type.lower().startswith("image/")

    def to_wire(self) -> dict[str, Any]:
        return {"type": "uploaded_file", "id": self.id, "fileName": self.file_name, "mimeType": self.mime_type,
                "size": self.size, "path": self.path}  # fmt: skip


@attrs.frozen
class TextAttachment:
    """A plain text (``text``, ``text/plain``), with an optional title."""

    text: str
    title: str | None = None

    def __attrs_post_init__(self) -> None:
        _text(self.text, "TextAttachment.text", blank=True)
        _optional_text(self.title, "TextAttachment.title")

    def to_wire(self) -> dict[str, Any]:
        return _drop_none({"type": "text", "mimeType": "text/plain", "title": self.title, "text": self.text})


def _check_forge_item(item: Any, optional: tuple[str, ...]) -> None:
    """A forge item's fields (a pull request or an issue): a positive ``number``, a ``title``
    (may be blank), a ``url`` and a ``forge``, and the ``optional`` texts."""
    name = type(item).__name__
    _positive(item.number, f"{name}.number")
    _text(item.title, f"{name}.title", blank=True)
    _text(item.url, f"{name}.url")
    _text(item.forge, f"{name}.forge")
    for field in optional:
        _optional_text(getattr(item, field), f"{name}.{field}")


@attrs.frozen
class ChangeRequestAttachment:
    """A pull (or merge) request as context (``forge_change_request``). ``forge`` defaults to
    ``"github"``; ``project_path`` names the project on forges that need it (GitLab)."""

    number: int
    title: str
    url: str
    forge: str = "github"
    body: str | None = None
    project_path: str | None = None
    base_ref_name: str | None = None
    head_ref_name: str | None = None

    def __attrs_post_init__(self) -> None:
        _check_forge_item(self, ("body", "project_path", "base_ref_name", "head_ref_name"))

    def to_wire(self) -> dict[str, Any]:
        return _drop_none({
            "type": "forge_change_request", "mimeType": "application/paseo-forge-change-request",
            "forge": self.forge, "number": self.number, "title": self.title, "url": self.url, "body": self.body,
            "projectPath": self.project_path, "baseRefName": self.base_ref_name, "headRefName": self.head_ref_name,
        })  # fmt: skip


@attrs.frozen
class IssueAttachment:
    """An issue as context (``forge_issue``); ``forge`` defaults to ``"github"``."""

    number: int
    title: str
    url: str
    forge: str = "github"
    body: str | None = None
    project_path: str | None = None

    def __attrs_post_init__(self) -> None:
        _check_forge_item(self, ("body", "project_path"))

    def to_wire(self) -> dict[str, Any]:
        return _drop_none({
            "type": "forge_issue", "mimeType": "application/paseo-forge-issue", "forge": self.forge,
            "number": self.number, "title": self.title, "url": self.url, "body": self.body,
            "projectPath": self.project_path,
        })  # fmt: skip


Attachment = UploadedFile | TextAttachment | ChangeRequestAttachment | IssueAttachment | ForkAttachment
"""What ``attachments=`` of a workspace creation accepts."""

_KINDS = (UploadedFile, TextAttachment, ChangeRequestAttachment, IssueAttachment)


def attachments_to_wire(attachments: Sequence[Attachment] | None) -> list[dict[str, Any]]:
    """The wire form of ``attachments`` (``[]`` for ``None``); ``TypeError`` for anything that
    is not one of the attachment types (a raw dict, or an inline image ``{data, mimeType}``,
    which the first agent's context cannot carry: upload it and pass an :class:`UploadedFile`)."""
    if attachments is None:
        return []
    if isinstance(attachments, (str, bytes)) or not isinstance(attachments, Sequence):
        raise TypeError(f"attachments must be a sequence of attachments, not {type(attachments).__name__}")
    wire: list[dict[str, Any]] = []
    for item in attachments:
        if isinstance(item, ForkAttachment):
            wire.append(TextAttachment(text=item.text, title=item.title).to_wire())
        elif isinstance(item, _KINDS):
            wire.append(item.to_wire())
        else:
            hint = " (an image is attached as an UploadedFile)" if isinstance(item, dict) else ""
            raise TypeError(
                "each attachment must be an UploadedFile, TextAttachment, ChangeRequestAttachment, "
                f"IssueAttachment or ForkAttachment, not {type(item).__name__}{hint}"
            )
    return wire
