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

import json
import os
import socket
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from daemon_client.discovery.hosts import DaemonTarget, parse_target, relay_target
from daemon_client.discovery.offer import RelayTarget, redact_offer

DEFAULT_HOST = "localhost:6767"
PID_FILE = "paseo.pid"
CONFIG_FILE = "config.json"
_MAX_FILE_BYTES = 1 << 20


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


def _read_json(path: Path) -> tuple[dict[str, Any] | None, str]:
    """The JSON object in ``path``, or ``None`` and why not."""
    try:
        with path.open("rb") as handle:
            data = handle.read(_MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        return None, "no such file"
    except OSError as exc:
        return None, f"unreadable ({exc.strerror or exc})"
    if len(data) > _MAX_FILE_BYTES:
        return None, "skipped: larger than 1 MiB"
    try:
        parsed = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        return None, f"skipped: not JSON ({exc})"
    if not isinstance(parsed, dict):
        return None, "skipped: not a JSON object"
    return parsed, ""


def _pid_gone(lock: Mapping[str, Any]) -> int | None:
    """The pid of a lock written on this machine by a process that no longer runs, else ``None``."""
    pid, host = lock.get("pid"), lock.get("hostname")
    if sys.platform == "win32" or not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return None
    if not isinstance(host, str) or host != socket.gethostname():
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return pid
    except OSError:  # EPERM: it runs under another user
        return None
    return None


def _shown(raw: str, target: DaemonTarget) -> str:
    """``raw`` as it may be logged: the target's URL instead when ``raw`` carries a password or
    a pairing offer."""
    return target.url if target.password or target.relay is not None else raw.strip()


class _Search:
    """The steps of one resolution, in order; the first usable value wins."""

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.chosen: tuple[DaemonTarget, str, str] | None = None

    def offer(self, source: str, where: str, value: object, *, listen: bool = True) -> None:
        if value is None:
            self.steps.append(Step(source, where, None, "not set"))
            return
        if not isinstance(value, str) or not value.strip():
            self.steps.append(Step(source, where, repr(value), "skipped: not an address"))
            return
        try:
            target = parse_target(value, listen=listen)
        except ValueError as exc:
            self.steps.append(Step(source, where, redact_offer(value), f"skipped: {exc}"))
            return
        shown = _shown(value, target)
        if self.chosen is not None:
            self.steps.append(Step(source, where, shown, "not needed"))
            return
        self.chosen = (target, source, f"{where} = {shown}")
        self.steps.append(Step(source, where, shown, "used"))

    def missing(self, source: str, where: str, note: str) -> None:
        self.steps.append(Step(source, where, None, note))


def _pid_file_step(search: _Search, home: Path) -> None:
    path = home / PID_FILE
    lock, why = _read_json(path)
    if lock is None:
        search.missing("pid file", str(path), why)
        return
    gone = _pid_gone(lock)
    if gone is not None:
        search.missing("pid file", str(path), f"skipped: the daemon (pid {gone}) is not running")
        return
    legacy = not isinstance(lock.get("listen"), str) and isinstance(lock.get("sockPath"), str)
    field = "sockPath" if legacy else "listen"
    search.offer("pid file", f"{path} ({field})", lock.get(field))


def _config_step(search: _Search, home: Path) -> None:
    path = home / CONFIG_FILE
    config, why = _read_json(path)
    if config is None:
        search.missing("config", str(path), why)
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
    _pid_file_step(search, home)
    _config_step(search, home)
    search.offer("default", "default", DEFAULT_HOST, listen=False)
    if environ.get("PASEO_URL"):
        search.missing("PASEO_URL", "PASEO_URL", "ignored: a workspace service's own URL, never the daemon's")
    assert search.chosen is not None  # the default always parses
    target, source, reason = search.chosen
    return Resolution(target, source, reason, False, tuple(search.steps))
