"""Workspaces: the directory namespace and workspace handles, workspace creation, titles,
worktrees and workspace-scoped agents. Caller's thread for calls, the callback thread for updates."""
