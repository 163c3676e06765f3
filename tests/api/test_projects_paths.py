"""Projects: the derived list over several workspace pages, sync cursors, and the project cache
facing old, foreign and unknown updates, a failed first read and a failed re-read."""

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


# ------------------------------------------------------------------------------ the list


def test_a_derived_list_reads_every_page_and_the_empty_projects(connected) -> None:
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


def test_a_sync_cursor_is_sent(connected) -> None:
    fake, client = connected()
    fake.projects.upsert("a", projectDisplayName="A", projectRootPath="/a", projectKind="git")
    first = client.projects.list()
    assert first.sync is not None
    fake.projects.upsert("b", projectDisplayName="B", projectRootPath="/b", projectKind="git")
    sync = {"generation": first.sync.generation, "afterSeq": first.sync.head_seq}
    changes = client.projects.list(sync)
    assert [p.project_id for p in changes.projects] == ["b"]
    assert _frames(fake, "project.list.request")[-1]["sync"] == sync


# ------------------------------------------------------------------------------ the cache


def test_a_cache_whose_first_list_fails_releases_its_subscription(connected) -> None:
    fake, client = connected()
    fake.fail_next("project.list.request", "list unavailable")
    with pytest.raises(dc.RpcError, match="list unavailable"):
        client.projects.cache()
    _settle(client)
    assert fake.events.subscriptions() == []


def test_the_cache_ignores_old_unknown_and_foreign_updates(connected) -> None:
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


def test_a_cache_that_cannot_re_read_applies_what_it_buffered(connected, caplog) -> None:
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
