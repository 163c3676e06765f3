"""``hosts add/ls/rm/probe``: options and help (work: :mod:`daemon_client.cli.actions.hosts`)."""

from __future__ import annotations

import argparse

from daemon_client.cli.argtypes import seconds
from daemon_client.cli.parser import Registry, json_arg

PROBE_TIMEOUT = 3.0


def _timeout(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--timeout", type=seconds, default=PROBE_TIMEOUT, metavar="SECONDS",
        help=f"bound on probing each connection (a handshake and a ping), in seconds (default {PROBE_TIMEOUT:g})",
    )  # fmt: skip


def register(registry: Registry) -> None:
    group = registry.add_group("hosts", "stored hosts (daemons and their connections): add, ls, rm, probe")
    add = group.add(
        "add", "store a connection of a host (merged by serverId, else by name)", "hosts:add", connects=False,
        epilog="The connection is probed first to learn its daemon's serverId: a connection to a daemon\n"
               "already stored goes to that host, whatever NAME says.\n\n"
               "examples:\n  daemon-client hosts add laptop 192.168.1.20:6767 --password-stdin < pw.txt\n"
               "  daemon-client hosts add laptop 'https://app.paseo.sh/#offer=…'\n"
               "  daemon-client agents --host laptop",
    )  # fmt: skip
    add.add_argument("name", metavar="NAME", help="the host's label, e.g. laptop (not an address: no ':' or '/')")
    add.add_argument(
        "address", metavar="ADDRESS|OFFER-LINK",
        help="host:port, tcp://host:port?ssl=true, ws(s)://…, /path.sock, or a pairing-offer link",
    )  # fmt: skip
    add.add_argument(
        "--password-stdin", action="store_true", help="read the connection's password from the first line of stdin"
    )
    add.add_argument("--preferred", action="store_true", help="use this connection whenever it answers")
    add.add_argument("--no-probe", action="store_true", help="store it without probing (its serverId stays unknown)")
    _timeout(add)
    ls = group.add(
        "ls", "list the stored hosts, their connections and which one a client would use", "hosts:ls", connects=False
    )
    json_arg(ls, "the hosts")
    ls.add_argument("--no-probe", action="store_true", help="do not probe: show the stored hosts only")
    _timeout(ls)
    rm = group.add("rm", "remove a stored host, or one of its connections", "hosts:rm", connects=False)
    rm.add_argument("name", metavar="NAME", help="the host's label")
    rm.add_argument(
        "connection", nargs="?", metavar="CONNECTION-ID",
        help="only this connection (e.g. direct:127.0.0.1:6767, see hosts ls); the last one removes the host",
    )  # fmt: skip
    probe = group.add(
        "probe", "probe every connection of the stored hosts (or of one); status 3 if a host has none answering",
        "hosts:probe_hosts", connects=False,
    )  # fmt: skip
    probe.add_argument("name", nargs="?", metavar="NAME", help="only this host")
    json_arg(probe, "the hosts and what each probe found")
    _timeout(probe)
