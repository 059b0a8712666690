"""Huawei DRS JSON of DDS (MongoDB) sources (`huawei_drs_mongo_json`) end to end: landed, `dbt build`, read back.

`seed_004_dds.jsonl` holds the five MongoDB examples of the vendor document (seed 004: insert, replace,
$set update, $unset+$set update, remove) exactly as written, each pretty-printed example joined onto one line
and its `// …操作` comment line dropped. `own_shell_types.jsonl` is OUR OWN file, in the same shape, for what
the seed does not show: shell constructors other than ObjectId (NumberLong, ISODate, NumberDecimal), a null
field, a nested document, non-ASCII text, and a replacement whose `value` has no _id. Expected rows are
written out by hand: each image value is the field's Extended JSON v2 relaxed text (compact), strings quoted.
"""

from datetime import datetime

from helpers import comparable_event_rows, read_table

SEED_TOPIC = "huawei_drs_mongo_json.seed_004_dds"
OWN_TOPIC = "huawei_drs_mongo_json.own_shell_types"
BAD_TOPIC = "huawei_drs_mongo_json.bad_messages"

OID = '{"$oid":"64650cf67dc36a464e76e583"}'
COMMON = {
    "source_format": "huawei_drs_mongo_json",
    "kafka_partition": 0,
    "row_index": 0,
    "source_db_type": "mongodb",
    "source_schema": None,
    "column_types": None,
    "primary_key": ["_id"],
    "ddl_sql": None,
}
SEED = {**COMMON, "topic": SEED_TOPIC, "source_database": "ljx", "source_table": "ljx"}
EXPECTED_SEED_EVENTS = [
    {
        **SEED,
        "kafka_offset": 0,
        "op": "c",
        "before": None,
        "after": {"_id": OID, "c1": '"baz"', "tags": '["mongodb","database","NoSQL"]'},
        # clusterTime 1684344064:1, seconds * 10^10 + increment
        "event_ts": datetime(2023, 5, 17, 17, 21, 4),
        "source_seq": 16843440640000000001,
        "source_position": "1684344064:1",
    },
    {
        **SEED,
        "kafka_offset": 1,
        "op": "u",
        "before": {"_id": OID},
        "after": {"_id": OID, "c1": '"sss"'},
        "event_ts": datetime(2023, 5, 17, 17, 35, 4),
        "source_seq": 16843449040000000009,
        "source_position": "1684344904:9",
    },
    {
        **SEED,
        "kafka_offset": 2,
        "op": "u",
        "before": {"_id": OID},
        "after": {"_id": OID, "c1": '"aaa"'},
        "event_ts": datetime(2023, 5, 17, 17, 42, 45),
        "source_seq": 16843453650000000001,
        "source_position": "1684345365:1",
    },
    {
        **SEED,
        "kafka_offset": 3,
        "op": "u",
        "before": {"_id": OID},
        # $unset c1 -> present with a null value; $set column1
        "after": {"_id": OID, "column1": '"aaa"', "c1": None},
        "event_ts": datetime(2023, 5, 17, 17, 47, 28),
        "source_seq": 16843456480000000001,
        "source_position": "1684345648:1",
    },
    {
        **SEED,
        "kafka_offset": 4,
        "op": "d",
        "before": {"_id": OID},
        "after": None,
        "event_ts": datetime(2023, 5, 17, 17, 56, 49),
        "source_seq": 16843462090000000001,
        "source_position": "1684346209:1",
    },
]
OWN = {**COMMON, "topic": OWN_TOPIC, "source_database": "shop", "source_table": "orders"}
EXPECTED_OWN_EVENTS = [
    {
        **OWN,
        "kafka_offset": 0,
        "op": "c",
        "before": None,
        "after": {
            "_id": "7",
            "name": '"小明"',
            "placed": '{"$date":"2023-05-17T17:21:04.000Z"}',
            "total": '{"$numberDecimal":"19.90"}',
            "note": None,
            "addr": '{"city":"Shenzhen","zip":"518000"}',
            "qty": "3",
        },
        "event_ts": datetime(2023, 5, 17, 19, 0, 0),
        "source_seq": 16843500000000000002,
        "source_position": "1684350000:2",
    },
    {
        **OWN,
        "kafka_offset": 1,
        "op": "u",
        "before": {"_id": "7"},
        "after": {"name": '"小春"', "qty": "4", "_id": "7"},
        "event_ts": datetime(2023, 5, 17, 19, 1, 0),
        "source_seq": 16843500600000000001,
        "source_position": "1684350060:1",
    },
]

SHELL_ERROR = "not a MongoDB shell document: "
EXPECTED_QUARANTINE = [
    (0, "not a Huawei DRS MongoDB JSON message (malformed JSON or wrong field types)"),
    (1, "unknown operation type: MERGE"),
    (2, "value: " + SHELL_ERROR + "bad arguments to ObjectId: an ObjectId is 24 hex digits at character 16"),
    (3, "clusterTime not seconds:increment: 2023-05-17T17:21:04"),
    (4, "unsupported update operator: $inc"),
    (5, "value is not a document"),
    (6, "INSERT without value"),
    (7, "where: " + SHELL_ERROR + "expected a value at character 6"),
]


def event_rows(spark, warehouse, topic: str) -> list[dict]:
    return comparable_event_rows(spark, warehouse, topic)


def test_vendor_examples_become_these_change_events(spark, built_warehouse):
    assert event_rows(spark, built_warehouse, SEED_TOPIC) == EXPECTED_SEED_EVENTS


def test_shell_constructors_nulls_and_replacement_without_id(spark, built_warehouse):
    assert event_rows(spark, built_warehouse, OWN_TOPIC) == EXPECTED_OWN_EVENTS


def test_a_whole_document_names_its_fields_and_an_operator_update_none(spark, built_warehouse):
    """row_columns: an insert's and a replacement's fields are the document's (the replacement of the own file has
    no _id in value: where gives the image its _id); $set / $unset and a delete name no fields."""
    events = read_table(spark, built_warehouse, "cdc_events").where(f"topic in ('{SEED_TOPIC}', '{OWN_TOPIC}')")
    named = {(row.topic, row.kafka_offset): row.row_columns for row in events.collect()}
    assert [named[(SEED_TOPIC, offset)] for offset in range(5)] == [
        ["_id", "c1", "tags"],
        ["_id", "c1"],
        None,
        None,
        None,
    ]
    assert named[(OWN_TOPIC, 1)] == ["name", "qty"]


def test_bad_messages_are_quarantined_with_reason_and_bytes(spark, built_warehouse):
    quarantined = read_table(spark, built_warehouse, "cdc_quarantine").where(f"topic = '{BAD_TOPIC}'")
    rows = quarantined.orderBy("kafka_offset").collect()
    assert [(row.kafka_offset, row.reason) for row in rows] == EXPECTED_QUARANTINE
    assert all(row.source_format == "huawei_drs_mongo_json" for row in rows)
    assert bytes(rows[1].raw_value).startswith(b'{"id": 600,')
    assert read_table(spark, built_warehouse, "cdc_events").where(f"topic = '{BAD_TOPIC}'").count() == 0
