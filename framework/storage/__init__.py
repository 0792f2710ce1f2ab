"""Table storage: every Delta write the framework makes and every cheap read of a Delta log, in one package.

* :mod:`~framework.storage.policy`: the one rule that decides which engine commits a write (the driver's own
  writer, or Spark's Delta), and why.
* :mod:`~framework.storage.driver`: the driver's writer (pyarrow Parquet + one JSON commit, put in place only if
  absent), with :mod:`~framework.storage.checksum` (Delta's version checksum of its commits).
* :mod:`~framework.storage.appends` (a streaming table's micro-batches), :mod:`~framework.storage.overwrites` (a
  materialized view's recompute): the writes that ask the policy and go through one engine or the other.
* :mod:`~framework.storage.log` (the log read on the driver: versions, protocol, metadata, live files, who
  committed), :mod:`~framework.storage.plain` (small tables read straight from their live Parquet files),
  :mod:`~framework.storage.state_files` (small state files, local or on an object store),
  :mod:`~framework.storage.url` (storage roots on object stores, and which Delta log store each scheme uses).

Nothing here imports the runner, CDC or quality: they call this package.
"""
