"""The ``daemon-client`` command (also ``python -m daemon_client``).

``demo`` and ``serve`` run the embedded simulated daemon; ``agents``, ``tail``, ``run``,
``providers``, ``workspaces`` and ``info`` talk to any daemon (``--host``/``--url``, else found
as Paseo's CLI finds it; ``--password``/``PASEO_PASSWORD``). Commands run on the main thread;
live output is fed from the client's callback thread. Errors print one line and exit non-zero.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any, TextIO

from daemon_client.agent_create import AgentConfig
from daemon_client.cli.attach import add_attach_command
from daemon_client.cli.render import (
    LiveAgents,
    MessagePrinter,
    TextTail,
    agents_table,
    describe_features,
    table,
    to_json,
    workspaces_table,
)
from daemon_client.cli.terminals import add_terminal_commands
from daemon_client.client import Client
from daemon_client.errors import (
    AuthenticationError,
    ConnectionLost,
    ConnectTimeout,
    DaemonClientError,
    ProtocolError,
    UnsupportedByHost,
)
from daemon_client.protocol.hosts import HostKind

EXIT_ERROR = 2
EXIT_RUN_FAILED = 1
KINDS = [kind.value for kind in HostKind]


@contextlib.contextmanager
def _embedded(kind: str, port: int = 0, unix_path: str | None = None) -> Iterator[tuple[str, list[str]]]:
    """The simulated daemon on loopback; yields its URL and its agents' IDs."""
    try:
        from daemon_client.testing.fake.daemon import FakeDaemon
        from daemon_client.testing.simulation import Simulation

        fake = FakeDaemon(host_kind=HostKind(kind))
        url = fake.serve(port=port, unix_path=unix_path)
    except ImportError as exc:
        raise SystemExit(
            f"daemon-client: the embedded daemon needs the 'demo' extra ({exc.name} is missing): "
            "pip install 'daemon-client[demo]'"
        ) from None
    simulation = Simulation(fake).start()
    try:
        yield url, simulation.agent_ids
    finally:
        simulation.stop()
        fake.close()


def _client(args: argparse.Namespace, out: TextIO | None = None) -> Client:
    try:
        client = Client(args.host, password=args.password, connect_timeout=args.timeout)
    except ValueError as exc:
        raise DaemonClientError(f"bad daemon address: {exc}") from None
    args.found = client.url
    if out is not None:
        out.write(client.resolution.describe() + "\n")
    try:
        client.connect()
    except BaseException:
        client.close()
        raise
    return client


def _until(duration: float | None, done: threading.Event | None = None) -> None:
    """Block the main thread until ``duration`` passes, ``done`` is set, or Ctrl-C."""
    deadline = None if duration is None else time.monotonic() + duration
    while deadline is None or time.monotonic() < deadline:
        if done is not None and done.is_set():
            return
        time.sleep(0.05)


def cmd_demo(args: argparse.Namespace, out: TextIO) -> int:
    with _embedded(args.host_kind) as (url, agent_ids):
        out.write(f"embedded demo daemon ({args.host_kind} host) at {url}\n")
        with Client(url) as client:
            info = client.server_info
            assert info is not None
            out.write(f"daemon {info.version} · {client.host_kind.value if client.host_kind else '?'} host\n")
            _live_view(client, out, args.duration, agent_ids[0])
    return 0


def _live_view(client: Client, out: TextIO, duration: float | None, follow: str) -> None:
    screen = out.isatty()
    agents = LiveAgents(out, line_mode=not screen)
    stream_out: Any = TextTail() if screen else out
    printer = MessagePrinter(stream_out)
    directory = client.agents.list(subscribe=True)
    directory.subscription.subscribe(
        snapshot=lambda snap: agents.snapshot(snap.entries),
        update=lambda msg: agents.update(msg.payload.kind, msg.payload.agent_id, msg.payload.agent),
    )
    followed = client.agents.ref(follow)
    title = next((e.agent.title for e in directory.entries if e.agent.id == follow), None)
    out.write(f"following {title or follow}:\n")
    followed.timeline.subscribe(printer).ready.result(10)
    deadline = None if duration is None else time.monotonic() + duration
    while deadline is None or time.monotonic() < deadline:
        time.sleep(0.1)
        if screen:
            out.write("\x1b[H\x1b[J" + agents.render() + "\n\n" + stream_out.render() + "\n")
            out.flush()
    out.write("\n")


def cmd_serve(args: argparse.Namespace, out: TextIO) -> int:
    with _embedded(args.host_kind, args.port, args.unix) as (url, _):
        out.write(f"simulated daemon ({args.host_kind} host) listening at {url}; Ctrl-C to stop\n")
        out.flush()
        _until(args.duration)
    return 0


def cmd_info(args: argparse.Namespace, out: TextIO) -> int:
    with _client(args, out) as client:
        info = client.server_info
        assert info is not None
        kind = client.host_kind.value if client.host_kind else "unknown"
        out.write(
            f"connected to {client.url}\n"
            f"version  {info.version or 'unknown version'} on {info.hostname or 'unknown host'} ({info.server_id})\n"
            f"host     {kind}\nfeatures {describe_features(info.features)}\n"
            f"ping     {(client.ping().round_trip or 0) * 1000:.2f} ms\n"
        )
    return 0


def cmd_agents(args: argparse.Namespace, out: TextIO) -> int:
    with _client(args) as client:
        if not args.watch:
            result = client.agents.list()
            out.write((to_json(list(result.entries)) if args.json else agents_table(result.entries)) + "\n")
            return 0
        agents = LiveAgents(out, line_mode=True)
        directory = client.agents.list(subscribe=True)
        directory.subscription.subscribe(
            snapshot=lambda snap: agents.snapshot(snap.entries),
            update=lambda msg: agents.update(msg.payload.kind, msg.payload.agent_id, msg.payload.agent),
        )
        _until(args.duration)
    return 0


def cmd_tail(args: argparse.Namespace, out: TextIO) -> int:
    with _client(args) as client:
        agent = client.agents.fetch(args.agent)
        if agent is None:
            raise DaemonClientError(f"no agent {args.agent!r}")
        handle = client.agents.ref(agent)
        printer = MessagePrinter(out)
        subscription = handle.timeline.subscribe(printer)
        subscription.ready.result(args.timeout)
        if args.history:
            page = handle.timeline.refetch("tail", limit=args.history)
            for entry in page.entries:
                out.write(f"[history] {entry.item.type}: {getattr(entry.item, 'text', '')}\n")
        _until(args.duration)
    return 0


def cmd_run(args: argparse.Namespace, out: TextIO) -> int:
    with _client(args) as client:
        config = AgentConfig(provider=args.provider, mode_id=args.mode)
        agent = client.agents.create(config, cwd=args.cwd, title=args.title)
        chunks = [0]

        def progress(update: Any) -> None:
            if update.type == "timeline":
                chunks[0] += 1
                out.write(f"\r{agent.title or agent.id}: running… {chunks[0]} events")
                out.flush()

        agent.timeline.subscribe(progress).ready.result(args.timeout)
        result = agent.run(args.prompt, timeout=args.run_timeout)
        out.write(f"\r{' ' * 60}\r")
        if result.last_message:
            out.write(result.last_message.rstrip() + "\n")
        out.write(f"-- {result.status}{': ' + result.error if result.error else ''}\n")
        return 0 if result.status == "idle" else EXIT_RUN_FAILED


def cmd_providers(args: argparse.Namespace, out: TextIO) -> int:
    with _client(args) as client:
        snapshot = client.providers.wait_for_ready(timeout=args.timeout) if args.wait else client.providers.snapshot()
        rows = ([e.provider, e.status, str(len(e.models or ())), e.error or ""] for e in snapshot.entries)
        out.write(table(rows, ["PROVIDER", "STATUS", "MODELS", "ERROR"]) + "\n")
    return 0


def cmd_workspaces(args: argparse.Namespace, out: TextIO) -> int:
    with _client(args) as client:
        result = client.workspaces.list(subscribe=args.watch)
        out.write(workspaces_table(result.entries) + "\n")
        if args.watch:
            result.subscription.subscribe(
                update=lambda msg: out.write(
                    f"{msg.payload.kind} {msg.payload.workspace_id}"
                    f"{' ' + msg.payload.workspace.status if msg.payload.workspace else ''}\n"
                )
            )
            _until(args.duration)
    return 0


def cmd_projects(args: argparse.Namespace, out: TextIO) -> int:
    with _client(args) as client:
        if args.watch:
            subscription = client.projects.subscribe(
                lambda update: out.write(f"{update.kind} {update.project_id}\n"), on_error=lambda exc: None
            )
            subscription.ready.result(args.timeout)
        listed = client.projects.list()
        rows = ([p.project_display_name, p.project_kind, p.project_root_path, p.project_id] for p in listed.projects)
        out.write(table(rows, ["PROJECT", "KIND", "ROOT", "ID"]) + "\n")
        if listed.derived:
            out.write("(derived from workspaces: this daemon has no project list)\n")
        if args.watch:
            _until(args.duration)
    return 0


def _connection_args(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--host",
        help="daemon address: host:port, PORT, /path.sock, unix:///path, tcp://host:port?ssl=true, "
        "ws://host:port/ws (default: PASEO_HOST, PASEO_LISTEN, $PASEO_HOME/paseo.pid, config, localhost:6767)",
    )
    where.add_argument("--url", dest="host", help="the same as --host")
    parser.add_argument("--password", default=None, help="(default: PASEO_PASSWORD)")
    parser.add_argument("--timeout", type=float, default=15.0, help="connect and request timeout in seconds")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="daemon-client", description="Talk to a Paseo daemon.")
    sub = parser.add_subparsers(dest="command", required=True)

    def command(name: str, help_text: str, func: Any, *, connects: bool = True) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text)
        if connects:
            _connection_args(p)
        p.add_argument("--duration", type=float, default=None, help="stop after this many seconds")
        p.set_defaults(func=func)
        return p

    demo = command("demo", "run the embedded simulated daemon and watch agents live", cmd_demo, connects=False)
    demo.add_argument("--host-kind", choices=KINDS, default="capable")
    serve = command("serve", "run the embedded simulated daemon alone and print its URL", cmd_serve, connects=False)
    serve.add_argument("--host-kind", choices=KINDS, default="capable")
    serve.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: any free port)")
    serve.add_argument("--unix", metavar="PATH", help="listen on this unix socket instead of a port")
    command("info", "print how the daemon was found and its server_info", cmd_info)
    agents = command("agents", "list agents (--watch: follow their statuses)", cmd_agents)
    agents.add_argument("--watch", action="store_true")
    agents.add_argument("--json", action="store_true")
    tail = command("tail", "stream an agent's timeline as text", cmd_tail)
    tail.add_argument("agent", help="agent ID, unique ID prefix or exact title")
    tail.add_argument("--history", type=int, default=0, help="first print the last N history rows")
    run = command("run", "create an agent, run a prompt, print the final message", cmd_run)
    run.add_argument("prompt")
    run.add_argument("--provider", required=True, help="provider/model, e.g. claude/sonnet")
    run.add_argument("--cwd", required=True)
    run.add_argument("--mode")
    run.add_argument("--title")
    run.add_argument("--run-timeout", type=float, default=600.0)
    providers = command("providers", "show the provider catalog", cmd_providers)
    providers.add_argument("--wait", action="store_true", help="wait until no provider is loading")
    workspaces = command("workspaces", "list workspaces (--watch: follow updates)", cmd_workspaces)
    workspaces.add_argument("--watch", action="store_true")
    projects = command("projects", "list projects (--watch: follow updates; needs a current daemon)", cmd_projects)
    projects.add_argument("--watch", action="store_true")
    add_terminal_commands(sub, _connection_args, _client)
    add_attach_command(sub, _connection_args, _client)
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    args = build_parser().parse_args(argv)
    stream = out or sys.stdout
    try:
        code: int = args.func(args, stream)
    except AuthenticationError as exc:
        return _fail(f"authentication failed: {exc}")
    except (ConnectionLost, ConnectTimeout) as exc:
        where = getattr(args, "found", None) or "the daemon"
        return _fail(f"cannot connect to {where}: {exc} (is the daemon running? see --host or PASEO_HOST)")
    except UnsupportedByHost as exc:
        return _fail(f"the daemon is too old for this: {exc}")
    except ProtocolError as exc:
        return _fail(f"protocol error: {exc}")
    except DaemonClientError as exc:
        return _fail(str(exc))
    except ValueError as exc:  # an argument the client refuses before sending (e.g. --provider without a model)
        return _fail(str(exc))
    except KeyboardInterrupt:
        return 130
    return code


def _fail(message: str) -> int:
    print(f"daemon-client: {message}", file=sys.stderr)
    return EXIT_ERROR
