"""One recognisable secret through every credential carrier, and nothing the client or the CLI
emits may show it.

Carriers: a token-safe password (bearer subprotocol, ``Authorization: Bearer``, ``hello.auth``), a
password that is not token-safe (``hello.auth`` only), and ``auth_header`` (a proxy's
``Authorization``). For each, over loopback with every logger at DEBUG: connect, requests, a
drop and reconnect, a reader-thread traceback (a failing restore hook), a refused password, a
connect to nowhere, and ``close()``; then the CLI with the secret from ``--password-file``,
``--password-stdin``, ``PASEO_PASSWORD`` and ``--password``, refused and accepted. Searched: every
log record (message and traceback) of every logger, the fake daemon's included, reprs, exception
texts with their chains, uncaught thread exceptions, and the CLI's stdout and stderr.
"""

from __future__ import annotations

import io
import logging
import socket
import sys
import threading
import traceback
from collections.abc import Iterator
from pathlib import Path

import pytest
from websockets.frames import Frame

import daemon_client as dc
from daemon_client.cli import main
from daemon_client.testing import FakeDaemon

MARK = "Rd7Secret"
CARRIERS: dict[str, dict[str, str]] = {
    "token-safe-password": {"password": f"tok-{MARK}"},
    "not-token-safe-password": {"password": f'sp ace "{MARK}" é'},
    "auth-header": {"auth_header": f"Basic {MARK}=="},
}
FAST = dc.ReconnectPolicy(base_delay=0.01, max_delay=0.05, jitter=0.0)


class Sink:
    """Everything emitted during one test."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def add(self, *items: object) -> None:
        for item in items:
            if isinstance(item, BaseException):
                self.texts += [str(item), repr(item), repr(item.args), *traceback.format_exception(item)]
            else:
                self.texts.append(item if isinstance(item, str) else repr(item))

    def check(self, caplog: pytest.LogCaptureFixture) -> None:
        for record in [*caplog.get_records("setup"), *caplog.get_records("call"), *caplog.records]:
            self.texts.append(f"{record.name}: {record.getMessage()}")
            if record.exc_info and record.exc_info[1] is not None:
                self.texts += traceback.format_exception(record.exc_info[1])
        leaks = [text for text in self.texts if MARK in text]
        assert not leaks, f"the secret leaked: {leaks[0][max(0, leaks[0].find(MARK) - 120) : leaks[0].find(MARK) + 40]}"


@pytest.fixture
def sink(caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> Iterator[Sink]:
    caplog.set_level(logging.DEBUG)  # every logger: the client's, the fake's, websockets', websocket-client's
    monkeypatch.setattr(Frame, "MAX_LOG_SIZE", 1 << 20)  # websockets logs whole frames: any leak shows in full
    collected = Sink()
    original = threading.excepthook

    def hook(args: threading.ExceptHookArgs) -> None:
        collected.texts += traceback.format_exception(args.exc_type, args.exc_value, args.exc_traceback)

    threading.excepthook = hook
    try:
        yield collected
    finally:
        threading.excepthook = original
    collected.check(caplog)


def _daemon(carrier: dict[str, str]) -> FakeDaemon:
    return FakeDaemon(host_kind=dc.HostKind.CAPABLE, password=carrier.get("password"))


@pytest.mark.parametrize("carrier", CARRIERS.values(), ids=CARRIERS.keys())
def test_no_carrier_lets_the_secret_out_of_the_client(sink: Sink, carrier: dict[str, str]) -> None:
    with _daemon(carrier) as fake:
        fake.on_request("echo_request", lambda ctx: ctx.reply({"echo": ctx.message.get("value")}))
        fake.ignore("slow_request")
        url = fake.serve()
        client = dc.Client(url, reconnect=FAST, connect_timeout=5, **carrier)  # type: ignore[arg-type]
        sink.add(client)
        failing_hook_ran = threading.Event()

        def failing_restore_hook(kind: dc.HostKind, reconnected: bool) -> None:
            if reconnected:
                failing_hook_ran.set()
                raise RuntimeError("a restore hook failed")  # logged with the reader thread's traceback

        try:
            info = client.connect()
            client._connection.add_hooks(failing_restore_hook)
            sink.add(info, client, client._connection._opts, fake.connections[0].socket)
            assert client.request({"type": "echo_request", "value": 1})["echo"] == 1
            slow = client.request_async({"type": "slow_request"}, timeout=30)
            fake.drop_connections()
            sink.add(slow.exception(timeout=10))
            assert failing_hook_ran.wait(10)
            client.ping()
            with pytest.raises(dc.RequestTimeout) as timed_out:
                client.request({"type": "slow_request"}, timeout=0.05)
            sink.add(timed_out.value, client.last_error)
        finally:
            client.close()
        if "password" in carrier:
            wrong = dc.Client(url, password=f"wrong-{MARK}", reconnect=FAST, connect_timeout=5)
            try:
                with pytest.raises(dc.AuthenticationError) as refused:
                    wrong.connect()
                sink.add(refused.value, wrong, wrong.last_error)
            finally:
                wrong.close()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        nowhere = f"ws://127.0.0.1:{probe.getsockname()[1]}/ws"
    lost = dc.Client(nowhere, connect_timeout=2, **carrier)  # type: ignore[arg-type]
    try:
        with pytest.raises(dc.ConnectionLost) as unreachable:
            lost.connect()
        sink.add(unreachable.value)
    finally:
        lost.close()
    with pytest.raises(ValueError) as in_url:
        dc.Client(f"ws://user:{MARK}@127.0.0.1:1/ws")
    sink.add(in_url.value)


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str], stdin: str = "") -> tuple[int, str]:
    out = io.StringIO()
    sys.stdin = io.StringIO(stdin)
    try:
        code = main(argv, out=out)
    finally:
        sys.stdin = sys.__stdin__
    captured = capsys.readouterr()
    return code, out.getvalue() + captured.out + captured.err


@pytest.mark.parametrize("source", ["file", "stdin", "env", "argument"])
def test_no_password_source_lets_the_secret_out_of_the_cli(
    sink: Sink, capsys, monkeypatch, tmp_path: Path, source: str
) -> None:
    right = f"tok-{MARK}"
    with FakeDaemon(host_kind=dc.HostKind.CAPABLE, password=right) as fake:
        url = fake.serve()
        for password, expected in ((f"wrong-{MARK}", 4), (right, 0)):
            argv: list[str] = ["info", "--url", url, "--timeout", "5"]
            stdin = ""
            monkeypatch.delenv("PASEO_PASSWORD", raising=False)
            if source == "file":
                path = tmp_path / "pw"
                path.write_text(password + "\n")
                path.chmod(0o600)
                argv += ["--password-file", str(path)]
            elif source == "stdin":
                argv.append("--password-stdin")
                stdin = password + "\n"
            elif source == "env":
                monkeypatch.setenv("PASEO_PASSWORD", password)
            else:
                argv += ["--password", password]
            code, output = _cli(argv, capsys, stdin)
            assert code == expected, output
            sink.add(output)
    code, output = _cli(["info", "--url", f"ws://me:{MARK}@127.0.0.1:1/ws"], capsys)
    assert code == 2
    sink.add(output)


def test_the_fake_daemon_served_with_a_password_keeps_it_out_of_its_output(sink: Sink, capsys) -> None:
    password = f"tok-{MARK}"
    code, output = _cli(["serve", "--password-stdin", "--duration", "0.1"], capsys, stdin=password + "\n")
    assert code == 0
    assert "listening at" in output
    sink.add(output)
