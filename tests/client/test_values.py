"""The internal records without attrs (:mod:`daemon_client._values`): attrs-style reprs that
hide credentials, attrs equality and hashing where the record is compared, immutability where it
leaves the client's code, and the modules a plain client never imports."""

from __future__ import annotations

import copy
import os
import pickle
import subprocess
import sys

import attrs
import pytest

from daemon_client._values import FrozenValue, Record, Value
from daemon_client.protocol.replies import ReplyMatcher
from daemon_client.transport.base import ConnectParams


class _Pair(Value):
    __slots__ = ("left", "right")

    left: int
    right: object

    def __init__(self, left: int, right: object = None) -> None:
        self.left = left
        self.right = right


def test_a_record_reprs_its_fields_in_declaration_order_without_the_hidden_ones() -> None:
    params = ConnectParams("ws://h/ws", 5, {"Authorization": "Bearer secret"}, ("paseo.bearer.secret",))
    assert repr(params) == (
        "ConnectParams(url='ws://h/ws', timeout=5, ssl_context=None, max_frame_bytes=67108864, unix_socket=None)"
    )
    assert repr(ReplyMatcher("pong")) == "ReplyMatcher(type='pong', statuses=None)"


def test_values_compare_and_hash_as_attrs_classes_do() -> None:
    assert _Pair(1, "a") == _Pair(1, "a")
    assert _Pair(1, "a") != _Pair(1, "b")
    assert hash(_Pair(1, "a")) == hash(_Pair(1, "a"))
    assert _Pair(1) != (1, None)  # another type is never equal
    assert _Pair(1).__eq__((1, None)) is NotImplemented
    nan = float("nan")
    assert _Pair(1, nan) == _Pair(1, nan)  # the same object, as attrs compares field tuples


def test_frozen_values_refuse_assignment_as_frozen_attrs_classes_do() -> None:
    params = ConnectParams("ws://h/ws", 5)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        params.timeout = 1  # type: ignore[misc]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        del params.url  # type: ignore[misc]
    assert (params.url, params.timeout, params.headers) == ("ws://h/ws", 5, {})


def test_frozen_values_copy_and_pickle_as_frozen_attrs_classes_do() -> None:
    params = ConnectParams("ws://h/ws", 5, {"Authorization": "x"}, ("p",), None, 4096, "/run/d.sock")
    assert copy.copy(params) == params
    assert copy.deepcopy(params) == params
    assert pickle.loads(pickle.dumps(params)) == params


def test_connect_params_without_credentials_keep_everything_else() -> None:
    params = ConnectParams("ws://h/ws", 5, {"Authorization": "x"}, ("p",), None, 4096, "/run/d.sock")
    bare = params.without_credentials()
    assert (dict(bare.headers), tuple(bare.subprotocols)) == ({}, ())
    assert bare == ConnectParams("ws://h/ws", 5, {}, (), None, 4096, "/run/d.sock")


def test_a_record_whose_annotations_and_slots_differ_is_refused() -> None:
    with pytest.raises(TypeError, match=r"the annotated fields \('a', 'b'\) are not the __slots__ \('a',\)"):

        class _Broken(Record):
            __slots__ = ("a",)

            a: int
            b: int

    class _Fine(FrozenValue):
        __slots__ = ("a",)

        a: int

    assert _Fine.__dict__["_field_names"] == ("a",)


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
