"""``workspaces create``: a directory, a new branch or a checkout (``--checkout PR|BRANCH``), the
frames the fake daemon received on every host kind, the output, and the option checks. In the
test process against the fake daemon on loopback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.testing import FakeDaemon

from ..conftest import KINDS
from .cli_inprocess import run

REPO = "/home/dev/projects/demo-repo"
CREATES = ("workspace.create.request", "create_paseo_worktree_request")


@pytest.fixture(params=KINDS)
def daemon(request: pytest.FixtureRequest) -> Iterator[FakeDaemon]:
    with FakeDaemon(host_kind=dc.HostKind(request.param)) as fake:
        fake.serve()
        yield fake


def _created(fake: FakeDaemon) -> list[dict[str, Any]]:
    return [{k: v for k, v in f["message"].items() if k != "requestId"} for f in fake.received
            if f.message_type in CREATES]  # fmt: skip


def _newest(fake: FakeDaemon) -> bool:
    return fake.host_kind is not dc.HostKind.BROADCAST


def test_checkout_a_pull_request(daemon: FakeDaemon) -> None:
    code, out = run(["workspaces", "create", REPO, "--url", daemon.url, "--checkout", "#42", "--json"])
    assert code == 0
    created = json.loads(out)
    assert created["name"] == "fix/search"
    assert created["workspaceKind"] == "worktree"
    if _newest(daemon):
        change = {"kind": "change_request", "forge": "github", "number": 42}
        assert _created(daemon) == [
            {"type": "workspace.create.request", "source": {"kind": "worktree", "cwd": REPO, "action": "checkout",
                                                            "checkoutSource": change, "githubPrNumber": 42}}
        ]  # fmt: skip
    else:
        assert _created(daemon) == [
            {"type": "create_paseo_worktree_request", "cwd": REPO, "action": "checkout", "githubPrNumber": 42}
        ]


def test_checkout_a_pull_request_url_or_a_branch(daemon: FakeDaemon) -> None:
    url = "https://github.com/acme/demo-repo/pull/7"
    code, out = run(["workspaces", "create", REPO, "--url", daemon.url, "--checkout", url])
    assert code == 0
    assert "docs/typos" in out  # the table: ID, name, directory
    assert out.splitlines()[0].split() == ["ID", "NAME", "DIRECTORY"]
    code, out = run(["workspaces", "create", f"{REPO}/src", "--url", daemon.url, "--checkout", "release/1.2"])
    assert code == 0
    sent = _created(daemon)[-1]
    fields = sent["source"] if _newest(daemon) else sent
    assert (fields["action"], fields["refName"]) == ("checkout", "release/1.2")


def test_a_new_branch_and_a_directory(daemon: FakeDaemon, capsys: pytest.CaptureFixture[str]) -> None:
    code, _out = run(["workspaces", "create", REPO, "--url", daemon.url, "--branch", "feat", "--base", "main",
                      "--prompt", "Add the login page"])  # fmt: skip
    assert code == 0
    sent = _created(daemon)[-1]
    assert sent["firstAgentContext"] == {"prompt": "Add the login page", "attachments": []}
    code, out = run(["workspaces", "create", "/home/dev/projects/plain", "--url", daemon.url, "--json"])
    if _newest(daemon):
        assert code == 0
        assert json.loads(out)["workspaceDirectory"] == "/home/dev/projects/plain"
    else:  # 0.1.65 cannot create a fresh directory workspace: refused before sending
        assert code != 0
        assert "open(cwd)" in capsys.readouterr().err
        assert len(_created(daemon)) == 1


def test_an_unknown_checkout_is_reported(daemon: FakeDaemon, capsys: pytest.CaptureFixture[str]) -> None:
    code, _out = run(["workspaces", "create", REPO, "--url", daemon.url, "--checkout", "999"])
    assert code != 0
    assert "Pull request #999 not found" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--checkout", "https://example.com/not/a/pr"], "--checkout: not a pull request"),
        (["--base", "main"], "--base needs --branch or --worktree"),
        (["--branch", " "], "non-empty"),
    ],
)
def test_option_checks(fake: FakeDaemon, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["workspaces", "create", REPO, "--url", fake.url, *argv]) == (2, "")
    assert message in capsys.readouterr().err
    assert _created(fake) == []


def test_checkout_and_branch_exclude_each_other(fake: FakeDaemon, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        run(["workspaces", "create", REPO, "--url", fake.url, "--checkout", "42", "--branch", "b"])
    assert caught.value.code == 2
    assert "not allowed with" in capsys.readouterr().err


def test_workspaces_without_a_command_still_lists(fake: FakeDaemon) -> None:
    fake.workspaces.open("/home/dev/projects/demo")
    code, out = run(["workspaces", "--url", fake.url, "--json"])
    assert code == 0
    assert [w["workspaceDirectory"] for w in json.loads(out)] == ["/home/dev/projects/demo"]
