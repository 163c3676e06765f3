"""The connection machinery's frame models (``protocol.frame_models``) are imported on first
use (a client built, a rare frame decoded), not by ``import daemon_client``, and are reachable
under their old names."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys

import attrs
import pytest

from daemon_client import protocol
from daemon_client.protocol import codec, frame_models, models


def _run(code: str) -> str:
    env = {key: value for key, value in os.environ.items() if not key.startswith("COVERAGE_PROCESS_")}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True,
                            env=env)  # fmt: skip
    return result.stdout.strip()


def test_importing_the_package_and_its_client_leaves_them_unimported() -> None:
    code = (
        "import sys, daemon_client; daemon_client.Client; daemon_client.ServerInfo;"
        "print('daemon_client.protocol.frame_models' in sys.modules);"
        "daemon_client.Client('localhost:6767');"  # a client builds its hello at once
        "print('daemon_client.protocol.frame_models' in sys.modules)"
    )
    assert _run(code).split() == ["False", "True"]


def test_the_first_frame_that_needs_them_imports_them() -> None:
    code = (
        "import sys; from daemon_client.protocol.codec import decode_frame;"
        'frame = decode_frame(\'{"type":"pong"}\');'
        "print('daemon_client.protocol.frame_models' in sys.modules, type(frame).__name__)"
    )
    assert _run(code) == "True Pong"


def test_the_old_names_are_the_same_classes() -> None:
    for name in ("Hello", "HelloRejected", "PasswordAuth", "Ping", "Pong", "RpcErrorPayload", "SessionPing",
                 "StatusPayload"):  # fmt: skip
        cls = getattr(frame_models, name)
        assert getattr(models, name) is cls
        assert getattr(protocol, name) is cls
        assert attrs.has(cls)
    assert protocol.InboundFrame == models.InboundFrame
    assert set(models.InboundFrame.__args__) == {frame_models.Pong, frame_models.HelloRejected, models.SessionMessage,
                                                 models.UnknownMessage}  # fmt: skip


def test_unknown_names_are_still_attribute_errors() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'Nothing'"):
        models.Nothing  # noqa: B018
    with pytest.raises(AttributeError, match="has no attribute 'Nothing'"):
        protocol.Nothing  # noqa: B018


def test_decoded_top_level_frames_keep_their_types_and_values() -> None:
    pong = codec.decode_frame('{"type":"pong"}')
    assert isinstance(pong, frame_models.Pong)
    assert codec.decode_frame('{"type":"pong"}') is pong  # one instance: the frame has no fields
    rejected = codec.decode_frame('{"type":"hello.rejected","reason":"too old","accepts":["v2",3]}')
    assert rejected == frame_models.HelloRejected(reason="too old", accepts=("v2", "3"))
    assert codec.parse_status({"status": "brand_new"}) == frame_models.StatusPayload(
        "brand_new", {"status": "brand_new"}
    )
    assert pickle.loads(pickle.dumps(rejected)) == rejected
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        rejected.reason = "changed"  # type: ignore[misc]
