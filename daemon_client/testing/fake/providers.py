"""The provider catalog of the fake daemon (``fake.providers``): snapshot, probes, list calls.

Owns one record per provider (``claude``, ``codex``, ``mock`` by default, all ``ready``), the
``ProviderSnapshotEntry`` rendering of protocol.md 7.2, the ``providers_snapshot_update``
pushes of 7.3 (published through :class:`~daemon_client.testing.fake.events.FakeEvents`, which
routes them per host kind) and the handlers of ``get_providers_snapshot_request``,
``refresh_providers_snapshot_request``, ``list_available_providers_request``,
``list_provider_models_request``, ``list_provider_modes_request`` and
``provider_diagnostic_request`` (7.1, 7.4), shaped like transcript 07 of the 0.1.65 daemon:

- every update is the full list, never a diff, with ``generatedAt`` and ``cwd``; ``cwd`` is the
  daemon's home (:data:`HOME`) on hosts without ``features.providersSnapshotCwd`` and, on hosts
  with it, the cwd given to the call or else the cwd most recently asked for in a request;
- snapshot responses carry ``cwd`` only on ``providersSnapshotCwd`` hosts (the catalog itself
  stays global: per-cwd catalogs are not modelled);
- a refresh resets the selected providers (or all) to ``loading``, publishes one update, then
  resolves each provider to the status it last settled to (publishing after each, in catalog
  order) and only then replies (07 L14-L26); a snapshot read that finds ``loading`` entries
  answers with them and then resolves them the same way (07 L4-L11, the probe after the
  daemon's start, which :meth:`FakeProviders.start_loading` with ``keep_models=False`` sets up);
- with :attr:`FakeProviders.auto_resolve` ``False`` nothing resolves by itself: entries stay
  ``loading`` until the test calls :meth:`FakeProviders.resolve`, and a refresh's reply follows
  the update that leaves none of its providers loading.

Test threads mutate the catalog, connection reader threads run the handlers. One lock
(:attr:`FakeProviders.lock`) guards the catalog; every push or reply is queued on the event
outbox while it is held (so frames follow catalog changes in order; the event lock is taken
inside it to queue) and written after it is released. No frame is sent under a lock.
"""

from __future__ import annotations

import copy
import enum
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from daemon_client.protocol.hosts import HostKind
from daemon_client.protocol.requests import providers as providers_requests
from daemon_client.testing.fake.engine.handlers import iso_now
from daemon_client.testing.fake.events import string_list

if TYPE_CHECKING:
    from daemon_client.testing.fake.engine.core import DaemonCore
    from daemon_client.testing.fake.engine.handlers import HandlerRegistry, RequestContext
    from daemon_client.testing.fake.events import FakeEvents

__all__ = ["HOME", "SNAPSHOT_UPDATE", "STATUSES", "FakeProviders"]

HOME = "/home/dev"
"""The daemon's home directory: the ``cwd`` of every update on hosts without per-cwd snapshots."""
SNAPSHOT_UPDATE = "providers_snapshot_update"
STATUSES = ("ready", "loading", "error", "unavailable")
_SETTLED = ("ready", "error", "unavailable")


def _models(provider: str, *specs: tuple[str, str, bool]) -> list[dict[str, Any]]:
    models: list[dict[str, Any]] = []
    for model_id, label, is_default in specs:
        model: dict[str, Any] = {"provider": provider, "id": model_id, "label": label}
        if is_default:
            model["isDefault"] = True
        models.append(model)
    return models


def _default_catalog() -> list[dict[str, Any]]:
    thinking = [{"id": "low", "label": "Low"}, {"id": "medium", "label": "Medium", "isDefault": True},
                {"id": "high", "label": "High"}]  # fmt: skip
    claude = _models("claude", ("sonnet", "Sonnet", True), ("opus", "Opus", False))
    for model in claude:
        model.update(thinkingOptions=copy.deepcopy(thinking), defaultThinkingOptionId="medium")
    return [
        {"provider": "claude", "label": "Claude", "description": "Anthropic's multi-tool assistant",
         "defaultModeId": "default", "models": claude,
         "modes": [{"id": "default", "label": "Default"}, {"id": "plan", "label": "Plan"}]},
        {"provider": "codex", "label": "Codex", "description": "OpenAI's Codex workspace agent",
         "defaultModeId": "auto", "models": _models("codex", ("gpt-5-codex", "GPT-5 Codex", True)),
         "modes": [{"id": "auto", "label": "Auto"}, {"id": "read-only", "label": "Read only"}]},
        {"provider": "mock", "label": "Mock", "description": "Scripted agent for tests",
         "defaultModeId": "load-test",
         "models": _models("mock", ("ten-second-stream", "Ten second stream", True), ("instant", "Instant", False)),
         "modes": [{"id": "load-test", "label": "Load test"}]},
    ]  # fmt: skip


class _Keep(enum.Enum):
    """Default of :meth:`FakeProviders.set_entry` arguments that keep the current value."""

    KEEP = "keep"


KEEP = _Keep.KEEP


@attrs.define(eq=False)
class _Provider:
    provider: str
    info: dict[str, Any]
    """``label`` and, when present, ``description`` and ``defaultModeId`` (may be null)."""
    status: str = "ready"
    settles_to: str = "ready"
    """The status a refresh resolves this provider to (its last settled status) ..."""
    settles_error: str | None = None
    """... and the error text it resolves with."""
    enabled: bool = True
    error: str | None = None
    models: list[dict[str, Any]] = attrs.field(factory=list)
    modes: list[dict[str, Any]] = attrs.field(factory=list)
    shows_models: bool = False
    """Whether the entry shows ``models``/``modes``/``fetchedAt`` (after a ready probe)."""
    fetched_at: str | None = None
    extra: dict[str, Any] = attrs.field(factory=dict)

    @property
    def label(self) -> str:
        return str(self.info.get("label", self.provider))

    def entry(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"provider": self.provider, "status": self.status, "enabled": self.enabled}
        entry.update(copy.deepcopy(self.info))
        if self.error is not None:
            entry["error"] = self.error
        if self.shows_models:
            entry["models"] = copy.deepcopy(self.models)
            entry["modes"] = copy.deepcopy(self.modes)
            if self.fetched_at is not None:
                entry["fetchedAt"] = self.fetched_at
        entry.update(copy.deepcopy(self.extra))
        return entry

    def settle(self, status: str, error: str | None) -> None:
        self.status = self.settles_to = status
        self.error = self.settles_error = error
        self.shows_models = status == "ready"
        self.fetched_at = iso_now() if status == "ready" else None


@attrs.define(eq=False)
class _PendingRefresh:
    ctx: RequestContext
    providers: frozenset[str]


class FakeProviders:
    """The provider catalog and its handlers of one fake daemon (``fake.providers``)."""

    def __init__(self, core: DaemonCore, events: FakeEvents) -> None:
        self.core = core
        self.events = events
        self.host_kind: HostKind = core.config.host_kind
        self.per_cwd: bool = bool(core.config.effective_features.get("providersSnapshotCwd"))
        """Whether snapshots and updates report the requested cwd (``features.providersSnapshotCwd``)."""
        self.home = HOME
        self.auto_resolve = True
        """``True``: a refresh, or a snapshot read finding ``loading`` entries, resolves them at
        once (after the read's reply, before the refresh's); ``False``: they stay ``loading``
        until the test calls :meth:`resolve` (a refresh reply waits for that)."""
        self.lock = threading.Lock()
        self._providers: dict[str, _Provider] = {}
        self._pending: list[_PendingRefresh] = []
        self._last_cwd: str | None = None
        for spec in _default_catalog():
            info = {key: spec[key] for key in ("label", "description", "defaultModeId")}
            record = _Provider(spec["provider"], info, models=spec["models"], modes=spec["modes"])
            record.settle("ready", None)
            self._providers[record.provider] = record

    # -- wiring --------------------------------------------------------------------------------

    def install(self, registry: HandlerRegistry) -> None:
        """Register the provider request handlers."""
        config = self.core.config
        registry.serve_all(
            (
                (providers_requests.SNAPSHOT, self._handle_snapshot),
                (providers_requests.REFRESH, self._handle_refresh),
                (providers_requests.LIST_AVAILABLE, self._handle_list_available),
                (providers_requests.LIST_MODELS, self._handle_list_models),
                (providers_requests.LIST_MODES, self._handle_list_modes),
                (providers_requests.DIAGNOSTIC, self._handle_diagnostic),
            ),
            host_kind=config.host_kind,
            features=config.effective_features,
        )

    # -- the catalog ---------------------------------------------------------------------------

    def set_entry(
        self,
        provider: str,
        *,
        status: str = "ready",
        models: Sequence[Mapping[str, Any]] | None = None,
        modes: Sequence[Mapping[str, Any]] | None = None,
        error: str | None = None,
        enabled: bool = True,
        label: str | _Keep = KEEP,
        description: str | _Keep | None = KEEP,
        default_mode_id: str | _Keep | None = KEEP,
        **extra: Any,
    ) -> dict[str, Any]:
        """Create or replace a provider's record without publishing; returns its entry.

        ``models`` are full model dicts (``provider`` is filled in when missing); ``models``,
        ``modes`` (``None``) and ``label``, ``description``, ``default_mode_id`` (not given)
        keep the current values; a new provider starts with none of them and the capitalised
        name as label. ``description=None`` drops the field; ``default_mode_id=None`` sends
        ``defaultModeId: null``. ``extra`` adds further entry fields (``iconSvg=...``, camelCase).
        A ``ready`` entry shows models, modes and ``fetchedAt``; other statuses do not.
        Use :meth:`publish` to push the result.
        """
        _check_status(status, STATUSES)
        with self.lock:
            old = self._providers.get(provider)
            info: dict[str, Any] = dict(old.info) if old is not None else {"label": provider.capitalize()}
            if not isinstance(label, _Keep):
                info["label"] = label
            if isinstance(description, str):
                info["description"] = description
            elif description is None:
                info.pop("description", None)
            if not isinstance(default_mode_id, _Keep):
                info["defaultModeId"] = default_mode_id
            record = _Provider(
                provider,
                info,
                enabled=enabled,
                models=_model_list(provider, models) if models is not None else list(old.models) if old else [],
                modes=copy.deepcopy([dict(m) for m in modes]) if modes is not None else list(old.modes) if old else [],
                extra=copy.deepcopy(extra),
            )
            if status == "loading":
                record.status = "loading"
                if old is not None:
                    record.settles_to, record.settles_error = old.settles_to, old.settles_error
                record.error = error
            else:
                record.settle(status, error)
            self._providers[provider] = record
            tickets = self._complete_refreshes_locked()
            entry = record.entry()
        self._drain(tickets)
        return entry

    def remove_entry(self, provider: str) -> None:
        """Forget a provider (without publishing)."""
        with self.lock:
            self._providers.pop(provider, None)
            tickets = self._complete_refreshes_locked()
        self._drain(tickets)

    def entries(self) -> list[dict[str, Any]]:
        """The current ``ProviderSnapshotEntry`` list (copies)."""
        with self.lock:
            return self._entries_locked()

    def start_loading(
        self, providers: Iterable[str] | None = None, *, keep_models: bool = True, cwd: str | None = None
    ) -> None:
        """Set the given providers (default: all) to ``loading`` and publish an update.

        ``keep_models=True`` keeps models/modes/``fetchedAt`` on the loading entries, as the
        0.1.65 daemon does for a refresh of named providers (transcript 07 L15); ``False`` drops
        them, as after the daemon's start (07 L5) or a refresh of every provider (07 L19).
        """
        with self.lock:
            names = self._select_locked(providers)
            self._start_loading_locked(names, keep_models)
            ticket = self._queue_update_locked(cwd)
        self._drain([ticket])

    def resolve(
        self,
        provider: str,
        status: str = "ready",
        *,
        models: Sequence[Mapping[str, Any]] | None = None,
        modes: Sequence[Mapping[str, Any]] | None = None,
        error: str | None = None,
        cwd: str | None = None,
    ) -> dict[str, Any]:
        """Finish a provider's probe with ``status`` (``ready``, ``error``, ``unavailable``) and
        publish an update (the full list); returns the provider's entry.

        ``models``/``modes`` replace the provider's catalog first. A pending refresh whose
        providers are no longer loading is answered right after this update.
        """
        _check_status(status, _SETTLED)
        with self.lock:
            record = self._record_locked(provider)
            if models is not None:
                record.models = _model_list(provider, models)
            if modes is not None:
                record.modes = copy.deepcopy([dict(m) for m in modes])
            record.settle(status, error)
            tickets = [self._queue_update_locked(cwd), *self._complete_refreshes_locked()]
            entry = record.entry()
        self._drain(tickets)
        return entry

    def publish(self, *, cwd: str | None = None) -> int:
        """Publish the current list as a ``providers_snapshot_update``; returns how many copies."""
        with self.lock, self.events.lock:
            ticket, count = self.events.queue_event_locked(SNAPSHOT_UPDATE, self._update_payload_locked(cwd))
        self._drain([ticket])
        return count

    # -- internals (call with the lock held) ----------------------------------------------------

    def _entries_locked(self) -> list[dict[str, Any]]:
        return [record.entry() for record in self._providers.values()]

    def _record_locked(self, provider: str) -> _Provider:
        record = self._providers.get(provider)
        if record is None:
            raise KeyError(f"unknown provider {provider!r}; add it with set_entry()")
        return record

    def _select_locked(self, providers: Iterable[str] | None) -> list[str]:
        if providers is None:
            return list(self._providers)
        names = list(dict.fromkeys(providers))
        for name in names:
            self._record_locked(name)
        return names

    def _start_loading_locked(self, names: Iterable[str], keep_models: bool) -> None:
        for name in names:
            record = self._providers[name]
            record.status = "loading"
            record.error = None
            if not keep_models:
                record.shows_models = False
                record.fetched_at = None

    def _remember_cwd_locked(self, cwd: object) -> str:
        """The effective cwd of a request; remembered as the default cwd of later updates."""
        effective = cwd if isinstance(cwd, str) and cwd else self.home
        self._last_cwd = effective
        return effective

    def _update_cwd_locked(self, cwd: str | None) -> str:
        if cwd is not None:
            return cwd
        if self.per_cwd and self._last_cwd is not None:
            return self._last_cwd
        return self.home

    def _update_payload_locked(self, cwd: str | None) -> dict[str, Any]:
        return {"cwd": self._update_cwd_locked(cwd), "entries": self._entries_locked(), "generatedAt": iso_now()}

    def _queue_update_locked(self, cwd: str | None) -> int:
        payload = self._update_payload_locked(cwd)
        with self.events.lock:
            return self.events.queue_event_locked(SNAPSHOT_UPDATE, payload)[0]

    def _queue_reply_locked(self, ctx: RequestContext, payload: Mapping[str, Any]) -> int:
        body = dict(payload)
        with self.events.lock:
            return self.events.queue_locked(lambda: ctx.reply(body))

    def _complete_refreshes_locked(self) -> list[int]:
        """Queue the replies of pending refreshes none of whose providers is loading any more."""
        tickets: list[int] = []
        still: list[_PendingRefresh] = []
        for pending in self._pending:
            loading = [n for n in pending.providers if n in self._providers and self._providers[n].status == "loading"]
            if loading:
                still.append(pending)
            else:
                tickets.append(self._queue_reply_locked(pending.ctx, {"acknowledged": True}))
        self._pending = still
        return tickets

    def _probe_locked(self, names: Iterable[str]) -> list[int]:
        """Resolve each provider to the status it last settled to, queueing an update after
        each, then the replies of the refreshes this completes."""
        tickets: list[int] = []
        for name in names:
            record = self._providers[name]
            record.settle(record.settles_to, record.settles_error)
            tickets.append(self._queue_update_locked(None))
        tickets.extend(self._complete_refreshes_locked())
        return tickets

    def _drain(self, tickets: Sequence[int]) -> None:
        if tickets:
            self.events.drain(max(tickets))

    # -- handlers ------------------------------------------------------------------------------

    def _handle_snapshot(self, ctx: RequestContext) -> None:
        with self.lock:
            cwd = self._remember_cwd_locked(ctx.message.get("cwd"))
            payload: dict[str, Any] = {"cwd": cwd} if self.per_cwd else {}
            payload.update(entries=self._entries_locked(), generatedAt=iso_now())
            tickets = [self._queue_reply_locked(ctx, payload)]
            if self.auto_resolve:  # a read of loading entries starts their probe (07 L4-L11)
                tickets.extend(self._probe_locked([n for n, r in self._providers.items() if r.status == "loading"]))
        self._drain(tickets)

    def _handle_refresh(self, ctx: RequestContext) -> None:
        message = ctx.message
        wanted = message.get("providers")
        selected = string_list(wanted) if wanted is not None else None
        if wanted is not None and selected is None:
            ctx.rpc_error("Invalid providers: expected an array of strings", "invalid_message")
            return
        with self.lock:
            self._remember_cwd_locked(message.get("cwd"))
            names = list(self._providers) if selected is None else [n for n in selected if n in self._providers]
            self._start_loading_locked(names, keep_models=selected is not None)
            tickets = [self._queue_update_locked(None)]
            self._pending.append(_PendingRefresh(ctx, frozenset(names)))
            if self.auto_resolve:
                tickets.extend(self._probe_locked(names))
            else:
                tickets.extend(self._complete_refreshes_locked())
        self._drain(tickets)

    def _handle_list_available(self, ctx: RequestContext) -> None:
        with self.lock:
            providers = [{"provider": r.provider, "available": r.enabled and r.status != "unavailable",
                          "error": r.error} for r in self._providers.values()]  # fmt: skip
            payload = {"providers": providers, "error": None, "fetchedAt": iso_now()}
            ticket = self._queue_reply_locked(ctx, payload)
        self._drain([ticket])

    def _handle_list_models(self, ctx: RequestContext) -> None:
        self._list(ctx, "models")

    def _handle_list_modes(self, ctx: RequestContext) -> None:
        self._list(ctx, "modes")

    def _list(self, ctx: RequestContext, field: str) -> None:
        provider = ctx.message["provider"]
        with self.lock:
            if "cwd" in ctx.message:
                self._remember_cwd_locked(ctx.message["cwd"])
            record = self._providers.get(provider) if isinstance(provider, str) else None
            payload: dict[str, Any] = {"provider": provider}
            if record is None:
                payload["error"] = f"Unknown provider: {provider}"
            else:
                payload[field] = copy.deepcopy(record.models if field == "models" else record.modes)
                payload["error"] = None
            payload["fetchedAt"] = iso_now()
            ticket = self._queue_reply_locked(ctx, payload)
        self._drain([ticket])

    def _handle_diagnostic(self, ctx: RequestContext) -> None:
        provider = ctx.message["provider"]
        with self.lock:
            record = self._providers.get(provider) if isinstance(provider, str) else None
            if record is None:
                text = f"Unknown provider: {provider}"
            else:
                text = f"{record.label} ({record.provider}): {record.status}" + (
                    f" - {record.error}" if record.error else ""
                )
            ticket = self._queue_reply_locked(ctx, {"provider": provider, "diagnostic": text})
        self._drain([ticket])


def _check_status(status: str, allowed: Sequence[str]) -> None:
    if status not in allowed:
        raise ValueError(f"status must be one of {', '.join(allowed)}, not {status!r}")


def _model_list(provider: str, models: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [{"provider": provider, **copy.deepcopy(dict(model))} for model in models]
