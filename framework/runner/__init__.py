"""The local shim: runs pipeline updates on open-source Spark + Delta with Databricks' semantics."""
