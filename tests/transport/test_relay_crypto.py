"""Relay crypto and pairing offers: the test vectors of protocol-relay.md section 11, key checks,
offer parsing and the TLS default, and the error when PyNaCl is missing."""

from __future__ import annotations

import base64
import json
import sys

import pytest

import daemon_client as dc
from daemon_client.discovery import TargetKind, parse_offer, parse_target, resolve
from daemon_client.discovery.offer import redact_offer

nacl = pytest.importorskip("nacl.bindings", reason="relay tests need the relay extra (PyNaCl)")

from daemon_client.transport.relay.crypto import (  # noqa: E402 - after the skip
    LOW_ORDER_KEYS,
    DecryptError,
    FrameBox,
    InvalidPeerKey,
    KeyPair,
    decode_frame_text,
    shared_key,
)

DAEMON_SECRET = bytes.fromhex("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb")
DAEMON_PUBLIC = bytes.fromhex("de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f")
DAEMON_PUBLIC_B64 = "3p7bfXt9wbTTW2HC7OQ1Nz+DQ8hbeGdNrfx+FG+IK08="
CLIENT_SECRET = bytes.fromhex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a")
CLIENT_PUBLIC = bytes.fromhex("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a")
CLIENT_PUBLIC_B64 = "hSDwCYkwp1R0i33ctD73Wg2/Og0mOBr066SpjqqbTmo="
SHARED = bytes.fromhex("1b27556473e985d462cd51197a9a46c76009549eac6474f206c4ee0844f68389")
NONCE = bytes.fromhex("69696ee955b62b73cd62bda875fc73d68219e0036b7a0b37")
PLAINTEXT = b'{"type":"hello","clientId":"cid-test","clientType":"cli","protocolVersion":1,"appVersion":"0.1.65"}'
TAG = bytes.fromhex("9ec0587651070601c1dc56b5ef9a3223")
CIPHERTEXT = bytes.fromhex(
    "4bbc1023048cc29c2fea26c0b5785899387887e43f412939682b067c36ec33bb515608a7894dbf023b09bdabc670d12b782cc42cdbcb"
    "8734169973043deba36ad5d950a36a92558819fa160bc5f3c78902827370f4a2910e9d1b12cc245ed832a82821"
)
FRAME = (
    "aWlu6VW2K3PNYr2odfxz1oIZ4ANregs3nsBYdlEHBgHB3Fa175oyI0u8ECMEjMKcL+omwLV4WJk4eIfkP0EpOWgrBnw27DO7UVYIp4l"
    "NvwI7Cb2rxnDRK3gsxCzby4c0FplzBD3ro2rV2VCjapJViBn6FgvF88eJAoJzcPSikQ6dGxLMJF7YMqgoIQ=="
)
OFFER_LINK = (
    "https://app.paseo.sh/#offer=eyJ2IjoyLCJzZXJ2ZXJJZCI6InNydl9URVNUVkVDVE9SMDEiLCJkYWVtb25QdWJsaWNLZXlCNjQiOiIzcD"
    "diZlh0OXdiVFRXMkhDN09RMU56K0RROGhiZUdkTnJmeCtGRytJSzA4PSIsInJlbGF5Ijp7ImVuZHBvaW50IjoicmVsYXkucGFzZW8uc2g6NDQzIn19"
)
OFFER_JSON = (
    '{"v":2,"serverId":"srv_TESTVECTOR01","daemonPublicKeyB64":"3p7bfXt9wbTTW2HC7OQ1Nz+DQ8hbeGdNrfx+FG+IK08=",'
    '"relay":{"endpoint":"relay.paseo.sh:443"}}'
)


def _offer(payload: object) -> str:
    data = json.dumps(payload, separators=(",", ":")).encode()
    return "https://app.paseo.sh/#offer=" + base64.urlsafe_b64encode(data).decode().rstrip("=")


# ------------------------------------------------------------------------------ test vectors


def test_keypairs_of_the_vectors() -> None:
    assert KeyPair.from_secret(DAEMON_SECRET).public_key == DAEMON_PUBLIC
    client = KeyPair.from_secret(CLIENT_SECRET)
    assert client.public_key == CLIENT_PUBLIC
    assert client.public_key_b64 == CLIENT_PUBLIC_B64
    assert base64.b64encode(DAEMON_PUBLIC).decode() == DAEMON_PUBLIC_B64
    assert repr(CLIENT_SECRET) not in repr(client)


def test_both_directions_derive_the_same_key() -> None:
    assert shared_key(DAEMON_PUBLIC, CLIENT_SECRET) == SHARED
    assert shared_key(CLIENT_PUBLIC, DAEMON_SECRET) == SHARED


def test_sealing_with_the_fixed_nonce_gives_the_frame_byte_for_byte() -> None:
    frame = FrameBox(SHARED).seal(PLAINTEXT, NONCE)
    assert frame == FRAME
    assert len(frame) == 188
    raw = base64.b64decode(frame)
    assert raw == NONCE + TAG + CIPHERTEXT


def test_opening_the_frame_gives_the_plaintext_on_both_sides() -> None:
    assert FrameBox(shared_key(DAEMON_PUBLIC, CLIENT_SECRET)).open(FRAME) == PLAINTEXT
    assert FrameBox(shared_key(CLIENT_PUBLIC, DAEMON_SECRET)).open(FRAME) == PLAINTEXT


def test_flipping_any_bit_of_the_frame_fails() -> None:
    box = FrameBox(SHARED)
    raw = bytearray(base64.b64decode(FRAME))
    for index in range(len(raw)):
        for bit in range(8):
            raw[index] ^= 1 << bit
            with pytest.raises(DecryptError):
                box.open_bytes(bytes(raw))
            raw[index] ^= 1 << bit
    assert box.open_bytes(bytes(raw)) == PLAINTEXT


def test_frames_decode_leniently_and_garbage_fails() -> None:
    urlsafe = FRAME.replace("+", "-").replace("/", "_").rstrip("=")
    assert decode_frame_text(urlsafe) == base64.b64decode(FRAME)
    box = FrameBox(SHARED)
    assert box.open(urlsafe) == PLAINTEXT
    for bad in ["", "not base64!", base64.b64encode(b"x" * 39).decode(), base64.b64encode(b"x" * 60).decode()]:
        with pytest.raises(DecryptError):
            box.open(bad)


def test_every_seal_takes_a_fresh_nonce() -> None:
    box = FrameBox(SHARED)
    frames = {box.seal(PLAINTEXT) for _ in range(50)}
    assert len(frames) == 50
    assert len({base64.b64decode(f)[:24] for f in frames}) == 50
    assert all(box.open(f) == PLAINTEXT for f in frames)
    assert KeyPair.generate().public_key != KeyPair.generate().public_key


# ------------------------------------------------------------------------------ key checks


def test_the_all_zero_key_and_every_low_order_key_are_refused() -> None:
    assert bytes(32) in LOW_ORDER_KEYS
    assert len(LOW_ORDER_KEYS) == 14
    secret = KeyPair.generate().secret_key
    for key in LOW_ORDER_KEYS:
        with pytest.raises(InvalidPeerKey):
            shared_key(key, secret)
        with pytest.raises(Exception):  # libsodium itself refuses each of them: the list is right
            nacl.crypto_box_beforenm(key, secret)
    with pytest.raises(InvalidPeerKey):
        shared_key(b"\x01" * 31, secret)


def test_a_low_order_key_in_an_offer_is_refused_when_the_client_is_built() -> None:
    link = dc.RelayTarget("relay.example:443", "srv_x", bytes(32)).offer_link()
    with pytest.raises(ValueError, match="low-order") as raised:
        dc.Client(link)
    assert "#offer=" not in str(raised.value)


# ------------------------------------------------------------------------------ offers


def test_the_example_offer_decodes_to_the_spec_json() -> None:
    encoded = OFFER_LINK.split("#offer=", 1)[1]
    assert base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode() == OFFER_JSON
    relay = parse_offer(OFFER_LINK)
    assert relay.endpoint == "relay.paseo.sh:443"
    assert relay.server_id == "srv_TESTVECTOR01"
    assert relay.daemon_public_key == DAEMON_PUBLIC
    assert relay.tls is None
    assert relay.uses_tls
    assert relay.ws_url == "wss://relay.paseo.sh:443/ws?serverId=srv_TESTVECTOR01&role=client&v=2"
    assert relay.offer_link() == OFFER_LINK


def test_an_offer_is_found_anywhere_and_in_any_base64_flavour() -> None:
    encoded = OFFER_LINK.split("#offer=", 1)[1]
    standard = base64.b64encode(OFFER_JSON.encode()).decode()
    for text in [
        f"  {OFFER_LINK}  ",
        f"https://my-paseo.example/app/#offer={encoded}",
        f"#offer={encoded}",
        f"https://app.paseo.sh/#offer={standard}",
        f"see https://x/#offer={encoded}==",
    ]:
        assert parse_offer(text).server_id == "srv_TESTVECTOR01"


def test_address_forms_accept_the_offer_link() -> None:
    target = parse_target(OFFER_LINK)
    assert target.kind is TargetKind.RELAY
    assert target.url == "relay://relay.paseo.sh:443/srv_TESTVECTOR01"
    assert target.ws_url == "wss://relay.paseo.sh:443/ws?serverId=srv_TESTVECTOR01&role=client&v=2"
    assert target.relay == parse_offer(OFFER_LINK)
    assert "through the relay relay.paseo.sh:443 (TLS)" in target.describe()
    env_resolution = resolve(env={"PASEO_HOST": OFFER_LINK})
    assert env_resolution.target == target
    assert env_resolution.explicit
    explicit = resolve(dc.RelayTarget("relay.paseo.sh:443", "srv_TESTVECTOR01", DAEMON_PUBLIC_B64))
    assert explicit.target == target
    with pytest.raises(ValueError, match="not a listen address"):
        parse_target(OFFER_LINK, listen=True)
    skipped = resolve(env={"PASEO_LISTEN": OFFER_LINK, "PASEO_HOME": "/nonexistent-paseo-home"})
    assert skipped.source != "PASEO_LISTEN"
    assert "eyJ2" not in skipped.describe()


@pytest.mark.parametrize(
    ("endpoint", "tls", "expected"),
    [
        ("relay.paseo.sh:443", None, "wss"),
        ("RELAY.PASEO.SH:443", None, "wss"),
        ("relay.paseo.sh:8443", None, "ws"),
        ("my-relay.example:443", None, "ws"),
        ("127.0.0.1:8787", None, "ws"),
        ("[::1]:8787", None, "ws"),
        ("127.0.0.1:8787", True, "wss"),
        ("relay.paseo.sh:443", False, "ws"),
    ],
)
def test_tls_follows_the_hosted_relay_unless_forced(endpoint: str, tls: bool | None, expected: str) -> None:
    target = dc.RelayTarget(endpoint, "srv 1/x", DAEMON_PUBLIC, tls)
    assert target.ws_url.startswith(f"{expected}://")
    assert target.ws_url.endswith("/ws?serverId=srv%201%2Fx&role=client&v=2")
    assert parse_offer(target.offer_link()) == target


def test_use_tls_in_newer_offers_is_honoured() -> None:
    payload = json.loads(OFFER_JSON)
    payload["relay"] = {"endpoint": "my-relay.example:443", "useTls": True}
    assert parse_offer(_offer(payload)).ws_url.startswith("wss://my-relay.example:443/")
    payload["extra"] = {"ignored": True}
    assert parse_offer(_offer(payload)).tls is True


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"v": 1}, "version"),
        ({"v": True}, "version"),
        ({"serverId": ""}, "server id"),
        ({"daemonPublicKeyB64": ""}, "daemonPublicKeyB64"),
        ({"daemonPublicKeyB64": "AAAA"}, "32 bytes"),
        ({"daemonPublicKeyB64": "not*base64"}, "not base64"),
        ({"relay": {}}, "relay endpoint"),
        ({"relay": {"endpoint": "no-port"}}, "host:port"),
        ({"relay": {"endpoint": "relay.paseo.sh:443", "useTls": "yes"}}, "useTls"),
    ],
)
def test_bad_offers_say_what_is_wrong_without_quoting_the_key(payload: dict[str, object], message: str) -> None:
    offer = {**json.loads(OFFER_JSON), **payload}
    link = _offer(offer)
    with pytest.raises(ValueError, match=message) as raised:
        parse_target(link)
    assert DAEMON_PUBLIC_B64 not in str(raised.value)
    assert link.split("#offer=")[1] not in str(raised.value)


@pytest.mark.parametrize(
    "link",
    [
        "https://app.paseo.sh/#offer=",
        "https://app.paseo.sh/#offer=%%%%",
        "https://app.paseo.sh/#offer=" + base64.urlsafe_b64encode(b"not json").decode(),
        "https://app.paseo.sh/#offer=" + base64.urlsafe_b64encode(b"[1,2]").decode(),
        OFFER_LINK[:-20],
    ],
)
def test_broken_links_are_refused_without_echoing_them(link: str) -> None:
    with pytest.raises(ValueError) as raised:
        dc.Client(link)
    payload = link.split("#offer=", 1)[1]
    assert not payload or payload not in str(raised.value)


def test_a_mistyped_offer_link_is_not_echoed_either() -> None:
    with pytest.raises(ValueError) as raised:
        parse_target(OFFER_LINK.replace("#offer=", "#ofer="))
    assert "eyJ2" not in str(raised.value)
    assert redact_offer(OFFER_LINK) == "https://app.paseo.sh/#offer=<redacted>"


def test_reprs_never_show_the_key_or_the_offer() -> None:
    target = parse_target(OFFER_LINK)
    client = dc.Client(OFFER_LINK)
    try:
        texts = [
            repr(target),
            repr(target.relay),
            str(target.relay),
            repr(client),
            client.url,
            repr(client.resolution),
            client.resolution.describe(),
        ]
    finally:
        client.close()
    for text in texts:
        assert DAEMON_PUBLIC_B64 not in text
        assert DAEMON_PUBLIC.hex() not in text
        assert "eyJ2" not in text
        assert repr(DAEMON_PUBLIC) not in text


def test_without_pynacl_a_relay_target_fails_at_once_naming_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nacl.bindings", None)
    with pytest.raises(dc.MissingExtra, match=r"daemon-client\[relay\]") as raised:
        dc.Client(OFFER_LINK)
    assert isinstance(raised.value, ImportError)
    assert "eyJ2" not in str(raised.value)
    dc.Client("ws://127.0.0.1:9/ws").close()  # direct targets do not need it


def test_keys_and_nonces_of_the_wrong_length_are_refused() -> None:
    with pytest.raises(ValueError, match="a secret key has 32 bytes"):
        KeyPair.from_secret(CLIENT_SECRET[:31])
    with pytest.raises(ValueError, match="a shared key has 32 bytes"):
        FrameBox(SHARED + b"\x00")
    with pytest.raises(ValueError, match="a nonce has 24 bytes"):
        FrameBox(SHARED).seal(PLAINTEXT, nonce=NONCE[:23])


def test_a_binary_frame_is_the_nonce_tag_and_ciphertext_without_base64() -> None:
    box = FrameBox(SHARED)
    raw = box.seal_bytes(PLAINTEXT)
    assert len(raw) == 24 + 16 + len(PLAINTEXT)
    assert box.open_bytes(raw) == PLAINTEXT
    assert raw[:24] != box.seal_bytes(PLAINTEXT)[:24]
    assert repr(box) == "<FrameBox>"
