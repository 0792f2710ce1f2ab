"""Small files the framework reads and writes beside Spark's (a checkpoint's generation id, a once-flow's marker,
the names in a Delta log), and the folders a full refresh removes: on local disk with Python, on an object store (``s3a://``) through Hadoop's file system
of the active Spark session, so that the state lives where the checkpoint or the table lives whatever the
storage."""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path
from typing import Any

from framework import internals
from framework.storage.url import StoragePath, is_local


def exists(path: str | StoragePath) -> bool:
    """Whether the file ``path`` exists."""
    if is_local(path):
        return _local(path).exists()
    fs, hpath = _hadoop(str(path))
    return bool(fs.exists(hpath))


def names(folder: str | StoragePath) -> list[str]:
    """The names of the entries of ``folder``; empty when it does not exist."""
    if is_local(folder):
        local = _local(folder)
        return [p.name for p in local.iterdir()] if local.is_dir() else []
    fs, hpath = _hadoop(str(folder))
    return [str(s.getPath().getName()) for s in fs.listStatus(hpath)] if fs.exists(hpath) else []


def read_text(path: str | StoragePath) -> str:
    """The text of the file ``path`` (UTF-8)."""
    if is_local(path):
        return _local(path).read_text(encoding="utf-8")
    fs, hpath = _hadoop(str(path))
    stream = fs.open(hpath)
    try:
        jvm = _jvm()
        data = jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8")
    finally:
        stream.close()
    return str(data)


def write_text(path: str | StoragePath, text: str) -> None:
    """Write ``text`` to the file ``path`` (UTF-8), creating its folder, atomically: a reader finds the old text
    or the new, never part of it (a local file is written aside and renamed over; an object store's object
    appears when it is complete)."""
    if is_local(path):
        target = _local(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        aside = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
        aside.write_text(text, encoding="utf-8")
        os.replace(aside, target)
        return
    fs, hpath = _hadoop(str(path))
    stream = fs.create(hpath, True)
    try:
        stream.write(bytearray(text.encode("utf-8")))
    finally:
        stream.close()


def remove(path: str | StoragePath) -> None:
    """Delete the file or folder ``path`` with everything in it; nothing when it does not exist."""
    if is_local(path):
        local = _local(path)
        if local.is_dir() and not local.is_symlink():
            shutil.rmtree(local, ignore_errors=True)
        else:
            local.unlink(missing_ok=True)
        return
    fs, hpath = _hadoop(str(path))
    if fs.exists(hpath):
        fs.delete(hpath, True)


def _local(path: str | StoragePath) -> Path:
    return Path(str(path).removeprefix("file:"))


def _jvm() -> Any:
    jvm = internals.active_jvm()
    if jvm is None:
        raise RuntimeError("a Spark session is needed to reach object storage")
    return jvm


def _hadoop(url: str) -> tuple[Any, Any]:
    from pyspark.sql import SparkSession

    session = SparkSession.getActiveSession()
    if session is None:
        raise RuntimeError("a Spark session is needed to reach object storage")
    jvm = _jvm()
    hpath = jvm.org.apache.hadoop.fs.Path(url)
    return hpath.getFileSystem(internals.hadoop_conf(session)), hpath
