"""Alibaba Cloud DataWorks StreamX JSON end to end: the vendor's examples landed, `dbt build`, cdc_events read.

Vendor examples (`vendor_examples/aliyun_streamx_json/`):
- `seed_000_datahub_blob.jsonl`: the six "相关消息的JSON样例" of seed 000 (DataHub Blob), in document order:
  INSERT, UPDATE_BEFOR, UPDATE_AFTER, DELETE, MHEARTBEAT, ALTER (with its ddlMeta verbatim).
- `seed_003_kafka.jsonl`: seed 003 (whole database to Kafka): the heartbeat, the insert, the two-message
  update, the delete. `seed_003_one_record_update.jsonl`: the "update as one Kafka record" example.
The messages are the vendor's JSON re-serialized on one line each; nothing else was changed (the "overall
format" template, with comments and placeholder values, is not a message and is not used).
`edge_cases.jsonl` (an Oracle source with scn, rowid and all six types, eventTime -1, transactions,
TRUNCATE, CREATE, a waiting update half, a pair whose after half landed first), `unknown_sequence.jsonl`
(a stream in the shape of seed 003 whose sequenceId is "-1" or null after its first change, as real
DataWorks messages carry it), `full_load_without_position.jsonl` (records with sequenceId "-1" and eventTime
-1, in the shape of a captured DataWorks INSERT that Apache Paimon's tests use, before and among incremental
changes) and `bad_messages.jsonl` are ours.

Expected rows are written out by hand from the vendor text; epoch milliseconds were converted to UTC.
"""

from datetime import datetime
from decimal import Decimal

from helpers import format_events, read_table

FORMAT = "aliyun_streamx_json"
BLOB_TOPIC = f"{FORMAT}.seed_000_datahub_blob"
KAFKA_TOPIC = f"{FORMAT}.seed_003_kafka"
ONE_RECORD_TOPIC = f"{FORMAT}.seed_003_one_record_update"
EDGE_TOPIC = f"{FORMAT}.edge_cases"
SAMPLE_TOPIC = f"{FORMAT}.shop.orders"
UNKNOWN_TOPIC = f"{FORMAT}.unknown_sequence"
FULL_LOAD_TOPIC = f"{FORMAT}.full_load_without_position"
BAD_TOPIC = f"{FORMAT}.bad_messages"

NO_EVENT_DATA = {
    "row_index": 0,
    "source_db_type": None,
    "source_database": None,
    "source_schema": None,
    "source_table": None,
    "before": None,
    "after": None,
    "column_types": None,
    "primary_key": [],
    "ddl_sql": None,
}

# Seed 000: table t_shiyu_pk of MySQL database yunshi_db, primary key (id, name).
BLOB_ROW = {
    "source_db_type": "mysql",
    "source_database": "yunshi_db",
    "source_schema": None,
    "source_table": "t_shiyu_pk",
    "column_types": {"id": "LONG", "name": "STRING", "comment": "STRING"},
    "primary_key": ["id", "name"],
    "row_index": 0,
    "ddl_sql": None,
}
EXPECTED_BLOB_EVENTS = [
    {
        **BLOB_ROW,
        "kafka_offset": 0,
        "op": "c",
        "before": None,
        "after": {"name": "joe", "comment": "comment", "id": "1"},
        "event_ts": datetime(2020, 11, 14, 7, 45, 32),
        "source_seq": Decimal("1605339516000000004"),
        "source_position": "1605339516000000004",
    },
    {
        # UPDATE_BEFOR (offset 1) and UPDATE_AFTER (offset 2) share sequenceId ...005: one event.
        **BLOB_ROW,
        "kafka_offset": 1,
        "op": "u",
        "before": {"name": "joe", "comment": "comment", "id": "1"},
        "after": {"name": "joe", "comment": "com1", "id": "1"},
        "event_ts": datetime(2020, 11, 14, 7, 45, 34),
        "source_seq": Decimal("1605339516000000005"),
        "source_position": "1605339516000000005",
    },
    {
        **BLOB_ROW,
        "kafka_offset": 3,
        "op": "d",
        "before": {"name": "joe", "comment": "com1", "id": "1"},
        "after": None,
        "event_ts": datetime(2020, 11, 14, 7, 45, 37),
        "source_seq": Decimal("1605339516000000006"),
        "source_position": "1605339516000000006",
    },
    {
        # The heartbeat has an empty schema and no sequenceId.
        **NO_EVENT_DATA,
        "kafka_offset": 4,
        "op": "heartbeat",
        "event_ts": datetime(2020, 11, 14, 7, 45, 53, 629000),
        "source_seq": None,
        "source_position": None,
    },
    {
        **NO_EVENT_DATA,
        "source_db_type": "mysql",
        "source_database": "yunshi_db",
        "source_table": "t_shiyu_nopk",
        "kafka_offset": 5,
        "op": "ddl",
        "event_ts": datetime(2020, 11, 14, 8, 21, 49),
        "source_seq": Decimal("1605339516000000035"),
        "source_position": "1605339516000000035",
        "ddl_sql": "alter table t_shiyu_nopk add column holo text",
    },
]

# Seed 003: table pkset_test_no_pk of MySQL database pkset_test, no primary key ("primaryKey": null).
KAFKA_ROW = {
    "source_db_type": "mysql",
    "source_database": "pkset_test",
    "source_schema": None,
    "source_table": "pkset_test_no_pk",
    "column_types": {"name": "STRING", "job": "STRING", "sex": "STRING", "#alibaba_rds_row_id#": "LONG"},
    "primary_key": [],
    "row_index": 0,
    "ddl_sql": None,
}
MAN = {"name": "name11", "job": "job11", "sex": "man", "#alibaba_rds_row_id#": "15"}
WOMAN = {**MAN, "sex": "woman"}
KAFKA_UPDATE = {
    **KAFKA_ROW,
    "op": "u",
    "before": MAN,
    "after": WOMAN,
    "event_ts": datetime(2021, 5, 8, 7, 14, 37),
    "source_seq": Decimal("1620457642589000001"),
    "source_position": "1620457642589000001",
}
EXPECTED_KAFKA_EVENTS = [
    {
        **NO_EVENT_DATA,
        "kafka_offset": 0,
        "op": "heartbeat",
        "event_ts": datetime(2021, 5, 8, 7, 7, 39),
        "source_seq": None,
        "source_position": None,
    },
    {
        **KAFKA_ROW,
        "kafka_offset": 1,
        "op": "c",
        "before": None,
        "after": MAN,
        "event_ts": datetime(2021, 5, 8, 7, 11, 36),
        "source_seq": Decimal("1620457642589000000"),
        "source_position": "1620457642589000000",
    },
    {**KAFKA_UPDATE, "kafka_offset": 2},  # offsets 2 (UPDATE_BEFOR) and 3 (UPDATE_AFTER)
    {
        **KAFKA_ROW,
        "kafka_offset": 4,
        "op": "d",
        "before": WOMAN,
        "after": None,
        "event_ts": datetime(2021, 5, 8, 7, 17, 46),
        "source_seq": Decimal("1620457642589000002"),
        "source_position": "1620457642589000002",
    },
]
# The one-record update (UPDATE_AFTER with both images) is the same update as one event.
EXPECTED_ONE_RECORD_EVENTS = [{**KAFKA_UPDATE, "kafka_offset": 0}]

# Our Oracle edge cases: all six StreamX types, values as their JSON text, BYTES kept as base64.
ORACLE = {
    "source_db_type": "oracle",
    "source_database": "ORCL",
    "source_schema": "SHOP",
    "source_table": "ORDERS",
    "row_index": 0,
}
ORACLE_TYPES = {
    "ID": "LONG",
    "FLAG": "BOOLEAN",
    "PRICE": "DOUBLE",
    "CREATED": "DATE",
    "PAYLOAD": "BYTES",
    "NOTE": "STRING",
    "rowid": "STRING",
}
ORACLE_ROW = {
    "ID": "9007199254740993",  # above 2^53: every digit kept
    "FLAG": "true",
    "PRICE": "12.5",
    "CREATED": "1590315269000",
    "PAYLOAD": "5rWL6K+VdGV4dDEyMw==",  # the vendor's "测试text123"
    "NOTE": None,
    "rowid": "AAIUMPAAFAACxExAAE",
}
EDGE_TS = datetime(2023, 11, 14, 22, 13, 20)
EXPECTED_EDGE_EVENTS = [
    {
        **ORACLE,
        "kafka_offset": 0,
        "op": "c",
        "before": None,
        "after": ORACLE_ROW,
        "column_types": ORACLE_TYPES,
        "primary_key": ["ID"],
        "event_ts": None,  # eventTime -1: unknown
        "source_seq": Decimal("1700000000000000001"),
        "source_position": "8234567",  # the Oracle scn
        "ddl_sql": None,
    },
    {
        **NO_EVENT_DATA,
        "kafka_offset": 1,
        "op": "begin",
        "event_ts": EDGE_TS,
        "source_seq": Decimal("1700000000000000002"),
        "source_position": "8234570",
    },
    # offset 2: an UPDATE_BEFOR whose UPDATE_AFTER has not landed: no event yet.
    {
        **NO_EVENT_DATA,
        **ORACLE,
        "kafka_offset": 3,
        "op": "t",
        "event_ts": EDGE_TS,
        "source_seq": Decimal("1700000000000000004"),
        "source_position": "8234572",
        "ddl_sql": "TRUNCATE TABLE ORDERS",
    },
    {
        **NO_EVENT_DATA,
        "kafka_offset": 4,
        "op": "commit",
        "event_ts": EDGE_TS,
        "source_seq": Decimal("1700000000000000005"),
        "source_position": "8234573",
    },
    {
        # UPDATE_AFTER at offset 5, its UPDATE_BEFOR at offset 6: the event takes the before half's offset.
        **ORACLE,
        "kafka_offset": 6,
        "op": "u",
        "before": ORACLE_ROW,
        "after": {**ORACLE_ROW, "PRICE": "13.75", "FLAG": "false"},
        "column_types": ORACLE_TYPES,
        "primary_key": ["ID"],
        "event_ts": EDGE_TS,
        "source_seq": Decimal("1700000000000000006"),
        "source_position": "8234580",
        "ddl_sql": None,
    },
    {
        **NO_EVENT_DATA,
        **ORACLE,
        "kafka_offset": 7,
        "op": "ddl",
        "event_ts": EDGE_TS,
        "source_seq": Decimal("1700000000000000007"),
        "source_position": "8234590",
        "ddl_sql": "CREATE TABLE ORDERS_COPY AS SELECT * FROM ORDERS",
    },
]


# Our stream whose sequenceId is unknown after its first change: table shop.orders, primary key id.
UNKNOWN_ROW = {
    "source_db_type": "mysql",
    "source_database": "shop",
    "source_schema": None,
    "source_table": "orders",
    "column_types": {"id": "LONG", "status": "STRING"},
    "primary_key": ["id"],
    "row_index": 0,
    "ddl_sql": None,
    "source_seq": None,
    "source_position": None,
}
EXPECTED_UNKNOWN_EVENTS = [
    {
        **UNKNOWN_ROW,
        "kafka_offset": 0,
        "op": "c",
        "before": None,
        "after": {"id": "1", "status": "new"},
        "event_ts": datetime(2023, 11, 14, 22, 13, 21),
        "source_seq": Decimal("1700000000000000001"),
        "source_position": "1700000000000000001",
    },
    {
        # UPDATE_BEFOR (offset 1) and UPDATE_AFTER (offset 2), both "-1": paired as neighbours.
        **UNKNOWN_ROW,
        "kafka_offset": 1,
        "op": "u",
        "before": {"id": "1", "status": "new"},
        "after": {"id": "1", "status": "paid"},
        "event_ts": datetime(2023, 11, 14, 22, 13, 22),
    },
    {
        **NO_EVENT_DATA,
        "kafka_offset": 3,
        "op": "heartbeat",
        "event_ts": datetime(2023, 11, 14, 22, 13, 23),
        "source_seq": None,
        "source_position": None,
    },
    {
        # "sequenceId": null on an insert: unknown, like "-1".
        **UNKNOWN_ROW,
        "kafka_offset": 4,
        "op": "c",
        "before": None,
        "after": {"id": "2", "status": "new"},
        "event_ts": datetime(2023, 11, 14, 22, 13, 24),
    },
    {
        **UNKNOWN_ROW,
        "kafka_offset": 5,
        "op": "d",
        "before": {"id": "2", "status": "new"},
        "after": None,
        "event_ts": datetime(2023, 11, 14, 22, 13, 24),
    },
    {
        # An update as one record (both images), "-1".
        **UNKNOWN_ROW,
        "kafka_offset": 6,
        "op": "u",
        "before": {"id": "1", "status": "paid"},
        "after": {"id": "1", "status": "shipped"},
        "event_ts": datetime(2023, 11, 14, 22, 13, 25),
    },
]
# An unknown sequenceId sorts at the end of its eventTime's millisecond: eventTime * 10^6 + 999999.
EXPECTED_UNKNOWN_ORDER = [
    (0, [1700000000000000001, 0, 0]),
    (1, [1700000002000999999, 0, 1]),
    (3, [1700000003000999999, 0, 3]),
    (4, [1700000004000999999, 0, 4]),
    (5, [1700000004000999999, 0, 5]),  # same millisecond as the insert at 4: the offset breaks the tie
    (6, [1700000005000999999, 0, 6]),
]


# Our full-load stream: table bank.accounts, primary key id; "-1" with eventTime -1 is a record without a
# position, placed before every known sequenceId (-1), then by its Kafka position.
ACCOUNT = {
    "source_db_type": "mysql",
    "source_database": "bank",
    "source_schema": None,
    "source_table": "accounts",
    "column_types": {"id": "LONG", "balance": "DOUBLE", "owner": "STRING", "opened": "DATE"},
    "primary_key": ["id"],
    "row_index": 0,
    "ddl_sql": None,
    "event_ts": None,
    "source_seq": None,
    "source_position": None,
}


def account(key: str, balance: str, owner: str) -> dict:
    return {"id": key, "balance": balance, "owner": owner, "opened": "1731661114000"}


EXPECTED_FULL_LOAD_EVENTS = [
    {**ACCOUNT, "kafka_offset": 0, "op": "r", "before": None, "after": account("1", "10.500000", "li")},
    {**ACCOUNT, "kafka_offset": 1, "op": "r", "before": None, "after": account("2", "20.000000", "wang")},
    {**ACCOUNT, "kafka_offset": 2, "op": "r", "before": None, "after": account("3", "30.000000", "zhao")},
    {
        # The incremental phase: known sequenceIds, eventTime 2024-11-15 09:14:45 and :57 UTC.
        **ACCOUNT,
        "kafka_offset": 3,
        "op": "u",
        "before": account("2", "20.000000", "wang"),
        "after": account("2", "25.000000", "wang"),
        "event_ts": datetime(2024, 11, 15, 9, 14, 45),
        "source_seq": Decimal("1731663842292000000"),
        "source_position": "1731663842292000000",
    },
    {
        **ACCOUNT,
        "kafka_offset": 5,
        "op": "d",
        "before": account("3", "30.000000", "zhao"),
        "after": None,
        "event_ts": datetime(2024, 11, 15, 9, 14, 57),
        "source_seq": Decimal("1731663842292000001"),
        "source_position": "1731663842292000001",
    },
    {**ACCOUNT, "kafka_offset": 6, "op": "r", "before": None, "after": account("4", "40.000000", "sun")},
    {
        # Two halves without a position at offsets 7 and 8: neighbours, paired.
        **ACCOUNT,
        "kafka_offset": 7,
        "op": "u",
        "before": account("4", "40.000000", "sun"),
        "after": account("4", "45.000000", "sun"),
    },
]
EXPECTED_FULL_LOAD_ORDER = [
    (0, [-1, 0, 0]),
    (1, [-1, 0, 1]),
    (2, [-1, 0, 2]),
    (3, [1731663842292000000, 0, 3]),
    (5, [1731663842292000001, 0, 5]),
    (6, [-1, 0, 6]),
    (7, [-1, 0, 7]),
]


def event_orders(spark, warehouse, topic: str) -> list[tuple[int, list[int]]]:
    events = read_table(spark, warehouse, "cdc_events").where(f"topic = '{topic}'").orderBy("kafka_offset", "row_index")
    return [(row.kafka_offset, [int(part) for part in row.event_order]) for row in events.collect()]


def test_datahub_blob_examples_become_these_events(spark, built_warehouse):
    assert format_events(spark, built_warehouse, BLOB_TOPIC) == EXPECTED_BLOB_EVENTS


def test_row_columns_are_the_schemas_data_columns(spark, built_warehouse):
    """row_columns: schema.dataColumn's names, the table's columns (none for a heartbeat and a DDL)."""
    events = read_table(spark, built_warehouse, "cdc_events").where(f"topic = '{BLOB_TOPIC}'").orderBy("kafka_offset")
    assert [(row.kafka_offset, row.op, row.row_columns) for row in events.collect()] == [
        (0, "c", ["id", "name", "comment"]),
        (1, "u", ["id", "name", "comment"]),
        (3, "d", ["id", "name", "comment"]),
        (4, "heartbeat", None),
        (5, "ddl", None),
    ]


def test_kafka_examples_become_these_events(spark, built_warehouse):
    assert format_events(spark, built_warehouse, KAFKA_TOPIC) == EXPECTED_KAFKA_EVENTS


def test_one_record_update_is_one_event(spark, built_warehouse):
    assert format_events(spark, built_warehouse, ONE_RECORD_TOPIC) == EXPECTED_ONE_RECORD_EVENTS


def test_oracle_types_transactions_and_pairing_edge_cases(spark, built_warehouse):
    assert format_events(spark, built_warehouse, EDGE_TOPIC) == EXPECTED_EDGE_EVENTS


def test_known_sequence_orders_events(spark, built_warehouse):
    assert event_orders(spark, built_warehouse, EDGE_TOPIC) == [
        (offset, [1700000000000000000 + seq, 0, offset])
        for offset, seq in ((0, 1), (1, 2), (3, 4), (4, 5), (6, 6), (7, 7))
    ]


def test_unknown_sequence_is_accepted_and_ordered_by_event_time(spark, built_warehouse):
    assert format_events(spark, built_warehouse, UNKNOWN_TOPIC) == EXPECTED_UNKNOWN_EVENTS
    assert event_orders(spark, built_warehouse, UNKNOWN_TOPIC) == EXPECTED_UNKNOWN_ORDER


def test_unknown_sequence_updates_after_a_known_insert_are_the_current_version(spark, built_warehouse):
    event_ids = [
        row.event_id
        for row in read_table(spark, built_warehouse, "cdc_events").where(f"topic = '{UNKNOWN_TOPIC}'").collect()
    ]
    history = read_table(spark, built_warehouse, "cdc_history")
    history = history.where(history.event_id.isin(event_ids)).orderBy("pk", "event_order", "event_id").collect()
    assert [(v.pk, v.op, v.row["status"], v.valid_from, v.valid_to, v.is_current, v.is_deleted) for v in history] == [
        ('["1"]', "c", "new", datetime(2023, 11, 14, 22, 13, 21), datetime(2023, 11, 14, 22, 13, 22), False, False),
        ('["1"]', "u", "paid", datetime(2023, 11, 14, 22, 13, 22), datetime(2023, 11, 14, 22, 13, 25), False, False),
        ('["1"]', "u", "shipped", datetime(2023, 11, 14, 22, 13, 25), None, True, False),
        # Insert and delete in one millisecond: the zero-length version of the insert, then the delete.
        ('["2"]', "c", "new", datetime(2023, 11, 14, 22, 13, 24), datetime(2023, 11, 14, 22, 13, 24), False, False),
        ('["2"]', "d", "new", datetime(2023, 11, 14, 22, 13, 24), None, True, True),
    ]


def test_records_without_position_or_time_are_ordered_first_then_by_kafka_position(spark, built_warehouse):
    assert format_events(spark, built_warehouse, FULL_LOAD_TOPIC) == EXPECTED_FULL_LOAD_EVENTS
    assert event_orders(spark, built_warehouse, FULL_LOAD_TOPIC) == EXPECTED_FULL_LOAD_ORDER
    history = read_table(spark, built_warehouse, "cdc_history").where("source_database = 'bank'")
    history = history.orderBy("pk", "event_order", "event_id").collect()
    assert [(v.pk, v.op, v.row["balance"], v.valid_from, v.valid_to, v.is_current, v.is_deleted) for v in history] == [
        # The full load's rows (op r) have no change time: valid from the beginning.
        ('["1"]', "r", "10.500000", None, None, True, False),
        ('["2"]', "r", "20.000000", None, datetime(2024, 11, 15, 9, 14, 45), False, False),
        ('["2"]', "u", "25.000000", datetime(2024, 11, 15, 9, 14, 45), None, True, False),
        ('["3"]', "r", "30.000000", None, datetime(2024, 11, 15, 9, 14, 57), False, False),
        ('["3"]', "d", "30.000000", datetime(2024, 11, 15, 9, 14, 57), None, True, True),
        ('["4"]', "r", "40.000000", None, None, False, False),
        ('["4"]', "u", "45.000000", None, None, True, False),
    ]


def test_update_pairs_list_both_halves(spark, built_warehouse):
    pairs = read_table(spark, built_warehouse, "int_aliyun__update_pairs").where(f"source_format = '{FORMAT}'")
    pairs = pairs.orderBy("topic", "kafka_offset")
    assert [(p.topic, p.sequence_id, [m.kafka_offset for m in p.message_offsets]) for p in pairs.collect()] == [
        (EDGE_TOPIC, "1700000000000000006", [6, 5]),
        (FULL_LOAD_TOPIC, "1731663842292000000", [3, 4]),
        (FULL_LOAD_TOPIC, None, [7, 8]),
        (BLOB_TOPIC, "1605339516000000005", [1, 2]),
        (KAFKA_TOPIC, "1620457642589000001", [2, 3]),
        # The sample data's three updates (sample_data/shop_story.py), after four inserts, then a delete.
        (SAMPLE_TOPIC, "1772442000000000004", [4, 5]),
        (SAMPLE_TOPIC, "1772442000000000005", [6, 7]),
        (SAMPLE_TOPIC, "1772442000000000007", [9, 10]),
        (UNKNOWN_TOPIC, None, [1, 2]),
    ]


def test_ddl_meta_is_kept_as_opaque_text(spark, built_warehouse):
    vendor_text = (built_warehouse_examples() / "seed_000_datahub_blob.jsonl").read_text().splitlines()[5]
    (staged,) = (
        read_table(spark, built_warehouse, "stg_aliyun_streamx_json__messages")
        .where(f"topic = '{BLOB_TOPIC}' and kafka_offset = 5")
        .collect()
    )
    assert staged.ddl_meta.startswith("rO0ABXNyACljb20uYWxpYmFiYS5kaS5wbHVnaW4u")  # Java serialization magic
    assert f'"ddlMeta":"{staged.ddl_meta}"' in vendor_text


def built_warehouse_examples():
    from helpers import VENDOR_EXAMPLES

    return VENDOR_EXAMPLES / FORMAT


def test_bad_messages_are_quarantined_with_reason_and_bytes(spark, built_warehouse):
    quarantined = (
        read_table(spark, built_warehouse, "cdc_quarantine").where(f"topic = '{BAD_TOPIC}'").orderBy("kafka_offset")
    ).collect()
    not_canonical = "unused bits of the last character are not zero (not canonical)"
    not_streamx = "not a DataWorks StreamX JSON message (malformed JSON or wrong field types)"
    assert [(q.kafka_offset, q.reason) for q in quarantined] == [
        (0, not_streamx),
        (1, "unknown operation: GTID"),
        (2, "BYTES value is not strict base64: after.bin: length 11 is not a multiple of 4"),
        (3, "BYTES value is not strict base64: after.bin: " + not_canonical),
        (4, "INSERT without an after image (payload.after.dataColumn)"),
        (5, not_streamx),  # eventTime "yesterday"
        (6, "sequenceId is not a number: 17e3"),
        (7, "BYTES value is not strict base64: after.bin: length 9 is not a multiple of 4"),  # a line break
        (8, not_streamx),  # a JSON string, not an object
        (9, "sequenceId is not a number: "),  # empty: not a marker the vendor writes
        (10, "DELETE without a sequenceId or a timestamp.eventTime to order it by"),  # null, no timestamp at all
    ]
    assert all(q.source_format == FORMAT for q in quarantined)
    lines = (built_warehouse_examples() / "bad_messages.jsonl").read_bytes().splitlines()
    assert [bytes(q.raw_value) for q in quarantined] == lines
    assert read_table(spark, built_warehouse, "cdc_events").where(f"topic = '{BAD_TOPIC}'").count() == 0
