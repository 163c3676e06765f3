"""The fake daemon: a scriptable daemon side of the Paseo protocol, in memory or on a loopback port."""
