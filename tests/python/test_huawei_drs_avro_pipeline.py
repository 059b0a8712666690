"""Huawei DRS Avro end to end: schemaless records written by `conftest.write_drs_avro_cases` with fastavro and
the test writer schema (sample_data/drs_record.avsc, which follows the DRS JSON field list of seed
004; the vendor's record.avsc is not public), landed one `.bin` file per message, `dbt build`, read back.
Expected rows are written out by hand from the records in conftest.
"""

from datetime import datetime

from conftest import DRS_AVRO_RECORDS, DRS_AVRO_TYPES, dbt_show_in_process, drs_avro_record
from test_huawei_drs_json import comparable_event_rows, event_rows, read_table

from python_udfs.huawei_drs_avro import avro_to_json_or_error

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
NOT_A_RECORD = "not a Huawei DRS Avro record for drs_record.avsc: "
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
    assert truncated.reason.startswith(NOT_A_RECORD + "EOFError")
    assert garbage.reason.startswith(NOT_A_RECORD)
    assert trailing.reason == NOT_A_RECORD + "ValueError: 1 bytes left after the record"
    assert unknown_op.reason == "unknown operation type: MERGE"
    assert bytes(garbage.raw_value) == b"\xff\xfe\xfd garbage, not an Avro record"
    assert event_rows(spark, built_warehouse, BAD_TOPIC) == []


def test_without_a_writer_schema_every_message_gets_a_reason_and_the_udf_is_not_called(spark, dbt_work_dir):
    sql = "select {{ huawei_drs_avro_decoded('value') }}.error as reason from values (cast('x' as binary)) as t(value)"
    rows = dbt_show_in_process(spark, dbt_work_dir, sql, dbt_vars={"huawei_drs_avro_schema": ""})
    # The UDF with an empty path would say "writer schema  cannot be read": the reason shows it was not called.
    assert rows == [{"reason": NO_SCHEMA}]


def test_an_unreadable_writer_schema_is_a_reason_not_an_exception(tmp_path):
    missing = tmp_path / "missing.avsc"
    text, error = avro_to_json_or_error(drs_avro_record(DRS_AVRO_RECORDS["insert"]), str(missing))
    assert text is None
    assert error.startswith(f"writer schema {missing} cannot be read: FileNotFoundError")
