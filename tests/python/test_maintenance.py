"""Table maintenance between runs (cdc-maintain: dbt run-operation cdc_expire_landing, then cdc_maintain), on a
warehouse of its own (schema cdc_maintenance, landing schema landing_maintenance) with Canal and Huawei DRS JSON
enabled:

1. three landing commits of Canal and DRS changes, a run after the first and one after the other two: small
   files in every table;
2. maintenance (retention far off, every removed file vacuumed at once): every table holds the same rows
   (count and an order-free hash of each), in one live file each, with no other data file left on disk but
   landing's of the last hour, and cdc_history is clustered by source table (the typed views read one table
   each);
3. a fourth batch and a run: the run works on the maintained tables;
4. a fifth batch lands, written by a late writer with an ingested_at of the year 2000; maintenance with
   retention 0 days: landing keeps only that batch, which no model has read (its old ingested_at does not
   make it expire), and every other table but the run log keeps its rows; it compacts and vacuums only the
   tables something committed to since the first (not the seeds);
5. a run reads the fifth batch; a full refresh of the Canal staging model, which would read all of landing,
   refuses, naming what retention removed, and leaves its table as it was;
6. a sixth batch lands, the DRS staging model's rows of the run log are set aside (a model that finished
   no batch) and maintenance vacuums with 0 hours: landing keeps the files of the commit the Canal staging
   model has not read, which the next run reads.
Expected versions are written by hand from Canal's and DRS's documented fields.
"""

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from helpers import dbt_in_process, dbt_show_in_process, row_change

from cdc_lakehouse.landing_table import LANDING_COLUMNS, ensure_landing_table
from cdc_lakehouse.maintenance import main as maintain

pytestmark = pytest.mark.slow

SCHEMA = "cdc_maintenance"
LANDING_SCHEMA = "landing_maintenance"
LANDING = f"{LANDING_SCHEMA}.cdc_raw"
VARS = {"cdc_enabled_formats": ["canal_json", "huawei_drs_json"], "landing_schema": LANDING_SCHEMA}
MODELS = ("+cdc_history", "+cdc_redeliveries", "+cdc_quarantine", "+cdc_observed_column_types")
CANAL_TOPIC = "canal_json.maintenance"
DRS_TOPIC = "huawei_drs_json.maintenance"
RUN_LOG = ("cdc_batches", "cdc_batch_models")


def land(spark, rows: list[tuple[str, str, int, bytes]], ingested_at: datetime | None = None) -> None:
    """One landing commit of (format, topic, offset, value) rows, ingested now or at `ingested_at`."""
    schema = ", ".join(f"{name} {sql_type}" for name, sql_type in LANDING_COLUMNS)
    stamp = ingested_at or datetime.now(UTC)
    records = [(fmt, topic, 0, offset, None, value, None, stamp, None, None) for fmt, topic, offset, value in rows]
    spark.createDataFrame(records, schema).write.format("delta").mode("append").saveAsTable(LANDING)


def tables(spark) -> list[str]:
    """Every Delta table of the warehouse: the schema's tables (not its views) and landing."""
    views = {row.viewName for row in spark.sql(f"show views in {SCHEMA}").collect()}
    names = {row.tableName for row in spark.sql(f"show tables in {SCHEMA}").collect() if not row.isTemporary} - views
    return [*sorted(f"{SCHEMA}.{name}" for name in names), LANDING]


def content(spark, table: str) -> tuple[int, int]:
    """The table's row count and an order-free hash of its rows."""
    return tuple(
        spark.sql(
            f"select count(*), coalesce(sum(cast(xxhash64(to_json(struct(*))) as decimal(38, 0))), 0) from {table}"
        ).first()
    )


def contents(spark) -> dict[str, tuple[int, int]]:
    """Each table's content."""
    return {table: content(spark, table) for table in tables(spark)}


def files(spark, table: str) -> tuple[int, int]:
    """The table's live files, and the data files on disk (outside the log), at any depth."""
    detail = spark.sql(f"describe detail {table}").first()
    root = Path(detail.location.removeprefix("file:"))
    on_disk = [p for p in root.rglob("*.parquet") if "_delta_log" not in p.parts]
    return detail.numFiles, len(on_disk)


def table_versions(spark) -> dict[str, int]:
    """Each table's newest Delta version: a table nothing committed to keeps its version."""
    return {table: spark.sql(f"describe history {table} limit 1").first().version for table in tables(spark)}


def versions(spark) -> list[tuple]:
    rows = spark.sql(
        f"""
        select source_name, pk, op, row['note'] as note, is_current, is_deleted
        from {SCHEMA}.cdc_history
        order by source_name, pk, event_order
        """
    ).collect()
    return [tuple(row) for row in rows]


@pytest.fixture(scope="module")
def maintained(spark, tmp_path_factory) -> dict:
    work_dir = tmp_path_factory.mktemp("maintenance_dbt")

    def dbt(*arguments: str, check: bool = True):
        with pytest.MonkeyPatch.context() as env:
            env.setenv("CDC_SCHEMA", SCHEMA)
            return dbt_in_process(spark, work_dir, *arguments, dbt_vars=VARS, check=check)

    def run() -> None:
        dbt("run", "--select", *MODELS)

    def maintenance(*arguments: str) -> int:
        with pytest.MonkeyPatch.context() as env:
            env.setenv("CDC_SCHEMA", SCHEMA)
            env.setenv("DBT_TARGET_PATH", str(work_dir / "target"))
            env.setenv("DBT_LOG_PATH", str(work_dir / "logs"))
            return maintain(["--vars", json.dumps(VARS), *arguments])

    spark.sql(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
    spark.sql(f"DROP SCHEMA IF EXISTS {LANDING_SCHEMA} CASCADE")
    ensure_landing_table(spark, LANDING_SCHEMA)
    dbt("seed", "--select", *MODELS)
    states: dict = {}

    land(
        spark,
        [
            ("canal_json", CANAL_TOPIC, 0, row_change(1, "INSERT", 1, {"id": "1", "note": "new"})),
            ("canal_json", CANAL_TOPIC, 1, row_change(1, "INSERT", 2, {"id": "2", "note": "new"})),
            ("huawei_drs_json", DRS_TOPIC, 0, row_change(70, "INSERT", 3, {"id": "7", "note": "drs"})),
        ],
    )
    run()
    land(
        spark,
        [("canal_json", CANAL_TOPIC, 2, row_change(2, "UPDATE", 4, {"id": "1", "note": "paid"}, {"note": "new"}))],
    )
    land(spark, [("canal_json", CANAL_TOPIC, 3, row_change(3, "DELETE", 5, {"id": "2", "note": "new"}))])
    run()
    states["before"] = contents(spark)
    states["files_before"] = {table: files(spark, table) for table in tables(spark)}

    states["kept_everything"] = maintenance("--retain-hours", "0", "--keep-days", "3650")
    states["after"] = contents(spark)
    states["files_after"] = {table: files(spark, table) for table in tables(spark)}
    states["history_clustering"] = spark.sql(f"describe detail {SCHEMA}.cdc_history").first().clusteringColumns
    maintained_at = table_versions(spark)

    land(spark, [("canal_json", CANAL_TOPIC, 4, row_change(4, "INSERT", 6, {"id": "3", "note": "after"}))])
    run()
    states["versions_after_maintenance"] = versions(spark)

    # The late writer's commit: not read by any model yet, ingested_at long past.
    land(
        spark,
        [("canal_json", CANAL_TOPIC, 5, row_change(5, "INSERT", 7, {"id": "4", "note": "late"}))],
        ingested_at=datetime(2000, 1, 1, tzinfo=UTC),
    )
    before_retention = contents(spark)
    before_versions = table_versions(spark)
    states["written_since_maintenance"] = sorted(t for t in before_versions if before_versions[t] != maintained_at[t])
    states["retention"] = maintenance("--retain-hours", "0", "--keep-days", "0")
    after_versions = table_versions(spark)
    states["committed_by_maintenance"] = sorted(t for t in after_versions if after_versions[t] != before_versions[t])
    after_retention = contents(spark)
    states["changed_by_retention"] = sorted(t for t in before_retention if before_retention[t] != after_retention[t])
    states["landed_after_retention"] = sorted(
        (r.topic, r.kafka_offset) for r in spark.table(LANDING).select("topic", "kafka_offset").collect()
    )
    run()
    states["versions_after_retention"] = versions(spark)

    staged = content(spark, f"{SCHEMA}.stg_canal_json__messages")
    refresh = dbt("run", "--select", "stg_canal_json__messages", "--full-refresh", check=False)
    states["refresh"] = [
        (r.node.name, str(r.status), r.message) for r in refresh.result.results if r.node.resource_type == "model"
    ]
    states["staged_kept"] = content(spark, f"{SCHEMA}.stg_canal_json__messages") == staged

    # A commit no model has read, and the DRS staging model without a finished batch (its rows of the run
    # log set aside): maintenance keeps the commit's files, which the Canal staging model reads next.
    land(spark, [("canal_json", CANAL_TOPIC, 6, row_change(6, "INSERT", 8, {"id": "5", "note": "unread"}))])
    run_log = f"{SCHEMA}.cdc_batch_models"
    set_aside = spark.table(run_log).where("model_name = 'stg_huawei_drs__messages'").collect()
    spark.sql(f"delete from {run_log} where model_name = 'stg_huawei_drs__messages'")
    states["beside_an_unfinished_model"] = maintenance("--retain-hours", "0", "--keep-days", "3650")
    spark.createDataFrame(set_aside, spark.table(run_log).schema).write.format("delta").mode("append").saveAsTable(
        run_log
    )
    run()
    states["versions_after_an_unread_commit_kept"] = versions(spark)

    # The run log lost after retention removed messages: a run stops; rebuilt from the tables' batch stamps, a
    # run reads what landed since and the next reads landing's commits again.
    for table in RUN_LOG:
        spark.sql(f"drop table {SCHEMA}.{table}")
    land(spark, [("canal_json", CANAL_TOPIC, 7, row_change(7, "INSERT", 9, {"id": "6", "note": "after"}))])
    lost = dbt("run", "--select", *MODELS, check=False)
    states["run_without_run_log"] = {str(r.status) for r in lost.result.results if r.node.resource_type == "model"}
    dbt("run-operation", "cdc_rebuild_run_log")
    run()
    land(spark, [("canal_json", CANAL_TOPIC, 8, row_change(8, "INSERT", 10, {"id": "7", "note": "later"}))])
    run()
    states["versions_after_the_run_log_was_rebuilt"] = versions(spark)
    states["staged_twice"] = (
        spark.table(f"{SCHEMA}.stg_canal_json__messages")
        .groupBy("topic", "kafka_offset")
        .count()
        .where("count > 1")
        .count()
    )
    states["newest_landing_version"] = spark.sql(
        f"select landing_version from {SCHEMA}.cdc_batches order by batch_id desc limit 1"
    ).first()[0]
    return states


def test_maintenance_changes_no_table_content(maintained):
    assert maintained["kept_everything"] == 0
    assert maintained["after"] == maintained["before"]
    assert len(maintained["before"]) > 15  # the models', their seeds' and the run log's tables, and landing


def test_maintenance_compacts_every_table_and_vacuums_what_it_no_longer_holds(maintained):
    before, after = maintained["files_before"], maintained["files_after"]
    # Three runs left several files in the tables they wrote.
    assert before[f"{SCHEMA}.cdc_history"][0] > 1 and before[LANDING][0] > 1
    assert {table: live for table, (live, _) in after.items() if live > 1} == {}
    # Landing keeps the files it no longer holds for an hour, whatever --retain-hours: an ingest beside
    # maintenance writes its files before it commits them.
    assert {table: (live, on_disk) for table, (live, on_disk) in after.items() if on_disk != live} == {
        LANDING: (1, before[LANDING][1] + 1)
    }


def test_maintenance_clusters_the_history_by_source_table(maintained):
    assert maintained["history_clustering"] == ["source_table", "source_database"]


def test_maintenance_skips_the_tables_nothing_committed_to_since_the_last_one(maintained):
    written = maintained["written_since_maintenance"]
    # The run after the first maintenance wrote the Canal path; the late writer landed; no seed was loaded.
    assert {f"{SCHEMA}.stg_canal_json__messages", f"{SCHEMA}.cdc_history", LANDING} <= set(written)
    assert f"{SCHEMA}.cdc_operation_codes" not in written and f"{SCHEMA}.stg_huawei_drs__messages" not in written
    # Every table written since was compacted and vacuumed again (new commits), and no other one.
    assert maintained["committed_by_maintenance"] == written


def test_a_run_after_maintenance_works(maintained):
    assert maintained["versions_after_maintenance"] == [
        (CANAL_TOPIC, '["1"]', "c", "new", False, False),
        (CANAL_TOPIC, '["1"]', "u", "paid", True, False),
        (CANAL_TOPIC, '["2"]', "c", "new", False, False),
        (CANAL_TOPIC, '["2"]', "d", "new", True, True),
        (CANAL_TOPIC, '["3"]', "c", "after", True, False),
        (DRS_TOPIC, '["7"]', "c", "drs", True, False),
    ]


def test_landing_retention_removes_what_every_model_read_and_nothing_else(maintained):
    assert maintained["retention"] == 0
    # Only the late writer's commit is left: no model had read it, whatever its ingested_at says.
    assert maintained["landed_after_retention"] == [(CANAL_TOPIC, 5)]
    assert maintained["changed_by_retention"] == [f"{SCHEMA}.cdc_batch_models", f"{SCHEMA}.cdc_batches", LANDING]


def test_a_run_after_landing_retention_reads_what_was_left(maintained):
    assert maintained["versions_after_retention"] == [
        *maintained["versions_after_maintenance"][:5],
        (CANAL_TOPIC, '["4"]', "c", "late", True, False),
        (DRS_TOPIC, '["7"]', "c", "drs", True, False),
    ]


def test_a_full_refresh_that_would_miss_removed_messages_refuses(maintained):
    ((name, status, message),) = maintained["refresh"]
    assert (name, status) == ("stg_canal_json__messages", "error")
    assert "stg_canal_json__messages would read every landed message of canal_json, but landing retention" in message
    assert "removed the canal_json messages landed before" in message
    assert "dbt build --full-refresh --select stg_canal_json__messages+ --exclude stg_canal_json__messages" in message
    assert maintained["staged_kept"]


def test_a_commit_some_model_has_not_read_is_kept_while_another_model_finished_no_batch(maintained):
    assert maintained["beside_an_unfinished_model"] == 0
    assert maintained["versions_after_an_unread_commit_kept"] == [
        *maintained["versions_after_retention"][:6],
        (CANAL_TOPIC, '["5"]', "c", "unread", True, False),
        (DRS_TOPIC, '["7"]', "c", "drs", True, False),
    ]


def test_a_run_log_lost_after_retention_is_rebuilt_from_the_tables_batch_stamps(maintained):
    # Without it, the models that hold rows stop, naming themselves.
    assert "error" in maintained["run_without_run_log"]
    assert maintained["versions_after_the_run_log_was_rebuilt"] == [
        *maintained["versions_after_an_unread_commit_kept"][:7],
        (CANAL_TOPIC, '["6"]', "c", "after", True, False),
        (CANAL_TOPIC, '["7"]', "c", "later", True, False),
        (DRS_TOPIC, '["7"]', "c", "drs", True, False),
    ]
    assert maintained["staged_twice"] == 0
    # The run after the rebuild recorded the landing version it read: the runs read landing's commits again.
    assert maintained["newest_landing_version"] is not None


def test_a_table_is_skipped_only_once_its_vacuum_deleted_every_file_removed_before_it(spark, dbt_work_dir):
    """The rule on a table of its own: a vacuum that kept an hour of removed files leaves work for the next
    maintenance; one that kept none leaves nothing, until the next commit."""
    table = "maintenance_probe.orders"
    spark.sql("DROP SCHEMA IF EXISTS maintenance_probe CASCADE")
    spark.sql("CREATE SCHEMA maintenance_probe")
    spark.sql(f"CREATE TABLE {table} (id int) USING delta")
    spark.sql(f"INSERT INTO {table} VALUES (1)")
    spark.sql(f"INSERT INTO {table} VALUES (2)")

    def skipped() -> bool:
        sql = f"select {{{{ cdc_maintained_since_last_change('{table}') }}}} as skipped"
        return dbt_show_in_process(spark, dbt_work_dir, sql)[0]["skipped"]

    outcomes = {"written": skipped()}
    spark.sql(f"OPTIMIZE {table}")
    # Delta refuses a retention under a week unless told (cdc_maintain tells it the same way).
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    try:
        spark.sql(f"VACUUM {table} RETAIN 1 HOURS")
        outcomes["an_hour_kept"] = skipped()
        spark.sql(f"VACUUM {table} RETAIN 0 HOURS")
        outcomes["nothing_kept"] = skipped()
    finally:
        spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")
    spark.sql(f"INSERT INTO {table} VALUES (3)")
    outcomes["written_again"] = skipped()
    assert outcomes == {"written": False, "an_hour_kept": False, "nothing_kept": True, "written_again": False}


def test_a_table_younger_than_the_retention_is_not_vacuumed(spark, dbt_work_dir):
    """Every file a table removed or left dates from its first commit or later: a vacuum keeping more hours
    than the table's age has nothing to delete, one keeping fewer is run."""
    table = "maintenance_young.orders"
    spark.sql("DROP SCHEMA IF EXISTS maintenance_young CASCADE")
    spark.sql("CREATE SCHEMA maintenance_young")
    spark.sql(f"CREATE TABLE {table} (id int) USING delta")
    spark.sql(f"INSERT INTO {table} VALUES (1)")
    spark.sql(f"INSERT INTO {table} VALUES (2)")
    spark.sql(f"OPTIMIZE {table}")

    def younger(hours: int) -> bool:
        sql = f"select {{{{ cdc_younger_than_retention('{table}', {hours}) }}}} as younger"
        return dbt_show_in_process(spark, dbt_work_dir, sql)[0]["younger"]

    assert {"an hour kept": younger(1), "nothing kept": younger(0)} == {"an hour kept": True, "nothing kept": False}


def test_optimize_rewrites_nothing_in_a_table_of_one_file_even_with_a_deletion_vector(spark):
    """Why maintenance does not compact a table of one file (cdc_compact_and_vacuum): Delta's OPTIMIZE
    rewrites bins of two files or more, and leaves a lone file as it is, even one whose deletion vector marks
    rows of it deleted. A Delta that purges them there fails this test, and the rule should change with it."""
    table = "maintenance_one_file.orders"
    spark.sql("DROP SCHEMA IF EXISTS maintenance_one_file CASCADE")
    spark.sql("CREATE SCHEMA maintenance_one_file")
    spark.sql(f"CREATE TABLE {table} (id int) USING delta TBLPROPERTIES ('delta.enableDeletionVectors' = true)")
    spark.sql(f"INSERT INTO {table} SELECT /*+ REPARTITION(1) */ id FROM VALUES (1), (2) AS rows (id)")
    spark.sql(f"DELETE FROM {table} WHERE id = 1")
    (optimized,) = spark.sql(f"OPTIMIZE {table}").collect()
    operations = [row.operation for row in spark.sql(f"describe history {table}").orderBy("version").collect()]
    assert (optimized.metrics.numFilesAdded, optimized.metrics.numFilesRemoved) == (0, 0)
    assert operations == ["CREATE TABLE", "WRITE", "DELETE"]
    assert [row.id for row in spark.table(table).collect()] == [2]
