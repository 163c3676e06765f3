"""``daemon-client`` in a subprocess, its output read line by line with timeouts.

One reader thread per pipe queues the lines as they come; tests wait for a line that
matches (never sleep and hope). A reader can close the pipe after a number of lines, as
``| head -1`` does. The ``cli`` fixture (tests/cli/conftest.py) kills what is still running
and joins the readers.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO

import pytest

from daemon_client.cli.password import COMMAND_LINE_WARNING

WAIT = 15.0


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a run: no discovery variable of the developer's machine leaks in."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PASEO_") and k not in ("LC_ALL", "LANG")}
    env.update({"PASEO_HOME": str(home), "PYTHONIOENCODING": "utf-8", "LC_ALL": "C.UTF-8"})
    env.update(extra)
    return env


class Lines:
    """The lines of one pipe, read by a thread."""

    def __init__(self, stream: IO[bytes], encoding: str, close_after: int | None) -> None:
        self.lines: list[str] = []
        self.closed = threading.Event()
        self._queue: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._encoding = encoding
        self._close_after = close_after
        self.thread = threading.Thread(target=self._read, args=(stream,), name="cli-test-reader", daemon=True)
        self.thread.start()

    def _read(self, stream: IO[bytes]) -> None:
        count = 0
        try:
            for raw in iter(stream.readline, b""):
                self._queue.put(raw.decode(self._encoding, "replace"))
                count += 1
                if self._close_after is not None and count >= self._close_after:
                    break
        finally:
            stream.close()
            self.closed.set()
            self._queue.put(None)

    def wait_for(self, match: str | Callable[[str], bool], timeout: float = WAIT) -> str:
        """The first new line containing ``match`` (or accepted by it); fails after ``timeout``."""
        test = (lambda line: match in line) if isinstance(match, str) else match
        while True:
            try:
                line = self._queue.get(timeout=timeout)
            except queue.Empty:
                pytest.fail(f"no line matching {match!r} within {timeout:g} s; got {self.lines!r}")
            if line is None:
                self._queue.put(None)
                pytest.fail(f"the pipe ended before a line matching {match!r}; got {self.lines!r}")
            self.lines.append(line)
            if test(line):
                return line

    def rest(self) -> str:
        """Every line not read yet, up to the end of the pipe (call after the process ended)."""
        self.thread.join(WAIT)
        while True:
            line = self._queue.get(timeout=WAIT)
            if line is None:
                self._queue.put(None)
                return "".join(self.lines)
            self.lines.append(line)


class CliProcess:
    """One run of the command; ``argv`` without the program name."""

    def __init__(
        self,
        argv: list[str],
        env: dict[str, str],
        *,
        stdin: bytes | None = None,
        close_stdout_after: int | None = None,
        encoding: str = "utf-8",
        stderr: int | None = None,
    ) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "daemon_client", *argv],
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr if stderr is not None else subprocess.PIPE,
            env=env,
        )
        if stdin is not None:
            assert self.proc.stdin is not None
            self.proc.stdin.write(stdin)
            self.proc.stdin.close()
        assert self.proc.stdout is not None
        self.out = Lines(self.proc.stdout, encoding, close_stdout_after)
        self.err = Lines(self.proc.stderr, encoding, None) if self.proc.stderr is not None else None

    def signal(self, signum: signal.Signals) -> None:
        self.proc.send_signal(signum)

    def finish(self, timeout: float = WAIT) -> tuple[int, str, str]:
        """Wait for the exit; returns the status, the whole stdout and the whole stderr."""
        code = self.proc.wait(timeout)
        out = self.out.rest()
        err = self.err.rest() if self.err is not None else ""
        return code, out, err

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(WAIT)
        self.out.thread.join(WAIT)
        if self.err is not None:
            self.err.thread.join(WAIT)


def run_all(processes: list[CliProcess], timeout: float = WAIT) -> list[tuple[int, str, str]]:
    """Wait for several processes started together (they run in parallel)."""
    return [process.finish(timeout) for process in processes]


def one_error_line(err: str, prefix: str = "daemon-client: ") -> str:
    """The single line of ``err``, which must start with ``prefix`` and hold no traceback (the
    warning about ``--password`` on the command line, when the test used it, is not counted)."""
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if not line.startswith(COMMAND_LINE_WARNING)]
    assert len(lines) == 1, err
    assert lines[0].startswith(prefix), err
    return lines[0]
