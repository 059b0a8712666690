"""Huawei DRS Avro records, decoded with the writer schema and rendered as DRS JSON text.

DRS writes each Kafka message as one schemaless Avro record (no container header): the writer schema
is needed to read it. The vendor ships that schema only as a download (record.rar) that is not public
here, so the schema is a file the user names (dbt var ``huawei_drs_avro_schema``). The record is rendered
as the JSON object DRS would have written in its JSON format, so one staging shape reads both; a writer
schema therefore names its fields as DRS JSON does (id, es, ts, database, table, type, isDdl, sql,
mysqlType, sqlType, data, old, pkNames). Binary values become base64, decimals exact text.
"""

import base64
import io
import json
from datetime import date, datetime, time
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any
from uuid import UUID

import fastavro


@cache
def load_schema(path: str) -> Any:
    """The parsed writer schema in a .avsc file, read once per process."""
    return fastavro.parse_schema(json.loads(Path(path).read_text(encoding="utf-8")))


def _json_value(value: Any) -> Any:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, UUID):
        return str(value)
    raise TypeError(f"no JSON form for {type(value).__name__}")


def record_to_drs_json(value: bytes, schema: Any) -> str:
    """One schemaless Avro record as JSON text; raises on bytes that do not fit the schema."""
    stream = io.BytesIO(value)
    record = fastavro.schemaless_reader(stream, schema)
    if stream.tell() != len(value):
        raise ValueError(f"{len(value) - stream.tell()} bytes left after the record")
    return json.dumps(record, default=_json_value, ensure_ascii=False)


def avro_to_json_or_error(value: bytes | None, schema_path: str) -> tuple[str | None, str | None]:
    """(json, None) or (None, reason); never raises for bad message bytes."""
    if value is None:
        return None, "message value is null"
    try:
        schema = load_schema(schema_path)
    except (OSError, ValueError, fastavro.schema.SchemaParseException) as exc:
        return None, f"writer schema {schema_path} cannot be read: {type(exc).__name__}: {exc}"
    try:
        return record_to_drs_json(value, schema), None
    except (EOFError, ValueError, TypeError, IndexError, UnicodeDecodeError, OverflowError) as exc:
        return None, f"not a Huawei DRS Avro record for {Path(schema_path).name}: {type(exc).__name__}: {exc}"
