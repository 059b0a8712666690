"""Huawei DRS JSON-C end to end: landed messages, `dbt build`, cdc_events and cdc_quarantine read back.

The vendor text (seed 004) gives no JSON-C message body: it defines JSON-C by two differences from DRS JSON
("对于删除操作,JSON数据放在old上,JSON-C放在data上。对于timestamp类型数据转换成yyyy-mm-dd hh:mm:ss的字符串。").
`vendor_examples/huawei_drs_jsonc/seed_004_mysql.jsonl` is therefore the vendor's JSON examples (UPDATE, INIT,
INIT_DDL) with the `timestamp` column c5 rewritten as "yyyy-mm-dd hh:mm:ss" (1624614713.201 in the source's
zone, UTC+8, as the example's datetime column c4 shows it: "2021-06-25 17:51:53"), plus a DELETE of the
updated row with its row in `data` (id 27678, `old` null). Expected rows are written out by hand.
"""

from datetime import datetime

from helpers import comparable_event_rows, event_rows, read_table
from vendor_expectations import AFTER_IMAGE, BEFORE_IMAGE, EXPECTED_VENDOR_EVENTS, MYSQL_TYPES

VENDOR_TOPIC = "huawei_drs_jsonc.seed_004_mysql"
BAD_TOPIC = "huawei_drs_jsonc.bad_messages"

# JSON-C renders timestamp columns as "yyyy-mm-dd hh:mm:ss" text, kept as it came.
JSONC_AFTER = {**AFTER_IMAGE, "c5": "2021-06-25 17:51:53"}
JSONC_BEFORE = {**BEFORE_IMAGE, "c5": "2021-06-25 17:51:53"}
COMMON = {
    "source_format": "huawei_drs_jsonc",
    "topic": VENDOR_TOPIC,
    "kafka_partition": 0,
    "row_index": 0,
    "source_db_type": "mysql",
    "source_database": "test01",
    "source_schema": None,
    "column_types": MYSQL_TYPES,
    "primary_key": ["id"],
    "ddl_sql": None,
}
EXPECTED_EVENTS = [
    {
        **COMMON,
        "kafka_offset": 0,
        "source_table": "test ",
        "op": "u",
        "before": JSONC_BEFORE,
        "after": JSONC_AFTER,
        "event_ts": datetime(2021, 6, 25, 9, 51, 53),
        "source_seq": 27677,
        "source_position": "27677",
    },
    {
        # The deleted row comes from `data` in JSON-C.
        **COMMON,
        "kafka_offset": 1,
        "source_table": "test ",
        "op": "d",
        "before": JSONC_AFTER,
        "after": None,
        "event_ts": datetime(2021, 6, 25, 9, 51, 53),
        "source_seq": 27678,
        "source_position": "27678",
    },
    {
        **COMMON,
        "kafka_offset": 2,
        "source_table": "test",
        "op": "r",
        "before": None,
        "after": JSONC_AFTER,
        "event_ts": datetime(2021, 6, 25, 9, 51, 53),
        "source_seq": 27677,
        "source_position": "mysql-bin.000065:800;2bf665dc-f8e2-11eb-bcfd-6c4b90b9d8b3:1-251167",
    },
    {
        # INIT_DDL is the same message in both formats.
        **EXPECTED_VENDOR_EVENTS[2],
        "source_format": "huawei_drs_jsonc",
        "topic": VENDOR_TOPIC,
        "kafka_offset": 3,
    },
]


def test_vendor_examples_become_these_change_events(spark, built_warehouse):
    assert comparable_event_rows(spark, built_warehouse, VENDOR_TOPIC) == EXPECTED_EVENTS


def test_bad_messages_are_quarantined_with_reason_and_bytes(spark, built_warehouse):
    quarantined = (
        read_table(spark, built_warehouse, "cdc_quarantine")
        .where(f"topic = '{BAD_TOPIC}'")
        .orderBy("kafka_offset")
        .collect()
    )
    assert [(q.source_format, q.kafka_offset, q.reason) for q in quarantined] == [
        # A DELETE laid out as DRS JSON (row in `old`) is not a JSON-C delete.
        ("huawei_drs_jsonc", 0, "DELETE without rows in data"),
        ("huawei_drs_jsonc", 1, "not a Huawei DRS JSON-C message (malformed JSON or wrong field types)"),
        ("huawei_drs_jsonc", 2, "unknown operation type: MERGE"),
        # JSON-C's es is epoch milliseconds like JSON's; a date text there is a wrong field type.
        ("huawei_drs_jsonc", 3, "not a Huawei DRS JSON-C message (malformed JSON or wrong field types)"),
        # DRS numbers every event: without its id a change has no place in the order.
        ("huawei_drs_jsonc", 4, "no event sequence number (id)"),
    ]
    assert bytes(quarantined[1].raw_value) == b'{"id": 27681, "type": "INSERT", "table": "test", "data": [{"id": "107"}'
    assert event_rows(spark, built_warehouse, BAD_TOPIC) == []
