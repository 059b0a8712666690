"""cdc-build's scheduled run builds what changed: the change log when something landed, and the typed views of
a source table only when they are new or the table's columns were added or retyped; a table's new versions
reach its views without creating them again (README, "The scheduled run").

Three Canal tables (shop.a, shop.b, shop.c) have typed views, a fourth (shop.d) has none; an analyst's table
(`a_and_b`) reads the current views of shop.a and shop.b. Each scenario lands Canal messages and runs
cdc_lakehouse.scheduled_build in this process; which models finished which batch is read from the run log,
what the views and the analyst's table hold from them. The run log also holds, as an upgraded warehouse's
does, a batch that shop__a__current finished when typed tables were tables. Expected rows are written by
hand from the messages.
"""

import json
import os
import re
from datetime import datetime

import pytest
from helpers import project_without_typed_tables

pytestmark = pytest.mark.slow

SCHEMA = "scheduled_test"
TOPIC = "canal_json.scheduled"
ONLY_CANAL = {"cdc_enabled_formats": ["canal_json"]}
TYPED_BASES = ("shop__a", "shop__b", "shop__c")
T0_MS = int(datetime(2026, 5, 1, 8, 0, 0).timestamp() * 1000)
COLUMNS = {"id": ("int(11)", 4), "v": ("varchar(16)", 12)}
# The SQL of an earlier scaffold's typed history (merged per batch), shortened.
EARLIER_HISTORY_SQL = """\
{{ config(unique_key='scd_id', enabled=cdc_format_enabled('canal_json')) }}
{%- set batch = cdc_batch() %}
select versions.pk, {{ cdc_batch_id(batch) }} as cdc_batch_id
from {{ ref('cdc_history') }} as versions
where {{ cdc_in_batch(batch, 'versions.cdc_batch_id') }}
"""
ANALYSTS_TABLE = """{{ config(materialized='table') }}
select 'a' as source_table, id, v from {{ ref('shop__a__current') }}
union all
select 'b' as source_table, id, v from {{ ref('shop__b__current') }}
"""


def canal(
    batch_id: int,
    table: str,
    operation: str,
    rows: list[dict],
    old: list[dict] | None = None,
    columns: dict = COLUMNS,
) -> bytes:
    """A Canal flat message of shop.<table> (id int key, v varchar), as Canal writes one batch it fetched."""
    return json.dumps(
        {
            "id": batch_id,
            "database": "shop",
            "table": table,
            "type": operation,
            "isDdl": False,
            "sql": "",
            "es": T0_MS + batch_id * 1000,
            "ts": T0_MS + batch_id * 1000 + 5,
            "mysqlType": {name: vendor for name, (vendor, _) in columns.items()},
            "sqlType": {name: jdbc for name, (_, jdbc) in columns.items()},
            "pkNames": ["id"],
            "data": rows,
            "old": old,
        }
    ).encode()


QUERY_COMMENT = re.compile(r"^\s*/\*.*?\*/", re.DOTALL)


class Deployment:
    """A copy of the project with three scaffolded tables, built by scheduled_build on the test session."""

    def __init__(self, spark, tmp_path_factory) -> None:
        from cdc_lakehouse.dbt_project import DbtProject
        from cdc_lakehouse.typed_model_files import scaffold_files
        from cdc_lakehouse.typed_model_names import SourceTable

        self.spark = spark
        self.root = project_without_typed_tables(tmp_path_factory.mktemp("scheduled_project") / "project")
        tables = self.root / "models" / "tables"
        tables.mkdir()
        for base in TYPED_BASES:
            table = SourceTable(database="shop", table=base.split("__")[1], source_format="canal_json")
            for name, content in scaffold_files(table, base).items():
                (tables / name).write_text(content)
        (self.root / "models" / "analysts").mkdir()
        (self.root / "models" / "analysts" / "a_and_b.sql").write_text(ANALYSTS_TABLE)
        # Per dbt command of the newest build, the statements it sent, without dbt's query comment.
        self.statements: list[list[str]] = []
        self.project = DbtProject(project_dir=self.root, dbt_vars=ONLY_CANAL, callbacks=[self.record])

    def record(self, event) -> None:
        if event.info.name == "MainReportVersion":
            self.statements.append([])
        elif event.info.name == "SQLQuery":
            # Without dbt's query comment (/* {"app": "dbt", …} */), which comes first.
            self.statements[-1].append(" ".join(QUERY_COMMENT.sub("", event.data.sql, count=1).split()))

    @property
    def code_generation(self) -> list[list[str]]:
        """Per dbt command of the newest build, the statements that set Spark's code generation."""
        return [[sql for sql in sent if "spark.sql.codegen" in sql] for sent in self.statements]

    @property
    def temporary_views(self) -> list[list[str]]:
        """Per dbt command of the newest build, the models whose batch dbt-spark staged in a temporary view."""
        staged = re.compile(r"create or replace temporary view (\w+)__dbt_tmp")
        return [staged.findall(" ".join(sent)) for sent in self.statements]

    def land(self, *messages: bytes) -> None:
        from cdc_lakehouse.landing import land

        land(self.spark, "canal_json", TOPIC, 0, list(messages))

    def build(self):
        from cdc_lakehouse.scheduled_build import scheduled_build

        self.statements = []
        return scheduled_build(self.project, self.spark)

    def artifact(self, name: str) -> str:
        return (self.project.target_path / name).read_text()

    def finished_in(self, batch_id: int) -> set[str]:
        rows = self.spark.sql(
            f"select model_name from {SCHEMA}.cdc_batch_models where batch_id = {batch_id} and finished_at is not null"
        ).collect()
        return {row.model_name for row in rows}

    def newest_batch(self) -> int:
        return self.spark.sql(f"select max(batch_id) as b from {SCHEMA}.cdc_batches").collect()[0].b

    def analysts_rows(self) -> list[tuple]:
        return sorted(map(tuple, self.spark.table(f"{SCHEMA}.a_and_b").collect()))

    def current(self, base: str, *columns: str) -> list[tuple]:
        rows = self.spark.table(f"{SCHEMA}.{base}__current").select("id", "v", *columns, "op").collect()
        return sorted(map(tuple, rows))


@pytest.fixture(scope="module")
def runs(spark, tmp_path_factory) -> dict:
    """Four scheduled runs and a run that stopped between two typed models, with what each left."""
    from cdc_lakehouse.landing_table import LANDING_TABLE

    saved = {name: os.environ.get(name) for name in ("CDC_SCHEMA", "CDC_WAREHOUSE")}
    os.environ.update({"CDC_SCHEMA": SCHEMA, "CDC_WAREHOUSE": str(tmp_path_factory.mktemp("scheduled_warehouse"))})
    try:
        spark.sql(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
        spark.sql(f"DELETE FROM {LANDING_TABLE}")
        deployment = Deployment(spark, tmp_path_factory)
        seen = {}

        # 1: every table gets rows; the typed tables are new.
        deployment.land(
            canal(1, "a", "INSERT", [{"id": "1", "v": "a1"}]),
            canal(1, "b", "INSERT", [{"id": "1", "v": "b1"}, {"id": "2", "v": "b2"}]),
            canal(1, "c", "INSERT", [{"id": "1", "v": "c1"}]),
            canal(1, "d", "INSERT", [{"id": "1", "v": "d1"}]),
        )
        seen["first"] = deployment.build()
        seen["parsed_manifest"] = deployment.artifact("manifest.json")
        seen["first_batch"] = deployment.newest_batch()
        seen["first_finished"] = deployment.finished_in(seen["first_batch"])
        seen["first_code_generation"] = deployment.code_generation
        seen["analysts_after_first"] = deployment.analysts_rows()
        # What an upgraded warehouse's run log holds: the batch the typed table shop__a__current last merged.
        spark.sql(f"insert into {SCHEMA}.cdc_batch_models values ('shop__a__current', {seen['first_batch']}, now())")

        # 2: shop.b changes, and shop.d, which has no typed table.
        deployment.land(
            canal(2, "b", "UPDATE", [{"id": "2", "v": "b2x"}], old=[{"v": "b2"}]),
            canal(2, "b", "DELETE", [{"id": "1", "v": "b1"}]),
            canal(3, "d", "INSERT", [{"id": "2", "v": "d2"}]),
        )
        seen["second"] = deployment.build()
        seen["second_batch"] = deployment.newest_batch()
        seen["second_finished"] = deployment.finished_in(seen["second_batch"])
        seen["second_code_generation"] = deployment.code_generation
        seen["second_temporary_views"] = deployment.temporary_views
        seen["current_after_second"] = {base: deployment.current(base) for base in TYPED_BASES}
        seen["analysts_after_second"] = deployment.analysts_rows()
        seen["second_manifest"] = deployment.artifact("manifest.json")
        seen["second_run_results"] = json.loads(deployment.artifact("run_results.json"))

        # 3: nothing landed.
        seen["idle"] = deployment.build()
        seen["idle_batch"] = deployment.newest_batch()

        # 4: shop.c gains a column (its first event with it): its views are created again, with the column.
        wider = {**COLUMNS, "w": ("varchar(8)", 12)}
        deployment.land(canal(4, "c", "UPDATE", [{"id": "1", "v": "c1x", "w": "w1"}], old=[{"v": "c1"}], columns=wider))
        seen["widened"] = deployment.build()
        seen["widened_batch"] = deployment.newest_batch()
        seen["current"] = {base: deployment.current(base) for base in TYPED_BASES}
        seen["current_c"] = deployment.current("shop__c", "w")

        # 5: shop.a changes, for the first time since the first run.
        deployment.land(canal(5, "a", "UPDATE", [{"id": "1", "v": "a1x"}], old=[{"v": "a1"}]))
        seen["a_changed"] = deployment.build()
        seen["analysts_after_a_changed"] = deployment.analysts_rows()
        seen["deployment"] = deployment

        # What cdc-build knows of the run log after a change log, without reading it, and the run log read.
        from cdc_lakehouse.build_outcome import ClosedBatches
        from cdc_lakehouse.build_plan import CHANGE_LOG, run_log_after
        from cdc_lakehouse.run_state import read_run_log

        deployment.land(canal(6, "d", "INSERT", [{"id": "3", "v": "d3"}]))
        before = read_run_log(spark, SCHEMA)
        closed = ClosedBatches()
        change_log = deployment.project.invoke("build", "--selector", CHANGE_LOG, callbacks=[closed])
        seen["run_log_known"] = run_log_after(before, change_log, closed.batches)
        seen["run_log_read"] = read_run_log(spark, SCHEMA)

        # 6: shop.a's history as an earlier scaffold wrote it for a typed table merged per batch.
        (deployment.root / "models" / "tables" / "shop__a__history.sql").write_text(EARLIER_HISTORY_SQL)
        seen["earlier_sql"] = deployment.project.invoke("run", "--select", "shop__a__history")
        yield seen
    finally:
        spark.sql(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def typed_models(*bases: str) -> set[str]:
    return {f"{base}__{kind}" for base in bases for kind in ("history", "current")}


def models_in_report(outcome) -> dict[str, str]:
    """The models of a run's report (--report), by name: dbt's message, or what the run says of a typed view."""
    return {
        r["unique_id"].split(".")[-1]: r["message"]
        for r in outcome.report()["results"]
        if r["unique_id"].startswith("model.")
    }


def test_a_first_run_builds_the_change_log_and_creates_every_typed_view(runs):
    first = runs["first"]
    assert first.succeeded, first.failures
    assert (first.batch_id, first.typed_tables, first.typed_tables_built) == (runs["first_batch"], 3, 3)
    assert first.change_log_nodes > 0
    assert {"cdc_history", "cdc_batch_tables"} <= runs["first_finished"]
    # Views hold no batch: the run log is the incremental models'.
    assert not runs["first_finished"] & typed_models(*TYPED_BASES)
    assert typed_models(*TYPED_BASES) <= set(models_in_report(first))


def test_new_versions_reach_the_views_without_creating_them_again(runs):
    second = runs["second"]
    assert second.succeeded, second.failures
    assert (second.batch_id, second.typed_tables_built, second.tables_touched) == (runs["first_batch"] + 1, 0, 2)
    assert {"cdc_history", "cdc_batch_tables"} <= runs["second_finished"]
    assert "typed views of 3 tables as they were" in second.summary()
    assert runs["current_after_second"] == {
        "shop__a": [(1, "a1", "c")],
        "shop__b": [(2, "b2x", "u")],
        "shop__c": [(1, "c1", "c")],
    }
    # The report names shop.b's views, whose rows changed (an orchestrator's asset events), and not the others.
    report = second.report()
    assert (report["batch_id"], report["succeeded"]) == (second.batch_id, True)
    models = models_in_report(second)
    batch = second.batch_id
    # b's update and delete: key 2's first version closed and its new one, key 1's closed and its delete.
    assert {name: models.get(name) for name in typed_models("shop__b")} == dict.fromkeys(
        typed_models("shop__b"), f"4 versions of its source table in batch {batch}"
    )
    assert not set(models) & typed_models("shop__a", "shop__c")


def test_a_small_batchs_change_log_runs_interpreted_and_the_analysts_models_with_the_sessions_settings(runs):
    interpreted = ["set spark.sql.codegen.wholeStage=false", "set spark.sql.codegen.factoryMode=NO_CODEGEN"]
    given_back = ["reset spark.sql.codegen.wholeStage", "reset spark.sql.codegen.factoryMode"]
    # One command of each build sets them, its change log: the first batch reads all of landing (compiled), the
    # second three messages. The others (the seeds, the typed views, the analysts' a_and_b, built in both
    # runs) open no batch and leave the session's settings as they are.
    assert [sent for sent in runs["first_code_generation"] if sent] == [given_back + given_back]
    assert [sent for sent in runs["second_code_generation"] if sent] == [interpreted + given_back]
    assert len(runs["second_code_generation"]) > 1


def test_a_pipeline_append_is_one_statement_and_a_merge_is_dbt_sparks(runs):
    # The second batch's change log: its appends insert the model's query; the three merges with rows to merge
    # stage them in dbt-spark's view. No other command of the build stages a batch.
    staged = [sorted(views) for views in runs["second_temporary_views"] if views]
    assert staged == [["cdc_history", "cdc_observed_column_types", "cdc_table_columns"]]
    assert "cdc_events" in runs["second_finished"]


def test_a_run_writes_its_last_commands_run_results_and_leaves_the_parsed_manifest(runs):
    # The second run's last command built the analysts' a_and_b (its views changed): run_results.json is
    # dbt's, of that command. manifest.json is the parse's: the commands did not write the project's nodes again.
    run_results = runs["second_run_results"]
    assert run_results["metadata"]["dbt_schema_version"].endswith("/run-results/v6.json")
    nodes = {r["unique_id"]: r["status"] for r in run_results["results"] if not r["unique_id"].startswith("operation.")}
    assert nodes == {"model.cdc_lakehouse.a_and_b": "success"}
    assert runs["second_manifest"] == runs["parsed_manifest"]


def test_a_run_with_nothing_landed_opens_no_batch_and_builds_nothing(runs):
    idle = runs["idle"]
    assert idle.succeeded, idle.failures
    assert (idle.change_log_nodes, idle.typed_tables_built) == (0, 0)
    assert runs["idle_batch"] == runs["second_batch"]
    assert idle.summary().endswith("change log: nothing new; typed views of 3 tables as they were")
    assert not idle.report()["results"]


def test_the_analysts_table_is_built_when_one_of_its_views_changed_and_only_then(runs):
    # Built by the first run, then by each run in which shop.a or shop.b had versions: not by the idle run, nor
    # by the run of shop.c, whatever batch each of its two views last changed in.
    built = {
        name: "model.cdc_lakehouse.a_and_b" in {r["unique_id"] for r in runs[name].report()["results"]}
        for name in ("first", "second", "idle", "widened", "a_changed")
    }
    assert built == {"first": True, "second": True, "idle": False, "widened": False, "a_changed": True}
    assert runs["analysts_after_first"] == [("a", 1, "a1"), ("b", 1, "b1"), ("b", 2, "b2")]
    assert runs["analysts_after_second"] == [("a", 1, "a1"), ("b", 2, "b2x")]
    # The run log's batch of the former table shop__a__current does not hide the view's change.
    assert runs["analysts_after_a_changed"] == [("a", 1, "a1x"), ("b", 2, "b2x")]


def test_a_view_created_again_makes_its_analysts_due_whatever_the_batch(runs):
    from cdc_lakehouse.build_plan import downstream_plan, pipeline_nodes

    project = runs["deployment"].project
    manifest = project.manifest()
    scheduled = set(project.selected("scheduled"))
    pipeline = pipeline_nodes(manifest, scheduled)
    analysts = scheduled - pipeline
    view, table = (f"model.cdc_lakehouse.{name}" for name in ("shop__a__current", "a_and_b"))
    # A view created in a run that opened no batch (its creation had failed in the batch's run): recorded in
    # the batch the analyst's table was already built through.
    batch = runs["widened_batch"]
    changed = dict.fromkeys((view, "model.cdc_lakehouse.shop__b__current"), batch)
    assert downstream_plan(manifest, analysts, pipeline, changed, {table: batch})[0] == set()
    assert downstream_plan(manifest, analysts, pipeline, changed, {table: batch}, created={view}) == (
        {table},
        {table: batch},
    )


def test_cdc_build_knows_the_run_log_a_change_log_leaves_without_reading_it(runs):
    known, read = runs["run_log_known"], runs["run_log_read"]
    assert read.finished["cdc_events"] == read.batch_id
    assert read.finished["shop__a__current"] < read.batch_id
    assert known is not None
    assert (known.batch_id, known.finished) == (read.batch_id, read.finished)


def test_an_earlier_scaffolds_typed_table_sql_fails_naming_its_file_and_the_fix(runs):
    result = runs["earlier_sql"]
    assert not result.success
    (failed,) = [r for r in result.result.results if str(r.status) == "error"]
    assert "models/tables/shop__a__history.sql was written by an earlier cdc-scaffold" in failed.message
    assert "cdc-scaffold --refresh" in failed.message


def test_a_column_added_creates_its_tables_views_again(runs):
    widened = runs["widened"]
    assert widened.succeeded, widened.failures
    assert widened.typed_tables_built == 1
    assert typed_models("shop__c") <= set(models_in_report(widened))
    assert runs["current_c"] == [(1, "c1x", "w1", "u")]
    assert runs["current"] == {
        "shop__a": [(1, "a1", "c")],
        "shop__b": [(2, "b2x", "u")],
        "shop__c": [(1, "c1x", "u")],
    }
