"""Credential scrubbing for the wire trace: what a trace line may never contain.

Pure functions, run on the trace's writer thread. Every carrier of a credential is replaced
by :data:`REDACTED`:

* the password and any ``Authorization`` value (``Bearer <password>``, an ``auth_header`` for a
  proxy), wherever the exact string occurs in a frame (both directions) or a URL;
* the bearer subprotocol ``paseo.bearer.<password>`` (offered and selected);
* the hello's ``auth`` object (``{"kind":"password","password":..}``, ``{"type":"bearer","token":..}``);
* the values of fields named like credentials (``password``, ``token``, ``authorization``, ...)
  at any depth of a frame, and a credential used as a field's name (the key is scrubbed like
  any text);
* credentials in URLs: ``user:password@`` and query values such as ``?password=`` or ``?token=``.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

REDACTED = "<redacted>"
"""What replaces a credential in a trace."""

BEARER_PREFIX = "paseo.bearer."

_SECRET_KEYS = frozenset(
    {
        "password",
        "passwd",
        "token",
        "accesstoken",
        "access_token",
        "refreshtoken",
        "refresh_token",
        "authorization",
        "auth_header",
        "authheader",
        "apikey",
        "api_key",
        "secret",
        "clientsecret",
        "client_secret",
    }
)
_MIN_SECRET = 4
"""Shorter credentials are not searched for in free text (replacing every ``"ab"`` would destroy
the trace without protecting anything); their structured carriers are still replaced."""
_LABEL_KEYS = frozenset({"kind", "type", "scheme"})
_URL_SECRET = re.compile(
    r"(?i)([?&;](?:password|passwd|token|access_token|auth|authorization|api_key|apikey|key|secret)=)[^&#;\s\"']*"
)
_USERINFO = re.compile(r"(?i)([a-z][a-z0-9+.-]*://)[^/@\s\"']*@")


class Secrets:
    """The exact credential strings one trace must never contain. Thread-safe: :meth:`add`
    runs under a lock and replaces the tuple the readers use in one assignment."""

    def __init__(self, values: Iterable[str | None] = ()) -> None:
        self._lock = threading.Lock()
        self._values: tuple[str, ...] = ()
        self.add(values)

    def add(self, values: Iterable[str | None]) -> None:
        """Remember more credentials (see ``_MIN_SECRET`` for very short ones)."""
        new: set[str] = set()
        for value in values:
            if not value:
                continue
            new.add(value)
            if value.lower().startswith("bearer "):
                new.add(value[7:].strip())
            if value.startswith(BEARER_PREFIX):
                new.add(value[len(BEARER_PREFIX) :])
        with self._lock:
            found = new | set(self._values)
            # longest first: a password inside a longer header value is replaced as a whole
            self._values = tuple(sorted((v for v in found if len(v) >= _MIN_SECRET), key=len, reverse=True))

    def add_carriers(self, url: str, headers: Mapping[str, str], subprotocols: Iterable[str]) -> None:
        """Remember the credentials of an upgrade request: credential query values and
        ``user:password@`` of its URL, its ``Authorization`` header and bearer subprotocol."""
        values: list[str | None] = [v for k, v in headers.items() if k.lower() in ("authorization", "cookie")]
        values += [p for p in subprotocols if p.startswith(BEARER_PREFIX)]
        try:
            parts = urlsplit(url)
            values += [parts.password, *(m.group(0).split("=", 1)[1] for m in _URL_SECRET.finditer("?" + parts.query))]
        except ValueError:
            pass
        self.add(values)

    def text(self, text: str) -> str:
        """``text`` with every known credential and URL credential replaced."""
        for value in self._values:
            if value in text:
                text = text.replace(value, REDACTED)
        if "=" in text:
            text = _URL_SECRET.sub(lambda m: m.group(1) + REDACTED, text)
        if "@" in text:
            text = _USERINFO.sub(lambda m: m.group(1) + REDACTED + "@", text)
        return text

    def value(self, value: Any) -> Any:
        """A decoded JSON value with every credential replaced (a new object; the input is kept)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(item) for item in value]
        if isinstance(value, dict):
            scrubbed: dict[str, Any] = {}
            for key, item in value.items():
                lowered = str(key).lower()
                shown = self.text(key) if isinstance(key, str) else key  # a credential can be a key too
                if shown in scrubbed:  # two keys that differ only in a credential stay two keys
                    shown = f"{shown}#{len(scrubbed)}"
                if lowered == "auth" and item is not None:
                    scrubbed[shown] = _auth_object(item)
                elif lowered in _SECRET_KEYS and item is not None:
                    scrubbed[shown] = REDACTED
                else:
                    scrubbed[shown] = self.value(item)
            return scrubbed
        return value

    def subprotocol(self, name: str | None) -> str | None:
        """A subprotocol with its bearer token replaced."""
        if name is None:
            return None
        if name.lower().startswith(BEARER_PREFIX):
            return BEARER_PREFIX + REDACTED
        return self.text(name)

    def url_path(self, url: str) -> str:
        """The path (and scrubbed query) of a WebSocket URL, as the ``open`` line records it."""
        try:
            parts = urlsplit(url)
        except ValueError:
            return REDACTED
        path = parts.path or "/"
        return self.text(f"{path}?{parts.query}") if parts.query else self.text(path)


def _auth_object(auth: Any) -> Any:
    """The hello's ``auth``: keep the labels (``kind``/``type``), replace everything else."""
    if isinstance(auth, dict):
        return {key: (item if str(key).lower() in _LABEL_KEYS else REDACTED) for key, item in auth.items()}
    return REDACTED
