"""``top``: the dashboard of :mod:`daemon_client.tui` on the hosts the options name.

Which hosts: ``--host NAME`` a stored host, ``--host ADDRESS`` that daemon; without ``--host``
every stored host, or when none is stored the daemon found as usual (``PASEO_HOST``, the pid
file, ...), each as a one-connection :class:`~daemon_client.Host`. Without Textual the command
says how to install it and exits with status 2; Textual is imported only here, when ``top`` (or
``demo`` on a terminal) runs. Opening a terminal from the dashboard runs ``daemon-client
attach`` in the foreground (a child process) while the dashboard is suspended. Main thread.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from daemon_client.cli.context import CommandContext
from daemon_client.cli.exit_codes import OK, USAGE, CliError
from daemon_client.cli.stored import store_error, stored_host

if TYPE_CHECKING:
    from daemon_client.discovery.profiles import Host

INSTALL = "pip install 'daemon-client[tui]'"
DISCOVERED = "daemon"
"""The label of the daemon followed when no host is stored or named."""


def load_app() -> Any:
    """The :class:`~daemon_client.tui.TopApp` class; a usage error naming the extra without Textual."""
    try:
        from daemon_client.tui import TopApp
    except ImportError as exc:  # MissingExtra is one
        missing = getattr(exc, "name", None) or "textual"
        raise CliError(f"top needs the 'tui' extra ({missing} is missing): {INSTALL}", USAGE) from None
    return TopApp


def tui_available() -> bool:
    """Whether the dashboard can run here (Textual importable)."""
    try:
        load_app()
    except CliError:
        return False
    return True


def _hosts(args: argparse.Namespace) -> tuple[list[Host], dict[str, str]]:
    """The hosts to follow, and for each the ``--host`` value that reaches it (for ``attach``)."""
    from daemon_client.discovery.profiles import Host, HostConnection
    from daemon_client.discovery.resolve import resolve
    from daemon_client.discovery.store import HostStore, HostStoreError

    if args.host is not None:
        if args.all_hosts:
            raise CliError("--all-hosts follows every stored host: leave out --host", USAGE)
        host = stored_host(args.host)
        if host is not None:
            return [host], {host.label: host.label}
        address = str(args.host)
    else:
        try:
            stored = HostStore().load()
        except HostStoreError as exc:
            raise store_error(exc) from None
        if stored:
            return stored, {host.label: host.label for host in stored}
        if args.all_hosts:
            raise CliError("no stored hosts: add one with daemon-client hosts add NAME ADDRESS", USAGE)
        try:
            resolution = resolve(None)
        except ValueError as exc:
            raise CliError(f"bad daemon address: {exc}", USAGE) from None
        address = os.environ.get("PASEO_HOST", "").strip() if resolution.source == "PASEO_HOST" else ""
        address = address or resolution.target.url
    try:
        connection = HostConnection(address)
        if args.password is not None and not connection.id.startswith("relay:"):
            connection = HostConnection(address, password=args.password)
        return [Host(DISCOVERED, [connection])], {DISCOVERED: address}
    except ValueError as exc:
        raise CliError(f"bad daemon address: {exc}", USAGE) from None


def attach_runner(where: Mapping[str, str], password: str | None) -> Callable[[str, str], object]:
    """``attach(host, terminal_id)``: ``daemon-client attach`` in the foreground, this terminal its screen."""

    def attach(host: str, terminal_id: str) -> object:
        env = dict(os.environ)
        if password is not None:
            env["PASEO_PASSWORD"] = password
        command = [sys.executable, "-m", "daemon_client", "attach", "--host", where[host], terminal_id]
        return subprocess.run(command, env=env, check=False).returncode

    return attach


def dashboard(
    hosts: list[Host],
    where: Mapping[str, str],
    *,
    password: str | None = None,
    timeout: float = 15.0,
    duration: float | None = None,
) -> int:
    """Run the dashboard on this terminal until it quits."""
    top_app = load_app()
    app = top_app(
        hosts,
        attach=attach_runner(where, password),
        duration=duration,
        open_timeout=timeout,
        connect_timeout=timeout,
        request_timeout=timeout,
    )
    app.run()
    return OK


def top(args: argparse.Namespace, ctx: CommandContext) -> int:
    load_app()
    hosts, where = _hosts(args)
    if not ctx.out.isatty():
        raise CliError("top draws on a terminal and standard output is not one (scripts: agents --watch)", USAGE)
    return dashboard(hosts, where, password=args.password, timeout=ctx.timeout, duration=args.duration)
