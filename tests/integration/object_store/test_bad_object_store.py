"""Object storage that cannot be used fails the update before any flow runs, with a code, a message naming the
path, and never the secret key: an endpoint that does not answer, refused credentials, a missing bucket; and a
log store other than Delta's S3 ones for s3a is refused (its commits are not put-if-absent there)."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

import pytest

from framework.errors import ObjectStoreError
from framework.runner.update import UpdateOptions, run_update
from framework.spec import load_spec
from framework.testing.s3 import free_port
from tests.conftest import REPO_ROOT

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from framework.testing.s3 import S3Server

pytestmark = pytest.mark.spark

WRONG_SECRET = "wrong-secret-key-never-shown-9f3b"


def _fail(spark: SparkSession, storage: str, conf: dict[str, str], **overrides: object) -> ObjectStoreError:
    spec = load_spec(REPO_ROOT / "conf" / "file_arrival.yaml", overrides={
        "storage": storage, "schema": "it_s3a_bad", "spark_conf": conf, **overrides})
    out = io.StringIO()
    with pytest.raises(ObjectStoreError) as caught:
        run_update(spec, UpdateOptions(write_report=False, out=out), spark=spark)
    assert "flow" not in out.getvalue().lower()  # failed before any flow started
    return caught.value


@pytest.mark.parametrize("case", ["unreachable", "credentials", "bucket"])
def test_unusable_object_store_fails_before_any_flow(spark: SparkSession, s3_server: S3Server, s3_prefix: str,
                                                     case: str) -> None:
    storage = f"{s3_prefix}/storage"
    conf = s3_server.spark_conf()
    if case == "unreachable":
        conf = s3_server.spark_conf(endpoint=f"http://127.0.0.1:{free_port()}")
    elif case == "credentials":
        conf = s3_server.spark_conf(secret_key=WRONG_SECRET)
    else:
        storage = "s3a://no-such-bucket-medallion/storage"
    error = _fail(spark, storage, conf)
    assert error.code == {"unreachable": "OBJECT_STORE_UNREACHABLE", "credentials": "OBJECT_STORE_ACCESS_DENIED",
                          "bucket": "OBJECT_STORE_BUCKET_NOT_FOUND"}[case]
    assert storage in str(error) and error.path == storage
    assert WRONG_SECRET not in str(error) and s3_server.secret_key not in str(error)
    assert s3_server.keys(s3_prefix) == []  # nothing was written: not even the event log


def test_a_log_store_unsafe_on_s3a_is_refused(spark: SparkSession, s3_server: S3Server, s3_prefix: str) -> None:
    conf = {**s3_server.spark_conf(), "spark.delta.logStore.s3a.impl": "io.delta.storage.LocalLogStore"}
    error = _fail(spark, f"{s3_prefix}/storage", conf)
    assert error.code == "OBJECT_STORE_UNSAFE_COMMITS"
    assert "LocalLogStore" in str(error) and "S3SingleDriverLogStore" in str(error)
    assert s3_server.keys(s3_prefix) == []
