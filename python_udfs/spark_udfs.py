"""Registers the project's decoders as Arrow-batched Spark SQL functions.

Each function returns a struct with an ``error`` field instead of raising, so one bad message
never fails a batch: its reason travels with the row to the quarantine model.
"""

import os
from collections.abc import Callable

import pyarrow as pa
from google.protobuf.message import DecodeError
from pyspark import SparkFiles
from pyspark.sql import SparkSession
from pyspark.sql.functions import arrow_udf
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)

from python_udfs import tencent_dts
from python_udfs.huawei_drs_avro import writer_schema_or_error
from python_udfs.mongo_shell import shell_to_fields


def _struct(**fields: DataType) -> StructType:
    return StructType([StructField(name, data_type) for name, data_type in fields.items()])


# A MongoDB shell document's top-level fields as Extended JSON text, or the reason it does not parse.
DOCUMENT_FIELDS = _struct(fields=MapType(StringType(), StringType()), error=StringType())

AVRO_WRITER_SCHEMA = _struct(
    json=StringType(), fields=ArrayType(StringType()), binary_image_fields=ArrayType(StringType()), error=StringType()
)

DTS_ENVELOPE = _struct(version=IntegerType(), total=LongType(), index=LongType(), data=BinaryType(), error=StringType())

_TEXT_MAP = MapType(StringType(), StringType())
DTS_EVENT = _struct(
    message_type=StringType(),
    source_type=StringType(),
    timestamp=LongType(),
    file_name=StringType(),
    position=StringType(),
    gtid=StringType(),
    schema_name=StringType(),
    table_name=StringType(),
    seq_id=StringType(),
    dml_type=StringType(),
    column_names=ArrayType(StringType()),
    column_types=ArrayType(StringType()),
    key_columns=ArrayType(StringType()),
    before=_TEXT_MAP,
    after=_TEXT_MAP,
    ddl_sql=StringType(),
)
DTS_ENTRIES = _struct(events=ArrayType(DTS_EVENT), error=StringType())
DTS_EVENT_ARROW = to_arrow_type(DTS_EVENT)


def _arrow(rows: list[dict], spark_type: StructType) -> pa.Array:
    return pa.array(rows, type=to_arrow_type(spark_type))


def _envelope(value: bytes | None) -> dict:
    if value is None:
        return {"error": "message value is null"}
    try:
        version, total, index, data = tencent_dts.parse_envelope(value)
    except DecodeError:
        return {"error": "not a Tencent DTS Envelope (protobuf decode failed)"}
    return {"version": version, "total": total, "index": index, "data": data}


def cdc_dts_envelope(values: pa.Array) -> pa.Array:
    """Kafka message value -> the Envelope's version, total, index and data."""
    return _arrow([_envelope(value) for value in values.to_pylist()], DTS_ENVELOPE)


def cdc_dts_decode(data: pa.Array) -> pa.Array:
    """Serialized Entries (an envelope's data, or a split group's data joined) -> events, built field by
    field (tencent_dts.EventColumns): Arrow receives one list per field, not a dict per event."""
    columns = tencent_dts.EventColumns()
    offsets = [0]
    errors = []
    for blob in data.to_pylist():
        errors.append(columns.add_entries_or_error(blob))
        offsets.append(len(columns))
    events = pa.StructArray.from_arrays(
        [pa.array(columns.columns[field.name], type=field.type) for field in DTS_EVENT_ARROW],
        fields=list(DTS_EVENT_ARROW),
    )
    event_lists = pa.ListArray.from_arrays(
        pa.array(offsets, pa.int32()), events, mask=pa.array([error is not None for error in errors])
    )
    return pa.StructArray.from_arrays([event_lists, pa.array(errors, pa.string())], names=["events", "error"])


def cdc_mongo_shell_fields(documents: pa.Array) -> pa.Array:
    """MongoDB shell-syntax text (Huawei DRS DDS `value` / `where`) -> top-level field -> Extended JSON text."""
    parsed = [shell_to_fields(text) for text in documents.to_pylist()]
    return _arrow([{"fields": fields, "error": error} for fields, error in parsed], DOCUMENT_FIELDS)


def cdc_drs_avro_writer_schema(paths: pa.Array) -> pa.Array:
    """Path of a Huawei DRS Avro writer schema -> its JSON text and fields, for from_avro (one row per model)."""
    rows = []
    for path in paths.to_pylist():
        text, fields, binary_image_fields, error = writer_schema_or_error(_shipped_copy_or(path))
        rows.append({"json": text, "fields": fields, "binary_image_fields": binary_image_fields, "error": error})
    return _arrow(rows, AVRO_WRITER_SCHEMA)


def _shipped_copy_or(path: str | None) -> str | None:
    """The executor's copy of a file the session ships (spark.files: the cluster profile), else the path."""
    if path:
        shipped = SparkFiles.get(os.path.basename(path))
        if os.path.isfile(shipped):
            return shipped
    return path


UDFS: dict[str, tuple[Callable[..., pa.Array], StructType]] = {
    "cdc_dts_envelope": (cdc_dts_envelope, DTS_ENVELOPE),
    "cdc_dts_decode": (cdc_dts_decode, DTS_ENTRIES),
    "cdc_mongo_shell_fields": (cdc_mongo_shell_fields, DOCUMENT_FIELDS),
    "cdc_drs_avro_writer_schema": (cdc_drs_avro_writer_schema, AVRO_WRITER_SCHEMA),
}


def register_udfs(spark: SparkSession) -> None:
    for name, (function, return_type) in UDFS.items():
        spark.udf.register(name, arrow_udf(function, returnType=return_type))
