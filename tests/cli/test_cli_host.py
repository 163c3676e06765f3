"""The command finds the daemon like the library: ``--host`` in every form, and ``info``."""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from daemon_client.testing import FakeDaemon

from .cli_inprocess import run


@pytest.fixture
def sock_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A short directory holding a socket and an empty PASEO_HOME; no discovery variables set."""
    path = Path(tempfile.mkdtemp(prefix="dc-", dir="/tmp" if os.path.isdir("/tmp") else None))
    for name in ("PASEO_HOST", "PASEO_LISTEN", "PASEO_URL", "PASEO_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
    (path / "home").mkdir()
    monkeypatch.setenv("PASEO_HOME", str(path / "home"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def daemon(sock_dir: Path) -> Iterator[FakeDaemon]:
    with FakeDaemon() as fake:
        fake.serve(unix_path=str(sock_dir / "daemon.sock"))
        yield fake


def test_info_says_how_the_daemon_was_found(daemon: FakeDaemon, sock_dir: Path, monkeypatch) -> None:
    monkeypatch.setenv("PASEO_URL", "ws://127.0.0.1:1/ws")
    lock = {"pid": os.getpid(), "hostname": socket.gethostname(), "listen": str(sock_dir / "daemon.sock")}
    (sock_dir / "home" / "paseo.pid").write_text(json.dumps(lock), encoding="utf-8")
    code, out = run(["info"])
    assert code == 0, out
    pid_file = sock_dir / "home" / "paseo.pid"
    assert f"daemon   {daemon.url}\n" in out
    assert f"found    {pid_file} (listen) = {sock_dir / 'daemon.sock'}\n" in out
    assert "PASEO_HOST: not set" in out
    assert "default = localhost:6767: not needed" in out
    assert "PASEO_URL: ignored" in out
    assert f"connected to {daemon.url}\n" in out
    assert "host     capable" in out


@pytest.mark.parametrize("form", ["path", "unix", "paseo_host"])
def test_host_accepts_socket_forms(daemon: FakeDaemon, sock_dir: Path, monkeypatch, form: str) -> None:
    path = str(sock_dir / "daemon.sock")
    argv = {"path": ["--host", path], "unix": ["--host", f"unix://{path}"], "paseo_host": []}[form]
    if form == "paseo_host":
        monkeypatch.setenv("PASEO_HOST", path)
    code, out = run(["agents", *argv])
    assert code == 0, out
    assert "STATUS" in out


@pytest.mark.parametrize("form", ["port", "host_port", "tcp", "url"])
def test_host_accepts_tcp_forms(sock_dir: Path, form: str) -> None:
    with FakeDaemon(password="q-Pass") as fake:
        url = fake.serve()
        port = url.rsplit(":", 1)[1].removesuffix("/ws")
        argv = {
            "port": ["--host", port, "--password", "q-Pass"],
            "host_port": ["--host", f"127.0.0.1:{port}", "--password", "q-Pass"],
            "tcp": ["--host", f"tcp://127.0.0.1:{port}?password=q-Pass"],
            "url": ["--url", url, "--password", "q-Pass"],
        }[form]
        code, out = run(["info", *argv])
        assert code == 0, out
        assert f"connected to ws://127.0.0.1:{port}/ws" in out


def test_a_bad_host_is_one_clear_line(sock_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["info", "--host", "tcp://me:s3cret@h:1"])[0] == 2
    error = capsys.readouterr().err
    assert error.startswith("daemon-client: bad daemon address:")
    assert "userinfo" in error
    assert "s3cret" not in error


def test_a_named_pipe_is_one_clear_line(sock_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["agents", "--host", "pipe://paseo"])[0] == 2
    assert "Windows named pipe" in capsys.readouterr().err


def test_host_and_url_are_one_option(sock_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        run(["info", "--host", "1234", "--url", "ws://127.0.0.1:1234/ws"])
    assert "not allowed with argument" in capsys.readouterr().err


def test_serve_on_a_unix_socket(sock_dir: Path) -> None:
    code, out = run(["serve", "--unix", str(sock_dir / "served.sock"), "--duration", "0.2"])
    assert code == 0
    assert f"listening at unix://{sock_dir / 'served.sock'}" in out
    assert not (sock_dir / "served.sock").exists()


@pytest.mark.parametrize("json_output", [False, True])
def test_info_that_fails_keeps_standard_output_empty(
    sock_dir: Path, capsys: pytest.CaptureFixture[str], json_output: bool
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"ws://127.0.0.1:{port}/ws"
    code, out = run(["info", "--url", url, *(["--json"] if json_output else [])])
    assert (code, out) == (3, "")
    *diagnostics, error = capsys.readouterr().err.splitlines()
    assert f"daemon-client: daemon   {url}" in diagnostics  # where it was looked for: on standard error
    assert all(line.startswith("daemon-client: ") for line in diagnostics)
    assert error.startswith(f"daemon-client: cannot connect to {url}")


def test_info_refused_by_the_daemon_keeps_standard_output_empty(capsys: pytest.CaptureFixture[str]) -> None:
    with FakeDaemon(password="right") as fake:
        url = fake.serve()
        assert run(["info", "--url", url, "--password", "wrong"]) == (4, "")
    err = capsys.readouterr().err
    assert f"daemon-client: daemon   {url}\n" in err
    assert err.splitlines()[-1].startswith("daemon-client: authentication refused")


def test_a_quiet_info_that_fails_prints_only_the_error(sock_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert run(["-q", "info", "--url", f"ws://127.0.0.1:{port}/ws"]) == (3, "")
    assert capsys.readouterr().err.count("\n") == 1
