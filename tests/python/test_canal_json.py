"""Canal FlatMessage JSON (`canal_json`) end to end: landed, `dbt build`, cdc_events and cdc_quarantine read back.

Vendor examples: there is no Canal document among the vendor seeds; Huawei DRS JSON-C (seed 004) mirrors
Canal's FlatMessage, and its UPDATE, INIT and INIT_DDL examples are identical in JSON and JSON-C, so
`seed_004_drs_json_c.jsonl` holds them exactly as in the seed (each pretty-printed example joined onto one
line, nothing else changed). `own_flatmessage_ops.jsonl` is OUR OWN file, written from Canal's FlatMessage
field list (notes: canal_flatmessage_json.md) to cover what the seed does not show: multi-row INSERT and
UPDATE with partial `old` (including a column whose old value was NULL), DELETE rows in `data`, a CREATE
DDL and a TRUNCATE. Expected rows are written out by hand from those texts (vendor_expectations.py: the cluster
suite lands these topics too).
"""

from helpers import comparable_event_rows, read_table
from vendor_expectations import (
    BAD_TOPIC,
    EXPECTED_OWN_EVENTS,
    EXPECTED_QUARANTINE,
    EXPECTED_SEED_EVENTS,
    EXPECTED_STREAM_HISTORY,
    OWN_TOPIC,
    SEED_TOPIC,
    STREAM_A,
    at,
    stream_history,
)


def event_rows(spark, warehouse, topic: str) -> list[dict]:
    return comparable_event_rows(spark, warehouse, topic)


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


def test_a_canal_stream_with_shared_batch_ids_and_a_restart_has_this_history(spark, built_warehouse):
    assert stream_history(spark, built_warehouse) == EXPECTED_STREAM_HISTORY


def test_distinct_ddl_of_one_batch_are_both_kept_and_a_true_redelivery_is_not(spark, built_warehouse):
    # cdc_ddl_history is a view of these events (views are not read by path here).
    events = read_table(spark, built_warehouse, "cdc_events")
    ddl = events.where(f"topic = '{STREAM_A}' and op in ('ddl', 't')").orderBy("kafka_offset")
    assert [(row.kafka_offset, row.op, row.ddl_sql) for row in ddl.collect()] == [
        (3, "ddl", "ALTER TABLE orders ADD COLUMN c1 int"),
        (4, "ddl", "ALTER TABLE orders ADD COLUMN c2 int"),
        (8, "t", "TRUNCATE TABLE orders"),
    ]
    redeliveries = read_table(spark, built_warehouse, "cdc_redeliveries").where(f"topic = '{STREAM_A}'")
    assert [(row.kafka_offset, row.op) for row in redeliveries.collect()] == [(7, "u")]


def test_canal_order_is_partition_offset_row(spark, built_warehouse):
    events = read_table(spark, built_warehouse, "cdc_events").where(f"topic = '{STREAM_A}'").orderBy("kafka_offset")
    assert [[int(part) for part in row.event_order] for row in events.collect()] == [
        [0, offset, 0] for offset in (0, 1, 2, 3, 4, 5, 6, 8, 9)
    ]


# stream_shop_c.jsonl: row 1 inserted in batch 1, deleted in batch 2; Canal restarts, numbers batches from 1
# again and the row is inserted again with the same values (offset 2), a change identical to offset 0 but
# for its execution time; offset 3 is a true copy of offset 2.
STREAM_C = "canal_json.stream_shop_c"


def test_a_reinsert_after_a_restart_is_a_change_not_a_redelivery(spark, built_warehouse):
    history = read_table(spark, built_warehouse, "cdc_history").where(f"source_name = '{STREAM_C}'")
    rows = history.orderBy("event_order").collect()
    assert [(row.row, row.valid_from, row.valid_to, row.is_deleted, row.op) for row in rows] == [
        ({"id": "1", "note": "r"}, at(0), at(1), False, "c"),
        ({"id": "1", "note": "r"}, at(1), at(2), True, "d"),
        ({"id": "1", "note": "r"}, at(2), None, False, "c"),
    ]
    redeliveries = read_table(spark, built_warehouse, "cdc_redeliveries").where(f"topic = '{STREAM_C}'")
    assert [row.kafka_offset for row in redeliveries.collect()] == [3]
