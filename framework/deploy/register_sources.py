# Databricks notebook source
# MAGIC %pip install "adbc-driver-postgresql>=1.5" "pyarrow>=15"

# COMMAND ----------

"""Registers the framework's Python data sources (``jdbc_incremental``) in a Databricks pipeline.

``medallion deploy`` adds this notebook to the libraries of a pipeline whose code reads
``format("jdbc_incremental")``, and sets ``medallion.bundle_root`` in its configuration to the folder the
bundle syncs (``${workspace.file_path}``), which holds ``framework/``. A pipeline runs every library file before
it resolves its flows, so the source is registered before any query function reads it. The ``%pip`` line
installs the PostgreSQL ADBC driver on the pipeline's cluster (serverless pipelines take it as an
environment dependency instead). Locally the runner registers the source itself; this file is not run.
"""

import sys

from pyspark.sql import SparkSession

spark = SparkSession.getActiveSession()
if spark is None:
    raise RuntimeError("register_sources runs inside a Databricks pipeline, which has an active Spark session")
root = spark.conf.get("medallion.bundle_root")
if root and root not in sys.path:
    sys.path.insert(0, root)

try:
    from framework.sources import register_sources
except ImportError as missing:
    raise ImportError(
        f"register_sources: cannot import the framework from medallion.bundle_root={root!r} ({missing}); set "
        "the pipeline configuration key medallion.bundle_root to the workspace folder that holds framework/ "
        "(medallion deploy sets it to ${workspace.file_path}), and install adbc-driver-postgresql") from missing

register_sources(spark)
