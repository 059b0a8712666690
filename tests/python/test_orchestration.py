"""The orchestration code paths, for real: a Kafka broker with a Huawei DRS topic, then Airflow's `dags test`
(dag.test()) of the hourly DAG and the daily audit and maintenance in a temporary AIRFLOW_HOME, and Dagster
materializing every asset (`dagster asset materialize`, no daemon or webserver) then running the maintenance
job, each into its own embedded warehouse with the profile `make run` uses. Needs the extras: `make
test-orchestration` installs them.

Expected rows are written by hand from the messages: orders 1, 2, 3 inserted, 2 paid, 3 deleted.
"""

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import PROJECT_DIR, VENV_BIN, Warehouse, assert_succeeded
from kafka_broker import Broker, kafka_broker
from test_huawei_drs_json import read_table
from test_kafka_ingest import create_topics, drs, produce
from test_kafka_ingest import read_table_landing as landing

pytestmark = pytest.mark.orchestration

TOPIC = "drs.shop.orders"
MESSAGES = [
    drs(1, "INSERT", {"order_id": "1", "status": "created"}),
    drs(2, "INSERT", {"order_id": "2", "status": "created"}),
    drs(3, "INSERT", {"order_id": "3", "status": "created"}),
    drs(4, "UPDATE", {"order_id": "2", "status": "paid"}, {"status": "created"}),
    drs(5, "DELETE", None, {"order_id": "3", "status": "created"}),
]
EXPECTED_CURRENT = [("1", "created"), ("2", "paid")]


@pytest.fixture(scope="module")
def broker(tmp_path_factory) -> Iterator[Broker]:
    with kafka_broker(tmp_path_factory.mktemp("kafka"), {}) as started:
        create_topics(started, {TOPIC: 1})
        produce(started, [(TOPIC, 0, message) for message in MESSAGES])
        yield started


def orchestrated_warehouse(root: Path, broker: Broker) -> tuple[Warehouse, dict[str, str]]:
    """A new warehouse, and the environment an orchestrator would have: an ingest reading the DRS topic."""
    config = root / "ingest.yml"
    config.write_text("topics: [{pattern: 'drs\\..*', format: huawei_drs_json}]\n")
    warehouse = Warehouse(root / "warehouse")
    return warehouse, {
        **warehouse.env,
        "CDC_INGEST_CONFIG": str(config),
        "CDC_KAFKA_BOOTSTRAP_SERVERS": broker.plaintext,
    }


def run(env: dict[str, str], *command: str) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=PROJECT_DIR, env=env, capture_output=True, text=True, check=False, timeout=3000)


def current_orders(spark, warehouse: Warehouse) -> list[tuple]:
    assert read_table(spark, warehouse, "cdc_quarantine").count() == 0
    # cdc_current is a view of these rows: a test session without the metastore reads the table's files.
    history = read_table(spark, warehouse, "cdc_history")
    rows = history.where("source_table = 'orders' and is_current and not is_deleted").collect()
    return sorted((r.row["order_id"], r.row["status"]) for r in rows)


def batches_finished(spark, warehouse: Warehouse) -> set[str]:
    finished = read_table(spark, warehouse, "cdc_batch_models").where("finished_at is not null")
    return {r.model_name for r in finished.collect()}


def test_airflow_hourly_dag_ingests_and_builds_then_the_audit_passes(spark, broker, tmp_path):
    warehouse, env = orchestrated_warehouse(tmp_path, broker)
    env.update(
        {
            "AIRFLOW_HOME": str(tmp_path / "airflow"),
            "AIRFLOW__CORE__DAGS_FOLDER": str(PROJECT_DIR / "orchestration" / "airflow_dags"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        }
    )
    airflow = str(VENV_BIN / "airflow")
    assert_succeeded(run(env, airflow, "db", "migrate"))
    assert_succeeded(run(env, airflow, "dags", "test", "cdc_lakehouse_hourly"))
    assert dag_run_states(env, "cdc_lakehouse_hourly") == ["success"]
    assert current_orders(spark, warehouse) == EXPECTED_CURRENT
    # One task per model: every incremental model finished a batch in its own task's build.
    assert {"stg_huawei_drs__messages", "cdc_events", "cdc_history"} <= batches_finished(spark, warehouse)
    assert (warehouse.root / ".seeds-loaded-cdc").is_file()
    audit = run(env, airflow, "dags", "test", "cdc_lakehouse_audit")
    assert_succeeded(audit)
    assert dag_run_states(env, "cdc_lakehouse_audit") == ["success"]
    # The audit's second task maintained every table, landing last.
    assert "cdc-maintain: landing.cdc_raw: " in audit.stdout + audit.stderr


def dag_run_states(env: dict[str, str], dag_id: str) -> list[str]:
    listed = run(env, str(VENV_BIN / "airflow"), "dags", "list-runs", dag_id, "--output", "json")
    assert_succeeded(listed)
    (runs,) = [line for line in listed.stdout.splitlines() if line.startswith("[")]
    return [dag_run["state"] for dag_run in json.loads(runs)]


def test_dagster_materializes_every_asset(spark, broker, tmp_path):
    warehouse, env = orchestrated_warehouse(tmp_path, broker)
    env["DAGSTER_HOME"] = str(tmp_path / "dagster")
    (tmp_path / "dagster").mkdir()
    definitions = str(PROJECT_DIR / "orchestration" / "dagster_project" / "definitions.py")
    materialize = run(env, str(VENV_BIN / "dagster"), "asset", "materialize", "--select", "*", "-f", definitions)
    assert_succeeded(materialize)
    assert "RUN_SUCCESS" in materialize.stdout + materialize.stderr
    assert current_orders(spark, warehouse) == EXPECTED_CURRENT
    assert {"stg_huawei_drs__messages", "cdc_events", "cdc_history"} <= batches_finished(spark, warehouse)
    assert json.loads(bytes(landing(spark, warehouse).where("kafka_offset = 4").first().value))["type"] == "DELETE"
    maintenance = run(
        env, str(VENV_BIN / "dagster"), "job", "execute", "-j", "cdc_lakehouse_maintenance", "-f", definitions
    )
    assert_succeeded(maintenance)
    assert "cdc-maintain: landing.cdc_raw: " in maintenance.stdout + maintenance.stderr
