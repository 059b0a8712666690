"""cdc-land: append message files to the landing table, as a Kafka consumer would have written them.

A ``.bin`` file is one message value; any other file holds one UTF-8 text message per non-blank line.
Every file is read and checked before Spark starts, and all messages land in one Delta MERGE: either
all are written or none. A message whose (topic, partition, offset) is already landed is a redelivery
and is skipped.
"""

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from cdc_lakehouse.command_line import OneLineParser, non_negative
from cdc_lakehouse.formats import SOURCE_FORMATS
from cdc_lakehouse.landing_table import LANDING_COLUMNS, LANDING_TABLE, land_new_messages


class LandingError(Exception):
    """A problem with the command line or the files: reported on one line, nothing is written."""


@dataclass(frozen=True)
class LandingResult:
    topic: str
    partition: int
    first_offset: int
    last_offset: int
    landed: int
    redeliveries: int


def read_messages(paths: list[Path]) -> list[bytes]:
    messages: list[bytes] = []
    for path in paths:
        if not path.is_file():
            raise LandingError(f"{path}: no such file")
        content = path.read_bytes()
        if path.suffix == ".bin":
            file_messages = [content] if content else []
        else:
            lines = (line.rstrip(b"\r") for line in content.split(b"\n"))
            file_messages = [line for line in lines if line.strip()]
        if not file_messages:
            raise LandingError(f"{path}: file holds no message")
        messages.extend(file_messages)
    return messages


@dataclass(frozen=True)
class TopicMessages:
    """Messages of one (topic, partition), to land at consecutive offsets from first_offset."""

    source_format: str
    topic: str
    partition: int
    first_offset: int
    messages: list[bytes]


def land(
    spark,
    source_format: str,
    topic: str,
    partition: int,
    messages: list[bytes],
    first_offset: int | None = None,
) -> LandingResult:
    """Land messages at consecutive offsets from first_offset (default: after the largest landed one)."""
    from pyspark.sql import functions as F

    if first_offset is None:
        largest = (
            spark.table(LANDING_TABLE)
            .where((F.col("topic") == topic) & (F.col("kafka_partition") == partition))
            .agg(F.max("kafka_offset"))
            .first()[0]
        )
        first_offset = 0 if largest is None else largest + 1
    inserted = land_topics(spark, [TopicMessages(source_format, topic, partition, first_offset, messages)])
    return LandingResult(
        topic=topic,
        partition=partition,
        first_offset=first_offset,
        last_offset=first_offset + len(messages) - 1,
        landed=inserted,
        redeliveries=len(messages) - inserted,
    )


def land_topics(spark, batches: list[TopicMessages]) -> int:
    """Land the messages of several topics in one Delta MERGE; the number of messages not landed before."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import (
        BinaryType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
    )

    schema = StructType(
        [
            StructField("source_format", StringType()),
            StructField("topic", StringType()),
            StructField("kafka_partition", IntegerType()),
            StructField("kafka_offset", LongType()),
            StructField("value", BinaryType()),
        ]
    )
    rows = [
        (batch.source_format, batch.topic, batch.partition, batch.first_offset + i, message)
        for batch in batches
        for i, message in enumerate(batch.messages)
    ]
    landed = (
        spark.createDataFrame(rows, schema)
        .withColumn("kafka_key", F.lit(None).cast("binary"))
        # A file carries no producer timestamp nor headers: unknown rather than invented.
        .withColumn("kafka_timestamp", F.lit(None).cast("timestamp"))
        .withColumn("ingested_at", F.current_timestamp())
        .withColumn("kafka_headers", F.lit(None).cast(dict(LANDING_COLUMNS)["kafka_headers"]))
        .withColumn("kafka_timestamp_type", F.lit(None).cast("string"))
    )
    return land_new_messages(landed)


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="cdc-land", description=__doc__.split("\n\n")[0], error_class=LandingError)
    parser.add_argument("--format", required=True, dest="source_format", help=", ".join(SOURCE_FORMATS))
    parser.add_argument("--topic", required=True)
    parser.add_argument("--partition", type=non_negative, default=0)
    parser.add_argument("--offset", type=non_negative, help="offset of the first message")
    parser.add_argument("--target", help="dbt profile target (default: the profile's)")
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE")
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
        if args.source_format not in SOURCE_FORMATS:
            raise LandingError(f"unknown format {args.source_format!r}; expected one of: {', '.join(SOURCE_FORMATS)}")
        if not args.topic.strip():
            raise LandingError("--topic must not be empty")
        messages = read_messages(args.files)
    except LandingError as exc:
        print(f"cdc-land: error: {exc}", file=sys.stderr)
        return 2

    from cdc_lakehouse.session import open_session, profile_spark_settings

    spark = open_session(profile_spark_settings(args.target))
    result = land(spark, args.source_format, args.topic, args.partition, messages, args.offset)
    print(
        f"cdc-land: {result.landed} messages landed in {LANDING_TABLE} "
        f"(topic {result.topic}, partition {result.partition}, offsets "
        f"{result.first_offset}..{result.last_offset}; {result.redeliveries} redeliveries skipped)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
