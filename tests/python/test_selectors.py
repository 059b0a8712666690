"""selectors.yml: a scheduled run leaves out what does not follow its batch; the audit runs every data test."""

import json
import os
import subprocess
from pathlib import Path

import pytest
from helpers import PROJECT_DIR, VENV_BIN, dbt_in_process


def dbt_ls(work: Path, *selection: str, env: dict[str, str] | None = None) -> dict[str, dict]:
    """`dbt ls` (no Spark) with its own target folder under `work`: {unique_id: node}."""
    env = {**os.environ, **(env or {}), "DBT_TARGET_PATH": str(work / "target"), "DBT_LOG_PATH": str(work / "logs")}
    result = subprocess.run(
        [str(VENV_BIN / "dbt"), "ls", "--quiet", "--output", "json", *selection],
        cwd=PROJECT_DIR,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    nodes = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    return {node["unique_id"]: node for node in nodes}


@pytest.fixture(scope="module")
def listed(tmp_path_factory) -> dict[str, dict[str, dict]]:
    """`dbt ls` of each selector and of the whole project: {selection: {unique_id: node}}."""
    work = tmp_path_factory.mktemp("selectors")

    def ls(*selection: str) -> dict[str, dict]:
        return dbt_ls(work, *selection)

    return {"all": ls(), "scheduled": ls("--selector", "scheduled"), "audit": ls("--selector", "audit")}


def of_type(nodes: dict[str, dict], resource_type: str) -> set[str]:
    return {unique_id for unique_id, node in nodes.items() if node["resource_type"] == resource_type}


def test_a_scheduled_run_builds_every_model_but_the_one_built_from_seeds(listed):
    assert of_type(listed["scheduled"], "model") == of_type(listed["all"], "model") - {
        "model.cdc_lakehouse.cdc_type_mappings"
    }


def test_a_scheduled_run_leaves_out_seeds_unit_tests_and_the_snapshot(listed):
    for resource_type in ("seed", "unit_test", "snapshot"):
        assert not of_type(listed["scheduled"], resource_type), resource_type


def test_a_scheduled_run_leaves_the_whole_table_checks_to_the_audit(listed):
    scheduled_tests = of_type(listed["scheduled"], "test")
    assert "test.cdc_lakehouse.cdc_every_landed_message_is_accounted_for" not in scheduled_tests
    assert not any("one_open_version_per_key" in test or "contiguous_versions" in test for test in scheduled_tests)
    assert any(test.startswith("test.cdc_lakehouse.unique_cdc_events_event_id.") for test in scheduled_tests)


def test_a_scheduled_run_tests_the_tables_users_read_and_leaves_the_internal_tables_to_the_audit(listed):
    def tested_folder(test_id: str) -> str:
        return listed["all"][test_id]["original_file_path"].split("/")[1]

    scheduled_folders = {tested_folder(test) for test in of_type(listed["scheduled"], "test")}
    audit_folders = {tested_folder(test) for test in of_type(listed["audit"], "test")}
    assert {"staging", "intermediate"} <= audit_folders
    assert not {"staging", "intermediate"} & scheduled_folders
    assert "marts" in scheduled_folders


def test_the_audit_runs_every_data_test_and_loads_nothing(listed):
    audit = listed["audit"]
    assert of_type(audit, "test") == of_type(listed["all"], "test")
    assert set(audit) == of_type(audit, "test")


def test_a_scheduled_run_without_the_table_built_from_seeds_stops_in_one_line_naming_make_seeds(
    spark, tmp_path, monkeypatch
):
    """`dbt build --selector scheduled` where cdc_type_mappings was never built, as after `dbt seed` alone
    (what a dbt user types): the run says so before any model runs."""
    monkeypatch.setenv("CDC_SCHEMA", "cdc_seeds_only")
    result = dbt_in_process(spark, tmp_path, "build", "--selector", "scheduled", check=False)
    assert not result.success and result.result is None, "no node ran"
    assert (
        "cdc_seeds_only.cdc_type_mappings is missing (it is built from the seeds): run `make seeds`"
        " (or `dbt seed`, then `dbt run --select cdc_type_mappings`) before this run"
    ) in str(result.exception).splitlines()[1]
    assert not spark.catalog.tableExists("cdc_seeds_only.cdc_batches"), "no batch was opened"


def test_the_environment_names_the_enabled_formats_when_the_var_does_not(tmp_path):
    # A full parse of its own (another target folder): the models of formats not listed leave the DAG.
    nodes = dbt_ls(tmp_path, "--resource-type", "model", env={"CDC_ENABLED_FORMATS": " canal_json, huawei_drs_json "})
    names = {node["name"] for node in nodes.values()}
    assert {name for name in names if name.endswith("__events")} == {"int_canal_json__events", "int_huawei_drs__events"}
    assert "stg_canal_json__messages" in names
    assert "stg_tencent_dts_protobuf__envelopes" not in names


def test_a_scheduled_run_tests_the_historys_batch_and_leaves_the_type_tables_tests_to_the_audit(listed):
    # What every typed view inherits is checked on the batch's rows of cdc_history.
    scheduled_tests = {listed["all"][test]["name"] for test in of_type(listed["scheduled"], "test")}
    type_tables_tests = {
        node["name"]
        for node in listed["all"].values()
        if node["resource_type"] == "test" and node["original_file_path"].startswith("models/types/")
    }
    assert type_tables_tests and not type_tables_tests & scheduled_tests
    assert "cdc_every_vendor_type_is_mapped" not in scheduled_tests
    assert "cdc_versions_hold_cdc_history_source_format__source_name__source_task__pk__scd_id" in scheduled_tests
