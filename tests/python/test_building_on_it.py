"""README "Building on it", walked through as an analyst would: a copy of the project in another folder, with
analysts' models in their own folder on the sample's typed table of Huawei DRS JSON shop.orders, built with
plain dbt and by the scheduled run (cdc-build started from the copy's folder), through a batch they missed.

The analysts' nodes: a view of orders by status and a table of order amounts over the typed current table; an
incremental model written as dbt's documentation shows (`is_incremental()` on `valid_from`, no strategy:
dbt-spark appends) and one reading the batches it has not read with the macro cdc_new_versions (merge by
scd_id), both over the typed history; a dbt snapshot of the typed current table (check on status); unique and
not_null tests on each, and a singular test. Later a model that fails at run time is added, then fixed.

Each step's expected rows are written by hand from the DRS messages landed before it (es: the source commit
time, which becomes valid_from) and from what each model's SQL says; the pipeline's own tables are checked where
a step must not have touched them.
"""

import json
from datetime import UTC, datetime

import pytest
from helpers import dbt_in_process, in_process_schema, project_copy

pytestmark = pytest.mark.slow

SCHEMA = "cdc_building_on_it"
TOPIC = "huawei_drs_json.building_on_it"
CURRENT = "shop__orders__huawei_drs_json__current"
HISTORY = "shop__orders__huawei_drs_json__history"
T0_MS = int(datetime(2026, 5, 1, 8, 0, 0, tzinfo=UTC).timestamp() * 1000)
TYPES = {"order_id": "bigint", "customer": "varchar", "amount": "decimal", "status": "varchar"}
JDBC_TYPES = {"order_id": -5, "customer": 12, "amount": 3, "status": 12}

ANALYSTS = {
    "models/analytics/order_status_counts.sql": f"""{{{{ config(materialized='view') }}}}

select
    orders.status,
    count(*) as orders
from {{{{ ref('{CURRENT}') }}}} as orders
group by orders.status
""",
    "models/analytics/order_amounts.sql": f"""{{{{ config(materialized='table') }}}}

select orders.order_id, orders.customer, orders.amount
from {{{{ ref('{CURRENT}') }}}} as orders
""",
    "models/analytics/order_status_changes.sql": f"""{{{{ config(materialized='incremental', unique_key='scd_id') }}}}

select versions.scd_id, versions.order_id, versions.status, versions.valid_from
from {{{{ ref('{HISTORY}') }}}} as versions
{{% if is_incremental() %}}
    where versions.valid_from > (select max(valid_from) from {{{{ this }}}})
{{% endif %}}
""",
    "models/analytics/order_versions.sql": f"""{{{{
    config(materialized='incremental', incremental_strategy='merge', unique_key='scd_id')
}}}}

select
    versions.scd_id,
    versions.order_id,
    versions.status,
    versions.valid_from,
    versions.valid_to,
    versions.is_deleted,
    versions.cdc_batch_id
from {{{{ cdc_new_versions(ref('{HISTORY}')) }}}} as versions
""",
    "models/analytics/_analytics__models.yml": """version: 2
models:
  - name: order_status_counts
    columns:
      - name: status
        data_tests: [unique, not_null]
  - name: order_amounts
    columns:
      - name: order_id
        data_tests: [unique, not_null]
  - name: order_status_changes
    columns:
      - name: scd_id
        data_tests: [unique, not_null]
  - name: order_versions
    columns:
      - name: scd_id
        data_tests: [unique, not_null]
""",
    "snapshots/analytics/orders_snapshot.yml": f"""snapshots:
  - name: orders_snapshot
    relation: ref('{CURRENT}')
    config:
      file_format: delta
      unique_key: order_id
      strategy: check
      check_cols: [status]
    columns:
      - name: order_id
        data_tests: [not_null]
      - name: dbt_scd_id
        data_tests: [unique]
""",
    "tests/analytics/order_amounts_are_positive.sql": "select * from {{ ref('order_amounts') }} where amount <= 0\n",
}
FAILING_MODEL = f"select orders.order_id, orders.no_such_column from {{{{ ref('{CURRENT}') }}}} as orders\n"
FIXED_MODEL = f"select orders.order_id, orders.customer from {{{{ ref('{CURRENT}') }}}} as orders\n"


def order(order_id: int, customer: str, amount: str, status: str) -> dict:
    return {"order_id": str(order_id), "customer": customer, "amount": amount, "status": status}


def drs(drs_id: int, operation: str, data: dict | None, old: dict | None = None) -> bytes:
    """A Huawei DRS JSON message (MySQL form) of one row of shop.orders, committed at T0 + drs_id seconds."""
    return json.dumps(
        {
            "id": drs_id,
            "es": T0_MS + drs_id * 1000,
            "ts": T0_MS + drs_id * 1000 + 230,
            "database": "shop",
            "table": "orders",
            "type": operation,
            "isDdl": False,
            "sql": "",
            "mysqlType": TYPES,
            "sqlType": JDBC_TYPES,
            "data": [data] if data else None,
            "old": [old] if old else None,
            "pkNames": ["order_id"],
        }
    ).encode()


def at(seconds: int) -> str:
    return f"2026-05-01 08:00:{seconds:02d}"


BATCHES = {
    1: [drs(1, "INSERT", order(1, "alice", "10.00", "created")), drs(2, "INSERT", order(2, "bob", "20.00", "created"))],
    2: [
        drs(3, "UPDATE", order(1, "alice", "10.00", "paid"), old=order(1, "alice", "10.00", "created")),
        drs(4, "INSERT", order(3, "carol", "30.00", "created")),
    ],
    3: [
        drs(5, "UPDATE", order(2, "bob", "20.00", "cancelled"), old=order(2, "bob", "20.00", "created")),
        drs(6, "INSERT", order(4, "dave", "40.00", "created")),
    ],
    4: [drs(7, "DELETE", None, old=order(3, "carol", "30.00", "created"))],
}


class Analyst:
    """The copy of the project and its analysts' files, driven in this process on the test session."""

    def __init__(self, spark, root, work) -> None:
        self.spark, self.root, self.work = spark, root, work

    def write(self, path: str, text: str) -> None:
        (self.root / path).parent.mkdir(parents=True, exist_ok=True)
        (self.root / path).write_text(text)

    def land(self, batch: int) -> None:
        from cdc_lakehouse.landing import land

        land(self.spark, "huawei_drs_json", TOPIC, 0, BATCHES[batch])

    def dbt(self, *arguments: str):
        return dbt_in_process(self.spark, self.work, *arguments, project_dir=self.root)

    def cdc_build(self, monkeypatch):
        """cdc-build as typed in the copy's folder: the project is the one there, not the installed one."""
        from cdc_lakehouse.dbt_project import DbtProject
        from cdc_lakehouse.scheduled_build import scheduled_build

        monkeypatch.chdir(self.root)
        project = DbtProject()
        assert project.project_dir == self.root.resolve()
        return scheduled_build(project, self.spark)

    def rows(self, query: str) -> list[tuple]:
        return sorted(tuple(row) for row in self.spark.sql(query.format(schema=SCHEMA)).collect())

    def state(self) -> dict[str, list[tuple]]:
        """What every analyst's node and the typed current table hold."""
        return {
            "current": self.rows(f"select order_id, status from {{schema}}.{CURRENT}"),
            "counts": self.rows("select status, orders from {schema}.order_status_counts"),
            "amounts": self.rows("select order_id, customer, cast(amount as string) from {schema}.order_amounts"),
            "changes": self.rows(
                "select order_id, status, cast(valid_from as string) from {schema}.order_status_changes"
            ),
            "versions": self.rows(
                "select order_id, status, cast(valid_from as string), cast(valid_to as string), is_deleted"
                " from {schema}.order_versions"
            ),
        }

    def snapshot(self) -> list[tuple]:
        return self.rows("select order_id, status, dbt_valid_to is null from {schema}.orders_snapshot")


def amounts(*orders: tuple) -> list[tuple]:
    return [(order_id, customer, f"{amount}.0000000000") for order_id, customer, amount in orders]


AFTER_BATCH_1 = {
    "current": [(1, "created"), (2, "created")],
    "counts": [("created", 2)],
    "amounts": amounts((1, "alice", 10), (2, "bob", 20)),
    "changes": [(1, "created", at(1)), (2, "created", at(2))],
    "versions": [(1, "created", at(1), None, False), (2, "created", at(2), None, False)],
}
AFTER_BATCH_2 = {
    "current": [(1, "paid"), (2, "created"), (3, "created")],
    "counts": [("created", 2), ("paid", 1)],
    "amounts": amounts((1, "alice", 10), (2, "bob", 20), (3, "carol", 30)),
    # valid_from after the newest it held (08:00:02): order 1's new version and order 3.
    "changes": [(1, "created", at(1)), (1, "paid", at(3)), (2, "created", at(2)), (3, "created", at(4))],
    # The batch's versions, order 1's closed one among them, merged by scd_id.
    "versions": [
        (1, "created", at(1), at(3), False),
        (1, "paid", at(3), None, False),
        (2, "created", at(2), None, False),
        (3, "created", at(4), None, False),
    ],
}
AFTER_BATCH_3 = {
    "current": [(1, "paid"), (2, "cancelled"), (3, "created"), (4, "created")],
    "counts": [("cancelled", 1), ("created", 2), ("paid", 1)],
    "amounts": amounts((1, "alice", 10), (2, "bob", 20), (3, "carol", 30), (4, "dave", 40)),
    "changes": [
        (1, "created", at(1)),
        (1, "paid", at(3)),
        (2, "cancelled", at(5)),
        (2, "created", at(2)),
        (3, "created", at(4)),
        (4, "created", at(6)),
    ],
    "versions": [
        (1, "created", at(1), at(3), False),
        (1, "paid", at(3), None, False),
        (2, "cancelled", at(5), None, False),
        (2, "created", at(2), at(5), False),
        (3, "created", at(4), None, False),
        (4, "created", at(6), None, False),
    ],
}
AFTER_BATCH_4 = {
    "current": [(1, "paid"), (2, "cancelled"), (4, "created")],
    "counts": [("cancelled", 1), ("created", 1), ("paid", 1)],
    "amounts": amounts((1, "alice", 10), (2, "bob", 20), (4, "dave", 40)),
    # The delete opens a deleted version of order 3 (its row: the deleted image) at 08:00:07.
    "changes": sorted([*AFTER_BATCH_3["changes"], (3, "created", at(7))]),
    "versions": sorted(
        [
            *(row for row in AFTER_BATCH_3["versions"] if row[0] != 3),
            (3, "created", at(4), at(7), False),
            (3, "created", at(7), None, True),
        ]
    ),
}


@pytest.fixture(scope="module")
def steps(spark, tmp_path_factory) -> dict:
    """Every step of the walk-through, with what the warehouse held after it."""
    root = project_copy(tmp_path_factory.mktemp("analysts_project") / "project")
    analyst = Analyst(spark, root, tmp_path_factory.mktemp("analysts_dbt"))
    for path, text in ANALYSTS.items():
        analyst.write(path, text)
    seen: dict = {}
    with pytest.MonkeyPatch.context() as env, in_process_schema(spark, SCHEMA):
        env.setenv("CDC_ENABLED_FORMATS", "huawei_drs_json")

        # A: the first build, as dbt's documentation has it.
        analyst.land(1)
        for command in (["seed"], ["run"], ["snapshot"], ["test"]):
            analyst.dbt(*command)
        seen["first"], seen["first_snapshot"] = analyst.state(), analyst.snapshot()

        # B: new messages, then the scheduled run from the copy's folder.
        analyst.land(2)
        seen["scheduled"] = analyst.cdc_build(env)
        seen["after_scheduled"], seen["snapshot_after_scheduled"] = analyst.state(), analyst.snapshot()

        # C: one analyst's model alone.
        analyst.dbt("run", "--select", "order_status_changes")
        seen["after_one_model"] = analyst.state()

        # D: new messages, one pipeline model alone (the analysts' models miss its batch), then theirs.
        analyst.land(3)
        analyst.dbt("run", "--select", "stg_huawei_drs__messages")
        analyst.dbt("run", "--select", "path:models/analytics")
        seen["after_missed_batch"] = analyst.state()
        seen["run_log_models"] = {
            row[0] for row in analyst.rows("select distinct model_name from {schema}.cdc_batch_models")
        }

        # E: plain dbt build of everything.
        analyst.dbt("build")
        seen["after_build"], seen["snapshot_after_build"] = analyst.state(), analyst.snapshot()

        # F: an analyst's model rebuilt from scratch, with its tests.
        analyst.dbt("build", "--full-refresh", "--select", "order_status_changes")
        seen["after_full_refresh"] = analyst.state()

        # G: every test.
        seen["test"] = analyst.dbt("test")

        # H: a new model that fails at run time, then a scheduled run after new messages.
        analyst.write("models/analytics/order_notes.sql", FAILING_MODEL)
        analyst.land(4)
        seen["with_failure"] = analyst.cdc_build(env)
        seen["after_failure"] = analyst.state()

        # I: the model fixed; nothing new landed: the next scheduled run retries it, and nothing else.
        analyst.write("models/analytics/order_notes.sql", FIXED_MODEL)
        seen["retried"] = analyst.cdc_build(env)
        seen["order_notes"] = analyst.rows("select order_id, customer from {schema}.order_notes")
        yield seen


def test_a_first_build_with_plain_dbt(steps):
    assert steps["first"] == AFTER_BATCH_1
    assert steps["first_snapshot"] == [(1, "created", True), (2, "created", True)]


def test_the_scheduled_run_from_the_copys_folder_builds_the_analysts_models_after_the_pipeline(steps):
    outcome = steps["scheduled"]
    assert outcome.succeeded, outcome.failures
    assert not outcome.downstream_failures
    assert steps["after_scheduled"] == AFTER_BATCH_2
    # A snapshot is dbt snapshot's (or dbt build's), not the scheduled run's.
    assert steps["snapshot_after_scheduled"] == [(1, "created", True), (2, "created", True)]
    ran = [
        r["unique_id"].split(".")[2] for r in outcome.report()["results"] if r["unique_id"].split(".")[0] != "operation"
    ]
    analysts_models = ["order_status_counts", "order_amounts", "order_status_changes", "order_versions"]
    assert set(analysts_models) <= set(ran)
    # After the typed tables: each analyst's model comes after the pipeline's last node.
    assert min(ran.index(name) for name in analysts_models) > ran.index(CURRENT)
    assert {"unique_order_versions_scd_id", "order_amounts_are_positive"} <= set(ran)


def test_an_analysts_model_alone_and_after_a_missed_batch(steps):
    assert steps["after_one_model"] == AFTER_BATCH_2
    # Staging read batch 3; the typed tables did not: the analysts' models show batch 2's state, and none of
    # them is in the pipeline's run log.
    assert steps["after_missed_batch"] == AFTER_BATCH_2
    assert "stg_huawei_drs__messages" in steps["run_log_models"]
    assert not steps["run_log_models"] & {"order_status_changes", "order_versions", "order_amounts"}


def test_plain_dbt_build_a_full_refresh_and_dbt_test(steps):
    assert steps["after_build"] == AFTER_BATCH_3
    assert steps["snapshot_after_build"] == [
        (1, "created", False),
        (1, "paid", True),
        (2, "cancelled", True),
        (2, "created", False),
        (3, "created", True),
        (4, "created", True),
    ]
    assert steps["after_full_refresh"] == AFTER_BATCH_3
    assert steps["test"].success


def test_an_analysts_model_that_fails_fails_alone_and_the_next_run_retries_it(steps):
    failed = steps["with_failure"]
    # The pipeline's tables hold the batch: the run succeeded; the failing model is on its line and report.
    assert failed.succeeded, failed.failures
    assert steps["after_failure"] == AFTER_BATCH_4
    (failure,) = failed.downstream_failures
    assert failure.startswith("order_notes: ") and "no_such_column" in failure
    assert f"failed: {failure}" in failed.summary()
    assert failed.report()["downstream_failures"] == [failure]

    retried = steps["retried"]
    assert retried.succeeded and not retried.downstream_failures
    assert (retried.change_log_nodes, retried.typed_tables_built) == (0, 0)
    # Nothing changed under the others: the retried model is the run's only node.
    nodes = [r["unique_id"] for r in retried.report()["results"] if not r["unique_id"].startswith("operation.")]
    assert nodes == ["model.cdc_lakehouse.order_notes"]
    assert steps["order_notes"] == [(1, "alice"), (2, "bob"), (4, "dave")]
