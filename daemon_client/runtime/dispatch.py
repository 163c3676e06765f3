"""Ordered delivery of user callbacks, isolated from the reader thread.

Work comes in through four doors, each named for what it guarantees:

* :meth:`Dispatcher.post_in_order`: ``fn`` runs after everything posted before it, or not at all
  once stopped (it returns ``0`` then: the caller decides). It returns the post's number, which
  :attr:`Dispatcher.posted` still equals while nothing was queued after it.
* :meth:`Dispatcher.post_or_run_now`: ``fn`` runs exactly once: in order, or, once stopped, at once
  on the posting thread (errors isolated all the same).
* :meth:`Dispatcher.post_if_admitted`: a push that may be skipped, ``fn(first, second)``, counted
  against the client's :class:`~daemon_client.runtime.flow_limits.FlowControl` until it ran, and
  refused (``False``) while the backlog is over a limit (:mod:`daemon_client.runtime.backlog`).
* :attr:`Dispatcher.burst` (a :class:`BurstGate`): between its ``begin()`` and ``end()`` the
  reader's posts wake an idle consumer once, at ``end()``, instead of once each.

A running job calls user code through :attr:`Dispatcher.errors`
(:meth:`~daemon_client.runtime.callback_errors.CallbackErrors.call_isolated`), which isolates what
it raises. Posted callables run one at a time, in posting order, on exactly one of:

* the client's dispatcher thread (default);
* the user's executor (``callback_executor=post_fn``, e.g. ``daemon_client.gui.tk_executor(root)``):
  the dispatcher thread hands each callable to ``post_fn`` in order, so a slow
  ``post_fn`` never stalls the reader; an executor whose ``takes_batches`` attribute is
  ``True`` (a fleet's callback thread) gets each batch taken from the queue in one call;
* the application's own thread, in ``"manual"`` mode, inside ``process_events()`` only
  (one caller at a time; ``flush()`` from another thread waits for that loop).

Once stopped (``close()``), nothing is queued any more (a future's done-callback then runs at
once on the adding thread).

Locks: ``_queue_lock`` guards the queue and everything deciding whether a post is queued and
who wakes the consumer: the queued items, the consumer's idle flag, the stopped flag, the
dispatcher thread (started under it, once) and the post count. One lock on purpose: a post
checks the stopped flag, appends, and reads the idle flag in one step, so nothing is queued
after ``stop()`` and no wake-up is lost. ``_wake`` is no lock but a binary semaphore, released
once per wake-up of an idle consumer. ``_process_events_lock`` lets one ``process_events()``
run at a time (manual mode) and guards the thread that ran it last.

In executor and manual modes the dispatcher learns which thread runs the callbacks: the one
an executor names (its ``callback_thread`` attribute, a :class:`threading.Thread`), else the
thread that runs the first callback (forgotten for good if a later one runs elsewhere: a
pool has no single callback thread). Waiting on that thread for callback-delivered work
raises :class:`WouldDeadlock` at once (:meth:`Dispatcher.check_can_wait`).

Every exception a callback raises is caught here (or in ``errors.call_isolated``) and handed to
:class:`~daemon_client.runtime.callback_errors.CallbackErrors`: logged with its traceback and
passed to ``on_callback_error``; in strict mode it is also kept for :meth:`raise_errors`.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Literal, TypeVar

from daemon_client.errors import WouldDeadlock
from daemon_client.runtime.affinity import pin_current_thread
from daemon_client.runtime.backlog import Backlog
from daemon_client.runtime.callback_errors import CallbackErrors
from daemon_client.runtime.flow_limits import FlowControl

Callback = Callable[[], None]
A = TypeVar("A")
B = TypeVar("B")
Executor = Callable[[Callback], object]
CallbackExecutor = Executor | Literal["manual"] | None

_STOP = object()


class BurstGate:
    """The reader thread's bursts (:attr:`Dispatcher.burst`): ``begin()`` when it has more
    received frames to handle at once; until ``end()``, its posts do not wake an idle consumer,
    so that the consumer does not take the GIL frame by frame (each C call that releases it, a
    decryption for one, would hand it over) but wakes once for the whole run. Posts from other
    threads wake it as always, and it then takes the burst's items too. The caller ends every
    burst before it waits for anything (a socket read that would block) and every few frames.

    ``begin`` and ``end`` are plain attributes (the dispatcher's own bound methods: the reader
    calls them per run of frames, and as the transport's wait hooks); ``with gate:`` is one burst.
    """

    __slots__ = ("begin", "end")

    def __init__(self, begin: Callback, end: Callback) -> None:
        self.begin = begin
        self.end = end

    def __enter__(self) -> BurstGate:
        self.begin()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.end()


class CountedJob:
    """A job delivering items the backlog admitted one by one (a run of terminal output):
    calling it runs ``run``, which delivers them and counts them done; ``discard`` counts them
    done without delivering, for a job that will never run (an executor refused it)."""

    __slots__ = ("_run", "discard")

    def __init__(self, run: Callback, discard: Callback) -> None:
        self._run = run
        self.discard = discard

    def __call__(self) -> None:
        self._run()


_ids = itertools.count(1)


class Dispatcher:
    """Runs posted callables in order; see the module docstring for where."""

    def __init__(
        self,
        *,
        name: str = "daemon-client-dispatch",
        executor: CallbackExecutor = None,
        on_error: Callable[[BaseException], None] | None = None,
        strict: bool = False,
        logger: logging.Logger | None = None,
        slow_callback_seconds: float = 1.0,
        flow_control: FlowControl | None = None,
        thread_cpu: int | None = None,
    ) -> None:
        """``thread_cpu``: the dispatcher thread runs on that CPU only (see
        :mod:`daemon_client.runtime.affinity`)."""
        if executor is not None and executor != "manual" and not callable(executor):
            raise TypeError("callback_executor must be None, 'manual' or a callable post(fn)")
        self._name = name
        self._thread_cpu = thread_cpu
        self._executor = executor
        self._log = logger or logging.getLogger("daemon_client.runtime.dispatch")
        self.errors = CallbackErrors(on_error, strict=strict, logger=self._log)
        """Where a job calls user code (``call_isolated``) and reports what it raised (``report``)."""
        self._slow = slow_callback_seconds
        if flow_control is not None and not isinstance(flow_control, FlowControl):
            raise TypeError("flow_control must be a FlowControl or None")
        self.backlog = Backlog(flow_control)
        """The admitted backlog of skippable pushes (see :meth:`post_if_admitted`)."""
        # One batch at a time runs on the dispatcher thread or in process_events(); an executor
        # (a pool, perhaps) may run several at once: its jobs are counted under the backlog's lock.
        self._done = self.backlog.done if executor is None or executor == "manual" else self.backlog.done_locked
        # Posted callables (admitted pushes as ``(fn, cost, first, second)``), taken in batches by the one consumer.
        self._items: list[object] = []  # guarded by _queue_lock
        self._idle = False  # guarded by _queue_lock: the consumer waits on _wake
        # The thread in a burst (burst.begin, written by that thread only): its posts leave an idle
        # consumer idle, so a wake-up is due exactly while the consumer is idle and items are
        # queued (burst.end gives it, under _queue_lock).
        self._burst: int | None = None
        self.burst = BurstGate(self._begin_burst, self._end_burst)
        """The reader thread's bursts: see :class:`BurstGate`."""
        self._wake = threading.Lock()  # a binary semaphore: released once per wake-up of an idle consumer
        self._wake.acquire()
        self._local = threading.local()
        self._stopped = False  # guarded by _queue_lock (read without it as a hint)
        self.posted = 0
        """Items queued so far (written under the queue's lock; read without it as a hint)."""
        self._worker_thread: threading.Thread | None = None  # guarded by _queue_lock
        self._thread_ident: int | None = None  # written once by the dispatcher thread
        self._queue_lock = threading.Lock()
        # Manual mode: one process_events() at a time; _loop_thread is the thread that ran it last.
        self._process_events_lock = threading.Lock()
        self._loop_thread: threading.Thread | None = None  # written under _process_events_lock
        # Executor and manual modes: the thread that runs callbacks (see the module docstring).
        named = getattr(executor, "callback_thread", None)
        self._owner_named = isinstance(named, threading.Thread)
        self._owner: int | None = named.ident if isinstance(named, threading.Thread) else None
        self._owner_varies = False  # set once callbacks ran on two threads (never reset)

    # ------------------------------------------------------------------ posting
    @property
    def manual(self) -> bool:
        return self._executor == "manual"

    @property
    def pending(self) -> int:
        """Callables posted and not yet started (approximate)."""
        return len(self._items)

    @property
    def stopped(self) -> bool:
        return self._stopped

    def post_in_order(self, fn: Callback) -> int:
        """Queue ``fn`` to run after everything posted before it. Returns the number of this post,
        or ``0`` once stopped (not queued: the caller decides). While :attr:`posted` still equals
        the number, nothing was queued after ``fn``: what it delivers may still grow (terminal
        output joins the job of the output before it). Any thread; never blocks (the lock is
        only held to queue)."""
        with self._queue_lock:
            if not self._put_locked(fn):
                return 0
            return self.posted

    def post_or_run_now(self, fn: Callback) -> None:
        """Queue ``fn``; once stopped, run it at once on this thread (errors isolated): ``fn``
        runs exactly once either way."""
        with self._queue_lock:
            if self._put_locked(fn):
                return
        self._run_batch([fn])

    def post_if_admitted(self, fn: Callable[[A, B], None], first: A, second: B, cost: int) -> bool:
        """Queue the skippable push ``fn(first, second)`` of ``cost`` bytes, unless the backlog is
        over a limit or the dispatcher stopped (``False``: not queued, the caller decides). The
        backlog counts it until it ran. Never blocks. No closure per push (the stream's hot
        path: the reader thread posts one item, a tuple); a plain callable is posted as
        ``post_if_admitted(call_plain, fn, None, cost)``."""
        backlog = self.backlog
        if not backlog.admit(cost):
            return False
        with self._queue_lock:
            if self._put_locked((fn, cost, first, second)):
                return True
        backlog.cancel(cost)
        return False

    def count_done(self, events: int, cost: int) -> None:
        """Called by a job that delivered ``events`` items admitted one by one (``backlog.admit``,
        ``cost`` bytes in all), when it finished: the backlog stops counting them."""
        self._done(cost, events)

    def _put_locked(self, item: object) -> bool:
        if self._stopped:
            return False
        self.posted += 1
        self._items.append(item)
        if self._idle:  # wake the consumer once; it takes everything queued by then
            if self._burst is None or self._burst != threading.get_ident():  # a burst's own: at burst.end()
                self._idle = False
                self._wake.release()
        elif self._worker_thread is None and self._executor != "manual":
            self._queue_locked()
        return True

    def _begin_burst(self) -> None:
        """:meth:`BurstGate.begin`: this thread's posts leave an idle consumer idle."""
        self._burst = threading.get_ident()

    def _end_burst(self) -> None:
        """:meth:`BurstGate.end`: wake the consumer if the burst queued anything for it."""
        with self._queue_lock:
            self._burst = None
            if self._idle and self._items:
                self._idle = False
                self._wake.release()

    def _queue_locked(self) -> None:
        """Under ``_queue_lock``: start the dispatcher thread, on first use (a client never used
        starts no thread)."""
        self._worker_thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
        self._worker_thread.start()

    def _take(self, timeout: float | None) -> list[object]:
        """The consumer: everything queued, after waiting up to ``timeout`` seconds (``None``:
        without limit) for something; empty when nothing came."""
        deadline = None if timeout is None else time.monotonic() + max(0.0, timeout)
        while True:
            with self._queue_lock:
                items = self._items
                if items:
                    self._items = []
                    return items
                self._idle = True
            remaining = -1.0 if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                woken = self._wake.acquire(timeout=remaining)
            except BaseException:  # interrupted (Ctrl-C in process_events): leave no stale wake-up
                self._stop_waiting()
                raise
            if not woken and self._stop_waiting():
                return []  # nothing was posted in time
            # else: woken; a wake-up left over from an interrupted wait finds nothing and waits again

    def _stop_waiting(self) -> bool:
        """The consumer stops waiting on its own: True if nobody woke it meanwhile; else it
        takes the wake-up that was given (released with ``_idle`` cleared, so at once)."""
        with self._queue_lock:
            if self._idle:
                self._idle = False
                return True
        self._wake.acquire()
        return False

    def _give_back(self, items: list[object]) -> None:
        """Manual mode: put untaken items back in front of what was posted since."""
        with self._queue_lock:
            self._items[0:0] = items

    # ------------------------------------------------------------------ running
    def in_callback(self) -> bool:
        """True while the current thread is running a callback of this dispatcher."""
        return getattr(self._local, "depth", 0) > 0

    def on_dispatch_thread(self) -> bool:
        """True on the thread that delivers callbacks (dispatcher thread or a callback)."""
        return self.in_callback() or threading.get_ident() == self._thread_ident

    def on_owner_thread(self) -> bool:
        """True on the thread that runs callbacks in executor or manual mode (e.g. a GUI
        thread), outside a callback too; see the module docstring."""
        return not self._owner_varies and self._owner is not None and self._owner == threading.get_ident()

    def check_can_wait(self, what: str) -> None:
        """Raise :class:`WouldDeadlock` if waiting for ``what`` here could never end."""
        if self.on_dispatch_thread():
            raise WouldDeadlock(
                f"{what} is delivered by the callback thread, and this call is running on it: "
                "the wait could never end. Wait from another thread, or react in a callback."
            )
        if self.on_owner_thread():
            where = "process_events()" if self.manual else "the callback executor"
            raise WouldDeadlock(
                f"{what} is delivered by callbacks that {where} runs on this thread, which would be "
                "blocked waiting for them: the wait could never end. Use the callback form instead "
                "(subscribe with a callback and return to the event loop), or call this from a worker thread."
            )

    def _learn_owner(self) -> None:
        """Note the thread delivering a callback (executor and manual modes)."""
        ident = threading.get_ident()
        if self._owner is None:
            self._owner = ident
        elif self._owner != ident and not self._owner_named:
            self._owner_varies = True

    def _run_batch(self, batch: list[Any]) -> None:
        """Run taken items in order on this thread, each isolated; ``_STOP`` is never among them.
        An admitted push, ``(fn, cost, first, second)``, is counted by the backlog until it ran."""
        local, report, slow, clock, done = self._local, self.errors.report, self._slow, time.monotonic, self._done
        local.depth = getattr(local, "depth", 0) + 1
        try:
            last = clock()
            for item in batch:
                if type(item) is tuple:
                    fn, cost, first, second = item
                    try:
                        fn(first, second)
                    except BaseException as exc:  # noqa: BLE001 - isolation is the point
                        report(exc, fn)
                    done(cost)
                else:
                    fn = item
                    try:
                        fn()
                    except BaseException as exc:  # noqa: BLE001 - isolation is the point
                        report(exc, fn)
                now = clock()
                if now - last > slow:
                    self._log.warning("callback %r ran for %.2f s; later callbacks waited behind it", fn, now - last)
                last = now
        finally:
            local.depth -= 1

    def _loop(self) -> None:
        pin_current_thread(self._thread_cpu)
        self._thread_ident = threading.get_ident()
        executor = self._executor
        assert executor != "manual"  # manual mode starts no thread
        batches = getattr(executor, "takes_batches", False) is True
        while True:
            batch = self._take(None)
            stop = bool(batch) and batch[-1] is _STOP  # nothing is queued after _STOP
            if stop:
                batch.pop()
            if executor is None:
                self._run_batch(batch)
            elif batches and batch:
                self._hand_over_batch(executor, batch)
            else:
                for item in batch:  # one post each: the executor may stop between two (a GUI closing)
                    self._hand_over(executor, item)
            if stop:
                return

    def _hand_over(self, executor: Executor, item: object) -> None:
        """Executor mode: one ``post_fn`` call runs ``item`` on the executor's thread."""
        try:
            executor(lambda: self._deliver(item))
        except BaseException as exc:  # noqa: BLE001
            self.errors.report(exc, executor)
            if type(item) is tuple:  # never to run: release what the backlog counted for it
                self._done(item[1])
            elif isinstance(item, CountedJob):
                item.discard()

    def _hand_over_batch(self, executor: Executor, batch: list[Any]) -> None:
        """Executor mode, for an executor that declares ``takes_batches`` (it never stops
        between two callables of one call): one ``post_fn`` call runs the whole batch."""
        try:
            executor(lambda: self._deliver_batch(batch))
        except BaseException as exc:  # noqa: BLE001
            self.errors.report(exc, executor)
            for item in batch:
                if type(item) is tuple:
                    self._done(item[1])
                elif isinstance(item, CountedJob):
                    item.discard()

    def _deliver_batch(self, batch: list[Any]) -> None:
        self._learn_owner()
        self._run_batch(batch)

    def _deliver(self, item: object) -> None:
        """Executor mode: run one handed-over callable on the executor's thread."""
        self._learn_owner()
        self._run_batch([item])

    def process_events(self, timeout: float | None = 0.0, max_events: int | None = None) -> int:
        """Manual mode: run pending callbacks on the calling thread; return how many ran.

        Waits up to ``timeout`` seconds for the first one (``None``: until one arrives),
        then runs what is queued without waiting, at most ``max_events``. Calls from two
        threads never overlap: a second caller waits (up to ``timeout``) for the first.
        """
        if not self.manual:
            raise RuntimeError("process_events() needs Client(callback_executor='manual')")
        if self.in_callback():
            raise WouldDeadlock("process_events() was called from inside a callback; return from it instead")
        deadline = None if timeout is None else time.monotonic() + max(0.0, timeout)
        if not self._process_events_lock.acquire(timeout=-1 if timeout is None else max(0.0, timeout)):
            return 0
        try:
            self._loop_thread = threading.current_thread()
            return self._drain(deadline, max_events)
        finally:
            self._process_events_lock.release()

    def _drain(self, deadline: float | None, max_events: int | None) -> int:
        """Under ``_process_events_lock``: run queued callables on this thread (see :meth:`process_events`)."""
        ran = 0
        while max_events is None or ran < max_events:
            batch = self._take(None if deadline is None else deadline - time.monotonic())
            if not batch:
                break
            deadline = 0.0  # only the first one is waited for
            end = len(batch) if max_events is None else min(len(batch), max_events - ran)
            if _STOP in batch:  # always the last one: left for the next caller to see
                end = min(end, batch.index(_STOP))
            rest = batch[end:]
            if rest:
                self._give_back(rest)
            if end:
                self._learn_owner()
                self._run_batch(batch[:end])
                ran += end
            if rest:
                break
        return ran

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every callable posted before this call has run. False on timeout.

        Manual mode: on the thread that runs ``process_events()`` (or when no live thread
        does), the queue is drained here, inside ``process_events()``; from any other thread
        this waits for that loop to run what was queued (callbacks never run on the waiting
        thread). After ``stop()``: waits for what was queued before it.
        """
        if self.manual:  # on the loop's own thread the queue is drained here (no deadlock)
            if self.in_callback():
                self.check_can_wait("flush_callbacks()")
        else:
            self.check_can_wait("flush_callbacks()")
        done = threading.Event()
        posted = self.post_in_order(done.set)
        if not self.manual:
            if posted:
                return done.wait(timeout)
            thread = self._worker_thread
            if thread is not None and thread.ident != threading.get_ident():
                thread.join(max(0.0, timeout))
                return not thread.is_alive()
            return True
        finished = done.is_set if posted else self._only_stop_left
        loop = self._loop_thread
        if loop is not None and loop is not threading.current_thread() and loop.is_alive():
            return done.wait(timeout) if posted else finished()  # the application's loop runs them
        deadline = time.monotonic() + max(0.0, timeout)
        while not finished():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            self.process_events(remaining)
        return finished()

    def _only_stop_left(self) -> bool:
        return len(self._items) <= 1

    def raise_errors(self) -> None:
        """Strict mode: raise :class:`CallbackError` for the first callback error kept so far."""
        self.errors.raise_first()

    def stop(self, timeout: float = 5.0) -> None:
        """Run what is queued, then stop. Joins the dispatcher thread (bounded; never the current
        thread), also when called again."""
        with self._queue_lock:
            if not self._stopped:  # a later call only joins (every caller sees the thread end)
                self._items.append(_STOP)
                self._stopped = True
                if self._idle:
                    self._idle = False
                    self._wake.release()
            thread = self._worker_thread
        if thread is not None and thread.ident != threading.get_ident():
            thread.join(max(0.0, timeout))
            if thread.is_alive():
                self._log.warning("a callback is still running %.1f s after close(); not waiting for it", timeout)


def call_plain(fn: Callback, _unused: None) -> None:
    """Runs a plain callable posted as a skippable push:
    ``post_if_admitted(call_plain, fn, None, cost)``."""
    fn()


def next_name(prefix: str) -> str:
    """A unique thread-name prefix per client instance."""
    return f"{prefix}-{next(_ids)}"
