"""Data quality: the expectations engine, rule files, quarantine, de-duplication, reports, Great Expectations."""
