"""Decode throughput of every format beside its baseline, on the same landed messages in the same session.

- JSON formats: ``from_json`` with an explicit schema (inferred from one message) over the value as text;
- ``huawei_drs_avro``: a bare ``from_avro`` with the writer schema;
- ``tencent_dts_protobuf``: no ``from_protobuf`` exists for Spark 4 here, so a bare Python loop that parses
  the same Envelopes and Entries with the protobuf runtime (upb) and flattens every row into a tuple: the
  closest to native available.
The project figure is the format's staging SQL, as the full build compiled it, evaluated again over all
the format's messages into Spark's ``noop`` sink (DTS: its two staging models). Every figure is the faster
of two runs, so that neither side pays for compiling its generated code.
"""

import re
import time
from pathlib import Path

import yaml

from cdc_lakehouse.formats import DBT_PROJECT

# Staging models that decode each format; DTS decodes in two steps (envelopes, then reassembled entries).
DECODE_MODELS = {
    "tencent_dts_protobuf": [
        "stg_tencent_dts_protobuf__envelopes",
        "stg_tencent_dts_protobuf__groups",
        "stg_tencent_dts_protobuf__entries",
    ],
}


def best_of_two(run) -> float:
    """Seconds of the faster of two runs: the first also compiles the query's generated code."""
    seconds = []
    for _ in range(2):
        started = time.perf_counter()
        run()
        seconds.append(time.perf_counter() - started)
    return min(seconds)


def timed_noop(spark, sql: str) -> float:
    return best_of_two(lambda: spark.sql(sql).write.format("noop").mode("overwrite").save())


def flattened_dts_rows(values: list[bytes]) -> int:
    """Parse Envelopes (joining split groups) and their Entries, one tuple per row or control entry."""
    from python_udfs.proto import tencent_dts_subscribe_pb2 as pb

    rows: list[tuple] = []
    parts: list[bytes] = []
    for value in values:
        envelope = pb.Envelope.FromString(value)
        parts.append(envelope.data)
        if envelope.index + 1 < envelope.total:
            continue
        entries = pb.Entries.FromString(b"".join(parts))
        parts = []
        for entry in entries.items:
            header = entry.header
            if header.messageType != pb.DML:
                rows.append((header.messageType, header.seqId, header.timestamp))
                continue
            dml = entry.event.dmlEvent
            names = tuple(column.name for column in dml.columns)
            for row in dml.rows:
                rows.append(
                    (
                        header.seqId,
                        header.schemaName,
                        header.tableName,
                        dml.dmlEventType,
                        names,
                        tuple(data.sv or data.bv for data in row.oldColumns),
                        tuple(data.sv or data.bv for data in row.newColumns),
                    )
                )
    return len(rows)


def dts_python_loop_seconds(spark, landed: str) -> float:
    values = [row.value for row in spark.sql(f"{landed} order by topic, kafka_partition, kafka_offset").collect()]
    return best_of_two(lambda: flattened_dts_rows(values))


def baseline(spark, source_format: str, landed: str, messages: int, cores: int, avro_schema: Path) -> dict:
    from pyspark.sql import functions as F

    if source_format == "tencent_dts_protobuf":
        from google.protobuf.internal import api_implementation

        seconds = dts_python_loop_seconds(spark, landed)
        # One Python loop runs on one core.
        return {
            "baseline": f"python loop: protobuf ({api_implementation.Type()}) parse + flatten to tuples, 1 core",
            "baseline_rows_per_s": round(messages / seconds),
        }
    if source_format == "huawei_drs_avro":
        schema = avro_schema.read_text(encoding="utf-8").replace("\\", "\\\\").replace("'", "\\'")
        sql = f"select from_avro(value, '{schema}') as record from ({landed}) as landed"
        return {"baseline": "from_avro", "baseline_rows_per_s": round(messages / timed_noop(spark, sql) / cores)}
    sample = spark.sql(f"{landed} limit 1").first().value.decode()
    schema = spark.range(1).select(F.schema_of_json(F.lit(sample))).first()[0]
    sql = f"select from_json(cast(value as string), '{schema}') as message from ({landed}) as landed"
    return {"baseline": "from_json", "baseline_rows_per_s": round(messages / timed_noop(spark, sql) / cores)}


def decode_figures(spark, compiled: Path, counts: dict[str, int], cores: int, avro_schema: Path) -> dict[str, dict]:
    from cdc_lakehouse.landing_table import LANDING_TABLE

    registry = yaml.safe_load(DBT_PROJECT.read_text())["vars"]["cdc_formats"]
    figures = {}
    for source_format, messages in counts.items():
        staging = (registry[source_format] or {}).get("staging", source_format)
        models = DECODE_MODELS.get(source_format, [f"stg_{staging}__messages"])
        # A staging model that formats of one shape share reads only this format's messages here.
        seconds = sum(
            timed_noop(
                spark,
                re.sub(
                    r"raw\.source_format in \([^)]*\)",
                    f"raw.source_format in ('{source_format}')",
                    (compiled / staging / f"{model}.sql").read_text(),
                ),
            )
            for model in models
        )
        landed = f"select * from {LANDING_TABLE} where source_format = '{source_format}'"
        figure = {"messages": messages, "rows_per_s": round(messages / seconds / cores)}
        figure |= baseline(spark, source_format, landed, messages, cores, avro_schema)
        figure["share_of_baseline"] = round(figure["rows_per_s"] / figure["baseline_rows_per_s"], 2)
        figures[source_format] = figure
        print(f"bench: {source_format}: {figure}", flush=True)
    return figures
