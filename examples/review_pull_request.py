"""Check a pull request (or an existing branch) out into a new workspace and have an agent review it.

``workspaces.create(repo, worktree=dc.WorktreeCheckout(pull_request=...))`` makes a Paseo-owned
worktree of the repository on the pull request's head branch; the pull request is given by
number or URL (``--checkout``; anything that is not a number or a pull/merge request URL is a
branch). The first prompt and an attachment go with the creation as the first agent's context,
which the daemon may name the workspace from. ``workspace.agents.create`` then starts the
reviewer in the worktree. A GitHub pull request or a branch works on every daemon; another
forge's change request needs a current one (0.1.65 raises ``UnsupportedByHost``).

    python examples/review_pull_request.py
    python examples/review_pull_request.py --url ws://127.0.0.1:6767/ws --repo ~/src/app \\
        --checkout https://github.com/acme/app/pull/42 --keep
"""

from __future__ import annotations

import argparse
import sys

from _embedded import add_common_arguments, daemon

import daemon_client as dc

DEMO_REPOSITORY = "/home/dev/projects/demo-repo"
"""The git repository the embedded demo daemon knows (its pull request #42 fixes the search)."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_arguments(parser)
    parser.add_argument("--repo", default=DEMO_REPOSITORY, help="a path inside the git repository")
    parser.add_argument("--checkout", default="42", metavar="PR|BRANCH", help="pull request number or URL, or a branch")
    parser.add_argument("--notes", default="Look for missed edge cases.", help="text attached for the reviewer")
    parser.add_argument("--provider", default="mock/ten-second-stream", help="'provider/model' of the agent")
    parser.add_argument("--keep", action="store_true", help="keep the worktree instead of archiving it")
    args = parser.parse_args(argv)
    try:
        checkout = dc.WorktreeCheckout.parse(args.checkout)
    except ValueError as exc:
        parser.error(str(exc))
    what = f"pull request #{checkout.number}" if checkout.number is not None else f"branch {checkout.branch}"
    prompt = f"Review {what} and list what should change before it is merged."

    with daemon(args) as url, dc.Client(url, password=args.password) as client:
        try:
            workspace = client.workspaces.create(
                args.repo, worktree=checkout, first_prompt=prompt,
                attachments=[dc.TextAttachment(text=args.notes, title="Reviewer notes")],
            )  # fmt: skip
        except dc.UnsupportedByHost as exc:
            print(f"this daemon cannot check that out: {exc}")
            return 1
        print(f"checked out {what} as {workspace.name}: {workspace.directory}")
        agent = workspace.agents.create(dc.AgentConfig(provider=args.provider), title=f"Review of {what}")
        result = agent.run(prompt, timeout=args.duration or 600)
        print(f"review: {result.status}, outcome: {result.outcome}")
        print(f"last message: {result.last_message}")
        if not args.keep:
            workspace.archive()
            print("archived the review worktree")
    return 0 if result.outcome == "completed" else 1


if __name__ == "__main__":
    sys.exit(main())
