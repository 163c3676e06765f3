"""The internal records without attrs (:mod:`daemon_client._values`): attrs-style reprs that
hide credentials, a definition that keeps annotations and slots together, ``ConnectParams``
still an attrs class for custom transports, and the modules a plain client never imports."""

from __future__ import annotations

import os
import subprocess
import sys

import attrs
import pytest

import daemon_client as dc
from daemon_client._values import Record
from daemon_client.protocol.replies import ReplyMatcher
from daemon_client.runtime.options import ConnectionOptions
from daemon_client.transport.base import ConnectParams


def test_a_record_reprs_its_fields_in_declaration_order_without_the_hidden_ones() -> None:
    assert repr(ReplyMatcher("pong")) == "ReplyMatcher(type='pong', statuses=None)"
    options = ConnectionOptions(
        None,  # type: ignore[arg-type]  # the repr reads fields only
        "client-1",
        "0.1.65",
        "hunter2",
        5.0,
        dc.ReconnectPolicy(),
        dc.Heartbeat(),
        lambda: None,  # type: ignore[arg-type,return-value]
        auth_header="Bearer secret",
    )
    shown = repr(options)
    assert shown.startswith("ConnectionOptions(targets=None, client_id='client-1', app_version='0.1.65', ")
    assert "hunter2" not in shown
    assert "secret" not in shown


def test_a_record_whose_annotations_and_slots_differ_is_refused() -> None:
    with pytest.raises(TypeError, match=r"the annotated fields \('a', 'b'\) are not the __slots__ \('a',\)"):

        class _Broken(Record):
            __slots__ = ("a",)

            a: int
            b: int

    class _Fine(Record):
        __slots__ = ("a",)

        a: int

        def __init__(self, a: int) -> None:
            self.a = a

    assert _Fine.__dict__["_field_names"] == ("a",)
    assert repr(_Fine(1)).endswith("_Fine(a=1)")


def test_connect_params_stay_an_attrs_class_for_custom_transports() -> None:
    params = ConnectParams("ws://h/ws", 5, {"Authorization": "Bearer secret"}, ("paseo.bearer.secret",))
    assert repr(params) == (
        "ConnectParams(url='ws://h/ws', timeout=5, ssl_context=None, max_frame_bytes=67108864, unix_socket=None)"
    )
    derived = attrs.evolve(params, timeout=1)  # as a wrapping transport may derive its inner one's
    assert (derived.timeout, dict(derived.headers)) == (1, {"Authorization": "Bearer secret"})
    bare = params.without_credentials()
    assert (dict(bare.headers), tuple(bare.subprotocols)) == ({}, ())
    assert bare == ConnectParams("ws://h/ws", 5)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        params.timeout = 1  # type: ignore[misc]


def test_a_plain_client_imports_neither_the_unix_socket_module_nor_random() -> None:
    code = (
        "import sys, daemon_client; daemon_client.Client; daemon_client.Client('localhost:6767');"
        "print(sorted({'daemon_client.transport.unix', 'random'} & set(sys.modules)))"
    )
    # Not measured by coverage (which imports random itself when a test run measures subprocesses).
    env = {key: value for key, value in os.environ.items() if not key.startswith("COVERAGE_PROCESS_")}
    command = [sys.executable, "-c", code]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, check=True, env=env)
    assert result.stdout.strip() == "[]"
