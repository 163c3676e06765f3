"""``daemon-client`` as scripts use it, in a subprocess: each case was once broken.

Pipes closed early, a daemon that goes away, library log records, bad numbers, request
timeouts, options offered where they do nothing, paging, JSON while watching, progress and
the order of output, odd locales, the normal end of ``tail``, and ``run`` under Ctrl-C. The
fake daemon serves on loopback in the test process; the tests wait on output lines.
"""

from __future__ import annotations

import json
import os
import pty
import signal
import socket
import threading

from daemon_client.testing import FakeDaemon

from .cli_process import WAIT, one_error_line, run_all
from .conftest import Start

SUBSCRIBE = "agent.timeline.set_subscription.request"


def _agent(fake: FakeDaemon, title: str = "Scripted", **fields: object) -> str:
    return str(fake.agents.upsert(title=title, provider="mock", **fields)["id"])


def _wait_subscriptions(fake: FakeDaemon, count: int) -> None:
    """Until ``count`` timeline subscription requests have arrived."""
    since = 0
    for _ in range(count):
        frame = fake.wait_for_frame(SUBSCRIBE, since=since)
        since = fake.received.index(frame) + 1


def _say(fake: FakeDaemon, agent_id: str, text: str) -> None:
    fake.timeline.append(agent_id, {"type": "assistant_message", "text": text})
    fake.timeline.append(agent_id, {"type": "todo", "items": []})  # ends the message: its line is written


# ------------------------------------------------------------------ 1. pipes closed early


def test_tail_into_head_exits_quietly_when_the_pipe_closes(fake: FakeDaemon, cli: Start) -> None:
    agent_id = _agent(fake)
    tail = cli("tail", agent_id, "--url", fake.url, close_stdout_after=1)
    fake.wait_for_frame(SUBSCRIBE)
    _say(fake, agent_id, "first")
    tail.out.wait_for("first")
    assert tail.out.closed.wait(WAIT)
    _say(fake, agent_id, "second")  # written into the closed pipe
    code, _, err = tail.finish()
    assert code == 0
    assert err == ""


def test_agents_watch_into_head_exits_quietly_when_the_pipe_closes(fake: FakeDaemon, cli: Start) -> None:
    agent_id = _agent(fake)
    watch = cli("agents", "--watch", "--json", "--url", fake.url, close_stdout_after=1)
    assert json.loads(watch.out.wait_for("snapshot"))["type"] == "snapshot"
    assert watch.out.closed.wait(WAIT)
    fake.agents.upsert(agent_id, status="running")
    code, _, err = watch.finish()
    assert code == 0
    assert err == ""


def test_a_streamed_answer_into_head_exits_without_waiting_for_the_turn(fake: FakeDaemon, cli: Start) -> None:
    agent_id = _agent(fake)
    fake.runs.script(agent_id, [{"type": "assistant_message", "text": f"line {n}\n"} for n in range(100)])
    fake.runs.chunk_delay = 0.2  # a 20 s turn: longer than this test waits for the exit
    send = cli("send", agent_id, "--url", fake.url, "--stream", "go", close_stdout_after=1)
    send.out.wait_for("line 0")
    assert send.out.closed.wait(WAIT)
    code, _, err = send.finish()
    assert code == 0
    assert err == ""
    assert fake.runs.is_running(agent_id)  # the turn goes on; closing the pipe is no Ctrl-C


# ------------------------------------------------------------------ 2. the daemon goes away


def test_a_drop_and_the_recovery_are_reported_on_stderr(fake: FakeDaemon, cli: Start) -> None:
    agent_id = _agent(fake)
    tail = cli("tail", agent_id, "--url", fake.url)
    fake.wait_for_frame(SUBSCRIBE)
    _say(fake, agent_id, "before the restart")
    tail.out.wait_for("before the restart")  # the subscription is live
    fake.restart(downtime=0.2)
    assert tail.err is not None
    lost = tail.err.wait_for("lost")
    assert lost.startswith(f"daemon-client: connection to {fake.url} lost")
    _say(fake, agent_id, "while away")  # the client waits at least 1.2 s before it reconnects
    assert tail.err.wait_for("reconnected").startswith(f"daemon-client: reconnected to {fake.url}")
    tail.out.wait_for("-- reconnected")
    assert tail.out.wait_for("while away") == "while away\n"  # fetched after the reconnect
    assert tail.err.wait_for("fetched") == "daemon-client: 2 rows written while disconnected were fetched\n"
    _say(fake, agent_id, "after the restart")
    tail.out.wait_for("after the restart")
    tail.signal(signal.SIGINT)
    code, out, _ = tail.finish()
    assert code == 130
    assert out.count("while away") == 1


def test_a_drop_with_no_reconnect_exits_3(fake: FakeDaemon, cli: Start) -> None:
    agent_id = _agent(fake)
    tail = cli("tail", agent_id, "--url", fake.url, "--no-reconnect")
    watch = cli("agents", "--watch", "--url", fake.url, "--no-reconnect")
    watch.out.wait_for("STATUS")
    fake.wait_for_frame(SUBSCRIBE)
    fake.drop_connections()
    for code, _, err in run_all([tail, watch]):
        assert code == 3
        assert one_error_line(err).startswith(f"daemon-client: connection to {fake.url} lost")


def test_a_daemon_that_stays_away_exits_3_after_the_reconnect_timeout(fake: FakeDaemon, cli: Start) -> None:
    agent_id = _agent(fake)
    tail = cli("tail", agent_id, "--url", fake.url, "--reconnect-timeout", "0.5")
    fake.wait_for_frame(SUBSCRIBE)
    fake.restart(downtime=60)
    code, _, err = tail.finish()
    assert code == 3
    lines = err.splitlines()
    assert lines[0].startswith(f"daemon-client: connection to {fake.url} lost")
    assert lines[-1].startswith(f"daemon-client: {fake.url} unreachable for 0.5 s")
    assert "Traceback" not in err


# ------------------------------------------------------------------ 3. library log records


def test_library_records_stay_off_stderr_unless_verbose(cli: Start) -> None:
    with FakeDaemon(password="right") as locked, FakeDaemon() as stalled:
        locked.serve()
        stalled.serve()
        stalled.stall_handshake = True
        runs = [
            cli("agents", "--url", locked.url, "--password", "wrong"),  # (info also notes where it looked)
            cli("agents", "--url", stalled.url, "--timeout", "0.5"),
            cli("-v", "info", "--url", locked.url, "--password", "wrong"),
        ]
        (auth, auth_err), (stall, stall_err), (verbose, verbose_err) = [(c, e) for c, _, e in run_all(runs)]
    assert auth == 4
    assert one_error_line(auth_err).startswith(f"daemon-client: authentication refused by {locked.url}")
    assert "pass password=" not in auth_err
    assert stall == 3
    assert "no server_info" in one_error_line(stall_err)
    assert verbose == 4
    assert "daemon-client: INFO daemon_client.connection: " in verbose_err
    assert verbose_err.splitlines()[-1].startswith("daemon-client: authentication refused")


# ------------------------------------------------------------------ 4. numbers, 6. --duration


def test_bad_numbers_and_options_that_do_nothing_are_usage_errors(cli: Start) -> None:
    cases = [  # 4. every number is range-checked; 6. --duration only where it works
        (["agents", "--timeout", "0"], "error: argument --timeout"),
        (["agents", "--timeout", "-1"], "error: argument --timeout"),
        (["agents", "--timeout", "inf"], "error: argument --timeout"),
        (["agents", "--timeout", "nan"], "error: argument --timeout"),
        (["tail", "x", "--history", "-5"], "error: argument --history"),
        (["serve", "--port", "70000"], "error: argument --port"),
        (["run", "--provider", "mock/x", "--run-timeout", "1e400", "hi"], "error: argument --run-timeout"),
        (["agents", "--limit", "0"], "error: argument --limit"),
        (["tail", "x", "--duration", "-3"], "error: argument --duration"),
        (["run", "--provider", "mock/x", "--duration", "1", "hi"], "unrecognized arguments: --duration"),
        (["info", "--duration", "1"], "unrecognized arguments: --duration"),
        (["providers", "--duration", "1"], "unrecognized arguments: --duration"),
        (["agents", "--duration", "1"], "daemon-client: --duration needs --watch"),
    ]
    runs = [cli(*argv) for argv, _ in cases]
    for (argv, error), (code, out, err) in zip(cases, run_all(runs), strict=True):
        assert (code, out) == (2, ""), argv
        assert error in err, err
        assert "Traceback" not in err


def test_a_busy_port_is_one_line(cli: Start) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code, _, err = cli("serve", "--port", str(port)).finish()
    assert code == 1
    assert one_error_line(err).startswith(f"daemon-client: cannot listen on 127.0.0.1:{port}")


# ------------------------------------------------------------------ 5. --timeout bounds requests


def test_timeout_bounds_a_request_the_daemon_never_answers(fake: FakeDaemon, cli: Start) -> None:
    fake.ignore("fetch_agents_request")
    code, _, err = cli("agents", "--url", fake.url, "--timeout", "0.5").finish()
    assert code == 1
    assert one_error_line(err) == "daemon-client: the daemon did not answer fetch_agents_request within 0.5 s"


# ------------------------------------------------------------------ 7. paging


def test_agents_lists_every_page_and_limit_stops_early(fake: FakeDaemon, cli: Start) -> None:
    for n in range(230):
        fake.agents.upsert(title=f"agent {n:03}", provider="mock")
    every, five = cli("agents", "--url", fake.url, "--json"), cli("agents", "--url", fake.url, "--json", "--limit", "5")
    (code, out, _), (code5, out5, _) = run_all([every, five])
    assert (code, code5) == (0, 0)
    titles = {entry["agent"]["title"] for entry in json.loads(out)}
    assert titles == {f"agent {n:03}" for n in range(230)}
    assert len(json.loads(out5)) == 5


# ------------------------------------------------------------------ 8. --json while watching


def test_agents_watch_json_prints_one_document_per_line(fake: FakeDaemon, cli: Start) -> None:
    agent_id = _agent(fake)
    watch = cli("agents", "--watch", "--json", "--url", fake.url)
    watch.out.wait_for("snapshot")
    fake.agents.upsert(agent_id, status="running")
    watch.out.wait_for("running")
    fake.agents.remove(agent_id)
    watch.out.wait_for('"remove"')
    watch.signal(signal.SIGINT)
    code, out, _ = watch.finish()
    assert code == 130
    documents = [json.loads(line) for line in out.splitlines()]
    assert [d["type"] for d in documents] == ["snapshot", "upsert", "remove"]
    assert documents[1]["agent"]["status"] == "running"
    assert documents[0]["agents"][0]["agent"]["id"] == agent_id


# ------------------------------------------------------------------ 9. progress and the order of output


def test_run_writes_only_the_answer_to_a_pipe_and_nothing_after_it(fake: FakeDaemon, cli: Start) -> None:
    code, out, err = cli("run", "--url", fake.url, "--provider", "mock/x", "-q", "What is the answer?").finish()
    assert code == 0
    assert out == "The answer is 42.\n"
    assert err == ""


def test_progress_is_drawn_on_a_terminal_and_erased_before_the_result(fake: FakeDaemon, cli: Start) -> None:
    master, slave = pty.openpty()
    try:
        run = cli("run", "--url", fake.url, "--provider", "mock/x", "What is the answer?", stderr=slave)
    finally:
        os.close(slave)
    chunks: list[bytes] = []
    reader = threading.Thread(target=_read_until_eof, args=(master, chunks))
    reader.start()
    code, out, _ = run.finish()
    reader.join(WAIT)
    os.close(master)
    terminal = b"".join(chunks).decode("utf-8", "replace")
    assert code == 0
    assert out == "The answer is 42.\n"
    assert "running… " in terminal
    assert terminal.rstrip("\r\n").endswith("\x1b[K") or terminal.index("\x1b[K") > terminal.rindex("running… ")


def _read_until_eof(fd: int, chunks: list[bytes]) -> None:
    while True:
        try:
            data = os.read(fd, 4096)
        except OSError:  # EIO: the terminal's other side closed
            return
        if not data:
            return
        chunks.append(data)


# ------------------------------------------------------------------ 10. odd locales


def test_a_latin1_locale_gets_replacements_not_a_crash(fake: FakeDaemon, cli: Start) -> None:
    agent_id = _agent(fake, title="Café", status="running")
    latin1 = {"PYTHONIOENCODING": "latin-1", "LC_ALL": "C"}
    listing = cli("agents", "--url", fake.url, env_extra=latin1, encoding="latin-1")
    tails = [
        cli("tail", agent_id, "--url", fake.url, env_extra=latin1, encoding="latin-1"),
        cli("tail", agent_id, "--url", fake.url),
    ]
    code, out, err = listing.finish()
    assert code == 0, err
    assert "> running  Café" in out  # the ASCII mark; é is latin-1
    _wait_subscriptions(fake, 2)
    fake.timeline.append(agent_id, {"type": "assistant_message", "text": "smile \ud83d"})  # one emoji, two chunks
    fake.timeline.append(agent_id, {"type": "assistant_message", "text": "\ude00 done"})
    fake.timeline.append(agent_id, {"type": "todo", "items": []})
    assert tails[0].out.wait_for("done") == "smile ? done\n"
    assert tails[1].out.wait_for("done") == "smile \U0001f600 done\n"
    for tail in tails:
        tail.signal(signal.SIGINT)
    for code, _, err in run_all(tails):
        assert code == 130
        assert err == ""


# ------------------------------------------------------------------ 11. the normal end of tail


def test_the_normal_end_of_tail_is_not_an_error(fake: FakeDaemon, cli: Start) -> None:
    agent_id = _agent(fake)
    timed = cli("tail", agent_id, "--url", fake.url, "--duration", "0.5")
    interrupted = cli("tail", agent_id, "--url", fake.url)
    _wait_subscriptions(fake, 2)
    _say(fake, agent_id, "hello")
    interrupted.out.wait_for("hello")
    interrupted.signal(signal.SIGINT)
    (code, out, err), (code_int, out_int, err_int) = run_all([timed, interrupted])
    assert (code, err) == (0, "")
    assert (code_int, err_int) == (130, "")
    assert "subscription ended" not in out + out_int
    assert out_int == "hello\n"


# ------------------------------------------------------------------ 12. run: canceled turns and Ctrl-C


def _started_turn(fake: FakeDaemon, run_err_line: str) -> str:
    agent_id = run_err_line.split()[2]
    fake.wait_for_frame("wait_for_finish_request")
    return agent_id


def test_a_canceled_turn_exits_1(fake: FakeDaemon, cli: Start) -> None:
    run = cli("run", "--url", fake.url, "--provider", "mock/x", "please hold")
    assert run.err is not None
    agent_id = _started_turn(fake, run.err.wait_for("created"))
    assert fake.runs.cancel(agent_id, reason="Stopped by a test")
    code, out, err = run.finish()
    assert code == 1
    assert out == ""
    assert err.splitlines()[-1] == f"daemon-client: the turn of agent {agent_id} was canceled: Stopped by a test"


def test_ctrl_c_cancels_the_turn_then_exits_130(fake: FakeDaemon, cli: Start) -> None:
    run = cli("run", "--url", fake.url, "--provider", "mock/x", "please hold")
    assert run.err is not None
    agent_id = _started_turn(fake, run.err.wait_for("created"))
    run.signal(signal.SIGINT)
    code, out, err = run.finish()
    assert code == 130
    assert out == ""
    assert "canceling the turn" in err
    assert fake.wait_for_frame("cancel_agent_request")["message"]["agentId"] == agent_id
    fake.runs.wait_until_idle(agent_id)  # a "please hold" turn ends only when released or canceled


def test_a_second_ctrl_c_exits_at_once(fake: FakeDaemon, cli: Start) -> None:
    fake.ignore("cancel_agent_request")
    run = cli("run", "--url", fake.url, "--provider", "mock/x", "--timeout", "60", "please hold")
    assert run.err is not None
    _started_turn(fake, run.err.wait_for("created"))
    run.signal(signal.SIGINT)
    run.err.wait_for("canceling the turn")
    fake.wait_for_frame("cancel_agent_request")
    run.signal(signal.SIGINT)
    code, _, err = run.finish(timeout=WAIT)  # far less than the cancel request's 60 s
    assert code == 130
    assert "Traceback" not in err
