"""Workspace creation from a checkout (an existing branch or a pull request), the first agent's
attachments and the directory's project ID: the exact frames the fake daemon received, on every
host kind."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.api.workspaces.create import known_project_id
from daemon_client.protocol.worktrees import parse_change_request
from daemon_client.testing import FakeDaemon

from ...conftest import KINDS, TRANSPORTS

Connected = Callable[..., tuple[FakeDaemon, dc.Client]]
REPO = "/home/dev/projects/demo-repo"
NEWEST = ["capable", "selective"]
LEGACY = "create_paseo_worktree_request"
CREATE = "workspace.create.request"


@pytest.fixture
def connected(fakes, make_client) -> Connected:
    def make(kind: str = "capable", transport: str = "memory") -> tuple[FakeDaemon, dc.Client]:
        fake = fakes(kind)
        client = make_client(fake, transport)
        client.connect()
        return fake, client

    return make


def _sent(fake: FakeDaemon, *types: str) -> list[dict[str, Any]]:
    return [{k: v for k, v in f["message"].items() if k != "requestId"} for f in fake.received
            if f.message_type in types]  # fmt: skip


def _created(fake: FakeDaemon) -> list[dict[str, Any]]:
    return _sent(fake, CREATE, LEGACY)


# ------------------------------------------------------------------------------ branches


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", KINDS)
def test_check_out_an_existing_branch(connected: Connected, kind: str, transport: str) -> None:
    fake, client = connected(kind, transport)
    workspace = client.workspaces.create(f"{REPO}/src", worktree=dc.WorktreeCheckout(branch="release/1.2"))
    snapshot = workspace.current()
    assert snapshot is not None
    assert (snapshot.workspace_kind, snapshot.name) == ("worktree", "release/1.2")
    assert snapshot.git_runtime is not None
    assert snapshot.git_runtime.current_branch == "release/1.2"
    assert snapshot.directory.startswith("/home/dev/.paseo/worktrees/")
    assert snapshot.directory.endswith("/release-1.2")
    if kind == "broadcast":  # 0.1.65: the worktree request knows checkouts of a branch
        assert _created(fake) == [
            {"type": LEGACY, "cwd": f"{REPO}/src", "action": "checkout", "refName": "release/1.2"}
        ]
    else:
        assert _created(fake) == [
            {"type": CREATE, "source": {"kind": "worktree", "cwd": f"{REPO}/src", "action": "checkout",
                                        "refName": "release/1.2"}}
        ]  # fmt: skip


@pytest.mark.parametrize("kind", KINDS)
def test_a_branch_checkout_the_daemon_refuses_raises(connected: Connected, kind: str) -> None:
    _fake, client = connected(kind)
    with pytest.raises(dc.RpcError, match="Branch not found: nowhere") as caught:
        client.workspaces.create(REPO, worktree=dc.WorktreeCheckout(branch="nowhere"))
    assert caught.value.code == "worktree_create_failed"
    client.workspaces.create(REPO, worktree=dc.WorktreeCheckout(branch="main"))
    with pytest.raises(dc.RpcError, match="already checked out"):
        client.workspaces.create(REPO, worktree=dc.WorktreeCheckout(branch="main"))
    branched = client.workspaces.create(REPO, worktree=dc.Worktree(branch="made-here"))
    branched.archive()  # the branch outlives its worktree: it can be checked out again
    again = client.workspaces.create(REPO, worktree=dc.WorktreeCheckout(branch="made-here"))
    assert again.name == "made-here"


# ------------------------------------------------------------------------------ pull requests


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("given", [42, "42", "#42", "https://github.com/acme/demo-repo/pull/42/files"])
def test_check_out_a_github_pull_request(connected: Connected, kind: str, transport: str, given: object) -> None:
    fake, client = connected(kind, transport)
    workspace = client.workspaces.create(REPO, worktree=dc.WorktreeCheckout(pull_request=given))  # type: ignore[arg-type]
    assert workspace.name == "fix/search"  # the pull request's head branch
    if kind == "broadcast":  # 0.1.65 knows githubPrNumber only
        assert _created(fake) == [{"type": LEGACY, "cwd": REPO, "action": "checkout", "githubPrNumber": 42}]
    else:  # checkoutSource, and the older field for hosts from before it, as the SDK sends them
        change = {"kind": "change_request", "forge": "github", "number": 42}
        assert _created(fake) == [
            {"type": CREATE, "source": {"kind": "worktree", "cwd": REPO, "action": "checkout",
                                        "checkoutSource": change, "githubPrNumber": 42}}
        ]  # fmt: skip


@pytest.mark.parametrize("kind", NEWEST)
def test_check_out_a_gitlab_merge_request(connected: Connected, kind: str) -> None:
    fake, client = connected(kind)
    url = "https://gitlab.example.com/group/sub/demo-repo/-/merge_requests/7"
    workspace = client.workspaces.create(REPO, worktree=dc.WorktreeCheckout(pull_request=url), title="Typos")
    assert workspace.name == "Typos"
    change = {"kind": "change_request", "forge": "gitlab", "number": 7, "projectPath": "group/sub/demo-repo"}
    assert _created(fake) == [
        {
            "type": CREATE,
            "title": "Typos",
            "source": {"kind": "worktree", "cwd": REPO, "action": "checkout", "checkoutSource": change},
        }
    ]  # fmt: skip


def test_0_1_65_cannot_check_out_another_forges_change_request(connected: Connected) -> None:
    fake, client = connected("broadcast")
    checkout = dc.WorktreeCheckout(pull_request=7, forge="gitlab")
    with pytest.raises(dc.UnsupportedByHost, match="gitlab change request") as caught:
        client.workspaces.create(REPO, worktree=checkout)
    assert (caught.value.feature, caught.value.version) == ("workspaceMultiplicity", "0.1.106")
    with pytest.raises(dc.UnsupportedByHost, match="title"):
        client.workspaces.create(REPO, worktree=dc.WorktreeCheckout(pull_request=42), title="Review")
    assert _created(fake) == []


@pytest.mark.parametrize("kind", KINDS)
def test_an_unknown_pull_request_raises(connected: Connected, kind: str) -> None:
    _fake, client = connected(kind)
    with pytest.raises(dc.RpcError, match=r"Pull request #999 not found"):
        client.workspaces.create(REPO, worktree=dc.WorktreeCheckout(pull_request=999))
    with pytest.raises(dc.RpcError, match="Not a git repository"):
        client.workspaces.create("/tmp/plain", worktree=dc.WorktreeCheckout(pull_request=42))


def test_checkout_arguments_are_validated() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        dc.WorktreeCheckout()
    with pytest.raises(ValueError, match="exactly one"):
        dc.WorktreeCheckout(branch="main", pull_request=1)
    for bad in (0, -3, True, "https://example.com/acme/repo/issues/4", "4x", 4.0):
        with pytest.raises(ValueError):
            dc.WorktreeCheckout(pull_request=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="non-empty"):
        dc.WorktreeCheckout(branch=" ")
    with pytest.raises(ValueError, match="pull request checkout"):
        dc.WorktreeCheckout(branch="main", forge="github")
    with pytest.raises(ValueError, match="not github"):
        dc.WorktreeCheckout(pull_request="https://gitlab.com/g/p/-/merge_requests/3", forge="github")
    parsed = dc.WorktreeCheckout(pull_request="https://github.com/acme/repo/pull/12")
    assert (parsed.pull_request, parsed.number, parsed.forge, parsed.project_path) == (12, 12, "github", None)
    assert dc.WorktreeCheckout(branch="main").number is None
    assert dc.WorktreeCheckout(pull_request=5, forge="gitea").forge == "gitea"
    assert dc.WorktreeCheckout.parse("feature/login") == dc.WorktreeCheckout(branch="feature/login")
    assert dc.WorktreeCheckout.parse("#8") == dc.WorktreeCheckout(pull_request=8)
    assert dc.WorktreeCheckout.parse("https://gitlab.com/g/p/-/merge_requests/3").project_path == "g/p"
    with pytest.raises(ValueError):
        dc.WorktreeCheckout.parse("https://example.com/not/a/pr")
    assert parse_change_request("https://github.com/a/b/pull/3") == (3, "github", None)


# ------------------------------------------------------------------------------ first agent's context


ATTACHMENTS = (
    dc.UploadedFile(id="up-1", file_name="screen.png", mime_type="image/png", size=2048, path="/uploads/screen.png"),
    dc.TextAttachment(text="Steps: log in twice", title="Repro"),
    dc.ChangeRequestAttachment(number=42, title="Fix search", url="https://github.com/acme/demo-repo/pull/42"),
    dc.IssueAttachment(number=5, title="Login loops", url="https://github.com/acme/demo-repo/issues/5", body="x"),
    dc.ForkAttachment(text="earlier transcript", title="Context"),
)
WIRE_ATTACHMENTS = [
    {"type": "uploaded_file", "id": "up-1", "fileName": "screen.png", "mimeType": "image/png", "size": 2048,
     "path": "/uploads/screen.png"},
    {"type": "text", "mimeType": "text/plain", "title": "Repro", "text": "Steps: log in twice"},
    {"type": "forge_change_request", "mimeType": "application/paseo-forge-change-request", "forge": "github",
     "number": 42, "title": "Fix search", "url": "https://github.com/acme/demo-repo/pull/42"},
    {"type": "forge_issue", "mimeType": "application/paseo-forge-issue", "forge": "github", "number": 5,
     "title": "Login loops", "url": "https://github.com/acme/demo-repo/issues/5", "body": "x"},
    {"type": "text", "mimeType": "text/plain", "title": "Context", "text": "earlier transcript"},
]  # fmt: skip


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", KINDS)
def test_the_first_agents_attachments_are_sent(connected: Connected, kind: str, transport: str) -> None:
    fake, client = connected(kind, transport)
    client.workspaces.create(REPO, worktree=dc.Worktree(), first_prompt="Fix the login", attachments=ATTACHMENTS)
    client.workspaces.create(REPO, worktree=dc.Worktree(), attachments=ATTACHMENTS[1:2])  # no prompt
    client.workspaces.create(REPO, worktree=dc.Worktree(), attachments=[])  # nothing to name from
    contexts = [frame.get("firstAgentContext") for frame in _created(fake)]
    assert contexts == [
        {"prompt": "Fix the login", "attachments": WIRE_ATTACHMENTS},
        {"attachments": WIRE_ATTACHMENTS[1:2]},
        None,
    ]
    assert ATTACHMENTS[0].is_image  # type: ignore[union-attr]


def test_attachments_are_typed(connected: Connected) -> None:
    fake, client = connected("capable")
    with pytest.raises(TypeError, match="UploadedFile"):
        client.workspaces.create(REPO, first_prompt="x", attachments=[{"data": "iVBOR", "mimeType": "image/png"}])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="sequence"):
        client.workspaces.create(REPO, first_prompt="x", attachments="notes.txt")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="size"):
        dc.UploadedFile(id="u", file_name="f", mime_type="text/plain", size=-1, path="/f")
    with pytest.raises(ValueError, match="number"):
        dc.ChangeRequestAttachment(number=0, title="t", url="https://x")
    with pytest.raises(ValueError, match="url"):
        dc.IssueAttachment(number=1, title="t", url="")
    assert _created(fake) == []


# ------------------------------------------------------------------------------ project ID


@pytest.mark.parametrize("kind", NEWEST)
def test_the_project_id_is_sent_when_the_client_knows_it(connected: Connected, kind: str) -> None:
    fake, client = connected(kind)
    fake.workspaces.open("/home/dev/projects/other")
    client.workspaces.create("/home/dev/projects/demo", first_prompt="Look around")  # unknown: none sent
    observed = client.workspaces.list(subscribe=True)  # a live observation holds the other workspace
    client.workspaces.create("/home/dev/projects/other/", first_prompt="Look here")
    observed.subscription.release()
    client.workspaces.create(REPO, worktree=dc.WorktreeCheckout(pull_request=7), project_id="proj-demo")
    sources = [frame["source"] for frame in _sent(fake, CREATE)]
    assert sources == [
        {"kind": "directory", "path": "/home/dev/projects/demo"},
        {"kind": "directory", "path": "/home/dev/projects/other/", "projectId": "/home/dev/projects/other"},
        {"kind": "worktree", "cwd": REPO, "action": "checkout", "projectId": "proj-demo",
         "checkoutSource": {"kind": "change_request", "forge": "github", "number": 7}, "githubPrNumber": 7},
    ]  # fmt: skip
    workspace = client.workspaces.create("/home/dev/projects/demo", project_id="proj-explicit")
    assert workspace.project_id == "proj-explicit"  # the fake filed it under the given project
    worktree = client.workspaces.create(f"{REPO}/src", worktree=dc.Worktree(branch="inside"))
    assert _sent(fake, CREATE)[-1]["source"]["projectId"] == REPO  # the checkout above told it REPO's project
    assert worktree.project_id == REPO


@pytest.mark.parametrize("kind", NEWEST)
def test_no_project_id_when_known_workspaces_disagree(connected: Connected, kind: str) -> None:
    fake, client = connected(kind)
    client.workspaces.create("/home/dev/projects/shared", project_id="proj-a")
    client.workspaces.create("/home/dev/projects/shared", project_id="proj-b")
    client.workspaces.create("/home/dev/projects/shared", first_prompt="Which one?")
    assert "projectId" not in _sent(fake, CREATE)[-1]["source"]


def test_0_1_65_sends_no_project_id(connected: Connected) -> None:
    fake, client = connected("broadcast")
    client.workspaces.create(REPO, worktree=dc.Worktree(branch="first"))  # tells the client REPO's project
    client.workspaces.create(REPO, worktree=dc.WorktreeCheckout(branch="main"), project_id="proj-demo")
    assert all("projectId" not in frame for frame in _sent(fake, LEGACY))
    with pytest.raises(ValueError, match="project_id"):
        client.workspaces.create(REPO, worktree=dc.Worktree(), project_id=" ")


def test_which_known_workspace_tells_the_project() -> None:
    def ws(project: str, root: str, directory: str | None = None) -> dc.WorkspaceDescriptor:
        return dc.WorkspaceDescriptor(id=f"ws-{project}", project_id=project, project_root_path=root,
                                      workspace_directory=directory or root)  # fmt: skip

    outer, inner = ws("outer", "/src"), ws("inner", "/src/app")
    worktree = ws("inner", "/src/app", "/home/dev/.paseo/worktrees/ab12cd34/fix")
    assert known_project_id([outer, inner], "/src/app/lib", worktree=True) == "inner"  # the innermost root
    assert known_project_id([outer], "/src/app/lib", worktree=True) == "outer"
    assert known_project_id([outer, inner], "/src/app/lib", worktree=False) is None  # a directory: exact only
    assert known_project_id([worktree], "/home/dev/.paseo/worktrees/ab12cd34/fix/", worktree=False) == "inner"
    assert known_project_id([inner, ws("other", "/src/app")], "/src/app", worktree=False) is None  # they disagree
    assert known_project_id([ws("", "/src/app")], "/src/app", worktree=False) is None
    assert known_project_id([], "/src/app", worktree=True) is None
