"""Property tests: no input from the daemon escapes the decoder, the reader or the frame reader.

(a) ``decode_frame`` on arbitrary JSON values and arbitrary text returns a frame or raises
``MalformedFrame``, with orjson and with the stdlib fallback. (b) Arbitrary frame payloads, and
sessions of structured frames aimed at live subscriptions, fed through a live client: the client
stays connected on its first connection, nothing reaches the callback-error hook, and valid frames
still arrive afterwards. (c) ``FrameReader`` fed arbitrary byte streams over a socketpair returns
messages or raises ``TransportError`` subclasses only, and always ends.

Example counts are modest for CI; ``DAEMON_CLIENT_FUZZ_SCALE=20`` multiplies them for a long run.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import socket
import struct
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import daemon_client as dc
from daemon_client.protocol import codec
from daemon_client.protocol.codec import MalformedFrame, decode_frame
from daemon_client.protocol.models import HelloRejected, Pong, SessionMessage, UnknownMessage
from daemon_client.testing import FakeDaemon, RecordingHandler
from daemon_client.transport.base import FrameRejected, TransportError
from daemon_client.transport.frames import OP_BINARY, OP_CLOSE, OP_PING, OP_PONG, OP_TEXT, FrameReader

from ..conftest import TRANSPORTS

SCALE = max(1, int(os.environ.get("DAEMON_CLIENT_FUZZ_SCALE", "1")))
pytestmark = pytest.mark.budget(60.0 * SCALE)  # the reliability watchdog's budget (tests/reliability/conftest.py)


def fuzz(examples: int) -> settings:
    return settings(
        max_examples=examples * SCALE,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


# ----------------------------------------------------------------------------- strategies

scalars = (
    st.none()
    | st.booleans()
    | st.integers()  # beyond 64 bits too: orjson refuses those, the fallback reads them
    | st.floats()  # NaN and infinities: json.dumps writes NaN/Infinity, which orjson refuses
    | st.text(max_size=20)
)
json_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=10), inner, max_size=5)
)
KNOWN_TYPES = ["session", "pong", "hello.rejected", "ping", "status", "rpc_error", "agent_stream", "agent_update"]
type_values = st.sampled_from(KNOWN_TYPES) | st.text(max_size=12) | json_values
envelopes = st.one_of(
    json_values,
    st.fixed_dictionaries({"type": type_values}, optional={"message": json_values, "reason": json_values}),
    st.fixed_dictionaries(
        {
            "type": st.just("session"),
            "message": st.fixed_dictionaries({"type": type_values}, optional={"payload": json_values}),
        }
    ),
)
any_text = st.text(st.characters(blacklist_categories=()), max_size=200)  # lone surrogates included


def dumps(value: Any) -> str:
    return json.dumps(value)  # NaN/Infinity allowed: not JSON, must be refused or read, never crash


@pytest.fixture(params=["orjson", "stdlib-json"])
def loader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the decoder with orjson (the ``fast`` extra) and with the stdlib fallback."""
    if request.param == "stdlib-json":
        monkeypatch.setattr(codec, "_loads", json.loads)
    return str(request.param)


def check_decodes_or_is_malformed(text: str) -> None:
    try:
        frame = decode_frame(text)
    except MalformedFrame:
        return
    assert isinstance(frame, SessionMessage | Pong | HelloRejected | UnknownMessage)
    if isinstance(frame, SessionMessage):
        assert type(frame.type) is str
        assert type(frame.payload) is dict
    if isinstance(frame, HelloRejected):
        assert isinstance(frame.reason, str)
        assert all(isinstance(a, str) for a in frame.accepts)


# ----------------------------------------------------------------------------- (a) decode_frame


def test_decode_frame_on_arbitrary_json_values(loader: str) -> None:
    @fuzz(300)
    @given(envelopes)
    def run(value: Any) -> None:
        check_decodes_or_is_malformed(dumps(value))

    run()


def test_decode_frame_on_arbitrary_text(loader: str) -> None:
    @fuzz(300)
    @given(any_text | envelopes.map(dumps).map(lambda t: t[: len(t) // 2]))
    @example("")
    @example("\ud800")
    @example('{"type":"session","message":{"type":"x","payload":"\\ud800"}}')
    @example('{"type":"hello.rejected","accepts":"password"}')
    @example('{"type":"session","message":{"type":"x","payload":null,"a":1}}')
    @example("[" * 1000 + "]" * 1000)
    def run(text: str) -> None:
        check_decodes_or_is_malformed(text)

    run()


def test_bug_stdlib_fallback_lets_recursion_error_out_of_decode_frame(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(codec, "_loads", json.loads)
    check_decodes_or_is_malformed("[" * 100_000 + "]" * 100_000)


# ----------------------------------------------------------------------------- (b) live client

_markers = itertools.count(1)


class Live:
    """A connected, non-strict client that records callback errors and the reader's internal errors."""

    def __init__(self, fake: FakeDaemon, client: dc.Client, errors: list[BaseException]) -> None:
        self.fake = fake
        self.client = client
        self.errors = errors
        self.pushes = RecordingHandler[dc.SessionMessage]("pushes")
        client.add_push_listener(self.pushes, ["fuzz_marker"])

    def assert_alive(self, caplog: pytest.LogCaptureFixture, *, round_trip: bool = True) -> None:
        """The reader handled everything sent so far, on the first connection, without escaping errors."""
        n = next(_markers)
        self.fake.push("fuzz_marker", {"n": n})
        self.pushes.wait_for(1, predicate=lambda m: m.payload.get("n") == n)
        self.pushes.clear()
        if round_trip:
            assert self.client.request({"type": "echo_request", "value": n}, timeout=5)["echo"] == n
        assert self.client.flush_callbacks()
        assert self.client.state is dc.ConnectionState.CONNECTED
        assert self.fake.accepted_count == 1, "a frame cost a reconnect"
        assert self.errors == [], f"daemon input reached the callback-error hook: {self.errors!r}"
        internal = [r.getMessage()[:200] for r in caplog.records if "internal error" in r.getMessage()]
        assert internal == [], f"an error escaped the frame handler: {internal}"


@pytest.fixture
def live(fakes, make_client) -> Callable[..., Live]:
    def make(transport: str, kind: str = "capable") -> Live:
        fake = fakes(kind)
        fake.on_request("echo_request", lambda ctx: ctx.reply({"echo": ctx.message.get("value")}))
        errors: list[BaseException] = []
        client = make_client(fake, transport, strict=False, on_callback_error=errors.append)
        live = Live(fake, client, errors)
        client.connect()
        return live

    return make


@pytest.fixture
def quiet_client_logs(caplog: pytest.LogCaptureFixture) -> None:
    """Fuzzing logs thousands of skipped frames: keep WARNING and above only (the conftest sets DEBUG)."""
    caplog.set_level(logging.WARNING, logger="daemon_client")


valid_frames = envelopes.map(dumps)
frame_bytes = st.one_of(
    st.binary(max_size=300),
    any_text.map(lambda t: t.encode("utf-8", errors="surrogatepass")),  # surrogates: invalid UTF-8
    valid_frames.map(str.encode),
    st.tuples(valid_frames.map(str.encode), st.integers(0, 400), st.integers(0, 255)).map(
        lambda t: t[0][: t[1]] + bytes([t[2]]) + t[0][t[1] + 1 :]  # one byte replaced
    ),
)


def _as_frame(data: bytes, binary: bool) -> tuple[bytes, bool]:
    """A text frame that is not UTF-8 fails the connection (1007, tests/reliability/test_bad_input.py),
    so as a text frame its bytes are made valid; as a binary frame they are sent as they are."""
    return (data, True) if binary else (data.decode("utf-8", errors="replace").encode("utf-8"), False)


raw_frames = st.tuples(frame_bytes, st.booleans()).map(lambda t: _as_frame(*t))  # (payload, binary?)


@pytest.mark.usefixtures("quiet_client_logs")
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_arbitrary_frame_payloads_never_escape_the_reader(live, caplog, transport: str) -> None:
    h: Live = live(transport)

    @fuzz(60 if transport == "loopback" else 120)
    @given(st.lists(raw_frames, min_size=1, max_size=12))  # a stray hello.rejected included
    def run(frames: list[tuple[bytes, bool]]) -> None:
        for data, binary in frames:
            h.fake.send_raw(data, binary=binary)
        h.assert_alive(caplog, round_trip=False)

    run()
    h.assert_alive(caplog)


# Structured sessions: frames of the types the client routes, aimed at its live subscriptions.

PUSH_TYPES = [
    "agent_update",
    "workspace_update",
    "agent_stream",
    "agent.timeline.replacement",
    "providers_snapshot_update",
    "project.update",
    "agent_permission_resolved",
    "status",
    "rpc_error",
    "brand_new_push",
]
TOP_FIELDS = ["agent", "agentId", "kind", "event", "item", "seq", "epoch", "project", "projectId", "workspace",
              "id", "status", "emptyProject", "removedProjectId", "generation", "cwd", "generatedAt", "type", "text",
              "timestamp", "provider", "loading", "requestId", "error", "code", "turnId"]  # fmt: skip
"""Payload keys; ``entries`` and ``subscriptionId`` are drawn apart (see ``_payloads``)."""
FIELDS = [*TOP_FIELDS, "title", "labels", "createdAt", "updatedAt", "model", "entries", "subscriptionId"]
wire_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
    | st.sampled_from(["upsert", "remove", "a1", "timeline", "assistant_message", "tool_call", "idle", "server_info"])
)
wire_values = st.recursive(
    wire_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=6), inner, max_size=5)
    ),
    max_leaves=15,
)
"""JSON the daemon could really send (no NaN, no 65-bit integers, no lone surrogates): it reaches routing."""
entries_values = st.none() | st.lists(wire_values, max_size=3) | wire_values
"""Lists mostly, so that entries are read one by one; anything else must be refused cleanly."""


def _structured(routes: dict[str, str]) -> st.SearchStrategy[str]:
    """Session frames; three in four are aimed at a live subscription (the type it hears, its tag)."""
    ids = sorted(set(routes.values()))
    aimed = st.sampled_from(sorted(routes.items()))
    anywhere = st.tuples(st.sampled_from(PUSH_TYPES), st.sampled_from(ids) | wire_values)
    extra = st.fixed_dictionaries({}, optional={"entries": entries_values})

    def frame(route: tuple[str, Any], tagged: bool, base: dict[str, Any], more: dict[str, Any]) -> str:
        message_type, tag = route
        payload = {**base, **more, **({"subscriptionId": tag} if tagged else {})}
        return dumps({"type": "session", "message": {"type": message_type, "payload": payload}})

    return st.builds(
        frame,
        st.one_of(aimed, aimed, aimed, anywhere),
        st.booleans() | st.just(True),
        st.dictionaries(st.sampled_from(TOP_FIELDS), wire_values, max_size=6),
        extra,
    )


@pytest.mark.usefixtures("quiet_client_logs")
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_structured_sessions_never_escape_the_reader_or_reach_callback_errors(live, caplog, transport: str) -> None:
    h: Live = live(transport)
    client = h.client
    h.fake.agents.upsert("a1")
    agents = client.agents.list(subscribe=True).subscription
    workspaces = client.workspaces.list(subscribe=True).subscription
    assert agents is not None
    assert workspaces is not None
    seen = RecordingHandler[Any]("seen")
    agents.subscribe(snapshot=seen, update=seen, error=seen)
    workspaces.subscribe(snapshot=seen, update=seen, error=seen)
    client.agents.subscribe(seen)
    client.workspaces.subscribe(seen)
    timeline = client.agents.ref("a1").timeline.subscribe(seen)
    providers = client.providers.subscribe(seen)
    projects = client.projects.subscribe(seen)
    for subscription in (timeline, providers, projects):
        subscription.ready.result(timeout=5)
    cache = client.projects.cache()
    cache.on_change(seen)
    routes = {
        "agent_update": agents.subscription_id,
        "workspace_update": workspaces.subscription_id,
        "agent_stream": timeline.subscription_id,
        "agent.timeline.replacement": timeline.subscription_id,
        "providers_snapshot_update": providers.subscription_id,
        "project.update": projects.subscription_id,
    }
    assert all(isinstance(tag, str) for tag in routes.values())

    @fuzz(60 if transport == "loopback" else 120)
    @given(st.lists(_structured(routes), min_size=2, max_size=16))
    def run(frames: list[str]) -> None:
        for text in frames:
            h.fake.send_raw(text)
        h.assert_alive(caplog, round_trip=False)

    run()
    h.assert_alive(caplog)
    assert len(seen) > 0  # the subscriptions were live and heard something
    cache.close()


# ----------------------------------------------------------------------------- (c) FrameReader


def ws_frame(
    payload: bytes, opcode: int = OP_TEXT, *, fin: bool = True, rsv: int = 0, mask: bytes | None = None, form: int = 0
) -> bytes:
    """One RFC 6455 frame; ``form`` forces the 16-bit (126) or 64-bit (127) length form."""
    first = (0x80 if fin else 0) | (rsv << 4) | opcode
    length = len(payload)
    mask_bit = 0x80 if mask else 0
    if form == 127 or length > 0xFFFF:
        header = struct.pack("!BBQ", first, mask_bit | 127, length)
    elif form == 126 or length > 125:
        header = struct.pack("!BBH", first, mask_bit | 126, length)
    else:
        header = struct.pack("!BB", first, mask_bit | length)
    if mask:
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        header += mask
    return header + payload


structured_frames = st.builds(
    ws_frame,
    st.binary(max_size=300),
    st.sampled_from([OP_TEXT, OP_BINARY, 0x0, OP_CLOSE, OP_PING, OP_PONG]) | st.integers(0, 15),
    fin=st.booleans(),
    rsv=st.integers(0, 7),
    mask=st.none() | st.binary(min_size=4, max_size=4),
    form=st.sampled_from([0, 126, 127]),
)


@st.composite
def byte_streams(draw: st.DrawFn, honest_lengths: bool) -> bytes:
    """Whole frames (lengths match payloads), maybe cut short; or, unless honest, any bytes at all."""
    stream = b"".join(draw(st.lists(structured_frames, max_size=8)))
    if draw(st.booleans()):
        stream = stream[: draw(st.integers(0, len(stream)))]
    if honest_lengths:
        return stream
    return draw(st.sampled_from([stream, draw(st.binary(max_size=600)), stream + draw(st.binary(max_size=40))]))


def read_all(stream: bytes, limit: int | None) -> list[tuple[int, bytes]]:
    """Feed ``stream`` through a socketpair and read until the reader stops; never hangs."""
    left, right = socket.socketpair()
    try:
        left.settimeout(5.0)  # a reader waiting for bytes that will never come would hit this
        right.sendall(stream)
        right.shutdown(socket.SHUT_WR)
        reader = FrameReader(left, limit)
        messages: list[tuple[int, bytes]] = []
        ended: TransportError | None = None
        for _ in range(len(stream) // 2 + 2):  # every message or rejection consumes at least 2 bytes
            try:
                opcode, data = reader.next_message()
            except FrameRejected:
                continue  # the client's reader reads on after a rejected frame
            except TransportError as exc:  # TransportClosed and protocol violations end the connection
                ended = exc
                break
            assert isinstance(opcode, int)
            assert 0 <= opcode <= 15
            assert isinstance(data, bytes)
            messages.append((opcode, data))
        assert ended is not None, "the frame reader kept returning without consuming the stream"
        assert "timed out" not in str(ended), "the frame reader waited for bytes after the end of the stream"
        return messages
    finally:
        left.close()
        right.close()


@pytest.mark.parametrize("limit", [0, 1, 125, 1000, 64 * 1024 * 1024])
def test_frame_reader_on_arbitrary_byte_streams(limit: int) -> None:
    @fuzz(150)
    @given(byte_streams(honest_lengths=False))
    @example(struct.pack("!BBQ", 0x81, 127, 2**64 - 1) + b"x")  # the longest declared length
    @example(b"\x01\x03abc" + b"\x00\x03def" + b"\x80\x01!")  # fragments, then a final continuation
    @example(b"\x00\x01x")  # a continuation with no message
    @example(b"\x89\x7e\x00\xff" + b"p" * 255)  # a ping over 125 bytes
    def run(stream: bytes) -> None:
        messages = read_all(stream, limit)
        for opcode, data in messages:
            if opcode in (OP_TEXT, OP_BINARY):
                assert len(data) <= limit

    run()


def test_frame_reader_without_a_limit_on_honest_streams() -> None:
    @fuzz(150)
    @given(byte_streams(honest_lengths=True))
    def run(stream: bytes) -> None:
        read_all(stream, None)

    run()


def test_frame_reader_returns_what_was_framed() -> None:
    """Well-formed frames, fragmented or not, masked or not, come back whole and in order."""

    @fuzz(100)
    @given(
        st.lists(
            st.tuples(st.binary(max_size=200), st.sampled_from([OP_TEXT, OP_BINARY]), st.integers(1, 4), st.booleans()),
            max_size=6,
        )
    )
    def run(messages: list[tuple[bytes, int, int, bool]]) -> None:
        stream = b""
        for payload, opcode, pieces, masked in messages:
            mask = b"\x01\x02\x03\x04" if masked else None
            cuts = [len(payload) * i // pieces for i in range(pieces + 1)]
            for i in range(pieces):
                part = payload[cuts[i] : cuts[i + 1]]
                stream += ws_frame(part, opcode if i == 0 else 0x0, fin=i == pieces - 1, mask=mask)
                if i == 0 and pieces > 1:
                    stream += ws_frame(b"between", OP_PING)  # control frames may come between fragments
        got = [m for m in read_all(stream, 1 << 20) if m[0] != OP_PING]
        assert got == [(opcode, payload) for payload, opcode, _pieces, _masked in messages]

    run()


@pytest.mark.parametrize("declared", [2**63, 2**62], ids=["overflow", "memory"])
def test_bug_frame_reader_without_limit_lets_huge_lengths_escape(declared: int) -> None:
    read_all(struct.pack("!BBQ", 0x81, 127, declared) + b"x", None)
