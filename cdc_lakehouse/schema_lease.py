"""One writer per schema on a shared metastore (README, "Sharing a warehouse").

A run that writes a schema's tables (a scheduled run, `dbt build`/`run`/`seed`/`snapshot`/`run-operation`,
maintenance) holds the schema's lease while it runs, so two runs never open batches in one schema at once.
The lease is a row of the table `cdc_schema_leases` in the metastore's PostgreSQL database: one atomic
statement takes it when it is free, expired, or already this holder's, on the server's clock. The holder
renews it every third of its term; a holder that died stops renewing, and the next run takes it once the
term is over (then the models' own recovery runs: README, "Operating it").

A run that finds the lease held waits for it, up to CDC_LEASE_WAIT_SECONDS (default 900; 0: refuse at
once), then stops with one line naming the holder. The term is CDC_LEASE_SECONDS (default 60).

With the embedded Derby metastore there is no lease: Derby admits one Spark driver at a time, which already
keeps runs apart. Other metastores (a Hive metastore service, a cloud catalog) have no lease either: there,
the scheduler keeps the runs of a schema apart (README, "Scheduling").
"""

import atexit
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

METASTORE_URL = "spark.hadoop.javax.jdo.option.ConnectionURL"
METASTORE_USER = "spark.hadoop.javax.jdo.option.ConnectionUserName"
METASTORE_PASSWORD = "spark.hadoop.javax.jdo.option.ConnectionPassword"

CREATE = """
create table if not exists cdc_schema_leases (
    schema_name text primary key,
    holder text not null,
    token bigint not null,
    expires_at timestamptz not null
)"""
# Free (no row), expired, or this holder's: take it. `token` counts the holders the lease has had.
TAKE = """
insert into cdc_schema_leases as lease (schema_name, holder, token, expires_at)
values (?, ?, 1, now() + make_interval(secs => ?))
on conflict (schema_name) do update
set holder = excluded.holder,
    token = lease.token + case when lease.holder = excluded.holder then 0 else 1 end,
    expires_at = excluded.expires_at
where lease.expires_at < now() or lease.holder = excluded.holder
returning token"""
HOLDER = """
select holder, to_char(expires_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS')
from cdc_schema_leases where schema_name = ?"""
RENEW = """
update cdc_schema_leases set expires_at = now() + make_interval(secs => ?)
where schema_name = ? and holder = ? and token = ?"""
RELEASE = "update cdc_schema_leases set expires_at = now() where schema_name = ? and holder = ? and token = ?"


class SchemaHeld(Exception):
    """Another run held the schema for longer than this one would wait."""


@dataclass
class _Lease:
    schema: str
    holder: str
    token: int
    database: "Database"
    stop: threading.Event = field(default_factory=threading.Event)


# Leases this process holds, by schema: a run inside a run of the same process (cdc-build's dbt commands)
# holds nothing more.
_held: dict[str, _Lease] = {}
_held_lock = threading.Lock()


def lease_seconds() -> int:
    return int(os.environ.get("CDC_LEASE_SECONDS", "60"))


def wait_seconds() -> int:
    return int(os.environ.get("CDC_LEASE_WAIT_SECONDS", "900"))


def holder_name() -> str:
    return f"{socket.gethostname()} pid {os.getpid()} ({uuid.uuid4().hex[:8]})"


class Database:
    """The metastore's PostgreSQL database, through the JDBC driver in the Spark driver's JVM."""

    def __init__(self, jvm, url: str, user: str | None, password: str | None) -> None:
        self._jvm, self._url, self._user, self._password = jvm, url, user, password

    def _execute(self, sql: str, parameters: tuple, rows: bool):
        connection = self._jvm.java.sql.DriverManager.getConnection(self._url, self._user, self._password)
        try:
            statement = connection.prepareStatement(sql)
            for index, value in enumerate(parameters, start=1):
                statement.setObject(index, value)
            if not rows:
                return statement.executeUpdate()
            result = statement.executeQuery()
            columns = result.getMetaData().getColumnCount()
            found = []
            while result.next():
                found.append(tuple(result.getString(column) for column in range(1, columns + 1)))
            return found
        finally:
            connection.close()

    def query(self, sql: str, *parameters) -> list[tuple]:
        return self._execute(sql, parameters, rows=True)

    def update(self, sql: str, *parameters) -> int:
        return self._execute(sql, parameters, rows=False)


def database_of(spark) -> Database | None:
    """The metastore's database when it is PostgreSQL (the profile's CDC_METASTORE_URL), else None."""
    url = spark.conf.get(METASTORE_URL, "")
    if not url.startswith("jdbc:postgresql:"):
        return None
    user, password = spark.conf.get(METASTORE_USER, None), spark.conf.get(METASTORE_PASSWORD, None)
    return Database(spark.sparkContext._jvm, url, user, password)


def take(database: Database, schema: str, holder: str) -> int | None:
    """Take or renew the schema's lease for `holder`: its token, or None while another holder's is live."""
    try:
        taken = database.query(TAKE, schema, holder, lease_seconds())
    except Exception as exc:  # py4j's JDBC error: no lease table yet
        if "cdc_schema_leases" not in str(exc):
            raise
        try:
            database.update(CREATE)
        except Exception as create_error:  # another run created it at the same moment
            if "duplicate key" not in str(create_error) and "already exists" not in str(create_error):
                raise
        taken = database.query(TAKE, schema, holder, lease_seconds())
    return int(taken[0][0]) if taken else None


def acquire(spark, schema: str, wait: float | None = None) -> _Lease | None:
    """Take the schema's lease for this process, waiting for it up to `wait` seconds (CDC_LEASE_WAIT_SECONDS);
    None when this process already holds it or the metastore has no lease (Derby, other metastores)."""
    database = database_of(spark)
    with _held_lock:
        if database is None or schema in _held:
            return None
    return acquire_from(database, schema, wait)


def acquire_from(database: Database, schema: str, wait: float | None = None) -> _Lease:
    holder, wait = holder_name(), wait_seconds() if wait is None else wait
    deadline, poll = time.monotonic() + wait, min(5.0, max(lease_seconds() / 6, 0.5))
    while (token := take(database, schema, holder)) is None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            held = database.query(HOLDER, schema)
            by, until = held[0] if held else ("nobody", "now")
            raise SchemaHeld(
                f"schema {schema} is held by {by} until {until} UTC (lease renewed while it runs); "
                f"waited {wait:.0f} s (CDC_LEASE_WAIT_SECONDS)"
            )
        time.sleep(min(poll, remaining))
    lease = _Lease(schema, holder, token, database)
    with _held_lock:
        _held[schema] = lease
    threading.Thread(target=_renew, args=(lease,), name=f"cdc-lease-{schema}", daemon=True).start()
    return lease


def _renew(lease: _Lease) -> None:
    seconds = lease_seconds()
    while not lease.stop.wait(seconds / 3):
        try:
            renewed = lease.database.update(RENEW, seconds, lease.schema, lease.holder, lease.token)
        except Exception as exc:  # the database unreachable for a while: try again at the next renewal
            print(f"cdc: could not renew the lease of schema {lease.schema}: {exc}", flush=True)
            continue
        if renewed == 0:
            print(f"cdc: the lease of schema {lease.schema} expired and another run took it", flush=True)
            return


def release(lease: _Lease | None) -> None:
    """Give the lease back (once; later calls do nothing)."""
    if lease is None or lease.stop.is_set():
        return
    lease.stop.set()
    with _held_lock:
        _held.pop(lease.schema, None)
    lease.database.update(RELEASE, lease.schema, lease.holder, lease.token)


@contextmanager
def schema_lease(spark, schema: str) -> Iterator[None]:
    """Hold the schema's lease for the block (a no-op where there is none, or when this process holds it)."""
    lease = acquire(spark, schema)
    try:
        yield
    finally:
        release(lease)


# dbt's commands that write the target schema's tables.
WRITING_COMMANDS = frozenset({"run", "build", "seed", "snapshot", "run-operation"})
_commands_seen: set[str] = set()


def hold_for_dbt_command(spark) -> None:
    """Called before each statement dbt runs (the dbt plugin): a writing dbt command not run inside a holder
    of this process (cdc-build) takes the lease at its first statement and releases it when it completes."""
    from dbt.adapters.factory import get_adapter_by_type
    from dbt.flags import get_flags
    from dbt_common.events.event_manager_client import add_callback_to_manager
    from dbt_common.invocation import get_invocation_id

    invocation = get_invocation_id()
    if invocation in _commands_seen:
        return
    _commands_seen.add(invocation)
    if getattr(get_flags(), "WHICH", None) not in WRITING_COMMANDS:
        return
    lease = acquire(spark, get_adapter_by_type("spark").config.credentials.schema)
    if lease is None:
        return

    def release_when_completed(event) -> None:
        if event.info.name == "CommandCompleted":
            release(lease)

    add_callback_to_manager(release_when_completed)
    atexit.register(release, lease)
