"""Medallion framework: DLT-style declarations, runnable locally on open-source Spark + Delta."""
