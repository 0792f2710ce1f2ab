"""The cold floor a framework run is compared with: a bare PySpark + Delta process that writes one row.

What a data engineer would write by hand to check that Spark and Delta work: a local SparkSession with the Delta
jars (the project's cached ones on ``spark.jars``, so that no Maven resolution is timed), Delta's SQL extension
and catalog, the UI off, then ``spark.range(1)`` appended to a Delta table and the process ends. No framework
code runs. ``bench_devloop --cold-compare`` alternates it with the framework's cold ``medallion run`` of the
sample pipeline (issue 35: the framework's cold run <= 0.6 of this floor).

Run: ``.venv/bin/python -m bench.bare_delta_floor TABLE_PATH``.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
JARS = ("delta-spark_4.2_2.13-4.4.0.jar", "delta-storage-4.4.0.jar")


def main() -> None:
    from pyspark.sql import SparkSession

    jars = ",".join(str(REPO / ".cache" / "jars" / name) for name in JARS)
    spark = (SparkSession.builder.master("local[2]").appName("bare-delta-floor")
             .config("spark.jars", jars)
             .config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
             .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
             .getOrCreate())
    spark.range(1).write.format("delta").mode("append").save(sys.argv[1])
    spark.stop()


if __name__ == "__main__":
    main()
