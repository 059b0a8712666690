"""Dagster + dagster-dbt: the landing table upstream of the dbt project's assets (README, "Scheduling").

`dagster-dbt project prepare-and-package --file orchestration/dagster_project/project.py` parses the
project into its manifest (at deployment; `dagster dev` does it on load), then `dagster dev -f` this file,
or `dagster-daemon run -f` it beside the webserver.

- landing/cdc_raw: one catch-up of cdc-ingest (the Kafka topics of ingest.yml). dbt's source
  landing.cdc_raw has this asset key, so every staging model is downstream of it.
- the dbt project's seeds, models and snapshot as assets, its data tests as asset checks, materialized by
  the project's own commands, not by dagster-dbt's: a scheduled run is cdc-build (the seeds when they
  changed, the change log in one batch, the typed views to create), the audit `dbt build --selector
  audit`. Each node they ran is a materialization or a check evaluation, read from their report, and so is
  each typed view whose source table had versions in the run's batch (cdc-build's report lists them).
- cdc_lakehouse_hourly: ingest, then the `scheduled` selection (cdc-build), on CDC_DAGSTER_HOURLY_CRON
  (default hourly). A typed view whose source table did not change is selected but not materialized.
- cdc_lakehouse_audit: the `audit` selection, on CDC_DAGSTER_AUDIT_CRON (default 02:00).
- cdc_lakehouse_maintenance: cdc-maintain (landing retention, OPTIMIZE and VACUUM: README, "Operating it"),
  on CDC_DAGSTER_MAINTENANCE_CRON (default 03:30).

Every step that opens the warehouse is in the pool cdc_warehouse; with the instance's pools at run
granularity and a limit of 1 (dagster.yaml: `concurrency: {pools: {granularity: run, default_limit: 1}}`),
the run queue starts one such run at a time. The profile and variables are `make run`'s
(orchestration/environment.py); CDC_TARGET=cluster for a cluster.
"""

import os
import re

from dagster import (
    AssetCheckResult,
    AssetExecutionContext,
    AssetKey,
    AssetSelection,
    Config,
    DefaultScheduleStatus,
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
from dagster_dbt import build_dbt_asset_selection, dbt_assets

from orchestration.dagster_project.project import project
from orchestration.project_commands import (
    ProjectCommandFailed,
    result_lines,
    run_audit,
    run_project_command,
    run_reporting,
)

POOL = "cdc_warehouse"
# Where dagster-dbt keeps each asset's and check's dbt node.
UNIQUE_ID = "dagster_dbt/unique_id"
PASSED = {"pass", "success", "warn"}


def run_or_fail(context, arguments: list[str]) -> str:
    lines: list[str] = []

    def log(line: str) -> None:
        lines.append(line)
        context.log.info(line)

    try:
        run_project_command(arguments, log)
    except ProjectCommandFailed as exc:
        raise Failure(description=str(exc)) from None
    return "\n".join(lines)


@asset(key=AssetKey(["landing", "cdc_raw"]), group_name="landing", pool=POOL)
def cdc_raw(context: AssetExecutionContext) -> MaterializeResult:
    """Kafka messages landed by cdc-ingest: everything its topics hold beyond its checkpoint."""
    output = run_or_fail(context, ["cdc-ingest"])
    totals = re.search(r"(\d+) messages read, (\d+) landed", output)
    return MaterializeResult(
        metadata={"messages read": int(totals.group(1)), "landed": int(totals.group(2))} if totals else {}
    )


class DbtRunConfig(Config):
    # The daily audit (dbt build --selector audit) instead of a scheduled run (cdc-build).
    audit: bool = False


@dbt_assets(manifest=project.manifest_path, project=project, exclude="resource_type:unit_test", pool=POOL)
def cdc_lakehouse_dbt(context: AssetExecutionContext, config: DbtRunConfig):
    if config.audit:
        report, failure = run_audit(context.log.info)
    else:
        report, failure = run_reporting(["cdc-build"], context.log.info)
    yield from node_events(context, report)
    if failure:
        raise Failure(description=str(failure))


def node_events(context: AssetExecutionContext, report: dict):
    """A materialization for every seed, model and snapshot dbt built, then a check evaluation for every test
    it ran, of what this run selected: the report of cdc-build, or dbt's run_results.json."""
    assets = {spec.metadata[UNIQUE_ID]: spec.key for spec in context.assets_def.specs}
    checks = {spec.metadata[UNIQUE_ID]: spec.key for spec in context.assets_def.check_specs}
    for line in result_lines(report):
        context.log.info(line)
    results = {r["unique_id"]: r for r in report["results"]}
    for unique_id, result in results.items():
        key = assets.get(unique_id)
        if key in context.selected_asset_keys and result["status"] == "success":
            yield MaterializeResult(asset_key=key, metadata=node_metadata(result, report))
    for unique_id, result in results.items():
        check = checks.get(unique_id)
        if check in context.selected_asset_check_keys:
            yield AssetCheckResult(
                asset_key=check.asset_key,
                check_name=check.name,
                passed=result["status"] in PASSED,
                metadata=node_metadata(result, report),
            )


def node_metadata(result: dict, report: dict) -> dict:
    return {
        "unique_id": result["unique_id"],
        "status": result["status"],
        "seconds": result["execution_time"] or 0.0,
        "batch_id": report.get("batch_id"),
        "message": result["message"] or "",
    }


def dbt_selection(selector: str) -> AssetSelection:
    return build_dbt_asset_selection([cdc_lakehouse_dbt], dbt_selector=selector)


hourly = define_asset_job(
    "cdc_lakehouse_hourly", selection=AssetSelection.keys(AssetKey(["landing", "cdc_raw"])) | dbt_selection("scheduled")
)
audit = define_asset_job(
    "cdc_lakehouse_audit",
    selection=dbt_selection("audit"),
    config={"ops": {cdc_lakehouse_dbt.op.name: {"config": {"audit": True}}}},
)


@op(pool=POOL)
def cdc_maintain(context: OpExecutionContext) -> None:
    """Landing retention, the run log's old batches, OPTIMIZE and VACUUM of every table (cdc-maintain)."""
    run_or_fail(context, ["cdc-maintain"])


@job
def cdc_lakehouse_maintenance() -> None:
    cdc_maintain()


def schedule(job_definition, variable: str, default: str) -> ScheduleDefinition:
    return ScheduleDefinition(
        job=job_definition,
        cron_schedule=os.environ.get(variable, default),
        default_status=DefaultScheduleStatus.RUNNING,
    )


defs = Definitions(
    assets=[cdc_raw, cdc_lakehouse_dbt],
    jobs=[hourly, audit, cdc_lakehouse_maintenance],
    schedules=[
        schedule(hourly, "CDC_DAGSTER_HOURLY_CRON", "0 * * * *"),
        schedule(audit, "CDC_DAGSTER_AUDIT_CRON", "0 2 * * *"),
        schedule(cdc_lakehouse_maintenance, "CDC_DAGSTER_MAINTENANCE_CRON", "30 3 * * *"),
    ],
)
