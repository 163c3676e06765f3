"""``hosts add/ls/rm/probe``, ``--host NAME`` and ``tail NAME:AGENT``: the host store from the command
line, against fake daemons with distinct serverIds (one of them also behind a fake relay)."""

from __future__ import annotations

import io
import json
import os
import socket
import stat
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from daemon_client.discovery.profiles import HostConnection
from daemon_client.discovery.store import HostStore
from daemon_client.testing import FakeDaemon

from .cli_inprocess import run

PASSWORD = "pw-s3cret-42"


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> HostStore:
    monkeypatch.setenv("DAEMON_CLIENT_HOSTS", str(tmp_path / "cfg" / "hosts.toml"))
    for name in ("PASEO_HOST", "PASEO_LISTEN", "PASEO_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PASEO_HOME", str(tmp_path / "paseo-home"))
    return HostStore()


@pytest.fixture
def two(fakes: Callable[..., FakeDaemon]) -> tuple[FakeDaemon, FakeDaemon]:
    """Daemon ``srv-a`` (on loopback, and through a relay) and daemon ``srv-b`` (a password)."""
    a = fakes("capable", server_id="srv-a")
    b = fakes("capable", server_id="srv-b", password=PASSWORD)
    a.serve()
    b.serve()
    return a, b


def _free_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"ws://127.0.0.1:{probe.getsockname()[1]}/ws"


def _port(url: str) -> str:
    return url.rsplit(":", 1)[1].removesuffix("/ws")


def _with_stdin(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))


def test_add_ls_probe_rm(
    store: HostStore,
    two: tuple[FakeDaemon, FakeDaemon],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    a, b = two
    offer = a.serve_relay()
    payload = offer.split("#offer=", 1)[1]
    relay_id, relay_url = HostConnection(offer).id, HostConnection(offer).url
    port_a, port_b = _port(a.url), _port(b.url)
    outputs: list[str] = []

    def cli(*argv: str, code: int = 0) -> str:
        status, out = run(list(argv))
        outputs.append(out)
        assert status == code, out
        return out

    assert cli("hosts", "add", "laptop", a.url) == f"added direct:127.0.0.1:{port_a} to laptop (srv-a), a new host\n"
    out = cli("hosts", "add", "phone-pairing", offer)
    assert out.startswith(f"added {relay_id} to laptop (srv-a)")  # merged by serverId
    _with_stdin(monkeypatch, PASSWORD + "\n")
    out = cli("hosts", "add", "desk", f"127.0.0.1:{port_b}", "--password-stdin", "--preferred")
    assert out == f"added direct:127.0.0.1:{port_b} to desk (srv-b), a new host; it is the preferred connection\n"

    laptop, desk = store.load()
    assert [c.id for c in laptop.connections] == [f"direct:127.0.0.1:{port_a}", relay_id]
    assert (desk.server_id, desk.connections[0].password) == ("srv-b", PASSWORD)
    if os.name == "posix":
        assert stat.S_IMODE(store.path.stat().st_mode) == 0o600

    lines = cli("hosts", "ls").splitlines()
    assert lines[0] == "laptop  srv-a"
    assert lines[1].startswith(f"    direct:127.0.0.1:{port_a}") or lines[1].startswith(
        f"  * direct:127.0.0.1:{port_a}"
    )
    assert " ms" in lines[1]
    assert relay_id in lines[2]
    assert lines[1].startswith("  * ") != lines[2].startswith("  * ")  # one of them is active
    assert lines[3] == "desk  srv-b"
    assert lines[4].startswith(f"  * direct:127.0.0.1:{port_b}")
    assert lines[4].endswith("preferred")

    shown = json.loads(cli("hosts", "ls", "--json"))
    assert [h["label"] for h in shown] == ["laptop", "desk"]
    assert set(shown[0]) == {"label", "serverId", "preferred", "active", "connections"}
    assert shown[0]["serverId"] == "srv-a"
    assert shown[0]["active"] in {c["id"] for c in shown[0]["connections"]}
    relay = shown[0]["connections"][1]
    assert relay["kind"] == "relay"
    assert relay["url"] == relay_url
    assert relay["probe"]["ok"] is True
    assert relay["probe"]["serverId"] == "srv-a"
    assert relay["probe"]["latencyMs"] >= 0
    assert shown[1]["preferred"] == shown[1]["active"] == f"direct:127.0.0.1:{port_b}"
    assert shown[1]["connections"][0]["hasPassword"] is True
    assert shown[1]["connections"][0]["active"] is True

    no_probe = json.loads(cli("hosts", "ls", "--json", "--no-probe"))
    assert no_probe[0]["active"] is None
    assert no_probe[0]["connections"][0]["probe"] is None
    assert "ms" not in cli("hosts", "ls", "--no-probe")

    assert cli("hosts", "probe", "desk").splitlines()[0] == "desk  srv-b"
    assert cli("hosts", "rm", "laptop", relay_id) == f"removed {relay_id} from laptop\n"
    assert cli("hosts", "rm", "laptop", f"direct:127.0.0.1:{port_a}") == (
        f"removed direct:127.0.0.1:{port_a} from laptop, its last connection: host laptop is removed\n"
    )
    assert cli("hosts", "rm", "desk") == "removed host desk\n"
    assert store.load() == []

    everything = "".join(outputs) + capsys.readouterr().err
    assert PASSWORD not in everything
    assert payload not in everything


def test_a_probe_that_fails_still_adds(store: HostStore, capsys: pytest.CaptureFixture[str]) -> None:
    url = _free_url()
    code, out = run(["hosts", "add", "gone", url, "--timeout", "1"])
    assert code == 0
    assert out == f"added direct:127.0.0.1:{_port(url)} to gone (serverId unknown), a new host\n"
    assert f"warning: direct:127.0.0.1:{_port(url)} did not answer" in capsys.readouterr().err
    assert store.get("gone").server_id is None
    code, out = run(["hosts", "probe", "--timeout", "1"])
    assert code == 3
    assert out.startswith("gone  serverId unknown\n    direct:")
    assert "no connection answered for: gone" in capsys.readouterr().err


def test_a_label_of_another_daemon_is_refused(store: HostStore, two: tuple[FakeDaemon, FakeDaemon], capsys) -> None:
    a, b = two
    code, out = run(["hosts", "add", "desk", b.url, "--no-probe"])
    assert (code, out) == (0, f"added direct:127.0.0.1:{_port(b.url)} to desk (serverId unknown), a new host\n")
    store.set_server_id("desk", "srv-b")
    before = store.path.read_bytes()
    capsys.readouterr()
    assert run(["hosts", "add", "desk", a.url]) == (1, "")  # probed: srv-a, and desk is srv-b
    assert "host 'desk' is the daemon 'srv-b', but direct:" in capsys.readouterr().err
    assert store.path.read_bytes() == before
    assert run(["hosts", "add", "laptop", a.url])[0] == 0
    code, out = run(["hosts", "add", "anything", a.url])  # probed: srv-a, stored as laptop already
    assert code == 0
    assert out == (
        f"direct:127.0.0.1:{_port(a.url)} is already a connection of laptop (srv-a): "
        "the daemon is stored as 'laptop' already\n"
    )
    assert store.labels() == ["desk", "laptop"]


def test_usage_errors(store: HostStore, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["hosts", "add", "127.0.0.1:1", "127.0.0.1:2", "--no-probe"]) == (2, "")
    assert "label" in capsys.readouterr().err
    assert run(["hosts", "add", "laptop", "not an address", "--no-probe"]) == (2, "")
    assert "not a daemon address" in capsys.readouterr().err
    assert run(["hosts", "rm", "nas"]) == (2, "")
    assert "no stored host 'nas'" in capsys.readouterr().err
    assert run(["hosts", "add", "laptop", "127.0.0.1:2", "--no-probe"])[0] == 0
    assert run(["hosts", "rm", "laptop", "direct:nowhere:1"]) == (1, "")
    assert "its connections: direct:127.0.0.1:2" in capsys.readouterr().err
    assert run(["agents", "--host", "nas"]) == (2, "")
    err = capsys.readouterr().err
    assert "'nas' is neither a stored host (stored hosts: laptop" in err


def test_a_store_open_to_others_is_refused(store: HostStore, capsys: pytest.CaptureFixture[str]) -> None:
    if os.name != "posix":
        pytest.skip("POSIX permissions")
    store.add("laptop", "127.0.0.1:2", PASSWORD)
    store.path.chmod(0o644)
    for argv in (["hosts", "ls"], ["agents", "--host", "laptop"], ["hosts", "add", "x", "127.0.0.1:3", "--no-probe"]):
        assert run(argv) == (1, "")
        err = capsys.readouterr().err
        assert f"chmod 600 {store.path}" in err
        assert PASSWORD not in err


def test_host_name_runs_a_command_on_the_stored_host(
    store: HostStore, two: tuple[FakeDaemon, FakeDaemon], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = two
    a.agents.upsert(title="On A", provider="mock")
    b.agents.upsert(title="On B", provider="mock")
    store.add("laptop", _free_url())  # a stale address first: the host fails over to the next
    store.add("laptop", a.url)
    assert store.get("laptop").server_id is None
    code, out = run(["agents", "--host", "laptop", "--json"])
    assert code == 0, out
    assert [entry["agent"]["title"] for entry in json.loads(out)] == ["On A"]
    assert store.get("laptop").server_id == "srv-a"  # learned, and written back

    store.add("desk", b.url, PASSWORD)
    code, out = run(["agents", "--url", "desk"])
    assert code == 0, out
    assert "On B" in out
    assert PASSWORD not in out + capsys.readouterr().err


def test_tail_host_colon_agent(store: HostStore, two: tuple[FakeDaemon, FakeDaemon], capsys) -> None:
    a, b = two
    agent_id = str(b.agents.upsert(title="Tailed", provider="mock")["id"])
    b.timeline.append(agent_id, {"type": "assistant_message", "text": "from desk"})
    b.timeline.append(agent_id, {"type": "todo", "items": []})
    store.add("desk", b.url, PASSWORD)
    code, out = run(["tail", f"desk:{agent_id}", "--no-follow"])
    assert code == 0, out
    assert "from desk" in out
    code, out = run(["tail", f"desk:{agent_id}", "--no-follow", "--host", a.url])
    assert (code, out) == (2, "")
    assert "give only one" in capsys.readouterr().err
    assert run(["tail", "desk:", "--no-follow"]) == (2, "")
    assert "no agent after the host's name" in capsys.readouterr().err
    code, out = run(["tail", "nas:agent", "--no-follow", "--url", a.url])  # not a stored host: an agent name
    assert code == 1
    assert "no agent 'nas:agent'" in capsys.readouterr().err


def test_an_unreadable_entry_is_shown_and_blocks_changes(
    store: HostStore, two: tuple[FakeDaemon, FakeDaemon], capsys: pytest.CaptureFixture[str]
) -> None:
    a, _b = two
    store.add("laptop", a.url)
    store.path.write_text(store.path.read_text(encoding="utf-8") + '\n[[host]]\nlabel = "broken"\n', encoding="utf-8")
    code, out = run(["hosts", "ls", "--no-probe"])
    assert code == 0
    assert out.startswith("laptop  serverId unknown\n")
    assert "host entry 2 ('broken')" in capsys.readouterr().err
    assert run(["hosts", "add", "desk", a.url, "--no-probe"]) == (1, "")
    assert "nothing was changed" in capsys.readouterr().err
    code, out = run(["info", "--host", "laptop"])  # reading still works
    assert code == 0, out
    assert "srv-a" in out


def test_a_relay_offer_takes_no_password(
    store: HostStore, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from daemon_client.discovery.offer import RelayTarget

    _with_stdin(monkeypatch, "pw\n")
    offer = RelayTarget("127.0.0.1:9", "srv-x", b"\x09" * 32).offer_link()
    assert run(["hosts", "add", "phone", offer, "--password-stdin", "--no-probe"]) == (2, "")
    assert "takes no password" in capsys.readouterr().err
    _with_stdin(monkeypatch, "\n")
    assert run(["hosts", "add", "desk", "127.0.0.1:1", "--password-stdin", "--no-probe"]) == (2, "")
    assert "no password on the first line" in capsys.readouterr().err
    assert not store.path.exists()


def test_agents_all_hosts_lists_every_stored_host_with_a_host_column(
    store: HostStore, fakes: Callable[..., FakeDaemon], capsys: pytest.CaptureFixture[str]
) -> None:
    a = fakes("capable", server_id="srv-a")
    b = fakes("broadcast", server_id="srv-b")
    a.agents.upsert(title="on-a")
    b.agents.upsert(title="on-b")
    store.add("alpha", a.serve())
    store.add("beta", b.serve_relay())
    store.add("gamma", _free_url())  # nothing listens there
    code, out = run(["agents", "--all-hosts", "--json", "--timeout", "5"])
    assert code == 3, out  # one host did not answer; the others are listed
    documents = json.loads(out)
    assert sorted((d["host"], d["agent"]["title"]) for d in documents) == [("alpha", "on-a"), ("beta", "on-b")]
    assert "host gamma: unreachable" in capsys.readouterr().err
    code, out = run(["agents", "--all-hosts", "--timeout", "5"])
    header, *rows = out.splitlines()
    assert header.split()[:2] == ["HOST", "STATUS"]
    assert sorted(row.split()[0] for row in rows) == ["alpha", "beta"]
    store.remove("gamma")
    assert run(["agents", "--all-hosts", "--timeout", "5"])[0] == 0


def test_agents_all_hosts_needs_stored_hosts_and_no_host_option(
    store: HostStore, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["agents", "--all-hosts"])[0] == 2
    assert "no stored hosts" in capsys.readouterr().err
    assert run(["agents", "--all-hosts", "--watch"])[0] == 2
    assert run(["agents", "--all-hosts", "--host", "6767"])[0] == 2
