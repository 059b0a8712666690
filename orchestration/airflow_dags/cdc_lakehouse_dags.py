"""Airflow 3 + astronomer-cosmos: the hourly pipeline and the daily audit (README, "Scheduling").

Point Airflow's dags_folder at this folder. The DAGs use the profile and variables `make run` uses
(orchestration/environment.py): the embedded warehouse by default, a cluster with CDC_TARGET=cluster.

- cdc_lakehouse_hourly: cdc-ingest (one catch-up of the Kafka topics of ingest.yml), the seeds when they
  changed, then the models of the `scheduled` selector as a Cosmos task group: one task per model, each a
  `dbt build` of the model and its tests, so the tests read the batch that very run wrote.
- cdc_lakehouse_audit: daily, `dbt build --selector audit` (seeds, every test over whole tables), then
  cdc-maintain (landing retention, OPTIMIZE and VACUUM: README, "Operating it"), whatever the audit found.

One dbt command runs at a time (max_active_tasks=1, max_active_runs=1): each run opens the next batch of the
run log, and the embedded Derby metastore admits one Spark driver at a time.
"""

import os
from datetime import datetime, timedelta

from airflow.providers.standard.operators.bash import BashOperator
from airflow.providers.standard.operators.python import PythonOperator
from airflow.sdk import DAG
from cosmos import DbtTaskGroup, ExecutionConfig, ProfileConfig, ProjectConfig, RenderConfig
from cosmos.constants import ExecutionMode, InvocationMode, LoadMode, TestBehavior, TestIndirectSelection
from cosmos.operators.local import DbtBuildLocalOperator

from cdc_lakehouse.maintenance import main as cdc_maintain
from cdc_lakehouse.seeds import load_seeds_if_changed, run_dbt
from orchestration.environment import (
    PROFILE_NAME,
    PROFILES_DIR,
    PROJECT_DIR,
    VENV_BIN,
    project_environment,
    use_project_environment,
)

use_project_environment()
# Cosmos runs dbt in a temporary copy of the project and reads the artifacts from that copy's target/:
# a target or log path set for other dbt commands would send them elsewhere.
for variable in ("DBT_TARGET_PATH", "DBT_LOG_PATH"):
    os.environ.pop(variable, None)
ENVIRONMENT = project_environment()
PROJECT = ProjectConfig(dbt_project_path=PROJECT_DIR, env_vars=ENVIRONMENT)
PROFILE = ProfileConfig(
    profile_name=PROFILE_NAME,
    target_name=os.environ.get("CDC_TARGET", "local"),
    profiles_yml_filepath=PROFILES_DIR / "profiles.yml",
)
EXECUTION = ExecutionConfig(
    execution_mode=ExecutionMode.LOCAL,
    # dbt in the task's process: within one worker process the Spark session is started once.
    invocation_mode=InvocationMode.DBT_RUNNER,
    # A test over two models (relationships) runs with the later of them.
    test_indirect_selection=TestIndirectSelection.BUILDABLE,
    dbt_executable_path=VENV_BIN / "dbt",
)
ONE_AT_A_TIME = {"max_active_runs": 1, "max_active_tasks": 1, "catchup": False}
START = datetime(2026, 1, 1)


def load_seeds() -> None:
    load_seeds_if_changed(run_dbt, ENVIRONMENT)


def maintain_tables() -> None:
    """cdc-maintain in the task's process, as dbt runs: one Spark driver per process."""
    if cdc_maintain(argv=[]) != 0:
        raise RuntimeError("cdc-maintain failed: see its output above")


with DAG(
    "cdc_lakehouse_hourly",
    schedule="@hourly",
    start_date=START,
    default_args={"retries": 1, "retry_delay": timedelta(minutes=2)},
    **ONE_AT_A_TIME,
):
    ingest = BashOperator(
        task_id="cdc_ingest",
        bash_command=f"{VENV_BIN / 'cdc-ingest'}",
        env=ENVIRONMENT,
        append_env=True,
        cwd=str(PROJECT_DIR),
    )
    seeds = PythonOperator(task_id="seeds_when_changed", python_callable=load_seeds)
    models = DbtTaskGroup(
        group_id="dbt",
        project_config=PROJECT,
        profile_config=PROFILE,
        execution_config=EXECUTION,
        render_config=RenderConfig(load_method=LoadMode.DBT_LS, selector="scheduled", test_behavior=TestBehavior.BUILD),
        operator_args={"install_deps": False},
    )
    ingest >> seeds >> models

with DAG("cdc_lakehouse_audit", schedule="@daily", start_date=START, **ONE_AT_A_TIME):
    audit = DbtBuildLocalOperator(
        task_id="audit",
        project_dir=PROJECT_DIR,
        profile_config=PROFILE,
        selector="audit",
        install_deps=False,
        invocation_mode=InvocationMode.DBT_RUNNER,
        env=ENVIRONMENT,
    )
    maintain = PythonOperator(
        task_id="cdc_maintain",
        python_callable=maintain_tables,
        # A failed audit test reports on the data; the tables still need their maintenance.
        trigger_rule="all_done",
    )
    audit >> maintain
