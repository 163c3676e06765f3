"""``demo`` and ``serve``: the embedded simulated daemon (the ``demo`` extra) on loopback.

``serve`` prints the daemon's URL and waits; ``demo`` also shows its agents live: on a terminal
with Textual installed, in the ``top`` dashboard (:mod:`daemon_client.cli.actions.top`);
otherwise (or with ``--plain``) as plain scrolling output that never erases what it printed:
the agent directory, then one line per change, and one agent's timeline, printed from the
client's callback thread. The fake daemon's threads are stopped and joined on exit.
"""

from __future__ import annotations

import argparse
import contextlib
import ssl
from collections.abc import Iterator
from typing import Any

from daemon_client.cli.context import CommandContext
from daemon_client.cli.exit_codes import OK, USAGE, CliError
from daemon_client.cli.live import LiveAgents
from daemon_client.cli.printer import MessagePrinter
from daemon_client.cli.render import marks_for, unicode_marks_text
from daemon_client.client import Client
from daemon_client.protocol.hosts import HostKind
from daemon_client.transport.handshake_policy import is_loopback_host


@contextlib.contextmanager
def embedded(
    kind: str,
    port: int = 0,
    unix_path: str | None = None,
    *,
    serving: dict[str, Any] | None = None,
    password: str | None = None,
) -> Iterator[tuple[str, list[str]]]:
    """The simulated daemon (on loopback unless ``serving["host"]`` says otherwise, or on the unix
    socket ``unix_path``); yields its URL and its agents' IDs. ``serving`` holds the other
    ``FakeDaemon.serve`` options."""
    try:
        from daemon_client.testing.fake.daemon import FakeDaemon
        from daemon_client.testing.simulation import Simulation
    except ImportError as exc:
        raise CliError(
            f"the embedded daemon needs the 'demo' extra ({exc.name} is missing): pip install 'daemon-client[demo]'"
        ) from None
    fake = FakeDaemon(host_kind=HostKind(kind), password=password)
    try:
        try:
            url = fake.serve(port=port, unix_path=unix_path, **(serving or {}))
        except ImportError as exc:
            raise CliError(
                f"the embedded daemon needs the 'demo' extra ({exc.name} is missing): pip install 'daemon-client[demo]'"
            ) from None
        except OSError as exc:
            where = unix_path or f"{(serving or {}).get('host', '127.0.0.1')}:{port}"
            raise CliError(f"cannot listen on {where}: {exc.strerror or exc}") from None
        except ValueError as exc:  # e.g. a password without TLS off loopback: the options are wrong
            raise CliError(f"cannot serve: {exc}", USAGE) from None
        simulation = Simulation(fake, varied=True).start()
        try:
            yield url, simulation.agent_ids
        finally:
            simulation.stop()
    finally:
        fake.close()


def _server_context(args: argparse.Namespace) -> ssl.SSLContext | None:
    if args.certfile is None:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(args.certfile, args.keyfile)
    except (OSError, ssl.SSLError) as exc:
        raise CliError(f"cannot load the TLS certificate {args.certfile}: {exc}") from None
    return context


def serve(args: argparse.Namespace, ctx: CommandContext) -> int:
    serving = {
        "host": args.bind,
        "ssl_context": _server_context(args),
        "allow_insecure_password": args.allow_insecure_password,
    }
    if args.unix is None and not is_loopback_host(args.bind):  # the library's WARNING is hidden without -v
        ctx.notes.note(
            f"serving on {args.bind}, which is not a loopback address: anyone who can reach it can drive "
            "this fake daemon" + ("" if serving["ssl_context"] else " (and read its traffic: no TLS)")
        )
    with embedded(args.host_kind, args.port, args.unix, serving=serving, password=args.password) as (url, _):
        ctx.out.line(f"simulated daemon ({args.host_kind} host) listening at {url}; Ctrl-C to stop")
        return ctx.follow().wait(args.duration)


def demo(args: argparse.Namespace, ctx: CommandContext) -> int:
    if not args.plain and ctx.out.isatty():
        from daemon_client.cli.actions.top import dashboard, tui_available

        if tui_available():
            from daemon_client.discovery.profiles import Host

            with embedded(args.host_kind) as (url, _):
                return dashboard([Host("demo", [url])], {"demo": url}, duration=args.duration)
    out = ctx.out
    with embedded(args.host_kind) as (url, agent_ids), Client(url) as client:
        info = client.server_info
        version = info.version if info is not None else "?"
        out.line(f"embedded demo daemon ({args.host_kind} host) at {url}")
        out.line(f"daemon {version} · {client.host_kind.value if client.host_kind else '?'} host")
        agents = LiveAgents(out, line_mode=True, marks=marks_for(out.encodes(unicode_marks_text())))
        directory = client.agents.list(subscribe=True)
        directory.subscription.subscribe(
            snapshot=lambda snap: agents.snapshot(snap.entries),
            update=lambda msg: agents.update(msg.payload.kind, msg.payload.agent_id, msg.payload.agent),
        )
        followed = agent_ids[0]
        title = next((e.agent.title for e in directory.entries if e.agent.id == followed), None)
        out.line(f"following {title or followed}:")
        printer = MessagePrinter(out)
        client.agents.ref(followed).timeline.subscribe(printer).ready.result(10)
        try:
            return ctx.follow().wait(args.duration)
        finally:
            printer.end()
            out.seal()
    return OK  # pragma: no cover - unreachable: the block returns and neither context manager swallows errors
