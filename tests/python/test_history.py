"""cdc_history / cdc_current: SCD2 versions built incrementally from the change log.

dbt runs in this test process (dbtRunner), on the test Spark session, so a run costs its queries and not
a JVM start. Each scenario lands Huawei DRS JSON messages (a simple format whose images the test controls
fully) into an emptied landing table and schema, then runs the models; an incremental run reads only the
landing commits since the previous one. The property test over generated
change streams of several formats is test_history_property.py.
"""

import json
from datetime import datetime, timedelta

import pytest
from history_project import SCHEMA, project_in_schema

TOPIC = "huawei_drs_json.history"
FORMAT = "huawei_drs_json"
T0 = datetime(2024, 3, 1, 8, 0, 0)
HISTORY_COLUMNS = (
    "source_table",
    "pk",
    "previous_pk",
    "row",
    "valid_from",
    "valid_to",
    "is_current",
    "is_deleted",
    "op",
    "source_seq",
    "row_index",
)
MYSQL_TYPES = {"id": "int", "a": "varchar", "b": "varchar"}
JDBC_TYPES = {"id": 4, "a": 12, "b": 12}


def drs_message(seq: int, operation: str, data=None, old=None, table: str = "items", keyed: bool = True) -> bytes:
    """A Huawei DRS JSON message (MySQL form) of one row, committed at T0 + seq seconds."""
    message = {
        "id": seq,
        "es": int((T0 + timedelta(seconds=seq)).timestamp() * 1000),
        "database": "shop",
        "table": table,
        "type": operation,
        "isDdl": False,
        "pkNames": ["id"] if keyed else [],
        "mysqlType": MYSQL_TYPES,
        "sqlType": JDBC_TYPES,
        "data": data,
        "old": old,
    }
    return json.dumps(message).encode()


def by_version(versions) -> list[tuple]:
    """History rows in (source_table, pk, source_seq, row_index) order; row maps do not compare."""
    return sorted(versions, key=lambda version: (version[0], version[1], version[9], version[10]))


def at(seq: int) -> datetime:
    return T0 + timedelta(seconds=seq)


def history(project) -> list[tuple]:
    rows = project.spark.table(f"{SCHEMA}.cdc_history").select(*HISTORY_COLUMNS).collect()
    return by_version(
        tuple(int(value) if name == "source_seq" else value for name, value in zip(HISTORY_COLUMNS, row, strict=True))
        for row in rows
    )


@pytest.fixture(scope="module")
def project(spark, tmp_path_factory):
    yield from project_in_schema(spark, tmp_path_factory)


def row(key: str, a, b) -> dict:
    return {"id": key, "a": a, "b": b}


# seq 3 arrives late (after 4 and 5 were built); seq 4 changes key 2 into 3; seq 7 is a keyless table.
SCENARIO = {
    1: drs_message(1, "INSERT", data=[row("1", "x", "y")]),
    2: drs_message(2, "INSERT", data=[row("2", "p", "q")]),
    3: drs_message(3, "UPDATE", data=[{"id": "1", "a": "x2"}], old=[row("1", "x", "y")]),
    4: drs_message(4, "UPDATE", data=[row("3", "p", "q")], old=[row("2", "p", "q")]),
    5: drs_message(5, "DELETE", old=[row("1", "x2", "y")]),
    6: drs_message(6, "INSERT", data=[row("1", "n", None)]),
    7: drs_message(7, "INSERT", data=[row("9", "log", None)], table="audit", keyed=False),
}


@pytest.fixture(scope="module")
def late_batch_metrics(project):
    project.reset()
    project.land(TOPIC, [SCENARIO[seq] for seq in (1, 2, 4, 5)])
    project.run()
    first_build = history(project)
    # A run reads the landing commits since the previous run: this one touches one key.
    project.land(TOPIC, [SCENARIO[7]])
    project.run()
    # The late update, a re-insert, and seq 4 delivered again at a new offset.
    project.land(TOPIC, [SCENARIO[seq] for seq in (3, 6, 4)])
    project.run()
    (merge,) = project.spark.sql(f"DESCRIBE HISTORY {SCHEMA}.cdc_history LIMIT 1").collect()
    return first_build, merge


def test_first_batch_history(late_batch_metrics):
    first_build, _ = late_batch_metrics
    assert first_build == by_version(
        [
            ("items", '["1"]', None, row("1", "x", "y"), at(1), at(5), False, False, "c", 1, 0),
            # The delete carries its own before image, which already has seq 3's change.
            ("items", '["1"]', None, row("1", "x2", "y"), at(5), None, True, True, "d", 5, 0),
            ("items", '["2"]', None, row("2", "p", "q"), at(2), at(4), False, False, "c", 2, 0),
            ("items", '["2"]', None, row("2", "p", "q"), at(4), None, True, True, "u", 4, 0),
            ("items", '["3"]', '["2"]', row("3", "p", "q"), at(4), None, True, False, "u", 4, 0),
        ]
    )


def test_late_partial_update_is_stitched_into_its_chain(project, late_batch_metrics):
    assert history(project) == by_version(
        [
            ("items", '["1"]', None, row("1", "x", "y"), at(1), at(3), False, False, "c", 1, 0),
            # The partial image of seq 3 takes b from the previous version.
            ("items", '["1"]', None, row("1", "x2", "y"), at(3), at(5), False, False, "u", 3, 0),
            ("items", '["1"]', None, row("1", "x2", "y"), at(5), at(6), False, True, "d", 5, 0),
            ("items", '["1"]', None, row("1", "n", None), at(6), None, True, False, "c", 6, 0),
            ("items", '["2"]', None, row("2", "p", "q"), at(2), at(4), False, False, "c", 2, 0),
            ("items", '["2"]', None, row("2", "p", "q"), at(4), None, True, True, "u", 4, 0),
            ("items", '["3"]', '["2"]', row("3", "p", "q"), at(4), None, True, False, "u", 4, 0),
            (
                "audit",
                f"event:{keyless_event_id(project)}",
                None,
                row("9", "log", None),
                at(7),
                None,
                True,
                False,
                "c",
                7,
                0,
            ),
        ]
    )


def keyless_event_id(project) -> str:
    return project.spark.sql(f"SELECT sha2('{FORMAT}/{TOPIC}/0/4/0', 256)").first()[0]


def test_incremental_run_merges_only_the_touched_keys(late_batch_metrics):
    _, merge = late_batch_metrics
    metrics = merge.operationMetrics
    assert merge.operation == "MERGE"
    # New versions: seq 3 and seq 6 of key 1. Rewritten: key 1's two earlier versions (their valid_to and
    # is_current change). The keyless row of the batch before is not read again; keys 2 and 3 are not
    # touched: seq 4 landed again is a redelivery, not a new event.
    assert int(metrics["numTargetRowsInserted"]) == 2
    assert int(metrics["numTargetRowsUpdated"]) == 2


def test_current_state_and_invariants(project, late_batch_metrics):
    current = project.spark.table(f"{SCHEMA}.cdc_current").select("source_table", "pk", "row").collect()
    assert sorted(map(tuple, current)) == [
        ("audit", "event:" + keyless_event_id(project), row("9", "log", None)),
        ("items", '["1"]', row("1", "n", None)),
        ("items", '["3"]', row("3", "p", "q")),
    ]
    redeliveries = project.spark.table(f"{SCHEMA}.cdc_redeliveries").select("kafka_offset", "source_seq").collect()
    assert [(r.kafka_offset, int(r.source_seq)) for r in redeliveries] == [(7, 4)]
    project.dbt("test", "--select", "cdc_history", "cdc_current", "cdc_events", "cdc_redeliveries")


def test_reconciliation_names_a_landed_message_without_an_outcome(project, late_batch_metrics):
    reconciliation = "cdc_every_landed_message_is_accounted_for"
    project.dbt("test", "--select", reconciliation)
    # Seq 3 landed at offset 5: losing its event leaves exactly that message unaccounted for.
    project.spark.sql(f"DELETE FROM {SCHEMA}.cdc_events WHERE kafka_offset = 5")
    result = project.dbt("test", "--select", reconciliation, check=False)
    # The run's hooks report too: the test's own result is the one named after it.
    (outcome,) = [each for each in result.result.results if each.node.name == reconciliation]
    assert (outcome.status, outcome.failures) == ("fail", 1)
