"""A throwaway PostgreSQL cluster for tests: ``initdb`` + ``pg_ctl`` in a temporary folder, on a free port.

PostgreSQL refuses to run as root, so when the tests run as root (CI, containers) the server runs as the
``postgres`` user through ``runuser``; its folder is created outside pytest's (root-only) temporary tree and
handed to that user. The socket lives in the same folder (``-k``), so nothing touches ``/var/run/postgresql``.
TCP connections on 127.0.0.1 need a password (SCRAM), as a real database does; the local socket trusts.

Fixtures (registered by ``framework.testing.plugin``):

- ``postgres``: one server for the whole test session (about 1 s to start), stopped with
  ``pg_ctl -m immediate stop``;
- ``postgres_db``: a fresh, empty database on it for one test, as a :class:`PostgresDatabase`.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from framework.errors import EnvironmentSetupError

SUPERUSER = "medallion"
PASSWORD = "medallion-test-secret"  # a throwaway cluster's password: it never leaves the temporary folder


def postgres_bin_dir() -> Path:
    """The folder of ``initdb`` and ``pg_ctl``: ``$PG_BIN``, the newest ``/usr/lib/postgresql/*/bin``, or PATH.

    Raises:
        EnvironmentSetupError: PostgreSQL is not installed (``scripts/setup.sh`` installs it as root).
    """
    if os.environ.get("PG_BIN"):
        return Path(os.environ["PG_BIN"])
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    if versions:
        return Path(versions[-1]).parent
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).parent
    raise EnvironmentSetupError("PostgreSQL is not installed (no initdb): apt-get install postgresql, or set "
                                "PG_BIN to the folder holding initdb and pg_ctl")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """``count`` distinct free ports on 127.0.0.1: the sockets are held together, so no two of one set collide
    (one CI run had a worker's web UI take the master's port when they were picked one at a time)."""
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in sockets]


@dataclass(frozen=True)
class PostgresServer:
    """A running throwaway cluster."""

    folder: Path
    port: int
    bin_dir: Path
    run_as: str | None  # the OS user the server runs as (None: the current one)

    @property
    def data_dir(self) -> Path:
        """The cluster's data folder."""
        return self.folder / "data"

    def url(self, database: str = "postgres") -> str:
        """The JDBC URL of ``database`` (credentials are given as options, not in the URL)."""
        return f"jdbc:postgresql://127.0.0.1:{self.port}/{database}"

    def pg_ctl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run ``pg_ctl`` on this cluster (as the server's user)."""
        return _run(self.run_as, [str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), *args], check=check)

    def stop(self) -> None:
        """Stop the server at once (``-m immediate``: no checkpoint, a throwaway cluster needs none); a server
        that is not running stays so."""
        self.pg_ctl("-m", "immediate", "-w", "stop", check=False)

    def start(self) -> None:
        """Start the (stopped) server again on the same port."""
        _start(self)

    def restart(self) -> None:
        """Stop and start again, e.g. to drop every open connection."""
        self.stop()
        _start(self)


@dataclass(frozen=True)
class PostgresDatabase:
    """One database of a :class:`PostgresServer`, with what a reader needs to connect."""

    server: PostgresServer
    name: str
    user: str = SUPERUSER
    password: str = PASSWORD

    @property
    def url(self) -> str:
        """The database's JDBC URL."""
        return self.server.url(self.name)

    @property
    def options(self) -> dict[str, str]:
        """``url``, ``user`` and ``password``, as given to ``spark.read.jdbc`` or ``jdbc_incremental``."""
        return {"url": self.url, "user": self.user, "password": self.password}

    def execute(self, *statements: str, params: Sequence[Any] | None = None) -> None:
        """Run SQL statements in one transaction and commit."""
        with self.connect() as conn, conn.cursor() as cur:
            for statement in statements:
                cur.execute(statement, params)
            conn.commit()

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        """The rows of one query."""
        with self.connect() as conn, conn.cursor() as cur:
            cur.execute(sql)
            return list(cur.fetchall())

    def connect(self, autocommit: bool = False) -> Any:
        """A DB-API connection (ADBC PostgreSQL driver); the caller commits unless ``autocommit``."""
        from adbc_driver_postgresql import dbapi

        uri = f"postgresql://{self.user}:{self.password}@127.0.0.1:{self.server.port}/{self.name}"
        return dbapi.connect(uri, autocommit=autocommit)


def _run(user: str | None, argv: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    command = ["runuser", "-u", user, "--", *argv] if user else argv
    result = subprocess.run(command, capture_output=True, text=True, check=False, cwd="/")
    if check and result.returncode != 0:
        raise EnvironmentSetupError(f"{' '.join(argv[:1])} failed (exit {result.returncode}): "
                                    f"{(result.stdout + result.stderr)[-1500:]}")
    return result


def _server_user() -> str | None:
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        raise EnvironmentSetupError("PostgreSQL refuses to run as root and there is no 'postgres' user: "
                                    "apt-get install postgresql creates it") from None
    return "postgres"


def _start(server: PostgresServer) -> None:
    options = f"-p {server.port} -k {server.folder} -c listen_addresses=127.0.0.1 -c fsync=off " \
              "-c full_page_writes=off -c max_connections=60"
    server.pg_ctl("-w", "-t", "60", "-l", str(server.folder / "server.log"), "-o", options, "start")


def start_server(folder: Path | None = None) -> PostgresServer:
    """Create and start a cluster in ``folder`` (a new temporary one by default) on a free port."""
    bin_dir = postgres_bin_dir()
    user = _server_user()
    folder = folder or Path(tempfile.mkdtemp(prefix="medallion-pg-"))
    folder.mkdir(parents=True, exist_ok=True)
    if user is not None:
        entry = pwd.getpwnam(user)
        os.chown(folder, entry.pw_uid, entry.pw_gid)
    pwfile = folder / "pwfile"
    pwfile.write_text(PASSWORD + "\n")
    if user is not None:
        os.chown(pwfile, pwd.getpwnam(user).pw_uid, -1)
    _run(user, [str(bin_dir / "initdb"), "-D", str(folder / "data"), "-U", SUPERUSER, "--pwfile", str(pwfile),
                "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync"])
    pwfile.unlink()
    server = PostgresServer(folder, free_port(), bin_dir, user)
    _start(server)
    return server


def create_database(server: PostgresServer, name: str | None = None) -> PostgresDatabase:
    """A new empty database on ``server``."""
    name = name or f"db_{uuid.uuid4().hex[:10]}"
    admin = PostgresDatabase(server, "postgres")
    with admin.connect(autocommit=True) as conn, conn.cursor() as cur:
        cur.execute(f'CREATE DATABASE "{name}"')
    return PostgresDatabase(server, name)


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL server for the test session, removed afterwards."""
    server = start_server()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(server.folder, ignore_errors=True)


@pytest.fixture
def postgres_db(postgres: PostgresServer) -> PostgresDatabase:
    """A fresh, empty database for one test."""
    return create_database(postgres)
