"""Parity with the TypeScript SDK's own test scenarios (getpaseo/paseo, packages/client/src).

Each test replays one scenario of the SDK's tests (``index.test.ts``, ``connection.test.ts``)
against this client through its public API, with the fake daemon scripted to send the frames
the SDK test sends. Tests are named after the SDK test they mirror; a suffix names the part
of a longer SDK test, and its docstring quotes the SDK test's name.
"""

from __future__ import annotations

import io
import re
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.cli import main
from daemon_client.protocol.paths import directory_key, same_directory
from daemon_client.testing import FakeDaemon, RecordingHandler
from daemon_client.testing.fake.engine.handlers import RequestContext

from ..conftest import KINDS

SNAPSHOT_REQUEST = "get_providers_snapshot_request"
LOCAL_ID = re.compile(r"legacy:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")

# The directory forms of connection.test.ts "old workspaces preserve daemon filesystem paths ($cwd)
# and stable IDs": (what the daemon reports, the SDK's identity of it, another spelling a caller
# may use for the same directory).
FORMS = [
    pytest.param("/repo/app", "/repo/app", "/repo/./app/", id="posix"),
    pytest.param("C:\\repo\\app", "C:/repo/app", "c:/repo/app", id="drive"),
    pytest.param("C:\\", "C:", "c:/", id="drive-root-backslash"),
    pytest.param("C:/", "C:", "C:\\", id="drive-root-slash"),
    pytest.param("\\\\server\\share\\", "//server/share", "//server/share", id="unc"),
    pytest.param("\\\\?\\C:\\repo\\app", "//?/C:/repo/app", "C:\\repo\\app\\", id="extended-length"),
    pytest.param("/repo/trailing space ", "/repo/trailing space", "/repo/trailing space", id="trailing-space"),
    pytest.param("/repo/back\\slash", "/repo/back/slash", "/repo/back/slash", id="backslash"),
]


def _sent(fake: FakeDaemon, message_type: str | None = None) -> list[dict[str, Any]]:
    """The session messages the client sent, optionally of one type."""
    messages = [f["message"] for f in fake.received if f.get("type") == "session"]
    return [m for m in messages if message_type is None or m["type"] == message_type]


@pytest.fixture
def codex_loading(connected) -> tuple[FakeDaemon, dc.Client]:
    """A capable host whose catalog is one ``codex`` entry, ``loading`` until a test resolves it."""
    fake, client = connected("capable")
    fake.providers.auto_resolve = False
    for provider in ("claude", "mock"):
        fake.providers.remove_entry(provider)
    fake.providers.set_entry("codex", status="loading")
    return fake, client


# ------------------------------------------------------------------ 1. directories compared as directories


@pytest.mark.parametrize(("reported", "sdk_identity", "spelling"), FORMS)
def test_old_workspaces_preserve_daemon_filesystem_paths_and_stable_ids_key(
    reported: str, sdk_identity: str, spelling: str
) -> None:
    """connection.test.ts "old workspaces preserve daemon filesystem paths ($cwd) and stable IDs":
    every spelling the SDK gives one identity is one directory here, and so is the caller's."""
    assert same_directory(reported, sdk_identity)
    assert same_directory(reported, spelling)
    assert directory_key(spelling) == directory_key(reported)
    assert not same_directory(reported, "/repo/other")
    assert not same_directory(reported, None)


@pytest.mark.parametrize(("reported", "sdk_identity", "spelling"), FORMS)
def test_old_workspaces_preserve_daemon_filesystem_paths_and_stable_ids(
    connected, reported: str, sdk_identity: str, spelling: str
) -> None:
    """connection.test.ts "old workspaces preserve daemon filesystem paths ($cwd) and stable IDs",
    on a host without owned subscriptions and ``workspaceMultiplicity`` (0.1.65): the directory
    is the daemon's own spelling, the ID stays the same through updates, and ``open()`` of
    another spelling of the directory finds that workspace while sending the caller's cwd."""
    fake, client = connected("broadcast")
    fake.workspaces.upsert(workspace_directory=reported, project_root_path=reported)
    listed = client.workspaces.list(subscribe=True)
    (entry,) = [e for e in listed.entries if e.workspace_directory == reported]
    assert entry.id == reported  # 0.1.65 serves path-based IDs
    assert entry.project_root_path == reported
    updates = RecordingHandler("updates")
    listed.subscription.subscribe(update=updates)
    fake.workspaces.upsert(reported, status="running")
    update = updates.wait_for(1)[0].payload
    assert update.workspace_id == reported
    assert update.workspace.workspace_directory == reported
    assert update.workspace.status == "running"
    opened = client.workspaces.open(spelling)
    assert opened.id == reported
    assert opened.directory == reported
    assert _sent(fake, "open_project_request")[-1]["cwd"] == spelling
    listed.subscription.release()


def test_provider_actions_delegate_to_existing_provider_rpcs_and_local_snapshot_updates_wait(
    codex_loading,
) -> None:
    """index.test.ts "provider actions delegate to existing provider RPCs and local snapshot
    updates", ``waitForReady({cwd: "/repo/sdk"})``: an update for another directory does not
    count, the one for the requested directory does."""
    fake, client = codex_loading

    def answer_then_announce(ctx: RequestContext) -> None:
        ctx.reply({"cwd": "/repo/sdk", "entries": fake.providers.entries(), "generatedAt": "2026-05-16T00:00:00.000Z"})
        fake.providers.resolve("codex", cwd="/repo/other")
        fake.providers.publish(cwd="/repo/sdk")

    fake.on_request(SNAPSHOT_REQUEST, answer_then_announce)
    ready = client.providers.wait_for_ready(cwd="/repo/sdk", timeout=10)
    assert ready.cwd == "/repo/sdk"
    assert [(e.provider, e.status) for e in ready.entries] == [("codex", "ready")]
    assert _sent(fake, SNAPSHOT_REQUEST)[-1]["cwd"] == "/repo/sdk"


def test_provider_actions_delegate_to_existing_provider_rpcs_and_local_snapshot_updates_canonical_wait(
    codex_loading,
) -> None:
    """index.test.ts "provider actions delegate to existing provider RPCs and local snapshot
    updates", ``waitForReady({cwd: "/repo/./sdk"})``: the update for ``/repo/sdk`` arrives
    before the snapshot reply (which names ``/repo/sdk`` and is still loading) and decides."""
    fake, client = codex_loading

    def announce_then_answer(ctx: RequestContext) -> None:
        loading = fake.providers.entries()
        fake.providers.resolve("codex", cwd="/repo/sdk")
        ctx.reply({"cwd": "/repo/sdk", "entries": loading, "generatedAt": "2026-05-16T00:00:01.000Z"})

    fake.on_request(SNAPSHOT_REQUEST, announce_then_answer)
    ready = client.providers.wait_for_ready(cwd="/repo/./sdk", timeout=10)
    assert ready.cwd == "/repo/sdk"
    assert [(e.provider, e.status) for e in ready.entries] == [("codex", "ready")]
    assert _sent(fake, SNAPSHOT_REQUEST)[-1]["cwd"] == "/repo/./sdk"  # sent as the caller wrote it


@pytest.mark.parametrize(("reported", "sdk_identity", "spelling"), FORMS)
def test_provider_actions_delegate_to_existing_provider_rpcs_and_local_snapshot_updates_wait_per_form(
    codex_loading, reported: str, sdk_identity: str, spelling: str
) -> None:
    """index.test.ts "provider actions delegate to existing provider RPCs and local snapshot
    updates", the canonical wait for every directory form: the reply repeats the caller's
    spelling, the daemon's updates use its own, an update for another directory comes first."""
    fake, client = codex_loading

    def answer_then_announce(ctx: RequestContext) -> None:
        ctx.reply({"cwd": ctx.message["cwd"], "entries": fake.providers.entries(), "generatedAt": "2026-05-16T00:00Z"})
        fake.providers.resolve("codex", cwd="/repo/other")
        fake.providers.publish(cwd=reported)

    fake.on_request(SNAPSHOT_REQUEST, answer_then_announce)
    ready = client.providers.wait_for_ready(cwd=spelling, timeout=10)
    assert ready.cwd == reported
    assert ready.loading == ()


def test_wait_for_ready_reads_an_older_host_on_the_existing_connection(connected) -> None:
    """index.test.ts "waitForReady reads an older host on the existing connection": no
    ``providersSnapshotCwd``, the caller's cwd is sent as written, no second connection; the
    0.1.65 daemon's updates name its home directory, so their cwd is not compared."""
    fake, client = connected("broadcast")
    assert client.providers.wait_for_ready(cwd="/repo/./sdk", timeout=10).loading == ()
    fake.providers.auto_resolve = False
    fake.providers.start_loading(["mock"])

    def answer_then_resolve(ctx: RequestContext) -> None:
        ctx.reply({"entries": fake.providers.entries(), "generatedAt": "2026-09-11T00:00:00.000Z"})
        fake.providers.resolve("mock")

    fake.on_request(SNAPSHOT_REQUEST, answer_then_resolve)
    ready = client.providers.wait_for_ready(cwd="/repo/./sdk", timeout=10)
    assert ready.loading == ()
    assert ready.cwd == "/home/dev"
    assert [m.get("cwd") for m in _sent(fake, SNAPSHOT_REQUEST)] == ["/repo/./sdk", "/repo/./sdk"]
    assert fake.accepted_count == 1


# ------------------------------------------------------------------ 2. the default thinking option


def test_provider_actions_delegate_to_existing_provider_rpcs_and_local_snapshot_updates_thinking_default(
    connected,
) -> None:
    """index.test.ts "provider actions delegate to existing provider RPCs and local snapshot
    updates", ``providers.subscribe``: a model whose thinking option ``high`` is marked
    ``isDefault`` and which has no ``defaultThinkingOptionId`` defaults to ``high`` — in
    updates, snapshots and ``list_models``. A daemon's own ``defaultThinkingOptionId`` wins."""
    fake, client = connected("capable")
    high = {"id": "high", "label": "High", "isDefault": True}
    marked = {"id": "gpt-5.5", "label": "GPT-5.5", "thinkingOptions": [high]}
    named = {
        "id": "gpt-5.4",
        "label": "GPT-5.4",
        "thinkingOptions": [{"id": "low", "label": "Low"}, high],
        "defaultThinkingOptionId": "low",
    }
    unmarked = {"id": "gpt-4", "label": "GPT-4", "thinkingOptions": [{"id": "low", "label": "Low"}]}
    fake.providers.set_entry("codex", models=[marked, named, unmarked])
    updates = RecordingHandler("updates")
    with client.providers.subscribe(updates) as subscription:
        subscription.ready.result(5)
        fake.providers.publish(cwd="/repo/sdk")
        update = updates.wait_for(1)[0]
    sources = {
        "update": update.entries,
        "snapshot": client.providers.snapshot().entries,
    }
    for source, entries in sources.items():
        codex = next(e for e in entries if e.provider == "codex")
        assert codex.models is not None, source
        assert [m.default_thinking_option_id for m in codex.models] == ["high", "low", None], source
    listed = client.providers.list_models("codex")
    assert [m.default_thinking_option_id for m in listed] == ["high", "low", None]


# ------------------------------------------------------------------ 3. a provider without a model


@pytest.mark.parametrize("kind", KINDS)
def test_agent_config_requires_provider_model_syntax(connected, kind: str) -> None:
    """index.test.ts "agent config requires provider/model syntax": refused at once, before
    anything is sent; ``provider/model`` or a provider with ``model=`` is sent split."""
    fake, client = connected(kind)
    before = len(_sent(fake))
    for config in (
        dc.AgentConfig(provider="codex"),
        dc.AgentConfig(provider="codex/"),
        dc.AgentConfig(provider="/gpt-5.4"),
        dc.AgentConfig(provider="codex", model=""),
    ):
        with pytest.raises(ValueError, match=r'Expected config\.provider in "provider/model" format'):
            client.agents.create(config, cwd="/repo/sdk", prompt="ship it")
    assert len(_sent(fake)) == before
    split = client.agents.create(dc.AgentConfig(provider="mock/ten-second-stream"), cwd="/home/dev/projects/demo")
    named = client.agents.create(dc.AgentConfig(provider="mock", model="ten-second-stream"), cwd="/home/dev")
    requests = [m for m in _sent(fake) if m["type"] in ("create_agent_request", "agent.create.request")]
    assert [(m["config"]["provider"], m["config"]["model"]) for m in requests] == [("mock", "ten-second-stream")] * 2
    assert split.id != named.id


def test_agent_config_requires_provider_model_syntax_command_line(
    connected, capsys: pytest.CaptureFixture[str]
) -> None:
    """index.test.ts "agent config requires provider/model syntax", through ``daemon-client run``:
    a clear error and exit status 2, no create request."""
    fake, _ = connected("capable")
    url = fake.serve()
    before = len(_sent(fake))
    code = main(["run", "--url", url, "--provider", "mock", "--cwd", "/home/dev", "hi"], out=io.StringIO())
    assert code == 2
    assert 'Expected config.provider in "provider/model" format' in capsys.readouterr().err
    assert not [m for m in _sent(fake)[before:] if "create" in m["type"]]


# ------------------------------------------------------------------ 4. local timeline acknowledgements


def test_broadcast_only_hosts_expose_local_timeline_readiness_without_sending_an_unsupported_rpc(
    connected,
) -> None:
    """connection.test.ts "broadcast-only hosts expose local timeline readiness without sending
    an unsupported RPC": ``ready`` resolves locally with the agent IDs, a request ID and the
    subscription ID (the SDK's local acknowledgement uses its ``legacy:<uuid>`` ID as both);
    neither subscribing nor releasing sends anything."""
    fake, client = connected("broadcast")
    subscription = client.agents.ref("agent").timeline.subscribe(lambda update: None)
    ack = subscription.ready.result(5)
    assert ack.agent_ids == ("agent",)
    assert ack.subscription_id == subscription.subscription_id
    assert isinstance(ack.request_id, str)
    assert LOCAL_ID.fullmatch(ack.request_id)
    assert ack.request_id == ack.subscription_id
    subscription.release()
    assert _sent(fake) == []


@pytest.mark.parametrize("kind", ["capable", "selective"])
def test_broadcast_only_hosts_expose_local_timeline_readiness_without_sending_an_unsupported_rpc_others(
    connected, kind: str
) -> None:
    """connection.test.ts "broadcast-only hosts expose local timeline readiness without sending
    an unsupported RPC", the counterpart: where the daemon acknowledges, ``request_id`` is the
    ID of the request it acknowledged."""
    fake, client = connected(kind)
    subscription = client.agents.ref("agent").timeline.subscribe(lambda update: None)
    ack = subscription.ready.result(5)
    (request,) = _sent(fake, "agent.timeline.set_subscription.request")
    assert ack.request_id == request["requestId"]
    assert ack.agent_ids == ("agent",)
    subscription.release()
