"""``hosts add/ls/rm/probe``: the host store (:class:`~daemon_client.discovery.store.HostStore`).

``add`` probes the new connection (bounded by ``--timeout``) to learn its daemon's
``serverId``, then merges it into the store; a connection that does not answer is stored
anyway, with a warning. ``ls`` and ``probe`` probe every connection of every host at once
(at most :data:`PARALLEL_HOSTS` hosts at a time, each probe bounded), show which connection a
client would use (the preferred one if it answers, else the fastest), and record a
``serverId`` learned for a host that had none. Connections are shown by their ids and URLs:
passwords and pairing offers are never printed. The main thread runs the command; the probes
run on short-lived pool threads, all joined before it returns.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from daemon_client.cli.context import CommandContext
from daemon_client.cli.exit_codes import OK, UNREACHABLE, USAGE, CliError
from daemon_client.cli.stored import store_error
from daemon_client.client.probe import probe, probe_host
from daemon_client.discovery.failover import Probe, rank
from daemon_client.discovery.profiles import Host, HostConnection
from daemon_client.discovery.store import HostStore, HostStoreError

PARALLEL_HOSTS = 8


def _read_password() -> str:
    password = sys.stdin.readline().split("\n", 1)[0].removesuffix("\r")
    if not password:
        raise CliError("--password-stdin: no password on the first line of standard input", USAGE)
    return password


def _server(server_id: str | None) -> str:
    return server_id if server_id is not None else "serverId unknown"


def add(args: argparse.Namespace, ctx: CommandContext) -> int:
    password = _read_password() if args.password_stdin else None
    try:
        Host(args.name, ("127.0.0.1:1",))
        connection = HostConnection(args.address, password=password)
    except ValueError as exc:
        raise CliError(str(exc), USAGE) from None
    server_id = None
    if not args.no_probe:
        found = probe(connection, ctx.timeout)
        if found.ok:
            server_id = found.server_id
            if connection.server_id is not None and server_id != connection.server_id:
                raise CliError(
                    f"{connection.id}: the pairing offer names the daemon {connection.server_id!r}, "
                    f"but {server_id!r} answered; nothing was stored"
                )
        else:
            ctx.notes.note(
                f"warning: {connection.id} did not answer ({found.describe()}); stored without checking its serverId"
            )
    store = HostStore()
    try:
        merge = store.merge(args.name, connection, server_id=server_id, preferred=args.preferred)
    except HostStoreError as exc:
        raise store_error(exc) from None
    host = merge.host
    where = f"{host.label} ({_server(host.server_id)})"
    if merge.outcome == "unchanged":
        text = f"{connection.id} is already a connection of {where}"
    elif merge.outcome == "updated":
        text = f"updated {connection.id} of {where}"
    else:
        text = f"added {connection.id} to {where}"
        if merge.outcome == "new host":
            text += ", a new host"
    if merge.by == "serverId" and host.label != args.name:
        text += f": the daemon is stored as {host.label!r} already"
    if args.preferred:
        text += "; it is the preferred connection"
    ctx.out.line(text)
    return OK


def rm(args: argparse.Namespace, ctx: CommandContext) -> int:
    store = HostStore()
    try:
        if args.connection is None:
            store.remove(args.name)
            ctx.out.line(f"removed host {args.name}")
            return OK
        try:
            gone = store.get(args.name).connection(args.connection).id
        except ValueError:
            gone = args.connection  # remove_connection says which connections the host has
        left = store.remove_connection(args.name, args.connection)
    except HostStoreError as exc:
        raise store_error(exc) from None
    suffix = "" if left is not None else f", its last connection: host {args.name} is removed"
    ctx.out.line(f"removed {gone} from {args.name}{suffix}")
    return OK


def _probe_hosts(hosts: list[Host], timeout: float) -> dict[str, list[Probe]]:
    """Every connection of every host probed, at most :data:`PARALLEL_HOSTS` hosts at a time."""
    if not hosts:
        return {}
    rounds = -(-len(hosts) // PARALLEL_HOSTS)
    deadline = time.monotonic() + rounds * (timeout + 6.0)
    results: dict[str, list[Probe]] = {}
    with ThreadPoolExecutor(
        max_workers=min(PARALLEL_HOSTS, len(hosts)), thread_name_prefix="daemon-client-hosts"
    ) as pool:
        futures = [(host, pool.submit(probe_host, host, timeout)) for host in hosts]
        for host, future in futures:
            try:
                results[host.label] = future.result(max(0.0, deadline - time.monotonic()))
            except FutureTimeout:
                results[host.label] = [Probe(c, False, error="no answer in time") for c in host.connections]
    return results


def _learned(host: Host, probes: list[Probe], store: HostStore, ctx: CommandContext) -> Host:
    """``host`` with the ``serverId`` its answering connections agree on, recorded if it was unknown."""
    if host.server_id is not None:
        return host
    found = {p.server_id for p in probes if p.ok and p.server_id is not None}
    if len(found) > 1:
        ctx.notes.note(
            f"warning: the connections of host {host.label} reach different daemons: {', '.join(sorted(found))}"
        )
        return host
    if not found:
        return host
    server_id = found.pop()
    try:
        store.set_server_id(host.label, server_id)
    except HostStoreError as exc:
        ctx.notes.note(f"warning: the serverId of host {host.label!r} was not recorded: {exc}")
    return host.with_server_id(server_id)  # the same connection values: the probes still name them


def _active(host: Host, probes: list[Probe] | None) -> HostConnection | None:
    if not probes:
        return None
    order, _why = rank(host, probes)
    by = {id(p.connection): p for p in probes}
    first = order[0] if order else None
    return first if first is not None and by.get(id(first), Probe(first, False)).ok else None


def _probe_json(found: Probe | None) -> dict[str, Any] | None:
    if found is None:
        return None
    latency = round(found.latency * 1000, 3) if found.ok and found.latency is not None else None
    return {"ok": found.ok, "latencyMs": latency, "serverId": found.server_id, "error": found.error}


def _host_json(host: Host, probes: list[Probe] | None) -> dict[str, Any]:
    active = _active(host, probes)
    by = {id(p.connection): p for p in probes or []}
    return {
        "label": host.label,
        "serverId": host.server_id,
        "preferred": host.preferred.id if host.preferred is not None else None,
        "active": active.id if active is not None else None,
        "connections": [
            {
                "id": c.id,
                "url": c.url,
                "kind": c.kind.value,
                "hasPassword": c.effective_password is not None,
                "preferred": c is host.preferred,
                "active": c is active,
                "probe": _probe_json(by.get(id(c))) if probes is not None else None,
            }
            for c in host.connections
        ],
    }


def _host_lines(host: Host, probes: list[Probe] | None) -> list[tuple[str, ...]]:
    """The host's heading, then one row per connection: mark and id, URL, probe, preferred."""
    active = _active(host, probes)
    by = {id(p.connection): p for p in probes or []}
    rows: list[tuple[str, ...]] = [(f"{host.label}  {_server(host.server_id)}",)]
    for c in host.connections:
        mark = "*" if c is active else " "
        status = by[id(c)].describe() if id(c) in by else ""
        rows.append((f"  {mark} {c.id}", c.url, status, "preferred" if c is host.preferred else ""))
    return rows


def _table(rows: list[tuple[str, ...]]) -> str:
    """The rows, the connection columns aligned (``*`` marks the connection a client would use)."""
    if all(not row[2] for row in rows if len(row) > 1):  # not probed: no status column
        rows = [row if len(row) == 1 else (row[0], row[1], row[3]) for row in rows]
    cells = [row for row in rows if len(row) > 1]
    columns = max((len(row) for row in cells), default=1)
    widths = [max((len(row[i]) for row in cells), default=0) for i in range(columns)]
    lines = []
    for row in rows:
        if len(row) == 1:
            lines.append(row[0])
        else:
            lines.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
    return "\n".join(lines)


def _report(args: argparse.Namespace, ctx: CommandContext, *, probing: bool, only: str | None) -> int:
    store = HostStore()
    try:
        found = store.read()
        hosts = list(found.hosts) if only is None else [store.get(only)]
    except HostStoreError as exc:
        raise store_error(exc) from None
    for why in found.skipped:
        ctx.notes.note(f"warning: {store.path}: {why}: skipped")
    if not hosts:
        ctx.notes.note(f"no stored hosts in {store.path} (add one: daemon-client hosts add NAME ADDRESS)")
    results = _probe_hosts(hosts, ctx.timeout) if probing else {}
    if probing:
        hosts = [_learned(h, results[h.label], store, ctx) for h in hosts]
    if ctx.json:
        ctx.out.json_document([_host_json(h, results.get(h.label) if probing else None) for h in hosts])
    elif hosts:
        rows = [row for h in hosts for row in _host_lines(h, results.get(h.label) if probing else None)]
        ctx.out.line(_table(rows))
    unreachable = [h.label for h in hosts if probing and _active(h, results[h.label]) is None]
    if unreachable and args.hosts_command == "probe":
        ctx.notes.note(f"no connection answered for: {', '.join(unreachable)}")
        return UNREACHABLE
    return OK


def ls(args: argparse.Namespace, ctx: CommandContext) -> int:
    return _report(args, ctx, probing=not args.no_probe, only=None)


def probe_hosts(args: argparse.Namespace, ctx: CommandContext) -> int:
    return _report(args, ctx, probing=True, only=args.name)
