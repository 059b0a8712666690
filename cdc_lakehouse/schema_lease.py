"""One writer per schema on a shared metastore (README, "Sharing a warehouse").

A run that writes a schema's tables (a scheduled run, `dbt build`/`run`/`seed`/`snapshot`/`run-operation`,
maintenance) holds the schema's lease while it runs, so two runs never open batches in one schema at once.
The lease is a row of the table `cdc_schema_leases` in the metastore's PostgreSQL database: one atomic
statement takes it when it is free, expired, or already this holder's, on the server's clock. The holder
renews it every third of its term and gives it back when done; a holder that died stops renewing, and the next
run takes it once the term is over (then the models' own recovery runs: README, "Operating it").

A run that finds the lease held waits for it, up to CDC_LEASE_WAIT_SECONDS (default 900; 0: refuse at
once), then stops with one line naming the holder. The term is CDC_LEASE_SECONDS (default 60).

Fencing: a holder stopped past its term (a long pause, a suspended machine) may wake after another run took
the lease. The run that takes a lease its holder did not give back first changes the metadata of every table
the lease covers (a table property), so a write of the old holder's still in flight fails at its Delta
commit; and every statement the old holder starts afterwards is refused (ensure_held), so its run stops
with one line naming the new holder. What the old holder committed before that is a crashed run's, which
the models' own recovery discards (README, "Sharing a warehouse"; docs/decisions.md).

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
from typing import NamedTuple

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
# Free (no row), expired, or this holder's: take it. `token` counts the holders the lease has had; the holder it
# was taken from (blank: given back) says whether that one may still be writing.
TAKE = """
with previous as (
    select case when expires_at = '-infinity' then '' else holder end as holder
    from cdc_schema_leases where schema_name = ?
)
insert into cdc_schema_leases as lease (schema_name, holder, token, expires_at)
values (?, ?, 1, now() + make_interval(secs => ?))
on conflict (schema_name) do update
set holder = excluded.holder,
    token = lease.token + case when lease.holder = excluded.holder then 0 else 1 end,
    expires_at = excluded.expires_at
where lease.expires_at < now() or lease.holder = excluded.holder
returning token, (select holder from previous)"""
HOLDER = """
select holder, to_char(expires_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS')
from cdc_schema_leases where schema_name = ?"""
# Not once given back: a renewal racing the release must not hold the lease again.
RENEW = """
update cdc_schema_leases set expires_at = now() + make_interval(secs => ?)
where schema_name = ? and holder = ? and token = ? and expires_at <> '-infinity'"""
# Given back: expired since always, so the next holder knows this one stopped writing (an expiry does not say).
RELEASE = "update cdc_schema_leases set expires_at = '-infinity' where schema_name = ? and holder = ? and token = ?"
HOLDER_AND_TOKEN = "select holder, token from cdc_schema_leases where schema_name = ?"
# Set to its token on every table a lease covers by a run that took the lease over from a holder that did not
# give it back (a key with "token" in it would show redacted).
FENCE_PROPERTY = "cdc.lease_fence"


class SchemaHeld(Exception):
    """Another run held the schema for longer than this one would wait."""


class LeaseLost(SchemaHeld):
    """This run's lease passed to another holder while it was stopped: it may write nothing more."""


class Taken(NamedTuple):
    token: int
    # The holder the lease was taken from: None (a new lease), '' (given back), this holder's (a renewal).
    previous_holder: str | None


def now() -> float:
    """Seconds on a clock that goes on while the process is stopped or the machine suspended."""
    return time.clock_gettime(time.CLOCK_BOOTTIME)


@dataclass
class _Lease:
    schema: str
    holder: str
    token: int
    database: "Database"
    # Before this moment (now()) the lease is known to be this holder's: the moment its last take or renewal
    # was sent, plus the term; the server's expiry is later.
    valid_until: float
    stop: threading.Event = field(default_factory=threading.Event)
    lost: bool = False


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


def take(database: Database, schema: str, holder: str) -> Taken | None:
    """Take or renew the schema's lease for `holder`: its token and the holder before, or None while another
    holder's is live."""
    try:
        taken = database.query(TAKE, schema, schema, holder, lease_seconds())
    except Exception as exc:  # py4j's JDBC error: no lease table yet
        if "cdc_schema_leases" not in str(exc):
            raise
        try:
            database.update(CREATE)
        except Exception as create_error:  # another run created it at the same moment
            if "duplicate key" not in str(create_error) and "already exists" not in str(create_error):
                raise
        taken = database.query(TAKE, schema, schema, holder, lease_seconds())
    return Taken(int(taken[0][0]), taken[0][1]) if taken else None


def acquire(spark, schema: str, wait: float | None = None) -> _Lease | None:
    """Take the schema's lease for this process, waiting for it up to `wait` seconds (CDC_LEASE_WAIT_SECONDS);
    None when this process already holds it or the metastore has no lease (Derby, other metastores)."""
    database = database_of(spark)
    with _held_lock:
        if database is None or schema in _held:
            return None
    lease, taken_over = acquire_from(database, schema, wait)
    if taken_over:
        fence(spark, schema, lease.token)
    return lease


def acquire_from(database: Database, schema: str, wait: float | None = None) -> tuple[_Lease, bool]:
    """The lease, and whether it was taken over from a holder that did not give it back."""
    holder, wait = holder_name(), wait_seconds() if wait is None else wait
    deadline, poll = time.monotonic() + wait, min(5.0, max(lease_seconds() / 6, 0.5))
    while True:
        sent = now()
        if (taken := take(database, schema, holder)) is not None:
            break
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            held = database.query(HOLDER, schema)
            by, until = held[0] if held else ("nobody", "now")
            raise SchemaHeld(
                f"schema {schema} is held by {by} until {until} UTC (lease renewed while it runs); "
                f"waited {wait:.0f} s (CDC_LEASE_WAIT_SECONDS)"
            )
        time.sleep(min(poll, remaining))
    lease = _Lease(schema, holder, taken.token, database, valid_until=sent + lease_seconds())
    with _held_lock:
        _held[schema] = lease
    threading.Thread(target=_renew, args=(lease,), name=f"cdc-lease-{schema}", daemon=True).start()
    return lease, taken.previous_holder not in (None, "", holder)


def _renew(lease: _Lease) -> None:
    seconds = lease_seconds()
    while not lease.stop.wait(seconds / 3) and renew(lease) is not False:
        pass


def renew(lease: _Lease) -> bool | None:
    """Renew the lease: True, False once another holder has it, None when the database did not answer."""
    sent = now()
    try:
        renewed = lease.database.update(RENEW, lease_seconds(), lease.schema, lease.holder, lease.token)
    except Exception as exc:  # unreachable for a while: the next renewal tries again, a write past the term stops
        print(f"cdc: could not renew the lease of {lease.schema}: {exc}", flush=True)
        return None
    if renewed == 0:
        lease.lost = True
        return False
    lease.valid_until = max(lease.valid_until, sent + lease_seconds())
    return True


def ensure_held(schema: str) -> None:
    """Before a write of this process under the lease of `schema` (a schema, or schema.table): raise LeaseLost
    once the lease passed to another holder. Free while the last renewal is within its term; past it (the
    process was stopped, or the renewals failed), one renewal decides."""
    with _held_lock:
        lease = _held.get(schema)
    if lease is None or (not lease.lost and now() < lease.valid_until):
        return
    if not lease.lost and renew(lease):
        return
    lease.lost = True
    try:
        held = lease.database.query(HOLDER_AND_TOKEN, schema)
        by = f"{held[0][0]} (token {held[0][1]})" if held else "nobody"
    except Exception:  # unreachable: this run cannot show that it still holds the lease
        by = "an unknown holder (the metastore's database did not answer)"
    raise LeaseLost(
        f"lost the lease of {schema} to {by} while stopped past its term of {lease_seconds()} s "
        "(CDC_LEASE_SECONDS): this run stops; the next holder discards what it left unfinished"
    )


def fence(spark, schema: str, token: int) -> None:
    """Set the lease's token on every table the lease covers (the schema's, or the one table): a metadata change
    fails the commit of any write begun before it (Delta's conflict check), so a frozen holder's write in
    flight cannot land after this one's."""
    database, _, table = schema.partition(".")
    if not spark.catalog.databaseExists(database):
        return
    tables = [table] if table else sorted(names_in(spark, "tables", database) - names_in(spark, "views", database))
    for name in tables:
        try:
            spark.sql(
                f"alter table {quoted(database)}.{quoted(name)} set tblproperties ('{FENCE_PROPERTY}' = '{int(token)}')"
            )
        except Exception as exc:  # dropped since it was listed: nothing left to fence
            if "TABLE_OR_VIEW_NOT_FOUND" not in str(exc):
                raise


def names_in(spark, kind: str, database: str) -> set[str]:
    """The names `show tables` or `show views` lists in a schema, less the session's temporary views."""
    return {row[1] for row in spark.sql(f"show {kind} in {quoted(database)}").collect() if not row.isTemporary}


def quoted(identifier: str) -> str:
    return "`" + identifier.replace("`", "``") + "`"


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
# dbt command (invocation id) -> the schema whose lease its statements run under, or None.
_commands_seen: dict[str, str | None] = {}


def hold_for_dbt_command(spark) -> None:
    """Called before each statement dbt runs (the dbt plugin): a writing dbt command not run inside a holder
    of this process (cdc-build) takes the lease at its first statement and releases it when it completes;
    every statement of a writing command is refused once the lease it runs under passed to another holder."""
    from dbt_common.invocation import get_invocation_id

    invocation = get_invocation_id()
    if invocation not in _commands_seen:
        _commands_seen[invocation] = _hold_for_command(spark)
    if _commands_seen[invocation] is not None:
        ensure_held(_commands_seen[invocation])


def _hold_for_command(spark) -> str | None:
    """The schema whose lease a dbt command's statements run under, taking it if this process does not hold
    it; None for a command that does not write, or where there is no lease."""
    from dbt.adapters.factory import get_adapter_by_type
    from dbt.flags import get_flags
    from dbt_common.events.event_manager_client import add_callback_to_manager

    if getattr(get_flags(), "WHICH", None) not in WRITING_COMMANDS:
        return None
    schema = get_adapter_by_type("spark").config.credentials.schema
    lease = acquire(spark, schema)
    if lease is None:
        with _held_lock:
            return schema if schema in _held else None

    def release_when_completed(event) -> None:
        if event.info.name == "CommandCompleted":
            release(lease)

    add_callback_to_manager(release_when_completed)
    atexit.register(release, lease)
    return schema
