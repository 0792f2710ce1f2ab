"""What an update runs in: the session, the spec, the path mapping, the update's id and time, and where each
dataset, checkpoint and state folder lives. Frozen: built once per update (or validate), read everywhere."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from framework.dbutils import LocalSecrets
from framework.paths import PathMapper
from framework.registry import Registry, normalize_name
from framework.secret_refs import resolve_references
from framework.settings import load_local_settings
from framework.storage.url import StoragePath, storage_path

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from framework.declarations import Flow
    from framework.spec import PipelineSpec


@dataclass(frozen=True)
class UpdateEnvironment:
    """The fixed facts of one update.

    ``configuration`` is the pipeline configuration pipeline code reads with ``spark.conf.get`` (and may
    extend with ``spark.conf.set``): the one mutable member, owned by the session proxy.
    """

    spark: SparkSession
    spec: PipelineSpec
    mapper: PathMapper
    update_id: str
    update_time: datetime
    configuration: dict[str, str] = field(default_factory=dict)
    small_input_bytes: int = 0  # small_updates.max_input_bytes of conf/spark.yaml (small views: storage/overwrites.py)
    # REPLACE WHERE predicate overrides of this update (lower-case flow name -> predicate; replace_where.py)
    replace_where_overrides: dict[str, str] = field(default_factory=dict)

    @classmethod
    def create(cls, spec: PipelineSpec, spark: SparkSession, update_id: str, *,
               read_secrets: bool = True) -> UpdateEnvironment:
        """The environment of update ``update_id`` of ``spec`` (``"validate"`` for a dry run); with
        ``read_secrets``, :meth:`read_secrets` too (an update calls it once its event log is open).

        Raises:
            SecretNotFoundError: A referenced secret is not set locally.
        """
        configuration = dict(spec.configuration)
        configuration.setdefault("pipelines.id", spec.pipeline_id)
        configuration["pipelines.updateId"] = update_id
        env = cls(spark=spark, spec=spec, mapper=PathMapper.from_spec(spec.paths, spec.root), update_id=update_id,
                  update_time=datetime.now(UTC).replace(tzinfo=None), configuration=configuration,
                  small_input_bytes=load_local_settings().small_updates.max_input_bytes)
        if read_secrets:
            env.read_secrets()
        return env

    def read_secrets(self) -> None:
        """Secret references in the configuration (``{{secrets/<scope>/<key>}}``, ``framework/secret_refs.py``)
        read as their values, as ``dbutils.secrets.get`` reads them (and registered for redaction).

        Raises:
            SecretNotFoundError: A referenced secret is not set locally.
        """
        self.configuration.update(resolve_references(self.configuration, LocalSecrets(self.spec.root / ".secrets.env")))

    def map_path(self, path: str) -> str:
        """A Databricks path (``dbfs:/``, ``/Volumes/``, ...) as the local path the spec maps it to."""
        return self.mapper.map(path)

    def table_path(self, registry: Registry, name: str) -> str:
        """Where dataset ``name`` is stored: its declared ``path``, or ``<storage>/tables/<name>``."""
        dataset = registry.dataset(name)
        if dataset is not None and dataset.path:
            return self.map_path(dataset.path)
        return str(self.spec.tables_dir / (dataset.name if dataset else name))

    def checkpoint_path(self, flow: Flow) -> str:
        """The streaming checkpoint of ``flow``: ``<storage>/checkpoints/<target>/<flow>``."""
        return str(self.spec.checkpoints_dir / normalize_name(flow.target) / normalize_name(flow.name))

    def schema_location(self, flow: Flow) -> str:
        """The default Auto Loader schema location of ``flow``'s sources."""
        return str(self.spec.autoloader_dir / normalize_name(flow.target) / normalize_name(flow.name))

    def cdc_state_path(self, target_key: str) -> str:
        """The APPLY CHANGES state of a target (tombstones, sequence high-water marks)."""
        return str(self.spec.storage / "system" / "apply_changes" / target_key)

    def dataset_state(self, key: str) -> list[StoragePath]:
        """Every folder of state a full refresh of dataset ``key`` clears (besides the table itself), local or on
        an object store."""
        storage = self.spec.storage
        return [storage / "checkpoints" / key, storage / "autoloader" / key, storage_path(self.cdc_state_path(key))]


