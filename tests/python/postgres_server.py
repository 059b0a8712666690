"""A PostgreSQL server on a free port of 127.0.0.1, from the binaries of the `pgserver` wheel (PyPI), with
its data in a temporary folder: the shared Hive metastore of `make test-cluster` (CDC_METASTORE_URL).

PostgreSQL refuses to run as root: as root (CI), the server runs as a system user made for it.
"""

import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pgserver
from kafka_broker import free_port

POSTGRES_BIN = Path(pgserver.__file__).resolve().parent / "pginstall" / "bin"
SERVER_USER = "cdcpostgres"


@dataclass(frozen=True)
class Postgres:
    port: int

    def jdbc_url(self, database: str) -> str:
        return f"jdbc:postgresql://127.0.0.1:{self.port}/{database}"

    def psql(self, database: str, sql: str) -> str:
        """Run SQL as the superuser `postgres`; its output unaligned, without headers."""
        command = [str(POSTGRES_BIN / "psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres"]
        return subprocess.run(
            [*command, "-d", database, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql],
            check=True,
            capture_output=True,
            text=True,
        ).stdout


def _server_user() -> str | None:
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(SERVER_USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", SERVER_USER], check=True)
    return SERVER_USER


@contextmanager
def postgres_server() -> Iterator[Postgres]:
    """Start a new server (trust authentication, user `postgres`), yield it, stop it and delete its data."""
    user = _server_user()
    # Not under pytest's tmp_path: its folders are private to the user running the tests.
    data = Path(tempfile.mkdtemp(prefix="cdc-postgres-"))
    if user:
        shutil.chown(data, user, user)
    port = free_port()

    def pg(program: str, *arguments: str) -> None:
        subprocess.run(
            [str(POSTGRES_BIN / program), "-D", str(data), *arguments], check=True, user=user, capture_output=True
        )

    try:
        pg("initdb", "--auth=trust", "--username=postgres", "--encoding=UTF8", "--no-sync")
        # fsync off: a test server's data is thrown away, and every metastore commit would wait for the disk.
        pg(
            "pg_ctl",
            "-w",
            "-l",
            str(data / "server.log"),
            "-o",
            f"-h 127.0.0.1 -p {port} -k {data} -c fsync=off",
            "start",
        )
        try:
            yield Postgres(port)
        finally:
            pg("pg_ctl", "-w", "-m", "fast", "stop")
    finally:
        shutil.rmtree(data, ignore_errors=True)
