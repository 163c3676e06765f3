"""``CallbackErrors``: a callback's exception is logged, kept in strict mode and passed on; the
kept ones are raised once, the first as the cause."""

from __future__ import annotations

import logging
import threading

import pytest

import daemon_client as dc
from daemon_client.runtime.callback_errors import CallbackErrors

LOG = logging.getLogger("tests.callback_errors")


def test_strict_mode_raises_the_first_kept_error_once_naming_how_many_more(caplog: pytest.LogCaptureFixture) -> None:
    passed: list[BaseException] = []
    errors = CallbackErrors(passed.append, strict=True, logger=LOG)
    first, second = ValueError("first"), KeyError("second")
    errors.report(first, "handler-1")
    errors.report(second, "handler-2")
    assert passed == [first, second]
    assert caplog.text.count("callback 'handler-") == 2
    with pytest.raises(dc.CallbackError, match=r"a callback raised ValueError: first \(and 1 more\)") as caught:
        errors.raise_first()
    assert caught.value.__cause__ is first
    errors.raise_first()  # forgotten once raised


def test_without_strict_mode_nothing_is_kept_and_a_raising_hook_goes_no_further(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def hook(exc: BaseException) -> None:
        raise RuntimeError("the hook itself")

    errors = CallbackErrors(hook, strict=False, logger=LOG)
    errors.report(ValueError("lost"), "handler")
    errors.raise_first()
    assert "on_callback_error raised" in caplog.text


def test_reports_from_many_threads_are_all_kept() -> None:
    errors = CallbackErrors(None, strict=True, logger=logging.getLogger("tests.callback_errors.quiet"))
    logging.getLogger("tests.callback_errors.quiet").disabled = True
    try:
        threads = [threading.Thread(target=lambda n=n: [errors.report(ValueError(n), n) for _ in range(50)])
                   for n in range(16)]  # fmt: skip
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        with pytest.raises(dc.CallbackError, match=r"\(and 799 more\)"):
            errors.raise_first()
    finally:
        logging.getLogger("tests.callback_errors.quiet").disabled = False
