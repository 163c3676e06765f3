"""The CLI's password sources, end to end against the served fake daemon.

``--password-stdin`` reads one line, ``--password-file PATH`` the first line of a file (and warns
when other users can read it), ``PASEO_PASSWORD`` still works, ``--password VALUE`` works with a
one-line warning; a refused password (4401) on a terminal is asked for with ``getpass``, driven
here through a pseudo-terminal (``pty``). ``serve`` takes the same options for the password it
requires, warns off loopback and refuses a clear-text password there unless allowed.
"""

from __future__ import annotations

import io
import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import daemon_client as dc
from daemon_client.cli import main
from daemon_client.cli.password import COMMAND_LINE_WARNING
from daemon_client.testing import FakeDaemon

MARK = "Pw9Secret"
RIGHT = f"right-{MARK}"
WRONG = f"wrong-{MARK}"
TIMEOUT = 30.0


@pytest.fixture
def daemon() -> Iterator[FakeDaemon]:
    with FakeDaemon(host_kind=dc.HostKind.CAPABLE, password=RIGHT) as fake:
        fake.serve()
        yield fake


@pytest.fixture(autouse=True)
def _no_env_password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PASEO_PASSWORD", raising=False)


def run(argv: list[str], capsys: pytest.CaptureFixture[str], stdin: str | None = None) -> tuple[int, str, str]:
    out = io.StringIO()
    if stdin is not None:
        sys.stdin = io.StringIO(stdin)
    try:
        code = main(argv, out=out)
    finally:
        sys.stdin = sys.__stdin__
    return code, out.getvalue(), capsys.readouterr().err


def assert_secret(*texts: str) -> None:
    for text in texts:
        assert MARK not in text, text


def test_password_stdin(daemon, capsys) -> None:
    code, out, err = run(["info", "--url", daemon.url, "--password-stdin"], capsys, stdin=f"{RIGHT}\nignored\n")
    assert code == 0, err
    assert "connected to" in out
    assert err == ""
    assert_secret(out, err)


def test_password_stdin_with_crlf(daemon, capsys) -> None:
    assert run(["info", "--url", daemon.url, "--password-stdin"], capsys, stdin=f"{RIGHT}\r\n")[0] == 0


def test_an_empty_password_stdin_is_an_error(daemon, capsys) -> None:
    code, _, err = run(["info", "--url", daemon.url, "--password-stdin"], capsys, stdin="\n")
    assert code == 2
    assert "no password on the first line of standard input" in err


def test_password_file(daemon, capsys, tmp_path: Path) -> None:
    path = tmp_path / "pw"
    path.write_text(f"{RIGHT}\n")
    path.chmod(0o600)
    code, out, err = run(["info", "--url", daemon.url, "--password-file", str(path)], capsys)
    assert code == 0, err
    assert err == ""
    assert_secret(out, err)


def test_a_password_file_others_can_read_is_warned_about(daemon, capsys, tmp_path: Path) -> None:
    path = tmp_path / "pw"
    path.write_text(RIGHT)
    path.chmod(0o644)
    code, _, err = run(["info", "--url", daemon.url, "--password-file", str(path)], capsys)
    assert code == 0
    assert f"{path} can be read by other users (mode 0644)" in err
    assert_secret(err)


@pytest.mark.parametrize("content", [None, "", "\nsecond line"], ids=["missing", "empty", "empty-first-line"])
def test_an_unusable_password_file_is_an_error(daemon, capsys, tmp_path: Path, content: str | None) -> None:
    path = tmp_path / "pw"
    if content is not None:
        path.write_text(content)
        path.chmod(0o600)
    code, _, err = run(["info", "--url", daemon.url, "--password-file", str(path)], capsys)
    assert code == 2
    assert str(path) in err


def test_paseo_password_still_works(daemon, capsys, monkeypatch) -> None:
    monkeypatch.setenv("PASEO_PASSWORD", RIGHT)
    code, _, err = run(["info", "--url", daemon.url], capsys)
    assert code == 0, err
    assert err == ""


def test_password_on_the_command_line_works_with_one_warning(daemon, capsys) -> None:
    code, out, err = run(["info", "--url", daemon.url, "--password", RIGHT], capsys)
    assert code == 0
    assert err.splitlines() == [COMMAND_LINE_WARNING]
    assert "--password-stdin" in err
    assert_secret(out, err)


def test_password_options_exclude_each_other(daemon, capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["info", "--url", daemon.url, "--password", "x", "--password-stdin"])
    assert exited.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_a_refused_password_without_a_terminal_fails_without_asking(daemon, capsys) -> None:
    code, _, err = run(["info", "--url", daemon.url, "--password-stdin"], capsys, stdin=f"{WRONG}\n")
    assert code == 4
    assert "authentication refused" in err
    assert "Password for" not in err
    assert_secret(err)


def test_credentials_in_the_url_are_refused_by_the_cli(capsys) -> None:
    code, _, err = run(["info", "--url", f"ws://me:{MARK}@127.0.0.1:1/ws"], capsys)
    assert code == 2
    assert "userinfo" in err
    assert_secret(err)


# ----------------------------------------------------------------------------- the getpass prompt, through a pty

_BOOT = (
    "import os, runpy, sys\n"
    "os.close(os.open(os.ttyname(0), os.O_RDWR))\n"  # a session leader opening its tty makes it the controlling one
    "sys.argv = ['daemon-client', *sys.argv[1:]]\n"
    "runpy.run_module('daemon_client', run_name='__main__', alter_sys=True)\n"
)


class Terminal:
    """The CLI in a child process on a pseudo-terminal (its stdin, stdout, stderr and /dev/tty)."""

    def __init__(self, *argv: str, env: dict[str, str] | None = None) -> None:
        self._master, slave = os.openpty()
        child_env = {k: v for k, v in os.environ.items() if k != "PASEO_PASSWORD"} | (env or {})
        self.process = subprocess.Popen(
            [sys.executable, "-c", _BOOT, *argv],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
            env=child_env,
        )
        os.close(slave)
        self.output = b""

    def expect(self, text: str, count: int = 1, timeout: float = TIMEOUT) -> str:
        """Read until ``text`` appeared ``count`` times; return everything read so far."""
        deadline = time.monotonic() + timeout
        while self.output.count(text.encode()) < count:
            left = deadline - time.monotonic()
            assert left > 0, f"{text!r} never came; got {self.output!r}"
            ready, _, _ = select.select([self._master], [], [], left)
            if ready:
                try:
                    chunk = os.read(self._master, 4096)
                except OSError:  # the child closed the terminal
                    chunk = b""
                assert chunk, f"the terminal closed before {text!r}; got {self.output!r}"
                self.output += chunk
        return self.output.decode(errors="replace")

    def type(self, line: str) -> None:
        os.write(self._master, (line + "\n").encode())

    def finish(self) -> int:
        code = self.process.wait(TIMEOUT)
        while True:
            ready, _, _ = select.select([self._master], [], [], 0)
            if not ready:
                break
            try:
                chunk = os.read(self._master, 4096)
            except OSError:
                break
            if not chunk:
                break
            self.output += chunk
        return code

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(TIMEOUT)
        os.close(self._master)


@pytest.fixture
def terminal() -> Iterator[type[Terminal]]:
    made: list[Terminal] = []

    class Tracked(Terminal):
        def __init__(self, *argv: str, env: dict[str, str] | None = None) -> None:
            super().__init__(*argv, env=env)
            made.append(self)

    yield Tracked
    for term in made:
        term.close()


def test_a_refused_password_is_asked_for_on_the_terminal(daemon, terminal) -> None:
    term = terminal("info", "--url", daemon.url, env={"PASEO_PASSWORD": WRONG})
    term.expect(f"Password for {daemon.url}: ")
    term.type(RIGHT)
    term.expect("connected to")
    assert term.finish() == 0
    text = term.output.decode(errors="replace")
    assert MARK not in text  # getpass does not echo, and nothing prints the password
    assert daemon.accepted_count == 2  # the refused attempt, then the one with the typed password


def test_no_password_at_all_is_asked_for_too(daemon, terminal) -> None:
    term = terminal("info", "--url", daemon.url)
    term.expect("Password for")
    term.type(RIGHT)
    term.expect("connected to")
    assert term.finish() == 0


def test_the_prompt_gives_up_after_three_refusals(daemon, terminal) -> None:
    term = terminal("info", "--url", daemon.url, env={"PASEO_PASSWORD": WRONG})
    for attempt in range(1, 4):
        term.expect("Password for", count=attempt)
        term.type(f"{WRONG}-{attempt}")
    term.expect("authentication refused")
    assert term.finish() == 4
    assert term.output.count(b"Password for") == 3
    assert MARK not in term.output.decode(errors="replace")
    assert daemon.accepted_count == 4


# ----------------------------------------------------------------------------- serve


def test_serve_refuses_a_clear_text_password_off_loopback(capsys) -> None:
    code, _, err = run(["serve", "--host", "0.0.0.0", "--password-stdin", "--duration", "0.1"], capsys, stdin="pw\n")
    assert code == 2
    assert "without TLS" in err


def test_serve_off_loopback_warns_on_stderr() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "daemon_client", "serve", "--host", "0.0.0.0", "--password-stdin",
         "--allow-insecure-password", "--duration", "0.2"],
        input=f"{RIGHT}\n", capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "listening at ws://0.0.0.0:" in result.stdout
    assert "not a loopback address" in result.stderr
    assert MARK not in result.stdout + result.stderr


def test_serve_requires_the_password_it_was_given(capsys) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "daemon_client", "serve", "--password-stdin", "--duration", "60"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert process.stdin is not None
        assert process.stdout is not None
        process.stdin.write(f"{RIGHT}\n")
        process.stdin.close()
        line = process.stdout.readline()
        url = line.split(" listening at ", 1)[1].split(";", 1)[0]
        with dc.connect(url, password=RIGHT) as client:
            assert client.state is dc.ConnectionState.CONNECTED
        refused = dc.Client(url, password=WRONG, reconnect=dc.ReconnectPolicy(enabled=False))
        try:
            with pytest.raises(dc.AuthenticationError):
                refused.connect()
        finally:
            refused.close()
    finally:
        process.terminate()
        process.wait(TIMEOUT)
    assert process.stderr is not None
    err = process.stderr.read()
    process.stdout.close()
    process.stderr.close()
    assert MARK not in err
