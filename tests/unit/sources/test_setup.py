"""The set-up brings what the database sources need: the PostgreSQL JDBC driver among the Maven jars, the ADBC
driver among the install requirements, PostgreSQL itself where it is missing (as root)."""

from __future__ import annotations

import configparser
from pathlib import Path

from framework.settings import load_local_settings

ROOT = Path(__file__).resolve().parents[3]


def test_the_postgresql_jdbc_driver_is_fetched_with_the_delta_jars() -> None:
    settings = load_local_settings(ROOT / "conf" / "spark.yaml")
    drivers = [c for c in settings.jar_coordinates if c.startswith("org.postgresql:postgresql:")]
    assert len(drivers) == 1
    major, minor, _patch = (int(x) for x in drivers[0].rsplit(":", 1)[1].split("."))
    assert (major, minor) >= (42, 7)
    assert any(p.name.startswith("postgresql-42.") for p in settings.jar_paths())


def test_the_adbc_driver_is_an_install_requirement() -> None:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    requires = cfg["options"]["install_requires"].split()
    assert any(r.startswith("adbc-driver-postgresql") for r in requires)


def test_setup_installs_postgresql_only_where_initdb_is_missing() -> None:
    script = (ROOT / "scripts" / "setup.sh").read_text()
    assert "apt-get install -y -qq postgresql" in script
    assert "command -v initdb" in script and "/usr/lib/postgresql/*/bin/initdb" in script
