"""``demo`` and ``serve``: options and help (work: :mod:`daemon_client.cli.actions.embedded`)."""

from __future__ import annotations

from daemon_client.cli.argtypes import port, seconds
from daemon_client.cli.parser import Registry
from daemon_client.cli.password import add_password_args

KINDS = ("capable", "selective", "broadcast")
"""``HostKind`` values (spelled out so that ``--help`` does not import the protocol package)."""


def register(registry: Registry) -> None:
    parser = registry.add(
        "demo", "run the embedded simulated daemon and watch agents live", "embedded:demo", connects=False,
        epilog="On a terminal with the 'tui' extra installed, the agents are shown in the top dashboard\n"
        "(see: daemon-client top --help); otherwise, or with --plain, as scrolling lines.\n\n"
        "example:\n  daemon-client demo --host-kind broadcast --duration 10",
    )  # fmt: skip
    parser.add_argument("--host-kind", choices=KINDS, default="capable", help="the daemon generation to imitate")
    parser.add_argument("--duration", type=seconds, metavar="SECONDS", help="stop after this many seconds")
    parser.add_argument(
        "--plain", action="store_true", help="scrolling lines instead of the dashboard, even on a terminal"
    )
    parser = registry.add(
        "serve", "run the embedded simulated daemon alone and print its URL", "embedded:serve", connects=False,
        epilog="example:\n  daemon-client serve --port 6767 &  daemon-client agents --host 6767",
    )  # fmt: skip
    parser.add_argument("--host-kind", choices=KINDS, default="capable", help="the daemon generation to imitate")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--port", type=port, default=0, help="port (default: any free port)")
    where.add_argument("--unix", metavar="PATH", help="listen on this unix socket instead of a port")
    parser.add_argument(
        "--host", dest="bind", default="127.0.0.1", help="address to listen on (default: this machine only)"
    )
    add_password_args(parser, what="a password the daemon requires")
    parser.add_argument("--certfile", help="serve TLS (wss://) with this certificate chain (PEM)")
    parser.add_argument("--keyfile", help="the private key of --certfile, if not in it")
    parser.add_argument(
        "--allow-insecure-password",
        action="store_true",
        help="serve a password without TLS on an address that is not loopback (it crosses the network in clear)",
    )
    parser.add_argument("--duration", type=seconds, metavar="SECONDS", help="stop after this many seconds")
