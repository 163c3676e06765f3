"""``DirectoryNamespace``: what ``client.agents`` and ``client.workspaces`` share — reads of
the directory (plain or subscribing), local listeners, and the registry of handles that
follow routed updates.

Methods run on the caller's thread and block with a timeout. Handle snapshots and
listeners are updated on the callback thread, from updates routed to this client's live
observations (see :mod:`daemon_client.subscriptions.directory`), and handle snapshots also
from every snapshot an observation receives (the first one and each one after a
reconnect): a handle whose item the snapshot contains takes the item's entry; the others
keep theirs (a page or a filter can leave an item out). The handle registry is a weak
dictionary guarded by ``_handles_lock``.
"""

from __future__ import annotations

import abc
import threading
import weakref
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

import attrs

from daemon_client.api.common.local_handle import LocalHandle
from daemon_client.protocol.directory import Page, SubscribeOptions
from daemon_client.runtime.context import ClientContext
from daemon_client.subscriptions.directory import DirectoryManager

R = TypeVar("R")  # a list result
M = TypeVar("M")  # a typed update message
E = TypeVar("E")  # one entry of a list result
H = TypeVar("H", bound=LocalHandle[Any])

SubscribeArg = bool | SubscribeOptions | Mapping[str, Any] | None


def wants_subscription(subscribe: SubscribeArg) -> bool:
    """True to observe; ``ValueError`` for anything that tries to choose a subscription ID."""
    if subscribe is None or isinstance(subscribe, bool):
        return bool(subscribe)
    if isinstance(subscribe, SubscribeOptions):
        return True
    if isinstance(subscribe, Mapping):
        if any("subscription" in str(key).lower() for key in subscribe):
            raise ValueError(
                "subscription IDs are issued by the daemon (or, on older daemons, by this client); do not pass one"
            )
        if subscribe:
            raise ValueError(f"unknown subscribe options: {', '.join(map(str, subscribe))}")
        return True
    raise TypeError(f"subscribe must be a bool or SubscribeOptions, not {type(subscribe).__name__}")


@attrs.frozen
class HandleUpdate(Generic[M]):
    """What one routed update means for the handle of its item."""

    item_id: str
    snapshot: Any  # the item's new snapshot, or None when it was removed
    removed: bool
    message: M


class DirectoryNamespace(abc.ABC, Generic[R, M, E, H]):
    """The shared part of ``client.agents`` and ``client.workspaces``."""

    def __init__(self, context: ClientContext, manager: DirectoryManager[R, M, E]) -> None:
        self._context = context
        self._manager = manager
        self._handles: weakref.WeakValueDictionary[str, H] = weakref.WeakValueDictionary()
        self._handles_lock = threading.Lock()
        manager.add_listener(self._on_update)
        manager.add_snapshot_listener(self._on_snapshot)

    # ------------------------------------------------------------------ what a family says
    @abc.abstractmethod
    def _new_handle(self, item_id: str, known: E | None, snapshot: Any) -> H:
        """A new handle for ``item_id`` (``known``: its entry in a live view, if any)."""

    @abc.abstractmethod
    def _interpret(self, message: M) -> HandleUpdate[M] | None:
        """What a routed update does to its item's handle (``None``: nothing)."""

    @abc.abstractmethod
    def _note_entry(self, handle: H, entry: E) -> None:
        """Record ``entry`` (the handle's item, from an observation's snapshot) in its handle."""

    # ------------------------------------------------------------------ caller thread
    def _read(
        self,
        message: dict[str, Any],
        *,
        page: Page | None,
        include_background: bool | None,
        subscribe: SubscribeArg,
        subscription_id: object,
        timeout: float | None,
    ) -> R:
        """Send ``message`` (a ``fetch_*_request`` with its filter and sort) as a plain or a
        subscribing read and return the typed result (with ``subscription`` when observing).
        Validates everything before anything is sent."""
        if subscription_id is not None:
            raise ValueError("subscription IDs are issued by the daemon (or this client); do not pass one")
        observe = wants_subscription(subscribe)
        if page is not None:
            message["page"] = page.to_wire()
        if include_background is not None:
            message["includeBackground"] = include_background
        wait = self._context.timeout_for(message["type"], timeout)
        if not observe:
            return self._manager.family.parse_list(self._context.request(message, timeout=wait))
        observation, result = self._manager.observe(message, wait)
        return attrs.evolve(result, subscription_id=observation.subscription_id, subscription=observation)  # type: ignore[misc]

    def subscribe(self, handler: Callable[[M], object]) -> Callable[[], None]:
        """A local listener for every update routed to this client's live observations of the
        directory (once per message). It sends nothing and hears nothing while no observation
        is live; separate filtered views need the observations' own callbacks."""
        return self._manager.add_listener(handler)

    def _ref(self, item_id: str, snapshot: Any) -> H:
        """The one handle of ``item_id`` for this client, created on first use."""
        with self._handles_lock:
            handle = self._handles.get(item_id)
            if handle is None:
                known = None if snapshot is not None else self._manager.find(item_id)
                handle = self._new_handle(item_id, known, snapshot)
                self._handles[item_id] = handle
        if snapshot is not None and handle.current() is None:
            handle.note_snapshot(snapshot)
        return handle

    # ------------------------------------------------------------------ callback thread
    def _on_update(self, message: M) -> None:
        change = self._interpret(message)
        if change is None:
            return
        handle = self._handles.get(change.item_id)
        if handle is None:
            return
        self._before_update(handle, message)
        handle.apply_update(
            None if change.removed else change.snapshot, message, self._context.dispatcher.errors.call_isolated
        )

    def _before_update(self, handle: H, message: M) -> None:
        """Family-specific state a handle takes from an update before its listeners run."""

    def _on_snapshot(self, snapshot: R) -> None:
        """An observation received a snapshot: the handles of the items it contains take them.
        Handle listeners are not called: a snapshot is no update message."""
        family = self._manager.family
        for entry in family.entries(snapshot):
            handle = self._handles.get(family.entry_key(entry))
            if handle is not None:
                self._note_entry(handle, entry)
