"""A credential is scrubbed from a trace wherever it occurs in a frame: as a value, inside a
string, and as an object's key (at any depth)."""

from __future__ import annotations

from daemon_client.transport.trace_scrub import REDACTED, Secrets

PASSWORD = "hunter2-correct-horse"


def test_a_password_used_as_a_key_is_scrubbed_at_any_depth() -> None:
    secrets = Secrets([PASSWORD])
    frame = {"type": "session", "message": {"payload": {PASSWORD: 1, "nested": [{f"x-{PASSWORD}": "v"}]}}}
    scrubbed = secrets.value(frame)
    assert PASSWORD not in repr(scrubbed)
    assert scrubbed["message"]["payload"][REDACTED] == 1
    assert scrubbed["message"]["payload"]["nested"] == [{f"x-{REDACTED}": "v"}]
    assert PASSWORD in repr(frame)  # the input is kept


def test_two_keys_that_differ_only_in_a_password_stay_two_keys() -> None:
    secrets = Secrets([PASSWORD])
    scrubbed = secrets.value({f"a{PASSWORD}": 1, f"a{REDACTED}": 2})
    assert sorted(scrubbed.values()) == [1, 2]
    assert PASSWORD not in repr(scrubbed)
