"""A lenient integer field takes an integral float (``2.0``, as some JSON encoders write it) and
refuses a fractional one (``1.5``) instead of truncating it: the field is left unset and the value
kept raw (optional) or the object cannot be read (identity)."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from daemon_client.protocol.lenient import MissingIdentity, structure


@attrs.frozen
class Counted:
    id: str
    count: int | None = None
    extra_fields: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class Numbered:
    number: int


def test_an_integral_float_is_read_as_an_integer() -> None:
    read = structure({"id": "c1", "count": 2.0}, Counted)
    assert read.count == 2
    assert type(read.count) is int


def test_a_lenient_integer_field_given_a_fraction_is_not_truncated() -> None:
    read = structure({"id": "c1", "count": 1.5}, Counted)
    assert read.count is None
    assert read.extra_fields == {"count": 1.5}  # kept as it came, not 1


def test_an_integer_identity_given_a_fraction_makes_the_object_unreadable() -> None:
    with pytest.raises(MissingIdentity, match="no usable 'number'"):
        structure({"number": 1.5}, Numbered)
