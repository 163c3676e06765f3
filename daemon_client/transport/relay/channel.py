"""``RelayTransport``: one end-to-end-encrypted socket through a Paseo relay (protocol-relay.md 5-9).

It wraps a base transport (a WebSocket to the relay) and keeps the ``Transport`` contract, so
that everything above it sees plaintext text frames as on a direct connection. ``connect``
opens the relay socket (without the password headers: the relay is untrusted), makes a fresh
keypair, sends ``e2ee_hello`` and resends it every second until ``e2ee_ready`` arrives, within
the connect timeout. Then ``send_text`` seals every frame and ``recv`` opens every frame,
following the receive rules of section 6.2: a duplicate ``e2ee_ready``/``e2ee_hello`` is
skipped; a plaintext, undecryptable or replayed frame (a nonce this socket opened before, see
:mod:`~daemon_client.transport.relay.replay_window`) ends the socket (close 1011) and is never
delivered. Each decrypted message is typed by its first byte (:func:`daemon_client._wire.classify_message`,
section 6.1), so terminal output reaches the pipeline as the binary frame a direct connection
would have delivered.

Threads: ``connect`` and ``recv`` run on the client's reader thread; during ``connect`` a
short-lived ``…-e2ee`` thread resends the hello and is joined before ``connect`` returns.
``send_text``, ``close`` and ``abort`` may be called from any thread (the base transport
serialises its writes).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from daemon_client import _nesting as nesting
from daemon_client._wire import WireFrame, classify_message
from daemon_client.errors import PairingError
from daemon_client.transport.base import (
    ConnectParams,
    FrameRejected,
    Transport,
    TransportClosed,
    TransportError,
    TransportFailed,
)
from daemon_client.transport.relay.crypto import (
    NONCE_BYTES,
    DecryptError,
    FrameBox,
    InvalidPeerKey,
    KeyPair,
    decode_frame_text,
    shared_key,
)
from daemon_client.transport.relay.replay_window import ReplayWindow

CLOSE_SERVER_DISCONNECTED = 1012
"""How the relay closes a client socket when the daemon's side ended, whatever its reason."""
CLOSE_CHANNEL_ERROR = 1011
HELLO_INTERVAL = 1.0
_JOIN_TIMEOUT = 2.0
PAIR_AGAIN = "pair again: run `paseo daemon pair` on the daemon's machine and use the new link"


def message_type(text: str) -> str | None:
    """The ``type`` of a plaintext JSON object frame, else ``None``."""
    try:
        decoded: Any = nesting.loads(text, "a relay frame")
    except ValueError:
        return None
    kind = decoded.get("type") if isinstance(decoded, dict) else None
    return kind if isinstance(kind, str) else None


def hello_frame(keypair: KeyPair) -> str:
    """The plaintext ``e2ee_hello`` carrying the client's public key (no capabilities)."""
    return json.dumps({"type": "e2ee_hello", "key": keypair.public_key_b64}, separators=(",", ":"))


def _http_status(exc: BaseException) -> int | None:
    """The HTTP status of a refused upgrade, when the base transport kept it as the cause."""
    status = getattr(exc.__cause__, "status_code", None)
    return status if isinstance(status, int) else None


class ChannelCounters(Protocol):
    """Where a channel reports what happened on its socket (the factory's counters)."""

    def note_handshake(self) -> None: ...

    def note_handshake_failure(self) -> None: ...

    def note_confirmed(self) -> None: ...

    def note_rejected(self) -> None: ...

    def note_unconfirmed_close(self) -> int: ...


class RelayTransport:
    """A :class:`~daemon_client.transport.base.Transport` through a relay; see the module docstring."""

    def __init__(
        self,
        base: Transport,
        daemon_public_key: bytes,
        owner: ChannelCounters,
        logger: logging.Logger,
        hello_interval: float = HELLO_INTERVAL,
    ) -> None:
        self._base = base
        self._daemon_key = daemon_public_key
        self._owner = owner
        self._log = logger
        self._hello_interval = hello_interval
        self._box: FrameBox | None = None
        self._replays = ReplayWindow()
        self._confirmed = False  # a frame of the daemon decrypted on this socket
        self._stop_hello = threading.Event()
        self._before_wait: Callable[[], None] | None = None  # the reader's wait hook, once installed

    def __repr__(self) -> str:
        state = "open" if self._box is not None else "not open"
        return f"<RelayTransport {state}>"

    @property
    def selected_subprotocol(self) -> str | None:
        return None

    # ------------------------------------------------------------------ connect
    def connect(self, params: ConnectParams) -> None:
        started = time.monotonic()
        try:  # the relay is untrusted: no password headers or subprotocols reach it
            self._base.connect(params.without_credentials())
        except TransportError as exc:
            if _http_status(exc) == 400:
                raise TransportFailed(
                    PairingError(
                        f"The relay refused this client's request (HTTP 400): the pairing offer's server id "
                        f"or the relay endpoint is wrong; {PAIR_AGAIN}"
                    )
                ) from None
            raise
        try:
            keypair = KeyPair.generate()
            key = shared_key(self._daemon_key, keypair.secret_key)
        except InvalidPeerKey as exc:
            self._base.abort()
            raise TransportFailed(
                PairingError(f"The pairing offer's daemon key is unusable ({exc}); {PAIR_AGAIN}")
            ) from None
        remaining = params.timeout - (time.monotonic() - started)
        self._await_ready(hello_frame(keypair), remaining)
        self._box = FrameBox(key)
        self._owner.note_handshake()

    def _await_ready(self, hello: str, budget: float) -> None:
        """Send ``hello`` now and every ``hello_interval`` until ``e2ee_ready`` or ``budget`` s pass."""
        timed_out = threading.Event()
        started = time.monotonic()
        ready = False
        self._base.send_text(hello)
        resender = threading.Thread(
            target=self._resend_hello,
            args=(hello, time.monotonic() + budget, timed_out),
            name=f"{threading.current_thread().name}-e2ee",
            daemon=True,
        )
        resender.start()
        try:
            while True:
                try:
                    text = self._base.recv()
                except FrameRejected:
                    continue  # nothing but e2ee_ready matters while waiting
                except TransportError as exc:
                    if timed_out.is_set():
                        raise TimeoutError(f"no e2ee_ready from the daemon within {budget:g} s") from None
                    self._log.warning(
                        "the relay socket ended after %.3g s without e2ee_ready (%s): is the daemon running "
                        "and connected to this relay?",
                        time.monotonic() - started,
                        exc,
                    )
                    raise TransportError(f"the relay socket ended during the end-to-end handshake: {exc}") from exc
                if isinstance(text, str) and text.lstrip().startswith("{") and message_type(text) == "e2ee_ready":
                    ready = True
                    return
        finally:
            self._stop_hello.set()
            resender.join(_JOIN_TIMEOUT)
            if not ready:
                self._owner.note_handshake_failure()
            if timed_out.is_set():
                self._log.warning(
                    "no answer from the daemon through the relay within %.3g s: is it running and "
                    "connected to this relay?",
                    budget,
                )

    def _resend_hello(self, hello: str, deadline: float, timed_out: threading.Event) -> None:
        """``…-e2ee`` thread: resend ``hello`` every interval; abort the socket at the deadline."""
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out.set()
                self._base.abort()
                return
            if self._stop_hello.wait(min(self._hello_interval, remaining)):
                return
            if time.monotonic() >= deadline:
                continue
            try:
                self._base.send_text(hello)
            except TransportError:
                return

    # ------------------------------------------------------------------ frames
    def set_wait_hooks(self, before: Callable[[], None], after: Callable[[], None]) -> bool:
        """The base socket's wait hooks (``WebSocketTransport.set_wait_hooks``): False when it
        has none (nothing installed)."""
        set_hooks = getattr(self._base, "set_wait_hooks", None)
        if set_hooks is None or set_hooks(before, after) is not True:
            return False
        self._before_wait = before
        return True

    def send_text(self, text: str) -> None:
        box = self._box
        if box is None:
            raise TransportError("the end-to-end channel is not open")
        self._base.send_text(box.seal(text.encode("utf-8")))

    def send_binary(self, data: bytes) -> None:
        """A binary message (terminal input) travels encrypted in a text frame, as on 0.1.65."""
        box = self._box
        if box is None:
            raise TransportError("the end-to-end channel is not open")
        self._base.send_text(box.seal(data))

    def recv(self) -> WireFrame:
        box = self._box
        if box is None:
            raise TransportError("the end-to-end channel is not open")
        while True:
            try:
                text = self._base.recv()
            except TransportClosed as exc:
                raise self._closed(exc) from None
            if isinstance(text, bytes):  # the relay hop carries text frames only
                raise FrameRejected(f"binary frame of {len(text)} bytes on the relay ignored", preview=text[:200])
            if text[:1] in ("{", " ", "\t", "\r", "\n"):  # never the first character of base64
                if message_type(text) in ("e2ee_ready", "e2ee_hello"):
                    continue  # a late answer to a resent hello
                raise self._fatal("a plaintext frame", "Received plaintext frame on encrypted channel")
            try:
                raw = decode_frame_text(text)
            except (ValueError, UnicodeError):  # binascii.Error is a ValueError
                raise self._fatal(
                    "a frame that does not decrypt (the frame is not base64)", "Decryption failed"
                ) from None
            try:
                plaintext = box.open_bytes(raw)
            except DecryptError as exc:
                raise self._fatal(f"a frame that does not decrypt ({exc})", "Decryption failed") from None
            if not self._replays.admit(raw[:NONCE_BYTES]):
                raise self._fatal("a frame it had sent before on this socket (a replay)", "Replayed frame")
            if not self._confirmed:
                self._confirmed = True
                self._owner.note_confirmed()
            return classify_message(plaintext)

    def _fatal(self, what: str, close_reason: str) -> TransportError:
        """End the socket after a frame that breaks the channel; the frame is never delivered."""
        if self._before_wait is not None:  # the close below writes on the reader thread: may wait
            self._before_wait()
        self._owner.note_rejected()
        self._log.warning("the daemon's side of the relay sent %s: closing the socket (1011)", what)
        try:
            self._base.close(CLOSE_CHANNEL_ERROR, close_reason)
        finally:
            self._base.abort()
        return TransportError(f"the relay delivered {what}; the socket was closed (1011) and will be reopened")

    def _closed(self, exc: TransportClosed) -> TransportError:
        """What the end of the socket means: a 1012 before any frame decrypted may be a stale offer."""
        if self._confirmed or exc.code != CLOSE_SERVER_DISCONNECTED:
            return exc
        count = self._owner.note_unconfirmed_close()
        if count >= 2:
            return TransportFailed(
                PairingError(
                    f"The daemon closed the channel {count} times in a row right after the end-to-end "
                    "handshake, before answering: the pairing offer is stale (the daemon has a new key) "
                    f"or the daemon refuses this client; {PAIR_AGAIN}"
                )
            )
        return TransportClosed(
            exc.code,
            "the daemon's side closed before answering (Server disconnected): the daemon may be "
            "restarting or refusing this client, or the pairing offer is stale",
        )

    # ------------------------------------------------------------------ lifecycle
    def abort(self) -> None:
        self._stop_hello.set()
        self._base.abort()

    def close(self, code: int = 1000, reason: str = "") -> None:
        self._stop_hello.set()
        self._base.close(code, reason)
