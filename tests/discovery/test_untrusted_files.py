"""Discovery under hostile files and values: FIFOs, deep nesting, huge pids, bad ports, odd exceptions."""

from __future__ import annotations

import base64
import json
import logging
import os
import socket
from pathlib import Path

import pytest

import daemon_client as dc
from daemon_client.discovery import parse_offer, parse_target, resolve
from daemon_client.discovery.attempts import TargetSource


@pytest.fixture
def home(paseo_home: Path) -> Path:
    return paseo_home


def notes(found: dc.discovery.Resolution) -> dict[str, str]:
    return {step.source: step.note for step in found.steps}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_as_pid_file_or_config_is_skipped_without_blocking(home: Path) -> None:
    os.mkfifo(home / "paseo.pid")
    os.mkfifo(home / "config.json")
    found = resolve()
    assert found.source == "default"
    assert notes(found)["pid file"] == notes(found)["config"] == "skipped: not a regular file"


def test_a_deeply_nested_pid_file_or_config_is_skipped_with_one_log_line(home: Path, caplog) -> None:
    (home / "paseo.pid").write_text('{"a":' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    (home / "config.json").write_text('{"daemon":' + "[" * 200 + "]" * 200 + "}", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="daemon_client.discovery"):
        found = resolve()
    assert found.source == "default"
    assert "nesting limit" in notes(found)["pid file"]
    assert "nesting limit" in notes(found)["config"]
    assert len([r for r in caplog.records if r.name == "daemon_client.discovery"]) == 2


@pytest.mark.parametrize("pid", [2**31, 2**63, 10**30])
def test_a_pid_no_process_can_have_is_skipped(home: Path, pid: int, caplog) -> None:
    lock = {"pid": pid, "hostname": socket.gethostname(), "listen": "127.0.0.1:7001"}
    (home / "paseo.pid").write_text(json.dumps(lock), encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="daemon_client.discovery"):
        found = resolve()
    assert found.source == "default"
    assert notes(found)["pid file"] == f"skipped: {pid} is not a process id"
    logged = [r.getMessage() for r in caplog.records if r.name == "daemon_client.discovery"]
    assert len(logged) == 1, logged
    assert f"{pid} is not a process id" in logged[0], logged


@pytest.mark.parametrize(
    "listen", ["ws://127.0.0.1:65536/ws", "ws://127.0.0.1:0/ws", "ws://[::1]:99999/ws", "ws://h:x/ws"]
)
def test_a_listen_url_with_an_unusable_port_is_skipped(home: Path, monkeypatch, listen: str) -> None:
    monkeypatch.setenv("PASEO_LISTEN", listen)
    lock = {"pid": os.getpid(), "hostname": socket.gethostname(), "listen": listen}
    (home / "paseo.pid").write_text(json.dumps(lock), encoding="utf-8")
    found = resolve()
    assert found.source == "default"
    assert "between 1 and 65535" in notes(found)["PASEO_LISTEN"]
    assert "between 1 and 65535" in notes(found)["pid file"]


@pytest.mark.parametrize("given", ["ws://127.0.0.1:65536/ws", "wss://h:0/ws", "tcp://h:65536"])
def test_a_given_address_with_an_unusable_port_is_a_clear_value_error(home: Path, monkeypatch, given: str) -> None:
    with pytest.raises(ValueError, match="between 1 and 65535"):
        parse_target(given)
    monkeypatch.setenv("PASEO_HOST", given)
    with pytest.raises(ValueError, match=r"PASEO_HOST: .*between 1 and 65535"):
        resolve()


def test_a_deeply_nested_pairing_offer_is_a_value_error() -> None:
    payload = ('{"v":2,"x":' + "[" * 100_000 + "]" * 100_000 + "}").encode()
    link = "https://app.paseo.sh/#offer=" + base64.urlsafe_b64encode(payload).decode().rstrip("=")
    with pytest.raises(ValueError, match="pairing offer is nested more than 128 levels deep"):
        parse_offer(link)
    with pytest.raises(ValueError, match="nesting limit"):
        dc.Client(link)


@pytest.mark.parametrize("error", [RecursionError(), OverflowError(), KeyError("x"), RuntimeError("odd")])
def test_a_lookup_raising_anything_keeps_the_current_target(home: Path, error: Exception) -> None:
    def lookup() -> dc.discovery.Resolution:
        raise error

    source = TargetSource(resolve(), lookup, logging.getLogger("daemon_client.test"))
    assert source.next().url == dc.DEFAULT_URL


def test_a_pid_file_gone_bad_between_reconnects_never_ends_the_reader(home: Path, fakes, monkeypatch) -> None:
    import importlib

    resolve_module = importlib.import_module("daemon_client.discovery.resolve")
    fake = fakes("capable")
    listen = fake.serve().split("//", 1)[1].removesuffix("/ws")
    lock = {"pid": os.getpid(), "hostname": socket.gethostname(), "listen": listen}
    (home / "paseo.pid").write_text(json.dumps(lock), encoding="utf-8")
    lookups = {"bad": 0}
    real = resolve_module.resolve

    def flaky(*args: object, **kwargs: object) -> dc.discovery.Resolution:
        lookups["bad"] += 1
        kinds = [RecursionError(), OverflowError(), KeyError("pid")]
        raise kinds[lookups["bad"] % 3]

    import threading

    policy = dc.ReconnectPolicy(base_delay=0.01, max_delay=0.02, stable_after=0.0)
    with dc.connect(strict=True, reconnect=policy) as client:
        back = threading.Event()
        client.on_state_change(
            lambda _old, new, _why: back.set() if new is dc.ConnectionState.CONNECTED and lookups["bad"] else None
        )
        client._targets._lookup = flaky  # an unexpected failure of every lookup
        fake.drop_connections()
        assert back.wait(10)  # the reader lived on and dialled again
        assert lookups["bad"] >= 1
        client._targets._lookup = real


@pytest.mark.parametrize("bad", ["deep", "huge-pid", "fifo"])
def test_a_pid_file_made_bad_then_fixed_is_read_again_at_every_attempt(home: Path, fakes, bad: str) -> None:
    """The whole story on real files: connected through the pid file; the file goes bad and the
    daemon drops the connection; attempts fail (the file is skipped) without ending the reader;
    once the file is fixed, the next attempt finds the daemon again."""
    import threading

    fake = fakes("capable")
    listen = fake.serve().split("//", 1)[1].removesuffix("/ws")
    lock = {"pid": os.getpid(), "hostname": socket.gethostname(), "listen": listen}
    pid_file = home / "paseo.pid"
    pid_file.write_text(json.dumps(lock), encoding="utf-8")
    policy = dc.ReconnectPolicy(base_delay=0.01, max_delay=0.05, stable_after=0.0)
    attempts, back = threading.Semaphore(0), threading.Event()

    def on_state(_old: dc.ConnectionState, new: dc.ConnectionState, _why: str) -> None:
        if new is dc.ConnectionState.CONNECTING:
            attempts.release()
        elif new is dc.ConnectionState.CONNECTED:
            back.set()

    with dc.connect(strict=True, reconnect=policy, connect_timeout=2.0) as client:
        client.on_state_change(on_state)
        pid_file.unlink()
        if bad == "deep":
            pid_file.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
        elif bad == "huge-pid":
            pid_file.write_text(json.dumps({**lock, "pid": 2**40}), encoding="utf-8")
        else:
            os.mkfifo(pid_file)
        fake.drop_connections()
        for _ in range(3):  # three attempts that found no daemon: the reader lives on
            assert attempts.acquire(timeout=10)
        assert client.state is not dc.ConnectionState.DISPOSED
        assert fake.accepted_count == 1  # the bad file was read again: it no longer leads to the daemon
        back.clear()
        pid_file.unlink()
        pid_file.write_text(json.dumps(lock), encoding="utf-8")
        assert back.wait(15), client.state
        client.ping()


# Every address form that carries a port, each with a port outside 1-65535 (or not a number).
BAD_PORTS_GIVEN = [
    "ws://127.0.0.1:65536/ws",
    "wss://h:0/ws",
    "ws://[::1]:99999/ws",
    "ws://h:x/ws",
    "ws://h:-1/ws",
    "tcp://h:65536",
    "tcp://[::1]:0?ssl=true",
    "h:65536",
    "127.0.0.1:0",
    "[::1]:70000",
    "65536",
    "0",
]
BAD_PORTS_LISTEN = [*BAD_PORTS_GIVEN, "0.0.0.0:65536", "[::]:0"]


def _offer_with_endpoint(endpoint: str) -> str:
    payload = {
        "v": 2,
        "serverId": "srv",
        "daemonPublicKeyB64": base64.b64encode(bytes(32)).decode(),
        "relay": {"endpoint": endpoint},
    }
    return "https://app.paseo.sh/#offer=" + base64.urlsafe_b64encode(json.dumps(payload).encode()).decode()


@pytest.mark.parametrize("given", BAD_PORTS_GIVEN)
def test_every_address_form_refuses_an_unusable_port_wherever_it_is_given(home: Path, monkeypatch, given: str) -> None:
    with pytest.raises(ValueError, match="between 1 and 65535"):
        parse_target(given)
    with pytest.raises(ValueError, match="between 1 and 65535"):
        dc.HostConnection(given)
    with pytest.raises(ValueError, match="between 1 and 65535"):
        dc.Client(given)
    monkeypatch.setenv("PASEO_HOST", given)
    with pytest.raises(ValueError, match=r"PASEO_HOST: .*between 1 and 65535"):
        resolve()


@pytest.mark.parametrize("endpoint", ["relay.test:65536", "relay.test:0", "[::1]:99999"])
def test_a_pairing_offer_whose_relay_port_is_unusable_is_a_value_error(endpoint: str) -> None:
    link = _offer_with_endpoint(endpoint)
    assert parse_offer(_offer_with_endpoint("relay.test:443")).endpoint == "relay.test:443"
    with pytest.raises(ValueError, match="between 1 and 65535"):
        parse_offer(link)
    with pytest.raises(ValueError, match="between 1 and 65535"):
        dc.Client(link)


@pytest.mark.parametrize("listen", BAD_PORTS_LISTEN)
def test_every_listen_form_with_an_unusable_port_is_skipped_in_every_discovery_step(
    home: Path, monkeypatch, listen: str
) -> None:
    monkeypatch.setenv("PASEO_LISTEN", listen)
    lock = {"pid": os.getpid(), "hostname": socket.gethostname(), "listen": listen}
    (home / "paseo.pid").write_text(json.dumps(lock), encoding="utf-8")
    (home / "config.json").write_text(json.dumps({"daemon": {"listen": listen}}), encoding="utf-8")
    found = resolve()
    assert found.source == "default"
    for step in ("PASEO_LISTEN", "pid file", "config"):
        assert "between 1 and 65535" in notes(found)[step], (step, notes(found))
