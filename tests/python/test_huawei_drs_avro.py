"""Huawei DRS Avro: schemaless records written with a schema that follows the DRS JSON field list, using
the values of the vendor's JSON UPDATE example (seed 004), decoded back to DRS JSON."""

import io
import json
from pathlib import Path

import fastavro
import pytest

from python_udfs.huawei_drs_avro import avro_to_json_or_error, load_schema

SCHEMA_PATH = str(Path(__file__).parents[2] / "sample_data" / "drs_record.avsc")

VENDOR_UPDATE = {
    "id": 27677,
    "es": 1624614713000,
    "ts": 1625058726990,
    "database": "test01",
    "table": "test ",
    "type": "UPDATE",
    "isDdl": False,
    "sql": "",
    "mysqlType": {"id": "int", "c10": "varchar", "c9": "decimal", "c5": "timestamp"},
    "sqlType": {"id": 4, "c10": 12, "c9": 3, "c5": 93},
    "data": [{"id": "104", "c10": "华为云huaweicloud", "c9": "9874510357", "c5": "1624614713.201"}],
    "old": [{"id": "103", "c10": "华为云huaweicloud", "c9": "9874510357", "c5": None}],
    "pkNames": ["id"],
}


def schemaless(record: dict) -> bytes:
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, load_schema(SCHEMA_PATH), record)
    return buffer.getvalue()


def test_a_record_reads_back_as_the_drs_json_it_carries():
    text, error = avro_to_json_or_error(schemaless(VENDOR_UPDATE), SCHEMA_PATH)
    assert error is None
    assert json.loads(text) == VENDOR_UPDATE


def test_ddl_record_with_null_images():
    ddl = {
        **VENDOR_UPDATE,
        "type": "DDL",
        "isDdl": True,
        "sql": "ALTER TABLE t ADD c int",
        "data": None,
        "old": None,
        "mysqlType": None,
        "sqlType": None,
        "pkNames": None,
    }
    text, error = avro_to_json_or_error(schemaless(ddl), SCHEMA_PATH)
    assert (json.loads(text), error) == (ddl, None)


@pytest.mark.parametrize(
    ("value", "reason_start"),
    [
        (None, "message value is null"),
        (b"", "not a Huawei DRS Avro record for drs_record.avsc: EOFError"),
        (b"\x02", "not a Huawei DRS Avro record for drs_record.avsc: EOFError"),
    ],
)
def test_bad_bytes_get_a_reason(value, reason_start):
    text, error = avro_to_json_or_error(value, SCHEMA_PATH)
    assert text is None
    assert error.startswith(reason_start)


def test_trailing_bytes_are_not_ignored():
    text, error = avro_to_json_or_error(schemaless(VENDOR_UPDATE) + b"\x00", SCHEMA_PATH)
    assert text is None
    assert error == "not a Huawei DRS Avro record for drs_record.avsc: ValueError: 1 bytes left after the record"


def test_truncated_record():
    text, error = avro_to_json_or_error(schemaless(VENDOR_UPDATE)[:-5], SCHEMA_PATH)
    assert text is None
    assert error.startswith("not a Huawei DRS Avro record for drs_record.avsc: ")
