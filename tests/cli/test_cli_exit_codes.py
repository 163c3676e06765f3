"""The exit status and the one error line of each kind of failure
(:func:`daemon_client.cli.exit_codes.classify`), for the failures the end-to-end tests do not provoke."""

from __future__ import annotations

from concurrent.futures import TimeoutError as FutureTimeout

import pytest

from daemon_client.cli.exit_codes import AUTH, FAILED, UNREACHABLE, USAGE, ConnectFailed, classify
from daemon_client.errors import (
    AgentCreateError,
    AuthenticationError,
    ClientClosed,
    ConnectionLost,
    ProtocolError,
)

URL = "ws://daemon.test/ws"


@pytest.mark.parametrize(
    ("error", "status", "line"),
    [
        (
            ConnectFailed(URL, ProtocolError("unexpected hello reply")),
            UNREACHABLE,
            f"{URL} does not speak the Paseo protocol as expected: unexpected hello reply",
        ),
        (
            ConnectFailed(URL, AuthenticationError("rejected")),
            AUTH,
            f"authentication refused by {URL}: credentials rejected (check --password or PASEO_PASSWORD)",
        ),
        (AuthenticationError("rejected", reason="bad password"), AUTH, "authentication refused: bad password"),
        (AuthenticationError("rejected"), AUTH, "authentication refused: rejected"),
        (ClientClosed(), UNREACHABLE, "the connection to the daemon was closed"),
        (ConnectionLost("socket closed"), UNREACHABLE, "connection to the daemon lost: socket closed"),
        (
            AgentCreateError("Unknown provider: nope", error_code="agent_create_failed"),
            FAILED,
            "the daemon could not create the agent: Unknown provider: nope (code=agent_create_failed)",
        ),
        (FutureTimeout(), FAILED, "no answer from the daemon in time: timed out"),
        (FutureTimeout("ready"), FAILED, "no answer from the daemon in time: ready"),
        (ValueError("a title may not be empty"), USAGE, "a title may not be empty"),
        (PermissionError(13, "Permission denied"), FAILED, "[Errno 13] Permission denied"),
    ],
)
def test_each_failure_has_its_status_and_line(error: BaseException, status: int, line: str) -> None:
    assert classify(error) == (status, line)


def test_an_unexpected_error_is_raised_again() -> None:
    error = RuntimeError("a bug")
    with pytest.raises(RuntimeError) as raised:
        classify(error)
    assert raised.value is error
