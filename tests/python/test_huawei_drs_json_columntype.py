"""Huawei DRS JSON, the Oracle / PostgreSQL / GaussDB / SQL Server form (`columnType`, `dbType`, `schema`,
`opType`; seed 004, third field table), end to end through `dbt build`.

- `vendor_examples/huawei_drs_json/seed_004_gaussdb.jsonl`: the vendor's GaussDB Primary/Standby UPDATE,
  verbatim (joined onto one line).
- `vendor_examples/huawei_drs_json/columntype_form.jsonl`: hand-written messages following that field table,
  one per source type the vendor lists: PostgreSQL (bytea as `\\x` hex, a value that is not hex, an empty
  bytea), Oracle (DELETE with `opType` only and the empty `database` the vendor describes), SQL Server, and
  GaussDB distributed (upper-case type name and hex digits).
Expected rows are written out by hand.
"""

from datetime import datetime

from helpers import comparable_event_rows

VENDOR_TOPIC = "huawei_drs_json.seed_004_gaussdb"
FORM_TOPIC = "huawei_drs_json.columntype_form"

GAUSSDB_TYPES = {
    "timestamp_column": "timestamp without time zone",
    "tstzrange_column": "tstzrange",
    "int4range_column": "int4range",
    "char_column": "character",
    "jsonb_column": "json",
    "boolean_column": "boolean",
    "bit_column": "bit",
    "smallint_column": "smallint",
    "bytea_column": "bytea",
}
GAUSSDB_BEFORE = {
    "timestamp_column": "2014-07-02 06:14:00.742",
    "tstzrange_column": '("2010-01-01 14:30:00+08","2010-01-01 15:30:00+08")',
    "int4range_column": "[11,20)",
    "char_column": "g",
    "jsonb_column": '{"key1": "value1", "key2": "value2"}',
    "boolean_column": "true",
    "bit_column": "1",
    "smallint_column": "12",
    # hex 62797465615f64617461 is "bytea_data"
    "bytea_column": "Ynl0ZWFfZGF0YQ==",
}
GAUSSDB_AFTER = {**GAUSSDB_BEFORE, "timestamp_column": "2021-12-16 12:31:49.344365", "boolean_column": "false"}

EXPECTED_VENDOR_EVENTS = [
    {
        "source_format": "huawei_drs_json",
        "topic": VENDOR_TOPIC,
        "kafka_partition": 0,
        "kafka_offset": 0,
        "row_index": 0,
        "source_db_type": "gaussdb",
        "source_database": "database01",
        "source_schema": "schema01",
        "source_table": "table01",
        "op": "u",
        "before": GAUSSDB_BEFORE,
        "after": GAUSSDB_AFTER,
        "column_types": GAUSSDB_TYPES,
        "primary_key": [],
        "event_ts": datetime(2021, 12, 16, 3, 43, 7),
        "source_seq": 332,
        "source_position": "332",
        "ddl_sql": None,
    }
]

FORM = {"source_format": "huawei_drs_json", "topic": FORM_TOPIC, "kafka_partition": 0, "ddl_sql": None}
PG_TYPES = {"id": "integer", "payload": "bytea", "empty_payload": "bytea", "note": "text"}
PG = {
    **FORM,
    "kafka_offset": 0,
    "source_db_type": "postgresql",
    "source_database": "shop",
    "source_schema": "public",
    "source_table": "files",
    "op": "c",
    "before": None,
    "column_types": PG_TYPES,
    "primary_key": ["id"],
    # PostgreSQL `es` is the commit time of the previous transaction: not this change's time.
    "event_ts": None,
    "source_seq": 501,
    "source_position": "501",
}
EXPECTED_FORM_EVENTS = [
    # "\x68656c6c6f" is "hello"; an empty bytea stays empty; a text column's hex-looking text stays text.
    {**PG, "row_index": 0, "after": {"id": "1", "payload": "aGVsbG8=", "empty_payload": "", "note": "62797465"}},
    # Not hex: kept as it came.
    {**PG, "row_index": 1, "after": {"id": "2", "payload": "not hex", "empty_payload": None, "note": None}},
    {
        **FORM,
        "kafka_offset": 1,
        "row_index": 0,
        "source_db_type": "oracle",
        "source_database": None,
        "source_schema": "SCOTT",
        "source_table": "EMP",
        "op": "d",
        "before": {"EMPNO": "7369", "ENAME": "SMITH"},
        "after": None,
        "column_types": {"EMPNO": "NUMBER", "ENAME": "VARCHAR2"},
        "primary_key": ["EMPNO"],
        "event_ts": datetime(2021, 12, 16, 3, 43, 8),
        "source_seq": 502,
        "source_position": "502",
    },
    {
        **FORM,
        "kafka_offset": 2,
        "row_index": 0,
        "source_db_type": "sqlserver",
        "source_database": "sales",
        "source_schema": "dbo",
        "source_table": "invoices",
        "op": "c",
        "before": None,
        "after": {"id": "9", "amount": "12.50"},
        "column_types": {"id": "int", "amount": "decimal"},
        "primary_key": ["id"],
        "event_ts": datetime(2021, 12, 16, 3, 43, 9),
        "source_seq": 503,
        "source_position": "503",
    },
    {
        **FORM,
        "kafka_offset": 3,
        "row_index": 0,
        "source_db_type": "gaussdb",
        "source_database": "d1",
        "source_schema": "s1",
        "source_table": "t1",
        "op": "c",
        "before": None,
        # DEADBEEF as base64
        "after": {"id": "1", "blob_column": "3q2+7w=="},
        "column_types": {"id": "integer", "blob_column": "BYTEA"},
        "primary_key": [],
        "event_ts": datetime(2021, 12, 16, 3, 43, 10),
        "source_seq": 504,
        "source_position": "504",
    },
]


def test_vendor_gaussdb_example_becomes_this_change_event(spark, built_warehouse):
    assert comparable_event_rows(spark, built_warehouse, VENDOR_TOPIC) == EXPECTED_VENDOR_EVENTS


def test_oracle_postgresql_sqlserver_gaussdb_messages_become_these_change_events(spark, built_warehouse):
    assert comparable_event_rows(spark, built_warehouse, FORM_TOPIC) == EXPECTED_FORM_EVENTS
