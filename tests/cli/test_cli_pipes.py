"""A reader that closes standard output (``| head -1``) ends a following command at once, even
when the command has nothing more to write: the closed pipe is noticed on the descriptor, not
only by a failing write. ``daemon-client`` runs in a subprocess (a real pipe); the fake daemon
serves on loopback in the test process, and nothing changes on it after the reader left, so
only noticing the closed pipe ends the command. The check itself is tested in the test process."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from pathlib import Path

import pytest

from daemon_client.cli.output import Output
from daemon_client.testing import FakeDaemon

from .cli_inprocess import Background, Pipe
from .cli_process import WAIT, clean_env
from .conftest import Start

CWD = "/home/dev/projects/demo"


def _agent(fake: FakeDaemon) -> str:
    return str(fake.agents.upsert(title="Piped", provider="mock")["id"])


@pytest.mark.parametrize("json_lines", [False, True])
def test_agents_watch_into_head_ends_without_a_further_change(fake: FakeDaemon, cli: Start, json_lines: bool) -> None:
    _agent(fake)
    watch = cli("agents", "--watch", "--url", fake.url, *(["--json"] if json_lines else []), close_stdout_after=1)
    first = watch.out.wait_for(lambda line: True)
    if json_lines:
        assert json.loads(first)["type"] == "snapshot"
    assert watch.out.closed.wait(WAIT)
    code, _, err = watch.finish()  # no agent changes: nothing is written that could fail
    assert (code, err) == (0, "")


def test_tail_into_head_ends_without_a_further_row(fake: FakeDaemon, cli: Start) -> None:
    agent_id = _agent(fake)
    fake.timeline.append(agent_id, {"type": "assistant_message", "text": "last answer"})
    tail = cli("tail", agent_id, "--url", fake.url, "--history", "1", close_stdout_after=1)
    assert tail.out.wait_for("last answer") == "last answer\n"
    assert tail.out.closed.wait(WAIT)
    code, _, err = tail.finish()
    assert (code, err) == (0, "")


def test_terminals_tail_into_head_ends_without_further_output(fake: FakeDaemon, cli: Start) -> None:
    terminal = fake.terminals.create(CWD, name="quiet")
    fake.terminals.type(terminal.id, "echo earlier\r")
    tail = cli("terminals", "tail", terminal.id, "--url", fake.url, close_stdout_after=1)
    tail.out.wait_for(lambda line: True)
    assert tail.out.closed.wait(WAIT)
    code, _, err = tail.finish()
    assert (code, err) == (0, "")
    assert fake.terminals.get(terminal.id) is not None


def test_a_streamed_turn_into_a_closed_pipe_ends_before_it_writes(fake: FakeDaemon, tmp_path: Path) -> None:
    agent_id = _agent(fake)
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before anything is written
    home = tmp_path / "home"
    home.mkdir()
    argv = [sys.executable, "-m", "daemon_client", "send", agent_id, "--url", fake.url, "--stream", "please hold"]
    try:
        process = subprocess.Popen(argv, stdout=write_end, stderr=subprocess.PIPE, env=clean_env(home))
    finally:
        os.close(write_end)
    try:
        _, err = process.communicate(timeout=WAIT)  # the turn holds: it writes nothing that could fail
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(WAIT)
    assert (process.returncode, err) == (0, b"")
    assert fake.runs.is_running(agent_id)  # the turn goes on; a closed pipe is no Ctrl-C
    assert fake.runs.cancel(agent_id)


# ------------------------------------------------------------------ the check itself, in the test process


def test_a_pipe_whose_reader_closed_is_noticed_without_a_write() -> None:
    read_end, write_end = os.pipe()
    with os.fdopen(write_end, "w", encoding="utf-8") as stream:
        out = Output(stream)
        assert not out.reader_gone()  # somebody reads: nothing to notice
        os.close(read_end)
        assert out.reader_gone()
        assert out.broken.is_set()
        out.write("dropped")  # sealed: no EPIPE, the descriptor now points at /dev/null
        assert out.reader_gone()


def test_a_stream_without_a_descriptor_is_gone_only_after_a_failed_write() -> None:
    pipe = Pipe()
    out = Output(pipe)
    assert not out.reader_gone()
    pipe.hang_up()
    out.write("fails")
    assert out.reader_gone()


def test_a_descriptor_that_cannot_be_polled_is_not_taken_for_a_closed_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    read_end, write_end = os.pipe()
    try:
        with os.fdopen(write_end, "w", encoding="utf-8") as stream:
            out = Output(stream)

            def refused() -> object:
                raise OSError("poll refused")

            monkeypatch.setattr(select, "poll", refused)
            assert not out.reader_gone()
    finally:
        os.close(read_end)


def test_terminals_tail_ends_once_its_reader_closed(fake: FakeDaemon) -> None:
    terminal = fake.terminals.create(CWD, name="read")
    fake.terminals.type(terminal.id, "echo earlier\r")
    tail = Background(["terminals", "tail", terminal.id, "--url", fake.url])
    tail.out.wait_for("earlier")
    tail.out.hang_up()
    fake.terminals.type(terminal.id, "echo later\r")  # its output is the write that fails
    assert tail.join() == 0
    assert "later" not in tail.out.getvalue()
    assert fake.terminals.get(terminal.id) is not None
