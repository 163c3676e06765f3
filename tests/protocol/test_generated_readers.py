"""The readers :mod:`daemon_client.protocol.reader_codegen` generates for each model keep the
lenient rule of :mod:`daemon_client.protocol.lenient` in every case their code spells out:
defaults made fresh per object, identities missing inside nested fields and lists, unions,
integral and fractional floats, unknown keys, models that build through their own ``__init__``
(validators, ``__attrs_post_init__``, keyword-only and ``init=False`` fields), models that
contain themselves, and two threads preparing one model at once.
"""

from __future__ import annotations

import copy
import logging
import pickle
import sys
import threading
from typing import Any

import attrs
import pytest

import daemon_client as dc
from daemon_client.protocol.lenient import MissingIdentity, skipped_entries, structure, structure_each

LENIENT_LOG = "daemon_client.protocol"


def _messages(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LENIENT_LOG and r.levelno == level]


def _fresh() -> list[str]:
    return ["made"]


@attrs.frozen
class Defaults:
    id: str
    tags: dict[str, Any] = attrs.field(factory=dict)
    names: list[str] = attrs.field(factory=list)
    made: list[str] = attrs.field(factory=_fresh)
    shared: tuple[str, ...] = ("a", "b")
    extra_fields: dict[str, Any] = attrs.field(factory=dict)


def test_a_factory_default_is_a_fresh_value_for_every_object() -> None:
    first, second = structure({"id": "d1"}, Defaults), structure({"id": "d2", "tags": None}, Defaults)
    assert (first.tags, first.names, first.made) == ({}, [], ["made"])
    assert first.tags is not second.tags
    assert first.names is not second.names
    assert first.made is not second.made
    assert first.extra_fields is not second.extra_fields
    assert first.shared is Defaults.__attrs_attrs__.shared.default  # a plain default is the default itself


def test_a_read_object_equals_the_one_its_init_builds() -> None:
    read = structure({"id": "d1", "tags": {"k": 1}, "names": ["x"], "shared": ["c"]}, Defaults)
    assert read == Defaults(id="d1", tags={"k": 1}, names=["x"], shared=("c",))
    assert repr(read) == repr(Defaults(id="d1", tags={"k": 1}, names=["x"], shared=("c",)))
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        read.id = "other"  # type: ignore[misc]


def test_a_read_object_is_a_plain_instance_of_its_model() -> None:
    read = structure({"id": "d1", "names": ["x"]}, Defaults)
    assert type(read) is Defaults
    assert read.__class__ is Defaults
    assert pickle.loads(pickle.dumps(read)) == read
    assert copy.copy(read) == read
    assert attrs.evolve(read, id="d2") == Defaults(id="d2", names=["x"])
    with pytest.raises(AttributeError):
        del read.id


_subclassed: list[type[Any]] = []


@attrs.frozen
class Hooked:
    """A model whose subclass hook must not run when it is read."""

    id: str
    note: str = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _subclassed.append(cls)


def test_a_model_with_a_subclass_hook_reads_without_running_it() -> None:
    assert structure({"id": "h1", "note": "n"}, Hooked) == Hooked(id="h1", note="n")
    assert _subclassed == []


@attrs.frozen
class Part:
    id: str
    size: int = 0
    extra_fields: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class Holder:
    part: Part
    label: str = ""


@attrs.frozen
class Assembly:
    id: str
    main: Part | None = None
    parts: tuple[Part, ...] = ()
    spares: list[Part] = attrs.field(factory=list)
    holder: Holder | None = None
    extra_fields: dict[str, Any] = attrs.field(factory=dict)


@pytest.mark.parametrize("main", [{"size": 1}, {"id": None, "size": 1}, {"id": 7}])
def test_an_object_without_a_usable_identity_in_a_field_is_kept_raw(main: dict[str, Any]) -> None:
    assembly = structure({"id": "a1", "main": main}, Assembly)
    assert assembly.main is None
    assert assembly.extra_fields == {"main": main}


def test_an_identity_missing_two_levels_down_names_the_path_and_the_field(caplog) -> None:
    caplog.set_level(logging.DEBUG, logger=LENIENT_LOG)
    assembly = structure({"id": "a1", "holder": {"part": {"size": 2}, "label": "h"}}, Assembly)
    assert assembly.holder is None
    assert assembly.extra_fields == {"holder": {"part": {"size": 2}, "label": "h"}}
    assert any(
        m.startswith('Assembly.holder kept raw at Assembly "a1": cannot read Holder') and "'part.id'" in m
        for m in _messages(caplog, logging.DEBUG)
    )
    with pytest.raises(MissingIdentity) as failure:
        structure({"part": {"id": None}}, Holder)
    assert (failure.value.model, failure.value.field) == ("Holder", "part.id")
    assert failure.value.where.startswith("Holder in ")


def test_list_entries_without_identity_are_skipped_counted_and_the_list_kept_raw(caplog) -> None:
    raw = [{"id": "p1"}, {"size": 2}, "p3", {"id": "p4", "size": "big"}]
    before = skipped_entries().get("Part", 0)
    assembly = structure({"id": "a1", "parts": raw, "spares": raw}, Assembly)
    assert [part.id for part in assembly.parts] == ["p1", "p4"]
    assert [part.id for part in assembly.spares] == ["p1", "p4"]
    assert type(assembly.spares) is list
    assert assembly.parts[1].extra_fields == {"size": "big"}
    assert assembly.extra_fields == {"parts": raw, "spares": raw}
    assert skipped_entries()["Part"] == before + 4
    warnings = _messages(caplog, logging.WARNING)
    assert any("skipped Part at Assembly \"a1\" › parts[1] (no usable 'id')" in w for w in warnings)
    assert any('skipped Part at Assembly "a1" › spares[2] (it is not an object): "p3"' in w for w in warnings)


def test_a_kept_raw_value_is_logged_with_its_location(caplog) -> None:
    caplog.set_level(logging.DEBUG, logger=LENIENT_LOG)
    structure({"id": "a1", "parts": [{"id": "p0"}, {"id": "p1", "size": 3.5}]}, Assembly)
    assert any(
        m == 'Part.size kept raw at Assembly "a1" › parts[1] "p1": not an integer'
        for m in _messages(caplog, logging.DEBUG)
    )


def test_entries_of_a_top_level_list_are_located_by_index(caplog) -> None:
    parts = structure_each([{"id": "p1"}, {"size": 1}], Part, "parts")
    assert parts == (Part(id="p1"),)
    assert any("skipped Part at parts[1] (no usable 'id')" in w for w in _messages(caplog, logging.WARNING))


@attrs.frozen
class Numbers:
    id: str
    count: int = 0
    ratio: float = 0.0
    either: int | str | None = None
    number: float | int | None = None
    whole: int | float | None = None
    name: str | None = None
    flag: bool | None = None
    extra_fields: dict[str, Any] = attrs.field(factory=dict)


def _numbers(**fields: Any) -> Numbers:
    return structure({"id": "n1", **fields}, Numbers)


def test_an_integral_float_where_an_integer_belongs_is_read_as_an_integer() -> None:
    read = _numbers(count=3.0, ratio=2)
    assert (read.count, type(read.count)) == (3, int)
    assert (read.ratio, type(read.ratio)) == (2.0, float)
    assert read.extra_fields == {}


def test_a_fraction_where_an_integer_belongs_is_kept_raw(caplog) -> None:
    caplog.set_level(logging.DEBUG, logger=LENIENT_LOG)
    read = _numbers(count=3.5)
    assert read.count == 0
    assert read.extra_fields == {"count": 3.5}
    assert 'Numbers.count kept raw at Numbers "n1": not an integer' in _messages(caplog, logging.DEBUG)


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"either": 4}, {"either": 4}),
        ({"either": "four"}, {"either": "four"}),
        ({"either": 4.0}, {"either": 4}),
        ({"number": 3}, {"number": 3.0}),  # float first: an integer is taken as a float
        ({"whole": 2.0}, {"whole": 2}),  # int first: an integral float is taken as an integer
        ({"whole": 2.5}, {"whole": 2.5}),
        ({"name": "n"}, {"name": "n"}),
        ({"flag": False}, {"flag": False}),
    ],
)
def test_a_union_field_takes_the_first_of_its_types_that_fits(fields: dict[str, Any], expected: dict[str, Any]) -> None:
    read = _numbers(**fields)
    assert {key: getattr(read, key) for key in expected} == expected
    assert {key: type(getattr(read, key)) for key in expected} == {key: type(v) for key, v in expected.items()}
    assert read.extra_fields == {}


@pytest.mark.parametrize(
    "fields", [{"either": [4]}, {"number": "3"}, {"name": 5}, {"flag": 1}, {"count": True}, {"ratio": "x"}]
)
def test_a_value_no_type_of_its_field_takes_is_kept_raw(fields: dict[str, Any]) -> None:
    read = _numbers(**fields)
    (key,) = fields
    assert getattr(read, key) == attrs.fields_dict(Numbers)[key].default
    assert read.extra_fields == fields


def test_unknown_keys_are_kept_after_the_values_kept_raw() -> None:
    read = _numbers(newer="x", count="many", also={"deep": [1]}, name=None)
    assert read.name is None
    assert read.extra_fields == {"count": "many", "newer": "x", "also": {"deep": [1]}}
    assert list(read.extra_fields) == ["count", "newer", "also"]


def test_a_model_without_extra_fields_ignores_unknown_keys() -> None:
    assert structure({"part": {"id": "p1"}, "newer": 1, "label": 5}, Holder) == Holder(part=Part(id="p1"))


def _positive(instance: Any, attribute: Any, value: int) -> None:
    if value < 0:
        raise ValueError(f"{attribute.name} must be >= 0")


@attrs.frozen
class Checked:
    id: str
    size: int = attrs.field(default=0, validator=_positive)
    seen: list[str] = attrs.field(factory=list)

    def __attrs_post_init__(self) -> None:
        if self.id == "refused":
            raise ValueError("refused id")
        self.seen.append(self.id)


@attrs.frozen
class Uses:
    id: str
    checked: Checked | None = None
    extra_fields: dict[str, Any] = attrs.field(factory=dict)


def test_a_model_with_its_own_checks_is_built_through_its_init() -> None:
    read = structure({"id": "c1", "size": 2}, Checked)
    assert read.seen == ["c1"]  # __attrs_post_init__ ran
    with pytest.raises(dc.ProtocolError, match="cannot read Checked from the daemon's payload: size must be >= 0"):
        structure({"id": "c1", "size": -1}, Checked)
    with pytest.raises(dc.ProtocolError, match="refused id"):
        structure({"id": "refused"}, Checked)


@pytest.mark.parametrize("checked", [{"id": "c1", "size": -1}, {"id": "refused"}])
def test_a_value_a_model_refuses_in_a_field_is_kept_raw(checked: dict[str, Any]) -> None:
    read = structure({"id": "u1", "checked": checked}, Uses)
    assert read.checked is None
    assert read.extra_fields == {"checked": checked}


@attrs.frozen
class Keyed:
    id: str
    mode: str = attrs.field(default="on", kw_only=True)
    note: str = ""
    computed: str = attrs.field(init=False, default="fixed")


def test_keyword_only_and_init_false_fields_read_as_the_init_takes_them() -> None:
    read = structure({"id": "k1", "mode": "off", "note": "n"}, Keyed)
    assert (read.id, read.mode, read.note, read.computed) == ("k1", "off", "n", "fixed")
    assert structure({"id": "k1"}, Keyed).mode == "on"
    with pytest.raises(dc.ProtocolError, match="cannot read Keyed"):
        structure({"id": "k1", "computed": "given"}, Keyed)  # its __init__ takes no such argument


@attrs.frozen
class Node:
    id: str
    children: tuple[Node, ...] = ()
    parent: Node | None = None


def test_a_model_that_contains_itself_reads_at_every_depth() -> None:
    tree = structure({"id": "a", "children": [{"id": "b", "children": [{"id": "c"}]}], "parent": {"id": "z"}}, Node)
    assert tree == Node("a", (Node("b", (Node("c"),)),), Node("z"))


@attrs.frozen
class RaceInner:
    """Read only by the test below, so its reader is prepared there."""

    id: str
    value: int | None = None
    extra_fields: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class RaceOuter:
    """Read only by the test below, so its reader is prepared there."""

    id: str
    inner: RaceInner | None = None
    inners: tuple[RaceInner, ...] = ()
    extra_fields: dict[str, Any] = attrs.field(factory=dict)


def test_threads_preparing_one_model_at_once_read_it_alike() -> None:
    inner_cls, outer_cls = RaceInner, RaceOuter
    payload = {"id": "o1", "inner": {"id": "i1", "value": 2.0}, "inners": [{"id": "i2", "value": "x"}], "new": 1}
    expected = outer_cls(
        id="o1",
        inner=inner_cls(id="i1", value=2),
        inners=(inner_cls(id="i2", extra_fields={"value": "x"}),),
        extra_fields={"new": 1},
    )
    start = threading.Barrier(8)
    results: list[Any] = []
    errors: list[BaseException] = []

    def read() -> None:
        try:
            start.wait(5)
            for _ in range(20):
                results.append(structure(payload, outer_cls))
        except BaseException as exc:  # reported below
            errors.append(exc)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=read, name=f"prepare-{n}") for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
    finally:
        sys.setswitchinterval(interval)
    assert not [thread for thread in threads if thread.is_alive()]
    assert errors == []
    assert len(results) == 160
    assert all(result == expected for result in results)
