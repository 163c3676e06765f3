"""The command line imports only what its command needs, and prints the same.

``agents --json`` is compared byte for byte with the output the command printed before the
command line and the client were made to import only what a call uses (the directory below,
with unknown fields and odd values, recorded then). The parser of one command is compared with
the same command in the parser of every command, and fresh processes check which modules a
command and ``import daemon_client`` load.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import daemon_client as dc
from daemon_client.cli.commands import COMMANDS, GROUPS, modules
from daemon_client.cli.main import _connection_args, build_parser, command_of
from daemon_client.cli.parser import CliParser, Registry
from daemon_client.testing import FakeDaemon

from .cli_inprocess import run

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeDaemon]:
    for name in ("PASEO_HOST", "PASEO_LISTEN", "PASEO_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PASEO_HOME", str(tmp_path))
    monkeypatch.setenv("DAEMON_CLIENT_HOSTS", str(tmp_path / "hosts.toml"))
    with FakeDaemon(host_kind=dc.HostKind.CAPABLE) as daemon:
        yield daemon


def _fill(fake: FakeDaemon) -> None:
    fake.agents.upsert(
        "agent-1",
        title="one",
        provider="mock",
        persistence={"provider": "mock", "sessionId": "s-1"},
        runtimeInfo={"provider": "mock", "sessionId": "s-1", "model": "m"},
        createdAt="2026-01-02T03:04:05.000Z",
        updatedAt="2026-01-02T03:04:06.000Z",
    )
    fake.agents.upsert(
        "agent-2",
        title='Dé ▶ "quoted"',
        provider="claude",
        model=None,
        status="running",
        createdAt="2026-01-02T03:04:07.000Z",
        updatedAt="2026-01-02T03:04:08.000Z",
        labels={"team": "core", "paseo.parent-agent-id": "agent-1"},
        requiresAttention=True,
        attentionReason="permission",
        futureField={"nested": [1, 2.5, None, "x"]},
        lastUsage={"inputTokens": 12},
        runtimeInfo={"provider": "claude", "sessionId": None, "extraRuntime": True},
        persistence={"provider": "claude", "sessionId": "s-2", "nativeHandle": "h"},
        project={
            "projectKey": "/srv/app",
            "projectName": "app",
            "checkout": {"cwd": "/srv/app", "isGit": True, "currentBranch": "main", "remoteUrl": None},
        },
    )
    fake.agents.upsert(
        "agent-3",
        title=None,
        provider="codex",
        persistence=None,
        runtimeInfo=None,
        status="error",
        lastError="boom\nline two",
        createdAt="2026-01-02T03:04:09.000Z",
        updatedAt="2026-01-02T03:04:10.000Z",
        pendingPermissions=[
            {
                "id": "perm-1",
                "kind": "tool",
                "name": "Bash",
                "title": "run ls",
                "input": {"cmd": "ls"},
                "unknownPermField": 7,
            }
        ],
    )


AGENTS_JSON = "\n".join(
    [
        "[",
        "  {",
        '    "agent": {',
        '      "availableModes": [],',
        '      "capabilities": {',
        '        "supportsDynamicModes": false,',
        '        "supportsMcpServers": false,',
        '        "supportsReasoningStream": true,',
        '        "supportsSessionPersistence": true,',
        '        "supportsStreaming": true,',
        '        "supportsToolInvocations": true',
        "      },",
        '      "createdAt": "2026-01-02T03:04:09.000Z",',
        '      "cwd": "/home/dev/projects/demo",',
        '      "features": [],',
        '      "id": "agent-3",',
        '      "labels": {},',
        '      "lastError": "boom\\nline two",',
        '      "model": "ten-second-stream",',
        '      "pendingPermissions": [',
        "        {",
        '          "id": "perm-1",',
        '          "input": {',
        '            "cmd": "ls"',
        "          },",
        '          "kind": "tool",',
        '          "name": "Bash",',
        '          "provider": "",',
        '          "title": "run ls"',
        "        }",
        "      ],",
        '      "provider": "codex",',
        '      "requiresAttention": false,',
        '      "status": "error",',
        '      "updatedAt": "2026-01-02T03:04:10.000Z"',
        "    },",
        '    "project": {',
        '      "checkout": {',
        '        "cwd": "/home/dev/projects/demo",',
        '        "isGit": false,',
        '        "isPaseoOwnedWorktree": false',
        "      },",
        '      "projectKey": "/home/dev/projects/demo",',
        '      "projectName": "demo"',
        "    }",
        "  },",
        "  {",
        '    "agent": {',
        '      "attentionReason": "permission",',
        '      "availableModes": [],',
        '      "capabilities": {',
        '        "supportsDynamicModes": false,',
        '        "supportsMcpServers": false,',
        '        "supportsReasoningStream": true,',
        '        "supportsSessionPersistence": true,',
        '        "supportsStreaming": true,',
        '        "supportsToolInvocations": true',
        "      },",
        '      "createdAt": "2026-01-02T03:04:07.000Z",',
        '      "cwd": "/home/dev/projects/demo",',
        '      "features": [],',
        '      "id": "agent-2",',
        '      "labels": {',
        '        "paseo.parent-agent-id": "agent-1",',
        '        "team": "core"',
        "      },",
        '      "lastUsage": {',
        '        "inputTokens": 12',
        "      },",
        '      "pendingPermissions": [],',
        '      "persistence": {',
        '        "nativeHandle": "h",',
        '        "provider": "claude",',
        '        "sessionId": "s-2"',
        "      },",
        '      "provider": "claude",',
        '      "requiresAttention": true,',
        '      "runtimeInfo": {',
        '        "provider": "claude"',
        "      },",
        '      "status": "running",',
        '      "title": "D\\u00e9 \\u25b6 \\"quoted\\"",',
        '      "updatedAt": "2026-01-02T03:04:08.000Z"',
        "    },",
        '    "project": {',
        '      "checkout": {',
        '        "currentBranch": "main",',
        '        "cwd": "/srv/app",',
        '        "isGit": true,',
        '        "isPaseoOwnedWorktree": false',
        "      },",
        '      "projectKey": "/srv/app",',
        '      "projectName": "app"',
        "    }",
        "  },",
        "  {",
        '    "agent": {',
        '      "availableModes": [],',
        '      "capabilities": {',
        '        "supportsDynamicModes": false,',
        '        "supportsMcpServers": false,',
        '        "supportsReasoningStream": true,',
        '        "supportsSessionPersistence": true,',
        '        "supportsStreaming": true,',
        '        "supportsToolInvocations": true',
        "      },",
        '      "createdAt": "2026-01-02T03:04:05.000Z",',
        '      "cwd": "/home/dev/projects/demo",',
        '      "features": [],',
        '      "id": "agent-1",',
        '      "labels": {},',
        '      "model": "ten-second-stream",',
        '      "pendingPermissions": [],',
        '      "persistence": {',
        '        "provider": "mock",',
        '        "sessionId": "s-1"',
        "      },",
        '      "provider": "mock",',
        '      "requiresAttention": false,',
        '      "runtimeInfo": {',
        '        "model": "m",',
        '        "provider": "mock",',
        '        "sessionId": "s-1"',
        "      },",
        '      "status": "idle",',
        '      "title": "one",',
        '      "updatedAt": "2026-01-02T03:04:06.000Z"',
        "    },",
        '    "project": {',
        '      "checkout": {',
        '        "cwd": "/home/dev/projects/demo",',
        '        "isGit": false,',
        '        "isPaseoOwnedWorktree": false',
        "      },",
        '      "projectKey": "/home/dev/projects/demo",',
        '      "projectName": "demo"',
        "    }",
        "  }",
        "]",
        "",
    ]
)
"""What ``agents --json`` printed for :func:`_fill`'s directory before the lazy imports."""


def test_agents_json_is_byte_identical_to_the_recorded_output(fake: FakeDaemon) -> None:
    _fill(fake)
    code, out = run(["agents", "--json", "--url", fake.serve()])
    assert code == 0
    assert out == AGENTS_JSON
    assert "futureField" not in out  # the typed path's normalisation, not the raw payload
    assert json.loads(out)[1]["agent"]["title"] == 'D\u00e9 \u25b6 "quoted"'


def test_agents_json_of_a_fresh_process_is_the_recorded_output(fake: FakeDaemon) -> None:
    _fill(fake)
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PASEO_", "COVERAGE_PROCESS_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    command = [sys.executable, "-m", "daemon_client", "agents", "--json", "--url", fake.serve()]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, check=True, env=env)
    assert result.stdout == AGENTS_JSON


# ------------------------------------------------------------------ one command's parser


def _register(names: tuple[str, ...]) -> CliParser:
    parser = CliParser(prog="daemon-client")
    registry = Registry(parser, _connection_args)
    for name in names:
        next(m for m in modules() if m.__name__.endswith("." + name)).register(registry)
    return parser


def test_the_command_table_names_the_module_of_every_command() -> None:
    registered = {command: group for group in GROUPS for command in _register((group,)).subcommands}
    assert registered == COMMANDS
    assert list(build_parser().subcommands) == list(_register(GROUPS).subcommands)


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["agents", "--json"], "agents"),
        (["-v", "--trace", "t.jsonl", "tail", "x"], "tail"),
        (["--trace=t.jsonl", "-q", "terminals", "ls"], "terminals"),
        (["send", "a", "hi"], "send"),
        (["agents", "--help"], None),
        (["-h"], None),
        (["--version"], None),
        (["completion", "bash"], None),
        ([], None),
        (["no-such-command"], None),
        (["--tra", "t.jsonl", "agents"], None),
        (["-vq", "agents"], None),
    ],
)
def test_command_of(argv: list[str], command: str | None) -> None:
    assert command_of(argv) == command


def _help(parser: argparse.ArgumentParser) -> str:
    return parser.format_help()


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_one_commands_parser_is_that_command_of_the_whole_parser(command: str) -> None:
    alone, whole = build_parser(command), build_parser()
    assert [COMMANDS[name] for name in alone.subcommands] == [COMMANDS[command]] * len(alone.subcommands)
    one, same = alone.subcommands[command], whole.subcommands[command]
    assert _help(one) == _help(same)
    assert [a.option_strings or a.dest for a in one.recorded] == [a.option_strings or a.dest for a in same.recorded]
    for name, sub in one.subcommands.items():
        assert _help(sub) == _help(same.subcommands[name])


@pytest.mark.parametrize(
    "argv",
    [
        ["agents", "--json", "--limit", "3", "--status", "idle", "--label", "a=b"],
        ["-v", "tail", "agent", "--json", "--no-follow"],
        ["--trace", "t.jsonl", "terminals", "ls", "--json"],
        ["send", "agent", "--json", "hello"],
        ["hosts", "ls"],
        ["config", "get"],
    ],
)
def test_one_commands_parser_parses_as_the_whole_parser(argv: list[str]) -> None:
    command = command_of(argv)
    assert command is not None
    alone, whole = vars(build_parser(command).parse_args(argv)), vars(build_parser().parse_args(argv))
    assert alone.pop("top_parser") is not whole.pop("top_parser")
    assert alone == whole


def test_a_bad_option_is_the_same_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    errors = []
    for parser in (build_parser("agents"), build_parser()):
        with pytest.raises(SystemExit) as exited:
            parser.parse_args(["agents", "--bogus"])
        errors.append((exited.value.code, capsys.readouterr().err))
    assert errors[0] == errors[1]
    assert errors[0][0] == 2


# ------------------------------------------------------------------ what a fresh process imports


def _modules_after(code: str) -> set[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PASEO_", "COVERAGE_PROCESS_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    command = [sys.executable, "-c", code + "\nimport sys; print('\\n'.join(sorted(sys.modules)))"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, check=True, env=env)
    return set(result.stdout.split())


def test_naming_the_client_class_imports_no_connection_machinery() -> None:
    loaded = _modules_after("import daemon_client; daemon_client.Client")
    assert not loaded & {"daemon_client.runtime", "daemon_client.transport", "daemon_client.protocol",
                         "daemon_client.client.assembly", "websocket", "cattrs", "ssl"}  # fmt: skip


def test_agents_json_imports_only_the_agents_command(fake: FakeDaemon) -> None:
    _fill(fake)
    code = (
        "import io\nfrom daemon_client.cli.main import main\n"
        f"assert main(['agents', '--json', '--url', {fake.serve()!r}], out=io.StringIO()) == 0"
    )
    loaded = _modules_after(code)
    assert "daemon_client.cli.actions.agents" in loaded
    others = {f"daemon_client.cli.commands.{name}" for name in GROUPS if name != "agents"}
    unneeded = {
        "daemon_client.cli.live",
        "daemon_client.cli.completion",
        "daemon_client.protocol.timeline",
        "daemon_client.protocol.workspaces",
        "daemon_client.protocol.workspace_directory",
        "daemon_client.api.agents.handle",
        "daemon_client.subscriptions.timeline",
        "daemon_client.discovery.store",
    }
    assert loaded & (others | unneeded) == set()
