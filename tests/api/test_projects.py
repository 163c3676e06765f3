"""``client.projects``: the list (from the daemon, or derived from every workspace page where the
host has none), sync cursors, updates and the project cache: updates that race the list, a
resync after a reconnect, old, foreign and unknown updates, a failed first read and a failed
re-read."""

from __future__ import annotations

from typing import Any

import pytest

import daemon_client as dc
from daemon_client.testing import RecordingHandler

from ..helpers import session_frames as _frames


def _settle(client: dc.Client) -> None:
    client.ping()
    assert client.flush_callbacks()


def _project(project_id: str, name: str) -> dict[str, Any]:
    return {
        "projectId": project_id,
        "projectDisplayName": name,
        "projectRootPath": f"/p/{project_id}",
        "projectKind": "git",
    }


# ------------------------------------------------------------------------------ the list and its updates


@pytest.mark.parametrize("kind", ["selective", "broadcast"])
def test_hosts_without_a_project_list_derive_it_and_refuse_the_stream(connected, kind: str) -> None:
    fake, client = connected(kind)
    fake.workspaces.upsert(workspace_directory="/home/dev/one", project_id="proj-one", project_display_name="one")
    fake.workspaces.upsert(workspace_directory="/home/dev/two", project_id="proj-two", project_display_name="two")
    before = len(fake.received)
    listed = client.projects.list()
    assert listed.derived
    assert {p.project_id for p in listed.projects} >= {"proj-one", "proj-two"}
    assert "project.list.request" not in {f.get("message", {}).get("type") for f in fake.received[before:]}
    before = len(fake.received)
    with pytest.raises(dc.UnsupportedByHost, match="projectList"):
        client.projects.subscribe(lambda update: None)
    with pytest.raises(dc.UnsupportedByHost):
        client.projects.cache()
    assert len(fake.received) == before


def test_a_derived_list_reads_every_workspace_page_and_the_empty_projects(connected) -> None:
    fake, client = connected("capable", features={"projectList": False})
    fake.workspaces.empty_projects.append(_project("p-empty", "empty"))
    for n in range(201):  # one more than a page
        fake.workspaces.upsert(
            workspace_directory=f"/home/dev/w{n:03}", project_id=f"p{n % 3}", project_display_name="p"
        )
    fake.workspaces.upsert(workspace_directory="/home/dev/loose", project_id=None)
    listed = client.projects.list()
    assert listed.derived
    assert sorted(p.project_id for p in listed.projects) == ["p-empty", "p0", "p1", "p2"]
    pages = _frames(fake, "fetch_workspaces_request")
    assert len(pages) == 2
    assert pages[1]["page"]["cursor"]


def test_a_list_with_a_sync_cursor_sends_it_and_returns_only_the_changes(connected) -> None:
    fake, client = connected()
    fake.projects.upsert("a", projectDisplayName="A", projectRootPath="/a", projectKind="git")
    first = client.projects.list()
    assert first.sync is not None
    fake.projects.upsert("b", projectDisplayName="B", projectRootPath="/b", projectKind="git")
    sync = {"generation": first.sync.generation, "afterSeq": first.sync.head_seq}
    changes = client.projects.list(sync)
    assert [p.project_id for p in changes.projects] == ["b"]
    assert _frames(fake, "project.list.request")[-1]["sync"] == sync


def test_unknown_project_fields_do_not_break_decoding(connected) -> None:
    fake, client = connected("capable")
    seen = RecordingHandler("seen")
    client.projects.subscribe(seen).ready.result(5)
    fake.projects.upsert("x", projectDisplayName="X", projectRootPath="/x", projectKind="monorepo", brandNew=True)
    update = seen.wait_for(1)[0]
    assert update.project.project_kind == "monorepo"
    assert update.project.extra_fields.get("brandNew") is True


# ------------------------------------------------------------------------------ the cache


def test_project_list_updates_and_cache_converge_when_updates_race_the_list(connected) -> None:
    fake, client = connected("capable")
    fake.projects.upsert("p-keep", projectDisplayName="keep", projectRootPath="/p/keep", projectKind="git")
    fake.projects.upsert("p-gone", projectDisplayName="gone", projectRootPath="/p/gone", projectKind="git")
    listed = client.projects.list()
    assert {p.project_id for p in listed.projects} == {"p-keep", "p-gone"}
    assert listed.sync is not None
    assert not listed.derived

    def race() -> None:  # runs after the list snapshot was taken, before its reply is sent
        fake.projects.upsert("p-new", projectDisplayName="new", projectRootPath="/p/new", projectKind="git")
        fake.projects.remove("p-gone")
        fake.projects.upsert("p-keep", projectDisplayName="renamed", projectRootPath="/p/keep", projectKind="git")

    fake.projects.before_list_reply = race
    with client.projects.cache() as cache:
        fake.projects.before_list_reply = None
        _settle(client)
        assert {p.project_id for p in cache} == {"p-keep", "p-new"}
        assert cache.get("p-keep").project_display_name == "renamed"
        changes = RecordingHandler("changes")
        cache.on_change(changes)
        fake.projects.remove("p-new")
        assert changes.wait_for(1)[0] == dc.ProjectChange("remove", "p-new", None)
        assert len(cache) == 1


def test_project_cache_resyncs_after_reconnect(connected) -> None:
    fake, client = connected("capable")
    fake.projects.upsert("a", projectDisplayName="A", projectRootPath="/a", projectKind="git")
    cache = client.projects.cache()
    changes = RecordingHandler("changes")
    cache.on_change(changes)
    fake.drop_connections()
    fake.projects.upsert("b", projectDisplayName="B", projectRootPath="/b", projectKind="git")  # while away
    changes.wait_for(predicate=lambda c: c.project_id == "b", timeout=10)
    assert {p.project_id for p in cache} == {"a", "b"}
    fake.projects.upsert("c", projectDisplayName="C", projectRootPath="/c", projectKind="git")
    changes.wait_for(predicate=lambda c: c.project_id == "c")
    assert {p.project_id for p in cache} == {"a", "b", "c"}
    cache.close()


def test_a_cache_whose_first_list_fails_releases_its_subscription(connected) -> None:
    fake, client = connected()
    fake.fail_next("project.list.request", "list unavailable")
    with pytest.raises(dc.RpcError, match="list unavailable"):
        client.projects.cache()
    _settle(client)
    assert fake.events.subscriptions() == []


def test_the_cache_ignores_old_unknown_and_foreign_updates_and_a_stopped_listener(connected) -> None:
    fake, client = connected()
    fake.projects.upsert("a", projectDisplayName="A", projectRootPath="/a", projectKind="git")
    fake.projects.upsert("b", projectDisplayName="B", projectRootPath="/b", projectKind="git")
    with client.projects.cache() as cache:
        changes = RecordingHandler[dc.ProjectChange]("changes")
        stop = cache.on_change(changes)
        generation = fake.projects.generation
        old = {**_project("a", "A before"), "generation": generation, "seq": 1}
        fake.events.publish("project.update", {"kind": "upsert", "projectId": "a", "project": old, **old})
        fake.events.publish("project.update", {"kind": "rename", "projectId": "a", "generation": generation})
        fake.events.publish("project.update", {"kind": "remove", "projectId": "never-listed"})
        other = {"kind": "upsert", "projectId": "c", "project": _project("c", "C"), "generation": "g-other", "seq": 1}
        fake.events.publish("project.update", other)
        (change,) = changes.wait_for(1)
        assert change == dc.ProjectChange("upsert", "c", cache.get("c"))
        _settle(client)
        assert len(changes) == 1
        assert cache.get("a").project_display_name == "A"  # the old update was already in the list
        stop()
        fake.projects.remove("b")
        _settle(client)
        assert cache.get("b") is None
        assert len(changes) == 1  # no longer listening


def test_a_cache_that_cannot_re_read_the_list_applies_what_it_buffered(connected, caplog) -> None:
    fake, client = connected()
    fake.projects.upsert("a", projectDisplayName="A", projectRootPath="/a", projectKind="git")
    with client.projects.cache() as cache:
        states = RecordingHandler[Any]("states")
        client.on_state_change(states)
        mark = len(fake.received)
        fake.fail_next("project.list.request", "list unavailable")
        fake.drop_connections()
        states.wait_for(predicate=lambda change: change[2] == "reconnected")
        fake.wait_for_frame("project.list.request", since=mark)
        _settle(client)
        assert "project cache could not re-read the list (list unavailable" in caplog.text
        changes = RecordingHandler[dc.ProjectChange]("changes")
        cache.on_change(changes)
        fake.projects.upsert("b", projectDisplayName="B", projectRootPath="/b", projectKind="git")
        assert changes.wait_for(1)[0].project_id == "b"  # updates apply directly again
        assert {p.project_id for p in cache} == {"a", "b"}
