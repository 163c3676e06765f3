"""The ``daemon-client`` command against the fake daemon on a real loopback WebSocket."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

import daemon_client as dc
from daemon_client.testing import FakeDaemon

from ..conftest import KINDS
from .cli_inprocess import run


@pytest.fixture
def daemon() -> Iterator[FakeDaemon]:
    with FakeDaemon(host_kind=dc.HostKind.CAPABLE) as fake:
        fake.serve()
        yield fake


@pytest.mark.parametrize("kind", KINDS)
def test_demo_shows_statuses_and_streamed_text(kind: str) -> None:
    code, out = run(["demo", "--host-kind", kind, "--duration", "3"])
    assert code == 0
    assert f"({kind} host)" in out
    assert "STATUS  TITLE" in out
    assert "following Fix flaky sync test:" in out
    assert "idle -> running" in out
    assert "The test raced on a shared temporary directory." in out


def test_serve_prints_its_url() -> None:
    code, out = run(["serve", "--duration", "0.2"])
    assert code == 0
    assert "listening at ws://127.0.0.1:" in out


def test_module_entry_point_runs() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "daemon_client", "serve", "--duration", "0.2"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "listening at ws://127.0.0.1:" in result.stdout


def test_info(daemon: FakeDaemon) -> None:
    code, out = run(["info", "--url", daemon.url])
    assert code == 0
    assert "host     capable" in out
    assert "ping" in out


def test_agents_table_json_and_watch(daemon: FakeDaemon) -> None:
    agent = daemon.agents.upsert(title="Listed agent")
    code, out = run(["agents", "--url", daemon.url])
    assert code == 0
    assert "Listed agent" in out
    assert agent["id"] in out
    code, out = run(["agents", "--url", daemon.url, "--json"])
    assert code == 0
    assert '"title": "Listed agent"' in out
    import threading

    timer = threading.Timer(0.5, lambda: daemon.agents.upsert(agent["id"], status="running"))
    timer.start()
    code, out = run(["agents", "--url", daemon.url, "--watch", "--duration", "1.5"])
    timer.join()
    assert code == 0
    assert "Listed agent: idle -> running" in out


def test_tail_prints_history_and_joined_stream(daemon: FakeDaemon) -> None:
    agent = daemon.agents.upsert(title="Tailed")
    daemon.timeline.append(agent["id"], {"type": "assistant_message", "text": "old row"})
    import threading

    timer = threading.Timer(0.5, lambda: daemon.runs.send(agent["id"], "What is the answer?"))
    timer.start()
    code, out = run(["tail", "Tailed", "--url", daemon.url, "--history", "5", "--duration", "2"])
    timer.join()
    assert code == 0
    assert out.startswith("old row\n")
    assert "The answer is 42." in out
    assert "-- turn completed" in out


def test_run_prints_the_final_message_and_exits_by_status(
    daemon: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run(["run", "--url", daemon.url, "--provider", "mock/ten-second-stream", "--cwd", "/home/dev",
                     "What is the answer?"])  # fmt: skip
    assert code == 0
    assert out == "The answer is 42.\n"
    code, out = run(["run", "--url", daemon.url, "--provider", "mock/ten-second-stream", "--cwd", "/home/dev",
                     "please fail"])  # fmt: skip
    assert code == 1
    assert "failed: Simulated failure" in capsys.readouterr().err


def test_providers_and_workspaces(daemon: FakeDaemon) -> None:
    code, out = run(["providers", "--url", daemon.url, "--wait"])
    assert code == 0
    assert "mock" in out
    assert "ready" in out
    daemon.workspaces.open("/home/dev/projects/demo")
    code, out = run(["workspaces", "--url", daemon.url])
    assert code == 0
    assert "/home/dev/projects/demo" in out


def test_projects_on_current_and_old_hosts(capsys: pytest.CaptureFixture[str]) -> None:
    with FakeDaemon(host_kind=dc.HostKind.BROADCAST) as old:
        old.workspaces.open("/home/dev/projects/demo")
        code, out = run(["projects", "--url", old.serve()])
        assert code == 0
        assert "/home/dev/projects/demo" in out
        assert "derived from workspaces" in capsys.readouterr().err
        code, _ = run(["projects", "--url", old.url, "--watch", "--duration", "0.2"])
        assert code == 1
        assert "too old" in capsys.readouterr().err


def test_errors_are_one_line_without_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert run(["agents", "--url", f"ws://127.0.0.1:{port}/ws"])[0] == 3
    err = capsys.readouterr().err
    assert err.startswith(f"daemon-client: cannot connect to ws://127.0.0.1:{port}/ws")
    assert "daemon running" in err
    assert "Traceback" not in err
    assert err.count("\n") == 1
    with FakeDaemon(password="right") as fake:
        assert run(["info", "--url", fake.serve(), "--password", "wrong"])[0] == 4
    assert capsys.readouterr().err.splitlines()[-1].startswith("daemon-client: authentication refused")
