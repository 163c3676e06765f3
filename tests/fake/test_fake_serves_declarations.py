"""The fake daemon serves the declared requests exactly where their declarations say a host has
them, and validates them as declared.

For every declaration of the catalog and a fake of every host kind (with its default features,
with every declared flag on, with every declared flag off), the fake has a handler exactly when
``spec.exists_on(kind, features)``, apart from the requests listed in :data:`NOT_SERVED`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pytest

from daemon_client.protocol.hosts import HostKind
from daemon_client.protocol.requests import CATALOG
from daemon_client.testing.fake.daemon import DEFAULT_FEATURES, FakeDaemon

NOT_SERVED: Mapping[str, str] = {
    "restart_server_request": "out of scope (protocol.md 2.2); tests restart the fake with fake.restart()",
    "shutdown_server_request": "out of scope (protocol.md 2.2); tests end the fake with fake.close()",
    "fetch_agent_history_request": "no API call sends it; the fake keeps no history of archived agents",
    "import_agent_request": "out of scope for v1 (protocol.md 2.2); no API call sends it",
    "resume_agent_request": "low-level only (protocol-surface.md 12.4.8); the fake has no persisted sessions",
    "refresh_agent_request": "low-level only (protocol-surface.md 12.4.8); the fake has no persisted sessions",
}
"""Declared requests the fake deliberately has no handler for on any host, and why."""

UNDECLARED = frozenset(
    {"agent_permission_response", "terminal_input", "unsubscribe_terminal_request", "unsubscribe_terminals_request"}
)
"""Types the fake serves without a declaration: messages the client sends without awaiting a reply."""

FLAGS = sorted({spec.feature.flag for spec in CATALOG.values() if spec.feature is not None})

FEATURE_SETS: Mapping[str, Mapping[str, bool] | None] = {
    "defaults": None,
    "every flag on": dict.fromkeys(FLAGS, True),
    "every flag off": dict.fromkeys(FLAGS, False),
}


@pytest.mark.parametrize("features", list(FEATURE_SETS))
@pytest.mark.parametrize("kind", list(HostKind), ids=lambda kind: kind.value)
def test_a_fake_serves_a_declared_request_exactly_where_its_declaration_has_it(
    fakes: Callable[..., FakeDaemon], kind: HostKind, features: str
) -> None:
    fake = fakes(kind, features=FEATURE_SETS[features])
    reported = fake.config.effective_features
    served = fake.registry.request_types
    wrong = [
        f"{spec.type}: served={spec.type in served}, declared={spec.exists_on(kind, reported)}"
        for spec in CATALOG.values()
        if spec.type not in NOT_SERVED and (spec.type in served) != spec.exists_on(kind, reported)
    ]
    assert wrong == []
    assert served & set(NOT_SERVED) == set()
    assert served - set(CATALOG) == UNDECLARED


@pytest.mark.parametrize("kind", list(HostKind), ids=lambda kind: kind.value)
def test_a_served_request_is_validated_as_declared(fakes: Callable[..., FakeDaemon], kind: HostKind) -> None:
    fake = fakes(kind, features=dict.fromkeys(FLAGS, True))
    wrong = []
    for request_type in sorted(fake.registry.request_types & set(CATALOG)):
        spec, schema = CATALOG[request_type], fake.registry.schema_for(request_type)
        assert schema is not None
        if (schema.required, schema.request_id_optional) != (spec.required, spec.request_id_optional):
            wrong.append(f"{request_type}: fake {schema.required}, declared {spec.required}")
    assert wrong == []


def test_the_exceptions_are_declared_requests_on_every_host() -> None:
    for request_type in NOT_SERVED:
        spec = CATALOG[request_type]
        assert all(spec.exists_on(kind, DEFAULT_FEATURES[kind]) for kind in HostKind), request_type
