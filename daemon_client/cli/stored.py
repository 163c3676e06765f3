"""Stored hosts on the command line: ``--host NAME``, ``tail NAME:AGENT``, and the ``serverId`` written back.

A ``--host`` value that can be a host's label (labels never look like addresses) names a host
of the :class:`~daemon_client.discovery.store.HostStore`; the client is then made for that
:class:`~daemon_client.discovery.profiles.Host`. When such a client learns the daemon's
``serverId`` at its first connection and the store had none, it is written back. Main thread.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from daemon_client.cli.exit_codes import FAILED, USAGE, CliError
from daemon_client.cli.notes import Notes

if TYPE_CHECKING:
    from daemon_client.client import Client
    from daemon_client.discovery.profiles import Host


def store_error(exc: Exception) -> CliError:
    """The CLI's error for a failure of the host store: an unknown host is a usage error."""
    from daemon_client.discovery.store import UnknownHost

    return CliError(str(exc), USAGE if isinstance(exc, UnknownHost) else FAILED)


def stored_host(value: str | None) -> Host | None:
    """The stored host ``value`` names; ``None`` when ``value`` is an address (or not given).

    A value that can only be a label but names no stored host is a usage error."""
    if value is None:
        return None
    from daemon_client.discovery.profiles import is_label

    name = value.strip()
    if not is_label(name):  # an address: the store is not read (nor imported)
        return None
    from daemon_client.discovery.store import HostStore, HostStoreError

    store = HostStore()
    try:
        hosts = store.load()
    except HostStoreError as exc:
        raise store_error(exc) from None
    for host in hosts:
        if host.label == name:
            return host
    known = ", ".join(h.label for h in hosts) or "none"
    raise CliError(
        f"bad daemon address: {name!r} is neither a stored host (stored hosts: {known}; see daemon-client hosts ls) "
        "nor an address (host:port, a port, /path.sock, unix:///path, tcp://host:port, ws://host:port/ws "
        "or a pairing-offer link)",
        USAGE,
    )


def split_host_agent(args: argparse.Namespace, notes: Notes) -> None:
    """``tail NAME:AGENT``: when ``NAME`` is a stored host's label, ``args.host`` becomes it
    and ``args.agent`` the rest; otherwise ``args`` is left as it is."""
    prefix, colon, agent = str(args.agent).partition(":")
    if not colon:
        return
    from daemon_client.discovery.store import HostStore, HostStoreError, is_label

    if not is_label(prefix):
        return
    try:
        labels = HostStore().labels()
    except HostStoreError as exc:
        notes.note(f"warning: {args.agent!r} is read as an agent name: {exc}")
        return
    if prefix not in labels:
        return
    if args.host is not None:
        raise CliError(f"{args.agent!r} names the stored host {prefix!r}, and so does --host: give only one", USAGE)
    if not agent:
        raise CliError(f"{args.agent!r}: no agent after the host's name (NAME:AGENT)", USAGE)
    args.host, args.agent = prefix, agent


def remember_server_id(client: Client, notes: Notes) -> None:
    """After a stored host's client connected: record the ``serverId`` it learned, if the
    store had none (a store that cannot be written is a warning, never a failure)."""
    host = client.host
    if host is None or host.server_id is None:
        return
    from daemon_client.discovery.store import HostStore, HostStoreError

    store = HostStore()
    try:
        stored = store.get(host.label)
        if stored.server_id is None:
            store.set_server_id(host.label, host.server_id)
    except HostStoreError as exc:
        notes.note(f"warning: the serverId of host {host.label!r} was not recorded: {exc}")
