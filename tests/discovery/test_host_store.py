"""The host store: its location, the private TOML file, merging, leniency and concurrent writers."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import daemon_client as dc
from daemon_client.discovery.store import HostConflict, HostStore, HostStoreError, UnknownHost, is_label
from daemon_client.discovery.store_file import config_dir, default_path, emit, toml_string

if sys.version_info >= (3, 11):
    import tomllib
else:  # the test extra installs tomli on Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
OFFER = dc.RelayTarget("127.0.0.1:9", "srv-relay", b"\x09" * 32).offer_link()
OFFER_PAYLOAD = OFFER.split("#offer=", 1)[1]
posix_only = pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> HostStore:
    path = tmp_path / "config" / "daemon-client" / "hosts.toml"
    monkeypatch.setenv("DAEMON_CLIENT_HOSTS", str(path))
    return HostStore()


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# ----------------------------------------------------------------------------- location


def test_the_path_comes_from_the_environment_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DAEMON_CLIENT_HOSTS", str(tmp_path / "mine.toml"))
    assert HostStore().path == tmp_path / "mine.toml"
    assert HostStore(tmp_path / "given.toml").path == tmp_path / "given.toml"


def test_without_it_the_xdg_config_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DAEMON_CLIENT_HOSTS", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(sys, "platform", "linux")
    assert HostStore().path == tmp_path / "xdg" / "daemon-client" / "hosts.toml"
    monkeypatch.setenv("XDG_CONFIG_HOME", "  ")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert HostStore().path == tmp_path / "home" / ".config" / "daemon-client" / "hosts.toml"


def test_the_config_directory_of_each_platform(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert config_dir({}, "darwin") == tmp_path / "Library" / "Application Support"
    assert config_dir({"APPDATA": str(tmp_path / "Roaming")}, "win32") == tmp_path / "Roaming"
    assert config_dir({"XDG_CONFIG_HOME": str(tmp_path / "x")}, "freebsd14") == tmp_path / "x"
    assert default_path({"XDG_CONFIG_HOME": str(tmp_path / "x")}, "linux") == tmp_path / "x/daemon-client/hosts.toml"


# ----------------------------------------------------------------------------- the file


@posix_only
def test_the_file_is_created_private_in_a_private_directory(store: HostStore) -> None:
    store.add("laptop", "127.0.0.1:7000", "s3cret")
    assert _mode(store.path) == 0o600
    assert _mode(store.path.parent) == 0o700
    assert [p.name for p in store.path.parent.iterdir() if p.name.endswith(".tmp")] == []


@posix_only
def test_a_file_other_users_can_read_is_refused(store: HostStore) -> None:
    store.add("laptop", "127.0.0.1:7000", "s3cret")
    store.path.chmod(0o644)
    with pytest.raises(HostStoreError, match="chmod 600") as error:
        store.load()
    assert str(store.path) in str(error.value)
    assert "s3cret" not in str(error.value)
    with pytest.raises(HostStoreError, match="chmod 600"):
        store.add("other", "127.0.0.1:7001")
    store.path.chmod(0o620)  # writable by the group is refused too
    with pytest.raises(HostStoreError, match="chmod 600"):
        store.load()


@posix_only
def test_a_path_that_is_not_a_regular_file_is_refused(store: HostStore) -> None:
    store.path.parent.mkdir(parents=True)
    os.mkfifo(store.path, 0o600)  # a FIFO would block a plain open forever
    with pytest.raises(HostStoreError, match="not a regular file"):
        store.load()
    store.path.unlink()
    store.path.mkdir()
    with pytest.raises(HostStoreError, match="not a regular file"):
        store.load()


def test_no_file_is_no_host(store: HostStore) -> None:
    assert store.load() == []
    with pytest.raises(UnknownHost, match="stored hosts: none"):
        store.get("laptop")


def test_every_connection_kind_round_trips(store: HostStore, tmp_path: Path) -> None:
    tcp = "tcp://10.0.0.2:6767?ssl=true&password=tcp-s3cret"
    store.add("laptop", tcp, server_id="srv-1")
    store.add("laptop", "wss://laptop.example:443/ws", "ws-s3cret")
    store.add("laptop", str(tmp_path / "paseo.sock"), preferred=True)
    store.add("relayed", OFFER)
    laptop, relayed = store.load()
    assert laptop.label == "laptop"
    assert laptop.server_id == "srv-1"
    assert [c.id for c in laptop.connections] == [
        "direct:10.0.0.2:6767?tls",
        "direct:laptop.example:443?tls",
        f"socket:{tmp_path / 'paseo.sock'}",
    ]
    assert [c.effective_password for c in laptop.connections] == ["tcp-s3cret", "ws-s3cret", None]
    assert laptop.preferred is laptop.connections[2]
    assert relayed.server_id == "srv-relay"
    assert relayed.connections[0].id == "relay:127.0.0.1:9"
    assert relayed.connections[0].target.relay == dc.RelayTarget("127.0.0.1:9", "srv-relay", b"\x09" * 32)
    document = tomllib.loads(store.path.read_text(encoding="utf-8"))
    assert [h["label"] for h in document["host"]] == ["laptop", "relayed"]
    assert document["host"][0]["preferred"] == f"socket:{tmp_path / 'paseo.sock'}"
    assert document["host"][0]["connection"][1] == {"address": "wss://laptop.example:443/ws", "password": "ws-s3cret"}


def test_credentials_never_show_in_reprs(store: HostStore) -> None:
    host = store.add("laptop", "127.0.0.1:7000", "s3cret")
    relayed = store.add("relayed", OFFER)
    shown = repr(store) + repr(host) + repr(relayed) + repr(store.read()) + repr(host.connections)
    assert "s3cret" not in shown
    assert OFFER_PAYLOAD not in shown


ESCAPED = ['quo"te', "back\\slash", "new\nline\ttab\r", "\x00\x01\x1f\x7f", "ünï©ødé ✓ 🐍", "", "'single'", '"""']


@pytest.mark.parametrize("value", ESCAPED)
def test_basic_strings_are_escaped(value: str) -> None:
    assert tomllib.loads(f"v = {toml_string(value)}\n") == {"v": value}


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",))))
def test_any_text_round_trips_through_tomllib(value: str) -> None:
    assert tomllib.loads(f"v = {toml_string(value)}\n") == {"v": value}


def test_a_lone_surrogate_is_refused() -> None:
    with pytest.raises(ValueError, match="surrogate"):
        toml_string("\ud800")


def test_passwords_and_labels_with_any_character_round_trip(store: HostStore) -> None:
    password = 'p"w\\d\n\x01\x7fé🐍'
    store.add("lâptop ✓", "127.0.0.1:7000", password, server_id='srv "one"\\')
    (host,) = store.load()
    assert host.label == "lâptop ✓"
    assert host.server_id == 'srv "one"\\'
    assert host.connections[0].password == password


def test_emit_writes_the_schema() -> None:
    text = emit([{"label": "a", "server_id": None, "preferred": None, "connections": [{"address": "1:2"}]}])
    assert tomllib.loads(text) == {"host": [{"label": "a", "connection": [{"address": "1:2"}]}]}


# ----------------------------------------------------------------------------- merging


def test_a_connection_of_a_known_server_id_joins_its_host(store: HostStore) -> None:
    store.add("laptop", "127.0.0.1:7000", server_id="srv-1")
    merge = store.merge("work-laptop", dc.HostConnection("10.0.0.2:7000"), server_id="srv-1")
    assert (merge.outcome, merge.by, merge.host.label) == ("added", "serverId", "laptop")
    (host,) = store.load()
    assert host.label == "laptop"
    assert [c.id for c in host.connections] == ["direct:127.0.0.1:7000", "direct:10.0.0.2:7000"]


def test_a_relay_offer_joins_the_host_of_its_server_id(store: HostStore) -> None:
    store.add("laptop", "127.0.0.1:7000", server_id="srv-relay")
    host = store.add("whatever", OFFER)
    assert host.label == "laptop"
    assert [c.id for c in host.connections] == ["direct:127.0.0.1:7000", "relay:127.0.0.1:9"]


def test_else_a_connection_joins_the_host_of_its_label(store: HostStore) -> None:
    store.add("laptop", "127.0.0.1:7000")
    merge = store.merge("laptop", dc.HostConnection("10.0.0.2:7000"), server_id="srv-1")
    assert (merge.outcome, merge.by) == ("added", "label")
    assert merge.host.server_id == "srv-1"  # learned for the host that had none
    assert store.get("laptop").server_id == "srv-1"
    assert store.add("laptop", "10.0.0.3:7000").server_id == "srv-1"  # unknown serverId: by label


def test_a_label_of_another_daemon_is_refused(store: HostStore) -> None:
    store.add("laptop", "127.0.0.1:7000", server_id="srv-1")
    before = store.path.read_bytes()
    with pytest.raises(HostConflict, match="srv-1") as error:
        store.add("laptop", "10.0.0.2:7000", "s3cret", server_id="srv-2")
    assert "s3cret" not in str(error.value)
    assert store.path.read_bytes() == before
    with pytest.raises(HostConflict):
        store.add("laptop", OFFER)  # the offer names srv-relay


def test_otherwise_a_new_host(store: HostStore) -> None:
    store.add("laptop", "127.0.0.1:7000", server_id="srv-1")
    merge = store.merge("desk", dc.HostConnection("127.0.0.1:7001"), server_id="srv-2")
    assert (merge.outcome, merge.by) == ("new host", "new")
    assert store.labels() == ["laptop", "desk"]


def test_a_connection_is_not_added_twice(store: HostStore) -> None:
    store.add("laptop", "127.0.0.1:7000", "one")
    assert store.merge("laptop", dc.HostConnection("127.0.0.1:7000", password="one")).outcome == "unchanged"
    assert store.merge("laptop", dc.HostConnection("ws://127.0.0.1:7000/ws", password="two")).outcome == "updated"
    (host,) = store.load()
    assert [(c.id, c.password) for c in host.connections] == [("direct:127.0.0.1:7000", "two")]


def test_preferred_remove_and_server_id(store: HostStore) -> None:
    store.add("laptop", "127.0.0.1:7000")
    store.add("laptop", "127.0.0.1:7001", preferred=True)
    assert store.get("laptop").preferred.id == "direct:127.0.0.1:7001"  # type: ignore[union-attr]
    assert store.set_preferred("laptop", "direct:127.0.0.1:7000").preferred.id == "direct:127.0.0.1:7000"  # type: ignore[union-attr]
    assert store.set_preferred("laptop", None).preferred is None
    listed = re.escape("its connections: direct:127.0.0.1:7000, direct:127.0.0.1:7001")
    with pytest.raises(HostStoreError, match=listed):
        store.set_preferred("laptop", "direct:nowhere:1")
    assert store.set_server_id("laptop", "srv-1").server_id == "srv-1"
    assert store.set_server_id("laptop", "srv-1").server_id == "srv-1"
    with pytest.raises(HostConflict):
        store.set_server_id("laptop", "srv-2")
    host = store.remove_connection("laptop", "direct:127.0.0.1:7000")
    assert host is not None
    assert [c.id for c in host.connections] == ["direct:127.0.0.1:7001"]
    assert store.remove_connection("laptop", "127.0.0.1:7001") is None  # by address; the last one
    assert store.load() == []
    store.add("desk", "127.0.0.1:7002")
    assert store.remove("desk").label == "desk"
    with pytest.raises(UnknownHost, match="stored hosts: none"):
        store.remove("desk")


def test_get_lists_the_known_labels(store: HostStore) -> None:
    store.add("laptop", "127.0.0.1:7000")
    store.add("desk", "127.0.0.1:7001")
    assert store.get("desk").label == "desk"
    with pytest.raises(UnknownHost, match=r"no stored host 'nas' .*stored hosts: laptop, desk"):
        store.get("nas")


def test_labels_never_look_like_addresses(store: HostStore) -> None:
    for bad in ("127.0.0.1:7000", "6767", "/tmp/x", "~/x", "a\tb", " edge"):
        assert not is_label(bad)
        with pytest.raises(ValueError):
            store.add(bad, "127.0.0.1:7000")
    assert is_label("laptop")
    assert not store.path.exists()


# ----------------------------------------------------------------------------- leniency


BROKEN = """
top_level_key = "ignored"

[[host]]
label = "laptop"
server_id = "srv-1"
colour = "ignored too"

[[host.connection]]
address = "127.0.0.1:7000"
password = "s3cret"
weight = 3

[[host]]
label = "broken"

[[host.connection]]
address = "tcp://h:1?password=hidden-one&nope=1"
"""


def _write(store: HostStore, text: str) -> None:
    store.path.parent.mkdir(parents=True, exist_ok=True)
    store.path.write_text(text, encoding="utf-8")
    store.path.chmod(0o600)


def test_unknown_keys_are_ignored_and_an_unreadable_entry_skipped(
    store: HostStore, caplog: pytest.LogCaptureFixture
) -> None:
    _write(store, BROKEN)
    found = store.read()
    assert [h.label for h in found.hosts] == ["laptop"]
    assert found.hosts[0].connections[0].password == "s3cret"
    assert len(found.skipped) == 1
    assert "host entry 2 ('broken')" in found.skipped[0]
    assert "hidden-one" not in found.skipped[0]
    assert "skipped" in caplog.text
    assert "hidden-one" not in caplog.text


def test_an_unreadable_entry_blocks_every_write(store: HostStore) -> None:
    _write(store, BROKEN)
    for change in (
        lambda: store.add("desk", "127.0.0.1:7001"),
        lambda: store.remove("laptop"),
        lambda: store.set_server_id("laptop", "srv-1"),
    ):
        with pytest.raises(HostStoreError, match=r"cannot be read .*nothing was changed"):
            change()
    assert store.path.read_text(encoding="utf-8") == BROKEN


@pytest.mark.parametrize(
    "text",
    [
        '[[host]]\nlabel = "a"\n',  # no connection
        '[[host]]\nlabel = 3\n[[host.connection]]\naddress = "1:2"\n',
        '[[host]]\nlabel = "a"\npreferred = "direct:x:1"\n[[host.connection]]\naddress = "1:2"\n',
        '[[host]]\nlabel = "a"\n[[host.connection]]\npassword = "x"\n',
        '[[host]]\nlabel = "a"\n[[host.connection]]\naddress = "1:2"\n[[host]]\nlabel = "a"\n'
        '[[host.connection]]\naddress = "1:3"\n',
        '[[host]]\nlabel = "a"\nconnection = "1:2"\n',
    ],
)
def test_entries_that_are_skipped(store: HostStore, text: str) -> None:
    _write(store, text)
    assert len(store.read().skipped) == 1


def test_a_file_that_is_not_toml_is_an_error(store: HostStore) -> None:
    _write(store, '[[host]\nlabel = "a\n')
    with pytest.raises(HostStoreError, match="not valid TOML"):
        store.load()


# ----------------------------------------------------------------------------- concurrency


def test_eight_threads_adding_at_once_lose_nothing(store: HostStore) -> None:
    start = threading.Barrier(8, timeout=10)
    errors: list[BaseException] = []

    def adder(n: int) -> None:
        try:
            start.wait()
            for i in range(5):
                HostStore(store.path).add(f"t{n}-{i}", f"127.0.0.1:{7000 + n * 10 + i}", f"pw-{n}-{i}")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=adder, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    assert sorted(store.labels()) == sorted(f"t{n}-{i}" for n in range(8) for i in range(5))


ADDER = """
import sys
from daemon_client.discovery.store import HostStore
n = int(sys.argv[1])
for i in range(6):
    HostStore().add(f"p{n}-{i}", f"127.0.0.1:{8000 + n * 10 + i}")
"""


def test_four_processes_adding_at_once_lose_nothing(store: HostStore) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DAEMON_CLIENT_HOSTS": str(store.path)}
    processes = [subprocess.Popen([sys.executable, "-c", ADDER, str(n)], env=env) for n in range(4)]
    try:
        codes = [p.wait(60) for p in processes]
    finally:
        for p in processes:
            if p.poll() is None:
                p.kill()
                p.wait(5)
    assert codes == [0, 0, 0, 0]
    assert sorted(store.labels()) == sorted(f"p{n}-{i}" for n in range(4) for i in range(6))


@posix_only
def test_a_symbolic_link_to_the_store_is_kept(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "hosts.toml"
    HostStore(real).add("laptop", "127.0.0.1:7000")
    link = tmp_path / "hosts.toml"
    link.symlink_to(real)
    HostStore(link).add("desk", "127.0.0.1:7001")
    assert link.is_symlink()
    assert HostStore(real).labels() == ["laptop", "desk"]
