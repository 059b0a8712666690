"""Huawei Cloud DRS Avro: the DRS JSON record (huawei_drs_json) written as one schemaless Avro record with the
task's writer schema (sample_data/drs_record.avsc is the project's)."""

import io
import json
from pathlib import Path

DRS_RECORD_SCHEMA = Path(__file__).resolve().parents[1] / "sample_data" / "drs_record.avsc"


def writer_schema(path: Path = DRS_RECORD_SCHEMA) -> dict:
    import fastavro

    return fastavro.parse_schema(json.loads(path.read_text()))


def record(message: dict, schema: dict) -> bytes:
    """The message (a huawei_drs_json message, or any record the schema admits) as one Kafka value."""
    import fastavro

    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, schema, message)
    return buffer.getvalue()
