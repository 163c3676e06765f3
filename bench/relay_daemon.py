"""A benchmark daemon behind a relay: plain sockets, pre-sealed and pre-encoded frames.

It attaches to a :class:`~bench.relay_forwarder.ForwardingRelay` as a daemon does (a control
socket, then the data socket of the client's connection), answers the end-to-end handshake, and
then behaves like the stream benchmark's server: it acknowledges a timeline subscription, seals
``count`` ``agent_stream`` frames for it under that socket's key, and writes them all on
``blast``, so that what is measured is the relay hop and the client, not this server. The relay
copies bytes without re-framing them, so this daemon writes the frames the client reads: server
frames, unmasked (a relay that re-frames would send the client the same bytes). Runs on one
``bench-relay-daemon`` thread; ``close()`` joins it.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import socket
import sys
import threading
from typing import Any

from bench.relay_forwarder import ForwardingRelay
from bench.servers import reply, stream_frame
from bench.wire import SERVER_INFO, encode_frame, read_frame
from daemon_client.discovery import RelayTarget
from daemon_client.transport.relay.crypto import FrameBox, KeyPair, shared_key

SERVER_ID = "srv_bench"


def _unframed(frame: bytes) -> bytes:
    """The payload of a server frame made by ``bench.wire`` (unmasked)."""
    length = frame[1] & 0x7F
    offset = 2 if length < 126 else 4 if length == 126 else 10
    return frame[offset:]


def _dial(endpoint: str, query: str) -> tuple[socket.socket, bytearray]:
    host, _, port = endpoint.rpartition(":")
    sock = socket.create_connection((host, int(port)), timeout=10)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(
        f"GET /ws?{query} HTTP/1.1\r\nHost: {endpoint}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode()
    )
    buffer = bytearray()
    while b"\r\n\r\n" not in buffer:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("the relay closed during the upgrade")
        buffer += chunk
    head, _, rest = bytes(buffer).partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 101"):
        raise ConnectionError(f"the relay refused: {head.splitlines()[0]!r}")
    sock.settimeout(None)
    return sock, bytearray(rest)


class RelayBenchDaemon:
    """See the module docstring. ``target`` is what a client dials (``offer_link()``)."""

    def __init__(self, endpoint: str, count: int) -> None:
        self._endpoint = endpoint
        self._count = count
        self._keypair = KeyPair.generate()
        self.target = RelayTarget(endpoint, SERVER_ID, self._keypair.public_key)
        self._sockets: list[socket.socket] = []
        self._control, self._control_buffer = _dial(endpoint, f"serverId={SERVER_ID}&role=server&v=2")
        self._sockets.append(self._control)
        self._thread = threading.Thread(target=self._run, name="bench-relay-daemon", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            while True:
                opcode, data = read_frame(self._control, self._control_buffer)
                if opcode == 0x8:
                    return
                message = json.loads(data)
                ids = message.get("connectionIds", []) if message.get("type") == "sync" else []
                if message.get("type") == "connected":
                    ids = [message["connectionId"]]
                for cid in ids:  # one client connection at a time: served on this thread
                    self._serve(cid)

    def _serve(self, cid: str) -> None:
        sock, buffer = _dial(self._endpoint, f"serverId={SERVER_ID}&role=server&v=2&connectionId={cid}")
        self._sockets.append(sock)
        with contextlib.suppress(ConnectionError, OSError):
            _, hello = read_frame(sock, buffer)
            client_key = base64.b64decode(json.loads(hello)["key"])
            box = FrameBox(shared_key(client_key, self._keypair.secret_key))
            sock.sendall(encode_frame(b'{"type":"e2ee_ready"}'))

            def send(payload: bytes) -> None:
                sock.sendall(encode_frame(box.seal(payload).encode("ascii")))

            subscriptions: list[str] = []
            blob: bytes | None = None
            while True:
                opcode, data = read_frame(sock, buffer)
                if opcode == 0x8:
                    sock.sendall(encode_frame(data[:2], 0x8))  # the closing handshake's answer
                    return
                if data.startswith(b"{"):
                    continue  # a late e2ee_ready/e2ee_hello
                frame: dict[str, Any] = json.loads(box.open(data.decode("ascii")))
                message = frame.get("message", {})
                if frame.get("type") == "hello":
                    send(_unframed(SERVER_INFO))
                elif frame.get("type") == "ping":
                    send(b'{"type":"pong"}')
                elif message.get("type") == "agent.timeline.set_subscription.request":
                    sid = f"sub-{len(subscriptions)}"
                    subscriptions.append(sid)
                    if blob is None:  # sealed for this socket's key now, before the client's clock starts
                        blob = b"".join(
                            encode_frame(box.seal(_unframed(stream_frame(i, sid, "agent-0"))).encode("ascii"))
                            for i in range(1, self._count + 1)
                        )
                    body = {"agentIds": message["agentIds"], "subscriptionId": sid}
                    send(_unframed(reply(message, body, "agent.timeline.set_subscription.response")))
                elif message.get("type") == "blast" and blob is not None:
                    sock.sendall(blob)
                elif message.get("type") == "subscription.release.request":  # else close() waits for it
                    released = {"subscriptionId": message["subscriptionId"]}
                    send(_unframed(reply(message, released, "subscription.release.response")))

    def close(self) -> None:
        for sock in list(self._sockets):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()
        self._thread.join(5)


def serve(count: int) -> None:
    """``python -m bench.relay_daemon COUNT``: a relay and this daemon behind it, in their own
    process (so that they do not share the client's GIL); prints the offer link, stops at EOF."""
    relay = ForwardingRelay()
    try:
        daemon = RelayBenchDaemon(relay.endpoint, count)
        try:
            relay.wait_for_daemon()
            print(daemon.target.offer_link(), flush=True)
            sys.stdin.read()
        finally:
            daemon.close()
    finally:
        relay.close()


if __name__ == "__main__":
    serve(int(sys.argv[1]))
