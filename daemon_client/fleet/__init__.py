"""Several daemons followed from one process: :class:`Fleet`, its directory and its executor.

* :mod:`~daemon_client.fleet.fleet`: the :class:`Fleet` (one client per host, one callback
  thread for all of them) and ``fleet.agents``;
* :mod:`~daemon_client.fleet.directory`: one agent directory across hosts, entries tagged by host;
* :mod:`~daemon_client.fleet.executor`: the fleet's callback thread.
"""

from __future__ import annotations

from daemon_client.fleet.directory import FleetDirectory, FleetEntry, FleetEvent
from daemon_client.fleet.executor import SerialExecutor
from daemon_client.fleet.fleet import Fleet, FleetAgents, FleetListing

__all__ = ["Fleet", "FleetAgents", "FleetDirectory", "FleetEntry", "FleetEvent", "FleetListing", "SerialExecutor"]
