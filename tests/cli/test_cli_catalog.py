"""``workspaces`` and ``projects``: every page of a listing, ``--watch`` as text and as JSON
lines, and the option checks. In the test process against the fake daemon on loopback; the
watching commands run on a helper thread and end when their reader closes the pipe."""

from __future__ import annotations

import json

import pytest

from daemon_client.protocol.directory import MAX_PAGE_LIMIT
from daemon_client.testing import FakeDaemon

from .cli_inprocess import Background, run

FETCH = "fetch_workspaces_request"


def _many_workspaces(fake: FakeDaemon) -> set[str]:
    return {str(fake.workspaces.open(f"/home/dev/projects/p{n:03}")["id"]) for n in range(MAX_PAGE_LIMIT + 5)}


@pytest.mark.parametrize("command", ["workspaces", "projects"])
def test_duration_without_watch_is_a_usage_error(
    fake: FakeDaemon, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run([command, "--url", fake.url, "--duration", "1"]) == (2, "")
    assert capsys.readouterr().err == "daemon-client: --duration needs --watch\n"


def test_workspaces_lists_every_page(fake: FakeDaemon) -> None:
    ids = _many_workspaces(fake)
    code, out = run(["workspaces", "--url", fake.url, "--json"])
    assert code == 0
    assert {w["id"] for w in json.loads(out)} == ids
    assert [f.message_type for f in fake.received].count(FETCH) == 2


def test_workspaces_watch_prints_the_table_then_each_change(fake: FakeDaemon) -> None:
    first = fake.workspaces.open("/home/dev/projects/first")
    watch = Background(["workspaces", "--watch", "--url", fake.url])
    watch.out.wait_for(first["id"])
    second = fake.workspaces.open("/home/dev/projects/second")
    watch.out.wait_for(f"upsert {second['id']} {second['status']}\n")
    fake.workspaces.remove(first["id"])
    watch.out.wait_for(f"remove {first['id']}\n")
    watch.out.hang_up()
    fake.workspaces.remove(second["id"])  # written to a closed pipe: the command ends quietly
    assert watch.join() == 0
    lines = watch.out.getvalue().splitlines()
    assert lines[0].split() == ["STATUS", "NAME", "DIRECTORY", "ID"]
    assert lines[-2:] == [f"upsert {second['id']} {second['status']}", f"remove {first['id']}"]


def test_workspaces_watch_json_prints_one_document_per_line(fake: FakeDaemon) -> None:
    first = fake.workspaces.open("/home/dev/projects/first")
    watch = Background(["workspaces", "--watch", "--json", "--url", fake.url])
    watch.out.wait_for("snapshot")
    fake.workspaces.upsert(first["id"], name="renamed")
    watch.out.wait_for("renamed")
    watch.out.hang_up()
    fake.workspaces.remove(first["id"])
    assert watch.join() == 0
    documents = [json.loads(line) for line in watch.out.getvalue().splitlines()]
    assert [d["type"] for d in documents] == ["snapshot", "upsert"]
    assert [w["id"] for w in documents[0]["workspaces"]] == [first["id"]]
    assert documents[1]["workspace"]["name"] == "renamed"


def test_workspaces_watch_shows_every_page_of_the_snapshot(fake: FakeDaemon) -> None:
    ids = _many_workspaces(fake)
    watch = Background(["workspaces", "--watch", "--json", "--url", fake.url])
    snapshot = json.loads(watch.out.wait_for("\n").splitlines()[0])
    assert {w["id"] for w in snapshot["workspaces"]} == ids
    watch.out.hang_up()
    fake.workspaces.open("/home/dev/projects/later")
    assert watch.join() == 0


def test_workspaces_watch_keeps_the_first_page_when_a_later_one_fails(
    fake: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    _many_workspaces(fake)
    remove_hook = fake.after_request(FETCH, lambda ctx: fake.fail_next(FETCH, "Page refused"))
    watch = Background(["workspaces", "--watch", "--json", "--url", fake.url])
    snapshot = json.loads(watch.out.wait_for("\n").splitlines()[0])
    remove_hook()
    assert len(snapshot["workspaces"]) == MAX_PAGE_LIMIT
    watch.out.hang_up()
    fake.workspaces.open("/home/dev/projects/later")
    assert watch.join() == 0
    assert "daemon-client: only the first page of workspaces is shown: " in capsys.readouterr().err


def test_projects_lists_without_a_note_on_a_current_host(fake: FakeDaemon, capsys: pytest.CaptureFixture[str]) -> None:
    fake.projects.upsert("/home/dev/projects/demo")
    code, out = run(["projects", "--url", fake.url])
    assert code == 0
    assert out.splitlines()[0].split() == ["PROJECT", "KIND", "ROOT", "ID"]
    assert "/home/dev/projects/demo" in out
    assert capsys.readouterr().err == ""


def test_projects_watch_prints_the_table_then_each_change(fake: FakeDaemon) -> None:
    fake.projects.upsert("/home/dev/projects/demo")
    watch = Background(["projects", "--watch", "--url", fake.url])
    watch.out.wait_for("/home/dev/projects/demo")
    fake.projects.upsert("/home/dev/projects/new")
    watch.out.wait_for("upsert /home/dev/projects/new\n")
    fake.projects.remove("/home/dev/projects/demo")
    watch.out.wait_for("remove /home/dev/projects/demo\n")
    watch.out.hang_up()
    fake.projects.remove("/home/dev/projects/new")
    assert watch.join() == 0


def test_projects_watch_json_prints_one_document_per_line(fake: FakeDaemon) -> None:
    fake.projects.upsert("/home/dev/projects/demo")
    watch = Background(["projects", "--watch", "--json", "--url", fake.url])
    watch.out.wait_for("snapshot")
    fake.projects.upsert("/home/dev/projects/new")
    watch.out.wait_for('"upsert"')
    watch.out.hang_up()
    fake.projects.remove("/home/dev/projects/new")
    assert watch.join() == 0
    documents = [json.loads(line) for line in watch.out.getvalue().splitlines()]
    assert documents[0]["type"] == "snapshot"
    assert documents[0]["derived"] is False
    assert [p["projectId"] for p in documents[0]["projects"]] == ["/home/dev/projects/demo"]
    assert (documents[1]["kind"], documents[1]["projectId"]) == ("upsert", "/home/dev/projects/new")
