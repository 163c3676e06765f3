"""Workspace creation (directory and worktree), titles, worktree list/archive and workspace-scoped
agents, on every host kind over memory and loopback; lists, ``find`` over several pages, handles,
and replies that carry no usable workspace; transcript 17 read without loss and replayed."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.api.workspaces.worktrees import WORKTREE_REFUSAL
from daemon_client.protocol import decode_frame, structure
from daemon_client.protocol.workspace_directory import parse_workspace_list, parse_workspace_update
from daemon_client.protocol.worktrees import WorktreeArchive, WorktreeInfo, create_message
from daemon_client.testing import FakeDaemon

from ...conftest import KINDS, TRANSPORTS
from ..lossless import assert_lossless, replay, session_frames, transcript

Connected = Callable[..., tuple[FakeDaemon, dc.Client]]
REPO = "/home/dev/projects/demo-repo"
CWD = "/home/dev/projects/demo"
NEWEST = ["capable", "selective"]


def _sent(fake: FakeDaemon, message_type: str) -> list[dict[str, Any]]:
    return [{k: v for k, v in f["message"].items() if k != "requestId"} for f in fake.received
            if f.message_type == message_type]  # fmt: skip


# ------------------------------------------------------------------------------ create


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", NEWEST)
def test_create_a_fresh_workspace_for_a_directory(connected: Connected, kind: str, transport: str) -> None:
    fake, client = connected(kind, transport)
    opened = client.workspaces.open("/home/dev/projects/demo")
    created = client.workspaces.create("/home/dev/projects/demo", title="Second look")
    assert created.id != opened.id  # always a new workspace, unlike open()
    assert created.directory == "/home/dev/projects/demo"
    assert created.name == "Second look"
    assert created.setup_terminal_id is None
    assert fake.workspaces.get(created.id) is not None
    assert _sent(fake, "workspace.create.request") == [
        {
            "type": "workspace.create.request",
            # the opened workspace told this client the directory's project: sent without asking
            "source": {"kind": "directory", "path": "/home/dev/projects/demo", "projectId": opened.project_id},
            "title": "Second look",
        }
    ]


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", KINDS)
def test_create_a_worktree_workspace(connected: Connected, kind: str, transport: str) -> None:
    fake, client = connected(kind, transport)
    workspace = client.workspaces.create(f"{REPO}/src", worktree=dc.Worktree(branch="feature-x", base="main"))
    snapshot = workspace.current()
    assert snapshot is not None
    assert (snapshot.workspace_kind, snapshot.project_kind, snapshot.name) == ("worktree", "git", "feature-x")
    assert snapshot.directory.startswith("/home/dev/.paseo/worktrees/")
    assert snapshot.directory.endswith("/feature-x")
    assert snapshot.project_root_path == REPO
    if kind == "broadcast":  # 0.1.65: the worktree request, the ID is the directory
        assert workspace.id == snapshot.directory
        assert _sent(fake, "create_paseo_worktree_request") == [
            {
                "type": "create_paseo_worktree_request",
                "cwd": f"{REPO}/src",
                "action": "branch-off",
                "worktreeSlug": "feature-x",
                "refName": "main",
            }
        ]
    else:
        assert _sent(fake, "workspace.create.request")[0]["source"] == {
            "kind": "worktree", "cwd": f"{REPO}/src", "worktreeSlug": "feature-x", "baseBranch": "main"
        }  # fmt: skip
    generated = client.workspaces.create(REPO, worktree=dc.Worktree(), first_prompt="Fix the login bug")
    assert generated.name  # the daemon chose the branch
    context = {"prompt": "Fix the login bug", "attachments": []}  # the SDK always sends the list
    sent = _sent(fake, "create_paseo_worktree_request" if kind == "broadcast" else "workspace.create.request")
    assert sent[-1]["firstAgentContext"] == context


def test_0_1_65_cannot_create_a_fresh_directory_workspace_or_title_one(connected: Connected) -> None:
    fake, client = connected("broadcast")
    with pytest.raises(dc.UnsupportedByHost, match=r"open\(cwd\)") as caught:
        client.workspaces.create("/home/dev/projects/demo")
    assert (caught.value.feature, caught.value.version) == ("workspaceMultiplicity", "0.1.97")
    with pytest.raises(dc.UnsupportedByHost, match="title"):
        client.workspaces.create(REPO, worktree=dc.Worktree(branch="b"), title="T")
    assert _sent(fake, "create_paseo_worktree_request") == []
    assert _sent(fake, "open_project_request") == []  # never a silent fallback


@pytest.mark.parametrize("kind", KINDS)
def test_a_creation_the_daemon_refuses_raises(connected: Connected, kind: str) -> None:
    _fake, client = connected(kind)
    with pytest.raises(dc.RpcError, match="Not a git repository") as caught:
        client.workspaces.create("/tmp/plain", worktree=dc.Worktree(branch="b"))
    assert caught.value.code == "worktree_create_failed"
    client.workspaces.create(REPO, worktree=dc.Worktree(branch="taken"))
    with pytest.raises(dc.RpcError, match="already exists"):
        client.workspaces.create(REPO, worktree=dc.Worktree(branch="taken"))


def test_bad_arguments_are_refused_before_sending(connected: Connected) -> None:
    fake, client = connected("capable")
    with pytest.raises(ValueError, match="Worktree"):
        dc.Worktree(branch="  ")
    with pytest.raises(ValueError, match="cwd"):
        client.workspaces.create("")
    with pytest.raises(TypeError, match="Worktree"):
        client.workspaces.create(REPO, worktree="feature")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="title"):
        client.workspaces.create(REPO, title=" ")
    assert _sent(fake, "workspace.create.request") == []


def test_a_creation_answered_without_a_readable_workspace_is_a_protocol_error(connected: Connected) -> None:
    fake, client = connected("capable")
    fake.on_request("workspace.create.request", lambda ctx: ctx.reply({"workspace": 7, "error": None}))
    with pytest.raises(dc.ProtocolError, match=r"workspace\.create\.request answered with an unreadable workspace: 7"):
        client.workspaces.create(CWD)


# ------------------------------------------------------------------------------ titles


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", NEWEST)
def test_set_title(connected: Connected, kind: str, transport: str) -> None:
    fake, client = connected(kind, transport)
    workspace = client.workspaces.create(REPO, worktree=dc.Worktree(branch="titled"))
    assert workspace.set_title("  Login fix ") == "Login fix"
    assert fake.workspaces.get(workspace.id)["name"] == "Login fix"
    assert workspace.set_title(None) is None  # cleared: the name reverts to the branch
    assert fake.workspaces.get(workspace.id)["name"] == "titled"
    with pytest.raises(dc.RpcError, match="Workspace not found"):
        client.workspaces.ref("ws-unknown").set_title("x")


def test_set_title_needs_a_newer_host(connected: Connected) -> None:
    fake, client = connected("broadcast")
    with pytest.raises(dc.UnsupportedByHost) as caught:
        client.workspaces.open("/home/dev/projects/demo").set_title("x")
    assert caught.value.feature == "workspaceMultiplicity"
    assert _sent(fake, "workspace.title.set.request") == []


def test_a_title_that_is_not_text_is_refused_before_sending(connected: Connected) -> None:
    fake, client = connected("capable")
    before = len(fake.received)
    with pytest.raises(ValueError, match="title must be a string or None, not int"):
        client.workspaces.set_title("ws-1", 5)  # type: ignore[arg-type]
    assert len(fake.received) == before


def test_a_title_needs_a_connection_to_know_the_host(fakes, make_client) -> None:
    client = make_client(fakes("capable"))
    with pytest.raises(dc.NotConnected, match="cannot tell whether the daemon supports set workspace titles"):
        client.workspaces.set_title("ws-1", "title")


# ------------------------------------------------------------------------------ worktrees


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", KINDS)
def test_worktrees_are_listed_and_archived(connected: Connected, kind: str, transport: str) -> None:
    fake, client = connected(kind, transport)
    workspace = client.workspaces.create(REPO, worktree=dc.Worktree(branch="short-lived"))
    directory = workspace.directory
    agent = client.agents.create(dc.AgentConfig(provider="mock/ten-second-stream"), cwd=directory)
    (listed,) = client.workspaces.worktrees(REPO)
    assert (listed.worktree_path, listed.branch_name) == (directory, "short-lived")
    assert client.workspaces.worktrees(repo_root=REPO) == (listed,)
    archived = workspace.archive()
    assert fake.workspaces.get(workspace.id) is None
    assert fake.worktrees.worktrees() == []  # the worktree went with it, and its agents
    assert fake.agents.get(agent.id)["archivedAt"] is not None
    if kind == "broadcast":  # 0.1.65 refuses archive_workspace_request: archived as a worktree
        assert archived is None
        assert _sent(fake, "archive_workspace_request") == []
        assert _sent(fake, "paseo_worktree_archive_request") == [
            {"type": "paseo_worktree_archive_request", "worktreePath": directory, "repoRoot": REPO}
        ]
    else:
        assert archived is not None
        assert _sent(fake, "paseo_worktree_archive_request") == []


def test_an_unknown_worktree_workspace_is_archived_after_the_refusal(connected: Connected, make_client) -> None:
    fake, client = connected("broadcast")
    workspace = client.workspaces.create(REPO, worktree=dc.Worktree(branch="elsewhere"))
    other = make_client(fake)
    other.connect()
    assert other.workspaces.archive(workspace.id) is None  # this client never saw it
    assert fake.worktrees.worktrees() == []
    assert [m["type"] for m in _sent(fake, "archive_workspace_request")] == ["archive_workspace_request"]
    assert _sent(fake, "paseo_worktree_archive_request")[-1]["worktreePath"] == workspace.id


@pytest.mark.parametrize("kind", KINDS)
def test_archive_worktree_by_branch_and_its_errors(connected: Connected, kind: str) -> None:
    _fake, client = connected(kind)
    client.workspaces.create(REPO, worktree=dc.Worktree(branch="by-branch"))
    result = client.workspaces.archive_worktree(branch_name="by-branch", repo_root=REPO)
    assert result == dc.WorktreeArchive(success=True, removed_agents=())
    with pytest.raises(dc.RpcError, match="Not a Paseo worktree") as caught:
        client.workspaces.archive_worktree(worktree_path="/nowhere")
    assert caught.value.code == "NOT_ALLOWED"
    with pytest.raises(dc.RpcError, match="Not a git repository") as caught:
        client.workspaces.worktrees("/tmp/plain")
    assert caught.value.code == "NOT_GIT_REPO"
    with pytest.raises(ValueError):
        client.workspaces.worktrees()
    with pytest.raises(ValueError):
        client.workspaces.archive_worktree(repo_root=REPO)


# ------------------------------------------------------------------------------ lists, find, open and handles


@pytest.mark.parametrize("kind", KINDS)
def test_a_workspace_handle_describes_itself_and_a_list_sends_its_sort(connected: Connected, kind: str) -> None:
    fake, client = connected(kind)
    unknown = client.workspaces.ref("ws-unknown")
    assert repr(unknown) == "<WorkspaceHandle ws-unknown unknown>"
    assert unknown.project_id is None
    fake.workspaces.upsert(workspace_directory="/home/dev/projects/b", name="b", project_id="proj-b")
    fake.workspaces.upsert(workspace_directory="/home/dev/projects/a", name="a", project_id="proj-a")
    listed = client.workspaces.list(sort=[("name", "asc")])
    assert [w.name for w in listed.entries] == ["a", "b"]
    assert _sent(fake, "fetch_workspaces_request")[-1]["sort"] == [{"key": "name", "direction": "asc"}]
    handle = client.workspaces.ref(listed.entries[0])
    assert handle.project_id == "proj-a"
    assert repr(handle) == f"<WorkspaceHandle {handle.id} {handle.status}>"


def test_find_pages_through_every_match_and_matches_ids_only(connected: Connected) -> None:
    fake, client = connected()
    for n in range(201):
        fake.workspaces.upsert(workspace_directory=f"/home/dev/w{n:03}", project_id="shared")
    target = fake.workspaces.upsert(workspace_directory="/home/dev/target", project_id="shared")
    assert client.workspaces.find("shared") is None  # matches the project of every one, the ID of none
    assert len(_sent(fake, "fetch_workspaces_request")) == 2
    found = client.workspaces.find(target["id"])
    assert found is not None
    assert found.directory == "/home/dev/target"


def test_an_open_answered_without_a_readable_workspace_is_a_protocol_error(connected: Connected) -> None:
    fake, client = connected()
    fake.on_request("open_project_request", lambda ctx: ctx.reply({"workspace": "not an object", "error": None}))
    with pytest.raises(dc.ProtocolError, match="open_project_request answered with an unreadable workspace"):
        client.workspaces.open(CWD)


# ------------------------------------------------------------------------------ workspace agents


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", KINDS)
def test_workspace_agents_create(connected: Connected, kind: str, transport: str) -> None:
    fake, client = connected(kind, transport)
    workspace = client.workspaces.create(REPO, worktree=dc.Worktree(branch="agents-here"))
    agent = workspace.agents.create(dc.AgentConfig(provider="mock/ten-second-stream"), title="In the worktree")
    snapshot = agent.current()
    assert snapshot is not None
    assert snapshot.cwd == workspace.directory
    sent = [f["message"] for f in fake.received if f.message_type in ("create_agent_request", "agent.create.request")]
    assert sent[-1]["workspaceId"] == workspace.id
    assert sent[-1]["config"]["cwd"] == workspace.directory
    fresh = client.workspaces.ref(fake.workspaces.open("/home/dev/projects/demo")["id"])
    assert fresh.agents.create(dc.AgentConfig(provider="mock/ten-second-stream")).current().cwd == (
        "/home/dev/projects/demo"
    )  # read the workspace first: the handle had no snapshot
    with pytest.raises(ValueError, match="no available directory"):
        client.workspaces.ref("ws-missing").agents.create(dc.AgentConfig(provider="mock/ten-second-stream"))


def test_a_workspaces_namespace_built_without_agents_or_terminals_says_so_before_sending(
    connected: Connected,
) -> None:
    from daemon_client.api.workspaces.namespace import WorkspacesNamespace

    fake, client = connected()
    descriptor = client.workspaces.open(CWD).current()
    assert descriptor is not None
    bare = WorkspacesNamespace(client.workspaces._context, client.workspaces._manager)
    handle = bare.ref(descriptor)
    before = len(fake.received)
    with pytest.raises(RuntimeError, match="built without terminals"):
        handle.terminals  # noqa: B018 - the property is the call under test
    with pytest.raises(RuntimeError, match=r"built without client\.agents"):
        handle.agents.create(dc.AgentConfig(provider="mock/ten-second-stream"))
    assert len(fake.received) == before


# ------------------------------------------------------------------------------ transcript 17


def test_transcript_17_decodes_without_loss() -> None:
    counts: dict[str, int] = {}
    for number, line in enumerate(transcript("17-worktree.jsonl"), start=1):
        frame = line.get("frame")
        if line["dir"] != "in" or frame is None:
            continue
        decoded = decode_frame(json.dumps(frame))
        assert isinstance(decoded, dc.SessionMessage), number
        kind, payload, where = decoded.type, decoded.payload, f"L{number}"
        counts[kind] = counts.get(kind, 0) + 1
        if kind == "create_paseo_worktree_response":
            assert_lossless(structure(payload["workspace"], dc.WorkspaceDescriptor), payload["workspace"], where)
        elif kind == "workspace_update":
            update = parse_workspace_update(payload).payload
            if update.workspace is not None:
                assert_lossless(update.workspace, payload["workspace"], where)
        elif kind == "fetch_workspaces_response":
            listed = parse_workspace_list(payload)
            for entry, raw in zip(listed.entries, payload["entries"], strict=True):
                assert_lossless(entry, raw, where)
        elif kind == "paseo_worktree_list_response":
            for raw in payload["worktrees"]:
                assert_lossless(structure(raw, WorktreeInfo), raw, where)
        elif kind == "paseo_worktree_archive_response":
            body = {k: v for k, v in payload.items() if k not in ("requestId", "error")}
            assert_lossless(structure(payload, WorktreeArchive), body, where)
        else:
            assert kind in {"status", "workspace_setup_progress", "checkout_status_update",
                            "archive_workspace_response"}, where  # fmt: skip
    assert counts["workspace_update"] == 5
    assert counts["paseo_worktree_list_response"] == 2


def test_transcript_17_replayed_through_the_client(connected: Connected) -> None:
    fake, client = connected("broadcast")
    replay(fake, "17-worktree.jsonl", "create_paseo_worktree_request", "paseo_worktree_list_request",
           "paseo_worktree_archive_request")  # fmt: skip
    recorded = dict(session_frames("17-worktree.jsonl", "out"))
    workspace = client.workspaces.create(REPO, worktree=dc.Worktree(branch="fixture-wt", base="main"))
    assert _sent(fake, "create_paseo_worktree_request") == [{k: v for k, v in recorded[6].items() if k != "requestId"}]
    assert workspace.id == "/home/dev/.paseo/worktrees/0akml02b/fixture-wt"
    (worktree,) = client.workspaces.worktrees(REPO)
    assert worktree.head == "da19714c6468d50234b83382309c2a3a652f5ff5"
    assert workspace.archive() is None
    assert _sent(fake, "paseo_worktree_archive_request") == [
        {k: v for k, v in recorded[20].items() if k != "requestId"}
    ]


def test_transcript_17_refusal_is_recognised() -> None:
    refusal = next(m["payload"] for _, m in session_frames("17-worktree.jsonl", "in")
                   if m["type"] == "archive_workspace_response")  # fmt: skip
    assert refusal["error"] == WORKTREE_REFUSAL
    assert create_message(REPO, dc.Worktree(branch="fixture-wt", base="main"), None, newest=False) == {
        k: v for k, v in dict(session_frames("17-worktree.jsonl", "out"))[6].items() if k != "requestId"
    }
