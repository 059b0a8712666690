"""Alibaba Cloud DataHub Tuple records (DataWorks data integration) end to end.

`vendor_examples/aliyun_datahub_tuple/seed_000_tuple.jsonl` is the example table of seed 000 ("一条Insert、
Update、Delete语句同步到DataHub的结果"): its four records with the vendor's `_sequence_id_`,
`_operation_type_`, `_excute_time_` (the vendor's spelling), `_before_image_` and `_after_image_` values
verbatim. The table shows neither `_source_table_` nor the data columns: we added `"_source_table_":
"orders"` and the data columns `id` / `name` to make each record a whole Tuple record landed as JSON.
`edge_cases.jsonl` (the `_execute_time_` spelling, a pair whose after half landed first, a waiting half,
null and typed values, time -1) and `bad_messages.jsonl` are ours.
"""

from datetime import datetime
from decimal import Decimal

from helpers import VENDOR_EXAMPLES, format_events, read_table

FORMAT = "aliyun_datahub_tuple"
SEED_TOPIC = f"{FORMAT}.seed_000_tuple"
EDGE_TOPIC = f"{FORMAT}.edge_cases"
SAMPLE_TOPIC = f"{FORMAT}.shop.orders"
BAD_TOPIC = f"{FORMAT}.bad_messages"

ROW = {
    "row_index": 0,
    "source_db_type": None,
    "source_database": None,
    "source_schema": None,
    "source_table": "orders",
    "column_types": None,
    "primary_key": [],
    "ddl_sql": None,
}
EXPECTED_SEED_EVENTS = [
    {
        **ROW,
        "kafka_offset": 0,
        "op": "c",
        "before": None,
        "after": {"id": "1", "name": "joe"},
        "event_ts": datetime(2022, 4, 15, 3, 2, 6),  # 1649991726000
        "source_seq": Decimal("1649991610688000000"),
        "source_position": "1649991610688000000",
    },
    {
        # Offsets 1 (before image Y) and 2 (after image Y) share sequence id ...001: one update.
        **ROW,
        "kafka_offset": 1,
        "op": "u",
        "before": {"id": "1", "name": "joe"},
        "after": {"id": "1", "name": "jack"},
        "event_ts": datetime(2022, 4, 15, 3, 2, 36),  # 1649991756000
        "source_seq": Decimal("1649991610688000001"),
        "source_position": "1649991610688000001",
    },
    {
        **ROW,
        "kafka_offset": 3,
        "op": "d",
        "before": {"id": "1", "name": "jack"},
        "after": None,
        "event_ts": datetime(2022, 4, 15, 3, 2, 54),  # 1649991774000
        "source_seq": Decimal("1649991610688000002"),
        "source_position": "1649991610688000002",
    },
]
EXPECTED_EDGE_EVENTS = [
    {
        # After half at offset 0, before half at offset 1: the event takes the before half's offset.
        **ROW,
        "kafka_offset": 1,
        "op": "u",
        "before": {"id": "2", "name": "before", "note": "x"},
        "after": {"id": "2", "name": "after", "note": None},
        "event_ts": datetime(2022, 4, 15, 3, 3, 20),  # 1649991800000
        "source_seq": Decimal("1649991610688000005"),
        "source_position": "1649991610688000005",
    },
    # offset 2: a before half whose after half has not landed: no event yet.
    {
        **ROW,
        "kafka_offset": 3,
        "op": "c",
        "before": None,
        "after": {"id": "4", "name": None, "price": "9.5", "ok": "true"},
        "event_ts": None,  # -1: unknown
        "source_seq": Decimal("1649991610688000007"),
        "source_position": "1649991610688000007",
    },
]


def test_vendor_tuple_records_become_these_events(spark, built_warehouse):
    assert format_events(spark, built_warehouse, SEED_TOPIC) == EXPECTED_SEED_EVENTS


def test_edge_cases_become_these_events(spark, built_warehouse):
    assert format_events(spark, built_warehouse, EDGE_TOPIC) == EXPECTED_EDGE_EVENTS


def test_update_pairs_list_both_halves(spark, built_warehouse):
    pairs = read_table(spark, built_warehouse, "int_aliyun__update_pairs").where(f"source_format = '{FORMAT}'")
    pairs = pairs.orderBy("topic", "kafka_offset")
    assert [(p.topic, p.sequence_id, [m.kafka_offset for m in p.message_offsets]) for p in pairs.collect()] == [
        (EDGE_TOPIC, "1649991610688000005", [1, 0]),
        (SEED_TOPIC, "1649991610688000001", [1, 2]),
        # The sample data's three updates (sample_data/shop_story.py), after four inserts, then a delete.
        (SAMPLE_TOPIC, "1772442000000000004", [4, 5]),
        (SAMPLE_TOPIC, "1772442000000000005", [6, 7]),
        (SAMPLE_TOPIC, "1772442000000000007", [9, 10]),
    ]


def test_bad_records_are_quarantined_with_reason_and_bytes(spark, built_warehouse):
    quarantined = (
        read_table(spark, built_warehouse, "cdc_quarantine").where(f"topic = '{BAD_TOPIC}'").orderBy("kafka_offset")
    ).collect()
    not_a_record = "not a DataHub Tuple record (malformed JSON or not a JSON object)"
    assert [(q.kafka_offset, q.reason) for q in quarantined] == [
        (0, not_a_record),
        (1, "unknown operation: X"),
        (2, "image flags _before_image_=Y _after_image_=N do not fit operation I"),
        (3, "_sequence_id_ is not a number: abc"),
        (4, "no _source_table_"),
        (5, not_a_record),  # a JSON array
    ]
    lines = (VENDOR_EXAMPLES / FORMAT / "bad_messages.jsonl").read_bytes().splitlines()
    assert [bytes(q.raw_value) for q in quarantined] == lines
    assert read_table(spark, built_warehouse, "cdc_events").where(f"topic = '{BAD_TOPIC}'").count() == 0
