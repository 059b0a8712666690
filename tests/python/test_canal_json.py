"""Canal FlatMessage JSON (`canal_json`) end to end: landed, `dbt build`, cdc_events and cdc_quarantine read back.

Vendor examples: there is no Canal document among the vendor seeds; Huawei DRS JSON-C (seed 004) mirrors
Canal's FlatMessage, and its UPDATE, INIT and INIT_DDL examples are identical in JSON and JSON-C, so
`seed_004_drs_json_c.jsonl` holds them exactly as in the seed (each pretty-printed example joined onto one
line, nothing else changed). `own_flatmessage_ops.jsonl` is OUR OWN file, written from Canal's FlatMessage
field list (notes: canal_flatmessage_json.md) to cover what the seed does not show: multi-row INSERT and
UPDATE with partial `old` (including a column whose old value was NULL), DELETE rows in `data`, a CREATE
DDL and a TRUNCATE. Expected rows are written out by hand from those texts.
"""

from datetime import datetime

from test_huawei_drs_json import C12_BYTES, C14_BYTES, LONG_TEXT, MYSQL_TYPES

SEED_TOPIC = "canal_json.seed_004_drs_json_c"
OWN_TOPIC = "canal_json.own_flatmessage_ops"
BAD_TOPIC = "canal_json.bad_messages"


def java_byte_list(data: bytes) -> str:
    """The text DRS writes for binary values; canal_json keeps row values exactly as the message carries them."""
    return "[" + ", ".join(str(byte) for byte in data) + "]"


SEED_AFTER = {
    "c11": "[]",
    "c10": "华为云huaweicloud",
    "c13": LONG_TEXT,
    "c12": java_byte_list(C12_BYTES),
    "c14": java_byte_list(C14_BYTES),
    "c1": "cf3f70a7-7565-44b0-ae3c-83bec549ea8e:104",
    "c2": "[]",
    "c3": "103",
    "c4": "2021-06-25 17:51:53",
    "c5": "1624614713.201",
    "c6": "!@#$%90weurtg103",
    "c7": "10357.0",
    "c8": "1.2510357E7",
    "c9": "9874510357",
    "id": "104",
}
SEED_BEFORE = {**SEED_AFTER, "c13": "asfiajhfiaf939-0239", "id": "103"}
SEED_COMMON = {
    "source_format": "canal_json",
    "topic": SEED_TOPIC,
    "kafka_partition": 0,
    "row_index": 0,
    "source_db_type": "mysql",
    "source_database": "test01",
    "source_schema": None,
}
EXPECTED_SEED_EVENTS = [
    {
        **SEED_COMMON,
        "kafka_offset": 0,
        "source_table": "test ",
        "op": "u",
        "before": SEED_BEFORE,
        "after": SEED_AFTER,
        "column_types": MYSQL_TYPES,
        "primary_key": ["id"],
        "event_ts": datetime(2021, 6, 25, 9, 51, 53),
        "source_seq": 27677,
        "source_position": "27677",
        "ddl_sql": None,
    },
    {
        **SEED_COMMON,
        "kafka_offset": 1,
        "source_table": "test",
        "op": "r",
        "before": None,
        "after": SEED_AFTER,
        "column_types": MYSQL_TYPES,
        "primary_key": ["id"],
        "event_ts": datetime(2021, 6, 25, 9, 51, 53),
        "source_seq": 27677,
        "source_position": "27677",
        "ddl_sql": None,
    },
    {
        **SEED_COMMON,
        "kafka_offset": 2,
        "source_table": "test",
        "op": "ddl",
        "before": None,
        "after": None,
        "column_types": None,
        "primary_key": [],
        "event_ts": datetime(2024, 12, 12, 10, 6, 46, 282000),
        "source_seq": 0,
        "source_position": "0",
        "ddl_sql": (
            "CREATE TABLE `test` ( `id` int(11) NOT NULL AUTO_INCREMENT, `c1` varchar(255) DEFAULT NULL, "
            "`c2` blob, `c3` longblob, `c4` bit(2) DEFAULT NULL, `c5` binary(255) DEFAULT NULL, `c6` "
            "varchar(255) DEFAULT NULL, PRIMARY KEY (`id`)) ENGINE InnoDB AUTO_INCREMENT DEFAULT CHARSET utf8"
        ),
    },
]

ORDER_TYPES = {"id": "int(11)", "status": "varchar(16)", "note": "varchar(64)"}
OWN_COMMON = {
    "source_format": "canal_json",
    "topic": OWN_TOPIC,
    "kafka_partition": 0,
    "source_db_type": "mysql",
    "source_database": "shop",
    "source_schema": None,
    "source_table": "orders",
    "column_types": ORDER_TYPES,
    "primary_key": ["id"],
    "ddl_sql": None,
}
CONTROL = {"before": None, "after": None, "column_types": None, "primary_key": [], "row_index": 0}
EXPECTED_OWN_EVENTS = [
    {
        **OWN_COMMON,
        "kafka_offset": 0,
        "row_index": 0,
        "op": "c",
        "before": None,
        "after": {"id": "1", "status": "created", "note": None},
        "event_ts": datetime(2026, 1, 1, 0, 0, 0),
        "source_seq": 101,
        "source_position": "101",
    },
    {
        **OWN_COMMON,
        "kafka_offset": 0,
        "row_index": 1,
        "op": "c",
        "before": None,
        "after": {"id": "2", "status": "created", "note": "gift"},
        "event_ts": datetime(2026, 1, 1, 0, 0, 0),
        "source_seq": 101,
        "source_position": "101",
    },
    {
        **OWN_COMMON,
        "kafka_offset": 1,
        "row_index": 0,
        "op": "u",
        # old = {"status": "created", "note": null}: note WAS NULL (not "unchanged"); id is not in old.
        "before": {"id": "1", "status": "created", "note": None},
        "after": {"id": "1", "status": "paid", "note": "rush"},
        "event_ts": datetime(2026, 1, 1, 0, 1, 0),
        "source_seq": 102,
        "source_position": "102",
    },
    {
        **OWN_COMMON,
        "kafka_offset": 1,
        "row_index": 1,
        "op": "u",
        "before": {"id": "2", "status": "created", "note": "gift"},
        "after": {"id": "2", "status": "paid", "note": None},
        "event_ts": datetime(2026, 1, 1, 0, 1, 0),
        "source_seq": 102,
        "source_position": "102",
    },
    {
        **OWN_COMMON,
        "kafka_offset": 2,
        "row_index": 0,
        "op": "d",
        "before": {"id": "2", "status": "paid", "note": None},
        "after": None,
        "event_ts": datetime(2026, 1, 1, 0, 2, 0),
        "source_seq": 103,
        "source_position": "103",
    },
    {
        **OWN_COMMON,
        **CONTROL,
        "kafka_offset": 3,
        "source_table": "audit",
        "op": "ddl",
        "event_ts": datetime(2026, 1, 1, 0, 3, 0),
        "source_seq": 104,
        "source_position": "104",
        "ddl_sql": "CREATE TABLE `audit` (`id` int(11) NOT NULL, PRIMARY KEY (`id`))",
    },
    {
        **OWN_COMMON,
        **CONTROL,
        "kafka_offset": 4,
        "op": "t",
        "event_ts": datetime(2026, 1, 1, 0, 4, 0),
        "source_seq": 105,
        "source_position": "105",
        "ddl_sql": "TRUNCATE TABLE `orders`",
    },
]

NOT_CANAL = "not a Canal FlatMessage (malformed JSON or wrong field types)"
EXPECTED_QUARANTINE = [
    (0, NOT_CANAL),  # truncated JSON
    (1, "unknown operation type: MERGE"),
    (2, NOT_CANAL),  # data is a string, not an array of rows
    (3, "update with 2 after images in data and 1 change sets in old"),
    (4, "DELETE without rows in data"),
    (5, "no operation type (type)"),
    (6, "INSERT flagged isDdl"),
    (7, NOT_CANAL),  # the JSON text `null`
]


def read_table(spark, warehouse, table: str):
    return spark.read.format("delta").load(warehouse.table_path("cdc", table))


def event_rows(spark, warehouse, topic: str) -> list[dict]:
    events = read_table(spark, warehouse, "cdc_events").where(f"topic = '{topic}'").orderBy("kafka_offset", "row_index")
    rows = [row.asDict(recursive=True) for row in events.collect()]
    for row in rows:
        assert len(row.pop("event_id")) == 64
        assert row.pop("ingested_at") is not None
        row["source_seq"] = None if row["source_seq"] is None else int(row["source_seq"])
    return rows


def test_drs_json_c_vendor_examples_become_these_change_events(spark, built_warehouse):
    assert event_rows(spark, built_warehouse, SEED_TOPIC) == EXPECTED_SEED_EVENTS


def test_flatmessage_operations_become_these_change_events(spark, built_warehouse):
    assert event_rows(spark, built_warehouse, OWN_TOPIC) == EXPECTED_OWN_EVENTS


def test_an_old_value_of_json_null_is_a_null_before_value_not_the_new_value(spark, built_warehouse):
    (update,) = [
        row for row in event_rows(spark, built_warehouse, OWN_TOPIC) if row["op"] == "u" and row["after"]["id"] == "1"
    ]
    assert "note" in update["before"]
    assert update["before"]["note"] is None
    assert update["after"]["note"] == "rush"


def test_bad_messages_are_quarantined_with_reason_and_bytes(spark, built_warehouse):
    quarantined = read_table(spark, built_warehouse, "cdc_quarantine").where(f"topic = '{BAD_TOPIC}'")
    rows = quarantined.orderBy("kafka_offset").collect()
    assert [(row.kafka_offset, row.reason) for row in rows] == EXPECTED_QUARANTINE
    assert all(row.source_format == "canal_json" for row in rows)
    assert bytes(rows[1].raw_value).startswith(b'{"data": [{"id": "1"}]')
    assert read_table(spark, built_warehouse, "cdc_events").where(f"topic = '{BAD_TOPIC}'").count() == 0
