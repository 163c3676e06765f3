"""``tail`` and ``agents --watch``: option checks, ``--history 0``, a subscription the daemon
refuses after a reconnect, and a directory page that fails while watching. In the test process
against the fake daemon on loopback."""

from __future__ import annotations

import _thread
import json
import os
import signal
import threading

import pytest

from daemon_client.cli.main import main
from daemon_client.protocol.directory import MAX_PAGE_LIMIT
from daemon_client.testing import FakeDaemon

from .cli_inprocess import Background, Pipe, run

SUBSCRIBE = "agent.timeline.set_subscription.request"
FETCH_AGENTS = "fetch_agents_request"


def _agent(fake: FakeDaemon, title: str = "Tailed") -> str:
    return str(fake.agents.upsert(title=title, provider="mock")["id"])


def _say(fake: FakeDaemon, agent_id: str, text: str) -> None:
    fake.timeline.append(agent_id, {"type": "assistant_message", "text": text})
    fake.timeline.append(agent_id, {"type": "todo", "items": []})  # ends the message: its line is written


def test_duration_with_no_follow_is_a_usage_error(fake: FakeDaemon, capsys: pytest.CaptureFixture[str]) -> None:
    agent_id = _agent(fake)
    assert run(["tail", agent_id, "--url", fake.url, "--no-follow", "--duration", "1"]) == (2, "")
    assert capsys.readouterr().err == (
        "daemon-client: --duration applies only while following (not with --no-follow)\n"
    )


def test_history_zero_prints_only_what_comes(fake: FakeDaemon) -> None:
    agent_id = _agent(fake)
    _say(fake, agent_id, "old row")
    tail = Background(["tail", agent_id, "--url", fake.url, "--history", "0"])
    fake.wait_for_frame(SUBSCRIBE)
    _say(fake, agent_id, "new row")
    tail.out.wait_for("new row\n")
    tail.out.hang_up()
    _say(fake, agent_id, "unread row")
    assert tail.join() == 0
    assert tail.out.getvalue() == "new row\n"


def test_a_subscription_refused_after_a_reconnect_ends_tail(
    fake: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    agent_id = _agent(fake)
    tail = Background(["tail", agent_id, "--url", fake.url])
    fake.wait_for_frame(SUBSCRIBE)
    _say(fake, agent_id, "live")
    tail.out.wait_for("live\n")  # the subscription is live
    fake.fail_next(SUBSCRIBE, "Subscriptions refused")
    fake.drop_connections()  # the client reconnects and subscribes again
    assert tail.join(timeout=15) == 1
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith(f"daemon-client: the timeline subscription of agent {agent_id} ended: Subscriptions refused")


def test_agents_watch_keeps_the_first_page_when_a_later_one_fails(
    fake: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    for n in range(MAX_PAGE_LIMIT + 5):
        fake.agents.upsert(title=f"agent {n:03}", provider="mock")
    remove_hook = fake.after_request(FETCH_AGENTS, lambda ctx: fake.fail_next(FETCH_AGENTS, "Page refused"))
    watch = Background(["agents", "--watch", "--json", "--url", fake.url])
    snapshot = json.loads(watch.out.wait_for("\n").splitlines()[0])
    remove_hook()
    assert len(snapshot["agents"]) == MAX_PAGE_LIMIT
    watch.out.hang_up()
    fake.agents.upsert(title="later", provider="mock")
    assert watch.join() == 0
    assert "daemon-client: only the first page of agents is shown: " in capsys.readouterr().err


@pytest.mark.parametrize("json_lines", [False, True])
def test_a_history_replaced_while_disconnected_is_noted_when_tail_catches_up(
    fake: FakeDaemon, json_lines: bool
) -> None:
    agent_id = _agent(fake)
    _say(fake, agent_id, "before")
    tail = Background(["tail", agent_id, "--url", fake.url, *(["--json"] if json_lines else [])])
    fake.wait_for_frame(SUBSCRIBE)
    _say(fake, agent_id, "live")
    tail.out.wait_for("live")
    fake.refuse_connections = True
    fake.drop_connections()
    epoch = fake.timeline.replace_history(agent_id, [{"type": "assistant_message", "text": "rebuilt"}])
    fake.refuse_connections = False
    tail.out.wait_for("rebuilt")
    tail.out.hang_up()
    _say(fake, agent_id, "unread")
    assert tail.join() == 0
    out = tail.out.getvalue()
    if json_lines:
        lines = [json.loads(line) for line in out.splitlines()]
        (note,) = [line for line in lines if line["type"] == "replacement"]
        assert note == {"agentId": agent_id, "type": "replacement", "epoch": epoch,
                        "event": {"type": "replacement", "epoch": epoch}}  # fmt: skip
        texts = [line.get("event", {}).get("item", {}).get("text") for line in lines]
        assert lines.index(note) < texts.index("rebuilt")
    else:
        assert f"-- history replaced (epoch {epoch})\nrebuilt" in out


def _answered(fake: FakeDaemon, *, running: bool) -> str:
    """An agent whose newest row is an assistant message (nothing has ended it yet)."""
    agent_id = _agent(fake)
    fake.timeline.append(agent_id, {"type": "user_message", "text": "question"})
    fake.timeline.append(agent_id, {"type": "assistant_message", "text": "last answer"})
    if running:
        fake.agents.upsert(agent_id, status="running")
    return agent_id


def test_the_last_history_message_of_an_idle_agent_is_a_complete_line_at_once(fake: FakeDaemon) -> None:
    agent_id = _answered(fake, running=False)
    tail = Background(["tail", agent_id, "--url", fake.url, "--history", "1"])
    tail.out.wait_for("last answer\n")  # as `| head -1` reads it: without waiting for the next row
    tail.out.hang_up()
    _say(fake, agent_id, "unread")
    assert tail.join() == 0
    assert tail.out.getvalue() == "last answer\n"


def test_a_message_still_open_when_the_duration_ends_is_ended_with_its_newline(fake: FakeDaemon) -> None:
    agent_id = _answered(fake, running=True)  # a running turn may go on with the message
    code, out = run(["tail", agent_id, "--url", fake.url, "--history", "1", "--duration", "0.2"])
    assert (code, out) == (0, "last answer\n")


def test_a_message_still_open_on_ctrl_c_is_ended_with_its_newline(fake: FakeDaemon) -> None:
    agent_id = _answered(fake, running=True)
    out = Pipe()

    def press() -> None:
        out.wait_for("last answer")
        _thread.interrupt_main()

    presser = threading.Thread(target=press, name="cli-test-ctrl-c")
    presser.start()
    try:
        code = main(["tail", agent_id, "--url", fake.url, "--history", "1"], out=out)
    finally:
        presser.join(10)
    assert (code, out.getvalue()) == (130, "last answer\n")


def test_a_live_message_is_a_complete_line_when_its_turn_ends(fake: FakeDaemon) -> None:
    agent_id = _agent(fake)
    tail = Background(["tail", agent_id, "--url", fake.url])
    fake.wait_for_frame(SUBSCRIBE)
    fake.timeline.append(agent_id, {"type": "assistant_message", "text": "live answer"})
    fake.timeline.emit(agent_id, {"type": "turn_completed"})
    tail.out.wait_for("-- turn completed\n")
    tail.out.hang_up()
    _say(fake, agent_id, "unread")
    assert tail.join() == 0
    assert tail.out.getvalue() == "live answer\n-- turn completed\n"


def test_a_message_still_open_on_sigterm_is_ended_with_its_newline(fake: FakeDaemon) -> None:
    agent_id = _answered(fake, running=True)
    out = Pipe()

    def terminate() -> None:
        out.wait_for("last answer")
        os.kill(os.getpid(), signal.SIGTERM)  # handled by the command while it runs (main thread)

    sender = threading.Thread(target=terminate, name="cli-test-sigterm")
    sender.start()
    try:
        code = main(["tail", agent_id, "--url", fake.url, "--history", "1"], out=out)
    finally:
        sender.join(10)
    assert (code, out.getvalue()) == (143, "last answer\n")


def test_json_rows_are_each_one_line_as_soon_as_they_arrive_while_following(fake: FakeDaemon) -> None:
    agent_id = _answered(fake, running=True)  # its last message may still grow: JSON has no open line
    tail = Background(["tail", agent_id, "--url", fake.url, "--history", "1", "--json"])
    first = tail.out.wait_for("\n")
    (row,) = [json.loads(line) for line in first.splitlines()]
    assert row["history"] is True
    assert row["event"]["item"] == {"type": "assistant_message", "text": "last answer"}
    fake.timeline.append(agent_id, {"type": "assistant_message", "text": " and more"})
    written = tail.out.wait_for("and more")
    assert written.endswith("\n")  # the live row is a whole line at once, not held for the next one
    tail.out.hang_up()
    _say(fake, agent_id, "unread")
    assert tail.join() == 0
    rows = [json.loads(line) for line in tail.out.getvalue().splitlines()]
    assert [r["event"]["item"]["text"] for r in rows] == ["last answer", " and more"]
