"""``server_info``: only a missing or unusable required field is fatal; optional ones may be ``null``.

``features``, ``capabilities`` and ``permissions`` set to ``null`` (or to a value of the wrong
type) read as empty and the connection completes, over memory and loopback; a bad ``serverId``
refuses the connection with an error naming it; ``protocolVersion`` is kept only when it is an
integer (``2.5`` is ignored with a warning, never truncated to 2).
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.protocol.codec import parse_server_info
from daemon_client.protocol.server_info import read_server_info

from ..conftest import TRANSPORTS, BackgroundConnect

BASE: dict[str, Any] = {"status": "server_info", "serverId": "srv-1", "hostname": "h", "version": "0.2.9"}


def status(payload: dict[str, Any]) -> str:
    return json.dumps({"type": "session", "message": {"type": "status", "payload": payload}})


def handshake_with(fakes, make_client, transport: str, payload: dict[str, Any]) -> tuple[dc.Client, object]:
    """A client whose handshake is answered with ``payload``; returns it and what ``connect()`` did."""
    fake = fakes("capable")
    fake.stall_handshake = True  # the fake sends no server_info of its own
    client = make_client(fake, transport, reconnect=dc.ReconnectPolicy(enabled=False))
    connecting = BackgroundConnect(client)
    fake.wait_for_frame("hello").connection.send_raw(status(payload))
    return client, connecting.result(timeout=10)


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("field", ["features", "capabilities", "permissions", "hostname", "version",
                                   "protocolVersion", "desktopManaged"])  # fmt: skip
def test_a_null_optional_field_reads_as_empty(fakes, make_client, caplog, transport: str, field: str) -> None:
    client, outcome = handshake_with(fakes, make_client, transport, {**BASE, field: None})
    assert isinstance(outcome, dc.ServerInfo), repr(outcome)
    assert client.state is dc.ConnectionState.CONNECTED
    assert outcome.features == {}
    assert client.host_kind is dc.HostKind.BROADCAST  # no flags: the oldest routing
    if field in ("features", "capabilities"):
        assert getattr(outcome, field) == {}
    elif field == "permissions":
        assert outcome.permissions == ()
    assert "ignored" not in caplog.text  # null is no defect: nothing to warn about


def test_all_optional_fields_null_at_once() -> None:
    nulls = dict.fromkeys(["features", "capabilities", "permissions", "hostname", "version", "protocolVersion"])
    info = parse_server_info({**BASE, **nulls, "desktopManaged": None})
    assert info == dc.ServerInfo(server_id="srv-1")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("features", [1]),
        ("capabilities", "voice"),
        ("permissions", {"a": 1}),
        ("hostname", 7),
        ("version", 1.5),
        ("desktopManaged", "no"),
        ("protocolVersion", "1"),
    ],
)
def test_an_unusable_optional_field_is_ignored_with_a_warning(
    fakes, make_client, caplog, field: str, value: object
) -> None:
    client, outcome = handshake_with(fakes, make_client, "memory", {**BASE, field: value})
    assert isinstance(outcome, dc.ServerInfo), repr(outcome)
    assert client.state is dc.ConnectionState.CONNECTED
    warnings = [
        r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "server_info" in r.getMessage()
    ]
    assert len(warnings) == 1
    assert field in warnings[0]


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize(
    ("server_id", "named"),
    [
        (None, "no serverId"),
        ("", "unusable serverId"),
        ("  ", "unusable serverId"),
        (5, "unusable serverId"),
        ({"a": 1}, "unusable serverId"),
    ],
)
def test_a_missing_or_unusable_server_id_refuses_the_connection_naming_it(
    fakes, make_client, transport: str, server_id: object, named: str
) -> None:
    payload = (
        {**BASE, "serverId": server_id} if server_id is not None else {k: v for k, v in BASE.items() if k != "serverId"}
    )
    client, outcome = handshake_with(fakes, make_client, transport, payload)
    assert isinstance(outcome, dc.ProtocolError), repr(outcome)
    assert named in str(outcome)
    assert client.state is dc.ConnectionState.DISCONNECTED


@pytest.mark.parametrize(("value", "kept"), [(1, 1), (2, 2), (1.0, 1), (2.0, 2), (2.5, None), (True, None),
                                             ("2", None), (float("inf"), None)])  # fmt: skip
def test_protocol_version_is_an_integer_or_ignored_never_truncated(value: object, kept: int | None) -> None:
    reading = read_server_info({**BASE, "protocolVersion": value})
    assert reading.info.protocol_version == kept
    assert type(reading.info.protocol_version) in (int, type(None))
    assert bool(reading.ignored) is (kept is None)
    if kept is None:
        assert "protocolVersion" in reading.ignored[0]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_protocol_version_2_5_connects_with_the_version_unknown_and_a_warning(
    fakes, make_client, caplog, transport: str
) -> None:
    client, outcome = handshake_with(fakes, make_client, transport, {**BASE, "protocolVersion": 2.5})
    assert isinstance(outcome, dc.ServerInfo), repr(outcome)
    assert outcome.protocol_version is None
    assert client.state is dc.ConnectionState.CONNECTED
    assert "protocolVersion (2.5: not an integer)" in caplog.text


def test_features_keep_only_true_flags_meaningful() -> None:
    info = parse_server_info({**BASE, "features": {"ownedSubscriptions": True, "projectList": None, "x": "yes"}})
    assert info.feature("ownedSubscriptions")
    assert not info.feature("projectList")
    assert not info.feature("x")


def test_permissions_keep_their_strings() -> None:
    info = parse_server_info({**BASE, "permissions": ["daemon.read", None, 3, "workspace.write"]})
    assert info.permissions == ("daemon.read", "workspace.write")
