"""Broadcast joins on the profile's session, with the tables as dbt leaves them in the Hive metastore.

dbt creates a model's table with CREATE TABLE AS SELECT, and the metastore keeps the size of that first write:
Delta's MERGE and appends never update it. A join planned from that size broadcast a table grown to gigabytes
(the MERGE into cdc_history, whose every key it broadcast, until the driver ran out of memory). The session
broadcasts a join side only once adaptive execution has measured it small.

The test session's catalog is in memory and keeps no such size: the joins run in a process of their own on
the profile's embedded session (Derby), as dbt's do.
"""

import json
import os
import subprocess
import sys
from textwrap import dedent

import pytest

from cdc_lakehouse import PROJECT_DIR

# Rows of 64 hexadecimal characters: about 13 MB of Parquet, above Spark's 10 MB broadcast size.
GROWN_ROWS = 400_000

JOINS = dedent(
    """
    import json, sys
    from cdc_lakehouse.session import open_session, profile_spark_settings

    rows = int(sys.argv[1])
    spark = open_session(profile_spark_settings())
    keys = "select sha2(cast(id as string), 256) as k from range({}, {})"
    spark.sql("create or replace table grown using delta as " + keys.format(0, 10))
    spark.sql("insert into grown " + keys.format(10, rows))
    spark.sql("create or replace table probe using delta as " + keys.format(0, rows))
    spark.sql("create or replace table small using delta as " + keys.format(0, 100))


    def broadcast_scans(query):
        plan = spark.sql(query)
        matches = plan.collect()[0][0]
        lines = plan._jdf.queryExecution().executedPlan().toString().splitlines()
        scans = [
            below.split("parquet ")[1].split("[")[0]
            for index, line in enumerate(lines) if "BroadcastExchange" in line
            for below in lines[index + 1 : index + 8] if "Scan parquet" in below
        ]
        return {"matches": matches, "broadcast": sorted(set(scans))}


    print(json.dumps({
        "planned_size": spark.table("grown")._jdf.queryExecution().optimizedPlan().stats().sizeInBytes(),
        "grown": broadcast_scans("select count(*) from probe join grown using (k)"),
        "small": broadcast_scans("select count(*) from probe join small using (k)"),
    }))
    """
)


@pytest.fixture(scope="module")
def joins(tmp_path_factory) -> dict:
    warehouse = tmp_path_factory.mktemp("broadcasts")
    done = subprocess.run(
        [sys.executable, "-c", JOINS, str(GROWN_ROWS)],
        cwd=PROJECT_DIR,
        env={**os.environ, "CDC_WAREHOUSE": str(warehouse)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_the_metastore_keeps_the_size_of_the_first_write(joins):
    """The premise: the planner's size of the grown table is that of its first ten rows."""
    assert joins["planned_size"] < 10_000


def test_a_table_grown_since_its_creation_is_not_broadcast(joins):
    assert joins["grown"] == {"matches": GROWN_ROWS, "broadcast": []}


def test_a_side_measured_small_is_broadcast(joins):
    assert joins["small"]["matches"] == 100
    assert joins["small"]["broadcast"] == ["spark_catalog.default.small"]
