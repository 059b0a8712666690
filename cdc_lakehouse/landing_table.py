"""The landing table: raw messages shaped like Kafka records, declared to dbt as source landing.cdc_raw."""

import operator
import os
import sys
from functools import reduce

from pyspark.sql import DataFrame, SparkSession

from cdc_lakehouse.schema_lease import schema_lease

# The process's environment names it, as it does for dbt (macro cdc_landing_schema): one landing per
# deployment, read once when the command starts.
LANDING_SCHEMA = os.environ.get("CDC_LANDING_SCHEMA") or "landing"
LANDING_TABLE = f"{LANDING_SCHEMA}.cdc_raw"
LANDING_COLUMNS = (
    ("source_format", "string"),
    ("topic", "string"),
    ("kafka_partition", "int"),
    ("kafka_offset", "bigint"),
    ("kafka_key", "binary"),
    ("value", "binary"),
    ("kafka_timestamp", "timestamp"),
    ("ingested_at", "timestamp"),
    # Columns added since the first release, last: a landing table of an earlier release gains them in place.
    ("kafka_headers", "array<struct<key: string, value: binary>>"),
    ("kafka_timestamp_type", "string"),
)


# Each dbt run reads the landing commits since the last batch through Delta's change data feed
# (macros/batch/cdc_batches.sql): commit order, whatever the ingested_at of the rows.
CHANGE_DATA_FEED = "delta.enableChangeDataFeed"
LANDING_ATTEMPTS = 5


def ensure_landing_table(spark: SparkSession, schema: str = LANDING_SCHEMA) -> str:
    """Creates the landing table in this schema (dbt var landing_schema) unless it exists; its name."""
    table = f"{schema}.cdc_raw"
    columns = ", ".join(f"{name} {sql_type}" for name, sql_type in LANDING_COLUMNS)
    spark.sql(f"CREATE SCHEMA IF NOT EXISTS {schema}")
    spark.sql(f"CREATE TABLE IF NOT EXISTS {table} ({columns}) USING delta TBLPROPERTIES ({CHANGE_DATA_FEED} = true)")
    properties = {row.key: row.value for row in spark.sql(f"SHOW TBLPROPERTIES {table}").collect()}
    if properties.get(CHANGE_DATA_FEED) != "true":
        # A landing table of an earlier release: its commits from now on carry the feed.
        spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ({CHANGE_DATA_FEED} = true)")
    existing = {name.lower() for name in spark.table(table).columns}
    missing = [f"{name} {sql_type}" for name, sql_type in LANDING_COLUMNS if name not in existing]
    if missing:
        # Null in the messages landed before; the models read commits across the change.
        spark.sql(f"ALTER TABLE {table} ADD COLUMNS ({', '.join(missing)})")
    return table


def land_new_messages(messages: DataFrame) -> int:
    """Insert the messages (LANDING_COLUMNS) whose (topic, kafka_partition, kafka_offset) is not landed
    yet, in one Delta MERGE; the number inserted. Redeliveries are skipped: landing messages twice is harmless."""
    from delta import exceptions as delta_exceptions
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    spark = messages.sparkSession
    ranges = (
        messages.groupBy("topic", "kafka_partition")
        .agg(F.min("kafka_offset").alias("first"), F.max("kafka_offset").alias("last"))
        .collect()
    )
    if not ranges:
        return 0
    landed, new = F.col("landed.topic"), F.col("new.topic")
    same_message = (
        (landed == new)
        & (F.col("landed.kafka_partition") == F.col("new.kafka_partition"))
        & (F.col("landed.kafka_offset") == F.col("new.kafka_offset"))
    )
    # The offset ranges as literals: Delta reads only the landing files whose statistics overlap them.
    in_ranges = reduce(
        operator.or_,
        (
            (landed == F.lit(r.topic))
            & (F.col("landed.kafka_partition") == F.lit(r.kafka_partition))
            & F.col("landed.kafka_offset").between(F.lit(r.first), F.lit(r.last))
            for r in ranges
        ),
    )
    merge = (
        DeltaTable.forName(spark, LANDING_TABLE)
        .alias("landed")
        .merge(messages.select(*(name for name, _ in LANDING_COLUMNS)).alias("new"), same_message & in_ranges)
        .whenNotMatchedInsertAll()
    )
    # Two landing writers at once (cdc-land beside cdc-ingest, two ingest streams): Delta commits one MERGE
    # and fails the other when it added files the other read. Landing again skips what the first landed.
    # Delta's Python conflict classes (ConcurrentAppendException, …) do not derive from one base: all of them.
    conflicts = tuple(getattr(delta_exceptions, name) for name in delta_exceptions.__all__)
    # Landing retention (cdc-maintain) holds the landing table's lease while it deletes: a commit here
    # during its read would fail it, so each commit waits for it (a no-op without a shared metastore).
    with schema_lease(spark, LANDING_TABLE):
        for _ in range(LANDING_ATTEMPTS - 1):
            try:
                return int(merge.execute().first()["num_inserted_rows"])
            except conflicts as exc:
                print(f"cdc: {LANDING_TABLE} changed under this MERGE ({type(exc).__name__}): again", file=sys.stderr)
        return int(merge.execute().first()["num_inserted_rows"])
