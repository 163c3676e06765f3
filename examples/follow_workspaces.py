"""Follow the workspace directory: its snapshot, then every update.

``workspaces.list(subscribe=True)`` reads the directory and keeps observing it. The
``snapshot`` callback gets the current view first and again after every reconnect;
``update`` gets each upsert or removal in order.

    python examples/follow_workspaces.py
    python examples/follow_workspaces.py --url ws://127.0.0.1:6767/ws
"""

from __future__ import annotations

import argparse
import sys

from _embedded import add_common_arguments, daemon, run_for

import daemon_client as dc


def on_snapshot(result: dc.WorkspaceListResult) -> None:
    print(f"snapshot: {len(result.entries)} workspaces", flush=True)
    for workspace in result.entries:
        print(f"  {workspace.name:<12} {workspace.status:<8} {workspace.directory}", flush=True)


def on_update(message: dc.DirectoryMessage[dc.WorkspaceUpdate]) -> None:
    update = message.payload
    if update.kind == "upsert" and update.workspace is not None:
        workspace = update.workspace
        print(f"upsert: {workspace.name} {workspace.status} {workspace.directory}", flush=True)
    else:
        print(f"{update.kind}: {update.workspace_id}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_arguments(parser)
    args = parser.parse_args(argv)

    with daemon(args) as url, dc.Client(url, password=args.password) as client:
        directory = client.workspaces.list(subscribe=True)
        with directory.subscription as observation:
            observation.subscribe(snapshot=on_snapshot, update=on_update, error=lambda exc: print("lost:", exc))
            run_for(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
