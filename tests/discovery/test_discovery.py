"""Finding the daemon: every address form, and every step of the order Paseo's CLI follows.

Each test runs with a temporary ``PASEO_HOME`` and without the discovery variables of the
machine running the tests.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import socket
from pathlib import Path

import pytest

import daemon_client as dc
from daemon_client.discovery import DEFAULT_HOST, TargetKind, parse_target, paseo_home, resolve

NO_SUCH_PID = 4_194_305  # above Linux's largest pid_max (2**22): never a running process


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An empty ``PASEO_HOME``; no ``PASEO_HOST``/``PASEO_LISTEN``/``PASEO_URL``/``PASEO_PASSWORD``."""
    for name in ("PASEO_HOST", "PASEO_LISTEN", "PASEO_URL", "PASEO_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "paseo-home"
    path.mkdir()
    monkeypatch.setenv("PASEO_HOME", str(path))
    return path


def write_pid(home: Path, **fields: object) -> None:
    lock = {"pid": os.getpid(), "startedAt": "2026-01-01T00:00:00.000Z", "hostname": socket.gethostname(), "uid": 0}
    lock.update(fields)
    (home / "paseo.pid").write_text(json.dumps(lock), encoding="utf-8")


def write_config(home: Path, listen: object) -> None:
    (home / "config.json").write_text(json.dumps({"version": 1, "daemon": {"listen": listen}}), encoding="utf-8")


# ---------------------------------------------------------------------------- address forms


@pytest.mark.parametrize(
    ("text", "kind", "url", "ws_url", "path"),
    [
        ("ws://10.0.0.2:7000/ws", TargetKind.TCP, "ws://10.0.0.2:7000/ws", "ws://10.0.0.2:7000/ws", None),
        ("wss://paseo.example/ws", TargetKind.TCP, "wss://paseo.example/ws", "wss://paseo.example/ws", None),
        ("localhost:6767", TargetKind.TCP, "ws://localhost:6767/ws", "ws://localhost:6767/ws", None),
        (" 10.1.2.3:80 ", TargetKind.TCP, "ws://10.1.2.3:80/ws", "ws://10.1.2.3:80/ws", None),
        ("[::1]:6767", TargetKind.TCP, "ws://[::1]:6767/ws", "ws://[::1]:6767/ws", None),
        ("7001", TargetKind.TCP, "ws://127.0.0.1:7001/ws", "ws://127.0.0.1:7001/ws", None),
        ("tcp://daemon.lan:6767", TargetKind.TCP, "ws://daemon.lan:6767/ws", "ws://daemon.lan:6767/ws", None),
        ("tcp://daemon.lan:443?ssl=true", TargetKind.TCP, "wss://daemon.lan:443/ws", "wss://daemon.lan:443/ws", None),
        ("tcp://[::1]:6767?ssl=false", TargetKind.TCP, "ws://[::1]:6767/ws", "ws://[::1]:6767/ws", None),
        ("/run/paseo.sock", TargetKind.UNIX, "unix:///run/paseo.sock", "ws://localhost/ws", "/run/paseo.sock"),
        ("unix:///run/paseo.sock", TargetKind.UNIX, "unix:///run/paseo.sock", "ws://localhost/ws", "/run/paseo.sock"),
        ("pipe://paseo", TargetKind.PIPE, "pipe://paseo", "ws://localhost/ws", "\\\\.\\pipe\\paseo"),
        ("\\\\.\\pipe\\paseo", TargetKind.PIPE, "pipe://paseo", "ws://localhost/ws", "\\\\.\\pipe\\paseo"),
        ("pipe://\\\\.\\pipe\\paseo", TargetKind.PIPE, "pipe://paseo", "ws://localhost/ws", "\\\\.\\pipe\\paseo"),
    ],
)
def test_each_address_form_parses(text: str, kind: TargetKind, url: str, ws_url: str, path: str | None) -> None:
    target = parse_target(text)
    assert (target.kind, target.url, target.ws_url, target.path, target.password) == (kind, url, ws_url, path, None)
    assert parse_target(target.url) == target  # what client.url reports is itself an address


def test_home_relative_socket_paths_are_expanded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    expected = str(tmp_path / ".paseo" / "paseo.sock")
    assert parse_target("~/.paseo/paseo.sock").path == expected
    assert parse_target("unix://~/.paseo/paseo.sock").path == expected


def test_tcp_password_is_taken_from_the_query_and_kept_out_of_urls_and_reprs() -> None:
    target = parse_target("tcp://127.0.0.1:6767?ssl=true&password=s3cret-Pass")
    assert target.password == "s3cret-Pass"
    assert target.url == "wss://127.0.0.1:6767/ws"
    assert "s3cret" not in repr(target)
    assert "s3cret" not in resolve("tcp://127.0.0.1:6767?password=s3cret-Pass").describe()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("tcp://me:s3cret@host:6767", "userinfo"),
        ("ws://me:s3cret@host:6767/ws", "userinfo"),
        ("tcp://host", "tcp://host:port"),
        ("tcp://host:6767/ws", "no path"),
        ("tcp://host:6767?tls=true", "unknown query key"),
        ("tcp://host:6767?ssl=yes", "ssl must be true or false"),
        ("tcp://host:6767?ssl=true&ssl=false", "repeated"),
        ("0", "between 1 and 65535"),
        ("host:70000", "between 1 and 65535"),
        ("daemon.lan", "not a daemon address"),
        ("::1:6767", "not a daemon address"),
        ("C:\\Users\\me\\paseo.sock", "file path"),
        ("https://app.paseo.sh/#offer=abc", "pairing offer does not decode"),
        ("https://app.paseo.sh/", "unsupported scheme"),
        ("unix://relative.sock", "unix:///absolute"),
        ("pipe://", "not a pipe name"),
        ("pipe://a/b", "not a pipe name"),
        ("ws:///ws", "no host"),
    ],
)
def test_malformed_addresses_raise_a_clear_value_error(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as caught:
        parse_target(text)
    assert "s3cret" not in str(caught.value)


def test_default_address_is_the_default_url() -> None:
    assert parse_target(DEFAULT_HOST).url == dc.DEFAULT_URL == "ws://localhost:6767/ws"


# ---------------------------------------------------------------------------- the order


def test_nothing_found_means_localhost_6767(home: Path) -> None:
    found = resolve()
    assert (found.source, found.target.url, found.explicit) == ("default", dc.DEFAULT_URL, False)
    notes = {step.source: step.note for step in found.steps}
    assert notes == {
        "PASEO_HOST": "not set",
        "PASEO_LISTEN": "not set",
        "pid file": "no such file",
        "config": "no such file",
        "default": "used",
    }


def test_config_listen_comes_before_the_default(home: Path) -> None:
    write_config(home, "127.0.0.1:7100")
    found = resolve()
    assert (found.source, found.target.url) == ("config", "ws://127.0.0.1:7100/ws")
    assert found.reason == f"{home / 'config.json'} (daemon.listen) = 127.0.0.1:7100"


def test_pid_file_listen_comes_before_the_config(home: Path) -> None:
    write_config(home, "127.0.0.1:7100")
    write_pid(home, listen="/tmp/daemon.sock")
    found = resolve()
    assert (found.source, found.target.kind, found.target.path) == ("pid file", TargetKind.UNIX, "/tmp/daemon.sock")
    assert [step.note for step in found.steps if step.source == "config"] == ["not needed"]


def test_pid_file_tcp_listen_is_used(home: Path) -> None:
    write_pid(home, listen="127.0.0.1:7200", heartbeat=True)
    assert resolve().target.url == "ws://127.0.0.1:7200/ws"


def test_pid_file_sock_path_is_used_without_listen(home: Path) -> None:
    write_pid(home, listen=None, sockPath="/tmp/legacy.sock")
    found = resolve()
    assert (found.source, found.target.url) == ("pid file", "unix:///tmp/legacy.sock")
    assert found.reason.endswith("(sockPath) = /tmp/legacy.sock")


def test_paseo_listen_comes_before_the_pid_file(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_config(home, "127.0.0.1:7100")
    write_pid(home, listen="127.0.0.1:7200")
    monkeypatch.setenv("PASEO_LISTEN", "unix:///tmp/listen.sock")
    found = resolve()
    assert (found.source, found.target.url, found.explicit) == ("PASEO_LISTEN", "unix:///tmp/listen.sock", False)


def test_paseo_host_comes_first_and_is_explicit(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_config(home, "127.0.0.1:7100")
    write_pid(home, listen="127.0.0.1:7200")
    monkeypatch.setenv("PASEO_LISTEN", "/tmp/listen.sock")
    monkeypatch.setenv("PASEO_HOST", "tcp://10.0.0.9:6767?ssl=true")
    found = resolve()
    assert (found.source, found.target.url, found.explicit) == ("PASEO_HOST", "wss://10.0.0.9:6767/ws", True)


def test_an_explicit_url_wins_over_everything(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PASEO_HOST", "10.0.0.9:6767")
    write_pid(home, listen="127.0.0.1:7200")
    found = resolve("/tmp/given.sock")
    assert (found.source, found.target.url, found.explicit) == ("url", "unix:///tmp/given.sock", True)


def test_a_malformed_paseo_host_raises(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PASEO_HOST", "daemon.lan")
    with pytest.raises(ValueError, match=r"PASEO_HOST: 'daemon\.lan' is not a daemon address"):
        resolve()
    with pytest.raises(ValueError, match="PASEO_HOST"):
        dc.Client()


def test_unusable_discovered_values_are_skipped_with_a_reason(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PASEO_LISTEN", "not-an-address")
    (home / "paseo.pid").write_text("{half a lock", encoding="utf-8")
    write_config(home, 6767)
    found = resolve()
    assert found.source == "default"
    notes = {step.source: step.note for step in found.steps}
    assert notes["PASEO_LISTEN"].startswith("skipped: 'not-an-address' is not a daemon address")
    assert notes["pid file"].startswith("skipped: not JSON")
    assert notes["config"] == "skipped: not an address"


def test_a_pid_file_left_by_a_dead_daemon_is_skipped(home: Path) -> None:
    write_pid(home, pid=NO_SUCH_PID, listen="/tmp/gone.sock")
    write_config(home, "127.0.0.1:7100")
    found = resolve()
    assert found.source == "config"
    assert f"the daemon (pid {NO_SUCH_PID}) is not running" in found.describe()


def test_a_pid_file_from_another_host_is_not_checked_for_liveness(home: Path) -> None:
    write_pid(home, pid=NO_SUCH_PID, hostname="another-pod", listen="127.0.0.1:7200")
    assert resolve().source == "pid file"


@pytest.mark.parametrize(
    ("listen", "url"),
    [
        ("0.0.0.0:7300", "ws://127.0.0.1:7300/ws"),
        ("[::]:7300", "ws://[::1]:7300/ws"),
        ("7300", "ws://127.0.0.1:7300/ws"),
    ],
)
def test_wildcard_listen_addresses_mean_loopback(home: Path, listen: str, url: str) -> None:
    write_pid(home, listen=listen)
    assert resolve().target.url == url


def test_named_pipes_are_found_like_any_address(home: Path) -> None:
    write_pid(home, listen="\\\\.\\pipe\\paseo-daemon")
    assert resolve().target.url == "pipe://paseo-daemon"


def test_paseo_url_is_never_read(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PASEO_URL", "ws://127.0.0.1:43210/ws")
    found = resolve()
    assert found.target.url == dc.DEFAULT_URL
    assert "PASEO_URL: ignored" in found.describe()


def test_paseo_home_defaults_to_dot_paseo(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("PASEO_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert paseo_home() == tmp_path / ".paseo"
    (tmp_path / ".paseo").mkdir()
    write_pid(tmp_path / ".paseo", listen="127.0.0.1:7400")
    assert resolve(env={"HOME": str(tmp_path)}).target.url == "ws://127.0.0.1:7400/ws"
    assert paseo_home({"PASEO_HOME": "~/elsewhere"}) == tmp_path / "elsewhere"


# ---------------------------------------------------------------------------- the client


def test_client_reports_the_address_chosen_and_logs_why(home: Path, caplog: pytest.LogCaptureFixture) -> None:
    write_pid(home, listen="127.0.0.1:7200")
    with caplog.at_level(logging.DEBUG, logger="daemon_client"):
        client = dc.Client()
    assert client.url == "ws://127.0.0.1:7200/ws"
    assert client.resolution.source == "pid file"
    assert f"daemon at ws://127.0.0.1:7200/ws: {home / 'paseo.pid'} (listen) = 127.0.0.1:7200" in caplog.text
    assert dc.Client("7001").url == "ws://127.0.0.1:7001/ws"
    with pytest.raises(ValueError, match="not a daemon address"):
        dc.Client("daemon.lan")


def test_a_workspace_services_paseo_url_is_ignored(home: Path, monkeypatch: pytest.MonkeyPatch, fakes) -> None:
    daemon, service = fakes("capable"), fakes("capable")
    monkeypatch.setenv("PASEO_URL", service.serve())  # what the daemon gives a workspace service
    write_pid(home, listen=daemon.serve().split("//", 1)[1].removesuffix("/ws"))
    with dc.connect(strict=True) as client:
        assert client.url == daemon.url
        assert client.server_info is not None
    assert daemon.accepted_count == 1
    assert service.accepted_count == 0


@pytest.mark.parametrize(("given", "expected"), [(None, "q-Pass"), ("given-Pass", "given-Pass")])
def test_a_tcp_address_carries_its_password(home: Path, monkeypatch, fakes, given: str | None, expected: str) -> None:
    monkeypatch.setenv("PASEO_PASSWORD", "env-Pass")
    fake = fakes("capable", password=expected)
    port = fake.serve().rsplit(":", 1)[1].removesuffix("/ws")
    with dc.connect(f"tcp://127.0.0.1:{port}?password=q-Pass", password=given, strict=True) as client:
        assert "q-Pass" not in client.url
        assert fake.wait_for_frame("hello")["auth"] == {"kind": "password", "password": expected}


def test_paseo_password_still_applies_to_discovered_daemons(home: Path, monkeypatch, fakes) -> None:
    fake = fakes("capable", password="env-Pass")
    monkeypatch.setenv("PASEO_PASSWORD", "env-Pass")
    monkeypatch.setenv("PASEO_LISTEN", fake.serve().split("//", 1)[1].removesuffix("/ws"))
    with dc.connect(strict=True) as client:
        assert client.resolution.source == "PASEO_LISTEN"
        assert fake.wait_for_frame("hello")["auth"] == {"kind": "password", "password": "env-Pass"}


def test_a_pid_file_without_an_address_is_passed_over(home: Path) -> None:
    write_pid(home, listen=None)
    write_config(home, "127.0.0.1:7100")
    found = resolve()
    assert found.source == "config"
    assert [(s.where, s.note) for s in found.steps if s.source == "pid file"] == [
        (f"{home / 'paseo.pid'} (listen)", "not set")
    ]


# ---------------------------------------------------------------------------- unusual files and targets


def test_a_non_file_oversized_or_non_object_pid_file_is_skipped_saying_why(home: Path) -> None:
    pid = home / "paseo.pid"
    pid.mkdir()
    assert {step.source: step.note for step in resolve().steps}["pid file"] == "skipped: not a regular file"
    pid.rmdir()
    pid.write_bytes(b" " * (1024 * 1024 + 1))
    assert {step.source: step.note for step in resolve().steps}["pid file"] == "skipped: larger than 1 MiB"
    pid.write_text("[1, 2]", encoding="utf-8")
    assert {step.source: step.note for step in resolve().steps}["pid file"] == "skipped: not a JSON object"


@pytest.mark.parametrize("pid", ["1234", True, 0, None])
def test_a_pid_file_without_a_usable_pid_is_not_checked_for_liveness(home: Path, pid: object) -> None:
    write_pid(home, pid=pid, listen="127.0.0.1:7400")
    found = resolve()
    assert (found.source, found.target.url) == ("pid file", "ws://127.0.0.1:7400/ws")


def test_a_pid_file_of_a_daemon_running_under_another_user_is_used(home: Path, monkeypatch) -> None:
    resolve_module = importlib.import_module("daemon_client.discovery.resolve")  # the package's name is the function

    def kill(pid: int, signal: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(resolve_module.os, "kill", kill)
    write_pid(home, pid=NO_SUCH_PID, listen="127.0.0.1:7500")
    assert resolve().source == "pid file"


def test_a_failed_lookup_before_a_reconnect_keeps_the_current_target(home: Path, caplog) -> None:
    from daemon_client.discovery.attempts import TargetSource

    def lookup() -> dc.discovery.Resolution:
        raise OSError("PASEO_HOME vanished")

    source = TargetSource(resolve(), lookup, logging.getLogger("daemon_client.test"))
    assert source.next().url == dc.DEFAULT_URL
    assert any(
        r.levelno == logging.WARNING
        and r.getMessage() == f"looking the daemon up again failed (PASEO_HOME vanished); dialling {dc.DEFAULT_URL}"
        for r in caplog.records
    )
    assert repr(source) == f"<TargetSource {dc.DEFAULT_URL}>"


def test_a_named_pipe_target_is_described_and_refused_on_this_client() -> None:
    target = parse_target(r"\\.\pipe\paseo")
    assert target.kind is TargetKind.PIPE
    assert target.describe() == r"directly, over the named pipe \\.\pipe\paseo"
    assert "Windows named pipe, which this client cannot open" in (target.unsupported() or "")


def test_a_unix_socket_is_refused_where_python_has_no_unix_sockets(monkeypatch) -> None:
    target = parse_target("unix:///run/paseo.sock")
    assert target.unsupported() is None
    monkeypatch.delattr(socket, "AF_UNIX", raising=False)
    assert "a unix socket, which Python cannot open on this platform" in (target.unsupported() or "")


DAEMON_KEY = bytes.fromhex("de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f")


@pytest.mark.parametrize(
    ("fields", "error", "message"),
    [
        ({"daemon_public_key": 42}, TypeError, "must be str (base64) or bytes, not int"),
        ({"endpoint": 443}, TypeError, "the relay endpoint must be a str, not int"),
        ({"endpoint": "relay.test:0"}, ValueError, "the port must be between 1 and 65535"),
        ({"endpoint": "relay.test:70000"}, ValueError, "the port must be between 1 and 65535"),
        ({"tls": "yes"}, TypeError, "tls must be None, True or False, not 'yes'"),
    ],
)
def test_relay_targets_refuse_values_of_the_wrong_kind(fields: dict[str, object], error: type, message: str) -> None:
    given: dict[str, object] = {"endpoint": "relay.test:443", "server_id": "srv", "daemon_public_key": DAEMON_KEY}
    given.update(fields)
    with pytest.raises(error) as refused:
        dc.RelayTarget(**given)  # type: ignore[arg-type]
    assert message in str(refused.value)


def test_text_without_an_offer_is_not_parsed_as_one() -> None:
    from daemon_client.discovery.offer import parse_offer

    with pytest.raises(ValueError, match="not a pairing offer: no '#offer=' in it"):
        parse_offer("https://app.paseo.sh/#nothing")
