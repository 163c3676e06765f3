"""Comparing a caller's directory with one the daemon reports.

Daemons report directories in their own spelling (``C:\\repo\\app`` on Windows, a resolved
``/repo/sdk`` for a requested ``/repo/./sdk``), so a directory given by a caller and one read
from a frame are compared through :func:`directory_key`, never as raw strings. The key builds
on the TypeScript SDK's identity of a directory (trimmed, ``\\`` read as ``/``, no trailing
separator, ``"/"`` for an empty result) and also folds what names the same directory in
another spelling: ``.`` and empty segments, ``..`` (lexically, as the daemon's own path
resolution does), the letter case of a drive, and the ``\\\\?\\`` / ``\\\\.\\`` prefixes of
Windows' extended-length paths. Keys are for comparison only: send and show the caller's or
the daemon's own spelling.

Used wherever a caller's ``cwd`` meets the daemon's (``providers.wait_for_ready``, the fake
daemon's ``open_project_request``; terminals by cwd). Pure functions, safe on any thread.
"""

from __future__ import annotations

import re

__all__ = ["directory_key", "same_directory"]

_DRIVE = re.compile(r"^([A-Za-z]):(?=/|$)")


def _root_and_rest(path: str) -> tuple[str, str]:
    """Split a ``/``-separated path into its root (``""`` when relative) and the rest."""
    for prefix in ("//?/UNC/", "//./UNC/"):
        if path[: len(prefix)].upper() == prefix.upper():
            path = "//" + path[len(prefix) :]
            break
    else:
        if path.startswith(("//?/", "//./")):
            path = path[4:]
    drive = _DRIVE.match(path)
    if drive:
        return f"{drive.group(1).upper()}:/", path[2:]
    if path.startswith("//") and not path.startswith("///"):
        server, _, rest = path[2:].partition("/")
        share, _, rest = rest.partition("/")
        return f"//{server}/{share}/" if share else f"//{server}/", rest
    if path.startswith("/"):
        return "/", path
    return "", path


def directory_key(path: str) -> str:
    """The comparison key of a directory: equal keys name the same directory.

    ``/repo/./sdk``, ``/repo/sdk/`` and ``/repo//sdk`` share the key ``/repo/sdk``;
    ``C:\\Repo\\app\\`` and ``c:/Repo/app`` share ``C:/Repo/app``; ``C:\\`` and ``C:/`` are
    ``C:``; ``\\\\server\\share\\`` is ``//server/share``; ``\\\\?\\C:\\repo`` is ``C:/repo``.
    Apart from the drive letter, case is kept (POSIX directories are case-sensitive).
    """
    root, rest = _root_and_rest(path.strip().replace("\\", "/"))
    parts: list[str] = []
    for segment in rest.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if parts and parts[-1] != "..":
                parts.pop()
            elif not root:
                parts.append(segment)  # a relative path keeps what it cannot resolve
            continue
        parts.append(segment)
    joined = (root + "/".join(parts)).rstrip("/")
    return joined or ("/" if root else ".")


def same_directory(a: str | None, b: str | None) -> bool:
    """Whether two directories are the same by :func:`directory_key`; two ``None`` are the
    same (neither names a directory), ``None`` and a path are not."""
    if a is None or b is None:
        return a is None and b is None
    return directory_key(a) == directory_key(b)
