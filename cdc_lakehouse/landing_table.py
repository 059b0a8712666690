"""The landing table: raw messages shaped like Kafka records, declared to dbt as source landing.cdc_raw."""

from pyspark.sql import SparkSession

LANDING_SCHEMA = "landing"
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
)


# Each dbt run reads the landing commits since the last batch through Delta's change data feed
# (macros/cdc_batches.sql): commit order, whatever the ingested_at of the rows.
CHANGE_DATA_FEED = "delta.enableChangeDataFeed"


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
    return table
