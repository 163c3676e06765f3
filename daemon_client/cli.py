"""The ``daemon-client`` command: ``demo``, ``serve`` and ``info``.

Runs on the main thread; the client's own threads deliver nothing here but state
changes. Errors print one line and exit non-zero, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from collections.abc import Sequence

from daemon_client.client import Client
from daemon_client.config import DEFAULT_URL
from daemon_client.errors import (
    AuthenticationError,
    ConnectionLost,
    ConnectTimeout,
    DaemonClientError,
    ProtocolError,
)
from daemon_client.protocol.hosts import HostKind
from daemon_client.protocol.models import ServerInfo

EXIT_ERROR = 2


def _describe(info: ServerInfo, client: Client) -> str:
    kind = client.host_kind.value if client.host_kind else "unknown"
    flags = ", ".join(sorted(name for name, on in info.features.items() if on)) or "none"
    return (
        f"daemon   {info.version or 'unknown version'} on {info.hostname or 'unknown host'} (server {info.server_id})\n"
        f"host     {kind}\n"
        f"features {flags}"
    )


def _show(url: str, password: str | None) -> int:
    with Client(url, password=password) as client:
        info = client.server_info
        assert info is not None
        print(f"connected to {url}")
        print(_describe(info, client))
        print(f"ping     {client.ping().round_trip * 1000:.2f} ms")  # type: ignore[operator]
    return 0


def _start_fake(kind: str, port: int) -> tuple[object, str]:
    try:
        from daemon_client.testing.fake_daemon import FakeDaemon

        fake = FakeDaemon(host_kind=HostKind(kind))
        url = fake.serve(port=port)
    except ImportError as exc:
        raise SystemExit(
            f"daemon-client: the embedded daemon needs the 'demo' extra ({exc.name} is missing): "
            "pip install 'daemon-client[demo]'"
        ) from None
    return fake, url


def cmd_demo(args: argparse.Namespace) -> int:
    fake, url = _start_fake(args.host_kind, 0)
    try:
        print(f"embedded demo daemon ({args.host_kind} host) at {url}")
        return _show(url, None)
    finally:
        fake.close()  # type: ignore[attr-defined]


def cmd_serve(args: argparse.Namespace) -> int:
    fake, url = _start_fake(args.host_kind, args.port)
    print(f"fake daemon ({args.host_kind} host) listening at {url}; Ctrl-C to stop", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        fake.close()  # type: ignore[attr-defined]
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    return _show(args.url, args.password)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="daemon-client", description="Talk to a Paseo daemon.")
    sub = parser.add_subparsers(dest="command", required=True)
    kinds = [kind.value for kind in HostKind]

    demo = sub.add_parser("demo", help="start an embedded fake daemon and show what the client sees")
    demo.add_argument("--host-kind", choices=kinds, default="capable")
    demo.set_defaults(func=cmd_demo)

    serve = sub.add_parser("serve", help="run the embedded fake daemon alone and print its URL")
    serve.add_argument("--host-kind", choices=kinds, default="capable")
    serve.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: any free port)")
    serve.set_defaults(func=cmd_serve)

    info = sub.add_parser("info", help="connect to a daemon and print its server_info")
    info.add_argument("--url", default=os.environ.get("PASEO_URL", DEFAULT_URL))
    info.add_argument("--password", default=os.environ.get("PASEO_PASSWORD"))
    info.set_defaults(func=cmd_info)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.func(args)
    except AuthenticationError as exc:
        print(f"daemon-client: authentication failed: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except (ConnectionLost, ConnectTimeout) as exc:
        print(f"daemon-client: cannot connect: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except ProtocolError as exc:
        print(f"daemon-client: protocol error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except DaemonClientError as exc:
        print(f"daemon-client: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    return code
