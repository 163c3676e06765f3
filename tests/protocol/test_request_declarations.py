"""Requests declared once: the catalog, what the request path reads from it (reply matchers,
default timeouts, which ``status`` is a reply), host gating before sending, and the fake
daemon's registrations by declaration."""

from __future__ import annotations

import json
import subprocess
import sys
import types
from pathlib import Path

import pytest

import daemon_client as dc
from daemon_client.protocol import requests as declared
from daemon_client.protocol.hosts import HostKind
from daemon_client.protocol.replies import default_timeout_for, is_reply, reply_for
from daemon_client.protocol.requests import (
    ALL_HOSTS,
    CATALOG,
    FeatureGate,
    RequestSpec,
    TimeoutClass,
    request_table,
    spec_for,
)
from daemon_client.protocol.requests import workspaces as workspace_requests
from daemon_client.protocol.workspace_labels import parse_label_catalog
from daemon_client.testing.fake.engine.handlers import KNOWN_REQUESTS, HandlerRegistry, reply_type_for

GATED = RequestSpec(
    "thing.list.request", "test", feature=FeatureGate("thingList", "list things", "1.2.3"),
    hosts=frozenset({HostKind.CAPABLE}),
)  # fmt: skip


def test_every_declared_request_is_in_the_catalog_once_under_its_type() -> None:
    declarations = [spec for family in declared.FAMILIES for spec in family.REQUESTS]
    assert len(declarations) == len(CATALOG)
    assert all(CATALOG[spec.type] is spec for spec in declarations)
    assert spec_for("workspace.label.list.request") is workspace_requests.LIST_LABELS
    assert spec_for("no_such_request") is None


def test_a_type_declared_twice_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    twice = types.SimpleNamespace(REQUESTS=(GATED, RequestSpec(GATED.type, "other")))
    monkeypatch.setattr(declared, "FAMILIES", (twice,))
    with pytest.raises(ValueError, match=r"thing\.list\.request is declared twice"):
        declared._catalog()


def test_the_request_path_reads_matchers_and_timeouts_from_the_declarations() -> None:
    for spec in CATALOG.values():
        assert reply_for(spec.type) is spec.reply
        expected = spec.timeout.seconds if spec.timeout is not None else 42.0
        assert default_timeout_for(spec.type, 42.0) == expected
    assert reply_for("ping").type == "pong"
    assert reply_for("archive_agent_request").type == "agent_archived"
    assert reply_for("create_agent_request").statuses == frozenset({"agent_created", "agent_create_failed"})


def test_undeclared_types_fall_back_to_the_naming_rule_and_the_callers_default() -> None:
    assert reply_for("x_request").type == "x_response"
    assert reply_for("x.y.request").type == "x.y.response"
    assert reply_for("a/b").type == "a/b/response"
    assert reply_for("bare").type == "bare_response"
    assert default_timeout_for("set_agent_colour_request", 60.0) == 15.0
    assert default_timeout_for("x.y.request", 60.0) == 60.0


def test_only_the_declared_statuses_answer_a_request() -> None:
    assert is_reply("status", {"status": "agent_created"})
    assert is_reply("status", {"status": "restart_requested"})
    assert not is_reply("status", {"status": "agent_update"})
    assert is_reply("workspace.label.list.response", {})


def test_a_declaration_fills_in_its_reply_and_builds_its_message() -> None:
    spec = RequestSpec("thing.get.request", "test")
    assert spec.reply.type == "thing.get.response"
    assert spec.hosts == ALL_HOSTS
    assert spec.message(id="t", cursor=None) == {"type": "thing.get.request", "id": "t"}
    assert TimeoutClass.READ.seconds == 15.0


def test_a_parser_is_imported_on_first_use_and_kept() -> None:
    spec = RequestSpec("thing.read.request", "test", parse="json:loads")
    parser = spec.parser()
    assert parser is json.loads
    assert spec.parser() is parser
    assert RequestSpec("plain_request", "test").parser() is None
    assert workspace_requests.LIST_LABELS.parser() is parse_label_catalog


def test_a_host_lacking_a_declared_request_is_told_before_sending() -> None:
    RequestSpec("free_request", "test").check_host(None, None, None)  # ungated: nothing to ask
    GATED.check_host(HostKind.CAPABLE, {"thingList": True}, "1.2.3")
    GATED.check_host(None, {"thingList": True}, None)  # kind not decided yet: the flag decides
    with pytest.raises(dc.NotConnected, match="list things"):
        GATED.check_host(None, None, None)
    with pytest.raises(dc.UnsupportedByHost, match=r"capable hosts only; this daemon is a broadcast host") as kind:
        GATED.check_host(HostKind.BROADCAST, {"thingList": True}, None)
    assert (kind.value.feature, kind.value.version) == ("thingList", "1.2.3")
    with pytest.raises(dc.UnsupportedByHost, match=r"features\.thingList \(Paseo 1\.2\.3 or newer\); Paseo 1\.0 does"):
        GATED.check_host(HostKind.CAPABLE, {}, "1.0")
    hosts_only = RequestSpec("kinds_request", "test", hosts=frozenset({HostKind.CAPABLE}))
    with pytest.raises(dc.UnsupportedByHost, match="send kinds_request") as bare:
        hosts_only.check_host(HostKind.SELECTIVE, {}, "0.1.108")
    assert (bare.value.feature, bare.value.version) == (None, None)


def test_exists_on_reads_kinds_and_flags() -> None:
    assert GATED.exists_on(HostKind.CAPABLE, {"thingList": True})
    assert not GATED.exists_on(HostKind.CAPABLE, {"thingList": False})
    assert not GATED.exists_on(HostKind.SELECTIVE, {"thingList": True})


def test_the_request_table_has_one_row_per_declaration() -> None:
    rows = [line for line in request_table().splitlines() if line.startswith("| ") and "`" in line]
    assert len(rows) == len(CATALOG)
    labels = next(row for row in rows if "workspace.label.list.request" in row)
    assert "`features.workspaceLabels` (0.5.0+) | capable, selective | `client.workspaces.labels()`" in labels
    assert any("`status` `agent_create_failed` / `agent_created`" in row for row in rows)
    assert any("| client default |" in row for row in rows)


def test_the_fake_validates_and_names_replies_by_the_declarations() -> None:
    for spec in CATALOG.values():
        assert KNOWN_REQUESTS[spec.type].required == spec.required
    assert KNOWN_REQUESTS["cancel_agent_request"].request_id_optional
    assert reply_type_for("delete_agent_request") == "agent_deleted"
    assert reply_type_for("create_agent_request") == "create_agent_response"  # status replies name their type
    assert reply_type_for("custom.request") == "custom.response"


def test_the_fake_serves_a_declared_request_only_where_the_declaration_has_it() -> None:
    registry = HandlerRegistry()

    def handler(ctx: object) -> None:
        raise AssertionError("not called here")

    assert not registry.serve(GATED, handler, host_kind=HostKind.SELECTIVE, features={"thingList": True})
    assert registry.handler_for(GATED.type) is None
    assert registry.serve(GATED, handler, host_kind=HostKind.CAPABLE, features={"thingList": True})
    assert registry.handler_for(GATED.type) is handler


def test_declaring_the_requests_loads_none_of_their_models() -> None:
    code = (
        "import sys, daemon_client.protocol.replies\n"
        "loaded = [name for name in ('daemon_client.protocol.timeline', 'daemon_client.protocol.provider_usage',"
        " 'daemon_client.protocol.workspace_labels') if name in sys.modules]\n"
        "print(','.join(loaded))"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60, cwd=root
    )
    assert done.stdout.strip() == ""
