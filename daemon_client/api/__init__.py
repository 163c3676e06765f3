"""The user-facing API: what users call through ``client.agents``, ``client.workspaces``,
``client.terminals``, ``client.providers``, ``client.projects`` and ``client.config``.

Every call blocks the caller's thread with a timeout; handle state and listeners are updated on
the callback thread. The API reaches the client's machinery only through
:class:`daemon_client.runtime.context.ClientContext` and the subscription managers it is handed.
Sub-packages: ``agents/``, ``workspaces/``, ``terminals/``, ``providers/``, and ``common/`` (what
they share: local handles, the directory namespace, feature gates).
"""
