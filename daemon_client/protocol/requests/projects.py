"""Project requests (protocol.md 9).

Declarations only (see :mod:`daemon_client.protocol.requests.spec`); read from any thread.
"""

from __future__ import annotations

from daemon_client.protocol.requests.spec import FeatureGate, RequestSpec, TimeoutClass

LIST = RequestSpec(
    "project.list.request", "projects", timeout=TimeoutClass.READ,
    feature=FeatureGate("projectList", "list projects", "0.2.4"), api="client.projects.list()",
)  # fmt: skip
"""Hosts without ``features.projectList`` have no project list; the API derives one (protocol.md 8.2)."""

REQUESTS = (LIST,)
