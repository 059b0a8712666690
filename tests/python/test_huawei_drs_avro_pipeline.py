"""Huawei DRS Avro end to end: schemaless records written by `helpers.write_drs_avro_cases` with fastavro and
the test writer schema (sample_data/drs_record.avsc, which follows the DRS JSON field list of seed
004; the vendor's record.avsc is not public), landed one `.bin` file per message, `dbt build`, read back.
Expected rows are written out by hand from the records in helpers.py.
"""

import io
import json
from datetime import datetime

import fastavro
from helpers import DRS_AVRO_SCHEMA, DRS_AVRO_TYPES, comparable_event_rows, dbt_show_in_process, event_rows, read_table

TOPIC = "huawei_drs_avro.records"
BAD_TOPIC = "huawei_drs_avro.bad_records"

# c12 is varbinary (JDBC -3): "[106, 103, 111]" is b"jgo", base64 "amdv"; "[]" is empty.
ROW_103 = {"id": "103", "c1": "华为云huaweicloud", "c5": "1624614713.201", "c12": "amdv"}
ROW_104 = {"id": "104", "c1": "cf3f70a7-7565-44b0-ae3c-83bec549ea8e:104", "c5": None, "c12": ""}
COMMON = {
    "source_format": "huawei_drs_avro",
    "topic": TOPIC,
    "kafka_partition": 0,
    "row_index": 0,
    "source_db_type": "mysql",
    "source_database": "test01",
    "source_schema": None,
    "source_table": "test",
    "column_types": DRS_AVRO_TYPES,
    "primary_key": ["id"],
    "ddl_sql": None,
}
EXPECTED_EVENTS = [
    {
        **COMMON,
        "kafka_offset": 0,
        "op": "c",
        "before": None,
        "after": ROW_103,
        "event_ts": datetime(2021, 6, 25, 9, 51, 52),
        "source_seq": 27676,
        "source_position": "27676",
    },
    {
        **COMMON,
        "kafka_offset": 1,
        "op": "u",
        "before": ROW_103,
        "after": ROW_104,
        "event_ts": datetime(2021, 6, 25, 9, 51, 53),
        "source_seq": 27677,
        "source_position": "27677",
    },
    {
        # A DELETE carries its row in `old`, as in DRS JSON; es 0 is no time.
        **COMMON,
        "kafka_offset": 2,
        "op": "d",
        "before": ROW_104,
        "after": None,
        "event_ts": None,
        "source_seq": 27678,
        "source_position": "27678",
    },
    {
        **COMMON,
        "kafka_offset": 3,
        "op": "ddl",
        "before": None,
        "after": None,
        "column_types": None,
        "primary_key": [],
        "event_ts": datetime(2024, 12, 12, 10, 6, 46, 282000),
        "source_seq": 0,
        "source_position": "0",
        "ddl_sql": "CREATE TABLE `test` ( `id` int(11) NOT NULL, PRIMARY KEY (`id`))",
    },
]
NOT_A_RECORD = f"not a Huawei DRS Avro record of the writer schema {DRS_AVRO_SCHEMA}"
NO_SCHEMA = "no writer schema configured for Huawei DRS Avro (var huawei_drs_avro_schema / env CDC_DRS_AVRO_SCHEMA)"


def test_avro_records_become_these_change_events(spark, built_warehouse):
    assert comparable_event_rows(spark, built_warehouse, TOPIC) == EXPECTED_EVENTS


def test_bad_records_are_quarantined_with_reason_and_bytes(spark, built_warehouse):
    quarantined = (
        read_table(spark, built_warehouse, "cdc_quarantine")
        .where(f"topic = '{BAD_TOPIC}'")
        .orderBy("kafka_offset")
        .collect()
    )
    assert [(q.source_format, q.kafka_offset) for q in quarantined] == [("huawei_drs_avro", n) for n in range(4)]
    truncated, garbage, trailing, unknown_op = quarantined
    assert truncated.reason == NOT_A_RECORD + " (from_avro could not read it)"
    assert garbage.reason == NOT_A_RECORD + " (from_avro could not read it)"
    assert trailing.reason == NOT_A_RECORD + ": 1 bytes left after the record"
    assert unknown_op.reason == "unknown operation type: MERGE"
    assert bytes(garbage.raw_value) == b"\xff\xfe\xfd garbage, not an Avro record"
    assert event_rows(spark, built_warehouse, BAD_TOPIC) == []


def writer_schema_reason(spark, dbt_work_dir, schema_path: str) -> str:
    sql = "select {{ cdc_sql_string(huawei_drs_avro_writer_schema().error) }} as reason"
    (row,) = dbt_show_in_process(spark, dbt_work_dir, sql, dbt_vars={"huawei_drs_avro_schema": schema_path})
    return row["reason"]


def test_without_a_writer_schema_every_message_gets_a_reason(spark, dbt_work_dir):
    assert writer_schema_reason(spark, dbt_work_dir, "") == NO_SCHEMA


def test_an_unreadable_writer_schema_is_a_reason_not_a_failed_build(spark, dbt_work_dir, tmp_path):
    missing = tmp_path / "missing.avsc"
    assert writer_schema_reason(spark, dbt_work_dir, str(missing)).startswith(
        f"writer schema {missing} cannot be read: FileNotFoundError"
    )


def test_images_written_as_avro_bytes_become_base64_and_absent_fields_null(spark, dbt_work_dir, tmp_path):
    # A writer schema other than the sample's: no ts, no sql, images of bytes, fields in another order.
    image = ["null", {"type": "array", "items": {"type": "map", "values": ["null", "bytes"]}}]
    schema = {
        "type": "record",
        "name": "Record",
        "fields": [
            {"name": "type", "type": "string"},
            {"name": "id", "type": "long"},
            {"name": "table", "type": "string"},
            {"name": "data", "type": image},
            {"name": "old", "type": image},
        ],
    }
    path = tmp_path / "bytes_record.avsc"
    path.write_text(json.dumps(schema))
    buffer = io.BytesIO()
    record = {"type": "INSERT", "id": 9, "table": "t", "data": [{"c": b"jgo", "n": None}], "old": None}
    fastavro.schemaless_writer(buffer, fastavro.parse_schema(schema), record)
    sql = f"""
        {{% set writer = huawei_drs_avro_writer_schema() %}}
        select
            message.type, message.id, message.table, message.ts, message.sql, message.old,
            to_json(message.data) as data, error
        from (
            select
                {{{{ huawei_drs_avro_message('record', writer) }}}} as message,
                {{{{ huawei_drs_avro_error('value', 'record', writer) }}}} as error
            from (
                select value, {{{{ huawei_drs_avro_record('value', writer) }}}} as record
                from values (unhex('{buffer.getvalue().hex()}')) as messages (value)
            ) as records
        ) as messages
    """
    (row,) = dbt_show_in_process(spark, dbt_work_dir, sql, dbt_vars={"huawei_drs_avro_schema": str(path)})
    assert row == {
        "type": "INSERT",
        "id": 9,
        "table": "t",
        "ts": None,
        "sql": None,
        "old": None,
        "data": '[{"c":"amdv","n":null}]',
        "error": None,
    }
