"""The command's surface: the exit-status table, ``--version``, help on every option, the
prompt sources of ``run``, ``send``/``wait``/``cancel``/``archive``/``permissions``, ``tail
--no-follow``/``--since``, ``--json`` on every listing, ``providers --wait``, list filters and
shell completion. Run in the test process (``main(argv, out=...)``) against the fake daemon
on loopback, except where a signal or a shell is needed.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import daemon_client as dc
from daemon_client.cli.commands.embedded import KINDS
from daemon_client.cli.completion import GENERATORS, spec_of
from daemon_client.cli.exit_codes import TABLE
from daemon_client.cli.main import build_parser, main
from daemon_client.cli.password import COMMAND_LINE_WARNING
from daemon_client.testing import FakeDaemon

from .cli_inprocess import run
from .conftest import Start

ROOT = Path(__file__).resolve().parents[2]
CLI_DOC = ROOT / "docs" / "cli.md"


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeDaemon]:
    for name in ("PASEO_HOST", "PASEO_LISTEN", "PASEO_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PASEO_HOME", str(tmp_path))
    with FakeDaemon(host_kind=dc.HostKind.CAPABLE) as daemon:
        daemon.serve()
        yield daemon


def _agent(fake: FakeDaemon, title: str = "Worker", **fields: object) -> str:
    return str(fake.agents.upsert(title=title, provider="mock", **fields)["id"])


class Background:
    """``main(argv)`` on a helper thread while the test plays the daemon's part."""

    def __init__(self, argv: list[str]) -> None:
        self.result: list[tuple[int, str]] = []
        self._thread = threading.Thread(target=lambda: self.result.append(run(argv)), name="cli-test-main")
        self._thread.start()

    def join(self) -> tuple[int, str]:
        self._thread.join(15)
        assert self.result, "the command did not finish"
        return self.result[0]


# ------------------------------------------------------------------ version, help, exit statuses


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"daemon-client {dc.__version__}\n"


def test_the_host_kinds_offered_are_the_protocols() -> None:
    assert tuple(kind.value for kind in dc.HostKind) == KINDS


def test_every_option_of_every_subcommand_has_help() -> None:
    parser = build_parser()
    missing = [
        f"{name} {action.option_strings or action.dest}"
        for name, sub in parser.subcommands.items()
        for action in sub.recorded
        if not action.help
    ]
    assert missing == []
    assert all(action.help for action in parser.recorded)


def test_every_subcommand_documents_the_exit_statuses(capsys: pytest.CaptureFixture[str]) -> None:
    for name in build_parser().subcommands:
        with pytest.raises(SystemExit):
            main([name, "--help"])
        text = capsys.readouterr().out
        assert "exit status:" in text, name
        assert all(re.search(rf"^  {code}\b", text, re.MULTILINE) for code, _ in TABLE), name


def test_the_exit_status_table(fake: FakeDaemon, capsys: pytest.CaptureFixture[str]) -> None:
    nothing = f"ws://127.0.0.1:{_free_port()}/ws"
    with FakeDaemon(password="right") as locked:
        cases = [
            (["agents", "--url", fake.url], 0, ""),
            (["run", "--url", fake.url, "--provider", "mock/x", "-q", "please fail"], 1, "failed: Simulated failure"),
            (["agents", "--host", "tcp://me:secret@h:1"], 2, "bad daemon address"),
            (["agents", "--url", nothing], 3, f"cannot connect to {nothing}"),
            (["agents", "--url", locked.serve(), "--password", "wrong"], 4, "authentication refused"),
        ]
        for argv, status, error in cases:
            assert run(argv)[0] == status, argv
            err = capsys.readouterr().err
            if status == 0:
                assert err == ""
            else:
                (line,) = [line for line in err.splitlines() if not line.startswith(COMMAND_LINE_WARNING)]
                assert line.startswith("daemon-client: ")
                assert error in line
    with pytest.raises(SystemExit) as usage:
        main(["agents", "--bogus"])
    assert usage.value.code == 2


def test_sigterm_exits_143(fake: FakeDaemon, cli: Start) -> None:
    watch = cli("agents", "--watch", "--url", fake.url)
    watch.out.wait_for("STATUS")
    watch.signal(signal.SIGTERM)
    code, _, err = watch.finish()
    assert (code, err) == (143, "")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_docs_list_the_same_exit_statuses_and_every_subcommand_and_option() -> None:
    text = CLI_DOC.read_text(encoding="utf-8")
    documented = {int(code) for code in re.findall(r"^\| (\d+) +\|", text, re.MULTILINE)}
    assert documented == {code for code, _ in TABLE} | {143}
    parser = build_parser()
    for name, sub in parser.subcommands.items():
        assert f"### `{name}`" in text, name
        for action in sub.recorded:
            for option in action.option_strings:
                if option.startswith("--") and option != "--help":
                    assert option in text, f"{name} {option}"


# ------------------------------------------------------------------ run, send, wait


def _sent_text(fake: FakeDaemon) -> str:
    return str(fake.wait_for_frame("send_agent_message_request")["message"]["text"])


def test_run_reads_the_prompt_from_stdin(fake: FakeDaemon, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"Qu'est-ce que c'est ?\n")))
    code, out = run(["run", "--url", fake.url, "--provider", "mock/x", "-"])
    assert (code, out) == (0, "The answer is 42.\n")
    assert _sent_text(fake) == "Qu'est-ce que c'est ?\n"
    create = fake.wait_for_frame(lambda f: f.message_type in ("create_agent_request", "agent.create.request"))
    assert create["message"]["config"]["cwd"] == os.getcwd()
    assert create["message"]["config"]["title"] == "Qu'est-ce que c'est ?"


def test_run_reads_a_prompt_over_the_argument_size_limit_from_a_file(fake: FakeDaemon, tmp_path: Path) -> None:
    prompt = "Summarise this:\n" + "x" * 300_000  # over Linux's 128 KiB limit of one argument
    path = tmp_path / "prompt.md"
    path.write_text(prompt, encoding="utf-8")
    code, out = run(["run", "--url", fake.url, "--provider", "mock/x", "--cwd", "/srv", "--prompt-file", str(path)])
    assert (code, out) == (0, "The answer is 42.\n")
    assert _sent_text(fake) == prompt


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["   "], "the prompt is empty"),
        ([], "no prompt"),
        (["hi", "--prompt-file", "p.md"], "not both"),
        (["--prompt-file", "missing.md"], "cannot read the prompt file"),
        (["--prompt-file", "latin1.md"], "is not UTF-8"),
    ],
)
def test_bad_prompts_are_usage_errors_and_nothing_is_sent(
    fake: FakeDaemon, capsys: pytest.CaptureFixture[str], *, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    argv: list[str], error: str,
) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    (tmp_path / "latin1.md").write_bytes("café".encode("latin-1"))
    code, out = run(["run", "--url", fake.url, "--provider", "mock/x", *argv])
    assert (code, out) == (2, "")
    assert error in capsys.readouterr().err
    assert not [f for f in fake.received if f.message_type == "send_agent_message_request"]


def test_run_stream_prints_the_text_as_it_arrives_once(fake: FakeDaemon) -> None:
    code, out = run(["run", "--url", fake.url, "--provider", "mock/x", "--stream", "What is the answer?"])
    assert (code, out) == (0, "The answer is 42.\n")


def test_run_json_prints_the_run_result(fake: FakeDaemon) -> None:
    code, out = run(["run", "--url", fake.url, "--provider", "mock/x", "--json", "What is the answer?"])
    result = json.loads(out)
    assert code == 0
    assert result["outcome"] == "completed"
    assert result["status"] == "idle"
    assert result["lastMessage"] == "The answer is 42."
    assert result["final"]["id"] == result["agentId"]


def test_a_turn_waiting_for_permission_names_the_command_that_answers(
    fake: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run(["run", "--url", fake.url, "--provider", "mock/x", "ask permission first"])
    assert (code, out) == (1, "")
    line = capsys.readouterr().err.splitlines()[-1]
    assert re.fullmatch(
        r"daemon-client: agent (\S+) waits for permission (perm-\w+) \(Run git push\): "
        r"daemon-client permissions \1 approve\|deny \2",
        line,
    ), line


def test_send_continues_an_agent_and_no_wait_returns_at_once(fake: FakeDaemon) -> None:
    agent_id = _agent(fake, title="Continued")
    assert run(["send", "Continued", "--url", fake.url, "What is the answer?"]) == (0, "The answer is 42.\n")
    code, out = run(["send", agent_id[:8], "--url", fake.url, "--no-wait", "--json", "please hold"])
    assert code == 0
    assert json.loads(out)["agentId"] == agent_id
    assert fake.runs.is_running(agent_id)
    fake.runs.finish(agent_id)
    fake.runs.wait_until_idle(agent_id)


def test_wait_reports_the_end_of_the_current_turn(fake: FakeDaemon) -> None:
    agent_id = _agent(fake)
    fake.runs.send(agent_id, "please hold")
    waiting = Background(["wait", agent_id, "--url", fake.url])
    fake.wait_for_frame("wait_for_finish_request")
    fake.runs.finish(agent_id)
    assert waiting.join() == (0, "The answer is 42.\n")


def test_an_unknown_agent_is_one_line(fake: FakeDaemon, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["send", "nobody", "--url", fake.url, "hi"]) == (1, "")
    assert capsys.readouterr().err.startswith("daemon-client: no agent 'nobody'")


# ------------------------------------------------------------------ cancel, archive, permissions


def test_cancel_and_archive(fake: FakeDaemon) -> None:
    agent_id = _agent(fake)
    fake.runs.send(agent_id, "please hold")
    code, out = run(["cancel", agent_id, "--url", fake.url, "--json"])
    assert code == 0
    assert json.loads(out)["agentId"] == agent_id
    fake.runs.wait_until_idle(agent_id)
    code, out = run(["archive", agent_id, "--url", fake.url, "--json"])
    assert code == 0
    assert json.loads(out)["archivedAt"] == fake.agents.get(agent_id)["archivedAt"]  # type: ignore[index]


def _waiting_for_permission(fake: FakeDaemon) -> tuple[str, str]:
    """An agent whose turn waits for a permission (``wait`` returns once the daemon announced it)."""
    agent_id = _agent(fake)
    fake.runs.send(agent_id, "ask permission")
    assert run(["wait", agent_id, "--url", fake.url, "-q"]) == (1, "")
    permission = fake.runs.pending_permission(agent_id)
    assert permission is not None
    return agent_id, str(permission["id"])


@pytest.mark.parametrize("action", ["approve", "deny"])
def test_permissions_list_approve_and_deny(fake: FakeDaemon, action: str) -> None:
    agent_id, permission = _waiting_for_permission(fake)
    code, out = run(["permissions", agent_id, "--url", fake.url])
    assert code == 0
    assert permission in out
    assert "Run git push" in out
    code, out = run(["permissions", agent_id, "--url", fake.url, "--json"])
    assert [p["id"] for p in json.loads(out)] == [permission]
    code, out = run(["permissions", agent_id, action, permission, "--url", fake.url, "--json"])
    assert code == 0
    assert json.loads(out) == {
        "agentId": agent_id,
        "permissionId": permission,
        "behavior": "allow" if action == "approve" else "deny",
    }
    fake.runs.wait_until_idle(agent_id)
    assert (fake.timeline.last_message(agent_id) == "The answer is 42.") is (action == "approve")


def test_permissions_without_a_pending_request_fail(fake: FakeDaemon, capsys: pytest.CaptureFixture[str]) -> None:
    agent_id = _agent(fake)
    assert run(["permissions", agent_id, "approve", "--url", fake.url]) == (1, "")
    assert "waits for no permission" in capsys.readouterr().err


# ------------------------------------------------------------------ tail --no-follow / --since / --json


def test_tail_no_follow_and_since(fake: FakeDaemon) -> None:
    agent_id = _agent(fake)
    for text in ("one", "two", "three"):
        fake.timeline.append(agent_id, {"type": "user_message", "text": text})
    assert run(["tail", agent_id, "--url", fake.url, "--no-follow"]) == (0, "> one\n> two\n> three\n")
    assert run(["tail", agent_id, "--url", fake.url, "--no-follow", "--since", "1"]) == (0, "> two\n> three\n")
    code, out = run(["tail", agent_id, "--url", fake.url, "--no-follow", "--history", "1", "--json"])
    (row,) = [json.loads(line) for line in out.splitlines()]
    assert code == 0
    assert row["history"] is True
    assert row["seq"] == 3
    assert row["event"]["item"] == {"type": "user_message", "text": "three"}


def test_tail_json_follows_live_events(fake: FakeDaemon, cli: Start) -> None:
    agent_id = _agent(fake)
    fake.timeline.append(agent_id, {"type": "user_message", "text": "old"})
    tail = cli("tail", agent_id, "--url", fake.url, "--json", "--history", "5")
    assert json.loads(tail.out.wait_for("old"))["history"] is True
    fake.runs.send(agent_id, "What is the answer?")
    tail.out.wait_for("turn_completed")
    tail.signal(signal.SIGINT)
    code, out, _ = tail.finish()
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 130
    assert {"timeline", "turn_started", "turn_completed"} <= {line["type"] for line in lines}
    assert all(line["agentId"] == agent_id for line in lines)


# ------------------------------------------------------------------ --json on every listing, filters, providers --wait


def test_json_on_info_providers_workspaces_and_projects(fake: FakeDaemon) -> None:
    fake.workspaces.open("/home/dev/projects/demo")
    fake.projects.upsert("/home/dev/projects/demo")
    info = json.loads(run(["info", "--url", fake.url, "--json"])[1])
    assert info["url"] == fake.url
    assert info["hostKind"] == "capable"
    assert info["serverInfo"]["serverId"] == "srv-fake"
    providers = json.loads(run(["providers", "--url", fake.url, "--json"])[1])
    assert "mock" in {entry["provider"] for entry in providers["entries"]}
    workspaces = json.loads(run(["workspaces", "--url", fake.url, "--json"])[1])
    assert [w["workspaceDirectory"] for w in workspaces] == ["/home/dev/projects/demo"]
    projects = json.loads(run(["projects", "--url", fake.url, "--json"])[1])
    assert projects["derived"] is False
    assert [p["projectRootPath"] for p in projects["projects"]] == ["/home/dev/projects/demo"]


def test_agent_filters(fake: FakeDaemon) -> None:
    infra = _agent(fake, title="infra", labels={"team": "infra"})
    _agent(fake, title="web", labels={"team": "web"}, status="running")

    def listed(*options: str) -> list[str]:
        code, out = run(["agents", "--url", fake.url, "--json", *options])
        assert code == 0
        return [entry["agent"]["title"] for entry in json.loads(out)]

    assert listed("--label", "team=infra") == ["infra"]
    assert listed("--status", "running") == ["web"]
    assert listed("--status", "running", "--label", "team=infra") == []
    assert fake.agents.get(infra) is not None


def test_providers_wait(fake: FakeDaemon, capsys: pytest.CaptureFixture[str]) -> None:
    fake.providers.auto_resolve = False
    fake.providers.start_loading(["mock"])
    waiting = Background(["providers", "--url", fake.url, "--wait", "10"])
    fake.wait_for_frame("get_providers_snapshot_request")
    fake.providers.resolve("mock")
    code, out = waiting.join()
    assert code == 0
    assert re.search(r"^mock +ready", out, re.MULTILINE)
    fake.providers.start_loading(["mock"])
    assert run(["providers", "--url", fake.url, "--wait", "0.2"]) == (1, "")
    assert "Timed out waiting for providers: mock" in capsys.readouterr().err


# ------------------------------------------------------------------ shell completion


def _completion(shell: str) -> str:
    code, out = run(["completion", shell])
    assert code == 0
    return out


def test_bash_completion_completes_commands_options_and_choices(tmp_path: Path) -> None:
    script = tmp_path / "daemon-client.bash"
    script.write_text(_completion("bash"), encoding="utf-8")

    def complete(*words: str) -> list[str]:
        line = " ".join(f"'{w}'" for w in words)
        probe = f'source "{script}"; COMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; _daemon_client; '
        probe += 'printf "%s\\n" "${COMPREPLY[@]}"'
        done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=30, check=True)
        return done.stdout.split()

    assert sorted(complete("daemon-client", "ag")) == ["agent", "agents"]
    assert complete("daemon-client", "-v", "ta") == ["tail"]
    assert set(complete("daemon-client", "tail", "x", "--h")) == {"--help", "--history", "--host"}
    assert complete("daemon-client", "demo", "--host-kind", "b") == ["broadcast"]
    assert complete("daemon-client", "permissions", "agent", "ap") == ["approve"]
    assert complete("daemon-client", "completion", "f") == ["fish"]
    assert complete("daemon-client", "run", "--provider", "") == []


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_completion_name_every_command_and_option(shell: str) -> None:
    script = _completion(shell)
    spec = spec_of(build_parser())
    for command in spec.commands:
        assert command.name in script
        for option in command.options:
            for name in option.names:
                assert (name if shell == "zsh" else name.lstrip("-")) in script, (command.name, name)
    assert "(capable selective broadcast)" in script or "'capable selective broadcast'" in script
    checker = shutil.which(shell)
    if checker is not None:  # a syntax check where the shell is installed
        flag = "-n" if shell == "zsh" else "--no-execute"
        done = subprocess.run([checker, flag], input=script, capture_output=True, text=True, timeout=30, check=False)
        assert done.returncode == 0, done.stderr
    assert set(GENERATORS) == {"bash", "zsh", "fish"}
