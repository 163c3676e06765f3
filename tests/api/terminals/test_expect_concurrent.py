"""Several threads calling ``expect()`` on one live terminal stream each get their own match."""

from __future__ import annotations

import threading
import time

import pytest

from ...conftest import TRANSPORTS


@pytest.mark.usefixtures("fast_switching")
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_four_waiters_for_the_tokens_of_one_frame_each_get_their_own(fakes, make_client, transport: str) -> None:
    client = make_client(fakes("capable"), transport)
    client.connect()
    terminal = client.terminals.create(cwd="/home/dev/projects/demo")
    tokens = [f"tok-{n};" for n in range(1, 5)]
    results: dict[str, object] = {}
    ready = threading.Barrier(len(tokens) + 1)
    with terminal.stream() as stream:

        def wait_for(token: str) -> None:
            ready.wait(10)
            try:
                results[token] = stream.expect(token, 10).group(0)
            except BaseException as exc:
                results[token] = exc

        threads = [threading.Thread(target=wait_for, args=(token,)) for token in tokens]
        for thread in threads:
            thread.start()
        ready.wait(10)
        deadline = time.monotonic() + 10
        while stream._reader.expecting < 4 and time.monotonic() < deadline:
            time.sleep(0.001)
        terminal.write("".join(tokens))  # echoed as one Output frame
        for thread in threads:
            thread.join(15)
    terminal.kill()
    assert results == {token: token for token in tokens}
