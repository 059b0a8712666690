"""One batch per run: each run reads the landing commits since the batch its models last finished.

A run of a warehouse (schema cdc_batches_test) after each of these, with Canal and Huawei DRS JSON enabled:
1. a Canal insert of key 1 is landed, and the run crashes before its end records the batch: every model
   built its table in this first batch, which no model finished;
2. a late commit: another writer commits, with ingested_at years older than the first landing, a Canal
   update of key 1 and the first message of the DRS topic (a format quiet until then);
3. nothing is landed (runs 2 and 3 are builds: the data tests of cdc_events read its rows of the batch,
   then none, as it had nothing to read);
4. a Canal delete of key 1 is landed and processed (the DRS staging model, whose format the batch does not
   hold, runs no SQL), but the run crashes before its end records the batch;
5. a Canal insert of key 2 is landed; this run reads again what the crashed one wrote;
6. a Canal insert of key 3 is landed; a run selects every model but staging (they finish the batch with
   nothing new), then a run selects only the Canal staging model, which stages the insert;
7. nothing is landed: the change log models, which finished a batch at this landing version, still read
   what staging wrote after it;
8. copies of a first-batch event, then of a newest-batch event, are added to cdc_events: the data test of
   unique event ids, which reads the newest batch, passes on the first and fails on the second;
9. the run log loses its rows (cdc_batch_models emptied): a run deletes nothing, every model with rows and
   no batch in the log stops with a message naming it, and after a Delta RESTORE of the run log a run
   succeeds on the same tables;
10. a full refresh of every model, then another that crashes before the run's end records its batch: the
   next run rebuilds every table as the first refresh left it;
11. with batches of at most two messages (var cdc_max_batch_messages), three commits land: an insert of key
   4, its update, then three inserts (keys 5 to 7) in one commit: a run reads the first two commits, the next
   the third (a commit larger than a batch is a batch of its own), the next nothing.
After the crash and rerun, every table holds each landed message's rows once. Expected versions and counts are
written by hand from Canal's documented fields (es: the source commit time).
"""

import re
from datetime import UTC, datetime

import pytest
from helpers import dbt_in_process, row_change

# Many dbt runs on one warehouse: make test-slow, beside make test in CI.
pytestmark = pytest.mark.slow

SCHEMA = "cdc_batches_test"
ENABLED = {"cdc_enabled_formats": ["canal_json", "huawei_drs_json"]}
MODELS = ("+cdc_history", "+cdc_redeliveries", "+cdc_quarantine", "+cdc_observed_column_types")
CANAL_TOPIC = "canal_json.batches"
DRS_TOPIC = "huawei_drs_json.batches"
OLD_INGESTED_AT = datetime(2000, 1, 1, tzinfo=UTC)
# Every stored model of the enabled formats, with its key.
TABLES = {
    "stg_canal_json__messages": "topic, kafka_partition, kafka_offset",
    "stg_huawei_drs__messages": "topic, kafka_partition, kafka_offset",
    "int_cdc_events__landed": "event_id",
    "cdc_events": "event_id",
    "cdc_redeliveries": "event_id",
    "cdc_quarantine": "topic, kafka_partition, kafka_offset",
    "int_cdc_history__key_steps": "event_id, step_kind",
    "cdc_history": "scd_id",
    "cdc_observed_column_types": "column_type_key",
}


def land_late(spark, rows: list[tuple[str, str, int, bytes]]) -> None:
    """One landing commit of (source_format, topic, offset, value) rows, with an ingested_at long past."""
    from cdc_lakehouse.landing_table import LANDING_COLUMNS, LANDING_TABLE

    schema = ", ".join(f"{name} {sql_type}" for name, sql_type in LANDING_COLUMNS)
    records = [
        (fmt, topic, 0, offset, None, value, None, OLD_INGESTED_AT, None, None) for fmt, topic, offset, value in rows
    ]
    spark.createDataFrame(records, schema).write.format("delta").mode("append").saveAsTable(LANDING_TABLE)


def of_these_topics(columns: list[str]) -> str:
    """The filter on a table's rows of this test's topics."""
    for column in ("topic", "source_name"):
        if column in columns:
            return f"{column} in ('{CANAL_TOPIC}', '{DRS_TOPIC}')"
    return "true"


def table_rows(spark, table: str) -> list[tuple]:
    """A table's rows of this test's topics, without the batch that wrote them, in key order."""
    columns = [name for name in spark.table(f"{SCHEMA}.{table}").columns if name != "cdc_batch_id"]
    rows = spark.sql(
        f"select {', '.join(f'to_json(struct({name}))' for name in columns)} from {SCHEMA}.{table}"
        f" where {of_these_topics(columns)} order by {TABLES[table]}"
    ).collect()
    return [tuple(row) for row in rows]


def versions(spark) -> list[tuple]:
    rows = spark.sql(
        f"""
        select source_name, pk, op, row['note'] as note, is_current, is_deleted
        from {SCHEMA}.cdc_history
        where source_name in ('{CANAL_TOPIC}', '{DRS_TOPIC}')
        order by source_name, pk, event_order
        """
    ).collect()
    return [tuple(row) for row in rows]


def table_versions(spark) -> dict[str, int]:
    """The newest Delta version of each stored model: a run that writes nothing commits nothing."""
    return {table: spark.sql(f"describe history {SCHEMA}.{table} limit 1").first().version for table in TABLES}


def column_types(spark) -> list[tuple]:
    """Each observed column type, with the operation of the first and of the last event that carried it."""
    rows = spark.sql(
        f"""
        select observed.source_format, observed.column_name, observed.vendor_type_text, first.op, last.op,
            observed.last_ingested_at = (select max(ingested_at) from {SCHEMA}.cdc_events) as landed_last
        from {SCHEMA}.cdc_observed_column_types as observed
        inner join {SCHEMA}.cdc_events as first on observed.first_event.event_id = first.event_id
        inner join {SCHEMA}.cdc_events as last on observed.last_event.event_id = last.event_id
        order by observed.source_format, observed.column_name
        """
    ).collect()
    return [tuple(row) for row in rows]


def key_counts(spark) -> dict[str, tuple[int, int]]:
    """Each stored model's rows of this test's topics, and their distinct keys."""
    counts = {}
    for table, key in TABLES.items():
        where = of_these_topics(spark.table(f"{SCHEMA}.{table}").columns)
        counts[table] = tuple(
            spark.sql(f"select count(*), count(distinct {key}) from {SCHEMA}.{table} where {where}").first()
        )
    return counts


def snapshot(spark) -> dict:
    return {
        "versions": versions(spark),
        "rows": {table: table_rows(spark, table) for table in TABLES},
    }


@pytest.fixture(scope="module")
def runs(spark, tmp_path_factory) -> dict:
    from cdc_lakehouse.landing import land
    from cdc_lakehouse.landing_table import LANDING_TABLE, ensure_landing_table

    work_dir = tmp_path_factory.mktemp("batches_dbt")

    def run(models: tuple[str, ...] = MODELS, command: str = "run") -> dict[str, str]:
        """Runs the models; for a build, returns the rows each data test of cdc_events read (its where)."""
        with pytest.MonkeyPatch.context() as env:
            env.setenv("CDC_SCHEMA", SCHEMA)
            # Cautious: only the tests of selected models (not of cdc_current, a view no run here builds).
            selection = ("--select", *models, "--indirect-selection", "cautious")
            result = dbt_in_process(spark, work_dir, command, *selection, dbt_vars=ENABLED)
        return {
            done.node.name: re.search(r"from \(select \* from (.*?)\) as dbt_subquery", done.node.compiled_code)[1]
            for done in result.result.results
            if done.node.resource_type == "test" and done.node.name.endswith("cdc_events_event_id")
        }

    ensure_landing_table(spark)
    spark.sql(f"DELETE FROM {LANDING_TABLE}")
    spark.sql(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("CDC_SCHEMA", SCHEMA)
        dbt_in_process(spark, work_dir, "seed", "--select", *MODELS, dbt_vars=ENABLED)
    states = {}

    land(spark, "canal_json", CANAL_TOPIC, 0, [row_change(1, "INSERT", 1, {"id": "1", "note": "new"})])
    run()
    states["first"] = snapshot(spark)
    # The first batch crashes: the models' marks that they started it stay, their finishing is never recorded.
    spark.sql(f"delete from {SCHEMA}.cdc_batch_models where finished_at is not null")

    land_late(
        spark,
        [
            (
                "canal_json",
                CANAL_TOPIC,
                1,
                row_change(2, "UPDATE", 2, {"id": "1", "note": "paid"}, old={"note": "new"}),
            ),
            ("huawei_drs_json", DRS_TOPIC, 0, row_change(70, "INSERT", 3, {"id": "7", "note": "drs"})),
        ],
    )
    states["late_tested_rows"] = run(command="build")
    states["late"] = snapshot(spark)
    states["late_versions"] = table_versions(spark)
    states["late_column_types"] = column_types(spark)

    states["nothing_new_tested_rows"] = run(command="build")
    states["nothing_new"] = snapshot(spark)
    states["nothing_new_versions"] = table_versions(spark)

    land(spark, "canal_json", CANAL_TOPIC, 0, [row_change(3, "DELETE", 4, {"id": "1", "note": "paid"})])
    run()
    states["canal_only_versions"] = table_versions(spark)
    # The crash: every model committed its rows, the run's end never recorded the batch.
    crashed_batch = spark.sql(f"select max(batch_id) from {SCHEMA}.cdc_batches").first()[0]
    spark.sql(f"delete from {SCHEMA}.cdc_batch_models where batch_id = {crashed_batch}")
    land(spark, "canal_json", CANAL_TOPIC, 0, [row_change(4, "INSERT", 5, {"id": "2", "note": "after"})])
    run()
    states["after_crash"] = snapshot(spark)
    states["after_crash_counts"] = key_counts(spark)
    states["batches"] = [
        tuple(row)
        for row in spark.sql(
            f"""
            select batches.batch_id, count(finished.model_name) as models
            from {SCHEMA}.cdc_batches as batches
            left join {SCHEMA}.cdc_batch_models as finished
                on batches.batch_id = finished.batch_id and finished.finished_at is not null
            group by batches.batch_id
            order by batches.batch_id
            """
        ).collect()
    ]

    land(spark, "canal_json", CANAL_TOPIC, 0, [row_change(5, "INSERT", 6, {"id": "3", "note": "staged"})])
    run(
        models=(
            "int_cdc_events__landed",
            "cdc_events",
            "cdc_redeliveries",
            "cdc_quarantine",
            "int_cdc_history__key_steps",
            "cdc_history",
        )
    )
    run(models=("stg_canal_json__messages",))
    run()
    states["after_partial_run"] = versions(spark)

    def unique_event_ids() -> bool:
        with pytest.MonkeyPatch.context() as env:
            env.setenv("CDC_SCHEMA", SCHEMA)
            test = ("test", "--select", "unique_cdc_events_event_id")
            return dbt_in_process(spark, work_dir, *test, dbt_vars=ENABLED, check=False).success

    # Tests read the newest batch's rows: a copy of an event of the first batch is not theirs, a copy of
    # one of the newest batch is.
    events = f"{SCHEMA}.cdc_events"
    spark.sql(f"insert into {events} select * from {events} where cdc_batch_id = 1 limit 1")
    states["test_of_a_copy_in_an_old_batch_passes"] = unique_event_ids()
    newest = spark.sql(f"select max(cdc_batch_id) from {events}").first()[0]
    spark.sql(f"insert into {events} select * from {events} where cdc_batch_id = {newest} limit 1")
    states["test_of_a_copy_in_the_newest_batch_passes"] = unique_event_ids()

    # The run log loses its rows; it is restored from Delta's history.
    rows_before = {table: table_rows(spark, table) for table in TABLES}
    log_version = spark.sql(f"describe history {SCHEMA}.cdc_batch_models limit 1").first().version
    spark.sql(f"delete from {SCHEMA}.cdc_batch_models")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("CDC_SCHEMA", SCHEMA)
        lost = dbt_in_process(spark, work_dir, "run", "--select", *MODELS, dbt_vars=ENABLED, check=False)
    states["lost_run_log_results"] = {
        done.node.name: (done.status, done.message)
        for done in lost.result.results
        if done.node.resource_type == "model"
    }
    states["lost_run_log_rows_kept"] = {table: table_rows(spark, table) for table in TABLES} == rows_before
    spark.sql(f"restore table {SCHEMA}.cdc_batch_models to version as of {log_version}")
    run()
    states["restored_run_log_rows_kept"] = {table: table_rows(spark, table) for table in TABLES} == rows_before

    def full_refresh() -> None:
        with pytest.MonkeyPatch.context() as env:
            env.setenv("CDC_SCHEMA", SCHEMA)
            dbt_in_process(spark, work_dir, "run", "--full-refresh", "--select", *MODELS, dbt_vars=ENABLED)

    # A full refresh, then another that crashes before the run's end: the next run rebuilds the tables.
    full_refresh()
    states["full_refresh"] = {table: table_rows(spark, table) for table in TABLES}
    full_refresh()
    crashed_batch = spark.sql(f"select max(batch_id) from {SCHEMA}.cdc_batches").first()[0]
    spark.sql(f"delete from {SCHEMA}.cdc_batch_models where batch_id = {crashed_batch} and finished_at is not null")
    run()
    states["after_crashed_full_refresh"] = {table: table_rows(spark, table) for table in TABLES}

    def bounded_run() -> list[tuple]:
        """A run of batches of at most two messages; the batch of each of the test's Canal events so far."""
        with pytest.MonkeyPatch.context() as env:
            env.setenv("CDC_SCHEMA", SCHEMA)
            bounded = {**ENABLED, "cdc_max_batch_messages": 2}
            dbt_in_process(spark, work_dir, "run", "--select", *MODELS, dbt_vars=bounded)
        events = spark.sql(
            f"""
            select kafka_offset, op, cdc_batch_id - (select max(batch_id) from {SCHEMA}.cdc_batches) as batch
            from {SCHEMA}.cdc_events
            where source_name = '{CANAL_TOPIC}' and kafka_offset >= 5
            order by kafka_offset
            """
        ).collect()
        return [tuple(row) for row in events]

    land(spark, "canal_json", CANAL_TOPIC, 0, [row_change(6, "INSERT", 7, {"id": "4", "note": "a"})])
    land(spark, "canal_json", CANAL_TOPIC, 0, [row_change(7, "UPDATE", 8, {"id": "4", "note": "b"}, {"note": "a"})])
    land(
        spark,
        "canal_json",
        CANAL_TOPIC,
        0,
        [row_change(8 + key, "INSERT", 9, {"id": str(key), "note": "c"}) for key in (5, 6, 7)],
    )
    states["bounded_runs"] = [bounded_run() for _ in range(3)]
    states["bounded_history"] = versions(spark)
    yield states
    spark.sql(f"DELETE FROM {LANDING_TABLE}")


def test_a_late_commit_with_old_timestamps_is_processed_by_the_next_run(runs):
    assert runs["first"]["versions"] == [(CANAL_TOPIC, '["1"]', "c", "new", True, False)]
    assert runs["late"]["versions"][:2] == [
        (CANAL_TOPIC, '["1"]', "c", "new", False, False),
        (CANAL_TOPIC, '["1"]', "u", "paid", True, False),
    ]


def test_column_types_follow_the_event_order_not_the_landing_order(runs):
    # The late commit's update comes after the insert in Canal's order (es), though it landed with an older
    # ingested_at; the first landing holds the latest ingested_at of each Canal column.
    assert runs["late_column_types"] == [
        ("canal_json", "id", "int(11)", "c", "u", True),
        ("canal_json", "note", "varchar(20)", "c", "u", True),
        ("huawei_drs_json", "id", "int(11)", "c", "c", False),
        ("huawei_drs_json", "note", "varchar(20)", "c", "c", False),
    ]


def test_a_format_quiet_until_a_late_commit_reaches_the_history(runs):
    assert runs["late"]["versions"][2:] == [(DRS_TOPIC, '["7"]', "c", "drs", True, False)]


def test_a_run_without_new_commits_writes_nothing(runs):
    assert runs["nothing_new"]["rows"] == runs["late"]["rows"]
    # Its incremental models run no SQL: not even an empty append is committed.
    assert runs["nothing_new_versions"] == runs["late_versions"]


def test_a_batch_of_one_format_runs_no_sql_of_the_other_formats_staging_model(runs):
    before, after = runs["nothing_new_versions"], runs["canal_only_versions"]
    assert after["stg_huawei_drs__messages"] == before["stg_huawei_drs__messages"]
    assert after["stg_canal_json__messages"] > before["stg_canal_json__messages"]


def test_a_build_tests_the_rows_of_its_batch_and_nothing_where_a_model_had_nothing_to_read(runs):
    assert runs["late_tested_rows"] == {"unique_cdc_events_event_id": f"{SCHEMA}.cdc_events where cdc_batch_id = 2"}
    assert runs["nothing_new_tested_rows"] == {"unique_cdc_events_event_id": f"{SCHEMA}.cdc_events where false"}


def test_rows_staged_by_a_partial_run_reach_the_history_in_a_run_with_nothing_landed(runs):
    # Nothing landed since cdc_events last finished a batch, but staging wrote rows after that batch.
    assert (CANAL_TOPIC, '["3"]', "c", "staged", True, False) in runs["after_partial_run"]
    assert len(runs["after_partial_run"]) == len(runs["after_crash"]["versions"]) + 1


def test_data_tests_read_the_rows_of_the_newest_batch(runs):
    assert runs["test_of_a_copy_in_an_old_batch_passes"]
    assert not runs["test_of_a_copy_in_the_newest_batch_passes"]


def test_a_run_after_a_crash_reads_the_unfinished_batch_again(runs):
    assert runs["after_crash"]["versions"] == [
        (CANAL_TOPIC, '["1"]', "c", "new", False, False),
        (CANAL_TOPIC, '["1"]', "u", "paid", False, False),
        (CANAL_TOPIC, '["1"]', "d", "paid", True, True),
        (CANAL_TOPIC, '["2"]', "c", "after", True, False),
        (DRS_TOPIC, '["7"]', "c", "drs", True, False),
    ]


def test_crash_then_rerun_holds_each_landed_message_once_in_every_table(runs):
    # Canal offsets 0-3 (insert, the late update, the crashed run's delete, an insert) and DRS offset 0: five
    # messages, five events, a step and a version each; no redelivery or quarantine; two columns per format.
    assert runs["after_crash_counts"] == {
        "stg_canal_json__messages": (4, 4),
        "stg_huawei_drs__messages": (1, 1),
        "int_cdc_events__landed": (5, 5),
        "cdc_events": (5, 5),
        "cdc_redeliveries": (0, 0),
        "cdc_quarantine": (0, 0),
        "int_cdc_history__key_steps": (5, 5),
        "cdc_history": (5, 5),
        "cdc_observed_column_types": (4, 4),
    }


def test_the_run_log_records_each_batch_and_the_models_that_finished_it(runs):
    # Ten incremental models per finished batch; batches 1 and 4 crashed before their end.
    assert runs["batches"] == [(1, 0), (2, 10), (3, 10), (4, 0), (5, 10)]


def test_a_lost_run_log_stops_every_model_with_rows_and_deletes_nothing(runs):
    results = runs["lost_run_log_results"]
    stopped = {name for name, (status, _) in results.items() if status == "error"}
    # The models that read landing stop; everything downstream of them is skipped.
    assert stopped == {"stg_canal_json__messages", "stg_huawei_drs__messages"}
    assert {status for name, (status, _) in results.items() if name not in stopped} == {"skipped"}
    _, message = results["stg_canal_json__messages"]
    assert "stg_canal_json__messages: its table holds rows, but the run log" in message
    assert f"RESTORE TABLE {SCHEMA}.cdc_batch_models" in message
    assert "dbt build --full-refresh --select stg_canal_json__messages" in message
    assert runs["lost_run_log_rows_kept"]


def test_a_restored_run_log_runs_on_with_the_same_tables(runs):
    assert runs["restored_run_log_rows_kept"]


def test_a_run_after_a_crashed_full_refresh_rebuilds_every_table(runs):
    # The crashed refresh's rows are of a batch no model finished: not a batch to resume from the last one.
    assert all(runs["full_refresh"][table] for table in ("stg_canal_json__messages", "cdc_events", "cdc_history"))
    assert runs["after_crashed_full_refresh"] == runs["full_refresh"]


def test_a_backlog_is_read_in_batches_of_the_largest_size(runs):
    """Offsets 5 to 9 (after the Canal messages of steps 1 to 6); each row's batch relative to the newest batch
    after that run."""
    first, second, third = runs["bounded_runs"]
    assert first == [(5, "c", 0), (6, "u", 0)]
    assert second == [(5, "c", -1), (6, "u", -1), (7, "c", 0), (8, "c", 0), (9, "c", 0)]
    assert third == [(5, "c", -2), (6, "u", -2), (7, "c", -1), (8, "c", -1), (9, "c", -1)]
    assert [version[2:] for version in runs["bounded_history"] if version[3] in ("a", "b", "c")] == [
        ("c", "a", False, False),
        ("u", "b", True, False),
        ("c", "c", True, False),
        ("c", "c", True, False),
        ("c", "c", True, False),
    ]
