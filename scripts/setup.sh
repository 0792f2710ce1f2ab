#!/usr/bin/env bash
# Idempotent set-up: a project-local virtualenv (.venv) with the pinned dependencies, and the Delta jars from
# Maven Central in .cache/jars. Takes seconds when everything is in place already.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
"$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info[:2] >= (3, 11) else 1)' \
  || { echo "setup: Python 3.11+ is needed (found $("$PYTHON" --version 2>&1))" >&2; exit 1; }
command -v java >/dev/null 2>&1 || { echo "setup: Java 17 is needed (apt-get install openjdk-17-jdk-headless)" >&2; exit 1; }

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv" >&2
  "$PYTHON" -m venv .venv
fi

stamp=.venv/.medallion-deps
want=$(cat setup.cfg pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setup: installing Python dependencies into .venv" >&2
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e '.[dev]'
  # The official Databricks stubs, only to check our API surface against them. --no-deps: their newest release
  # pulls in databricks-connect, which overwrites pyspark's own files.
  .venv/bin/python -m pip install -q --no-deps 'databricks-dlt==0.3.0'
  .venv/bin/python - <<'PY'
import importlib.metadata as md, sys
bad = [d for d in ("databricks-connect", "dlt") if d in {x.metadata["Name"].lower() for x in md.distributions()}]
if bad:
    sys.exit(f"setup: conflicting packages installed in .venv: {bad}; remove them (pip uninstall {' '.join(bad)})")
PY
  echo "$want" > "$stamp"
fi

.venv/bin/python -m framework.runner.jars fetch >/dev/null

# The framework's byte code, as pip writes it for installed packages (an editable install does not): where
# PYTHONDONTWRITEBYTECODE is set (many CI images and containers), Python would compile every framework module
# again in every process, 0.1-0.15 s of each cold `medallion run`. A module edited afterwards is compiled from its
# source again (Python checks the source's time and size), so this can never run stale code.
.venv/bin/python -m compileall -q framework || echo "setup: could not byte-compile framework/ (see above)" >&2

# The driver JVM's class-data sharing archive (framework/runner/cds.py): written once per JVM, jars and options by
# a training run of the sample pipeline (about a minute); cold sessions start about 3 s sooner with it. Without
# it everything works, only slower.
if ! .venv/bin/python -m framework.cds_training check >/dev/null 2>&1; then
  echo "setup: writing the JVM's class-data sharing archive (.cache/cds, about a minute)" >&2
  .venv/bin/python -m framework.cds_training build >/dev/null \
    || echo "setup: could not write the class-data sharing archive; sessions start without it" >&2
fi

# PostgreSQL for the database-source tests (framework/testing/postgres.py starts throwaway clusters with initdb
# and pg_ctl). Installed from Debian's packages when running as root (CI, containers) and initdb is nowhere.
if ! command -v initdb >/dev/null 2>&1 && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 \
   && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "setup: installing postgresql (Debian package) for the database-source tests" >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null) \
    || echo "setup: could not install postgresql; the database-source tests will fail" >&2
fi

# SeaweedFS, the S3-compatible server of the object-storage tests (framework/testing/s3.py): built from its Go
# module once (a few minutes on 2 cores, niced) into ~/.cache/medallion/seaweedfs/<version>/weed (per user: every clone shares it), milliseconds when cached.
if command -v go >/dev/null 2>&1; then
  bash scripts/build_seaweedfs.sh >/dev/null \
    || echo "setup: could not build SeaweedFS; the object-storage tests will fail" >&2
else
  echo "setup: no Go toolchain (https://go.dev/dl, 1.26+): the object-storage tests need it once to build SeaweedFS" >&2
fi

# Apache Kafka's own broker for the Kafka tests and `medallion kafka start` (framework/testing/kafka.py): its jars
# resolved by Maven from Maven Central once into ~/.cache/medallion/kafka/<version>/ (per user, not on Spark's
# class path; about 45 MB, 10-30 s), milliseconds when cached.
.venv/bin/python -m framework.testing.kafka fetch >/dev/null \
  || echo "setup: could not fetch Apache Kafka's jars; the Kafka tests will fail" >&2

# Headless Chromium renders the data-quality report in the end-to-end tests. Installed from Debian's packages
# when running as root (CI, containers); elsewhere that test says how to install it.
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "setup: installing chromium (Debian package) for the report's browser test" >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
    || echo "setup: could not install chromium; the browser test will be skipped" >&2
fi
