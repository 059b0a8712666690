"""Dagster + dagster-dbt: the landing table as an asset upstream of the dbt project's assets (README,
"Scheduling"). `dagster dev -f orchestration/dagster_project/definitions.py`.

- landing/cdc_raw: one catch-up of cdc-ingest (the Kafka topics of ingest.yml). dbt's source
  landing.cdc_raw has this asset key, so every staging model is downstream of it.
- the dbt project's seeds, models and snapshot as assets, its data tests as asset checks; materialized by
  one `dbt build` of the selection, so the tests read the batch that build wrote.
- cdc_lakehouse_hourly: ingest and the models of a scheduled run (not the seeds, nor the snapshot), every
  hour. Seeds are assets whose code version follows their file: Dagster shows a changed seed as changed,
  and materializing it (with cdc_type_mappings) applies it. A new warehouse: materialize all assets once.
- cdc_lakehouse_maintenance: cdc-maintain (landing retention, OPTIMIZE and VACUUM: README, "Operating
  it"), daily.

The profile and variables are `make run`'s (orchestration/environment.py); CDC_TARGET=cluster for a cluster.
"""

import os
import re
import subprocess

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetSelection,
    Definitions,
    Failure,
    MaterializeResult,
    OpExecutionContext,
    ScheduleDefinition,
    asset,
    define_asset_job,
    job,
    op,
)
from dagster_dbt import DbtCliResource, DbtProject, build_dbt_asset_selection, dbt_assets

from cdc_lakehouse.seeds import run_dbt
from orchestration.environment import PROFILES_DIR, PROJECT_DIR, VENV_BIN, project_environment, use_project_environment

use_project_environment()
project = DbtProject(
    project_dir=PROJECT_DIR,
    profiles_dir=PROFILES_DIR,
    target=os.environ.get("CDC_TARGET", "local"),
    target_path=os.environ.get("DBT_TARGET_PATH", "target"),
)
if not project.manifest_path.exists():
    # `dbt parse`: no Spark session, a few seconds. A deployment parses at build time instead.
    run_dbt(["parse", "--quiet"])


def run_project_command(context, command: str) -> str:
    """One of the project's commands, its output lines logged; its output, or a Failure with its error line."""
    done = subprocess.run(
        [str(VENV_BIN / command)],
        cwd=PROJECT_DIR,
        env={**os.environ, **project_environment()},
        capture_output=True,
        text=True,
        check=False,
    )
    for line in done.stdout.splitlines():
        context.log.info(line)
    if done.returncode != 0:
        errors = [line for line in done.stderr.splitlines() if line.startswith(f"{command}: error")]
        raise Failure(description=errors[-1] if errors else f"{command} exited with {done.returncode}")
    return done.stdout


@asset(key=AssetKey(["landing", "cdc_raw"]), group_name="landing")
def cdc_raw(context: AssetExecutionContext) -> MaterializeResult:
    """Kafka messages landed by cdc-ingest: everything its topics hold beyond its checkpoint."""
    output = run_project_command(context, "cdc-ingest")
    totals = re.search(r"(\d+) messages read, (\d+) landed", output)
    return MaterializeResult(
        metadata={"messages read": int(totals.group(1)), "landed": int(totals.group(2))} if totals else {}
    )


@dbt_assets(manifest=project.manifest_path, project=project, exclude="resource_type:unit_test")
def cdc_lakehouse_dbt(context: AssetExecutionContext, dbt: DbtCliResource):
    yield from dbt.cli(["build"], context=context).stream()


hourly = define_asset_job(
    "cdc_lakehouse_hourly",
    selection=AssetSelection.keys(AssetKey(["landing", "cdc_raw"]))
    | build_dbt_asset_selection([cdc_lakehouse_dbt], dbt_select="resource_type:model")
    - build_dbt_asset_selection([cdc_lakehouse_dbt], dbt_select="cdc_type_mappings"),
)


@op
def cdc_maintain(context: OpExecutionContext) -> None:
    """Landing retention, the run log's old batches, OPTIMIZE and VACUUM of every table (cdc-maintain)."""
    run_project_command(context, "cdc-maintain")


@job
def cdc_lakehouse_maintenance() -> None:
    cdc_maintain()


defs = Definitions(
    assets=[cdc_raw, cdc_lakehouse_dbt],
    jobs=[hourly, cdc_lakehouse_maintenance],
    schedules=[
        ScheduleDefinition(job=hourly, cron_schedule="0 * * * *"),
        ScheduleDefinition(job=cdc_lakehouse_maintenance, cron_schedule="30 3 * * *"),
    ],
    resources={
        "dbt": DbtCliResource(project_dir=project, profiles_dir=str(PROFILES_DIR), dbt_executable=str(VENV_BIN / "dbt"))
    },
)
