"""Agents: the directory namespace, agent handles and their controls, agent creation, the
timeline and turn outcomes. Caller's thread for calls, the callback thread for updates."""
