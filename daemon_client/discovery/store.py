"""The host store: :class:`~daemon_client.discovery.profiles.Host` profiles kept in a TOML file.

:class:`HostStore` reads and changes ``hosts.toml`` (where: :func:`default_path`; the file
itself: :mod:`~daemon_client.discovery.store_file`). A host is a ``[[host]]`` table (``label``,
``server_id``, ``preferred``: a connection id) with ``[[host.connection]]`` tables
(``address``, ``password``). Keys it does not know are ignored. A host entry it cannot read is
skipped with a warning, and then every change is refused until it is fixed, so that nothing is
dropped from the file unseen.

:meth:`HostStore.add` merges as the Paseo app does: a connection reaching a daemon whose
``serverId`` a stored host has goes to that host (whatever label was asked for); else to the
host with that label (refused when both ``serverId`` values are known and differ); else it
makes a new host. A connection the host has already (same connection id) is not added twice.

Any thread or process may use a store at once: every change is a read-modify-write under the
store's lock, and the file is replaced atomically. Passwords and pairing offers never appear in
a message, a log record or a repr.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import attrs

from daemon_client.discovery.hosts import redact_address
from daemon_client.discovery.profiles import Address, Host, HostConnection, is_label
from daemon_client.discovery.store_file import (
    HostStoreError,
    default_path,
    emit,
    locked,
    parse,
    read_private,
    replace_atomically,
)

__all__ = [
    "HostConflict",
    "HostStore",
    "HostStoreError",
    "Merge",
    "StoredHosts",
    "UnknownHost",
    "default_path",
    "is_label",
]

_log = logging.getLogger("daemon_client.hosts.store")
T = TypeVar("T")


class UnknownHost(HostStoreError):
    """No stored host has that label; the message lists those that do."""


class HostConflict(HostStoreError):
    """The change would give a host a connection (or a ``serverId``) of another daemon."""


@attrs.frozen
class StoredHosts:
    """What one read of the store found: the hosts, and why each unreadable entry was skipped."""

    hosts: tuple[Host, ...]
    skipped: tuple[str, ...] = ()


@attrs.frozen
class Merge:
    """Where :meth:`HostStore.merge` put a connection."""

    host: Host
    """The host as stored now."""
    connection: HostConnection
    outcome: str
    """``new host``, ``added``, ``updated`` (same id, other credentials), or ``unchanged``."""
    by: str
    """``serverId`` (found by the daemon's ``serverId``), ``label``, or ``new``."""


def _text(table: Mapping[str, Any], key: str, where: str) -> str | None:
    value = table.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{where}: {key} is not a string")
    return value


def _host_from(table: object, index: int) -> Host:
    where = f"host entry {index}"
    if not isinstance(table, dict):
        raise ValueError(f"{where} is not a table")
    label = _text(table, "label", where)
    if label is not None:
        where = f"host entry {index} ({label!r})"
    raw = table.get("connection", [])
    if not isinstance(raw, list) or not all(isinstance(c, dict) for c in raw):
        raise ValueError(f"{where}: connection is not an array of tables")
    connections = []
    for number, item in enumerate(raw, 1):
        address = _text(item, "address", f"{where}, connection {number}")
        if address is None:
            raise ValueError(f"{where}, connection {number} has no address")
        password = _text(item, "password", f"{where}, connection {number}")
        try:
            connections.append(HostConnection(address, password=password))
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{where}, connection {number}: {exc}") from None
    preferred = _text(table, "preferred", where)
    try:
        host = Host(label, connections, server_id=_text(table, "server_id", where))  # type: ignore[arg-type]
        return host if preferred is None else attrs.evolve(host, preferred=host.connection(preferred))
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{where}: {exc}") from None


def _table(host: Host) -> dict[str, Any]:
    return {
        "label": host.label,
        "server_id": host.server_id,
        "preferred": host.preferred.id if host.preferred is not None else None,
        "connections": [{"address": c.stored_address(), "password": c.password} for c in host.connections],
    }


def _replace(host: Host, connection: HostConnection) -> Host:
    """``host`` with ``connection`` instead of its connection of the same id (or added)."""
    connections = [connection if c.id == connection.id else c for c in host.connections]
    if connection not in connections:
        connections.append(connection)
    new = Host(host.label, connections, server_id=host.server_id)
    return new if host.preferred is None else attrs.evolve(new, preferred=new.connection(host.preferred.id))


class HostStore:
    """The host profiles in one TOML file (default: :func:`default_path`); see the module docstring."""

    def __init__(self, path: str | Path | None = None) -> None:
        self._path = Path(path).expanduser() if path is not None else default_path()

    @property
    def path(self) -> Path:
        return self._path

    def __repr__(self) -> str:
        return f"HostStore({str(self._path)!r})"

    # ------------------------------------------------------------------ reading
    def read(self) -> StoredHosts:
        """Every readable host, and why the others were skipped (each also logged as a warning).

        Raises :class:`HostStoreError` when the file cannot be read at all: not a regular file,
        open to other users (POSIX), not TOML."""
        data = read_private(self._path)
        if data is None:
            return StoredHosts(())
        document = parse(data, self._path)
        tables = document.get("host", [])
        if not isinstance(tables, list):
            tables = [tables]
        hosts: list[Host] = []
        skipped: list[str] = []
        for index, table in enumerate(tables, 1):
            try:
                host = _host_from(table, index)
                if any(h.label == host.label for h in hosts):
                    raise ValueError(f"host entry {index}: the label {host.label!r} is used by an earlier entry")
            except ValueError as exc:
                skipped.append(str(exc))
                _log.warning("%s: %s: skipped", self._path, exc)
                continue
            hosts.append(host)
        return StoredHosts(tuple(hosts), tuple(skipped))

    def load(self) -> list[Host]:
        """Every readable host, in the file's order (see :meth:`read`)."""
        return list(self.read().hosts)

    def labels(self) -> list[str]:
        return [host.label for host in self.load()]

    def get(self, label: str) -> Host:
        """The host called ``label``; :class:`UnknownHost` (listing the labels) if none is."""
        return self._find(self.load(), label)

    def _find(self, hosts: list[Host], label: str) -> Host:
        for host in hosts:
            if host.label == label:
                return host
        known = ", ".join(h.label for h in hosts) or "none"
        raise UnknownHost(f"no stored host {label!r} in {self._path} (stored hosts: {known})")

    # ------------------------------------------------------------------ changing
    def _update(self, change: Callable[[list[Host]], tuple[list[Host], T]]) -> T:
        with locked(Path(os.path.realpath(self._path))):  # one lock, whatever link leads to the file
            found = self.read()
            if found.skipped:
                raise HostStoreError(
                    f"the host store {self._path} has entries that cannot be read ({'; '.join(found.skipped)}): "
                    "fix or remove them first, nothing was changed"
                )
            hosts, result = change(list(found.hosts))
            try:
                text = emit([_table(h) for h in hosts])
            except ValueError as exc:
                raise HostStoreError(f"cannot write the host store {self._path}: {exc}") from None
            replace_atomically(self._path, text)
        return result

    def merge(
        self,
        label: str,
        connection: HostConnection | Address,
        *,
        server_id: str | None = None,
        preferred: bool = False,
    ) -> Merge:
        """Add ``connection`` to the right host (see the module docstring) and say where it went.

        ``server_id``: the daemon's, when known (e.g. from a probe); a relay offer carries its
        own. Raises :class:`HostConflict` when the host of that label is another daemon's,
        ``ValueError`` for a bad label or address."""
        connection = connection if isinstance(connection, HostConnection) else HostConnection(connection)
        Host(label, (connection,))  # the label's and connection's own checks, before the lock
        known = connection.server_id
        if server_id is not None and known is not None and server_id != known:
            raise HostConflict(f"{connection.id}: the pairing offer names the daemon {known!r}, not {server_id!r}")
        server_id = server_id or known

        def change(hosts: list[Host]) -> tuple[list[Host], Merge]:
            index, by = None, "new"
            if server_id is not None:
                index = next((i for i, h in enumerate(hosts) if h.server_id == server_id), None)
                by = "serverId" if index is not None else by
            if index is None:
                index = next((i for i, h in enumerate(hosts) if h.label == label), None)
                if index is not None:
                    by = "label"
                    other = hosts[index].server_id
                    if other is not None and server_id is not None and other != server_id:
                        raise HostConflict(
                            f"host {label!r} is the daemon {other!r}, but {connection.id} reaches {server_id!r}: "
                            "add it under another name, or remove the host first"
                        )
            if index is None:
                host = Host(label, (connection,), server_id=server_id)
                host = attrs.evolve(host, preferred=connection) if preferred else host
                hosts.append(host)
                return hosts, Merge(host, connection, "new host", by)
            old = hosts[index]
            same = next((c for c in old.connections if c.id == connection.id), None)
            outcome = "unchanged" if same == connection else "updated" if same is not None else "added"
            host = _replace(old, connection)
            if server_id is not None and host.server_id is None:
                host = host.with_server_id(server_id)
            if preferred:
                host = attrs.evolve(host, preferred=host.connection(connection.id))
            if outcome == "unchanged" and host != old:
                outcome = "updated"
            hosts[index] = host
            return hosts, Merge(host, host.connection(connection.id), outcome, by)

        return self._update(change)

    def add(
        self,
        label: str,
        address: Address,
        password: str | None = None,
        *,
        server_id: str | None = None,
        preferred: bool = False,
    ) -> Host:
        """Add a connection (``address``, with ``password`` for a direct one) and return its
        host as stored now; see :meth:`merge` for where it goes."""
        return self.merge(
            label, HostConnection(address, password=password), server_id=server_id, preferred=preferred
        ).host

    def remove(self, label: str) -> Host:
        """Remove the host called ``label``; returns it. :class:`UnknownHost` if there is none."""

        def change(hosts: list[Host]) -> tuple[list[Host], Host]:
            host = self._find(hosts, label)
            return [h for h in hosts if h is not host], host

        return self._update(change)

    def remove_connection(self, label: str, connection_id: str) -> Host | None:
        """Remove one connection (by id, or address) of host ``label``; returns the host as
        stored now, ``None`` when that was its last connection and the host was removed."""

        def change(hosts: list[Host]) -> tuple[list[Host], Host | None]:
            host = self._find(hosts, label)
            try:
                gone = host.connection(connection_id)
            except ValueError:
                ids = ", ".join(c.id for c in host.connections)
                raise HostStoreError(
                    f"host {label!r} has no connection {redact_address(connection_id)} (its connections: {ids})"
                ) from None
            rest = [c for c in host.connections if c is not gone]
            if not rest:
                return [h for h in hosts if h is not host], None
            preferred = host.preferred if host.preferred is not gone else None
            kept = Host(host.label, rest, preferred=preferred, server_id=host.server_id)
            return [kept if h is host else h for h in hosts], kept

        return self._update(change)

    def set_server_id(self, label: str, server_id: str) -> Host:
        """Record the ``serverId`` of host ``label`` (learned at a connection). :class:`HostConflict`
        if the host has another one already."""

        def change(hosts: list[Host]) -> tuple[list[Host], Host]:
            host = self._find(hosts, label)
            if host.server_id is not None and host.server_id != server_id:
                raise HostConflict(f"host {label!r} is the daemon {host.server_id!r}, not {server_id!r}")
            try:
                new = host.with_server_id(server_id)
            except ValueError as exc:
                raise HostConflict(str(exc)) from None
            return [new if h is host else h for h in hosts], new

        return self._update(change)

    def set_preferred(self, label: str, connection_id: str | None) -> Host:
        """Make one connection (by id or address) of host ``label`` its preferred one; ``None``: none."""

        def change(hosts: list[Host]) -> tuple[list[Host], Host]:
            host = self._find(hosts, label)
            try:
                new = attrs.evolve(host, preferred=None if connection_id is None else host.connection(connection_id))
            except ValueError:
                ids = ", ".join(c.id for c in host.connections)
                raise HostStoreError(
                    f"host {label!r} has no connection {redact_address(str(connection_id))} (its connections: {ids})"
                ) from None
            return [new if h is host else h for h in hosts], new

        return self._update(change)
