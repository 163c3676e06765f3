"""Create a workspace backed by a new git worktree, and run an agent in it.

``workspaces.create(repo, worktree=dc.Worktree(branch=..., base=...))`` makes a Paseo-owned
worktree of the repository on a new branch (current daemons: ``workspace.create.request``;
0.1.65: its worktree request). ``workspace.agents.create`` then starts an agent in the worktree's
directory, tied to the workspace. Archiving the workspace archives the worktree: its agents are
archived and its directory removed.

    python examples/worktree_agent.py
    python examples/worktree_agent.py --url ws://127.0.0.1:6767/ws --repo ~/src/app --branch fix-login --keep
"""

from __future__ import annotations

import argparse
import sys

from _embedded import add_common_arguments, daemon

import daemon_client as dc

DEMO_REPOSITORY = "/home/dev/projects/demo-repo"
"""The git repository the embedded demo daemon knows."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_arguments(parser)
    parser.add_argument("prompt", nargs="?", default="What is the answer?")
    parser.add_argument("--repo", default=DEMO_REPOSITORY, help="a path inside the git repository")
    parser.add_argument("--branch", default="example-worktree", help="the new branch (and worktree directory)")
    parser.add_argument("--base", default=None, help="the ref to branch off (default: the current branch)")
    parser.add_argument("--provider", default="mock/ten-second-stream", help="'provider/model' of the agent")
    parser.add_argument("--keep", action="store_true", help="keep the worktree instead of archiving it")
    args = parser.parse_args(argv)

    with daemon(args) as url, dc.Client(url, password=args.password) as client:
        workspace = client.workspaces.create(args.repo, worktree=dc.Worktree(branch=args.branch, base=args.base))
        print(f"workspace {workspace.name}: {workspace.directory}")
        agent = workspace.agents.create(dc.AgentConfig(provider=args.provider), title="Worktree example")
        snapshot = agent.current()
        print(f"agent {agent.id} in {snapshot.cwd if snapshot is not None else '?'}")
        result = agent.run(args.prompt, timeout=args.duration or 600)
        print(f"status: {result.status}, outcome: {result.outcome}")
        print(f"last message: {result.last_message}")
        listed = [w.branch_name for w in client.workspaces.worktrees(args.repo)]
        print(f"worktrees of the repository: {', '.join(b or '?' for b in listed)}")
        if not args.keep:
            workspace.archive()
            print("archived the worktree and its agent")
    return 0 if result.outcome == "completed" else 1


if __name__ == "__main__":
    sys.exit(main())
