"""The orchestrators as deployed: a Kafka broker with a Huawei DRS topic, then Airflow's scheduler (with its
DAG processor and API server, LocalExecutor: a process per task) and Dagster's daemon (schedules and run
queue) started from the project's extras on 127.0.0.1, each into its own embedded warehouse with the profile
`make run` uses. The scheduled run and the audit start together and take turns in one pool; the maintenance
runs on its schedule; the tests wait for the runs and check their states, that no two overlapped, which dbt
nodes each ran (the selector's listing), the asset events and the tables. Needs the extras: `make
test-orchestration` installs them.

Expected rows are written by hand from the messages: orders 1, 2, 3 inserted, 2 paid, 3 deleted.
"""

import json
import os
import re
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path

import pytest
from helpers import PROJECT_DIR, VENV_BIN, Warehouse, assert_succeeded, drs, read_table
from kafka_broker import Broker, create_topics, kafka_broker, produce
from postgres_server import postgres_server
from server_process import free_port

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
# The line orchestration.project_commands.result_lines writes per node into the task's log.
RESULT_LINE = re.compile(r"(\w+) +[\d.]+ s  ((?:model|test|seed|snapshot|operation)\.[\w.]+)")
DEADLINE_SECONDS = 1800


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
        # A deployment reading DRS JSON alone enables just that format: its runs build that format's models.
        "CDC_ENABLED_FORMATS": "huawei_drs_json",
    }


def run(env: dict[str, str], *command: str) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=PROJECT_DIR, env=env, capture_output=True, text=True, check=False, timeout=600)


def listed(env: dict[str, str], selector: str) -> set[str]:
    """The nodes dbt runs with the selector: what `dbt ls` lists, less ephemeral models (compiled into others)."""
    listing = run(env, str(VENV_BIN / "dbt"), "ls", "--selector", selector, "--output", "json")
    assert_succeeded(listing)
    nodes = [json.loads(line) for line in listing.stdout.splitlines() if line.startswith("{")]
    return {node["unique_id"] for node in nodes if node["config"].get("materialized") != "ephemeral"}


def nodes_ran(log_text: str) -> dict[str, str]:
    """unique id → status of every node a task's log lists, hooks left out."""
    ran = {unique_id: status for status, unique_id in RESULT_LINE.findall(log_text)}
    return {unique_id: status for unique_id, status in ran.items() if not unique_id.startswith("operation.")}


def current_orders(spark, warehouse: Warehouse) -> list[tuple]:
    assert read_table(spark, warehouse, "cdc_quarantine").count() == 0
    # cdc_current is a view of these rows: a test session without the metastore reads the table's files.
    history = read_table(spark, warehouse, "cdc_history")
    rows = history.where("source_table = 'orders' and is_current and not is_deleted").collect()
    return sorted((r.row["order_id"], r.row["status"]) for r in rows)


def assert_one_at_a_time(spans: dict[str, tuple[float, float]]) -> None:
    """No two of these (start, end) spans overlap."""
    ordered = sorted(spans.items(), key=lambda item: item[1])
    for (first, (_, first_end)), (second, (second_start, _)) in pairwise(ordered):
        assert first_end <= second_start, f"{first} and {second} overlapped: {spans}"


def wait_for(what: str, probe, seconds: float = DEADLINE_SECONDS):
    """probe() until it returns something, checking every few seconds."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if found := probe():
            return found
        time.sleep(3)
    raise AssertionError(f"waited {seconds:.0f} s for {what}")


@contextmanager
def services(commands: list[list[str]], env: dict[str, str], logs: Path) -> Iterator[None]:
    """Long-running processes, each in its own process group, stopped (with every process they started) at
    the end whatever happened. A failure shows the end of each one's log (CI keeps no files)."""
    logs.mkdir(parents=True, exist_ok=True)
    started = []
    try:
        for command in commands:
            output = (logs / f"{Path(command[0]).name}-{command[1]}.log").open("w")
            started.append(
                subprocess.Popen(
                    command, cwd=PROJECT_DIR, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
                )
            )
        yield
    except BaseException:
        for log in sorted(logs.glob("*.log")):
            print(f"----- the end of {log.name}", *log.read_text(errors="replace").splitlines()[-60:], sep="\n")
        raise
    finally:
        for process in started:
            os.killpg(process.pid, signal.SIGTERM)
        for process in started:
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


class AirflowApi:
    def __init__(self, url: str):
        self.url = url

    def call(self, method: str, path: str, body: dict | None = None) -> dict:
        request = urllib.request.Request(
            f"{self.url}/api/v2/{path}",
            data=json.dumps(body).encode() if body is not None else None,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=120) as response:
            return json.loads(response.read())

    def unpause(self, dag_id: str) -> None:
        self.call("PATCH", f"dags/{dag_id}", {"is_paused": False})

    def dag_runs(self, dag_id: str) -> list[dict]:
        return self.call("GET", f"dags/{dag_id}/dagRuns")["dag_runs"]

    def finished_run(self, dag_id: str) -> dict:
        def finished():
            runs = self.dag_runs(dag_id)
            return runs[0] if runs and runs[0]["state"] in ("success", "failed") else None

        return wait_for(f"a finished run of {dag_id}", finished)

    def task_instances(self, dag_run: dict) -> list[dict]:
        path = f"dags/{dag_run['dag_id']}/dagRuns/{dag_run['dag_run_id']}/taskInstances"
        return self.call("GET", path)["task_instances"]

    def healthy(self) -> bool:
        try:
            return self.call("GET", "monitor/health")["scheduler"]["status"] == "healthy"
        except OSError:
            return False


def timestamp(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def airflow_task_log(home: Path, task: dict) -> str:
    folder = home / "logs" / f"dag_id={task['dag_id']}" / f"run_id={task['dag_run_id']}" / f"task_id={task['task_id']}"
    return "\n".join(path.read_text() for path in sorted(folder.glob("attempt=*.log")))


@pytest.fixture
def airflow_metadata_url() -> Iterator[str]:
    """Airflow's metadata database as deployed, on PostgreSQL: four processes on one SQLite file failed API
    calls on its lock under load."""
    with postgres_server() as server:
        server.psql("postgres", "create database airflow")
        yield f"postgresql+psycopg2://postgres@127.0.0.1:{server.port}/airflow"


def test_airflow_scheduler_runs_the_hourly_run_and_the_audit_one_at_a_time(
    spark, broker, airflow_metadata_url, tmp_path
):
    warehouse, env = orchestrated_warehouse(tmp_path, broker)
    home, port = tmp_path / "airflow", free_port()
    env.update(
        {
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(PROJECT_DIR / "orchestration" / "airflow_dags"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": "2",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": airflow_metadata_url,
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
            "AIRFLOW__API__BASE_URL": f"http://127.0.0.1:{port}",
            "AIRFLOW__API_AUTH__JWT_SECRET": "a secret the test's processes share",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
        }
    )
    airflow = str(VENV_BIN / "airflow")
    assert_succeeded(run(env, airflow, "db", "migrate"))
    assert_succeeded(run(env, airflow, "pools", "set", "cdc_warehouse", "1", "everything that opens the warehouse"))
    assert_succeeded(run(env, airflow, "dags", "reserialize"))
    api = AirflowApi(f"http://127.0.0.1:{port}")
    commands = [
        [airflow, "api-server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
        [airflow, "scheduler", "--skip-serve-logs"],
        [airflow, "dag-processor"],
    ]
    with services(commands, env, tmp_path / "airflow-logs"):
        wait_for("Airflow's API server and scheduler", api.healthy, 300)
        api.unpause("cdc_lakehouse_downstream_example")
        # A cron DAG without catchup runs its latest interval as soon as it is unpaused.
        api.unpause("cdc_lakehouse_hourly")
        hourly_run = wait_for("the hourly run", lambda: api.dag_runs("cdc_lakehouse_hourly"))[0]
        wait_for(
            "the hourly task to run", lambda: [t for t in api.task_instances(hourly_run) if t["state"] == "running"]
        )
        # The audit starts while the hourly task holds the pool's one slot: it waits for it.
        api.unpause("cdc_lakehouse_audit")
        hourly_run, audit_run = api.finished_run("cdc_lakehouse_hourly"), api.finished_run("cdc_lakehouse_audit")
        downstream_run = api.finished_run("cdc_lakehouse_downstream_example")
        tasks = {task["task_id"]: task for run in (hourly_run, audit_run) for task in api.task_instances(run)}
        events = api.call("GET", "assets/events?source_dag_id=cdc_lakehouse_hourly&limit=1000")["asset_events"]

    assert [hourly_run["state"], audit_run["state"], downstream_run["state"]] == ["success"] * 3, tasks
    assert downstream_run["run_type"] == "asset_triggered"
    assert {task["pool"] for task in tasks.values()} == {"cdc_warehouse"}
    assert_one_at_a_time({name: (timestamp(t["start_date"]), timestamp(t["end_date"])) for name, t in tasks.items()})
    assert current_orders(spark, warehouse) == EXPECTED_CURRENT

    # One task ran exactly the scheduled selection (a first run: every typed table), in one batch.
    hourly_nodes = nodes_ran(airflow_task_log(home, tasks["cdc_run"]))
    assert set(hourly_nodes) == listed(env, "scheduled")
    assert set(hourly_nodes.values()) <= {"success", "pass"}
    batches = read_table(spark, warehouse, "cdc_batch_models").where("finished_at is not null")
    assert {row.batch_id for row in batches.collect()} == {1}
    # The audit task ran exactly the audit selection; the maintenance after it maintained landing.
    assert set(nodes_ran(airflow_task_log(home, tasks["audit"]))) == listed(env, "audit")
    assert "cdc-maintain: landing.cdc_raw: " in airflow_task_log(home, tasks["cdc_maintain"])

    # An asset event for landing and for every model built, carrying the batch: the downstream DAG's trigger.
    built = {unique_id.split(".")[-1] for unique_id in hourly_nodes if unique_id.startswith("model.")}
    assert {event["name"] for event in events} == {"landing.cdc_raw"} | {f"cdc.{name}" for name in built}
    orders = [event for event in events if event["name"] == "cdc.shop__orders__huawei_drs_json__current"]
    assert [event["extra"]["batch_id"] for event in orders] == [1]


DAGSTER_INSTANCE = """
concurrency:
  pools:
    granularity: run
    default_limit: 1
"""


def next_minute(after: datetime) -> datetime:
    return (after + timedelta(minutes=1)).replace(second=0, microsecond=0)


def daily_cron(at: datetime) -> str:
    return f"{at.minute} {at.hour} * * *"


def test_dagster_daemon_runs_the_scheduled_jobs_one_at_a_time(spark, broker, tmp_path):
    from dagster import DagsterEventType, DagsterInstance, DagsterRunStatus
    from dagster._core.instance.ref import InstanceRef
    from dagster._core.scheduler.instigation import InstigatorType

    warehouse, env = orchestrated_warehouse(tmp_path, broker)
    home = tmp_path / "dagster"
    home.mkdir()
    (home / "dagster.yaml").write_text(DAGSTER_INSTANCE)
    env["DAGSTER_HOME"] = str(home)
    definitions = str(PROJECT_DIR / "orchestration" / "dagster_project" / "definitions.py")
    project = str(PROJECT_DIR / "orchestration" / "dagster_project" / "project.py")
    assert_succeeded(run(env, str(VENV_BIN / "dagster-dbt"), "project", "prepare-and-package", "--file", project))
    # A definition that does not load fails here with its error, not as a daemon that records no schedule.
    assert_succeeded(run(env, str(VENV_BIN / "dagster"), "definitions", "validate", "-f", definitions))
    instance = DagsterInstance.from_ref(InstanceRef.from_dir(str(home)))
    jobs = {"cdc_lakehouse_hourly", "cdc_lakehouse_audit", "cdc_lakehouse_maintenance"}
    daemon = [[str(VENV_BIN / "dagster-daemon"), "run", "-f", definitions]]

    # The daemon runs a schedule's ticks from the moment it first recorded the schedule, however long it then
    # takes to load the definitions again (a loaded machine took longer than a minute). A first start, with
    # ticks a day away, records the three schedules and measures the load.
    env["CDC_DAGSTER_HOURLY_CRON"] = env["CDC_DAGSTER_AUDIT_CRON"] = env["CDC_DAGSTER_MAINTENANCE_CRON"] = daily_cron(
        datetime.now(UTC) - timedelta(hours=1)
    )
    started = time.monotonic()
    with services(daemon, env, tmp_path / "dagster-first-logs"):
        wait_for(
            "the daemon to record the schedules",
            lambda: len(instance.all_instigator_state(instigator_type=InstigatorType.SCHEDULE)) == len(jobs),
            600,
        )
    loading = timedelta(seconds=time.monotonic() - started)
    # The hourly job's tick is the next whole minute; the audit's and the maintenance's a minute after the
    # daemon should have loaded again (twice the first load), while the hourly run holds the pool: a daemon
    # late for both ticks would launch the runs in any order.
    now = datetime.now(UTC)
    env["CDC_DAGSTER_HOURLY_CRON"] = daily_cron(next_minute(now))
    audit_at = next_minute(now + 2 * loading + timedelta(minutes=1))
    env["CDC_DAGSTER_AUDIT_CRON"] = env["CDC_DAGSTER_MAINTENANCE_CRON"] = daily_cron(audit_at)

    def all_finished():
        runs = {record.dagster_run.job_name: record for record in instance.get_run_records()}
        return runs if set(runs) == jobs and all(r.dagster_run.is_finished for r in runs.values()) else None

    with services(daemon, env, tmp_path / "dagster-logs"):
        runs = wait_for("the three scheduled runs", all_finished)

    assert {job: r.dagster_run.status for job, r in runs.items()} == dict.fromkeys(jobs, DagsterRunStatus.SUCCESS)
    assert all(r.dagster_run.tags.get("dagster/schedule_name") for r in runs.values())
    assert_one_at_a_time({job: (r.start_time, r.end_time) for job, r in runs.items()})
    assert runs["cdc_lakehouse_hourly"].start_time < runs["cdc_lakehouse_audit"].start_time
    assert current_orders(spark, warehouse) == EXPECTED_CURRENT

    def run_log(job: str) -> str:
        return "\n".join(entry.user_message for entry in instance.all_logs(runs[job].dagster_run.run_id))

    def materialized(job: str) -> list[dict]:
        records = instance.get_records_for_run(
            runs[job].dagster_run.run_id, of_type=DagsterEventType.ASSET_MATERIALIZATION
        ).records
        return [r.event_log_entry.asset_materialization for r in records]

    # The hourly job ran exactly the scheduled selection, in one batch, and materialized every model it built.
    hourly_nodes = nodes_ran(run_log("cdc_lakehouse_hourly"))
    assert set(hourly_nodes) == listed(env, "scheduled")
    models = {node for node, status in hourly_nodes.items() if node.startswith("model.") and status == "success"}
    hourly_materialized = materialized("cdc_lakehouse_hourly")
    assert {m.metadata["unique_id"].value for m in hourly_materialized if "unique_id" in m.metadata} == models
    assert ["landing", "cdc_raw"] in [m.asset_key.path for m in hourly_materialized]
    assert {m.metadata["batch_id"].value for m in hourly_materialized if "batch_id" in m.metadata} == {1}
    # The audit ran exactly the audit selection, its tests as asset checks; then the maintenance ran.
    assert set(nodes_ran(run_log("cdc_lakehouse_audit"))) == listed(env, "audit")
    checks = instance.get_records_for_run(
        runs["cdc_lakehouse_audit"].dagster_run.run_id, of_type=DagsterEventType.ASSET_CHECK_EVALUATION
    ).records
    assert checks and all(r.event_log_entry.dagster_event.event_specific_data.passed for r in checks)
    assert "cdc-maintain: landing.cdc_raw: " in run_log("cdc_lakehouse_maintenance")
