"""What the fake daemon's feature modules need of the daemon that owns them, as Protocols.

Owns :class:`DaemonPort`: the stores and the push that ``config``, ``settings``,
``provider_extras`` and ``workspace_create`` reach through their daemon. They name this
Protocol instead of :class:`~daemon_client.testing.fake.daemon.FakeDaemon`, so the daemon,
which builds them, is the only module that imports them and no annotation closes a circle.
Types only: nothing here runs on any thread.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from daemon_client.testing.fake.directory.stores import AgentStore, WorkspaceStore
    from daemon_client.testing.fake.engine.core import DaemonCore
    from daemon_client.testing.fake.engine.peer import Peer
    from daemon_client.testing.fake.providers import FakeProviders
    from daemon_client.testing.fake.runs.runs import FakeRuns
    from daemon_client.testing.fake.timeline.store import FakeTimeline

__all__ = ["DaemonPort"]


class DaemonPort(Protocol):
    """The part of :class:`~daemon_client.testing.fake.daemon.FakeDaemon` its feature modules use."""

    core: DaemonCore
    agents: AgentStore
    workspaces: WorkspaceStore
    runs: FakeRuns
    timeline: FakeTimeline
    providers: FakeProviders

    def push(self, message_type: str, payload: Mapping[str, Any], *, connection: Peer | None = None) -> int: ...
