"""Providers: the provider catalog namespace and its extra calls (features of a draft
configuration, diagnostics, usage). Caller's thread for calls, the callback thread for updates."""
