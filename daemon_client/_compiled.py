"""Which build is running: the pure-Python package or the compiled one (mypyc).

The package is the reference: ``pip install .`` (or ``-e .``) installs it as Python source.
``DAEMON_CLIENT_COMPILE=1 pip install .`` also compiles :data:`COMPILED_MODULES` (the modules
every frame passes through on the reader's and the callback thread's path) into extension
modules for this platform, beside their sources; Python then imports the extension. Both builds
run the same code: there is no fork, only modules written so that mypyc accepts them.

:func:`compiled_modules` tells which of them this interpreter imports compiled, without
importing any. :func:`mypyc_attr` is mypyc's class options decorator where mypy is installed
(the build), and a no-op otherwise (a pure install needs nothing beyond its dependencies).

Read from any thread; nothing here changes after import.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
from collections.abc import Callable
from typing import Any

__all__ = ["COMPILED_MODULES", "compiled_modules", "mypyc_attr"]

try:
    from mypy_extensions import mypyc_attr
except ImportError:  # no mypy here: the decorator only matters while compiling

    def mypyc_attr(*_args: Any, **_kwargs: Any) -> Callable[[Any], Any]:  # type: ignore[misc]
        """Class options for mypyc (no-op without it)."""
        return _unchanged


def _unchanged(cls: Any) -> Any:
    return cls


COMPILED_MODULES: tuple[str, ...] = (
    "daemon_client._wire",
    "daemon_client._brackets",
    "daemon_client.protocol.codec",
    "daemon_client.protocol.stream_payload",
    "daemon_client.protocol.terminal_frames",
    "daemon_client.transport.frames",
    "daemon_client.transport.websocket",
    "daemon_client.runtime.supervisor",
    "daemon_client.runtime.pushes",
    "daemon_client.runtime.dispatch",
    "daemon_client.runtime.backlog",
    "daemon_client.subscriptions.flow",
    "daemon_client.subscriptions.membership",
    "daemon_client.subscriptions.events",
    "daemon_client.subscriptions.timeline",
    "daemon_client.subscriptions.terminal_streams",
    "daemon_client.subscriptions.output_buffer",
)
"""The modules the compiled build compiles (the build reads this tuple)."""


def compiled_modules() -> tuple[str, ...]:
    """Those of :data:`COMPILED_MODULES` that this interpreter imports as extension modules."""
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    found = []
    for name in COMPILED_MODULES:
        spec = importlib.util.find_spec(name)
        if spec is not None and isinstance(spec.origin, str) and spec.origin.endswith(suffixes):
            found.append(name)
    return tuple(found)
