"""Storage on an object store: an ``s3a://bucket/prefix`` storage root, and which Delta log store each scheme
gets (pure: no Spark, no I/O).

A pipeline's ``storage:`` is a local folder (a :class:`pathlib.Path`) or an object-store URL (an
:class:`ObjectStoreUrl`). Both join with ``/`` and print as the path Spark is given, so the storage layout
(``tables/``, ``checkpoints/``, ``system/events``, ``autoloader/``) is built the same way for both; code that
needs a local file system (the update lock, the driver's own Delta commits, sizing) asks :func:`is_local` first.

Which Delta ``LogStore`` commits where, and what it means for several writers:

======== ====================================== ===================================================================
scheme   log store                              several writers
======== ====================================== ===================================================================
file:    ``medallion.storage.AtomicLocalLogStore`` put-if-absent by hard link: safe across processes and between
         (``conf/spark.yaml``)                  Spark and the driver's own commits
s3a:     Delta's ``S3SingleDriverLogStore``     S3 has no put-if-absent that Delta 4.4 uses: safe for ONE driver
         (Delta's default)                      only. Two Spark drivers committing to one table can both write the
                                                same version and lose a commit. The framework's own driver-side
                                                commits never go there (Spark's writer commits every s3a table).
======== ====================================== ===================================================================

The framework serializes its own updates of one storage root with a lock file, which needs a local file system;
for an object-store root the lock is a local file named after the URL (``runner/lock.py``): it keeps two updates
of that root on one machine apart, including a continuous one or ``medallion serve``, but not two machines, nor
another process (a notebook, a second pipeline) writing the same s3a table: both are out of the framework's sight.
Don't, or configure Delta's DynamoDB log store (``io.delta.storage.S3DynamoDBLogStore`` as
``spark.delta.logStore.s3a.impl``, with the ``delta-storage-s3-dynamodb`` jar), which makes commits safe for many
drivers. What the framework can see it refuses (:func:`unsafe_object_store_use`): a log store for ``s3a`` that is
not one of Delta's S3 stores (e.g. ``LocalLogStore`` or ``HDFSLogStore``, whose existence check and rename are
not atomic on S3 even within one driver).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

OBJECT_STORE_SCHEMES = ("s3a", "s3", "s3n", "gs", "abfs", "abfss", "wasb", "wasbs")
SAFE_S3_LOG_STORES = frozenset({"io.delta.storage.S3SingleDriverLogStore", "io.delta.storage.S3DynamoDBLogStore",
                                "org.apache.spark.sql.delta.storage.S3SingleDriverLogStore"})
LOG_STORES = {
    "file": "medallion.storage.AtomicLocalLogStore",
    "s3a": "io.delta.storage.S3SingleDriverLogStore",
}


@dataclass(frozen=True)
class ObjectStoreUrl:
    """A folder on an object store, ``scheme://bucket/key/prefix`` (no trailing slash).

    Joins like a path (``url / "tables" / name``) and prints as the URL; there is no local file behind it.

    Attributes:
        url: The URL, e.g. ``s3a://bucket/pipelines/sales``.
    """

    url: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "url", self.url.rstrip("/"))

    def __truediv__(self, part: str | Path) -> ObjectStoreUrl:
        return ObjectStoreUrl(f"{self.url}/{str(part).strip('/')}")

    def __str__(self) -> str:
        return self.url

    @property
    def scheme(self) -> str:
        """``s3a`` of ``s3a://bucket/x``."""
        return self.url.partition("://")[0].lower()

    @property
    def bucket(self) -> str:
        """``bucket`` of ``s3a://bucket/x``."""
        return self.url.partition("://")[2].partition("/")[0]

    @property
    def name(self) -> str:
        """The last part, like :attr:`pathlib.Path.name`."""
        return self.url.rsplit("/", 1)[-1]

    @property
    def parent(self) -> ObjectStoreUrl:
        """The enclosing folder (the bucket's root at most)."""
        head, _, _ = self.url.rpartition("/")
        return self if head.endswith(":/") else ObjectStoreUrl(head)


StoragePath = Path | ObjectStoreUrl


def is_object_store_url(text: str) -> bool:
    """Whether ``text`` is a URL of one of :data:`OBJECT_STORE_SCHEMES` (``s3a://bucket/...``)."""
    scheme, sep, rest = text.partition("://")
    return bool(sep) and scheme.lower() in OBJECT_STORE_SCHEMES and bool(rest.partition("/")[0])


def storage_path(text: str) -> StoragePath:
    """A storage location from its text: an :class:`ObjectStoreUrl` for an object-store URL, else a ``Path``
    (``file:`` stripped)."""
    if is_object_store_url(text):
        return ObjectStoreUrl(text)
    return Path(text.removeprefix("file://").removeprefix("file:"))


def is_local(path: StoragePath | str) -> bool:
    """Whether ``path`` is on the local file system (where the driver may commit Delta files itself)."""
    if isinstance(path, ObjectStoreUrl):
        return False
    text = str(path)
    return "://" not in text or text.startswith("file:")


def log_store(path: StoragePath | str) -> str:
    """The Delta log store class that commits to ``path`` (see the module's table)."""
    text = str(path)
    scheme = text.partition("://")[0].lower() if "://" in text else "file"
    return LOG_STORES.get(scheme, "io.delta.storage.HDFSLogStore")


def unsafe_object_store_use(storage: StoragePath | str, configured: Mapping[str, str]) -> str | None:
    """Why committing to ``storage`` with the log store ``configured`` (the ``spark.delta.logStore.*`` settings in
    effect) could lose commits even with one driver, or None when Delta's store for the scheme is a safe one."""
    if is_local(storage):
        return None
    scheme = str(storage).partition("://")[0].lower()
    chosen = configured.get(f"spark.delta.logStore.{scheme}.impl") or configured.get("spark.delta.logStore.class")
    if scheme != "s3a" or not chosen or chosen in SAFE_S3_LOG_STORES:
        return None
    return (f"spark.delta.logStore is {chosen} for {storage}: on s3a only Delta's S3 log stores "
            f"({', '.join(sorted(SAFE_S3_LOG_STORES))}) make a commit put-if-absent (S3SingleDriverLogStore for "
            "one driver, S3DynamoDBLogStore for several); with any other store two commits of one table can take "
            "the same version and one is lost. Remove the setting, or set one of those")
