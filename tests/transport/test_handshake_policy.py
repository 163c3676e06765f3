"""The handshake policy's pure functions: URL reading, the upgrade request, the answer's head
limits, and how a redirect's ``Location`` is shown."""

from __future__ import annotations

import pytest

from daemon_client.transport.handshake_policy import (
    Answer,
    HandshakeLimits,
    HandshakeRefused,
    HeadReader,
    build_request,
    check_answer,
    new_key,
    parse_target,
)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ws://host:notaport/ws", "invalid daemon URL: Port could not be cast to integer value"),
        ("ws:///ws", "the daemon URL has no host"),
        ("daemon:6767", "must start with ws:// or wss:// (got daemon)"),
        ("//daemon/ws", "must start with ws:// or wss:// (got no scheme)"),
    ],
)
def test_urls_the_policy_cannot_use_are_refused_saying_why(url: str, message: str) -> None:
    with pytest.raises(ValueError) as refused:
        parse_target(url)
    assert message in str(refused.value)


@pytest.mark.parametrize("name", ["X-Token\r", "X-Token"])
def test_a_header_that_would_split_the_request_is_refused(name: str) -> None:
    target = parse_target("ws://127.0.0.1:6767/ws")
    value = "a\r\nInjected: yes" if name == "X-Token" else "a"
    with pytest.raises(ValueError, match="cannot be sent with the upgrade"):
        build_request(target, new_key(), {name: value}, ())


def test_a_complete_head_over_the_limit_is_refused() -> None:
    reader = HeadReader(HandshakeLimits(max_head_bytes=64))
    head = b"HTTP/1.1 101 Switching Protocols\r\n" + b"X-Padding: " + b"p" * 60 + b"\r\n\r\n"
    with pytest.raises(HandshakeRefused, match="is over 64 bytes: not a WebSocket server"):
        reader.feed(head)


def test_a_head_with_too_many_fields_is_refused() -> None:
    reader = HeadReader(HandshakeLimits(max_header_fields=2))
    head = b"HTTP/1.1 101 Switching Protocols\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n"
    with pytest.raises(HandshakeRefused, match="has over 2 header fields"):
        reader.feed(head)


def test_a_head_split_across_chunks_keeps_what_follows_it() -> None:
    reader = HeadReader()
    assert reader.feed(b"HTTP/1.1 101 Switching\r\nUpgrade: websocket\r") is None
    answer = reader.feed(b"\n\r\n\x81\x00")
    assert answer is not None
    assert (answer.status, answer.reason, answer.get("upgrade")) == (101, "Switching", "websocket")
    assert reader.rest == b"\x81\x00"


def test_a_redirect_to_an_unparsable_location_is_shown_as_sent() -> None:
    answer = Answer(302, "Found", (("Location", "http://[::1/ws"),))
    with pytest.raises(HandshakeRefused, match=r"\(HTTP 302\) to http://\[::1/ws; redirects are not followed"):
        check_answer(answer, new_key(), ())


def test_a_complete_head_with_a_line_over_the_limit_is_refused() -> None:
    reader = HeadReader(HandshakeLimits(max_line_bytes=40))
    head = b"HTTP/1.1 101 Switching Protocols\r\nX-Long: " + b"l" * 40 + b"\r\n\r\n"
    with pytest.raises(HandshakeRefused, match="has a line over 40 bytes"):
        reader.feed(head)
