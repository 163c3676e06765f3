"""How ``run``, ``send`` and ``wait`` report the end of a turn: a permission without details, a
turn still running after ``--run-timeout``, a status this client does not know, Ctrl-C during
``wait`` (the turn is left alone) and a cancel the daemon refuses. In the test process against
the fake daemon on loopback, except where Ctrl-C is needed."""

from __future__ import annotations

import _thread
import argparse
import io
import json
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import pytest

from daemon_client.api.agents.handle import RunResult
from daemon_client.cli import turns
from daemon_client.cli.context import CommandContext
from daemon_client.cli.exit_codes import Terminated
from daemon_client.cli.notes import Notes
from daemon_client.cli.output import Output
from daemon_client.cli.turns import TurnWatcher
from daemon_client.errors import ConnectionLost, DaemonClientError
from daemon_client.protocol.requests.agents import CREATE, CREATE_LEGACY
from daemon_client.protocol.timeline import TimelineUpdate, TurnCompleted, TurnStarted
from daemon_client.testing import FakeDaemon
from daemon_client.testing.fake.engine.handlers import RequestContext

from .cli_inprocess import Background, run

WAIT_REQUEST = "wait_for_finish_request"


def _agent(fake: FakeDaemon) -> str:
    return str(fake.agents.upsert(title="Worker", provider="mock")["id"])


def _answer_waits_with(fake: FakeDaemon, agent_id: str, status: str) -> None:
    def answer(ctx: RequestContext) -> None:
        ctx.reply({"status": status, "final": fake.agents.get(agent_id), "error": None, "lastMessage": None})

    fake.on_request(WAIT_REQUEST, answer)


def test_a_permission_wait_without_a_pending_request_names_the_permissions_command(
    fake: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    agent_id = _agent(fake)
    _answer_waits_with(fake, agent_id, "permission")
    assert run(["wait", agent_id, "--url", fake.url]) == (1, "")
    message = f"daemon-client: agent {agent_id} waits for a permission: daemon-client permissions {agent_id}\n"
    assert capsys.readouterr().err == message


def test_a_status_this_client_does_not_know_is_a_failure(fake: FakeDaemon, capsys: pytest.CaptureFixture[str]) -> None:
    agent_id = _agent(fake)
    _answer_waits_with(fake, agent_id, "paused")
    code, out = run(["wait", agent_id, "--url", fake.url, "--json"])
    assert code == 1
    assert '"outcome": "paused"' in out
    assert capsys.readouterr().err == f"daemon-client: the turn of agent {agent_id} ended with status 'paused'\n"


def test_a_turn_still_running_after_the_run_timeout_goes_on(
    fake: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    agent_id = _agent(fake)
    fake.runs.send(agent_id, "please hold")
    assert run(["wait", agent_id, "--url", fake.url, "--run-timeout", "0.2"]) == (1, "")
    assert capsys.readouterr().err == (
        f"daemon-client: agent {agent_id} is still running after 0.2 s (--run-timeout); it goes on: "
        f"daemon-client wait {agent_id}, or daemon-client cancel {agent_id}\n"
    )
    assert fake.runs.is_running(agent_id)
    assert fake.runs.finish(agent_id)
    fake.runs.wait_until_idle(agent_id)


def test_send_no_wait_prints_nothing_without_json(fake: FakeDaemon) -> None:
    agent_id = _agent(fake)
    assert run(["send", agent_id, "--url", fake.url, "--no-wait", "What is the answer?"]) == (0, "")
    assert fake.wait_for_frame("send_agent_message_request")["message"]["agentId"] == agent_id
    fake.runs.wait_until_idle(agent_id)


class CtrlC:
    """Ctrl-C for the command running on the main thread, once the daemon got a request of ``request_type``."""

    def __init__(self, fake: FakeDaemon, request_type: str) -> None:
        self._thread = threading.Thread(target=self._press, args=(fake, request_type), name="cli-test-ctrl-c")
        self._thread.start()

    @staticmethod
    def _press(fake: FakeDaemon, request_type: str) -> None:
        fake.wait_for_frame(request_type)
        _thread.interrupt_main()

    def __enter__(self) -> CtrlC:
        return self

    def __exit__(self, *exc: object) -> None:
        self._thread.join(10)


def test_ctrl_c_during_wait_leaves_the_turn_running(fake: FakeDaemon, capsys: pytest.CaptureFixture[str]) -> None:
    agent_id = _agent(fake)
    fake.runs.send(agent_id, "please hold")
    with CtrlC(fake, WAIT_REQUEST):
        assert run(["wait", agent_id, "--url", fake.url]) == (130, "")
    assert capsys.readouterr().err == ""
    assert "cancel_agent_request" not in [frame.message_type for frame in fake.received]
    assert fake.runs.is_running(agent_id)
    assert fake.runs.finish(agent_id)


def test_a_cancel_refused_on_ctrl_c_is_reported_and_still_exits_130(
    fake: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    agent_id = _agent(fake)
    fake.fail_next("cancel_agent_request", "Cancel refused")
    with CtrlC(fake, WAIT_REQUEST):
        assert run(["send", agent_id, "--url", fake.url, "please hold"]) == (130, "")
    canceling, refused = capsys.readouterr().err.splitlines()
    assert canceling == f"daemon-client: canceling the turn of agent {agent_id} (Ctrl-C again to exit at once)"
    assert refused.startswith(f"daemon-client: could not cancel the turn of agent {agent_id}: Cancel refused")
    assert fake.runs.finish(agent_id)


class _Timeline:
    def __init__(self) -> None:
        self.handlers: list[Callable[[TimelineUpdate], None]] = []
        self.released = False

    def subscribe(self, handler: Callable[[TimelineUpdate], None]) -> Any:
        self.handlers.append(handler)

        def release() -> None:
            self.released = True

        release.ready = Future()  # type: ignore[attr-defined]
        return release


class _Agent:
    id = "agent-1"
    title = "Worker"

    def __init__(self) -> None:
        self.timeline = _Timeline()


class _Client:
    def flush_callbacks(self, timeout: float) -> None:
        raise DaemonClientError("the client is closed")


def test_a_turn_end_delivered_after_the_watcher_stopped_is_ignored() -> None:
    err = io.StringIO()
    ctx = CommandContext(argparse.Namespace(), Output(io.StringIO()), Notes(err), lambda args, reconnect: None)  # type: ignore[arg-type,return-value]
    agent = _Agent()
    watcher = TurnWatcher(ctx, agent, stream=False)  # type: ignore[arg-type]
    (deliver,) = agent.timeline.handlers
    deliver(TimelineUpdate(agent.id, TurnStarted()))
    watcher.stop(_Client(), 0.1)  # type: ignore[arg-type]
    assert agent.timeline.released
    deliver(TimelineUpdate(agent.id, TurnCompleted()))  # raced the release: too late to count
    assert watcher.ended is None
    assert err.getvalue() == ""


def test_a_timeline_subscription_never_answered_fails_after_the_timeout(
    fake: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    agent_id = _agent(fake)
    fake.ignore("agent.timeline.set_subscription.request")
    assert run(["wait", agent_id, "--url", fake.url, "--timeout", "0.3"]) == (1, "")
    assert capsys.readouterr().err == "daemon-client: no answer from the daemon in time: timed out\n"


@pytest.mark.parametrize(("interrupt", "status"), [(KeyboardInterrupt, 130), (Terminated, 143)])
def test_an_interrupt_while_the_command_closes_still_exits_by_the_signal(
    fake: FakeDaemon, monkeypatch: pytest.MonkeyPatch, interrupt: type[KeyboardInterrupt], status: int
) -> None:
    close = CommandContext.close

    def interrupted(self: CommandContext) -> None:
        close(self)
        raise interrupt()

    monkeypatch.setattr(CommandContext, "close", interrupted)  # the second Ctrl-C lands while closing
    code, _ = run(["agents", "--url", fake.url])
    assert code == status


def test_wait_on_an_agent_whose_last_turn_was_canceled_reports_no_outcome(
    fake: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    agent_id = _agent(fake)
    fake.runs.send(agent_id, "please hold")
    assert fake.runs.cancel(agent_id)
    fake.runs.wait_until_idle(agent_id)
    code, out = run(["wait", agent_id, "--url", fake.url, "--json"])
    assert json.loads(out)["outcome"] is None  # no turn ended while waiting: nothing to report
    assert json.loads(out)["status"] == "idle"
    assert code == 1
    assert capsys.readouterr().err == (
        f"daemon-client: agent {agent_id} is idle and no turn ended while waiting, so how its last turn "
        f"ended is unknown (daemon-client tail {agent_id} shows its timeline)\n"
    )


# ------------------------------------------------------------------ the connection drops while waiting


def _second_wait(fake: FakeDaemon) -> None:
    """Until the daemon got a second ``wait_for_finish_request`` (the one after the reconnect)."""
    first = fake.wait_for_frame(WAIT_REQUEST)
    fake.wait_for_frame(WAIT_REQUEST, since=fake.received.index(first) + 1)


@pytest.mark.parametrize("command", ["wait", "send"])
def test_a_dropped_connection_is_regained_and_the_same_turn_waited_for(
    fake: FakeDaemon, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    agent_id = _agent(fake)
    if command == "wait":
        fake.runs.send(agent_id, "please hold")
        argv = ["wait", agent_id, "--url", fake.url]
    else:
        argv = ["send", agent_id, "--url", fake.url, "please hold"]
    waiting = Background(argv)
    fake.wait_for_frame(WAIT_REQUEST)
    fake.drop_connections()  # a relay restart: the turn goes on on the daemon
    _second_wait(fake)
    assert fake.runs.is_running(agent_id)
    assert fake.runs.finish(agent_id)
    assert waiting.join() == 0
    assert waiting.out.getvalue() == f"{fake.timeline.last_message(agent_id)}\n"
    lost, regained = capsys.readouterr().err.splitlines()
    assert lost.startswith(f"daemon-client: connection to {fake.url} lost (")
    assert lost.endswith("); reconnecting")
    assert regained == f"daemon-client: reconnected to {fake.url}"
    sends = [f for f in fake.received if f.message_type == "send_agent_message_request"]
    assert len(sends) == (1 if command == "send" else 0)  # the prompt is never sent again


def test_run_regains_a_dropped_connection_and_waits_for_the_turn_it_started(
    fake: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    waiting = Background(["run", "--url", fake.url, "--provider", "mock/x", "please hold"])
    agent_id = fake.wait_for_frame(WAIT_REQUEST)["message"]["agentId"]
    fake.drop_connections()  # a relay restart: the turn goes on on the daemon
    _second_wait(fake)
    assert fake.runs.is_running(agent_id)
    assert fake.runs.finish(agent_id)
    assert waiting.join() == 0
    assert waiting.out.getvalue() == f"{fake.timeline.last_message(agent_id)}\n"
    err = capsys.readouterr().err.splitlines()
    assert any(line.startswith(f"daemon-client: connection to {fake.url} lost (") for line in err), err
    assert f"daemon-client: reconnected to {fake.url}" in err
    creations = [f for f in fake.received if f.message_type in {CREATE.type, CREATE_LEGACY.type}]
    assert len(creations) == 1  # the agent is never created again, nor its prompt sent twice


def test_a_turn_that_ended_while_the_connection_was_down_has_no_outcome(
    fake: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    agent_id = _agent(fake)
    fake.runs.send(agent_id, "please hold")
    waiting = Background(["wait", agent_id, "--url", fake.url, "--json"])
    fake.wait_for_frame(WAIT_REQUEST)
    fake.refuse_connections = True
    fake.drop_connections()
    assert fake.runs.finish(agent_id)  # ends unseen
    fake.runs.wait_until_idle(agent_id)
    fake.refuse_connections = False
    assert waiting.join(timeout=30) == 1
    result = json.loads(waiting.out.getvalue())
    assert (result["status"], result["outcome"]) == ("idle", None)
    assert result["lastMessage"] == fake.timeline.last_message(agent_id)
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"daemon-client: the turn of agent {agent_id} ended while the connection was down, so how it ended is "
        f"unknown (daemon-client tail {agent_id} shows its timeline)"
    )


def test_wait_with_no_reconnect_fails_at_the_drop(fake: FakeDaemon, capsys: pytest.CaptureFixture[str]) -> None:
    agent_id = _agent(fake)
    fake.runs.send(agent_id, "please hold")
    waiting = Background(["wait", agent_id, "--url", fake.url, "--no-reconnect"])
    fake.wait_for_frame(WAIT_REQUEST)
    fake.drop_connections()
    assert waiting.join() == 3
    assert capsys.readouterr().err.startswith(f"daemon-client: connection to {fake.url} lost")
    assert fake.runs.finish(agent_id)


def test_wait_gives_up_after_the_reconnect_timeout(fake: FakeDaemon, capsys: pytest.CaptureFixture[str]) -> None:
    agent_id = _agent(fake)
    fake.runs.send(agent_id, "please hold")
    waiting = Background(["wait", agent_id, "--url", fake.url, "--reconnect-timeout", "0.3"])
    fake.wait_for_frame(WAIT_REQUEST)
    fake.refuse_connections = True
    fake.drop_connections()
    assert waiting.join(timeout=30) == 3
    assert capsys.readouterr().err.splitlines()[-1].startswith(f"daemon-client: {fake.url} unreachable for 0.3 s")
    fake.refuse_connections = False
    assert fake.runs.finish(agent_id)


class _LostOnce:
    """An agent whose first wait loses the connection."""

    id = "agent-1"

    def __init__(self) -> None:
        self.waits: list[float] = []

    def wait_for_finish(self, timeout: float) -> RunResult:
        self.waits.append(timeout)
        raise ConnectionLost("connection lost")


class _Back:
    def __init__(self, reader: bool = True) -> None:
        self._reader = reader

    def reconnected(self) -> bool:
        return self._reader  # False: the reader closed the pipe while the connection was down


def test_a_connection_regained_after_the_run_timeout_reports_the_timeout() -> None:
    clock = iter([100.0, 100.0, 200.0])  # the deadline, the first wait, then long after the reconnect
    ctx = CommandContext(argparse.Namespace(run_timeout=5.0), Output(io.StringIO()), Notes(io.StringIO()), None)  # type: ignore[arg-type]
    agent = _LostOnce()
    gaps: list[bool] = []
    try:
        result = turns._wait(ctx, _Back(), agent, gaps, clock=lambda: next(clock))  # type: ignore[arg-type]
    finally:
        ctx.close()
    assert result == RunResult(status="timeout")
    assert (agent.waits, gaps) == ([5.0], [True])


def test_a_reader_gone_while_the_connection_was_down_ends_the_wait_quietly() -> None:
    ctx = CommandContext(argparse.Namespace(run_timeout=5.0), Output(io.StringIO()), Notes(io.StringIO()), None)  # type: ignore[arg-type]
    agent = _LostOnce()
    try:
        assert turns._wait(ctx, _Back(reader=False), agent, []) is None  # type: ignore[arg-type]
    finally:
        ctx.close()
    assert len(agent.waits) == 1
