"""What a subcommand is handed: its arguments, its output streams, and how to connect.

A command function is ``run(args, ctx) -> int`` on the main thread. It connects with
:meth:`CommandContext.connect` (the client is built by ``main``'s factory from the connection
options, so the connection options live in one place) and never closes the client itself:
:meth:`CommandContext.close` seals the output first, then closes every client, so nothing
a callback writes while the client shuts down follows the result, and last joins the helper
threads of :meth:`CommandContext.in_background` (their blocking calls fail once the client
is closed).
"""

from __future__ import annotations

import argparse
import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, TypeVar

from daemon_client.cli.exit_codes import USAGE, CliError, ConnectFailed
from daemon_client.cli.follow import Follow
from daemon_client.cli.notes import Notes
from daemon_client.cli.output import Output
from daemon_client.errors import DaemonClientError

if TYPE_CHECKING:
    from daemon_client.client import Client

T = TypeVar("T")
JOIN_TIMEOUT = 5.0
ClientFactory = Callable[[argparse.Namespace, bool], "Client"]
"""``make_client(args, reconnect)``: a new, unconnected client of the connection options."""
ConnectHook = Callable[["Client", Notes], None]
"""``on_connect(client, notes)``: runs once the first connection succeeded (main thread)."""


class CommandContext:
    """One run of one subcommand."""

    def __init__(
        self,
        args: argparse.Namespace,
        out: Output,
        notes: Notes,
        make_client: ClientFactory,
        *,
        on_connect: ConnectHook | None = None,
    ) -> None:
        self.args = args
        self._on_connect = on_connect
        self.out = out
        self.notes = notes
        self._make_client = make_client
        self._clients: list[Client] = []
        self._threads: list[threading.Thread] = []

    @property
    def timeout(self) -> float:
        """``--timeout``: bounds the connection and every request."""
        return float(self.args.timeout)

    @property
    def json(self) -> bool:
        return bool(getattr(self.args, "json", False))

    def follow(self) -> Follow:
        """The end conditions of a long-running command, from ``--no-reconnect``/``--reconnect-timeout``."""
        no_reconnect = getattr(self.args, "no_reconnect", False)
        limit = None if no_reconnect else getattr(self.args, "reconnect_timeout", None)
        return Follow(self.out, self.notes, reconnect_timeout=limit)

    def connect(self, *, announce: Callable[[Client], None] | None = None) -> Client:
        """Build the client and connect it; ``announce(client)`` runs before connecting.

        Raises :class:`ConnectFailed` (status 3 or 4) if the first connection fails.
        """
        from daemon_client.cli.password import PROMPTS, can_prompt, prompt_password
        from daemon_client.errors import AuthenticationError, InsecureCredentials

        prompts = 0
        while True:
            client = self._make_client(self.args, not getattr(self.args, "no_reconnect", False))
            self._clients.append(client)
            unsupported = client.resolution.target.unsupported()
            if unsupported is not None:
                raise CliError(f"bad daemon address: {unsupported}", USAGE)
            if announce is not None and prompts == 0:
                announce(client)
            try:
                client.connect()
            except AuthenticationError as exc:  # refused password: ask for it on a terminal (getpass)
                client.close()
                if isinstance(exc, InsecureCredentials) or prompts >= PROMPTS or not can_prompt(self.args):
                    raise ConnectFailed(client.url, exc) from None
                prompts += 1
                self.args.password = prompt_password(client.url)
                continue
            except DaemonClientError as exc:
                raise ConnectFailed(client.url, exc) from None
            if self._on_connect is not None:
                self._on_connect(client, self.notes)
            return client

    def in_background(self, function: Callable[[], T], name: str) -> Future[T]:
        """Run a blocking call on a helper thread, so that the main thread can stop waiting for
        it (Ctrl-C, a closed pipe); the thread is joined by :meth:`close`."""
        future: Future[T] = Future()

        def call() -> None:
            try:
                future.set_result(function())
            except BaseException as exc:  # noqa: BLE001 - handed to the main thread
                future.set_exception(exc)

        thread = threading.Thread(target=call, name=f"daemon-client-{name}", daemon=True)
        self._threads.append(thread)
        thread.start()
        return future

    def close(self) -> None:
        """Seal the output, close every client, then join the helper threads (all bounded)."""
        self.out.seal()
        for client in self._clients:
            with contextlib.suppress(Exception):
                client.close()
        self._clients.clear()
        for thread in self._threads:
            thread.join(JOIN_TIMEOUT)
        self._threads.clear()
