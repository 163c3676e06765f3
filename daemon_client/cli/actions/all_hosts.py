"""``agents --all-hosts``: the agents of every stored host, read at once, with a HOST column.

Every host of the :class:`~daemon_client.discovery.store.HostStore` is followed by one
:class:`~daemon_client.fleet.Fleet` (no reconnects: one attempt round each, bounded by
``--timeout``); each connected host's directory is read, every page, on its own thread, so a
host that is down or slow delays no other. Hosts that did not answer are named on standard
error and make the status 3; the others are printed. Main thread, plus one thread per host.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from daemon_client.cli.context import CommandContext
from daemon_client.cli.exit_codes import OK, UNREACHABLE, USAGE, CliError
from daemon_client.cli.json_render import model_json
from daemon_client.cli.render import agent_row, marks_for, table, unicode_marks_text
from daemon_client.cli.stored import store_error
from daemon_client.client import Client
from daemon_client.config import ReconnectPolicy
from daemon_client.protocol.agents import AgentEntry
from daemon_client.protocol.directory import AgentFilter

PageReader = Callable[[Client, AgentFilter | None, int | None, float], list[AgentEntry]]


def list_all_hosts(
    args: argparse.Namespace, ctx: CommandContext, filter_: AgentFilter | None, read_pages: PageReader
) -> int:
    if args.watch:
        raise CliError("--all-hosts lists once; to follow several hosts use dc.Fleet (docs/hosts.md)", USAGE)
    if getattr(args, "host", None) is not None:
        raise CliError("--all-hosts reads every stored host: leave out --host", USAGE)
    from daemon_client.discovery.store import HostStore, HostStoreError
    from daemon_client.fleet import Fleet
    from daemon_client.fleet.fleet import in_parallel

    try:
        hosts = HostStore().load()
    except HostStoreError as exc:
        raise store_error(exc) from None
    if not hosts:
        raise CliError("no stored hosts: add one with daemon-client hosts add NAME ADDRESS", USAGE)
    deadline = time.monotonic() + ctx.timeout
    with Fleet(hosts, reconnect=ReconnectPolicy(enabled=False), connect_timeout=ctx.timeout) as fleet:

        def read(label: str) -> list[AgentEntry]:
            fleet[label].connect(max(0.1, deadline - time.monotonic()))
            return read_pages(fleet[label], filter_, args.limit, max(0.1, deadline - time.monotonic()))

        done = in_parallel(fleet.hosts, read, ctx.timeout + 1.0, "all-hosts")  # a result or an error per host
    rows: list[tuple[str, AgentEntry]] = []
    failed = 0
    for host in hosts:
        found = done.get(host.label)
        if isinstance(found, list):
            rows.extend((host.label, entry) for entry in found)
            continue
        failed += 1
        why = found if found is not None else f"no answer within {ctx.timeout:g} s"
        ctx.notes.note(f"host {host.label}: unreachable: {why}")
    if ctx.json:
        documents: list[Any] = []
        for label, entry in rows:
            document = model_json(entry)
            document["host"] = label
            documents.append(document)
        ctx.out.json_document(documents)
    else:
        marks = marks_for(ctx.out.encodes(unicode_marks_text()))
        ctx.out.line(
            table(
                ([label, *agent_row(e.agent, marks)] for label, e in rows),
                ["HOST", "STATUS", "TITLE", "PROVIDER", "ID"],
            )
        )
    return UNREACHABLE if failed else OK
