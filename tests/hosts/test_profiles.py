"""Host and HostConnection values: validation, connection ids, reprs without credentials,
equality and hashing."""

from __future__ import annotations

import pytest

import daemon_client as dc
from daemon_client.discovery import RelayTarget, TargetKind

KEY = bytes(range(32))
RELAY_A = RelayTarget("relay.example:443", "srv-a", KEY)
RELAY_B = RelayTarget("relay.example:443", "srv-b", KEY)
SECRET = "hunter2-secret"


# ------------------------------------------------------------------ connections
@pytest.mark.parametrize(
    ("address", "expected", "kind"),
    [
        ("localhost:6767", "direct:localhost:6767", TargetKind.TCP),
        ("ws://localhost:6767/ws", "direct:localhost:6767", TargetKind.TCP),
        ("6767", "direct:127.0.0.1:6767", TargetKind.TCP),
        ("[::1]:6767", "direct:[::1]:6767", TargetKind.TCP),
        ("wss://example.com:443/ws", "direct:example.com:443?tls", TargetKind.TCP),
        ("wss://example.com/paseo", "direct:example.com/paseo?tls", TargetKind.TCP),
        ("tcp://10.0.0.5:6767?password=" + SECRET, "direct:10.0.0.5:6767", TargetKind.TCP),
        ("/tmp/paseo.sock", "socket:/tmp/paseo.sock", TargetKind.UNIX),
        ("unix:///tmp/paseo.sock", "socket:/tmp/paseo.sock", TargetKind.UNIX),
        (RELAY_A, "relay:relay.example:443", TargetKind.RELAY),
        (RELAY_A.offer_link(), "relay:relay.example:443", TargetKind.RELAY),
    ],
)
def test_connection_ids_per_kind(address: object, expected: str, kind: TargetKind) -> None:
    connection = dc.HostConnection(address)  # type: ignore[arg-type]
    assert connection.id == expected
    assert connection.kind is kind


def test_pipe_connection_id() -> None:
    connection = dc.HostConnection("pipe://paseo")
    assert connection.kind is TargetKind.PIPE
    assert connection.id.startswith("pipe:")
    assert connection.id.endswith("paseo")


def test_a_relay_connection_carries_its_server_id_and_refuses_a_password() -> None:
    assert dc.HostConnection(RELAY_A).server_id == "srv-a"
    assert dc.HostConnection("localhost:1").server_id is None
    for address in (RELAY_A, RELAY_A.offer_link()):
        with pytest.raises(ValueError, match="relay connection takes no password"):
            dc.HostConnection(address, password=SECRET)


def test_connection_password_comes_from_the_argument_else_the_address() -> None:
    assert dc.HostConnection(f"tcp://h:1?password={SECRET}").effective_password == SECRET
    assert dc.HostConnection(f"tcp://h:1?password={SECRET}", password="other").effective_password == "other"
    assert dc.HostConnection("h:1").effective_password is None
    with pytest.raises(TypeError):
        dc.HostConnection("h:1", password=5)  # type: ignore[arg-type]


@pytest.mark.parametrize("address", ["ftp://x", "", "tcp://x:1?password=" + SECRET + "&bogus=1"])
def test_a_bad_address_is_refused_without_its_password(address: str) -> None:
    with pytest.raises(ValueError) as raised:
        dc.HostConnection(address)
    assert SECRET not in str(raised.value)


def test_connection_reprs_show_no_credentials() -> None:
    shown = [
        dc.HostConnection(f"tcp://10.0.0.5:6767?password={SECRET}"),
        dc.HostConnection("10.0.0.5:6767", password=SECRET),
        dc.HostConnection(RELAY_A.offer_link()),
        dc.HostConnection(RELAY_A),
    ]
    offer_payload = RELAY_A.offer_link().split("#offer=", 1)[1]
    for connection in shown:
        for text in (repr(connection), str(connection), connection.url):
            assert SECRET not in text
            assert offer_payload not in text
            assert KEY.hex() not in text
    assert repr(shown[2]) == "HostConnection('relay://relay.example:443/srv-a')"


def test_connection_equality_and_hash() -> None:
    assert dc.HostConnection("localhost:6767") == dc.HostConnection("ws://localhost:6767/ws")
    assert hash(dc.HostConnection("localhost:6767")) == hash(dc.HostConnection("ws://localhost:6767/ws"))
    assert dc.HostConnection(RELAY_A) == dc.HostConnection(RELAY_A.offer_link())
    assert dc.HostConnection("h:1", password="a") != dc.HostConnection("h:1", password="b")
    assert dc.HostConnection("h:1") != dc.HostConnection("h:2")
    assert dc.HostConnection("h:1") != "h:1"
    assert len({dc.HostConnection("localhost:1"), dc.HostConnection("ws://localhost:1/ws")}) == 1


# ------------------------------------------------------------------ hosts
@pytest.mark.parametrize("label", ["", "   ", "a:b", "a/b", "a\\b", " laptop", "laptop\n", "6767", "~/sock", 5])
def test_bad_labels_are_refused(label: object) -> None:
    with pytest.raises(ValueError, match="label"):
        dc.Host(label, ["localhost:1"])  # type: ignore[arg-type]


def test_good_labels() -> None:
    for label in ("laptop", "my laptop", "build-box.2"):
        assert dc.Host(label, ["localhost:1"]).label == label


def test_a_host_needs_a_connection() -> None:
    with pytest.raises(ValueError, match="no connection"):
        dc.Host("laptop", [])


def test_a_single_address_is_one_connection() -> None:
    assert dc.Host("laptop", "localhost:1").connections == (dc.HostConnection("localhost:1"),)


def test_offers_naming_different_daemons_are_refused() -> None:
    with pytest.raises(ValueError, match=r"different daemons.*srv-a, srv-b"):
        dc.Host("laptop", [RELAY_A, RELAY_B])
    with pytest.raises(ValueError, match="different daemons"):
        dc.Host("laptop", [RELAY_A], server_id="srv-b")


def test_server_id_from_a_relay_or_given() -> None:
    assert dc.Host("laptop", ["localhost:1", RELAY_A]).server_id == "srv-a"
    assert dc.Host("laptop", ["localhost:1"], server_id="srv-x").server_id == "srv-x"
    assert dc.Host("laptop", ["localhost:1"]).server_id is None
    for bad in ("", "  ", 5):
        with pytest.raises(ValueError, match="server_id"):
            dc.Host("laptop", ["localhost:1"], server_id=bad)  # type: ignore[arg-type]


def test_duplicates_are_dropped_in_order() -> None:
    host = dc.Host("laptop", ["localhost:1", RELAY_A, "ws://localhost:1/ws", RELAY_A.offer_link(), "localhost:2"])
    assert [c.id for c in host.connections] == ["direct:localhost:1", "relay:relay.example:443", "direct:localhost:2"]
    assert host.with_connection("localhost:2") == host


def test_two_connections_to_one_place_with_other_credentials_are_refused() -> None:
    with pytest.raises(ValueError, match="direct:localhost:6767") as raised:
        dc.Host("laptop", [dc.HostConnection("localhost:6767", password="a"), dc.HostConnection("localhost:6767")])
    assert "password" not in str(raised.value)
    with pytest.raises(ValueError, match="different credentials"):
        dc.Host("laptop", [dc.HostConnection("localhost:6767", password=SECRET)]).with_connection("localhost:6767")


@pytest.mark.parametrize(
    "preferred",
    [RELAY_A, RELAY_A.offer_link(), "relay:relay.example:443", dc.HostConnection(RELAY_A)],
)
def test_preferred_by_value_address_or_id(preferred: object) -> None:
    host = dc.Host("laptop", ["localhost:1", RELAY_A], preferred=preferred)  # type: ignore[arg-type]
    assert host.preferred is host.connections[1]
    assert host.ordered() == (host.connections[1], host.connections[0])
    assert host.connection(preferred) is host.connections[1]  # type: ignore[arg-type]


def test_preferred_direct_by_address_or_id() -> None:
    for preferred in ("localhost:1", "ws://localhost:1/ws", "direct:localhost:1"):
        host = dc.Host("laptop", [RELAY_A, "localhost:1"], preferred=preferred)
        assert host.preferred is host.connections[1]


@pytest.mark.parametrize(
    "preferred",
    [
        "localhost:2",
        f"tcp://localhost:2?password={SECRET}",
        RELAY_B.offer_link(),
        RELAY_B,
        dc.HostConnection("localhost:2", password=SECRET),
        "direct:nowhere:9",
    ],
)
def test_a_preferred_that_is_no_connection_is_refused_without_credentials(preferred: object) -> None:
    with pytest.raises(ValueError, match="not one of its connections") as raised:
        dc.Host("laptop", ["localhost:1"], preferred=preferred)  # type: ignore[arg-type]
    message = str(raised.value)
    assert SECRET not in message
    assert RELAY_B.offer_link().split("#offer=", 1)[1] not in message


def test_no_preferred_keeps_the_host_order() -> None:
    host = dc.Host("laptop", ["localhost:2", "localhost:1"])
    assert host.preferred is None
    assert host.ordered() == host.connections


def test_host_repr_shows_no_credentials() -> None:
    host = dc.Host("laptop", [dc.HostConnection("localhost:1", password=SECRET), RELAY_A.offer_link()])
    text = repr(host)
    assert text == "Host('laptop', server_id='srv-a', connections=[direct:localhost:1, relay:relay.example:443])"
    assert str(host) == text


def test_host_equality_and_hash() -> None:
    one = dc.Host("laptop", ["localhost:1", RELAY_A], preferred=RELAY_A)
    same = dc.Host("laptop", ["ws://localhost:1/ws", RELAY_A.offer_link()], preferred="relay:relay.example:443")
    assert one == same
    assert hash(one) == hash(same)
    assert len({one, same}) == 1
    assert one != dc.Host("laptop", ["localhost:1", RELAY_A])  # no preferred
    assert one != dc.Host("desk", ["localhost:1", RELAY_A], preferred=RELAY_A)
    assert dc.Host("laptop", ["localhost:1"]) != dc.Host("laptop", ["localhost:1"], server_id="srv-a")


def test_with_server_id_and_with_connection() -> None:
    host = dc.Host("laptop", ["localhost:1"], preferred="localhost:1")
    learned = host.with_server_id("srv-a")
    assert learned.server_id == "srv-a"
    assert learned.preferred is learned.connections[0]
    grown = learned.with_connection(RELAY_A)
    assert [c.id for c in grown.ordered()] == ["direct:localhost:1", "relay:relay.example:443"]
    with pytest.raises(ValueError, match="different daemons"):
        learned.with_connection(RELAY_B)
