"""Prints where the result tables are and a few rows of each, after `make run`."""

from cdc_lakehouse.session import open_session, profile_spark_settings

TABLES = ("cdc_events", "cdc_quarantine", "cdc_history", "cdc_current")


def main() -> None:
    settings = profile_spark_settings()
    spark = open_session(settings)
    schema = spark.conf.get("spark.sql.warehouse.dir")
    print(f"\nWarehouse: {schema} (metastore: {settings['spark.hadoop.javax.jdo.option.ConnectionURL']})")
    for table in TABLES:
        name = f"cdc.{table}"
        location = spark.sql(f"DESCRIBE DETAIL {name}").first()["location"] if table != "cdc_current" else "view"
        print(f"\n{name}: {spark.table(name).count()} rows ({location})")
        spark.table(name).show(5, truncate=60)


if __name__ == "__main__":
    main()
