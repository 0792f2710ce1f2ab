"""Failures are classified by type, once: the root cause, the user's file and line, typed guard errors."""

from __future__ import annotations

import threading

import pytest

from framework.errors import CauseInfo, CdcError, FlowError
from framework.failures import HandlerErrors, _python_worker_error, cause_chain, classify


def _user_code() -> None:
    raise ValueError("amount must be positive")


def test_a_python_error_in_a_query_function_names_the_root_cause_and_the_users_line() -> None:
    try:
        try:
            _user_code()
        except ValueError as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as exc:
        error = classify(exc, flow="orders", dataset="orders", file="decl.py", line=3)
    assert isinstance(error, FlowError)
    assert error.root == CauseInfo("ValueError", "amount must be positive", None)
    assert [c.class_name for c in error.chain] == ["RuntimeError", "ValueError"]
    assert error.file == __file__ and error.line == _user_code.__code__.co_firstlineno + 1
    assert "flow 'orders' failed: ValueError: amount must be positive" in str(error)
    assert cause_chain(error) == list(error.chain)


def test_a_framework_error_on_the_way_is_kept_as_it_is() -> None:
    own = CdcError("NULL key")
    try:
        raise RuntimeError("streaming query failed") from own
    except RuntimeError as exc:
        assert classify(exc, flow="f", dataset="d") is own


def test_a_foreach_batch_handlers_own_error_wins_over_what_spark_returned() -> None:
    errors = HandlerErrors()

    def handler(batch: object, batch_id: int) -> None:
        raise CdcError("duplicate key and sequence")

    with pytest.raises(CdcError):
        errors.wrap(handler)(None, 0)
    returned = RuntimeError("An exception was raised by the Python Proxy")
    assert classify(returned, flow="f", dataset="d", handler_error=errors.first) is errors.first


def test_handler_errors_keep_the_first_of_concurrent_failures() -> None:
    errors = HandlerErrors()
    def fail(batch: object, batch_id: int) -> None:
        raise KeyError(batch_id)

    wrapped = errors.wrap(fail)

    def call(i: int) -> None:
        with pytest.raises(KeyError):
            wrapped(None, i)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert isinstance(errors.first, KeyError)


def test_a_python_udf_error_shows_its_last_traceback_line() -> None:
    info = CauseInfo("org.apache.spark.api.python.PythonException",
                     "Traceback (most recent call last):\n  File \"x.py\", line 3\nZeroDivisionError: division by zero\n")
    assert _python_worker_error(info) == CauseInfo("ZeroDivisionError", "division by zero", None)
