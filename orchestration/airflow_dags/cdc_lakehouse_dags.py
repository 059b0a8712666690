"""Airflow 3: the scheduled run, the daily audit and maintenance, and an example of a downstream DAG
(README, "Scheduling").

Point Airflow's dags_folder at this folder and create the pool once: `airflow pools set cdc_warehouse 1
"everything that opens the warehouse"`. The DAGs use the profile and variables `make run` uses
(orchestration/environment.py): the embedded warehouse by default, a cluster with CDC_TARGET=cluster.

- cdc_lakehouse_hourly: one task, `cdc-run --once`: ingest (one catch-up of the Kafka topics of ingest.yml),
  then the scheduled run of cdc-build (the seeds when they changed, the change log, the typed views to
  create), in one process: one Spark driver and one batch per run. What dbt ran comes back in its report:
  the task's log lists every node, and each model built, and each typed view whose source table had versions
  in the batch, is an asset event (alias cdc_lakehouse_models, asset `<schema>.<table>`), landing one more
  (asset landing.cdc_raw).
- cdc_lakehouse_audit: daily, `dbt build --selector audit` (every test over whole tables), then
  cdc-maintain (landing retention, OPTIMIZE and VACUUM: README, "Operating it"), whatever the audit found.
- cdc_lakehouse_downstream_example: runs when the hourly run changed the typed view CDC_AIRFLOW_EXAMPLE_TABLE
  (an asset schedule), and logs the batches it brought.

Every task that opens the warehouse takes the one slot of the pool cdc_warehouse: a run, the audit and the
maintenance never overlap (the embedded Derby metastore admits one Spark driver, and the run log one run
per schema), whichever DAG starts them.
"""

import logging
import os
from datetime import datetime, timedelta

from airflow.sdk import DAG, Asset, AssetAlias, task

from orchestration.project_commands import (
    models_built,
    result_lines,
    run_audit,
    run_project_command,
    run_reporting,
)

POOL = "cdc_warehouse"
LANDING = Asset("landing.cdc_raw")
MODELS = AssetAlias("cdc_lakehouse_models")
START = datetime(2026, 1, 1)
ONE_RUN_AT_A_TIME = {"start_date": START, "catchup": False, "max_active_runs": 1}
log = logging.getLogger(__name__)


def table_asset(relation_name: str) -> Asset:
    return Asset(relation_name.replace("`", ""))


def log_results(report: dict) -> None:
    for line in result_lines(report):
        log.info(line)


with DAG(
    "cdc_lakehouse_hourly",
    schedule=os.environ.get("CDC_AIRFLOW_HOURLY_SCHEDULE", "@hourly"),
    default_args={"pool": POOL, "retries": 1, "retry_delay": timedelta(minutes=2)},
    **ONE_RUN_AT_A_TIME,
):

    @task(outlets=[LANDING, MODELS])
    def cdc_run(*, outlet_events) -> None:
        """Ingest, then the scheduled run; asset events for landing and for every model it built."""
        report, failure = run_reporting(["cdc-run", "--once"], log.info)
        log_results(report)
        if failure:
            # A failed task emits no asset events: downstream DAGs wait for a run that succeeds.
            raise RuntimeError(str(failure))
        outlet_events[LANDING].extra = {"landed": report["landed"]}
        for model in models_built(report):
            outlet_events[MODELS].add(
                table_asset(model["relation_name"]),
                extra={"batch_id": report["batch_id"], "seconds": model["execution_time"]},
            )

    cdc_run()

with DAG(
    "cdc_lakehouse_audit",
    schedule=os.environ.get("CDC_AIRFLOW_AUDIT_SCHEDULE", "@daily"),
    default_args={"pool": POOL},
    **ONE_RUN_AT_A_TIME,
):

    @task
    def audit() -> None:
        """Every data test over whole tables; the task fails when one of them fails."""
        results, failure = run_audit(log.info)
        log_results(results)
        if failure:
            raise RuntimeError(str(failure))

    # A failed audit test reports on the data; the tables still need their maintenance.
    @task(trigger_rule="all_done")
    def cdc_maintain() -> None:
        """Landing retention, the run log's old batches, OPTIMIZE and VACUUM of every table."""
        run_project_command(["cdc-maintain"], log.info)

    audit() >> cdc_maintain()

with DAG(
    "cdc_lakehouse_downstream_example",
    schedule=[table_asset(os.environ.get("CDC_AIRFLOW_EXAMPLE_TABLE", "cdc.shop__orders__huawei_drs_json__current"))],
    **ONE_RUN_AT_A_TIME,
):
    # A task that reads the table opens the warehouse: on the embedded metastore it takes the pool too.
    @task
    def new_batches(*, triggering_asset_events) -> list[int]:
        """The batches that changed the table since this DAG last ran."""
        batches = sorted({event.extra["batch_id"] for events in triggering_asset_events.values() for event in events})
        log.info("new batches: %s", batches)
        return batches

    new_batches()
