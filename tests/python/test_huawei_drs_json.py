"""Huawei DRS JSON end to end: the vendor's own examples (seed 004) landed, `dbt build`, cdc_events read back.

Expected rows (vendor_expectations.py) are written out from the vendor document: the MySQL-form UPDATE, the
full-sync INIT row and the INIT_DDL table-structure message.
"""

import json

from helpers import GARBAGE_TOPIC, assert_succeeded, comparable_event_rows, event_rows, read_table
from vendor_expectations import DRS_VENDOR_TOPIC, EXPECTED_VENDOR_EVENTS


def test_vendor_examples_become_these_change_events(spark, built_warehouse):
    assert comparable_event_rows(spark, built_warehouse, DRS_VENDOR_TOPIC) == EXPECTED_VENDOR_EVENTS


def test_event_ids_are_deterministic(spark, built_warehouse):
    (row,) = [r for r in event_rows(spark, built_warehouse, DRS_VENDOR_TOPIC) if r["kafka_offset"] == 0]
    expected = spark.sql(f"select sha2('huawei_drs_json/{DRS_VENDOR_TOPIC}/0/0/0', 256) as id").first().id
    assert row["event_id"] == expected


def test_sample_data_bad_messages_are_quarantined_with_reason_and_bytes(spark, built_warehouse):
    quarantined = (
        read_table(spark, built_warehouse, "cdc_quarantine")
        .where("topic = 'huawei_drs_json.shop.orders'")
        .orderBy("kafka_offset")
        .collect()
    )
    assert [(q.topic, q.kafka_offset, q.reason) for q in quarantined] == [
        ("huawei_drs_json.shop.orders", 13, "not a Huawei DRS JSON message (malformed JSON or wrong field types)"),
        ("huawei_drs_json.shop.orders", 14, "unknown operation type: MERGE"),
    ]
    assert bytes(quarantined[1].raw_value).startswith(b'{"id": 1001,')


def test_every_landed_message_is_an_event_or_quarantined(spark, built_warehouse):
    keys = ["topic", "kafka_partition", "kafka_offset"]
    landed = spark.read.format("delta").load(built_warehouse.table_path("landing", "cdc_raw")).select(*keys)
    events = read_table(spark, built_warehouse, "cdc_events").select(*keys)
    quarantined = read_table(spark, built_warehouse, "cdc_quarantine").select(*keys)
    redelivered = read_table(spark, built_warehouse, "cdc_redeliveries").select(*keys)
    # The events of a reassembled DTS group carry the offset of its part 0; the group lists all its parts.
    dts_parts = read_table(spark, built_warehouse, "stg_tencent_dts_protobuf__entries").selectExpr(
        "topic", "kafka_partition", "explode(part_offsets) as kafka_offset"
    )
    # An Alibaba Cloud update sent as two messages is one event at its before half's offset; the pair
    # lists both messages.
    aliyun_pairs = read_table(spark, built_warehouse, "int_aliyun__update_pairs").selectExpr(
        "topic", "inline(message_offsets)"
    )
    accounted = events.union(redelivered).union(quarantined).union(dts_parts).union(aliyun_pairs.select(*keys))
    unaccounted = landed.subtract(accounted).orderBy(*keys).collect()
    # Only messages still waiting: the last part of a split DTS group, and update halves whose partner
    # has not landed yet.
    assert [tuple(row) for row in unaccounted] == [
        ("aliyun_datahub_tuple.edge_cases", 0, 2),
        ("aliyun_streamx_json.edge_cases", 0, 2),
        ("tencent_dts_protobuf.split_waiting", 0, 1),
    ]
    # The examples, sample data and bad messages of each format, without the garbage topics.
    examples = landed.where(f"topic not like '%.{GARBAGE_TOPIC}'")
    assert examples.where("topic like 'huawei_drs_json.%'").count() == 27
    # Nine of each are the sample data's (eight changes, one truncated message).
    assert examples.where("topic like 'huawei_drs_jsonc.%'").count() == 18
    assert examples.where("topic like 'huawei_drs_avro.%'").count() == 17


def test_sample_history_follows_the_orders(spark, built_warehouse):
    history = read_table(spark, built_warehouse, "cdc_history").where(
        "source_format = 'huawei_drs_json' and source_table = 'orders'"
    )
    by_key = {}
    for version in history.orderBy("source_seq", "row_index").collect():
        by_key.setdefault(version.pk, []).append(
            (version.op, version.row["status"], version.is_current, version.is_deleted)
        )
    # Order 4 was inserted and deleted; orders 1 and 6 were updated by one two-row statement.
    assert by_key['["4"]'] == [("c", "created", False, False), ("d", "created", True, True)]
    assert by_key['["2"]'] == [
        ("c", "created", False, False),
        ("u", "paid", False, False),
        ("u", "shipped", True, False),
    ]
    assert by_key['["6"]'] == [("c", "created", False, False), ("u", "paid", True, False)]
    current = (
        spark.read.format("delta")
        .load(built_warehouse.table_path("cdc", "cdc_history"))
        .where("is_current and not is_deleted and source_format = 'huawei_drs_json' and source_table = 'orders'")
    )
    assert sorted(r.pk for r in current.collect()) == ['["1"]', '["2"]', '["3"]', '["5"]', '["6"]']


def test_the_dbt_snapshot_of_the_current_state_holds_every_open_version(spark, built_warehouse):
    keys = ["source_format", "source_database", "source_schema", "source_table", "pk", "scd_id"]
    open_versions = read_table(spark, built_warehouse, "cdc_history").where("is_current and not is_deleted")
    snapshot = read_table(spark, built_warehouse, "cdc_current_snapshot")
    assert snapshot.where("dbt_valid_to is not null").count() == 0
    # Database or schema may be null: compare the rows as text.
    assert sorted(map(repr, snapshot.select(*keys).collect())) == sorted(
        map(repr, open_versions.select(*keys).collect())
    )
    assert open_versions.where("source_table = 'orders'").count() > 0


def test_dbt_show_finds_the_project_udfs(built_warehouse):
    shown = built_warehouse.dbt(
        "show", "--inline", "select cdc_dts_envelope(cast('华为云' as binary)).error as decoded", "--output", "json"
    )
    assert_succeeded(shown)
    shown_json = json.loads(shown.stdout[shown.stdout.index("{\n") :])
    assert shown_json["show"] == [{"decoded": "not a Tencent DTS Envelope (protobuf decode failed)"}]
