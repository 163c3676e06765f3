"""Text tables of the ``daemon-client`` command: agents, workspaces, providers, projects.

Pure functions returning strings; the caller writes them. Status marks fall back to ASCII
where the output cannot encode them (a latin-1 terminal). Live views are in
:mod:`daemon_client.cli.live`, timelines in :mod:`daemon_client.cli.printer`, JSON in
:mod:`daemon_client.cli.json_render`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from daemon_client.protocol.codec import unstructure

if TYPE_CHECKING:  # each table imports only the models it is given
    from daemon_client.protocol.agents import AgentEntry, AgentSnapshot, PermissionRequest
    from daemon_client.protocol.providers import ProviderSnapshot
    from daemon_client.protocol.workspaces import WorkspaceDescriptor

STATUS_MARKS = {"running": "▶", "idle": "·", "error": "✗", "initializing": "…", "closed": "■"}
ASCII_MARKS = {"running": ">", "idle": ".", "error": "x", "initializing": "~", "closed": "#"}
Marks = Mapping[str, str]


def marks_for(encodes: bool) -> Marks:
    """The status marks to use: ``encodes`` tells whether the output can carry the Unicode ones."""
    return STATUS_MARKS if encodes else ASCII_MARKS


def unicode_marks_text() -> str:
    """Every Unicode mark, to ask the output whether it can encode them."""
    return "".join(STATUS_MARKS.values())


def table(rows: Iterable[Iterable[str]], headers: Iterable[str]) -> str:
    """A plain left-aligned text table."""
    data = [list(headers), *[list(row) for row in rows]]
    widths = [max(len(row[i]) for row in data) for i in range(len(data[0]))]
    return "\n".join("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in data)


def agent_row(agent: AgentSnapshot, marks: Marks = STATUS_MARKS) -> list[str]:
    mark = marks.get(agent.status, "?")
    return [f"{mark} {agent.status}", agent.title or "(untitled)", agent.provider, agent.id]


def agents_table(entries: Iterable[AgentEntry], marks: Marks = STATUS_MARKS) -> str:
    return table((agent_row(e.agent, marks) for e in entries), ["STATUS", "TITLE", "PROVIDER", "ID"])


def workspaces_table(workspaces: Iterable[WorkspaceDescriptor]) -> str:
    rows = ([w.status, w.name, w.directory, w.id] for w in workspaces)
    return table(rows, ["STATUS", "NAME", "DIRECTORY", "ID"])


def providers_table(snapshot: ProviderSnapshot) -> str:
    rows = ([e.provider, e.status, str(len(e.models or ())), e.error or ""] for e in snapshot.entries)
    return table(rows, ["PROVIDER", "STATUS", "MODELS", "ERROR"])


def permissions_table(requests: Iterable[PermissionRequest]) -> str:
    rows = ([p.id, p.kind, p.name, p.title or p.description or ""] for p in requests)
    return table(rows, ["PERMISSION", "KIND", "NAME", "TITLE"])


def to_json(value: Any) -> str:
    """Models as the wire's camelCase JSON, indented."""
    if attrs.has(type(value)):
        value = unstructure(value)
    elif isinstance(value, list | tuple):
        value = [unstructure(v) if attrs.has(type(v)) else v for v in value]
    return json.dumps(value, indent=2, sort_keys=True, default=str)


def describe_features(features: Mapping[str, Any]) -> str:
    return ", ".join(sorted(name for name, on in features.items() if on is True)) or "none"
