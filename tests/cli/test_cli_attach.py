"""``attach`` in the test process, with standard input a pipe rather than a terminal (no raw mode,
no size to take), and the option errors of ``attach`` and ``terminals``. Against the fake
daemon on loopback; the pseudo-terminal sessions are in test_cli_terminals.py."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import sys
from collections.abc import Callable, Iterator

import pytest

import daemon_client as dc
from daemon_client.cli import attach as attaching
from daemon_client.cli.attach import ENTER_SCREEN, LEAVE_SCREEN, Attachment
from daemon_client.cli.main import main
from daemon_client.testing import FakeDaemon

from .cli_inprocess import Background, run

CWD = "/home/dev/projects/demo"


@pytest.fixture
def daemon() -> Iterator[FakeDaemon]:
    with FakeDaemon(host_kind=dc.HostKind.CAPABLE) as fake:
        fake.serve()
        yield fake


class PipeInput:
    """The write end of the pipe standard input reads. ``close()`` closes it once: a second
    ``os.close`` of the same number would close whatever file got that number meanwhile (a
    socket of a thread still running), and that file's owner would later close someone else's."""

    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd

    def write(self, data: bytes) -> None:
        assert self._fd is not None
        os.write(self._fd, data)

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


@pytest.fixture
def stdin_pipe(monkeypatch: pytest.MonkeyPatch) -> Iterator[PipeInput]:
    """Standard input is the read end of a pipe; the test gets the write end."""
    read_end, write_end = os.pipe()
    reader = os.fdopen(read_end, "rb")
    monkeypatch.setattr(sys, "stdin", reader)
    writer = PipeInput(write_end)
    try:
        yield writer
    finally:
        writer.close()
        reader.close()


def test_attach_refuses_a_standard_input_that_is_not_a_terminal(
    daemon: FakeDaemon, stdin_pipe: PipeInput, capsys: pytest.CaptureFixture[str]
) -> None:
    daemon.terminals.create(CWD, name="piped")
    stdin_pipe.write(b"echo piped\r")
    stdin_pipe.close()
    assert run(["attach", "piped", "--url", daemon.url]) == (2, "")  # no screen escapes either
    assert capsys.readouterr().err == (
        "daemon-client: attach needs a terminal on standard input (it reads raw keys); "
        "from a script use: daemon-client terminals send TERMINAL TEXT... (or terminals tail)\n"
    )
    assert daemon.terminals.inputs == []
    assert daemon.accepted_count == 0  # refused before connecting


@pytest.fixture
def as_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """The piped standard input passes for a terminal (the session itself is tested without a pty)."""
    monkeypatch.setattr(attaching, "reads_keys", lambda fd: True)


@pytest.mark.usefixtures("as_terminal")
def test_attach_types_what_is_piped_in_and_ends_with_the_input(daemon: FakeDaemon, stdin_pipe: PipeInput) -> None:
    terminal = daemon.terminals.create(CWD, name="piped")
    stdin_pipe.write("echo piped ✓\r".encode())
    stdin_pipe.close()
    handler = signal.getsignal(signal.SIGWINCH)
    code, out = run(["attach", "piped", "--url", daemon.url])
    assert code == 0
    assert out.startswith("\x1b[?1049h")
    assert out.endswith(f"\x1b[?1049l[end of input: terminal {terminal.id} keeps running]\r\n")
    assert signal.getsignal(signal.SIGWINCH) == handler  # the resize handler is put back
    inputs = [(i.kind, i.data) for i in daemon.terminals.inputs if i.terminal_id == terminal.id]
    assert inputs == [("input", "echo piped ✓\r")]  # no size to send: the output is not a terminal
    assert daemon.terminals.get(terminal.id) is not None


@pytest.mark.usefixtures("as_terminal")
def test_attach_off_the_main_thread_detaches_after_the_duration(daemon: FakeDaemon, stdin_pipe: PipeInput) -> None:
    terminal = daemon.terminals.create(CWD, name="timed")
    attached = Background(["attach", terminal.id, "--url", daemon.url, "--duration", "0.2"])
    assert attached.join() == 0
    assert attached.out.getvalue().endswith(f"[time is up: terminal {terminal.id} keeps running]\r\n")
    assert daemon.terminals.get(terminal.id) is not None


def test_a_bad_detach_key_is_a_usage_error(daemon: FakeDaemon, capsys: pytest.CaptureFixture[str]) -> None:
    daemon.terminals.create(CWD, name="keyed")
    assert run(["attach", "keyed", "--url", daemon.url, "--detach-key", "ab"]) == (2, "")
    assert capsys.readouterr().err == (
        "daemon-client: --detach-key: a detach key is ^X, C-x or one ASCII character, not 'ab'\n"
    )


@pytest.mark.parametrize("size", ["0x80", "tall", "24"])
def test_a_bad_terminal_size_is_a_usage_error(size: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["terminals", "new", "--size", size])
    assert exited.value.code == 2
    assert f"expected ROWSxCOLS such as 24x80, got {size!r}" in capsys.readouterr().err


def test_terminals_tail_stops_after_the_duration(daemon: FakeDaemon) -> None:
    terminal = daemon.terminals.create(CWD, name="tailed")
    daemon.terminals.type(terminal.id, "echo earlier\r")
    code, out = run(["terminals", "tail", "tailed", "--url", daemon.url, "--duration", "0.2"])
    assert code == 0
    assert "earlier" in out
    assert "exited]" not in out


class _LateStream:
    """A terminal handle whose stream delivers output only after the session ended (a callback
    that was already on its way when the stream was released)."""

    def __init__(self) -> None:
        self.on_output: Callable[[str], object] | None = None

    def stream(
        self, *, on_output: Callable[[str], object], **callbacks: object
    ) -> contextlib.AbstractContextManager[None]:
        self.on_output = on_output
        return contextlib.nullcontext()


def test_output_arriving_after_the_screen_was_left_is_not_drawn_on_the_previous_screen() -> None:
    handle = _LateStream()
    read_end, write_end = os.pipe()
    os.close(write_end)  # input ends at once
    out = io.StringIO()
    try:
        reason = Attachment(handle, read_end, out, b"\x1d").run(None)  # type: ignore[arg-type]
    finally:
        os.close(read_end)
    assert reason == "end of input"
    assert handle.on_output is not None
    handle.on_output("late output")
    assert out.getvalue() == ENTER_SCREEN + LEAVE_SCREEN


def test_terminals_tail_prints_the_screen_once_even_when_the_daemon_sends_it_again(daemon: FakeDaemon) -> None:
    terminal = daemon.terminals.create(CWD, name="reset")
    daemon.terminals.type(terminal.id, "echo earlier\r")
    tail = Background(["terminals", "tail", terminal.id, "--url", daemon.url])
    tail.out.wait_for("earlier\n")
    daemon.terminals.type(terminal.id, "echo later\r")
    tail.out.wait_for("later\r\n")
    daemon.terminals.send_snapshot(terminal.id)  # a daemon-side reset: the whole screen again
    daemon.terminals.type(terminal.id, "exit\r")
    assert tail.join() == 0
    out = tail.out.getvalue()
    assert out.count("echo earlier") == 1
    assert out.count("echo later") == 1
    assert out.endswith(f"\n[terminal {terminal.id} exited]\n")


def test_a_second_double_dash_is_not_taken_as_the_program(daemon: FakeDaemon) -> None:
    code, out = run(["terminals", "new", "--url", daemon.url, "--cwd", CWD, "--", "--", "/bin/fake", "-l"])
    assert code == 0
    shell = daemon.terminals.get(out.strip()).shell  # type: ignore[union-attr]
    assert shell.title == "/bin/fake -l"


def test_attach_refuses_a_standard_input_without_a_file_descriptor(
    daemon: FakeDaemon, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("typed"))
    assert run(["attach", "any", "--url", daemon.url]) == (2, "")
    assert capsys.readouterr().err == f"daemon-client: {attaching.NOT_A_TERMINAL}\n"
