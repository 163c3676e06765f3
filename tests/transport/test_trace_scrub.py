"""What the trace's scrubber does with unusual carriers: URLs it cannot parse, ``auth`` values
that are not objects, subprotocols, and user-info in free text; and the trace writer when an
event or the output fails."""

from __future__ import annotations

import io
import json
import logging
from typing import Any

from daemon_client.transport.trace_scrub import REDACTED, Secrets
from daemon_client.transport.trace_sink import TraceSink


def test_an_unparsable_url_adds_its_other_carriers_and_records_no_path() -> None:
    secrets = Secrets()
    secrets.add_carriers("ws://[::1/ws?token=abcd1234", {"Authorization": "Bearer tok-5678"}, ["paseo.bearer.pw-9999"])
    assert secrets.text("tok-5678 and pw-9999 and Bearer tok-5678") == f"{REDACTED} and {REDACTED} and {REDACTED}"
    assert secrets.url_path("ws://[::1/ws") == REDACTED
    assert secrets.url_path("ws://host") == "/"


def test_auth_values_keep_their_labels_only_and_other_shapes_are_replaced_whole() -> None:
    secrets = Secrets()
    hello = {"type": "hello", "auth": {"kind": "password", "password": "pw"}, "nested": [{"auth": "s3cret"}]}
    assert secrets.value(hello) == {
        "type": "hello",
        "auth": {"kind": "password", "password": REDACTED},
        "nested": [{"auth": REDACTED}],
    }
    assert secrets.value({"auth": None, "token": None}) == {"auth": None, "token": None}


def test_subprotocols_and_user_info_are_scrubbed() -> None:
    secrets = Secrets(["longsecret"])
    assert secrets.subprotocol(None) is None
    assert secrets.subprotocol("Paseo.Bearer.x") == "paseo.bearer." + REDACTED
    assert secrets.subprotocol("v1.longsecret") == f"v1.{REDACTED}"
    assert secrets.text("see wss://user:pw@daemon.test/ws") == f"see wss://{REDACTED}@daemon.test/ws"


class BrokenStream(io.StringIO):
    def write(self, text: str) -> int:
        raise OSError(28, "No space left on device")


def test_an_output_that_fails_stops_tracing_with_a_warning(caplog) -> None:
    sink = TraceSink(BrokenStream()).acquire()
    sink.record("c1", "out", "text", '{"type":"ping"}')
    sink.release(5)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(w.startswith("wire trace: cannot write: [Errno 28] No space left on device") for w in warnings)


def test_an_event_that_cannot_be_written_is_recorded_as_redacted_and_the_rest_follows() -> None:
    stream = io.StringIO()
    sink = TraceSink(stream).acquire()
    sink.record("c1", "in", "open", "not a triple")
    sink.record("c1", "in", "text", '{"type":"pong"}')
    sink.release(5)
    lines: list[dict[str, Any]] = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert (lines[0]["raw"], lines[0]["error"]) == (REDACTED, "ValueError")
    assert lines[1]["frame"] == {"type": "pong"}
