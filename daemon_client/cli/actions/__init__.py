"""What the subcommands do: ``function(args, ctx) -> int`` on the main thread.

One module per group of :mod:`daemon_client.cli.commands`, which names these functions as
``"module:function"``; a module is imported only when one of its subcommands runs.
"""
