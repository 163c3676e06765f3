"""The host store's file: where it is, its TOML text, and reading, locking and replacing it safely.

* :func:`default_path`: ``$DAEMON_CLIENT_HOSTS``, else the user configuration directory the
  way ``platformdirs`` computes it (``$XDG_CONFIG_HOME`` or ``~/.config`` on Linux and BSD,
  ``~/Library/Application Support`` on macOS, ``%APPDATA%`` on Windows) +
  ``daemon-client/hosts.toml``;
* :func:`parse` reads the TOML (``tomllib``; ``tomli`` on Python 3.10) and :func:`emit` writes
  the store's own schema, with TOML basic-string escaping;
* :func:`read_private` opens the file without blocking, checks with ``fstat`` that it is a
  regular file of at most 1 MiB and, on POSIX, that neither group nor others may read or
  write it (it holds passwords and pairing offers);
* :func:`replace_atomically` writes a temporary file (``O_EXCL``, mode 0600) in the same
  directory, syncs it and renames it over the store; :func:`locked` holds the store's lock
  (``flock`` on a lock file beside it, where ``fcntl`` exists, and a lock per path in this
  process), always within a bound.

Any thread may call these functions; nothing here logs or shows a value of the file.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import secrets
import stat
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from daemon_client.errors import DaemonClientError

ENV = "DAEMON_CLIENT_HOSTS"
APP_DIR = "daemon-client"
FILE_NAME = "hosts.toml"
MAX_BYTES = 1 << 20
LOCK_TIMEOUT = 10.0
"""Seconds a read-modify-write waits for the store's lock before giving up."""


class HostStoreError(DaemonClientError):
    """The host store cannot be read or written, or refuses a change; the message says why."""


def config_dir(env: Mapping[str, str] | None = None, platform: str | None = None) -> Path:
    """The user configuration directory, as ``platformdirs.user_config_dir`` computes it."""
    environ = os.environ if env is None else env
    platform = sys.platform if platform is None else platform
    if platform == "win32":
        appdata = environ.get("APPDATA", "").strip()
        return Path(appdata) if appdata else Path(os.path.expanduser("~")) / "AppData" / "Roaming"
    if platform == "darwin":
        return Path(os.path.expanduser("~/Library/Application Support"))
    xdg = environ.get("XDG_CONFIG_HOME", "")
    return Path(os.path.expanduser(xdg if xdg.strip() else "~/.config"))


def default_path(env: Mapping[str, str] | None = None, platform: str | None = None) -> Path:
    """``$DAEMON_CLIENT_HOSTS`` (``~`` expanded), else ``<config dir>/daemon-client/hosts.toml``."""
    environ = os.environ if env is None else env
    given = environ.get(ENV, "").strip()
    if given:
        return Path(os.path.expanduser(given))
    return config_dir(environ, platform) / APP_DIR / FILE_NAME


# ----------------------------------------------------------------------------- TOML


def _loads(text: str) -> dict[str, Any]:
    name = "tomllib" if sys.version_info >= (3, 11) else "tomli"
    try:
        module = importlib.import_module(name)
    except ImportError:  # pragma: no cover - Python 3.10 without tomli
        raise HostStoreError(
            "reading the host store needs a TOML parser on Python 3.10: pip install 'tomli>=1.1'"
        ) from None
    document: dict[str, Any] = module.loads(text)
    return document


def parse(data: bytes, path: Path) -> dict[str, Any]:
    """The TOML document in ``data``; :class:`HostStoreError` naming ``path`` if it is none."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise HostStoreError(f"the host store {path} is not UTF-8 text") from None
    try:
        return _loads(text)
    except ValueError as exc:  # tomllib.TOMLDecodeError: its message gives a line and column, no value
        raise HostStoreError(f"the host store {path} is not valid TOML: {exc}") from None


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def toml_string(value: str) -> str:
    """``value`` as a TOML basic string: quotes, backslashes and control characters escaped.

    Raises ``ValueError`` for a lone surrogate, which no TOML file can hold."""
    out = ['"']
    for ch in value:
        escaped = _ESCAPES.get(ch)
        if escaped is not None:
            out.append(escaped)
        elif ch < " " or ch == "\x7f":
            out.append(f"\\u{ord(ch):04X}")
        elif "\ud800" <= ch <= "\udfff":
            raise ValueError("a lone surrogate cannot be written to a TOML file")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


HEADER = (
    "# daemon-client host profiles: `daemon-client hosts add/rm` edit this file.\n"
    "# It holds daemon passwords and pairing offers: keep it private (chmod 600).\n"
)


def emit(hosts: list[dict[str, Any]]) -> str:
    """The store's TOML text: one ``[[host]]`` table per host (``label``, ``server_id``,
    ``preferred``) with its ``[[host.connection]]`` tables (``address``, ``password``).
    ``None`` values are left out."""
    parts = [HEADER]
    for host in hosts:
        parts.append("\n[[host]]\n")
        for key in ("label", "server_id", "preferred"):
            if host.get(key) is not None:
                parts.append(f"{key} = {toml_string(host[key])}\n")
        for connection in host["connections"]:
            parts.append("\n[[host.connection]]\n")
            for key in ("address", "password"):
                if connection.get(key) is not None:
                    parts.append(f"{key} = {toml_string(connection[key])}\n")
    return "".join(parts)


# ----------------------------------------------------------------------------- files


def _refuse_shared(path: Path, mode: int) -> None:
    if os.name == "posix" and mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise HostStoreError(
            f"the host store {path} can be read or written by other users (mode {stat.S_IMODE(mode):04o}); "
            f"it holds passwords and pairing offers: chmod 600 {path}"
        )


def read_private(path: Path) -> bytes | None:
    """The bytes of the store at ``path``; ``None`` if there is no such file.

    Raises :class:`HostStoreError` for a path that is not a regular file, a file over 1 MiB,
    one that group or others may read or write (POSIX), or one that cannot be read. Opened
    without blocking and checked on the open descriptor (see ``resolve._read_regular_file``).
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise HostStoreError(f"cannot read the host store {path}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise HostStoreError(f"the host store {path} is not a regular file")
        _refuse_shared(path, info.st_mode)
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_BYTES:
            chunk = os.read(fd, MAX_BYTES + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise HostStoreError(f"cannot read the host store {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if size > MAX_BYTES:
        raise HostStoreError(f"the host store {path} is larger than 1 MiB")
    return b"".join(chunks)


def ensure_dir(directory: Path) -> None:
    """Create ``directory`` (mode 0700) and its parents if missing; an existing one is left as it is."""
    if directory.is_dir():
        return
    try:
        directory.parent.mkdir(parents=True, exist_ok=True)
        directory.mkdir(mode=0o700, exist_ok=True)
    except OSError as exc:
        raise HostStoreError(f"cannot create the directory {directory}: {exc.strerror or exc}") from None


def replace_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` at once: a private temporary file beside it, synced, renamed.
    A symbolic link is followed: the file it points to is replaced, the link is kept."""
    if path.is_symlink():
        path = Path(os.path.realpath(path))
    if path.exists() and not path.is_file():
        raise HostStoreError(f"the host store {path} is not a regular file")
    ensure_dir(path.parent)
    data = text.encode("utf-8")
    temporary = path.parent / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(temporary, flags, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise HostStoreError(f"cannot write the host store {path}: {exc.strerror or exc}") from None
    if os.name == "posix":  # the rename itself survives a crash once the directory is synced
        with contextlib.suppress(OSError):
            dir_fd = os.open(path.parent, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)


_path_locks: dict[str, threading.Lock] = {}
_path_locks_guard = threading.Lock()


def _thread_lock(path: Path) -> threading.Lock:
    with _path_locks_guard:
        return _path_locks.setdefault(str(path), threading.Lock())


@contextlib.contextmanager
def locked(path: Path, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
    """Hold the store's exclusive lock while the block runs: a lock per path in this process,
    and ``flock`` on ``<path>.lock`` across processes (where ``fcntl`` exists; without it,
    on Windows, only the first). :class:`HostStoreError` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    local = _thread_lock(path)
    if not local.acquire(timeout=timeout):
        raise HostStoreError(f"the host store {path} stayed locked for {timeout:g} s")
    try:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: no lock across processes
            yield
            return
        ensure_dir(path.parent)
        lock_path = path.with_name(path.name + ".lock")
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
        except OSError as exc:
            raise HostStoreError(f"cannot open the lock file {lock_path}: {exc.strerror or exc}") from None
        try:
            delay = 0.002
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise HostStoreError(
                            f"the host store {path} stayed locked for {timeout:g} s (by {lock_path})"
                        ) from None
                    time.sleep(delay)
                    delay = min(delay * 2, 0.05)
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
    finally:
        local.release()
