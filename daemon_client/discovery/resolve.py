"""Which daemon to connect to when no address is given: the order Paseo's own CLI follows.

1. ``PASEO_HOST`` (any address form, a pairing-offer link included);
2. ``PASEO_LISTEN``, the address the daemon is told to listen on;
3. ``listen`` (else ``sockPath``) of the running daemon's pid file ``$PASEO_HOME/paseo.pid``;
4. ``daemon.listen`` of the daemon's config ``$PASEO_HOME/config.json``;
5. ``localhost:6767``.

``PASEO_HOME`` defaults to ``~/.paseo``. The first step that yields a usable address wins; the
others are still recorded, so that :class:`Resolution` can explain the choice. An unusable
``PASEO_HOST`` raises ``ValueError``; an unusable value found in steps 2-4 is skipped with a note.
``PASEO_URL`` is never read: the daemon sets it for the workspace services it starts, to their
own proxy URL. Any thread may call :func:`resolve`; it reads the environment and two small files.
"""

from __future__ import annotations

import logging
import os
import socket
import stat
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from daemon_client import _nesting as nesting
from daemon_client.discovery.hosts import DaemonTarget, parse_target, redact_address, relay_target
from daemon_client.discovery.offer import RelayTarget

DEFAULT_HOST = "localhost:6767"
PID_FILE = "paseo.pid"
CONFIG_FILE = "config.json"
_MAX_FILE_BYTES = 1 << 20
_MAX_PID = (1 << 31) - 1
"""The largest pid a process can have anywhere (``pid_t`` is a signed 32-bit integer)."""
_UNUSABLE = ("skipped", "unreadable")
"""How the note of a file found but unusable begins (a missing file is no news)."""
_log = logging.getLogger("daemon_client.discovery")


@attrs.frozen
class Step:
    """One place the resolver looked: what it found there and what it made of it."""

    source: str
    """``url``, ``PASEO_HOST``, ``PASEO_LISTEN``, ``pid file``, ``config`` or ``default``."""
    where: str
    """The variable, file and field, e.g. ``/home/me/.paseo/paseo.pid (listen)``."""
    value: str | None
    """The address found there, if any."""
    note: str
    """``used``, ``not set``, ``no such file``, or why the value was skipped."""


@attrs.frozen
class Resolution:
    """The daemon address chosen, and why.

    ``explicit`` is true for an address given by the caller or ``PASEO_HOST``: it is kept for
    the client's life. Otherwise it is looked up again before every reconnect.
    """

    target: DaemonTarget
    """The address chosen."""
    source: str
    """Where it came from: ``url``, ``PASEO_HOST``, ``PASEO_LISTEN``, ``pid file``, ``config``, ``default``."""
    reason: str
    """One line, e.g. ``/home/me/.paseo/paseo.pid (listen) = 127.0.0.1:6767``."""
    explicit: bool
    """Given by the caller or ``PASEO_HOST``: never looked up again."""
    steps: tuple[Step, ...]
    """Every place looked at, in order, with what was found there."""

    def describe(self) -> str:
        """Several lines: the chosen address, then every place looked at."""
        lines = [f"daemon   {self.target.url}", f"found    {self.reason}"]
        for index, step in enumerate(self.steps):
            head = "checked  " if index == 0 else "         "
            value = f" = {step.value}" if step.value is not None else ""
            lines.append(f"{head}{step.where}{value}: {step.note}")
        return "\n".join(lines)


def paseo_home(env: Mapping[str, str] | None = None) -> Path:
    """``$PASEO_HOME`` (``~`` expanded), else ``~/.paseo``."""
    environ = os.environ if env is None else env
    raw = environ.get("PASEO_HOME", "").strip()
    return Path(os.path.expanduser(raw or "~/.paseo")).absolute()


def _read_regular_file(path: Path) -> tuple[bytes | None, str]:
    """The bytes of ``path`` if it is a regular file of at most 1 MiB, else ``None`` and why not.

    Opened without blocking (a FIFO or a device at that path would hold the open or the read
    forever) and checked with ``fstat`` on the open descriptor, so nothing swapped in between
    the check and the read is read.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        return None, "no such file"
    except OSError as exc:
        return None, f"unreadable ({exc.strerror or exc})"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None, "skipped: not a regular file"
        if info.st_size > _MAX_FILE_BYTES:
            return None, "skipped: larger than 1 MiB"
        chunks: list[bytes] = []
        size = 0
        while size <= _MAX_FILE_BYTES:  # a file growing meanwhile is read up to the bound only
            chunk = os.read(fd, _MAX_FILE_BYTES + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        return None, f"unreadable ({exc.strerror or exc})"
    finally:
        os.close(fd)
    if size > _MAX_FILE_BYTES:
        return None, "skipped: larger than 1 MiB"
    return b"".join(chunks), ""


def _read_json(path: Path) -> tuple[dict[str, Any] | None, str]:
    """The JSON object in ``path``, or ``None`` and why not (never an exception for its content)."""
    data, why = _read_regular_file(path)
    if data is None:
        return None, why
    try:
        parsed = nesting.loads(data.decode("utf-8"), "the file")
    except nesting.NestingTooDeep as exc:
        return None, f"skipped: {exc}"
    except (UnicodeDecodeError, ValueError) as exc:
        return None, f"skipped: not JSON ({exc})"
    if not isinstance(parsed, dict):
        return None, "skipped: not a JSON object"
    return parsed, ""


def _pid_unusable(lock: Mapping[str, Any]) -> str | None:
    """Why the lock cannot be the running daemon's: written on this machine by a process that no
    longer runs, or naming a pid no process can have; ``None`` when it may be (or cannot be told)."""
    pid, host = lock.get("pid"), lock.get("hostname")
    if sys.platform == "win32" or not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return None
    if not isinstance(host, str) or host != socket.gethostname():
        return None
    if pid > _MAX_PID:
        return f"skipped: {pid} is not a process id"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return f"skipped: the daemon (pid {pid}) is not running"
    except (OverflowError, ValueError):
        return f"skipped: {pid} is not a process id"
    except OSError:  # EPERM: it runs under another user
        return None
    return None


def _shown(raw: str, target: DaemonTarget) -> str:
    """``raw`` as it may be logged: the target's URL instead when ``raw`` carries a password or
    a pairing offer."""
    return target.url if target.password or target.relay is not None else raw.strip()


class _Search:
    """The steps of one resolution, in order; the first usable value wins. A value found but
    unusable is skipped with one log line (no credentials in it: the values are not logged)."""

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.chosen: tuple[DaemonTarget, str, str] | None = None

    def offer(self, source: str, where: str, value: object, *, listen: bool = True) -> None:
        if value is None:
            self.steps.append(Step(source, where, None, "not set"))
            return
        if not isinstance(value, str) or not value.strip():
            self.skip(source, where, _preview(repr(value)), "skipped: not an address")
            return
        try:
            target = parse_target(value, listen=listen)
        except ValueError as exc:
            self.skip(source, where, redact_address(value), f"skipped: {exc}")
            return
        shown = _shown(value, target)
        if self.chosen is not None:
            self.steps.append(Step(source, where, shown, "not needed"))
            return
        self.chosen = (target, source, f"{where} = {shown}")
        self.steps.append(Step(source, where, shown, "used"))

    def missing(self, source: str, where: str, note: str) -> None:
        self.steps.append(Step(source, where, None, note))

    def unread(self, source: str, where: str, why: str) -> None:
        """A file not read: missing (no news), or found but unusable (skipped, logged)."""
        if why.startswith(_UNUSABLE):
            self.skip(source, where, None, why)
        else:
            self.missing(source, where, why)

    def skip(self, source: str, where: str, value: str | None, note: str) -> None:
        self.steps.append(Step(source, where, value, note))
        _log.warning("daemon discovery: %s %s", where, note)


def _preview(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} chars)"


def _file_step(search: _Search, source: str, path: Path, step: Callable[[_Search, Path], None]) -> None:
    """One file's step; whatever its content makes go wrong skips the step, never the resolution."""
    try:
        step(search, path)
    except Exception as exc:  # noqa: BLE001 - untrusted content: an unforeseen failure is one more unusable step
        search.skip(source, str(path), None, f"skipped: unusable ({type(exc).__name__})")


def _pid_file_step(search: _Search, path: Path) -> None:
    lock, why = _read_json(path)
    if lock is None:
        search.unread("pid file", str(path), why)
        return
    unusable = _pid_unusable(lock)
    if unusable is not None:
        search.skip("pid file", str(path), None, unusable)
        return
    legacy = not isinstance(lock.get("listen"), str) and isinstance(lock.get("sockPath"), str)
    field = "sockPath" if legacy else "listen"
    search.offer("pid file", f"{path} ({field})", lock.get(field))


def _config_step(search: _Search, path: Path) -> None:
    config, why = _read_json(path)
    if config is None:
        search.unread("config", str(path), why)
        return
    daemon = config.get("daemon")
    search.offer("config", f"{path} (daemon.listen)", daemon.get("listen") if isinstance(daemon, dict) else None)


def resolve(url: str | RelayTarget | None = None, *, env: Mapping[str, str] | None = None) -> Resolution:
    """Choose the daemon: ``url`` (an address or a :class:`RelayTarget`) if given, else the
    order in the module docstring.

    Raises ``ValueError`` when ``url`` or ``PASEO_HOST`` is not an address.
    """
    if isinstance(url, RelayTarget):
        target = relay_target(url)
        return Resolution(target, "url", "given explicitly", True, (Step("url", "url", target.url, "used"),))
    if url is not None:
        target = parse_target(url)
        steps = (Step("url", "url", _shown(url, target), "used"),)
        return Resolution(target, "url", "given explicitly", True, steps)
    environ = os.environ if env is None else env
    host = environ.get("PASEO_HOST", "").strip()
    if host:
        try:
            target = parse_target(host)
        except ValueError as exc:
            raise ValueError(f"PASEO_HOST: {exc}") from None
        shown = _shown(host, target)
        steps = (Step("PASEO_HOST", "PASEO_HOST", shown, "used"),)
        return Resolution(target, "PASEO_HOST", f"PASEO_HOST = {shown}", True, steps)
    search = _Search()
    search.missing("PASEO_HOST", "PASEO_HOST", "not set")
    search.offer("PASEO_LISTEN", "PASEO_LISTEN", environ.get("PASEO_LISTEN") or None)
    home = paseo_home(environ)
    _file_step(search, "pid file", home / PID_FILE, _pid_file_step)
    _file_step(search, "config", home / CONFIG_FILE, _config_step)
    search.offer("default", "default", DEFAULT_HOST, listen=False)
    if environ.get("PASEO_URL"):
        search.missing("PASEO_URL", "PASEO_URL", "ignored: a workspace service's own URL, never the daemon's")
    assert search.chosen is not None  # the default always parses
    target, source, reason = search.chosen
    return Resolution(target, source, reason, False, tuple(search.steps))
