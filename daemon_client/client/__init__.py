"""The composition root: :class:`Client` and :func:`connect` build and wire the layers of one
client (``composition``), with the credentials plan (``credentials``) and the user-facing
namespaces (``namespaces``). Importing this package imports the client machinery; the public
names are re-exported by :mod:`daemon_client`.
"""

from __future__ import annotations

from daemon_client.client.composition import Client, connect

__all__ = ["Client", "connect"]
