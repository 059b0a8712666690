"""KafkaRiver binlog JSON (`kafkariver_json`) end to end: landed, `dbt build`, cdc_events and cdc_quarantine.

`seed_002_spec_examples.jsonl` holds the INSERT, UPDATE and DELETE examples of the vendor spec (seed 002)
exactly as written, each pretty-printed example joined onto one line (the spec's reStructuredText indentation
of four spaces removed; its inner spaces, trailing spaces included, kept). `own_nulls_and_next_file.jsonl` is
OUR OWN file, written from the spec's field tables, for what the spec shows no example of: `null` flags, an
updated column without `origin_val` (old NULL), a column without `updated`, GSON's escapes and a message in the
next binlog file. Expected rows are written out by hand from those texts.
"""

from datetime import datetime

from helpers import comparable_event_rows, read_table

SEED_TOPIC = "kafkariver_json.seed_002_spec_examples"
OWN_TOPIC = "kafkariver_json.own_nulls_and_next_file"
BAD_TOPIC = "kafkariver_json.bad_messages"

COMMON = {
    "source_format": "kafkariver_json",
    "kafka_partition": 0,
    "row_index": 0,
    "source_db_type": "mysql",
    "source_database": "TestCanal",
    "source_schema": None,
    "source_table": "g_order_010",
    "primary_key": ["order_id"],
    "ddl_sql": None,
}
EXPECTED_SEED_EVENTS = [
    {
        **COMMON,
        "topic": SEED_TOPIC,
        "kafka_offset": 0,
        "op": "c",
        "before": None,
        "after": {"order_id": "126", "x_id": "123456", "phone": "13264494028", "time": "2015-08-10 13:08:13"},
        "column_types": {"order_id": "bigint(20)", "x_id": "bigint(20)", "phone": "varchar(15)", "time": "timestamp"},
        "event_ts": datetime(2015, 12, 16, 3, 4, 52),
        # binlog file number 70 times 10^20, plus the offset
        "source_seq": 7000000000000000006816,
        "source_position": "6816@mysql-bin.000070",
    },
    {
        **COMMON,
        "topic": SEED_TOPIC,
        "kafka_offset": 1,
        "op": "u",
        "before": {"order_id": "126", "x_id": "123456", "name": "小明"},
        "after": {"order_id": "126", "x_id": "123456", "name": "小春"},
        "column_types": {"order_id": "bigint(20)", "x_id": "bigint(20)", "name": "varchar(100)"},
        "event_ts": datetime(2015, 12, 16, 3, 25, 7),
        "source_seq": 7000000000000000025521,
        "source_position": "25521@mysql-bin.000070",
    },
    {
        **COMMON,
        "topic": SEED_TOPIC,
        "kafka_offset": 2,
        "op": "d",
        "before": {"order_id": "126", "x_id": "123456", "phone": "13264494028"},
        "after": None,
        "column_types": {"order_id": "bigint(20)", "x_id": "bigint(20)", "phone": "varchar(15)"},
        "event_ts": datetime(2015, 12, 16, 3, 37, 14),
        "source_seq": 7000000000000000058851,
        "source_position": "58851@mysql-bin.000070",
    },
]
OWN_TYPES = {"order_id": "bigint(20)", "phone": "varchar(15)", "memo": "varchar(100)"}
EXPECTED_OWN_EVENTS = [
    {
        **COMMON,
        "topic": OWN_TOPIC,
        "kafka_offset": 0,
        "op": "u",
        # phone: updated to NULL (null flag), old value in origin_val; memo: updated with no origin_val, so it
        # was NULL; price: no `updated` flag, so unchanged.
        "before": {"order_id": "127", "phone": "13800000000", "memo": None, "price": "119.052460"},
        "after": {"order_id": "127", "phone": None, "memo": "first note", "price": "119.052460"},
        "column_types": {**OWN_TYPES, "price": "decimal(10,4)"},
        "event_ts": datetime(2015, 12, 16, 3, 38, 20),
        "source_seq": 7000000000000000090000,
        "source_position": "90000@mysql-bin.000070",
    },
    {
        **COMMON,
        "topic": OWN_TOPIC,
        "kafka_offset": 1,
        "op": "c",
        "before": None,
        "after": {"order_id": "128", "phone": None, "memo": "<b> & 'x' = 1"},
        "column_types": OWN_TYPES,
        "event_ts": datetime(2015, 12, 16, 3, 40, 0),
        "source_seq": 7100000000000000000004,
        "source_position": "4@mysql-bin.000071",
    },
]

NOT_KAFKARIVER = "not a KafkaRiver message (malformed JSON or wrong field types)"
EXPECTED_QUARANTINE = [
    (0, NOT_KAFKARIVER),
    (1, "unknown operation type: x"),
    (2, "binlog position not offset@file.number: mysql-bin.000070:6816"),
    (3, "no binlog position"),
    (4, "row change without columns"),
    (5, "duplicate column names in columns"),
    (6, NOT_KAFKARIVER),  # columns is a string
    (7, "no operation type (event)"),
]


def event_rows(spark, warehouse, topic: str) -> list[dict]:
    return comparable_event_rows(spark, warehouse, topic)


def test_spec_examples_become_these_change_events(spark, built_warehouse):
    assert event_rows(spark, built_warehouse, SEED_TOPIC) == EXPECTED_SEED_EVENTS


def test_null_flags_updated_flags_and_escapes(spark, built_warehouse):
    assert event_rows(spark, built_warehouse, OWN_TOPIC) == EXPECTED_OWN_EVENTS


def test_source_seq_orders_across_binlog_files(spark, built_warehouse):
    events = read_table(spark, built_warehouse, "cdc_events").where("source_format = 'kafkariver_json'")
    positions = [row.source_position for row in events.orderBy("source_seq").collect()]
    assert positions == [
        "6816@mysql-bin.000070",
        "25521@mysql-bin.000070",
        "58851@mysql-bin.000070",
        "90000@mysql-bin.000070",
        "4@mysql-bin.000071",
        # The sample data's eight changes, in a later binlog file.
        "315@mysql-bin.000112",
        "626@mysql-bin.000112",
        "937@mysql-bin.000112",
        "1248@mysql-bin.000112",
        "1559@mysql-bin.000112",
        "1870@mysql-bin.000112",
        "2181@mysql-bin.000112",
        "2492@mysql-bin.000112",
    ]


def test_a_message_names_every_column_of_its_row(spark, built_warehouse):
    """row_columns: the columns a message lists, its whole row (the spec has no partial form)."""
    events = read_table(spark, built_warehouse, "cdc_events").where(f"topic = '{SEED_TOPIC}'").orderBy("kafka_offset")
    assert [row.row_columns for row in events.collect()] == [
        ["order_id", "x_id", "phone", "time"],
        ["order_id", "x_id", "name"],
        ["order_id", "x_id", "phone"],
    ]


def test_bad_messages_are_quarantined_with_reason_and_bytes(spark, built_warehouse):
    quarantined = read_table(spark, built_warehouse, "cdc_quarantine").where(f"topic = '{BAD_TOPIC}'")
    rows = quarantined.orderBy("kafka_offset").collect()
    assert [(row.kafka_offset, row.reason) for row in rows] == EXPECTED_QUARANTINE
    assert all(row.source_format == "kafkariver_json" for row in rows)
    assert bytes(rows[1].raw_value).startswith(b'{"binlog": "1@mysql-bin.000070"')
    assert read_table(spark, built_warehouse, "cdc_events").where(f"topic = '{BAD_TOPIC}'").count() == 0
