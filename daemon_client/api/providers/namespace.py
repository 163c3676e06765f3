"""``client.providers``: the provider catalog — reads, live updates, and waiting until ready.

Reads block the caller's thread with a timeout. ``subscribe`` handlers run on the
callback thread. ``wait_for_ready`` waits on the caller's thread for updates the
callback thread hands it, so it raises ``WouldDeadlock`` if called from a callback.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable, Sequence
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any

from daemon_client.api.providers import extra_calls as provider_extras
from daemon_client.errors import ConnectionLost, NotConnected, ProvidersNotReady, check_reply
from daemon_client.protocol.agent_settings import AgentCommand
from daemon_client.protocol.agents import AgentFeature, AgentMode
from daemon_client.protocol.lenient import structure_each
from daemon_client.protocol.paths import same_directory
from daemon_client.protocol.provider_usage import ProviderUsageList
from daemon_client.protocol.providers import (
    AvailableProvider,
    ProviderModel,
    ProviderSnapshot,
    ProviderSnapshotUpdate,
    parse_snapshot,
    parse_update,
)
from daemon_client.protocol.requests import providers as providers_requests
from daemon_client.subscriptions.events import EventManager, EventSubscription

if TYPE_CHECKING:
    from daemon_client.api.agents.create import AgentConfig
    from daemon_client.runtime.context import ClientContext

EVENT = "providers_snapshot_update"


_RESTORED = object()
"""Put in ``wait_for_ready``'s inbox when its observation is restored after a reconnect."""


def _as_snapshot(update: ProviderSnapshotUpdate) -> ProviderSnapshot:
    return ProviderSnapshot(entries=update.entries, generated_at=update.generated_at, cwd=update.cwd)


def _examine(item: object) -> object:
    """An item of ``wait_for_ready``'s inbox: raises the error that ended the observation."""
    if isinstance(item, BaseException):
        raise item
    return item


class ProvidersNamespace:
    """``client.providers``."""

    def __init__(self, context: ClientContext, events: EventManager) -> None:
        self._context = context
        self._events = events

    def snapshot(self, cwd: str | None = None, *, timeout: float | None = None) -> ProviderSnapshot:
        """Read the catalog (a plain read: it creates no observation). Right after the daemon
        starts, entries are usually ``loading``; see :meth:`wait_for_ready`."""
        message: dict[str, Any] = {"type": providers_requests.SNAPSHOT.type}
        if cwd is not None:
            message["cwd"] = cwd
        return parse_snapshot(self._context.request(message, timeout=timeout))

    def subscribe(
        self,
        handler: Callable[[ProviderSnapshotUpdate], object],
        *,
        on_restored: Callable[[], object] | None = None,
        on_error: Callable[[BaseException], object] | None = None,
    ) -> EventSubscription:
        """Observe catalog changes: ``handler(update)`` gets the whole catalog each time.

        Each call is its own observation (capable hosts acknowledge each with its own ID;
        older hosts share one event set; the oldest broadcast every update). Returns the
        handle: callable to release, ``ready``, ``release()``, context manager.
        """
        return self._events.subscribe(
            EVENT, handler, parse_update, on_restored=on_restored, on_error=on_error, coalesce=True
        )

    def wait_for_ready(self, cwd: str | None = None, timeout: float = 60.0) -> ProviderSnapshot:
        """Wait until no provider is ``loading`` and return that catalog (protocol.md 7.5).

        Observes first, then reads the snapshot, so no update can fall in between; of the
        updates already delivered when the reply arrives only the newest is examined. After
        every reconnect (updates sent while the client was away are lost) it reads the
        snapshot again and goes on the same way; a read interrupted by the connection's loss
        is made again after the reconnect. On hosts with per-directory snapshots only updates
        for the snapshot's directory count: the one the daemon's reply names (its own spelling
        of ``cwd``), else ``cwd``, compared as directories (``/repo/./sdk`` is ``/repo/sdk``,
        ``C:\\repo`` is ``C:/repo``; see :func:`~daemon_client.protocol.paths.directory_key`).
        Raises ``ProvidersNotReady`` (a ``RequestTimeout``) naming the providers still loading;
        the error that ended the observation (``ClientClosed``, a failed re-establishment);
        or a read's error other than a lost connection. The observation is released in every
        outcome.
        """
        self._events.dispatcher.check_can_wait("provider updates")
        deadline = time.monotonic() + timeout
        inbox: queue.SimpleQueue[object] = queue.SimpleQueue()
        subscription = self.subscribe(inbox.put, on_restored=lambda: inbox.put(_RESTORED), on_error=inbox.put)
        loading: tuple[str, ...] | None = None
        try:
            subscription.ready.result(max(0.0, deadline - time.monotonic()))
            while True:  # the first read, then one after every reconnect
                try:
                    snapshot: ProviderSnapshot | None = self.snapshot(
                        cwd, timeout=max(0.001, deadline - time.monotonic())
                    )
                except (ConnectionLost, NotConnected):
                    snapshot = None  # read again once the observation is restored
                if snapshot is not None:
                    if not snapshot.loading:
                        return snapshot
                    loading = snapshot.loading
                counts = self._counts(snapshot.cwd if snapshot is not None and snapshot.cwd is not None else cwd)
                newest: ProviderSnapshotUpdate | None = None
                restored = False
                while not restored:  # of the updates that came before the reply, only the newest tells the state
                    try:
                        item = inbox.get_nowait()
                    except queue.Empty:
                        break
                    restored = _examine(item) is _RESTORED
                    if isinstance(item, ProviderSnapshotUpdate) and counts(item):
                        newest = item
                if newest is not None:
                    if not newest.loading:
                        return _as_snapshot(newest)
                    loading = newest.loading
                while not restored and (remaining := deadline - time.monotonic()) > 0:
                    try:
                        item = inbox.get(timeout=remaining)
                    except queue.Empty:
                        break
                    restored = _examine(item) is _RESTORED
                    if isinstance(item, ProviderSnapshotUpdate) and counts(item):
                        if not item.loading:
                            return _as_snapshot(item)
                        loading = item.loading
                if not restored:
                    break
            raise ProvidersNotReady(
                "Timed out waiting for providers: "
                + (", ".join(loading) if loading is not None else "the catalog could not be read"),
                request_type="wait_for_ready",
                timeout=timeout,
            )
        except FutureTimeout:
            raise ProvidersNotReady(
                f"Timed out waiting for providers (no acknowledgement within {timeout:g} s)",
                request_type="wait_for_ready",
                timeout=timeout,
            ) from None
        finally:
            subscription.release(timeout=2.0)

    def _counts(self, directory: str | None) -> Callable[[ProviderSnapshotUpdate], bool]:
        """Whether an update concerns the catalog of ``directory`` (always, without per-directory snapshots)."""
        info = self._context.server_info
        per_cwd = info is not None and info.feature("providersSnapshotCwd")

        def counts(update: ProviderSnapshotUpdate) -> bool:
            return not per_cwd or directory is None or same_directory(update.cwd, directory)

        return counts

    def refresh(
        self, providers: Sequence[str] | None = None, cwd: str | None = None, *, timeout: float | None = None
    ) -> bool:
        """Re-probe the providers (all, or those named); the daemon answers when the probes
        are done (up to a minute). Returns whether it acknowledged."""
        message: dict[str, Any] = {"type": providers_requests.REFRESH.type}
        if providers is not None:
            message["providers"] = list(providers)
        if cwd is not None:
            message["cwd"] = cwd
        return self._context.request(message, timeout=timeout).get("acknowledged") is True

    def list_available(self, *, timeout: float | None = None) -> list[AvailableProvider]:
        """Which providers are installed and usable."""
        payload = self._checked({"type": providers_requests.LIST_AVAILABLE.type}, timeout)
        return list(structure_each(payload.get("providers"), AvailableProvider, "providers"))

    def list_models(
        self, provider: str, cwd: str | None = None, *, timeout: float | None = None
    ) -> list[ProviderModel]:
        """The models of one provider (may take long: the daemon asks the provider)."""
        message = {"type": providers_requests.LIST_MODELS.type, "provider": provider, **({"cwd": cwd} if cwd else {})}
        return list(structure_each(self._checked(message, timeout).get("models"), ProviderModel, "models"))

    def list_modes(self, provider: str, cwd: str | None = None, *, timeout: float | None = None) -> list[AgentMode]:
        """The modes of one provider."""
        message = {"type": providers_requests.LIST_MODES.type, "provider": provider, **({"cwd": cwd} if cwd else {})}
        return list(structure_each(self._checked(message, timeout).get("modes"), AgentMode, "modes"))

    def list_features(
        self, config: AgentConfig, *, cwd: str | None = None, timeout: float | None = None
    ) -> tuple[AgentFeature, ...]:
        """The features an agent with ``config`` would offer (``list_provider_features_request``,
        90 s), without creating one: ``AgentConfig(provider="claude/sonnet", cwd=...)`` (a model
        is optional here). Raises ``RpcError`` when the daemon reports an error (an unknown
        provider, say)."""
        return provider_extras.list_features(self._context, config, cwd, timeout)

    def commands(
        self, config: AgentConfig, *, cwd: str | None = None, timeout: float | None = None
    ) -> tuple[AgentCommand, ...]:
        """The slash commands and skills an agent with ``config`` would have, without creating
        one (``list_commands_request`` with a ``draftConfig``, 30 s):
        ``AgentConfig(provider="claude/sonnet", cwd=...)`` (a model is optional here; ``cwd=``
        overrides the config's). Served by every host kind, 0.1.65 included. Raises
        ``RpcError`` when the daemon reports an error (a provider that cannot list commands);
        ``ValueError`` before sending without a provider or a working directory."""
        return provider_extras.list_commands(self._context, config, cwd, timeout)

    def diagnostic(self, provider: str, *, timeout: float | None = None) -> str:
        """Why a provider is (un)available: a multi-line report for humans
        (``provider_diagnostic_request``, 180 s). An unknown provider raises ``RpcError`` with
        ``code="provider_diagnostic_failed"``."""
        return provider_extras.diagnostic(self._context, provider, timeout)

    def list_usage(self, *, timeout: float | None = None) -> ProviderUsageList:
        """Every provider's subscription windows, balances and details
        (``provider.usage.list.request``, 60 s). Needs ``features.providerUsageList`` (Paseo
        0.1.98): older hosts raise ``UnsupportedByHost`` without sending."""
        return provider_extras.list_usage(self._context, timeout)

    def _checked(self, message: dict[str, Any], timeout: float | None) -> dict[str, Any]:
        return check_reply(self._context.request(message, timeout=timeout), message["type"])
