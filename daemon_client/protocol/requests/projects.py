"""Project requests (protocol.md 9).

Declarations only (see :mod:`daemon_client.protocol.requests.spec`); read from any thread.
"""

from __future__ import annotations

from daemon_client.protocol.requests.spec import RequestSpec, TimeoutClass

LIST = RequestSpec("project.list.request", "projects", timeout=TimeoutClass.READ, api="client.projects.list()")

REQUESTS = (LIST,)
