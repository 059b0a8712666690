"""After `make run`: per format, the messages landed, the events they became, the messages quarantined (with
their reasons) and the source tables with their current rows; then where the tables are."""

from collections import defaultdict

from cdc_lakehouse.formats import SOURCE_FORMATS
from cdc_lakehouse.landing_table import LANDING_TABLE
from cdc_lakehouse.session import open_session, profile_spark_settings


def counts(spark, sql: str) -> dict:
    return {tuple(row[:-1]) if len(row) > 2 else row[0]: row[-1] for row in spark.sql(sql).collect()}


def main() -> None:
    settings = profile_spark_settings()
    spark = open_session(settings)
    landed = counts(spark, f"select source_format, count(*) from {LANDING_TABLE} group by 1")
    events = counts(spark, "select source_format, count(*) from cdc.cdc_events group by 1")
    quarantined = counts(spark, "select source_format, reason, count(*) from cdc.cdc_quarantine group by 1, 2")
    current = counts(
        spark,
        "select source_format, concat_ws('.', source_database, source_schema, source_table), count(*) "
        "from cdc.cdc_current group by 1, 2",
    )
    reasons, tables = defaultdict(list), defaultdict(list)
    for (source_format, reason), count in sorted(quarantined.items()):
        reasons[source_format].append(f"{count} {reason}")
    for (source_format, table), count in sorted(current.items()):
        tables[source_format].append(f"{table} ({count})")

    print(f"\n{'format':<24}{'landed':>8}{'events':>8}{'quarantined':>13}  source tables (current rows)")
    for source_format in SOURCE_FORMATS:
        held = sum(count for (f, _), count in quarantined.items() if f == source_format)
        print(
            f"{source_format:<24}{landed.get(source_format, 0):>8}{events.get(source_format, 0):>8}{held:>13}  "
            + (", ".join(tables[source_format]) or "-")
        )
        for reason in reasons[source_format]:
            print(f"{'':<24}{'':>29}  quarantined: {reason}")

    print(f"\nWarehouse: {spark.conf.get('spark.sql.warehouse.dir')}")
    print(f"Metastore: {settings['spark.hadoop.javax.jdo.option.ConnectionURL']}")
    print("Tables: cdc.cdc_events, cdc.cdc_quarantine, cdc.cdc_history, cdc.cdc_current (view), one per source table")


if __name__ == "__main__":
    main()
