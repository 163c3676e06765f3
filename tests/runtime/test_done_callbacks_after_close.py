"""A done-callback added to any of the client's futures after ``close()`` runs at once on the
adding thread, and what it raises reaches ``on_callback_error`` like any callback's error
(it used to be only logged for a subscription's ``ready``)."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

import pytest


def _boom(fut: Future[Any]) -> None:
    raise RuntimeError("done-callback bug")


@pytest.mark.parametrize("which", ["request", "timeline ready"])
def test_a_raising_done_callback_after_close_reaches_on_callback_error(fakes, make_client, which: str) -> None:
    fake = fakes("capable")
    errors: list[BaseException] = []
    client = make_client(fake, strict=False, on_callback_error=errors.append)
    client.connect()
    if which == "request":
        future: Future[Any] = client.request_async({"type": "ping"})
    else:
        future = client.agents.ref("a1").timeline.subscribe(lambda update: None).ready
    future.result(5)
    client.close()
    ran: list[str] = []
    future.add_done_callback(_boom)
    future.add_done_callback(lambda fut: ran.append("after"))
    assert ran == ["after"]
    assert [str(e) for e in errors] == ["done-callback bug"]
