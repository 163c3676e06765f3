"""The lifecycle policy every subscription family shares: one place that decides how demand
is released, what a failed establishment does, how local IDs look and how long control
requests may take.

The one subscription state model (:class:`Phase`, :data:`TRANSITIONS`, :data:`MEANINGS`):
every family's state (``ObservationState`` of directory observations, ``State`` of timeline
and event memberships, ``DirectoryState`` of terminal directories, ``StreamState`` of terminal
streams, ``ConfigState`` of configuration followers) is one of these phases under its own
public name, and changes only through :func:`move`, which checks the transition against the one
table. An illegal transition is a
programming error: it is logged at ERROR and refused (the state stays as it was), and raises
:class:`IllegalTransition` in strict mode (:func:`set_strict_transitions`, or the environment
variable ``DAEMON_CLIENT_STRICT_STATES=1``, which the test suite sets). Each family keeps its
own wire behaviour (what it sends to establish, restore and release): they reach the
connection only through a :class:`SubscriptionLink` and register with it through the one
:class:`LifecycleHooks` protocol.

Threads: a link's methods run on whichever thread calls them (the caller's thread for
``release``, the reader thread for acknowledgements, restores and ``close()``'s releases).
They never run user code, never hold a lock while sending, and never raise a connection
error out of a reader-thread hook.
"""

from __future__ import annotations

import enum
import logging
import os
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Protocol

import attrs

from daemon_client.errors import ConnectionUnavailable, DaemonClientError, RequestTimeout
from daemon_client.protocol.hosts import HostKind
from daemon_client.protocol.models import ServerInfo
from daemon_client.protocol.replies import CLOSE_RELEASE_TIMEOUT, default_timeout_for
from daemon_client.protocol.requests import subscriptions as subscriptions_requests
from daemon_client.runtime.dispatch import Dispatcher
from daemon_client.subscriptions.flow import FlowPolicy

_log = logging.getLogger("daemon_client.subscriptions")

RELEASE_REQUEST = subscriptions_requests.RELEASE.type
"""Ends one server-side subscription of a capable host (protocol.md 3.2)."""

LOCAL_ID_PREFIX = "legacy:"
"""Prefix of the IDs this client issues where the host issues none (selective and broadcast hosts)."""

RESULT_GRACE = 1.0
"""Added to a request's own timeout when waiting for its future (the request fails first)."""

Submit = Callable[..., Future[dict[str, Any]]]


# ---------------------------------------------------------------------- the state model
class Phase(enum.Enum):
    """Where a subscription stands, whatever its family (see :data:`MEANINGS`)."""

    PENDING = "pending"
    ESTABLISHING = "establishing"
    LIVE = "live"
    RESTORING = "restoring"
    EXITED = "exited"
    FAILED = "failed"
    RELEASED = "released"


@attrs.frozen
class PhaseMeaning:
    """What a phase means for callbacks, restore and release."""

    callbacks: str
    restore: str
    release: str
    final: bool = False
    """Nothing leaves a final phase: the subscription delivers nothing more."""


MEANINGS: dict[Phase, PhaseMeaning] = {
    Phase.PENDING: PhaseMeaning(
        callbacks="none yet (no connection, or the last one ended)",
        restore="established at the next handshake",
        release="local: nothing is held on the daemon",
    ),
    Phase.ESTABLISHING: PhaseMeaning(
        callbacks="none from the wire until the acknowledgement (or first push) arrives",
        restore="a lost connection moves it back to pending (tried again)",
        release="local; a late acknowledgement is released on the daemon",
    ),
    Phase.LIVE: PhaseMeaning(
        callbacks="every routed push is delivered (flow control may skip and announce)",
        restore="a lost connection moves it to pending or restoring",
        release="released on the daemon where the daemon holds it",
    ),
    Phase.RESTORING: PhaseMeaning(
        callbacks="pushes skipped: the restore's snapshot covers them",
        restore="the re-sent request is in flight; live again on its reply",
        release="local: the daemon released what the socket owned",
    ),
    Phase.EXITED: PhaseMeaning(
        callbacks="the end was delivered; nothing more", restore="never", release="harmless", final=True
    ),
    Phase.FAILED: PhaseMeaning(
        callbacks="the error was delivered; nothing more", restore="never", release="harmless", final=True
    ),
    Phase.RELEASED: PhaseMeaning(
        callbacks="nothing more, not even what was queued", restore="never", release="harmless", final=True
    ),
}
"""What each phase means (documentation, and the table test's reference)."""

_ENDS = frozenset({Phase.FAILED, Phase.RELEASED})
TRANSITIONS: dict[Phase, frozenset[Phase]] = {
    Phase.PENDING: frozenset({Phase.ESTABLISHING, Phase.EXITED}) | _ENDS,
    Phase.ESTABLISHING: frozenset({Phase.PENDING, Phase.LIVE, Phase.RESTORING, Phase.EXITED}) | _ENDS,
    Phase.LIVE: frozenset({Phase.PENDING, Phase.RESTORING, Phase.EXITED}) | _ENDS,
    Phase.RESTORING: frozenset({Phase.LIVE, Phase.PENDING, Phase.EXITED}) | _ENDS,
    Phase.EXITED: frozenset({Phase.RELEASED}),
    Phase.FAILED: frozenset({Phase.RELEASED}),
    Phase.RELEASED: frozenset(),
}
"""The allowed transitions (staying in the same phase is always allowed: a no-op). A final
phase may still become ``released`` (``close()`` releases everything), never anything else."""


class IllegalTransition(RuntimeError):
    """A subscription was asked to make a transition the state model forbids (a defect)."""


class FamilyState(Protocol):
    """A family's state enum: each member names its :class:`Phase`."""

    @property
    def phase(self) -> Phase: ...


class Stateful(Protocol):
    state: Any


_strict = os.environ.get("DAEMON_CLIENT_STRICT_STATES", "") not in ("", "0")


def set_strict_transitions(enabled: bool) -> None:
    """Raise :class:`IllegalTransition` on an illegal transition (tests) instead of refusing it."""
    global _strict
    _strict = enabled


def allowed(old: Phase, new: Phase) -> bool:
    """Whether the model allows moving from ``old`` to ``new``."""
    return old is new or new in TRANSITIONS[old]


def move(subscription: Stateful, new: FamilyState) -> bool:
    """Move ``subscription.state`` to ``new`` if the model allows it (the caller holds the
    family's lock). An illegal transition is logged at ERROR and refused (``False``); in strict
    mode it raises :class:`IllegalTransition`."""
    old: FamilyState = subscription.state
    if allowed(old.phase, new.phase):
        subscription.state = new
        return True
    message = f"illegal subscription transition {old.phase.value} -> {new.phase.value} refused for {subscription!r}"
    _log.error("%s", message, stack_info=True)
    if _strict:
        raise IllegalTransition(message)
    return False


def control_timeout(request_type: str) -> float:
    """The timeout of a subscription control request, from the one table of request timeouts."""
    return default_timeout_for(request_type, default_timeout_for(RELEASE_REQUEST, 15.0))


def local_subscription_id() -> str:
    """A fresh local subscription ID (``legacy:<uuid4>``), minted on every establishment."""
    return f"{LOCAL_ID_PREFIX}{uuid.uuid4()}"


class LifecycleHooks(Protocol):
    """What every subscription manager offers the connection (registered by the client)."""

    def restore(self, kind: HostKind, reconnected: bool) -> None:
        """Reader thread, after every handshake: establish pending demand, restore lost demand."""

    def on_disconnect(self) -> None:
        """Reader thread, when a connection ends: live demand waits for re-establishment."""

    def release_for_close(self, kind: HostKind) -> list[Future[Any]]:
        """``close()`` while connected: release server-side demand; futures to await briefly."""

    def dispose(self) -> None:
        """After ``close()``: fail pending work and detach every callback."""


@attrs.frozen
class SubscriptionLink:
    """What a subscription manager uses of the connection and the callback thread."""

    submit: Submit
    """``submit(message, timeout, *, direct=False, on_settle=None) -> Future``."""
    server_info: Callable[[], ServerInfo | None]
    host_kind: Callable[[], HostKind | None]
    reset_transport: Callable[[str], None]
    dispatcher: Dispatcher
    flow: FlowPolicy = attrs.field(default=attrs.Factory(lambda self: FlowPolicy(self.dispatcher), takes_self=True))
    """What observations do with pushes the callback queue refuses (one per client)."""

    # ------------------------------------------------------------------ release
    def release_on_server(self, subscription_id: str, timeout: float | None = None) -> Future[dict[str, Any]]:
        """Send ``subscription.release.request``; raises ``ConnectionUnavailable`` if it cannot."""
        wait = control_timeout(RELEASE_REQUEST) if timeout is None else timeout
        return self.submit({"type": RELEASE_REQUEST, "subscriptionId": subscription_id}, wait)

    def release_stale(self, subscription_id: str) -> None:
        """An acknowledgement arrived for demand released meanwhile: free the server side too
        (fire and forget; the daemon frees it anyway when the socket goes)."""
        try:
            self.release_on_server(subscription_id)
        except DaemonClientError as exc:
            _log.debug("stale subscription %s not released: %s", subscription_id, exc)

    def await_release(self, what: object, future: Future[dict[str, Any]], wait: float) -> None:
        """Wait for a release's confirmation. A lost connection is fine (the daemon released
        what the socket owned); any other failure leaves the daemon's state unknown, so the
        connection is reset and everything is established again from scratch."""
        try:
            future.result(wait + RESULT_GRACE)
        except ConnectionUnavailable:
            pass
        except (DaemonClientError, FutureTimeout) as exc:
            _log.warning("releasing %s failed (%s); resetting the connection", what, exc)
            self.reset_transport(f"Subscription release failed: {exc}")

    def release_for_close(self, messages: list[dict[str, Any]]) -> list[Future[Any]]:
        """Send each release message of ``close()`` (best effort, short timeout)."""
        futures: list[Future[Any]] = []
        for message in messages:
            try:
                futures.append(self.submit(message, CLOSE_RELEASE_TIMEOUT))
            except DaemonClientError:
                break
        return futures

    # ------------------------------------------------------------------ establishment
    def establishment_failed(self, what: object, error: BaseException, *, owned: bool) -> None:
        """Log a failed (re-)establishment; on a capable host a timeout leaves the daemon's
        state unknown, so the connection is reset."""
        _log.warning("establishing %s failed: %s", what, error)
        if owned and isinstance(error, RequestTimeout):
            self.reset_transport(f"Establishing {what} timed out")


def release_message(subscription_id: str) -> dict[str, Any]:
    """The release request of one server-side subscription."""
    return {"type": RELEASE_REQUEST, "subscriptionId": subscription_id}
