"""The public entry points of the Auto Loader package."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from framework.autoloader.clean import clean_committed
from framework.autoloader.options import parse_options
from framework.autoloader.paths import to_local
from framework.autoloader.source import NATIVE_TYPED, load_cloud_files
from framework.errors import AutoLoaderError, PipelineError
from framework.storage.url import is_local

__all__ = ["clean_source", "load_cloud_files", "reusable_source", "translate_stream_error"]


def reusable_source(options: dict[str, str], user_schema: bool) -> bool:
    """Whether a DataFrame from :func:`load_cloud_files` stays right when its stream starts a while later.

    It does when what the call read from the folder is checked again by the stream itself: JSON, CSV and text
    records are checked against the schema row by row while they are read. It does not for schema-bearing files
    (parquet, orc, avro, xml: their new columns are found by the call, from its file listing), with
    ``allowOverwrites`` (rewritten files are found by the call) or with ``includeExistingFiles=false`` (the call
    fixes the cutoff of existing files at the first start).
    """
    opts = parse_options(options, user_schema=user_schema)
    return opts.format not in NATIVE_TYPED and not opts.allow_overwrites and opts.include_existing_files


def clean_source(path: str, options: dict[str, str], *, checkpoint_location: str,
                 now: datetime | None = None) -> list[Path]:
    """Apply ``cloudFiles.cleanSource`` (MOVE/DELETE) to the files of the flow's committed batches.

    Call it after the flow's streaming query finished successfully (``load_cloud_files`` also calls it at the
    start of every update for batches committed earlier). Files of uncommitted batches are never touched, and
    files whose commit is younger than ``cloudFiles.cleanSource.retentionDuration`` wait for a later call.

    Args:
        path: the source folder given to ``load``.
        options: the stream's options (as for :func:`load_cloud_files`).
        checkpoint_location: the flow's checkpoint folder.
        now: the current time (tests); defaults to the clock.

    Returns:
        The source files moved or deleted by this call (empty when cleanSource is OFF).
    """
    opts = parse_options(options, user_schema=False)
    if not is_local(path):
        from pyspark.sql import SparkSession

        from framework.autoloader.remote import clean_remote

        spark = SparkSession.getActiveSession()
        if spark is None:
            raise AutoLoaderError(f"cleanSource on {path} needs the pipeline's Spark session")
        clean_remote(spark, opts, path, checkpoint_location, now.timestamp() if now is not None else None)
        return []  # the moved files are object-store URLs, not local paths
    return clean_committed(opts, to_local(path), to_local(checkpoint_location),
                           now.timestamp() if now is not None else None)


def translate_stream_error(exc: BaseException) -> PipelineError | None:
    """Map an exception raised by a ``cloudFiles`` streaming query to the framework's error, or None.

    By type, never by message text (``framework/failures.py`` walks the cause chain): the new-column guard's
    payload becomes :class:`UnknownFieldError` (``retryable`` when the schema was widened); Spark's
    ``FAILED_READ_FILE.FILE_NOT_EXIST`` (or a ``FileNotFoundException``) for a listed file that vanished before
    it was read, and ``DUPLICATED_MAP_KEY``, become :class:`AutoLoaderError` with the fix.
    """
    from framework.failures import raised_error, spark_causes

    if isinstance(exc, PipelineError):
        return exc
    guard = raised_error(exc)
    if guard is not None:
        return guard
    for info, params in spark_causes(exc):
        condition = info.error_class or ""
        if info.class_name.endswith("MissingBatchFileException") or condition.startswith(
                "FAILED_READ_FILE.FILE_NOT_EXIST"):
            name = params.get("path") or "a listed source file"
            return AutoLoaderError(f"{name} was listed for this batch but disappeared before it was read; nothing of "
                                   "the batch was committed. Put the file back and run again, or set the Spark "
                                   "setting spark.sql.files.ignoreMissingFiles=true to skip files that vanish (their "
                                   "data is then not ingested).")
        if condition == "DUPLICATED_MAP_KEY":
            return AutoLoaderError("a JSON record has the same key twice (or a CSV header repeats a name after "
                                   "case folding); fix the file. Details: " + info.headline())
    return None
