"""A PostgreSQL server on a free port of 127.0.0.1, from the binaries of the `pgserver` wheel (PyPI), with
its data in a temporary folder: the shared Hive metastore of `make test-cluster` (CDC_METASTORE_URL).

PostgreSQL refuses to run as root: as root (CI), the server runs as a system user made for it, from a copy of
the binaries that user can reach (the project may sit under a folder only root can enter, such as /root).
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
from server_process import free_port

POSTGRES_INSTALL = Path(pgserver.__file__).resolve().parent / "pginstall"
POSTGRES_BIN = POSTGRES_INSTALL / "bin"
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


def _copy_for_others(root: Path) -> Path:
    """The binaries, their files and the wheel's bundled libraries (which the binaries find relative to
    themselves, in site-packages/pgserver.libs) copied under root; the copy's install folder."""
    site_packages = POSTGRES_INSTALL.parents[1]
    root.chmod(0o755)
    for part in ("pgserver/pginstall/bin", "pgserver/pginstall/lib", "pgserver/pginstall/share", "pgserver.libs"):
        shutil.copytree(site_packages / part, root / part, symlinks=True)
    return root / POSTGRES_INSTALL.relative_to(site_packages)


@contextmanager
def postgres_server() -> Iterator[Postgres]:
    """Start a new server (trust authentication, user `postgres`), yield it, stop it and delete its data."""
    user = _server_user()
    # Not under pytest's tmp_path: its folders are private to the user running the tests.
    data = Path(tempfile.mkdtemp(prefix="cdc-postgres-"))
    install = POSTGRES_INSTALL
    if user:
        shutil.chown(data, user, user)
        install = _copy_for_others(Path(tempfile.mkdtemp(prefix="cdc-postgres-install-")))
    port = free_port()

    def pg(program: str, *arguments: str) -> None:
        subprocess.run(
            [str(install / "bin" / program), "-D", str(data), *arguments], check=True, user=user, capture_output=True
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
        if install != POSTGRES_INSTALL:
            shutil.rmtree(install.parents[1], ignore_errors=True)
