"""The public entry points of the Auto Loader package."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from framework.autoloader.clean import clean_committed
from framework.autoloader.options import parse_options
from framework.autoloader.paths import to_local
from framework.autoloader.source import NATIVE_TYPED, load_cloud_files
from framework.errors import AutoLoaderError, PipelineError, UnknownFieldError

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
    return clean_committed(opts, to_local(path), to_local(checkpoint_location),
                           now.timestamp() if now is not None else None)


def _full_text(exc: BaseException) -> str:
    """The message of the exception and of every cause, Python and JVM (Spark wraps task errors)."""
    parts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        parts.append(str(current))
        parts.append(str(getattr(current, "_stackTrace", "") or ""))
        jvm_exc = getattr(current, "_origin", None)
        depth = 0
        while jvm_exc is not None and depth < 20:
            try:
                parts.append(str(jvm_exc.getMessage()))
                jvm_exc = jvm_exc.getCause()
            except Exception:
                break
            depth += 1
        current = current.__cause__ or current.__context__
    return "\n".join(parts)


def translate_stream_error(exc: BaseException) -> PipelineError | None:
    """Map an exception raised by a ``cloudFiles`` streaming query to the framework's error, or None.

    ``UNKNOWN_FIELD_EXCEPTION`` (schema evolution) becomes :class:`UnknownFieldError` (retry once with a fresh
    ``load_cloud_files`` call when the message says ``automatic retry: true``); a listed file that vanished
    before it was read becomes :class:`AutoLoaderError` naming the file and the fix.
    """
    if isinstance(exc, PipelineError):
        return exc
    text = _full_text(exc)
    m = re.search(r"\[UNKNOWN_FIELD_EXCEPTION[^\]]*\] Encountered unknown fields during parsing: \[[^\n]*?\], which "
                  r"can be fixed by an automatic retry: (?:true|false)\. (?:File: file:|Files under )[^\n]*", text)
    if m:
        return UnknownFieldError(m.group(0).split(" SQLSTATE")[0])
    if "FILE_NOT_EXIST" in text or "FileNotFoundException" in text:
        f = re.search(r"(?:File|file) (?:does not exist: )?[`']?(file:[^\s`'.]+(?:\.[^\s`']+)?)", text)
        name = f.group(1) if f else "a listed source file"
        return AutoLoaderError(f"{name} was listed for this batch but disappeared before it was read; nothing of "
                               "the batch was committed. Put the file back and run again, or set the Spark setting "
                               "spark.sql.files.ignoreMissingFiles=true to skip files that vanish (their data is then "
                               "not ingested).")
    if "DUPLICATED_MAP_KEY" in text:
        return AutoLoaderError("a JSON record has the same key twice (or a CSV header repeats a name after "
                               "case folding); fix the file. Details: " + text.splitlines()[0])
    return None
