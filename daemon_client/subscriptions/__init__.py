"""Demand that survives reconnects: one lifecycle shared by directory observations,
timeline memberships and event subscriptions."""
