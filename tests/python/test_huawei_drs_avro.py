"""Huawei DRS Avro writer schemas: what the staging model reads before from_avro plans with the schema.
A schema Spark could not plan with is refused with a reason, so every message is quarantined with it
instead of failing the build of every DRS format."""

import json
from pathlib import Path

import pytest

from python_udfs.huawei_drs_avro import writer_schema_or_error

SCHEMA_PATH = Path(__file__).parents[2] / "sample_data" / "drs_record.avsc"


def image_field(name: str, values: object) -> dict:
    return {"name": name, "type": ["null", {"type": "array", "items": {"type": "map", "values": values}}]}


def write_schema(tmp_path: Path, fields: list[dict]) -> str:
    path = tmp_path / "record.avsc"
    path.write_text(json.dumps({"type": "record", "name": "Record", "fields": fields}))
    return str(path)


def test_the_sample_schema_gives_its_text_and_fields():
    text, fields, binary_image_fields, error = writer_schema_or_error(str(SCHEMA_PATH))
    assert error is None
    assert json.loads(text) == json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    assert "\n" not in text
    assert fields == [
        "id", "es", "ts", "database", "table", "type", "isDdl", "sql",
        "mysqlType", "sqlType", "data", "old", "pkNames",
    ]  # fmt: skip
    assert binary_image_fields == []


def test_images_written_as_bytes_are_named(tmp_path):
    path = write_schema(
        tmp_path, [{"name": "id", "type": "long"}, image_field("data", ["null", "bytes"]), image_field("old", "string")]
    )
    assert writer_schema_or_error(path)[1:] == (["id", "data", "old"], ["data"], None)


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (None, "cannot be read: FileNotFoundError"),
        ("{not json", "cannot be read: JSONDecodeError"),
        ('{"type": "record", "name": "R", "fields": [{"name": "id", "type": "no_such_type"}]}', "cannot be read: "),
        ('"string"', "is not an Avro record schema"),
        ('{"type": "record", "name": "R", "fields": []}', "is not an Avro record schema with fields"),
        (
            json.dumps({"type": "record", "name": "R", "fields": [image_field("data", "int")]}),
            "field data is not an array of maps of string or bytes",
        ),
    ],
)
def test_a_schema_spark_could_not_plan_with_is_a_reason(tmp_path, content, reason):
    path = tmp_path / "record.avsc"
    if content is not None:
        path.write_text(content)
    text, fields, binary_image_fields, error = writer_schema_or_error(str(path))
    assert (text, fields, binary_image_fields) == (None, [], [])
    assert error.startswith(f"writer schema {path}")
    assert reason in error
