"""Zone-less timestamp text is read in the source's zone (cdc_typed_value's time_zone), whatever the
reader's spark.sql.session.timeZone. Expected instants are written out by hand, in UTC."""

import json
import sys
from datetime import UTC, datetime, timedelta

import pytest
from helpers import dbt_in_process, dbt_show_in_process

# (value as a SQL literal, parse rule, Spark type, zone as a SQL expression or None) -> expected:
# an instant as ISO UTC text for `timestamp`, else the value's own text.
ZONE_CASES = [
    # Zone-less text (Canal, KafkaRiver, DRS JSON-C MySQL timestamp) is wall-clock time of the source's zone.
    ("'2024-03-01 08:00:00'", "timestamp_with_zone", "timestamp", "'Asia/Shanghai'", "2024-03-01T00:00:00Z"),
    ("'2024-03-01 08:00:00'", "timestamp_with_zone", "timestamp", "'UTC'", "2024-03-01T08:00:00Z"),
    ("'2024-03-01 08:00:00.25'", "timestamp_with_zone", "timestamp", "'Asia/Shanghai'", "2024-03-01T00:00:00.250Z"),
    ("'2024-03-01 08:00:00'", "cast", "timestamp", "'Asia/Shanghai'", "2024-03-01T00:00:00Z"),
    ("'2024-03-01'", "cast", "timestamp", "'Asia/Shanghai'", "2024-02-29T16:00:00Z"),
    # No zone given, or a NULL zone: var cdc_default_source_time_zone (UTC).
    ("'2024-03-01 08:00:00'", "timestamp_with_zone", "timestamp", None, "2024-03-01T08:00:00Z"),
    ("'2024-03-01 08:00:00'", "timestamp_with_zone", "timestamp", "cast(null as string)", "2024-03-01T08:00:00Z"),
    # 02:30 does not exist in Los Angeles on 2024-03-10 (clocks jump 02:00 PST -> 03:00 PDT): read as 03:30 PDT.
    ("'2024-03-10 02:30:00'", "timestamp_with_zone", "timestamp", "'America/Los_Angeles'", "2024-03-10T10:30:00Z"),
    # 01:30 happens twice on 2024-11-03: the earlier one, PDT (-07:00).
    ("'2024-11-03 01:30:00'", "timestamp_with_zone", "timestamp", "'America/Los_Angeles'", "2024-11-03T08:30:00Z"),
    # An unknown zone reads nothing rather than guessing.
    ("'2024-03-01 08:00:00'", "timestamp_with_zone", "timestamp", "'Not/A_Zone'", None),
    # Text with its own offset or zone keeps it (Tencent DTS "+00:00", GaussDB "+08", ISO "Z", a zone name).
    ("'2021-05-17 07:22:42 +00:00'", "timestamp_with_zone", "timestamp", "'Asia/Shanghai'", "2021-05-17T07:22:42Z"),
    ("'2010-01-01 14:30:00+08'", "timestamp_with_zone", "timestamp", "'America/Los_Angeles'", "2010-01-01T06:30:00Z"),
    ("'2021-05-17 15:22:42 +0800'", "timestamp_with_zone", "timestamp", "'UTC'", "2021-05-17T07:22:42Z"),
    ("'2021-05-17T07:22:42Z'", "timestamp_with_zone", "timestamp", "'Asia/Shanghai'", "2021-05-17T07:22:42Z"),
    ("'2021-05-17 15:22:42 Asia/Shanghai'", "timestamp_with_zone", "timestamp", "'UTC'", "2021-05-17T07:22:42Z"),
    # Epoch values are instants already: the zone changes nothing.
    ("'1590315269000'", "epoch_millis", "timestamp", "'Asia/Shanghai'", "2020-05-24T10:14:29Z"),
    ("'1649991610688000'", "epoch_micros", "timestamp", "'Asia/Shanghai'", "2022-04-15T03:00:10.688Z"),
    ("'1624614713.201'", "epoch_seconds_fraction", "timestamp", "'Asia/Shanghai'", "2021-06-25T09:51:53.201Z"),
    (
        '\'{"$date": {"$numberLong": "1684315111439"}}\'',
        "bson_date",
        "timestamp",
        "'Asia/Shanghai'",
        "2023-05-17T09:18:31.439Z",
    ),
    # A BSON date is UTC: its ISO text without "Z" too.
    (
        '\'{"$date": "2023-05-17T09:18:31.439"}\'',
        "bson_date",
        "timestamp",
        "'Asia/Shanghai'",
        "2023-05-17T09:18:31.439Z",
    ),
    # Wall-clock and date targets stay as written.
    ("'2021-06-25 17:51:53'", "cast", "timestamp_ntz", "'Asia/Shanghai'", "2021-06-25 17:51:53"),
    ("'2021-06-25'", "cast", "date", "'Asia/Shanghai'", "2021-06-25"),
]


def cases_sql() -> str:
    """One row per case: its number, the value's type and, for a timestamp, its epoch microseconds."""
    selects = []
    for number, (value, rule, spark_type, zone, _) in enumerate(ZONE_CASES):
        zone_argument = "" if zone is None else f", {json.dumps(zone)}"
        typed = f"{{{{ cdc_typed_value({json.dumps(value)}, '{rule}', '{spark_type}'{zone_argument}) }}}}"
        shown = "cast(unix_micros(typed) as string)" if spark_type == "timestamp" else "cast(typed as string)"
        selects.append(
            f"select {number} as case_number, typeof(typed) as typed_type, {shown} as shown"
            f" from (select {typed} as typed)"
        )
    return " union all ".join(selects) + " order by case_number"


def readable(rows) -> list[tuple[str, str | None]]:
    """(type, value) per case, a timestamp's epoch microseconds as ISO UTC text (milliseconds when it has them)."""
    shown = []
    for row in rows:
        value = row["shown"]
        if row["typed_type"] == "timestamp" and value is not None:
            instant = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=int(value))
            value = instant.isoformat(timespec="milliseconds" if instant.microsecond else "seconds")
            value = value.replace("+00:00", "Z")
        shown.append((row["typed_type"], value))
    return shown


EXPECTED = [(spark_type, expected) for _, _, spark_type, _, expected in ZONE_CASES]


def test_zone_less_text_is_read_in_the_source_zone(spark, dbt_work_dir):
    assert readable(dbt_show_in_process(spark, dbt_work_dir, cases_sql())) == EXPECTED


def test_default_source_time_zone_var(spark, dbt_work_dir):
    sql = (
        "select cast(unix_micros({{ cdc_typed_value(\"'2024-03-01 08:00:00'\", 'timestamp_with_zone', 'timestamp') }})"
        " as string) as shown, 'timestamp' as typed_type"
    )
    rows = dbt_show_in_process(spark, dbt_work_dir, sql, dbt_vars={"cdc_default_source_time_zone": "Asia/Shanghai"})
    assert readable(rows) == [("timestamp", "2024-03-01T00:00:00Z")]


@pytest.mark.parametrize("session_time_zone", ["UTC", "America/Los_Angeles", "Asia/Kolkata"])
def test_typed_values_do_not_depend_on_the_session_time_zone(spark, dbt_work_dir, session_time_zone):
    # dbt sets the profile's session zone (UTC) on every statement it runs, so the macro SQL is compiled by
    # dbt and run here, on the test session, in the zone under test.
    compiled = dbt_in_process(spark, dbt_work_dir, "compile", "--inline", cases_sql())
    (node_result,) = compiled.result.results
    saved = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", session_time_zone)
    try:
        assert spark.sql("select current_timezone() as zone").first().zone == session_time_zone
        rows = [row.asDict() for row in spark.sql(node_result.node.compiled_code).collect()]
    finally:
        spark.conf.set("spark.sql.session.timeZone", saved)
    assert readable(rows) == EXPECTED


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
