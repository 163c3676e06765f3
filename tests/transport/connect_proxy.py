"""A small HTTP CONNECT proxy on loopback, for tests: plain sockets, one thread per tunnel.

Every host a client asks for is reached on 127.0.0.1 at the port it asked for, so that a test
can name a daemon ``daemon.test`` (a host that is not loopback, which the client therefore
sends through the proxy) and have it served by a fake daemon on loopback. ``credentials``
makes it demand ``Proxy-Authorization: Basic``; ``status`` makes it refuse every CONNECT with
that status. ``requests`` records each CONNECT line and its headers. ``close()`` ends every
thread it started.
"""

from __future__ import annotations

import base64
import contextlib
import selectors
import socket
import threading


class ConnectProxy:
    def __init__(self, *, credentials: tuple[str, str] | None = None, status: int | None = None) -> None:
        self._credentials = credentials
        self._status = status
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self.requests: list[tuple[str, dict[str, str]]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._spawn(self._accept, "test-proxy-accept")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url_with(self, user: str, password: str) -> str:
        return f"http://{user}:{password}@127.0.0.1:{self.port}"

    def targets(self) -> list[str]:
        with self._lock:
            return [line.split(" ")[1] for line, _headers in self.requests]

    def _spawn(self, target: object, name: str, *args: object) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)  # type: ignore[arg-type]
        with self._lock:
            self._threads.append(thread)
        thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self._sockets.append(conn)
            self._spawn(self._serve, "test-proxy-tunnel", conn)

    def _serve(self, conn: socket.socket) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            try:
                chunk = conn.recv(4096)
            except OSError:
                return
            if not chunk:
                return
            head += chunk
        text = head.split(b"\r\n\r\n", 1)[0].decode("latin-1")
        line, *fields = text.split("\r\n")
        headers = {name.strip().lower(): value.strip() for name, _, value in (f.partition(":") for f in fields)}
        with self._lock:
            self.requests.append((line, headers))
        if self._credentials is not None:
            expected = "Basic " + base64.b64encode(":".join(self._credentials).encode()).decode()
            if headers.get("proxy-authorization") != expected:
                conn.sendall(
                    b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=t\r\n"
                    b"Content-Length: 0\r\n\r\n"
                )
                return
        if self._status is not None:
            conn.sendall(f"HTTP/1.1 {self._status} Refused\r\nContent-Length: 0\r\n\r\n".encode())
            return
        port = int(line.split(" ")[1].rsplit(":", 1)[1])
        try:
            upstream = socket.create_connection(("127.0.0.1", port), timeout=5)
        except OSError:
            conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            return
        with self._lock:
            self._sockets.append(upstream)
        upstream.settimeout(None)
        conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        try:
            self._pipe(conn, upstream)
        finally:
            for sock in (conn, upstream):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def _pipe(self, one: socket.socket, other: socket.socket) -> None:
        peers = {one: other, other: one}
        with selectors.DefaultSelector() as selector:
            for sock in peers:
                selector.register(sock, selectors.EVENT_READ)
            while not self._stop.is_set():
                for key, _ in selector.select(0.05):
                    sock = key.fileobj
                    assert isinstance(sock, socket.socket)
                    try:
                        data = sock.recv(65536)
                        if not data:
                            return
                        peers[sock].sendall(data)
                    except OSError:
                        return

    def close(self) -> None:
        self._stop.set()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes accept()
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            sockets, threads = list(self._sockets), list(self._threads)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()
        for thread in threads:
            thread.join(5)
