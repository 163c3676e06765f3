"""``config get/set`` and ``agent set-mode/set-model/commands``: options and help (work:
:mod:`daemon_client.cli.actions.settings`)."""

from __future__ import annotations

from daemon_client.cli.parser import Registry, json_arg


def register(registry: Registry) -> None:
    config = registry.add_group("config", "read or change the daemon's configuration")
    get = config.add("get", "print the configuration, or one dotted key of it", "settings:config_get")
    get.add_argument("key", nargs="?", help="a dotted wire key, e.g. mcp.injectIntoAgents")
    put = config.add("set", "set one dotted key (the value is read as JSON when it parses)", "settings:config_set")
    put.add_argument("key", help="a dotted wire key, e.g. mcp.injectIntoAgents")
    put.add_argument("value", help="e.g. true, 3, '\"text\"', '{\"enabled\": false}'")
    put.add_argument("--allow-unknown", action="store_true", help="send a key the daemon does not report")

    agent = registry.add_group("agent", "change an agent's settings or list its slash commands")
    mode = agent.add("set-mode", "switch an agent's mode", "settings:agent_set_mode")
    mode.add_argument("agent", help="agent ID, unique ID prefix or exact title")
    mode.add_argument("mode", help="one of the agent's available modes")
    model = agent.add("set-model", "switch an agent's model", "settings:agent_set_model")
    model.add_argument("agent", help="agent ID, unique ID prefix or exact title")
    model.add_argument("model", help="a model ID of the agent's provider, or 'default'")
    commands = agent.add(
        "commands", "list an agent's slash commands and skills, or those a new agent would have",
        "settings:agent_commands",
        epilog="examples:\n  daemon-client agent commands my-agent\n"
               "  daemon-client agent commands --provider claude/sonnet --cwd ~/project",
    )  # fmt: skip
    commands.add_argument("agent", nargs="?", help="agent ID, unique ID prefix or exact title")
    commands.add_argument(
        "--provider", metavar="PROVIDER[/MODEL]",
        help="instead of an agent: list the commands of this provider, without creating an agent",
    )  # fmt: skip
    commands.add_argument(
        "--cwd", metavar="DIR", help="with --provider: the working directory (default: the current one)"
    )
    commands.add_argument("--mode", metavar="MODE", help="with --provider: the provider's mode")
    json_arg(commands, "the commands")
