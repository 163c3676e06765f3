"""The exit statuses of ``daemon-client`` and the one error line each failure prints.

Every subcommand exits with a status of :data:`TABLE` (also printed by ``--help`` and
documented in docs/cli.md). :func:`classify` turns whatever a command lets escape into its
status and its message; it runs on the main thread, once, when a command ends.
"""

from __future__ import annotations

import signal
import textwrap
from concurrent.futures import TimeoutError as FutureTimeout

from daemon_client.errors import (
    AgentCreateError,
    AuthenticationError,
    ClientClosed,
    ConnectionUnavailable,
    ConnectTimeout,
    DaemonClientError,
    ProtocolError,
    RequestTimeout,
    RpcError,
    UnsupportedByHost,
)

OK = 0
FAILED = 1
USAGE = 2
UNREACHABLE = 3
AUTH = 4
INTERRUPTED = 128 + signal.SIGINT
TERMINATED = 128 + signal.SIGTERM

TABLE = (
    (OK, "success (also when a reader closed the pipe early, as with `| head -1`)"),
    (
        FAILED,
        "the operation failed: a turn failed, was canceled or waits for a permission; "
        "the daemon refused or did not answer a request in time",
    ),
    (USAGE, "usage: a bad option or value, a malformed address, an empty prompt"),
    (
        UNREACHABLE,
        "the daemon is unreachable: nothing listens, DNS, TLS, not a Paseo daemon, the handshake stalled, "
        "or the connection was lost and not regained in time",
    ),
    (AUTH, "authentication refused"),
    (INTERRUPTED, "interrupted (Ctrl-C); 143 after SIGTERM"),
)

CONNECT_HINT = "is the daemon running? see --host or PASEO_HOST"


class CliError(Exception):
    """A failure the command describes itself: ``message`` is printed after ``daemon-client: ``."""

    def __init__(self, message: str, code: int = FAILED) -> None:
        super().__init__(message)
        self.code = code


class ConnectFailed(Exception):
    """The first connection to ``url`` failed with ``error`` (a library exception)."""

    def __init__(self, url: str, error: BaseException) -> None:
        super().__init__(str(error))
        self.url = url
        self.error = error


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: the command stops as after Ctrl-C, with status 143."""


def table_text() -> str:
    """The table as ``--help`` prints it."""
    rows = (textwrap.fill(text, 88, initial_indent=f"  {code:<4} ", subsequent_indent=" " * 7) for code, text in TABLE)
    return "exit status:\n" + "\n".join(rows)


def _without(text: str, prefix: str, suffix: str) -> str:
    text = text.removeprefix(prefix).strip()
    return text.removesuffix(suffix).strip().rstrip(".") if text.endswith(suffix) else text.rstrip(".")


def _connect_failure(url: str, error: BaseException) -> tuple[int, str]:
    if isinstance(error, AuthenticationError):
        reason = error.reason or "credentials rejected"
        return AUTH, f"authentication refused by {url}: {reason} (check --password or PASEO_PASSWORD)"
    if isinstance(error, ProtocolError):
        return UNREACHABLE, f"{url} does not speak the Paseo protocol as expected: {error}"
    if isinstance(error, ConnectTimeout):
        return UNREACHABLE, f"{error} ({CONNECT_HINT})"
    # The library's text repeats the address and adds its own hint: keep only the cause.
    detail = _without(str(error), f"Cannot connect to {url}:", "Is the daemon running and is the URL right?")
    return UNREACHABLE, f"cannot connect to {url}: {detail} ({CONNECT_HINT})"


def classify(error: BaseException) -> tuple[int, str]:
    """The exit status and the error line (without the ``daemon-client: `` prefix) of ``error``."""
    if isinstance(error, CliError):
        return error.code, str(error)
    if isinstance(error, ConnectFailed):
        return _connect_failure(error.url, error.error)
    if isinstance(error, AuthenticationError):
        return AUTH, f"authentication refused: {error.reason or error}"
    if isinstance(error, ClientClosed):
        return UNREACHABLE, "the connection to the daemon was closed"
    if isinstance(error, ConnectionUnavailable | ConnectTimeout):
        return UNREACHABLE, f"connection to the daemon lost: {error}"
    if isinstance(error, AgentCreateError):
        return FAILED, f"the daemon could not create the agent: {error}"
    if isinstance(error, RpcError):
        return FAILED, f"the daemon refused the request: {error}"
    if isinstance(error, RequestTimeout):
        if error.request_id is not None and error.timeout is not None:  # the request table's deadline
            return FAILED, f"the daemon did not answer {error.request_type} within {error.timeout:g} s"
        return FAILED, str(error)
    if isinstance(error, UnsupportedByHost):
        return FAILED, f"the daemon is too old for this: {error}"
    if isinstance(error, DaemonClientError):
        return FAILED, str(error)
    if isinstance(error, FutureTimeout):
        return FAILED, f"no answer from the daemon in time: {str(error) or 'timed out'}"
    if isinstance(error, ValueError):  # input the library refuses before sending anything
        return USAGE, str(error)
    if isinstance(error, OSError):
        return FAILED, str(error)
    raise error
