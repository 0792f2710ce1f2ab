"""Py4J's look-ups of JVM classes and static methods, made once per name instead of once per use.

Every ``pyspark.sql.functions`` call (``F.col``, ``F.when``, ...) resolves ``org.apache.spark.sql.functions`` and
then the function's name with two reflection round trips to the JVM before the call itself: three round trips
where one does. Building the columns of a pipeline's queries (an Auto Loader source's typed projection and rescued
data, expectations, APPLY CHANGES) makes about a thousand such calls per update of the sample pipeline, about a
second of a warm update on two cores. :func:`cache_lookups` has Py4J keep, per JVM view and per class, the classes
and static methods it found: a class and its static methods do not change while the JVM runs. Packages (Py4J
answers "package" for any name it cannot load as a class) and static fields (their values change) are looked up
every time, as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_MARK = "_medallion_cached"
_CACHE = "_medallion_lookups"


def cache_lookups() -> None:
    """Install the caches into Py4J's ``JVMView`` and ``JavaClass`` look-ups (once per process)."""
    from py4j import java_gateway

    for owner in (java_gateway.JVMView, java_gateway.JavaClass):
        lookup = owner.__getattr__
        if not getattr(lookup, _MARK, False):
            owner.__getattr__ = _cached(lookup, (java_gateway.JavaClass, java_gateway.JavaMember))


def _cached(lookup: Callable[[Any, str], Any], kept: tuple[type, ...]) -> Callable[[Any, str], Any]:
    """``lookup`` remembering, on the object looked in, the names that resolved to one of ``kept``."""

    def get(self: Any, name: str) -> Any:
        cache = self.__dict__.get(_CACHE)
        if cache is None:
            cache = self.__dict__[_CACHE] = {}
        found = cache.get(name)
        if found is None:
            found = lookup(self, name)
            if isinstance(found, kept):
                cache[name] = found
        return found

    setattr(get, _MARK, True)
    return get
