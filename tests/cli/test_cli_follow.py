"""The end conditions of the long-running commands (:class:`~daemon_client.cli.follow.Follow`),
driven directly: the status and the message each end gives, without a daemon."""

from __future__ import annotations

import io
from collections.abc import Callable
from concurrent.futures import Future

import pytest

from daemon_client.cli.exit_codes import AUTH, FAILED, OK, UNREACHABLE, CliError
from daemon_client.cli.follow import Follow
from daemon_client.cli.notes import Notes
from daemon_client.cli.output import Output
from daemon_client.errors import AuthenticationError
from daemon_client.state import ConnectionState

URL = "ws://daemon.test/ws"
StateListener = Callable[[ConnectionState, ConnectionState, str], None]


class Connection:
    """What :meth:`Follow.watch` uses of a client: its address, last error and state listeners."""

    def __init__(self, last_error: BaseException | None = None) -> None:
        self.url = URL
        self.last_error = last_error
        self.listeners: list[StateListener] = []

    def on_state_change(self, listener: StateListener) -> None:
        self.listeners.append(listener)

    def drop(self, reason: str = "closed by the daemon") -> None:
        for listener in self.listeners:
            listener(ConnectionState.CONNECTED, ConnectionState.CONNECTING, reason)


def _follow(reconnect_timeout: float | None = None) -> tuple[Follow, io.StringIO]:
    err = io.StringIO()
    return Follow(Output(io.StringIO()), Notes(err), reconnect_timeout=reconnect_timeout), err


def test_the_first_end_wins() -> None:
    follow, _ = _follow()
    follow.finish(CliError("first", UNREACHABLE))
    follow.finish(CliError("second"))
    with pytest.raises(CliError) as ended:
        follow.wait()
    assert (str(ended.value), ended.value.code) == ("first", UNREACHABLE)


def test_an_end_without_an_error_is_success() -> None:
    follow, _ = _follow()
    follow.finish()
    follow.finish(CliError("too late"))
    assert follow.wait() == OK


def test_a_password_refused_after_a_reconnect_exits_4() -> None:
    follow, err = _follow(reconnect_timeout=0.0)
    client = Connection(AuthenticationError("rejected", reason="bad password"))
    follow.watch(client)  # type: ignore[arg-type]
    client.drop()
    assert err.getvalue() == f"daemon-client: connection to {URL} lost (closed by the daemon); reconnecting\n"
    with pytest.raises(CliError) as ended:
        follow.wait()
    assert ended.value.code == AUTH
    assert str(ended.value) == f"authentication refused by {URL} after a reconnect: bad password"


def test_a_daemon_away_without_a_known_error_is_unreachable() -> None:
    follow, _ = _follow(reconnect_timeout=0.0)
    client = Connection()
    follow.watch(client)  # type: ignore[arg-type]
    client.drop()
    with pytest.raises(CliError) as ended:
        follow.wait()
    assert (str(ended.value), ended.value.code) == (f"{URL} unreachable for 0 s", UNREACHABLE)


def test_waiting_for_an_answer_that_never_comes_fails_after_the_timeout() -> None:
    follow, _ = _follow()
    with pytest.raises(CliError) as ended:
        follow.wait_for(Future(), 0.05, "following the projects")
    assert str(ended.value) == "following the projects: no answer from the daemon within 0.05 s"
    assert ended.value.code == FAILED


def test_waiting_for_an_answer_ends_with_the_command() -> None:
    follow, _ = _follow()
    follow.finish()
    with pytest.raises(CliError, match=r"^following the projects: the command ended$"):
        follow.wait_for(Future(), 5.0, "following the projects")


def test_an_answer_is_returned() -> None:
    follow, _ = _follow()
    ready: Future[str] = Future()
    ready.set_result("subscribed")
    assert follow.wait_for(ready, 5.0, "following the projects") == "subscribed"


def test_a_daemon_that_stays_away_ends_the_wait_for_an_answer() -> None:
    follow, _ = _follow(reconnect_timeout=0.0)
    client = Connection()
    follow.watch(client)  # type: ignore[arg-type]
    client.drop()
    with pytest.raises(CliError) as ended:
        follow.wait_for(Future(), 5.0, "following the projects")
    assert (str(ended.value), ended.value.code) == (f"{URL} unreachable for 0 s", UNREACHABLE)


def test_waiting_for_the_connection_returns_once_it_is_back() -> None:
    follow, _ = _follow(reconnect_timeout=5.0)
    client = Connection()
    client.state = ConnectionState.CONNECTED  # type: ignore[attr-defined]
    follow.watch(client)  # type: ignore[arg-type]
    assert follow.reconnected()


def test_waiting_for_the_connection_stops_when_the_reader_left() -> None:
    out = Output(io.StringIO())
    follow = Follow(out, Notes(io.StringIO()), reconnect_timeout=5.0)
    client = Connection()
    client.state = ConnectionState.CONNECTING  # type: ignore[attr-defined]
    follow.watch(client)  # type: ignore[arg-type]
    out.broken.set()
    assert not follow.reconnected()


def test_waiting_for_the_connection_ends_with_the_command() -> None:
    follow, _ = _follow(reconnect_timeout=5.0)
    client = Connection()
    client.state = ConnectionState.CONNECTING  # type: ignore[attr-defined]
    follow.watch(client)  # type: ignore[arg-type]
    follow.finish()
    with pytest.raises(CliError) as ended:
        follow.reconnected()
    assert (str(ended.value), ended.value.code) == ("the command ended while the connection was down", UNREACHABLE)


def test_waiting_for_the_connection_gives_up_after_the_reconnect_timeout() -> None:
    follow, _ = _follow(reconnect_timeout=0.0)
    client = Connection()
    client.state = ConnectionState.CONNECTING  # type: ignore[attr-defined]
    follow.watch(client)  # type: ignore[arg-type]
    client.drop()
    with pytest.raises(CliError) as ended:
        follow.reconnected()
    assert (str(ended.value), ended.value.code) == (f"{URL} unreachable for 0 s", UNREACHABLE)
