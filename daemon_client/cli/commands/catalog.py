"""``providers``, ``workspaces`` (and ``workspaces create``, ``workspaces label``), ``projects``: options and help.

What they do is in :mod:`daemon_client.cli.actions.catalog`.
"""

from __future__ import annotations

from daemon_client.cli.argtypes import seconds
from daemon_client.cli.parser import Registry, follow_args, json_arg

DEFAULT_PROVIDER_WAIT = 60.0
CREATE_TIMEOUT = 120.0


def register(registry: Registry) -> None:
    parser = registry.add(
        "providers", "show the provider catalog", "catalog:providers",
        epilog="examples:\n  daemon-client providers --wait\n"
               "  daemon-client providers --json | jq -r '.entries[] | select(.status == \"ready\") | .provider'",
    )  # fmt: skip
    parser.add_argument(
        "--wait", type=seconds, nargs="?", const=DEFAULT_PROVIDER_WAIT, metavar="SECONDS",
        help=f"wait until no provider is loading, at most SECONDS (default {DEFAULT_PROVIDER_WAIT:g}); "
             "exits with status 1 if some still are",
    )  # fmt: skip
    json_arg(parser, "the catalog")
    parser = registry.add(
        "workspaces", "list workspaces (--watch: follow updates)", "catalog:workspaces",
        epilog="example:\n  daemon-client workspaces --json | jq -r '.[].workspaceDirectory'",
    )  # fmt: skip
    parser.add_argument("--watch", action="store_true", help="keep running and print every workspace update")
    json_arg(parser, "the workspaces (with --watch: one JSON document per line)")
    follow_args(parser, duration_help="with --watch: stop after this many seconds")
    group = registry.optional_group(parser, "workspaces")
    _create(group)
    parser = group.add(
        "label", "assign a label to a workspace (--remove: take it off)", "catalog:workspace_label",
        epilog="A label new to the catalog is added with --color; an existing one keeps its own colour.\n"
               "Needs a daemon with workspace labels (Paseo 0.5.0 or newer).\n\n"
               "examples:\n  daemon-client workspaces label ws-4f2a9c Review\n"
               "  daemon-client workspaces label ws-4f2a9c 'Needs design' --color amber\n"
               "  daemon-client workspaces label ws-4f2a9c Review --remove",
    )  # fmt: skip
    parser.add_argument("workspace", help="the workspace's ID (see: daemon-client workspaces)")
    parser.add_argument("label", help="the label's name")
    parser.add_argument("--remove", action="store_true", help="remove the label from the workspace instead")
    parser.add_argument(
        "--color", metavar="COLOR",
        help="the colour of a new label, one of the daemon's palette: violet (the default), sky, emerald, "
             "orange, pink, indigo, teal, red, amber, blue",
    )  # fmt: skip
    json_arg(parser, "the label and the workspace's labels")
    parser = registry.add(
        "projects", "list projects (--watch: follow updates; needs a current daemon)", "catalog:projects",
        epilog="example:\n  daemon-client projects --json | jq -r '.projects[].projectRootPath'",
    )  # fmt: skip
    parser.add_argument("--watch", action="store_true", help="keep running and print every project update")
    json_arg(parser, "the projects (with --watch: one JSON document per line)")
    follow_args(parser, duration_help="with --watch: stop after this many seconds")


def _create(group: Registry) -> None:
    create = group.add(
        "create", "create a workspace: a directory, a new branch's worktree, or a checkout", "catalog:create_workspace",
        epilog="A number or a pull/merge request URL given to --checkout is a pull request; anything else a branch.\n"
               "examples:\n  daemon-client workspaces create ~/src/app --checkout 42\n"
               "  daemon-client workspaces create ~/src/app --checkout https://github.com/acme/app/pull/42\n"
               "  daemon-client workspaces create ~/src/app --checkout release/1.2 --json | jq -r .id",
    )  # fmt: skip
    create.add_argument("cwd", nargs="?", help="the directory, or any path in the repository (default: this one)")
    kind = create.add_mutually_exclusive_group()
    kind.add_argument(
        "--checkout", metavar="PR|BRANCH",
        help="a new worktree that checks out this pull request (number or URL) or existing branch",
    )  # fmt: skip
    kind.add_argument("--branch", metavar="NAME", help="a new worktree on a new branch NAME")
    kind.add_argument("--worktree", action="store_true", help="a new worktree on a branch the daemon names")
    create.add_argument("--base", metavar="REF", help="with --branch/--worktree: the ref to branch off")
    create.add_argument("--title", help="the workspace's title (current daemons)")
    create.add_argument("--prompt", metavar="TEXT", help="what the first agent will do (the daemon may name from it)")
    create.add_argument("--project", metavar="ID", help="the project the directory belongs to (current daemons)")
    json_arg(create, "the created workspace")
    for action in create.recorded:  # a worktree and its setup take longer than a read
        if action.dest == "timeout":
            action.default = CREATE_TIMEOUT
            action.help = f"bound on connecting and on the creation, in seconds (default {CREATE_TIMEOUT:g})"
