"""Class-data sharing for the driver JVM (issue 21, cold start).

A cold ``medallion run`` starts a JVM that loads, parses and verifies about 15,000 classes of Spark, Delta and
their dependencies before the first row is read. The JVM can instead map them from an archive written once by a
training run (JDK 13+ dynamic CDS, ``-XX:ArchiveClassesAtExit``): ``make setup`` runs the sample pipeline twice
(a first and an incremental update) in a JVM that writes the archive when it exits, and every session this
process starts afterwards maps it (``-XX:SharedArchiveFile``). Measured on 2 cores: session start 5.1-6.0 s to
3.3 s, the first query 2.5-2.7 s to 1.2 s (bench/README.md, cold runs).

The archive is only valid for the JVM and class path it was written with: its name is a hash of the ``java``
binary, the driver's jars (names, sizes and modification times, which the JVM checks too: a jar rebuilt with the
same content no longer fits) and the JVM options, so a changed or rebuilt jar or option simply finds no
archive (the session starts as before, without one) until ``make setup`` writes a new one. The JVM itself checks
the archive again when it maps it and ignores it silently when it does not fit (``-Xshare:auto``, logging off).
The archive is written by :mod:`framework.cds_training` (``make setup``).
Set ``class_data_sharing: false`` in ``conf/spark.yaml`` or ``MEDALLION_CDS=0`` to start without it.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

from framework.settings import LocalSparkSettings

DISABLE_ENV = "MEDALLION_CDS"  # "0": no archive is used or written
DUMP_ENV = "MEDALLION_CDS_DUMP"  # set by `build` for its training process: where the JVM writes the archive
_QUIET = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")  # a dump lists every class it skips; a mismatch warns


def enabled(settings: LocalSparkSettings) -> bool:
    """Whether sessions use (and ``make setup`` writes) the archive."""
    return settings.class_data_sharing and os.environ.get(DISABLE_ENV, "1") != "0"


def archive_path(settings: LocalSparkSettings, java: Path, jars: Sequence[Path], java_options: Sequence[str]) -> Path:
    """Where the archive for this JVM, class path and options lives (``<cache>/cds/driver-<hash>.jsa``).

    Args:
        settings: The local settings (the cache folder, the driver's memory).
        java: The ``java`` binary Spark's launcher runs.
        jars: The jars on the driver's class path besides pyspark's own.
        java_options: The driver's JVM options, without the archive's.
    """
    import pyspark

    digest = hashlib.sha256()
    spark_jars = Path(pyspark.__file__).parent / "jars"
    for path in [Path(os.path.realpath(java)), *sorted(spark_jars.glob("*.jar")), *jars]:
        stat = path.stat() if path.exists() else None
        size, mtime = (stat.st_size, stat.st_mtime_ns) if stat else (-1, -1)
        digest.update(f"{path}\0{size}\0{mtime}\0".encode())
    digest.update("\0".join([*java_options, settings.spark_conf.get("spark.driver.memory", "")]).encode())
    return settings.jar_cache_dir.parent / "cds" / f"driver-{digest.hexdigest()[:16]}.jsa"


def java_options(settings: LocalSparkSettings, java: Path, jars: Sequence[Path], options: Sequence[str]) -> list[str]:
    """The JVM options that map the archive (or, in a training process, write it); empty when there is none.

    Args:
        settings: The local settings.
        java: The ``java`` binary.
        jars: The jars on the driver's class path besides pyspark's own.
        options: The driver's other JVM options.
    """
    if not enabled(settings):
        return []
    dump = os.environ.get(DUMP_ENV)
    if dump:
        return [f"-XX:ArchiveClassesAtExit={dump}", *_QUIET]
    archive = archive_path(settings, java, jars, options)
    return [f"-XX:SharedArchiveFile={archive}", *_QUIET] if archive.exists() else []
