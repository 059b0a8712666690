"""Registers the project's decoders as Arrow-batched Spark SQL functions.

Each function returns a struct with an ``error`` field instead of raising, so one bad message
never fails a batch: its reason travels with the row to the quarantine model.
"""

from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc
from google.protobuf.message import DecodeError
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
from python_udfs.mongo_shell import shell_to_extended_json
from python_udfs.strict_base64 import first_invalid_base64
from python_udfs.text import decode_utf8


def _struct(**fields: DataType) -> StructType:
    return StructType([StructField(name, data_type) for name, data_type in fields.items()])


DECODED_TEXT = _struct(text=StringType(), error=StringType())

# A payload rendered as JSON text for from_json in SQL, or the reason it could not be.
EXTENDED_JSON = _struct(json=StringType(), error=StringType())

# Only an error: null when every checked value is valid.
CHECK_RESULT = _struct(error=StringType())

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


def _arrow(rows: list[dict], spark_type: StructType) -> pa.Array:
    return pa.array(rows, type=to_arrow_type(spark_type))


def cdc_decode_utf8(values: pa.Array) -> pa.Array:
    """Message bytes to UTF-8 text: Arrow validates whole batches, rows are decoded one by one
    only in a batch holding a null, invalid UTF-8 or a byte-order mark."""
    if values.null_count == 0:
        try:
            texts = values.cast(pa.string())
        except pa.ArrowInvalid:
            texts = None
        if texts is not None and not pc.any(pc.starts_with(texts, "\ufeff")).as_py():
            return pa.StructArray.from_arrays([texts, pa.nulls(len(values), pa.string())], names=["text", "error"])
    decoded = [decode_utf8(v) for v in values.to_pylist()]
    return _arrow([{"text": text, "error": error} for text, error in decoded], DECODED_TEXT)


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
    """Serialized Entries (an envelope's data, or a split group's data joined) -> events."""
    decoded = [tencent_dts.decode_entries_or_error(blob) for blob in data.to_pylist()]
    return _arrow([{"events": events, "error": error} for events, error in decoded], DTS_ENTRIES)


def cdc_mongo_shell_to_json(documents: pa.Array) -> pa.Array:
    """MongoDB shell-syntax text (Huawei DRS DDS `value` / `where`) -> Extended JSON v2 relaxed."""
    converted = [shell_to_extended_json(text) for text in documents.to_pylist()]
    return _arrow([{"json": text, "error": error} for text, error in converted], EXTENDED_JSON)


def cdc_drs_avro_writer_schema(paths: pa.Array) -> pa.Array:
    """Path of a Huawei DRS Avro writer schema -> its JSON text and fields, for from_avro (one row per model)."""
    rows = []
    for path in paths.to_pylist():
        text, fields, binary_image_fields, error = writer_schema_or_error(path)
        rows.append({"json": text, "fields": fields, "binary_image_fields": binary_image_fields, "error": error})
    return _arrow(rows, AVRO_WRITER_SCHEMA)


def cdc_check_base64(values: pa.Array) -> pa.Array:
    """map<string,string> of name -> text: the first value (in name order) that is not strict base64."""
    return _arrow([{"error": first_invalid_base64(named)} for named in values.to_pylist()], CHECK_RESULT)


UDFS: dict[str, tuple[Callable[..., pa.Array], StructType]] = {
    "cdc_decode_utf8": (cdc_decode_utf8, DECODED_TEXT),
    "cdc_dts_envelope": (cdc_dts_envelope, DTS_ENVELOPE),
    "cdc_dts_decode": (cdc_dts_decode, DTS_ENTRIES),
    "cdc_mongo_shell_to_json": (cdc_mongo_shell_to_json, EXTENDED_JSON),
    "cdc_drs_avro_writer_schema": (cdc_drs_avro_writer_schema, AVRO_WRITER_SCHEMA),
    "cdc_check_base64": (cdc_check_base64, CHECK_RESULT),
}


def register_udfs(spark: SparkSession) -> None:
    for name, (function, return_type) in UDFS.items():
        spark.udf.register(name, arrow_udf(function, returnType=return_type))
