"""The pipeline's run state as a scheduled run reads and writes it through Spark: the run log, the landing
table's version, the source tables the batches wrote versions of or retyped, and the batch each node the runs
built outside the batch is built through.
"""

from cdc_lakehouse.build_plan import ChangedTable, RunLog

BATCH_TABLES = "cdc_batch_tables"
TABLE_COLUMNS = "cdc_table_columns"
# The nodes the scheduled runs built outside the batch (parts 2 and 3), each with the batch it is built
# through: a typed view, the batch it was created in; an analyst's node, the newest batch its pipeline inputs
# had finished or changed in when it was built.
BUILDS = "cdc_downstream_builds"


def read_run_log(spark, schema: str) -> RunLog:
    """The run log as the batch macros read it: the newest batch, and what each model finished last, from the
    run log's view that states the rule (macros/batch/cdc_batches.sql, cdc_finished_batches). A run log
    without the view (none yet, or one from before it) reads as none: the change log runs, and its start adds
    the view."""
    if not spark.catalog.tableExists(f"{schema}.cdc_finished_batches"):
        return RunLog()
    newest = spark.sql(f"select batch_id, landing_version from {schema}.cdc_batches order by batch_id desc limit 1")
    rows = newest.collect()
    if not rows:
        return RunLog()
    finished = spark.sql(f"select model_name, batch_id from {schema}.cdc_finished_batches").collect()
    return RunLog(
        batch_id=rows[0].batch_id,
        landing_version=rows[0].landing_version,
        finished={row.model_name: row.batch_id for row in finished},
    )


def landing_version(spark, landing: str) -> int:
    return spark.sql(f"describe history {landing} limit 1").collect()[0].version


def touched_tables(spark, schema: str, after_batch: int) -> list[ChangedTable]:
    """The source tables cdc_batch_tables lists after a batch, each with the newest batch that wrote versions of
    it and how many it wrote then."""
    if not spark.catalog.tableExists(f"{schema}.{BATCH_TABLES}"):
        return []
    rows = spark.sql(
        "select source_format, source_database, source_schema, source_table, cdc_batch_id, sum(versions) as versions"
        f" from {schema}.{BATCH_TABLES} where cdc_batch_id > {int(after_batch)}"
        " group by source_format, source_database, source_schema, source_table, cdc_batch_id"
    ).collect()
    newest: dict[tuple, ChangedTable] = {}
    for row in rows:
        table = tuple(row[:4])
        if table not in newest or row.cdc_batch_id > newest[table].batch_id:
            newest[table] = ChangedTable(*table, batch_id=row.cdc_batch_id, versions=row.versions)
    return list(newest.values())


def retyped_tables(spark, schema: str, after_batch: int) -> list[ChangedTable]:
    """The source tables a column of which cdc_table_columns added or retyped after a batch, each with the newest
    such batch (a column typed before its stamps existed counts as retyped when it was last typed)."""
    if not spark.catalog.tableExists(f"{schema}.{TABLE_COLUMNS}"):
        return []
    changed_in = "coalesce(typing_changed_in_batch, cdc_batch_id)"
    if "typing_changed_in_batch" not in spark.table(f"{schema}.{TABLE_COLUMNS}").columns:
        changed_in = "cdc_batch_id"
    rows = spark.sql(
        f"select source_format, source_database, source_schema, source_table, max({changed_in}) as batch_id"
        f" from {schema}.{TABLE_COLUMNS} where {changed_in} > {int(after_batch)}"
        " group by source_format, source_database, source_schema, source_table"
    ).collect()
    return [ChangedTable(*row) for row in rows]


def read_builds(spark, schema: str) -> dict[str, int]:
    if not spark.catalog.tableExists(f"{schema}.{BUILDS}"):
        return {}
    rows = spark.sql(f"select unique_id, built_through from {schema}.{BUILDS}").collect()
    return {row.unique_id: row.built_through for row in rows}


def record_builds(spark, schema: str, built: dict[str, int]) -> None:
    """One MERGE: each node's batch, replacing what the table held of it."""
    table = f"{schema}.{BUILDS}"
    spark.sql(f"create table if not exists {table} (unique_id string, built_through bigint) using delta")
    spark.createDataFrame(sorted(built.items()), "unique_id string, built_through bigint").createOrReplaceTempView(
        "cdc_built_now"
    )
    spark.sql(
        f"merge into {table} as stored using cdc_built_now as now on stored.unique_id = now.unique_id"
        " when matched then update set built_through = now.built_through when not matched then insert *"
    )
