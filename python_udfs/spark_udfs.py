"""Registers the project's decoders as Arrow-batched Spark SQL functions.

Each function returns a struct with an ``error`` field instead of raising, so one bad message
never fails a batch: its reason travels with the row to the quarantine model.
"""

from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import SparkSession
from pyspark.sql.functions import arrow_udf

from python_udfs.text import decode_utf8

DECODED_TEXT = "struct<text:string,error:string>"


def _decoded_text(texts: list[str | None], errors: list[str | None]) -> pa.StructArray:
    return pa.StructArray.from_arrays(
        [pa.array(texts, pa.string()), pa.array(errors, pa.string())], names=["text", "error"]
    )


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
    return _decoded_text([t for t, _ in decoded], [e for _, e in decoded])


UDFS: dict[str, tuple[Callable[[pa.Array], pa.Array], str]] = {
    "cdc_decode_utf8": (cdc_decode_utf8, DECODED_TEXT),
}


def register_udfs(spark: SparkSession) -> None:
    for name, (function, return_type) in UDFS.items():
        spark.udf.register(name, arrow_udf(function, returnType=return_type))
