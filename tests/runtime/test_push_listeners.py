"""Push listeners of one type: removing one leaves the others hearing every push."""

from __future__ import annotations

from daemon_client.testing import RecordingHandler


def test_removing_one_listener_of_a_type_keeps_the_others(fakes, make_client) -> None:
    fake = fakes()
    client = make_client(fake)
    client.connect()
    kept: RecordingHandler[object] = RecordingHandler("kept")
    removed: RecordingHandler[object] = RecordingHandler("removed")
    client.add_push_listener(kept, ["custom_push"])
    remove = client.add_push_listener(removed, ["custom_push", "other_push"])
    fake.push("custom_push", {"n": 1})
    kept.wait_for(1)
    removed.wait_for(1)
    remove()
    fake.push("custom_push", {"n": 2})
    fake.push("other_push", {"n": 3})
    client.ping()
    assert client.flush_callbacks()
    assert [message.payload["n"] for message in kept.items] == [1, 2]
    assert [message.payload["n"] for message in removed.items] == [1]
