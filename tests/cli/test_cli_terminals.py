"""``daemon-client terminals`` and ``daemon-client attach`` against the fake daemon on loopback;
``attach`` runs as its own process on a pseudo-terminal, typed into and read like a user would."""

from __future__ import annotations

import argparse
import contextlib
import errno
import fcntl
import io
import os
import select
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import daemon_client as dc
from daemon_client.cli.attach import parse_detach_key
from daemon_client.cli.main import main
from daemon_client.cli.terminals import parse_size
from daemon_client.testing import FakeDaemon

ROOT = Path(__file__).resolve().parents[2]
CWD = "/home/dev/projects/demo"


def run(argv: list[str], out: io.StringIO | None = None) -> tuple[int, str]:
    out = out or io.StringIO()
    code = main(argv, out=out)
    return code, out.getvalue()


@pytest.fixture(params=["capable", "broadcast"])
def daemon(request: pytest.FixtureRequest) -> Iterator[FakeDaemon]:
    with FakeDaemon(host_kind=dc.HostKind(request.param)) as fake:
        fake.serve()
        yield fake


class Watched(io.StringIO):
    """Output that tells a waiting test when a text has been written."""

    def __init__(self) -> None:
        super().__init__()
        self._changed = threading.Condition()

    def write(self, text: str) -> int:
        with self._changed:
            written = super().write(text)
            self._changed.notify_all()
        return written

    def wait_for(self, text: str, timeout: float = 10.0) -> None:
        with self._changed:
            if not self._changed.wait_for(lambda: text in self.getvalue(), timeout):
                raise TimeoutError(f"{text!r} not written; got {self.getvalue()!r}")


def test_terminal_commands(daemon: FakeDaemon) -> None:
    url = daemon.url
    code, out = run(["terminals", "new", "--url", url, "--cwd", CWD, "--name", "build", "--size", "30x90",
                     "--", "/bin/fake", "-l"])  # fmt: skip
    assert code == 0, out
    terminal_id = out.strip()
    shell = daemon.terminals.get(terminal_id).shell  # type: ignore[union-attr]
    assert (shell.title, shell.rows, shell.cols) == ("/bin/fake -l", 30, 90)
    code, out = run(["terminals", "ls", "--url", url])
    assert code == 0
    assert "build" in out
    assert terminal_id in out
    code, out = run(["terminals", "ls", "--url", url, "--json"])
    assert f'"id": "{terminal_id}"' in out
    assert run(["terminals", "send", "--url", url, "build", "echo from the command line", "Enter"])[0] == 0
    code, out = run(["terminals", "capture", "--url", url, terminal_id[:8]])
    assert code == 0
    assert out.splitlines()[:2] == ["fake$ echo from the command line", "from the command line"]
    code, out = run(["terminals", "capture", "--url", url, "build", "--start", "0", "--end", "0", "--ansi"])
    assert out == "\x1b[1mfake$\x1b[0m echo from the command line\n"
    code, out = run(["terminals", "kill", "--url", url, "build"])
    assert (code, out) == (0, f"killed {terminal_id}\n")
    code, out = run(["terminals", "ls", "--url", url])
    assert terminal_id not in out


def test_tail_prints_the_screen_then_the_output_until_the_exit(daemon: FakeDaemon) -> None:
    terminal = daemon.terminals.create(CWD, name="tailed")
    daemon.terminals.type(terminal.id, "echo before\r")
    out = Watched()
    outcome: list[int] = []
    tail = threading.Thread(
        target=lambda: outcome.append(run(["terminals", "tail", "--url", daemon.url, "tailed"], out)[0])
    )
    tail.start()
    try:
        out.wait_for("fake$ echo before\nbefore\nfake$")  # the screen when tailing started
        daemon.terminals.type(terminal.id, "echo while tailing\r")
        out.wait_for("while tailing\r\n")
        daemon.terminals.type(terminal.id, "exit\r")
    finally:
        tail.join(10)
    assert outcome == [0]
    assert out.getvalue().endswith(f"exit\r\n\n[terminal {terminal.id} exited]\n")


def test_terminal_command_errors(daemon: FakeDaemon, capsys: pytest.CaptureFixture[str]) -> None:
    url = daemon.url
    daemon.terminals.create(CWD, name="twin")
    daemon.terminals.create(CWD, name="twin")
    assert run(["terminals", "kill", "--url", url, "twin"])[0] == 1
    assert "'twin' names 2 terminals" in capsys.readouterr().err
    assert run(["terminals", "capture", "--url", url, "nothing-like-it"])[0] == 1
    assert "no terminal 'nothing-like-it'" in capsys.readouterr().err
    code, _ = run(["terminals", "ls", "--url", url, "--workspace", "w1"])
    if daemon.host_kind is dc.HostKind.CAPABLE:
        assert code == 0
    else:
        assert code == 1
        assert "the daemon is too old for this: Update the host" in capsys.readouterr().err


def test_argument_parsers() -> None:
    assert parse_size("24x80") == (24, 80)
    assert parse_detach_key("^]") == b"\x1d"
    assert parse_detach_key("C-a") == b"\x01"
    assert parse_detach_key("q") == b"q"
    for bad in ("0x80", "24", "x"):
        with pytest.raises(argparse.ArgumentTypeError, match="ROWSxCOLS"):
            parse_size(bad)
    with pytest.raises(argparse.ArgumentTypeError, match="detach key"):
        parse_detach_key("^é")


# ------------------------------------------------------------------------------ attach on a pty


class Pty:
    """A pseudo-terminal: the test holds the master side, ``attach`` runs on the other."""

    def __init__(self, rows: int, cols: int) -> None:
        self.master, self.slave = os.openpty()
        self.resize(rows, cols)
        self.modes = termios.tcgetattr(self.slave)
        self.seen = b""

    def resize(self, rows: int, cols: int) -> None:
        fcntl.ioctl(self.slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def type(self, data: bytes) -> None:
        os.write(self.master, data)

    def read_until(self, wanted: bytes, timeout: float = 10.0, *, count: int = 1) -> bytes:
        """Read what the program wrote until ``wanted`` appeared ``count`` times; return everything
        read so far."""
        deadline = time.monotonic() + timeout
        while self.seen.count(wanted) < count:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"{wanted!r} not shown; the screen got {self.seen[-400:]!r}")
            ready, _, _ = select.select([self.master], [], [], remaining)
            if ready:
                try:
                    self.seen += os.read(self.master, 65536)
                except OSError as exc:  # EIO: the program ended and the slave is closed
                    if exc.errno != errno.EIO:
                        raise
                    break
        return self.seen

    def close(self) -> None:
        for fd in (self.master, self.slave):
            with contextlib.suppress(OSError):
                os.close(fd)


@contextlib.contextmanager
def attached(daemon: FakeDaemon, terminal: str, *extra: str) -> Iterator[tuple[Pty, subprocess.Popen[bytes]]]:
    pty = Pty(20, 70)
    command = [sys.executable, "-m", "daemon_client", "attach", terminal, "--url", daemon.url, *extra]
    process = subprocess.Popen(command, stdin=pty.slave, stdout=pty.slave, stderr=pty.slave, cwd=ROOT)
    try:
        yield pty, process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(10)
        pty.close()


def test_attach_both_ways_resize_and_detach(daemon: FakeDaemon) -> None:
    terminal = daemon.terminals.create(CWD, name="attached")
    daemon.terminals.type(terminal.id, "echo earlier\r")
    with attached(daemon, "attached") as (pty, process):
        pty.read_until(b"\x1b[?1049h")  # the alternate screen
        pty.read_until(b"fake$ echo earlier\r\nearlier\r\nfake$")  # the remote screen, drawn
        pty.read_until(b"\r\x1b[K")  # the remote terminal took this one's size (20x70) and redrew its prompt
        shell = daemon.terminals.get(terminal.id).shell  # type: ignore[union-attr]
        assert (shell.rows, shell.cols) == (20, 70)
        pty.type(b"echo typed here\r")
        pty.read_until(b"echo typed here\r\ntyped here\r\n")
        redraws = pty.seen.count(b"\r\x1b[K")
        pty.resize(33, 101)
        process.send_signal(signal.SIGWINCH)
        pty.read_until(b"\r\x1b[K", count=redraws + 1)  # the remote terminal redrew for its new size
        assert (shell.rows, shell.cols) == (33, 101)
        pty.type(b"\x1d")  # Ctrl-]
        screen = pty.read_until(b"keeps running]")
        assert process.wait(10) == 0
        assert termios.tcgetattr(pty.slave) == pty.modes  # raw mode undone
    assert screen.rfind(b"\x1b[?1049l") > screen.rfind(b"typed here")  # the previous screen is back
    assert b"[detached: terminal " in screen
    inputs = [(i.via, i.kind) for i in daemon.terminals.inputs if i.terminal_id == terminal.id]
    assert ("binary", "input") in inputs
    assert inputs.count(("binary", "resize")) == 2
    assert daemon.terminals.get(terminal.id) is not None  # still running


def test_attach_ends_when_the_terminal_exits(daemon: FakeDaemon) -> None:
    terminal = daemon.terminals.create(CWD, name="leaving")
    with attached(daemon, terminal.id[:6], "--detach-key", "C-x") as (pty, process):
        pty.read_until(b"fake$")
        pty.type(b"\x1d")  # not the detach key this time: typed into the remote terminal
        pty.type(b"exit\r")
        screen = pty.read_until(b"exited]")
        assert process.wait(10) == 0
        assert termios.tcgetattr(pty.slave) == pty.modes  # raw mode undone
    assert b"\x1b[?1049l" in screen
    assert f"[terminal {terminal.id} exited]".encode() in screen
    assert daemon.terminals.get(terminal.id) is None
