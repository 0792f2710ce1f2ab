"""Spark settings set on a session for a block of work (``session_conf``), and which are in effect: a small
update's settings (``runner/sizing.py``) are set for its flows, and the child sessions those flows write through
(APPLY CHANGES' transactional writes, ``cdc/storage.py``) follow them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from framework.internals import java_session

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_blocks: dict[int, dict[str, str]] = {}  # what session_conf set, by the JVM session's identity


def session_conf_in_effect(spark: SparkSession) -> dict[str, str]:
    """What :func:`session_conf` blocks currently set on ``spark``: child sessions a flow writes through (APPLY
    CHANGES' transactional writes) take the same settings (a child session starts from the parent's initial
    configuration, not from what was set on the parent since)."""
    return dict(_blocks.get(id(java_session(spark)), {}))


@contextmanager
def session_conf(spark: SparkSession, conf: dict[str, str]) -> Iterator[None]:
    """Set ``conf`` on the session for the block, then put back what was there."""
    previous: dict[str, str | None] = {key: spark.conf.get(key, None) for key in conf}
    for key, value in conf.items():
        spark.conf.set(key, value)
    key_ = id(java_session(spark))
    outer = _blocks.get(key_)
    _blocks[key_] = {**(outer or {}), **conf}
    try:
        yield
    finally:
        if outer is None:
            _blocks.pop(key_, None)
        else:
            _blocks[key_] = outer
        for key, old in previous.items():
            if old is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, old)
