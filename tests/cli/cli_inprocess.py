"""``main(argv, out=...)`` in the test process, for the long-running commands: the command runs
on a helper thread, writing to a :class:`Pipe` that the test waits on and can close the way a
reader such as ``head`` does (the next write fails with ``EPIPE``)."""

from __future__ import annotations

import errno
import io
import threading

from daemon_client.cli.main import main

WAIT = 10.0


class Pipe(io.StringIO):
    """Standard output read by a script: written text is kept, waited for, and the read end can close."""

    def __init__(self) -> None:
        super().__init__()
        self._changed = threading.Condition()
        self._hung_up = False

    def write(self, text: str) -> int:
        with self._changed:
            if self._hung_up:
                raise BrokenPipeError(errno.EPIPE, "Broken pipe")
            written = super().write(text)
            self._changed.notify_all()
        return written

    def wait_for(self, text: str, timeout: float = WAIT) -> str:
        """Everything written once ``text`` is among it; fails after ``timeout``."""
        with self._changed:
            if not self._changed.wait_for(lambda: text in self.getvalue(), timeout):
                raise AssertionError(f"{text!r} not written within {timeout:g} s; got {self.getvalue()!r}")
            return self.getvalue()

    def hang_up(self) -> None:
        """The reader closes the pipe: every later write fails."""
        with self._changed:
            self._hung_up = True


class Background:
    """``main(argv, out=pipe)`` on a helper thread; :meth:`join` returns its exit status."""

    def __init__(self, argv: list[str], out: Pipe | None = None) -> None:
        self.out = out or Pipe()
        self._status: list[int] = []
        self._thread = threading.Thread(target=self._run, args=(argv,), name="cli-test-main")
        self._thread.start()

    def _run(self, argv: list[str]) -> None:
        self._status.append(main(argv, out=self.out))

    def join(self, timeout: float = WAIT) -> int:
        self._thread.join(timeout)
        assert self._status, "the command did not finish"
        return self._status[0]


def run(argv: list[str]) -> tuple[int, str]:
    """``main(argv)`` on this thread: its exit status and what it wrote to standard output."""
    out = io.StringIO()
    code = main(argv, out=out)
    return code, out.getvalue()
