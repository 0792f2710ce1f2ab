"""Writing the driver JVM's class-data sharing archive (:mod:`framework.runner.cds`): ``python -m
framework.cds_training build``, run by ``make setup``.

The training process runs the sample pipeline (Auto Loader, expectations, de-duplication, SCD 2 APPLY CHANGES, a
materialized view) twice, a first and an incremental update, in a JVM started with ``-XX:ArchiveClassesAtExit``:
the classes those updates load are the ones a cold ``medallion run`` needs first.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from framework.errors import EnvironmentSetupError
from framework.runner import cds
from framework.runner.session import check_java, driver_class_path, driver_java_options
from framework.settings import PROJECT_ROOT, LocalSparkSettings, load_local_settings


def ensure_archive(settings: LocalSparkSettings, timeout: float = 900.0) -> Path | None:
    """The archive of the sessions this checkout starts, written now when missing. None when class-data
    sharing is off or the JVM wrote no archive (a JDK without a base archive).

    Raises:
        EnvironmentSetupError: The training run failed; the message holds the end of its output.
    """
    if not cds.enabled(settings):
        return None
    archive = current_archive(settings)
    if archive.exists():
        return archive
    archive.parent.mkdir(parents=True, exist_ok=True)
    partial = archive.with_name(f"{archive.stem}.{os.getpid()}.tmp")
    with tempfile.TemporaryDirectory(prefix="medallion-cds-") as work:
        env = {**os.environ, cds.DUMP_ENV: str(partial)}
        # capture_output waits until the JVM, which inherits the pipes, has exited: written the archive
        result = subprocess.run([sys.executable, "-m", "framework.cds_training", "train", work], env=env,
                                capture_output=True, text=True, timeout=timeout, check=False)
    if result.returncode != 0:
        partial.unlink(missing_ok=True)
        raise EnvironmentSetupError(f"the class-data sharing training run failed (exit {result.returncode}):\n"
                                    f"{(result.stdout + result.stderr)[-3000:]}")
    if not partial.exists():
        return None
    partial.replace(archive)
    for stale in archive.parent.glob("driver-*.jsa"):
        if stale != archive:
            stale.unlink(missing_ok=True)
    return archive


def current_archive(settings: LocalSparkSettings) -> Path:
    """Where the archive of the sessions this checkout starts is (whether it exists or not)."""
    return cds.archive_path(settings, check_java(), driver_class_path(settings), driver_java_options(settings))


def train(work: Path) -> None:
    """Run the sample pipeline's first and an incremental update in this process, into ``work``."""
    from framework.runner.session import get_or_create_session
    from framework.runner.update import UpdateOptions, run_update
    from framework.sample_data import write_customer_changes, write_orders
    from framework.spec import load_spec

    landing, storage = work / "landing", work / "storage"
    spec = load_spec(PROJECT_ROOT / "conf" / "sample.yaml",
                     overrides={"storage": str(storage), "paths": {"dbfs:/mnt/landing": str(landing)}})
    spark = get_or_create_session()
    for batch in (1, 2):
        write_orders(landing / "orders", batch)
        write_customer_changes(landing / "customers", batch)
        result = run_update(spec, UpdateOptions(out=io.StringIO()), spark=spark)
        if not result.succeeded:
            raise EnvironmentSetupError(f"training update {batch} failed: {result.error}")
    spark.stop()


def main(argv: list[str] | None = None) -> int:
    """``check``: exit 0 when the archive is in place; ``build``: write it when missing (prints its path);
    ``train WORK``: the training process."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        if argv[:1] == ["train"] and len(argv) == 2:
            train(Path(argv[1]))
            return 0
        if argv == ["check"]:  # exit 0 when the archive is in place (or class-data sharing is off)
            settings = load_local_settings()
            return 0 if not cds.enabled(settings) or current_archive(settings).exists() else 1
        if argv == ["build"]:
            archive = ensure_archive(load_local_settings())
            print(archive if archive is not None else "class-data sharing: off or not supported by this JVM")
            return 0
    except EnvironmentSetupError as exc:
        print(exc, file=sys.stderr)
        return 1
    print("usage: python -m framework.cds_training check | build | train WORK", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
