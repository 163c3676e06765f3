"""The lenient reading rule of :mod:`daemon_client.protocol.lenient` on every kind of field type.

The daemon's models use only some of the field types the rule supports (unions of several
types, number fields, sequences of scalars, typed maps, types read by cattrs); these small
models exercise the rest, so a model that starts using one behaves as documented. A lenient integer
field takes an integral float (``2.0``, as some JSON encoders write it) and refuses a fractional one
(``1.5``) instead of truncating it.
"""

from __future__ import annotations

import enum
import logging
from typing import Any, Literal

import attrs
import pytest

import daemon_client as dc
from daemon_client.protocol.lenient import (
    MissingIdentity,
    identity_fields,
    report_skipped,
    structure,
    structure_each,
    structure_optional,
)

LENIENT_LOG = "daemon_client.protocol"


class Tone(enum.Enum):
    LOW = "low"
    HIGH = "high"


@attrs.frozen
class Gauge:
    id: str
    level: float = 0.0
    either: int | str | None = None
    note: Any = None
    counts: tuple[int, ...] = ()
    limits: dict[str, int] = attrs.field(factory=dict)
    groups: dict[str, tuple[int, ...]] = attrs.field(factory=dict)
    meta: dict[str, Any] = attrs.field(factory=dict)
    tone: Tone | None = None
    mode: Literal["on", "off"] | None = None
    pair: tuple[int, str] | None = None
    extra_fields: dict[str, Any] = attrs.field(factory=dict)


def _read(**fields: Any) -> Gauge:
    return structure({"id": "g1", **fields}, Gauge)


def test_a_number_field_takes_integers_as_floats_and_keeps_other_values_raw() -> None:
    assert _read(level=3).level == 3.0
    assert type(_read(level=3).level) is float
    gauge = _read(level="high")
    assert gauge.level == 0.0
    assert gauge.extra_fields == {"level": "high"}


def test_a_union_field_takes_the_first_type_that_fits() -> None:
    assert _read(either=4).either == 4
    assert _read(either="four").either == "four"
    gauge = _read(either=[4])
    assert gauge.either is None
    assert gauge.extra_fields == {"either": [4]}


def test_a_field_of_any_type_keeps_the_value_as_it_came() -> None:
    gauge = _read(note={"free": ["form"]})
    assert gauge.note == {"free": ["form"]}
    assert gauge.extra_fields == {}


def test_a_sequence_of_scalars_drops_unfit_elements_silently_and_keeps_the_raw_list(caplog) -> None:
    caplog.set_level(logging.DEBUG, logger=LENIENT_LOG)
    gauge = _read(counts=[1, "two", 3.0])
    assert gauge.counts == (1, 3)
    assert gauge.extra_fields == {"counts": [1, "two", 3.0]}
    # Only objects with an identity are reported as skipped; a bad scalar is not an entry.
    assert not [r for r in caplog.records if r.getMessage().startswith("skipped")]


def test_a_typed_map_keeps_the_readable_values_and_the_raw_map() -> None:
    gauge = _read(limits={"cpu": 2, "mem": "lots"})
    assert gauge.limits == {"cpu": 2}
    assert gauge.extra_fields == {"limits": {"cpu": 2, "mem": "lots"}}


def test_a_map_of_sequences_keeps_the_readable_part_of_each_value() -> None:
    gauge = _read(groups={"a": [1, "x", 2], "b": [3]})
    assert gauge.groups == {"a": (1, 2), "b": (3,)}
    assert gauge.extra_fields == {"groups": {"a": [1, "x", 2], "b": [3]}}


@pytest.mark.parametrize("field", ["limits", "meta"])
def test_a_map_field_given_something_else_gets_its_default(field: str) -> None:
    gauge = _read(**{field: ["not", "a", "map"]})
    assert getattr(gauge, field) == {}
    assert gauge.extra_fields == {field: ["not", "a", "map"]}


def test_a_map_of_anything_is_copied() -> None:
    meta = {"k": [1, {"deep": None}]}
    gauge = _read(meta=meta)
    assert gauge.meta == meta
    assert gauge.meta is not meta


def test_enum_literal_and_fixed_tuple_fields_are_read_by_cattrs() -> None:
    gauge = _read(tone="high", mode="on", pair=[1, "b"])
    assert (gauge.tone, gauge.mode, gauge.pair) == (Tone.HIGH, "on", (1, "b"))
    assert gauge.extra_fields == {}


def test_enum_and_literal_values_cattrs_refuses_are_kept_raw(caplog) -> None:
    caplog.set_level(logging.DEBUG, logger=LENIENT_LOG)
    gauge = _read(tone="medium", mode="maybe")
    assert (gauge.tone, gauge.mode) == (None, None)
    assert gauge.extra_fields == {"tone": "medium", "mode": "maybe"}
    kept = [r.getMessage() for r in caplog.records if "kept raw" in r.getMessage()]
    assert any(m.startswith("Gauge.tone kept raw at Gauge") for m in kept)


def test_a_top_level_payload_that_is_not_an_object_raises_a_protocol_error() -> None:
    with pytest.raises(dc.ProtocolError, match="cannot read Gauge from the daemon's payload: not an object") as failure:
        structure(["g1"], Gauge)
    assert not isinstance(failure.value, MissingIdentity)


def test_structure_optional_gives_none_for_absent_or_unreadable_objects(caplog) -> None:
    caplog.set_level(logging.DEBUG, logger=LENIENT_LOG)
    assert structure_optional(None, Gauge, "gauge") is None
    assert structure_optional("g1", Gauge, "gauge") is None
    assert structure_optional({"level": 1.5}, Gauge, "gauge") is None
    assert any(
        r.levelno == logging.DEBUG and r.getMessage().startswith("Gauge at gauge not read") and "'id'" in r.getMessage()
        for r in caplog.records
    )
    read = structure_optional({"id": "g2", "level": 1.5}, Gauge, "gauge")
    assert read == Gauge(id="g2", level=1.5)


def test_structure_each_reads_a_missing_list_as_empty() -> None:
    assert structure_each(None, Gauge, "gauges") == ()


def test_a_skipped_entry_that_cannot_be_shown_as_json_is_shown_by_repr(caplog) -> None:
    loop: list[Any] = ["loop"]
    loop.append(loop)
    report_skipped("Gauge", None, ("gauges[0]",), loop)
    (warning,) = [r.getMessage() for r in caplog.records if r.name == LENIENT_LOG and r.levelno == logging.WARNING]
    assert warning == "skipped Gauge at gauges[0] (it is not an object): ['loop', [...]]"


def test_identity_fields_are_remembered_per_model() -> None:
    assert identity_fields(Gauge) == ("id",)
    assert identity_fields(Gauge) == ("id",)


@attrs.frozen
class Part:
    id: str
    size: int = attrs.field(default=0, validator=attrs.validators.ge(0))


@attrs.frozen
class Assembly:
    id: str
    parts: tuple[Part, ...] = ()
    main: Part | None = None
    extra_fields: dict[str, Any] = attrs.field(factory=dict)


def _skips(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == LENIENT_LOG and r.levelno == logging.WARNING and r.getMessage().startswith("skipped")
    ]


def test_a_list_element_that_is_not_an_object_is_skipped_with_a_warning(caplog) -> None:
    raw = [{"id": "p1"}, "p2", {"id": "p3"}]
    assembly = structure({"id": "a1", "parts": raw}, Assembly)
    assert [part.id for part in assembly.parts] == ["p1", "p3"]
    assert assembly.extra_fields == {"parts": raw}
    assert any('Part at Assembly "a1" › parts[1] (it is not an object): "p2"' in w for w in _skips(caplog))


def test_a_value_the_model_itself_refuses_is_kept_raw_in_a_field_and_raises_at_the_top() -> None:
    assembly = structure({"id": "a1", "main": {"id": "p1", "size": -1}}, Assembly)
    assert assembly.main is None
    assert assembly.extra_fields == {"main": {"id": "p1", "size": -1}}
    with pytest.raises(dc.ProtocolError, match="cannot read Part from the daemon's payload: 'size' must be >= 0"):
        structure({"id": "p1", "size": -1}, Part)


def test_a_list_type_read_at_the_top_keeps_its_readable_entries(caplog) -> None:
    parts = structure([{"id": "p1"}, {"size": 3}, {"id": "p2"}], tuple[Part, ...])
    assert parts == (Part(id="p1"), Part(id="p2"))
    assert any("'id'" in w for w in _skips(caplog))


def test_skips_are_counted_even_when_warnings_are_not_logged(caplog) -> None:
    from daemon_client.protocol.lenient import skipped_entries

    caplog.set_level(logging.ERROR, logger=LENIENT_LOG)
    before = skipped_entries().get("QuietModel", 0)
    report_skipped("QuietModel", "id", ("quiet[0]",), {})
    assert skipped_entries()["QuietModel"] == before + 1
    assert not [r for r in caplog.records if r.name == LENIENT_LOG]


def test_the_memory_of_warned_entries_is_bounded_and_forgets_the_oldest_first(caplog) -> None:
    def skip(n: int) -> None:
        report_skipped("BoundedModel", "id", (f"bounded[{n}]",), {"n": n})

    skip(0)
    for n in range(1, 600):
        skip(n)
    caplog.clear()
    skip(599)  # still remembered: logged at DEBUG only
    assert not _skips(caplog)
    skip(0)  # forgotten: warned about again
    assert _skips(caplog) == ["skipped BoundedModel at bounded[0] (no usable 'id'): {\"n\":0}"]


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
