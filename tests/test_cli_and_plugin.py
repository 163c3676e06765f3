"""The ``daemon-client`` command and the bundled pytest plugin."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

import daemon_client as dc
from daemon_client.cli import main
from daemon_client.testing import FakeDaemon


@pytest.mark.parametrize("kind", ["capable", "selective", "broadcast"])
def test_demo_connects_to_the_embedded_daemon(kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--host-kind", kind]) == 0
    out = capsys.readouterr().out
    assert f"host     {kind}" in out
    assert "ping" in out


def test_info_prints_server_info(capsys: pytest.CaptureFixture[str]) -> None:
    with FakeDaemon(host_kind=dc.HostKind.BROADCAST) as fake:
        assert main(["info", "--url", fake.serve()]) == 0
    out = capsys.readouterr().out
    assert "0.1.65-beta.5" in out
    assert "host     broadcast" in out


def test_info_errors_are_one_line_without_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert main(["info", "--url", f"ws://127.0.0.1:{port}/ws"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("daemon-client: cannot connect: Cannot connect to")
    assert "Traceback" not in err
    with FakeDaemon(password="right") as fake:
        assert main(["info", "--url", fake.serve(), "--password", "wrong"]) == 2
    assert "authentication failed" in capsys.readouterr().err


def test_module_entry_point_runs() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "daemon_client", "demo"], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "connected to ws://127.0.0.1:" in result.stdout


def test_plugin_fixtures_give_a_connected_strict_client(fake_daemon: FakeDaemon, fake_client: dc.Client) -> None:
    fake_daemon.on_request("echo_request", lambda ctx: ctx.reply({"ok": True}))
    assert fake_client.state is dc.ConnectionState.CONNECTED
    assert fake_client.host_kind is dc.HostKind.CAPABLE
    assert fake_client.request({"type": "echo_request"})["ok"] is True


@pytest.mark.parametrize("fake_daemon", ["selective", "broadcast"], indirect=True)
def test_plugin_fixture_takes_a_host_kind(fake_daemon: FakeDaemon, fake_client: dc.Client) -> None:
    assert fake_client.host_kind is fake_daemon.host_kind
