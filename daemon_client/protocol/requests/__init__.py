"""Every request the client sends, declared once per family, and the catalog keyed by type.

One module per family (:mod:`.session`, :mod:`.agents`, :mod:`.subscriptions`,
:mod:`.workspaces`, :mod:`.projects`, :mod:`.providers`, :mod:`.terminals`, :mod:`.config`)
declares its :class:`~daemon_client.protocol.requests.spec.RequestSpec` values; :data:`CATALOG`
maps each wire type to its declaration. The request path reads it with one dict lookup per
request (reply matcher, default timeout); the API gates, sends and parses with it; the fake
daemon registers its handlers by it; ``docs/requests.md`` is generated from it
(:func:`request_table`). Pure values built at import; read from any thread.
"""

from __future__ import annotations

from collections.abc import Mapping

from daemon_client.protocol.requests import (
    agents,
    config,
    projects,
    providers,
    session,
    subscriptions,
    terminals,
    workspaces,
)
from daemon_client.protocol.requests.spec import (
    ALL_HOSTS,
    NEWER_HOSTS,
    FeatureGate,
    ReplyMatcher,
    RequestSpec,
    TimeoutClass,
    reply_by_rule,
)

__all__ = [
    "ALL_HOSTS",
    "CATALOG",
    "FAMILIES",
    "NEWER_HOSTS",
    "FeatureGate",
    "ReplyMatcher",
    "RequestSpec",
    "TimeoutClass",
    "reply_by_rule",
    "request_table",
    "spec_for",
]

FAMILIES = (session, agents, subscriptions, workspaces, projects, providers, terminals, config)
"""The family modules, in the order of the request table."""


def _catalog() -> dict[str, RequestSpec]:
    catalog: dict[str, RequestSpec] = {}
    for family in FAMILIES:
        for spec in family.REQUESTS:
            if spec.type in catalog:
                raise ValueError(f"{spec.type} is declared twice")
            catalog[spec.type] = spec
    return catalog


CATALOG: Mapping[str, RequestSpec] = _catalog()
"""Every declared request by wire type."""


def spec_for(request_type: str) -> RequestSpec | None:
    """The declaration of ``request_type`` (``None``: not declared; the naming rule applies)."""
    return CATALOG.get(request_type)


def _reply_cell(matcher: ReplyMatcher) -> str:
    if matcher.statuses is None:
        return f"`{matcher.type}`"
    return f"`{matcher.type}` " + " / ".join(f"`{status}`" for status in sorted(matcher.statuses))


def request_table() -> str:
    """The Markdown table of every declared request (``docs/requests.md`` shows it as it is)."""
    lines = [
        "| Family | Request | Reply | Default timeout | Needs | Host kinds | Sent by |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for spec in CATALOG.values():
        timeout = f"{spec.timeout.seconds:g} s ({spec.timeout.name.lower()})" if spec.timeout else "client default"
        needs = f"`features.{spec.feature.flag}` ({spec.feature.version}+)" if spec.feature else "—"
        hosts = "all" if spec.hosts == ALL_HOSTS else ", ".join(sorted(kind.value for kind in spec.hosts))
        api = ", ".join(f"`{call}`" for call in spec.api.split(", ")) if spec.api else "(internal)"
        lines.append(
            f"| {spec.family} | `{spec.type}` | {_reply_cell(spec.reply)} | {timeout} | {needs} | {hosts} | {api} |"
        )
    return "\n".join(lines) + "\n"
