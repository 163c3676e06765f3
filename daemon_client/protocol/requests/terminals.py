"""Terminal requests (protocol.md 12.2).

Declarations only (see :mod:`daemon_client.protocol.requests.spec`); read from any thread.
"""

from __future__ import annotations

from daemon_client.protocol.requests.spec import RequestSpec, TimeoutClass

_F = "terminals"
_T = TimeoutClass.TERMINAL

CREATE = RequestSpec("create_terminal_request", _F, timeout=_T, required=("cwd",), api="client.terminals.create()")
LIST = RequestSpec("list_terminals_request", _F, timeout=_T, api="client.terminals.list()")
CAPTURE = RequestSpec("capture_terminal_request", _F, timeout=_T, required=("terminalId",), api="terminal.capture()")
KILL = RequestSpec("kill_terminal_request", _F, timeout=_T, required=("terminalId",), api="terminal.kill()")

REQUESTS = (CREATE, LIST, CAPTURE, KILL)
