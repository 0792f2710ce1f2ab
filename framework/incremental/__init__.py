"""Incremental refresh of materialized views (issue 37): Databricks' ``REFRESH POLICY``, a plan analysis that
says which technique applies (and why not), a cost model over the inputs' Delta logs, the techniques
(``APPEND_ONLY``, ``GROUP_AGGREGATE``, ``ROW_BASED``, the keyed ``WINDOW_FUNCTION`` and ``PARTITION_OVERWRITE``,
``COMPLETE_RECOMPUTE``), the refresh state kept beside the
view and the ``planning_information`` event. A refresh's query over the changes runs on the driver in Arrow when
its plan allows it (:mod:`arrow_eval`), else on Spark.

Declaration side: :mod:`policy` only (no Spark). Execution side: :mod:`refresh`, called by the runner's
materialized-view executor. The contract: after every refresh the view equals a full recompute, row for row.
"""
