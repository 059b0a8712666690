"""The schema lease (cdc_lakehouse/schema_lease.py) on a real PostgreSQL server, through the JDBC driver in the
test session's JVM: who takes it, who waits, who is refused and with what line, expiry, and a race of many
takers on an empty database (README, "Sharing a warehouse").
"""

import threading
import time

import pytest
from postgres_server import postgres_server

from cdc_lakehouse import schema_lease
from cdc_lakehouse.schema_lease import LeaseLost, SchemaHeld


@pytest.fixture(scope="module")
def database(spark):
    with postgres_server() as server:
        server.psql("postgres", "create database leases")
        yield schema_lease.Database(spark.sparkContext._jvm, server.jdbc_url("leases"), "postgres", None)


def token_of(database, schema: str, holder: str) -> int | None:
    taken = schema_lease.take(database, schema, holder)
    return taken and taken.token


def holder_of(database, schema: str) -> tuple[str, int]:
    ((holder, _),) = database.query(schema_lease.HOLDER, schema)
    ((token,),) = database.query("select token from cdc_schema_leases where schema_name = ?", schema)
    return holder, int(token)


def test_many_takers_at_once_on_an_empty_database_one_wins(database):
    # The first statements also race to create the lease table.
    taken: dict[str, int | None] = {}
    start = threading.Barrier(6)

    def take(holder: str) -> None:
        start.wait()
        taken[holder] = token_of(database, "race", holder)

    threads = [threading.Thread(target=take, args=(f"taker {number}",)) for number in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    winners = [holder for holder, token in taken.items() if token is not None]
    assert len(winners) == 1 and taken[winners[0]] == 1
    assert holder_of(database, "race") == (winners[0], 1)


def test_a_held_lease_is_refused_to_others_until_it_expires_then_the_next_holder_counts_one_more(database, monkeypatch):
    monkeypatch.setenv("CDC_LEASE_SECONDS", "2")
    assert schema_lease.take(database, "cdc", "run A") == (1, None)
    assert schema_lease.take(database, "cdc", "run B") is None
    # The holder renewing keeps its token; another schema is another lease.
    assert schema_lease.take(database, "cdc", "run A") == (1, "run A")
    assert token_of(database, "other", "run B") == 1
    assert database.update(schema_lease.RENEW, 2, "cdc", "run A", 1) == 1
    time.sleep(2.5)
    # Run A died or is stopped (no renewal): its lease is over, run B takes it from run A, which it did not give
    # back, and run A can no longer renew.
    assert schema_lease.take(database, "cdc", "run B") == (2, "run A")
    assert database.update(schema_lease.RENEW, 2, "cdc", "run A", 1) == 0
    assert holder_of(database, "cdc") == ("run B", 2)


def test_a_run_that_finds_the_schema_held_waits_then_refuses_in_one_line_naming_the_holder(database, monkeypatch):
    monkeypatch.setenv("CDC_LEASE_SECONDS", "30")
    assert token_of(database, "held", "worker-3 pid 4121 (5f0c2e1a)") == 1
    started = time.monotonic()
    with pytest.raises(SchemaHeld) as refused:
        schema_lease.acquire_from(database, "held", wait=1)
    assert time.monotonic() - started >= 1
    (line,) = str(refused.value).splitlines()
    assert line.startswith("schema held is held by worker-3 pid 4121 (5f0c2e1a) until ")
    assert line.endswith("UTC (lease renewed while it runs); waited 1 s (CDC_LEASE_WAIT_SECONDS)")


def test_a_waiting_run_takes_the_lease_when_the_holder_gives_it_back(database, monkeypatch):
    # A term of 6 s: the waiting run looks again every second.
    monkeypatch.setenv("CDC_LEASE_SECONDS", "6")
    assert token_of(database, "handover", "first run") == 1
    threading.Timer(1.5, database.update, args=(schema_lease.RELEASE, "handover", "first run", 1)).start()
    lease, taken_over = schema_lease.acquire_from(database, "handover", wait=20)
    try:
        assert lease.token == 2 and not taken_over
        assert holder_of(database, "handover") == (lease.holder, 2)
    finally:
        schema_lease.release(lease)
    # Given back: free for the next run at once, and nothing to fence.
    assert schema_lease.take(database, "handover", "third run") == (3, "")


def table_token(spark, table: str) -> str | None:
    properties = {row.key: row.value for row in spark.sql(f"show tblproperties {table}").collect()}
    return properties.get(schema_lease.FENCE_PROPERTY)


def test_a_lease_taken_over_fences_the_stopped_holders_write_in_flight_and_refuses_its_next(
    spark, database, monkeypatch
):
    monkeypatch.setenv("CDC_LEASE_SECONDS", "2")
    monkeypatch.setattr(schema_lease, "database_of", lambda _spark: database)
    spark.sql("create schema fenced")
    spark.sql("create table fenced.changes (id bigint) using delta")
    spark.sql("create table fenced.versions (id bigint) using delta")
    spark.sql("create view fenced.changes_view as select * from fenced.changes")
    # Run A holds the lease and writes; then it stops (no renewal) with its write in flight.
    assert token_of(database, "fenced", "run A") == 1
    spark.udf.register("slowly", lambda value: time.sleep(8) or value, "bigint")
    outcome: dict[str, str] = {}

    def write() -> None:
        try:
            spark.sql("insert into fenced.changes select slowly(id) from range(1)")
            outcome["write"] = "committed"
        except Exception as exc:  # py4j's error from Delta's commit
            outcome["write"] = str(exc)

    writer = threading.Thread(target=write)
    writer.start()
    while not spark.sparkContext.statusTracker().getActiveJobsIds():
        time.sleep(0.1)
    time.sleep(2.5)
    # This process takes the lease over from run A, which did not give it back: it fences the schema's tables.
    lease = schema_lease.acquire(spark, "fenced")
    writer.join()
    assert lease.token == 2
    assert "DELTA_METADATA_CHANGED" in outcome["write"], outcome["write"]
    assert spark.table("fenced.changes").count() == 0
    assert table_token(spark, "fenced.changes") == table_token(spark, "fenced.versions") == "2"

    # Now this process stops past its term (its renewals end) and run C takes the lease: its next write is
    # refused, in one line naming run C.
    lease.stop.set()
    time.sleep(2.5)
    assert schema_lease.take(database, "fenced", "run C") == (3, lease.holder)
    with pytest.raises(LeaseLost) as refused:
        schema_lease.ensure_held("fenced")
    (line,) = str(refused.value).splitlines()
    assert line.startswith("lost the lease of fenced to run C (token 3) while stopped past its term of 2 s")
    schema_lease.release(lease)
    assert holder_of(database, "fenced") == ("run C", 3)
