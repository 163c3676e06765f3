"""The runnable examples of ``examples/``: each runs in-process against its embedded daemon
(or a URL), and its output shows that it did its job. The Tk example runs under Xvfb, the Qt
one on Qt's offscreen platform."""

from __future__ import annotations

import importlib
import os
import re
import select
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from daemon_client.testing import FakeDaemon
from daemon_client.testing.simulation import ANSWERS

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
OLDER = ["selective", "broadcast"]
Run = Callable[..., tuple[int, str]]


@pytest.fixture
def load(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], ModuleType]:
    """Import an example as its own script would (``examples/`` first on ``sys.path``)."""
    monkeypatch.syspath_prepend(str(EXAMPLES))
    return importlib.import_module


@pytest.fixture
def run(load: Callable[[str], ModuleType], capsys: pytest.CaptureFixture[str]) -> Run:
    """``run(name, *argv)``: the example's ``main(argv)`` exit code and what it printed."""

    def run_example(name: str, *argv: str) -> tuple[int, str]:
        capsys.readouterr()
        code = load(name).main(list(argv))
        return code, capsys.readouterr().out

    return run_example


@pytest.fixture
def embedded_fakes(monkeypatch: pytest.MonkeyPatch, load: Callable[[str], ModuleType]) -> list[FakeDaemon]:
    """The embedded daemons the examples start, to act on them from the test."""
    started: list[FakeDaemon] = []

    class Recorded(FakeDaemon):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            started.append(self)

    monkeypatch.setattr(load("_embedded"), "FakeDaemon", Recorded)
    return started


def lines_after(output: str, prefix: str) -> list[str]:
    return [line[len(prefix) :] for line in output.splitlines() if line.startswith(prefix)]


def assert_whole_answers(output: str) -> None:
    """Every message is an answer of the simulation, kept whole: no chunk lost or repeated
    (the last one may still be streaming)."""
    messages = [re.sub(r"^message \d+: ", "", line) for line in output.splitlines() if line.startswith("message ")]
    assert messages, output
    assert all(message in ANSWERS for message in messages[:-1]), messages
    assert any(answer.startswith(messages[-1]) for answer in ANSWERS), messages
    assert all(reply in ANSWERS for reply in lines_after(output, "assistant: ")), output


@pytest.mark.parametrize("kind", ["capable", *OLDER])
def test_follow_agent_status(run: Run, kind: str) -> None:
    code, out = run("follow_agent_status", "--duration", "1.5", "--host-kind", kind)
    assert code == 0, out
    statuses = [line.rsplit(": ", 1)[1] for line in out.splitlines()]
    assert statuses[:2] == ["running", "idle"], out  # every agent works at once, then rests


def test_follow_timeline(run: Run) -> None:
    code, out = run("follow_timeline_with_recovery", "--duration", "1.5")
    assert code == 0, out
    assert re.search(r"agent \S+: \d+ rows of history", out), out
    assert lines_after(out, "assistant: "), out  # the turn running at the start completed
    assert_whole_answers(out)


@pytest.mark.parametrize("kind", ["capable", "broadcast"])
def test_follow_timeline_recovers_after_a_reconnect(run: Run, kind: str) -> None:
    # Connections drop at 2.8 s, while an agent streams a turn; the client is back 1.2-1.8 s later
    # on an idle machine. Ten seconds leave room for several drops and a slow, shared machine.
    code, out = run("follow_timeline_with_recovery", "--duration", "10", "--drop-every", "2", "--host-kind", kind)
    assert code == 0, out
    assert re.search(r"reconnected: read \d+ missed rows", out), out
    assert_whole_answers(out)


def test_follow_timeline_refetches_a_replaced_history(run: Run, embedded_fakes: list[FakeDaemon]) -> None:
    def replace() -> None:
        # Once the example's subscription is live on its embedded daemon (it started the
        # daemon and subscribed), replace every history.
        deadline = time.monotonic() + 10.0
        while not (embedded_fakes and embedded_fakes[0].timeline.subscriptions()):
            assert time.monotonic() < deadline, "the example never subscribed"
            time.sleep(0.01)  # polls a condition nothing signals; bounded
        fake = embedded_fakes[0]
        for agent in fake.agents.all():
            fake.timeline.replace_history(agent["id"])

    replacer = threading.Thread(target=replace)
    replacer.start()
    try:
        code, out = run("follow_timeline_with_recovery", "--duration", "2")
    finally:
        replacer.join()
    assert code == 0, out
    assert re.search(r"history replaced: read \d+ rows", out), out
    assert_whole_answers(out)


@pytest.mark.parametrize("kind", ["capable", "broadcast"])
def test_history_pages(run: Run, kind: str) -> None:
    code, out = run("history_pages", "--limit", "5", "--host-kind", kind)
    assert code == 0, out
    walked, manual = out.split("== refetch('before', page.start_cursor)")
    for walk in (walked, manual):
        assert len(re.findall(r"^page \d+", walk, re.MULTILINE)) >= 4, out
        assert re.search(r"rows +1-1 +user_message: ", walk), out  # down to the oldest row


@pytest.mark.parametrize("kind", ["capable", "selective"])
def test_follow_workspaces(run: Run, kind: str) -> None:
    code, out = run("follow_workspaces", "--duration", "1.5", "--host-kind", kind)
    assert code == 0, out
    assert "snapshot: 2 workspaces" in out, out
    assert "upsert: api done /home/dev/projects/api" in out, out  # opened by the daemon at 0.8 s


def test_follow_providers(run: Run) -> None:
    code, out = run("follow_providers", "--duration", "1")
    assert code == 0, out
    assert "ready: claude=ready, codex=unavailable, mock=ready" in out, out
    assert "usable providers: claude, mock" in out, out


def test_follow_providers_with_a_url(run: Run, fakes: Callable[..., FakeDaemon]) -> None:
    fake = fakes("broadcast", password="s3cret")
    code, out = run("follow_providers", "--url", fake.serve(), "--password", "s3cret", "--duration", "0")
    assert code == 0, out
    assert "ready: claude=ready, codex=ready, mock=ready" in out, out


def test_project_cache(run: Run) -> None:
    code, out = run("project_cache", "--duration", "1.5")
    assert code == 0, out
    assert "2 projects:" in out, out
    assert "upsert: /home/dev/projects/api api" in out, out  # a project added at 0.8 s


@pytest.mark.parametrize("kind", OLDER)
def test_project_cache_falls_back_on_older_hosts(run: Run, kind: str) -> None:
    code, out = run("project_cache", "--duration", "1", "--host-kind", kind)
    assert code == 0, out
    assert "no live project cache: Update the host" in out, out
    assert "projects derived from workspaces (derived=True)" in out, out
    assert "webapp" in out, out


@pytest.mark.parametrize("kind", ["capable", "selective"])
def test_run_prompt(run: Run, kind: str) -> None:
    code, out = run("run_prompt", "What is the answer?", "--host-kind", kind)
    assert code == 0, out
    assert "created agent " in out, out
    assert "[read: completed]\nThe answer is 42.\n" in out, out  # streamed as it came
    assert out.endswith("status: idle\nlast message: The answer is 42.\n"), out


def test_run_prompt_on_an_existing_agent(run: Run, fakes: Callable[..., FakeDaemon]) -> None:
    fake = fakes()
    agent = fake.agents.upsert(title="helper")
    code, out = run("run_prompt", "--url", fake.serve(), "--agent", agent["id"], "Hello?")
    assert code == 0, out
    assert "created agent" not in out, out
    assert "last message: The answer is 42." in out, out


@pytest.mark.parametrize("kind", ["capable", *OLDER])
def test_two_filtered_views(run: Run, kind: str) -> None:
    code, out = run("two_filtered_views", "--duration", "1.5", "--host-kind", kind)
    assert code == 0, out
    running, idle = lines_after(out, "[running] "), lines_after(out, "[idle] ")
    assert running[0].count(", ") == 2, out  # the three agents work at first
    assert idle[0] == "-", out
    assert idle[-1] != "-", out  # and rest later
    if kind == "capable":
        assert "note:" not in out, out
        assert running[-1] != running[0], out  # an agent that rests leaves the running view
    else:
        assert f"note: this daemon ({kind} host) shares one filter between both views" in out, out


@pytest.mark.parametrize("kind", ["capable", "broadcast"])
def test_terminal_expect(run: Run, kind: str) -> None:
    code, out = run("terminal_expect", "--host-kind", kind)
    assert code == 0, out
    assert re.search(r"^terminal \S+ started in /", out), out
    assert "\n1\n2\n3\nexit status: 0\n" in out, out
    assert out.endswith("last line on the screen: fake$\n"), out


def test_terminal_expect_reports_a_failing_command(run: Run) -> None:
    code, out = run("terminal_expect", "no-such-program")
    assert code == 0, out
    assert "fake-sh: no-such-program: command not found\nexit status: 127\n" in out, out


@pytest.mark.parametrize("example", ["test_my_code.py", "test_replayed_session.py"])
def test_my_code_passes_under_pytest(example: str) -> None:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(EXAMPLES / example)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"\b\d+ passed\b", done.stdout), done.stdout
    assert not re.search(r"\b(skipped|xfailed|xpassed|deselected)\b", done.stdout), done.stdout


@pytest.fixture
def xvfb_display() -> Iterator[str]:
    """A private Xvfb screen; Xvfb picks a free display number itself (``-displayfd``)."""
    xvfb = shutil.which("Xvfb")
    if xvfb is None:
        pytest.skip("Xvfb is not installed")
    read, write = os.pipe()
    server = subprocess.Popen(
        [xvfb, "-displayfd", str(write), "-screen", "0", "1024x768x24", "-nolisten", "tcp"],
        pass_fds=(write,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write)
    try:
        ready, _, _ = select.select([read], [], [], 10.0)
        number = os.read(read, 32).decode().strip() if ready else ""
        assert number.isdigit(), "Xvfb did not report its display"
        yield f":{number}"
    finally:
        os.close(read)
        server.terminate()
        server.wait(10)


def test_tk_agents(xvfb_display: str, tmp_path: Path) -> None:
    png = tmp_path / "agents.png"
    command = [sys.executable, str(EXAMPLES / "tk_agents.py"), "--duration", "2.5", "--screenshot", str(png)]
    env = {**os.environ, "DISPLAY": xvfb_display}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert ": running" in done.stdout, done.stdout
    assert ": idle" in done.stdout, done.stdout
    if shutil.which("import") is not None:
        assert f"screenshot saved to {png}" in done.stdout, done.stdout
        assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n"), "not a PNG"
        assert png.stat().st_size > 1000


def test_qt_agents(tmp_path: Path) -> None:
    pytest.importorskip("PySide6.QtWidgets", reason="PySide6 is not installed (pip install -e '.[qt]')")
    png = tmp_path / "agents.png"
    command = [sys.executable, str(EXAMPLES / "qt_agents.py"), "--duration", "2.5", "--screenshot", str(png)]
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert ": running" in done.stdout, done.stdout
    assert ": idle" in done.stdout, done.stdout
    assert re.search(r"timeline: \d+ rows of history", done.stdout), done.stdout
    assert f"screenshot saved to {png}" in done.stdout, done.stdout
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n"), "not a PNG"
    assert png.stat().st_size > 1000


@pytest.mark.parametrize("kind", ["capable", *OLDER])
def test_switch_mode_then_run(run: Run, kind: str) -> None:
    code, out = run("switch_mode_then_run", "--host-kind", kind, "--mode", "plan", "What is the answer?")
    assert code == 0, out
    assert "available modes: default" in out, out
    assert "mode now: plan" in out, out
    assert "status: idle, outcome: completed" in out, out
    assert out.endswith("last message: The answer is 42.\n"), out


@pytest.mark.parametrize("kind", ["capable", *OLDER])
def test_worktree_agent(run: Run, embedded_fakes: list[FakeDaemon], kind: str) -> None:
    code, out = run("worktree_agent", "--host-kind", kind, "--branch", "fix-login", "--base", "main")
    assert code == 0, out
    assert re.search(r"workspace fix-login: /home/dev/\.paseo/worktrees/\w+/fix-login", out), out
    assert re.search(r"agent \S+ in /home/dev/\.paseo/worktrees/\w+/fix-login", out), out
    assert "status: idle, outcome: completed" in out, out
    assert "worktrees of the repository: fix-login" in out, out
    assert "archived the worktree and its agent" in out, out
    assert embedded_fakes[0].worktrees.worktrees() == []


@pytest.mark.parametrize("kind", ["capable", *OLDER])
def test_review_pull_request(run: Run, embedded_fakes: list[FakeDaemon], kind: str) -> None:
    code, out = run(
        "review_pull_request", "--host-kind", kind, "--checkout", "https://github.com/acme/demo-repo/pull/42"
    )
    assert code == 0, out
    checked_out = r"checked out pull request #42 as fix/search: /home/dev/\.paseo/worktrees/\w+/fix-search"
    assert re.search(checked_out, out), out
    assert "review: idle, outcome: completed" in out, out
    assert "archived the review worktree" in out, out
    (fake,) = embedded_fakes
    assert fake.worktrees.worktrees() == []
    (sent,) = [f["message"] for f in fake.received
               if f.message_type in ("workspace.create.request", "create_paseo_worktree_request")]  # fmt: skip
    notes = {"type": "text", "mimeType": "text/plain", "title": "Reviewer notes", "text": "Look for missed edge cases."}
    assert sent["firstAgentContext"]["attachments"] == [notes]
    code, out = run("review_pull_request", "--host-kind", kind, "--checkout", "release/1.2")
    assert code == 0, out
    assert "checked out branch release/1.2 as release/1.2" in out, out
    code, out = run(
        "review_pull_request", "--host-kind", kind, "--checkout", "https://gitlab.com/g/demo-repo/-/merge_requests/7"
    )
    if kind == "broadcast":  # 0.1.65 has no checkoutSource
        assert code == 1
        assert "this daemon cannot check that out" in out, out
    else:
        assert code == 0, out
        assert "checked out pull request #7 as docs/typos" in out, out


@pytest.mark.parametrize("kind", ["capable", "broadcast"])
def test_lagged_recovery_ends_gap_free(run: Run, kind: str) -> None:
    code, out = run("lagged_recovery", "--rows", "200", "--max-events", "20", "--host-kind", kind)
    assert code == 0, out
    lagged = re.search(r"lagged: (\d+) skipped, rows (\d+)\.\.(\d+)", out)
    assert lagged, out
    dropped, first, last = (int(g) for g in lagged.groups())
    assert dropped == last - first + 1, out  # only rows were streamed: each skipped one is in the range
    assert f"read back {dropped} rows" in out, out
    assert re.search(r"held 204 rows \(1\.\.204\); skipped in all: " + str(dropped), out), out
    assert out.rstrip().endswith("gap-free"), out


def test_fleet_follows_three_hosts_and_fails_over_to_the_relay(run: Run) -> None:
    code, out = run("fleet", "--duration", "4")
    assert code == 0, out
    for host in ("laptop", "buildbox", "desktop"):
        assert f"{host}: connected" in out, out
    assert "buildbox: 2 agents (flaky test, nightly build)" in out, out
    assert "desktop: unavailable" in out, out
    assert re.search(r"desktop: now through relay:\S+ \(failover: direct:", out), out
    assert out.count("desktop: 1 agents (ui)") >= 2, out  # a fresh snapshot after the switch


def test_notebook_timeline_follows_on_the_loop(run: Run) -> None:
    code, out = run("notebook_timeline", "--duration", "5")
    assert code == 0, out
    assert re.search(r": \d+ rows of history", out), out
    assert "subscribed; the daemon answered a ping" in out, out
    assert_whole_answers(out.replace("assistant: ", "message 1: "))
