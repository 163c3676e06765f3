"""Keep a live cache of the daemon's projects, and fall back on hosts without a project list.

``client.projects.cache()`` subscribes, reads the list, and keeps it current (across
reconnects too); ``on_change`` reports every change. Daemons before v0.2.4 have no project
list: ``cache()`` raises ``UnsupportedByHost`` and ``projects.list()`` derives the projects
from the workspace directory instead (a one-off read, not live).

    python examples/project_cache.py
    python examples/project_cache.py --host-kind broadcast      # an older daemon
"""

from __future__ import annotations

import argparse
import sys

from _embedded import add_common_arguments, daemon, run_for

import daemon_client as dc


def on_change(change: dc.ProjectChange) -> None:
    name = change.project.project_display_name if change.project is not None else ""
    print(f"{change.kind}: {change.project_id} {name}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_arguments(parser)
    args = parser.parse_args(argv)

    with daemon(args) as url, dc.Client(url, password=args.password) as client:
        try:
            cache = client.projects.cache()
        except dc.UnsupportedByHost as exc:
            print(f"no live project cache: {exc}")
            listed = client.projects.list()
            print(f"{len(listed.projects)} projects derived from workspaces (derived={listed.derived}):")
            for project in listed.projects:
                print(f"  {project.project_display_name:<12} {project.project_root_path}")
            return 0
        with cache:
            cache.on_change(on_change)
            print(f"{len(cache)} projects:", flush=True)
            for project in cache:
                print(f"  {project.project_display_name:<12} {project.project_root_path}", flush=True)
            run_for(args)  # changes are printed as they come; `cache` is current on any thread
    return 0


if __name__ == "__main__":
    sys.exit(main())
