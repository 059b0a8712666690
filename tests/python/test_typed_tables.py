"""The typed tables of a source table (models/tables/, shop.orders of Huawei DRS JSON) built incrementally.

Three batches of hand-written DRS JSON messages of shop.orders, each followed by one run of the models they
pass through and the typed models, in one batch; the expected rows are written from DRS's documented
behaviour: a partial update keeps the other columns, a key change deletes the old key, a delete removes the
key from the current table, a message delivered again at a new offset is no new version, a column added
by DDL appears with NULL in the versions from before, a column widened by DDL (int to bigint) is widened in
place, and a column changed to a type its stored values cannot widen to (varchar to int) keeps its stored
type and is named by the table's test.
"""

import json
from datetime import datetime, timedelta

import pytest
from history_project import SCHEMA, project_in_schema

# Several dbt runs: make test-slow, beside make test in CI.
pytestmark = pytest.mark.slow

TOPIC = "huawei_drs_json.typed_tables"
T0 = datetime(2024, 3, 1, 8, 0, 0)
TYPED_MODELS = ("shop__orders__history", "shop__orders__current")
# The typed models and what they read their column types from.
TYPED_RUN = ("cdc_observed_column_types", "cdc_vendor_types", "cdc_table_columns", *TYPED_MODELS)
COLUMNS = {"id": ("int", 4), "a": ("varchar", 12), "b": ("varchar", 12)}
WITH_C = {**COLUMNS, "c": ("varchar", 12)}
# id widened to bigint, a changed from varchar to int.
RETYPED = {**WITH_C, "id": ("bigint", -5), "a": ("int", 4)}


def drs_message(seq: int, operation: str, data=None, old=None, columns: dict = COLUMNS) -> bytes:
    """A Huawei DRS JSON message (MySQL form) of shop.orders, committed at T0 + seq seconds."""
    message = {
        "id": seq,
        "es": int(at(seq).timestamp() * 1000),
        "database": "shop",
        "table": "orders",
        "type": operation,
        "isDdl": False,
        "pkNames": ["id"],
        "mysqlType": {name: vendor for name, (vendor, _) in columns.items()},
        "sqlType": {name: jdbc for name, (_, jdbc) in columns.items()},
        "data": data,
        "old": old,
    }
    return json.dumps(message).encode()


def at(seq: int) -> datetime:
    return T0 + timedelta(seconds=seq)


def order(key: str, a, b) -> dict:
    return {"id": key, "a": a, "b": b}


BATCHES = [
    [drs_message(1, "INSERT", data=[order("1", "x", "y")]), drs_message(2, "INSERT", data=[order("2", "p", "q")])],
    [
        drs_message(3, "UPDATE", data=[{"id": "1", "a": "x2"}], old=[order("1", "x", "y")]),
        drs_message(4, "UPDATE", data=[order("3", "p", "q")], old=[order("2", "p", "q")]),
        drs_message(5, "INSERT", data=[order("4", "t", "u")]),
        drs_message(6, "DELETE", old=[order("4", "t", "u")]),
    ],
    [
        # Column c added by DDL before seq 7; seq 3 delivered again at a new offset.
        drs_message(7, "INSERT", data=[{**order("5", "n", "m"), "c": "new"}], columns=WITH_C),
        drs_message(8, "DELETE", old=[{**order("1", "x2", "y"), "c": None}], columns=WITH_C),
        drs_message(3, "UPDATE", data=[{"id": "1", "a": "x2"}], old=[order("1", "x", "y")]),
    ],
    [drs_message(9, "INSERT", data=[{**order("6", "7", "w"), "c": "z"}], columns=RETYPED)],
]


def typed_rows(project, model: str, columns: tuple[str, ...]) -> list[tuple]:
    rows = project.spark.table(f"{SCHEMA}.{model}").select(*columns).collect()
    return sorted(map(tuple, rows), key=lambda row: (row[0], row[1] or T0))


def typed_model_test_outcomes(project) -> dict[str, tuple[str, int]]:
    """The typed models' tests after a run: name -> (status, failures)."""
    results = project.dbt("test", "--select", *TYPED_MODELS, check=False).result.results
    return {
        result.node.name: (str(result.status), result.failures)
        for result in results
        if result.node.resource_type == "test"
    }


def last_commit(project, model: str) -> dict:
    """The operation of the table's last commit and its row counts."""
    (commit,) = project.spark.sql(f"DESCRIBE HISTORY {SCHEMA}.{model} LIMIT 1").collect()
    counts = {name: int(value) for name, value in commit.operationMetrics.items() if name.startswith("num")}
    return {"operation": commit.operation, **counts}


@pytest.fixture(scope="module")
def project(spark, tmp_path_factory):
    yield from project_in_schema(spark, tmp_path_factory)


@pytest.fixture(scope="module")
def after_each_batch(project) -> list[dict]:
    """What the typed models hold after each batch's run, and the last commit of each."""
    project.reset()
    for model in ("cdc_observed_column_types", *TYPED_MODELS):
        project.spark.sql(f"DROP TABLE IF EXISTS {SCHEMA}.{model}")
    project.dbt("run", "--select", "cdc_type_mappings")
    states = []
    for number, batch in enumerate(BATCHES):
        project.land(TOPIC, batch)
        project.run(*TYPED_RUN)
        states.append(
            {
                "current": typed_rows(
                    project, "shop__orders__current", ("pk", "valid_from", "op", "id", "a", "b", "is_deleted")
                ),
                "history": typed_rows(
                    project,
                    "shop__orders__history",
                    ("pk", "valid_from", "valid_to", "is_current", "is_deleted", "op", "id", "a", "b"),
                ),
                "commits": {model: last_commit(project, model) for model in TYPED_MODELS},
                "types": {model: dict(project.spark.table(f"{SCHEMA}.{model}").dtypes) for model in TYPED_MODELS},
                "column_c": typed_rows(project, "shop__orders__history", ("pk", "valid_from", "c"))
                if number >= 2
                else None,
                "tests": typed_model_test_outcomes(project),
            }
        )
    return states


def test_first_batch(after_each_batch):
    assert after_each_batch[0]["current"] == [
        ('["1"]', at(1), "c", 1, "x", "y", False),
        ('["2"]', at(2), "c", 2, "p", "q", False),
    ]


def test_updates_key_changes_and_deletes(after_each_batch):
    assert after_each_batch[1]["current"] == [
        # The partial update keeps b.
        ('["1"]', at(3), "u", 1, "x2", "y", False),
        # Key 2 became key 3: key 2's row left; key 4 was inserted and deleted in the batch: never current.
        ('["3"]', at(4), "u", 3, "p", "q", False),
    ]
    assert after_each_batch[1]["history"] == [
        ('["1"]', at(1), at(3), False, False, "c", 1, "x", "y"),
        ('["1"]', at(3), None, True, False, "u", 1, "x2", "y"),
        ('["2"]', at(2), at(4), False, False, "c", 2, "p", "q"),
        ('["2"]', at(4), None, True, True, "u", 2, "p", "q"),
        ('["3"]', at(4), None, True, False, "u", 3, "p", "q"),
        ('["4"]', at(5), at(6), False, False, "c", 4, "t", "u"),
        ('["4"]', at(6), None, True, True, "d", 4, "t", "u"),
    ]


def test_added_column_and_a_delete_merge_only_the_touched_keys(after_each_batch):
    last = after_each_batch[2]
    assert last["current"] == [
        ('["3"]', at(4), "u", 3, "p", "q", False),
        ('["5"]', at(7), "c", 5, "n", "m", False),
    ]
    # Key 1's three versions (the newest closed by the delete) and key 5's: the redelivery is no version.
    assert last["commits"]["shop__orders__history"] == {
        **last["commits"]["shop__orders__history"],
        "operation": "MERGE",
        "numSourceRows": 4,
        "numTargetRowsInserted": 2,
        "numTargetRowsUpdated": 2,
    }
    # Of those, the open versions: key 1's delete removes its row, key 5 is new.
    assert last["commits"]["shop__orders__current"] == {
        **last["commits"]["shop__orders__current"],
        "operation": "MERGE",
        "numSourceRows": 2,
        "numTargetRowsDeleted": 1,
        "numTargetRowsInserted": 1,
        "numTargetRowsUpdated": 0,
    }
    assert [row for row in last["column_c"] if row[0] in ('["1"]', '["5"]')] == [
        ('["1"]', at(1), None),
        ('["1"]', at(3), None),
        ('["1"]', at(8), None),
        ('["5"]', at(7), "new"),
    ]
    assert {name: last["types"]["shop__orders__current"][name] for name in ("id", "a", "c", "valid_from")} == {
        "id": "int",
        "a": "string",
        "c": "string",
        "valid_from": "timestamp",
    }


def test_generated_tests_pass(after_each_batch):
    for state in after_each_batch[:3]:
        assert state["tests"] and all(status == "pass" for status, _ in state["tests"].values()), state["tests"]


def test_widened_column_widens_and_an_incompatible_one_is_named_by_a_test(after_each_batch):
    last = after_each_batch[3]
    # id: int to bigint, widened in place in both tables; a: varchar to int, kept string (the run succeeded).
    for model in TYPED_MODELS:
        assert (last["types"][model]["id"], last["types"][model]["a"]) == ("bigint", "string"), model
    assert last["current"] == [
        ('["3"]', at(4), "u", 3, "p", "q", False),
        ('["5"]', at(7), "c", 5, "n", "m", False),
        ('["6"]', at(9), "c", 6, "7", "w", False),
    ]
    failed = {name: outcome for name, outcome in last["tests"].items() if outcome[0] != "pass"}
    assert failed == {"shop__orders__history_holds_its_source_types": ("fail", 1)}, last["tests"]


if __name__ == "__main__":
    pytest.main([__file__, "-q", "-m", "slow"])
