"""cdc-ingest: Kafka topics into the landing table with Spark Structured Streaming.

By default one scheduled catch-up (trigger availableNow): everything the topics hold beyond the checkpoint
lands, then the command ends. With --every it keeps running, one micro-batch per interval, until stopped.
Each micro-batch lands in one Delta MERGE that skips offsets already landed, so a batch replayed after a
crash (or messages landed by an earlier checkpoint) adds nothing: no message is lost or landed twice.
"""

import argparse
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cdc_lakehouse.command_line import OneLineParser, add_metrics_arguments
from cdc_lakehouse.ingest_config import IngestConfig, IngestConfigError, kafka_client_settings, load_config
from cdc_lakehouse.kafka_offsets import KafkaOffsets, Partition, offsets_latest, offsets_read
from cdc_lakehouse.landing_table import LANDING_COLUMNS

DEFAULT_CONFIG = "ingest.yml"
DEFAULT_NAME = "cdc-ingest"
SUBSCRIPTION_FILE = "cdc-ingest-subscription.json"
# Kafka's record timestamp types (org.apache.kafka.common.record.TimestampType), as Spark gives their ids: a
# LogAppendTime topic's timestamp is the broker's append time, not the producer's.
TIMESTAMP_TYPES = {0: "CreateTime", 1: "LogAppendTime"}
# A consumer group whose commit failed is tried again after the next micro-batch, at most this often.
COMMIT_RETRY_SECONDS = 30.0


def subscription(config: IngestConfig, topics: list[str]) -> dict[str, str]:
    """The Kafka source option naming what to read: the chosen topics, or every topic a rule names or matches."""
    if topics:
        unmatched = [topic for topic in topics if config.format_of(topic) is None]
        if unmatched:
            raise IngestConfigError(f"topic {unmatched[0]!r} matches no rule of the configuration")
        return {"subscribe": ",".join(topics)}
    if all(rule.topic is not None for rule in config.rules):
        return {"subscribe": ",".join(rule.topic for rule in config.rules)}
    return {"subscribePattern": "|".join(f"(?:{rule.regex})" for rule in config.ordered_rules())}


def checkpoint_location(spark, name: str) -> str:
    """<warehouse>/checkpoints/<name>: beside the tables folder, whatever file system it is on."""
    tables = spark.conf.get("spark.sql.warehouse.dir").rstrip("/")
    return f"{tables.rpartition('/')[0] or '.'}/checkpoints/{name}"


def check_subscription_unchanged(spark, checkpoint: str, subscribed: dict[str, str]) -> None:
    """A checkpoint holds offsets of one subscription: Spark cannot carry them over to another."""
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(f"{checkpoint}/{SUBSCRIPTION_FILE}")
    file_system = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    text = json.dumps(subscribed, sort_keys=True)
    if file_system.exists(path):
        stream = file_system.open(path)
        try:
            recorded = jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8")
        finally:
            stream.close()
        if recorded != text:
            raise IngestConfigError(
                f"checkpoint {checkpoint} reads {recorded}, not {text}: give this subscription its own --name"
            )
        return
    stream = file_system.create(path, False)
    try:
        stream.write(bytearray(text.encode()))
    finally:
        stream.close()


def with_source_format(config: IngestConfig, records):
    """Kafka records as landing rows; each takes the format of the first rule (by precedence) its topic matches."""
    from pyspark.sql import functions as F

    source_format = F.lit(None).cast("string")
    for rule in reversed(config.ordered_rules()):
        source_format = F.when(F.col("topic").rlike(f"^(?:{rule.regex})$"), rule.source_format).otherwise(source_format)
    timestamp_type = F.lit(None).cast("string")
    for code, name in TIMESTAMP_TYPES.items():
        timestamp_type = F.when(F.col("timestampType") == code, name).otherwise(timestamp_type)
    return records.select(
        source_format.alias("source_format"),
        "topic",
        F.col("partition").alias("kafka_partition"),
        F.col("offset").alias("kafka_offset"),
        F.col("key").alias("kafka_key"),
        "value",
        F.col("timestamp").alias("kafka_timestamp"),
        F.current_timestamp().alias("ingested_at"),
        # Spark gives null for a record without headers; landing keeps null for "unknown" (cdc-land's files).
        F.coalesce("headers", F.array().cast(dict(LANDING_COLUMNS)["kafka_headers"])).alias("kafka_headers"),
        timestamp_type.alias("kafka_timestamp_type"),
    )


class ConsumerGroupCommits:
    """The offsets each micro-batch landed up to, committed to the consumer group of each topic's rule
    (ingest.yml), so the vendor's console sees how far ingest is. A commit that fails is said on stderr and
    tried again after a later micro-batch, COMMIT_RETRY_SECONDS apart at least: the checkpoint, not the group,
    is where ingest resumes, so a failure never lands a message twice nor stops ingest. One per process."""

    def __init__(self, config: IngestConfig, kafka: KafkaOffsets, client_settings: dict[str, str], metrics=None):
        self.config, self.kafka, self.client_settings, self.metrics = config, kafka, client_settings, metrics
        self._committed: dict[str, dict[Partition, int]] = {}
        self._retry_at: dict[str, float] = {}

    def commit(self, landed: dict[Partition, int], retry_now: bool = False) -> None:
        by_group: dict[str, dict[Partition, int]] = {}
        for partition, offset in landed.items():
            group = self.config.consumer_group_of(partition[0])
            if group:
                by_group.setdefault(group, {})[partition] = offset
        for group, offsets in sorted(by_group.items()):
            waiting = not retry_now and time.monotonic() < self._retry_at.get(group, 0)
            if self._committed.get(group) == offsets or waiting:
                continue
            try:
                self.kafka.commit(group, offsets)
                self._committed[group] = offsets
            except Exception as exc:
                self._retry_at[group] = time.monotonic() + COMMIT_RETRY_SECONDS
                if self.metrics is not None:
                    self.metrics.commit_failures.labels(group).inc()
                print(
                    f"cdc-ingest: consumer group {group}: landed offsets not committed, tried again after a later "
                    f"micro-batch: {without_secrets(exc, self.client_settings)}",
                    file=sys.stderr,
                    flush=True,
                )


class Progress:
    """What ingest does besides landing: a line per micro-batch and the lag of every partition at the end
    (cdc-ingest's), the messages landed by format and the partitions' offsets after each micro-batch
    (metrics), and the consumer groups' commits."""

    def __init__(
        self,
        config: IngestConfig,
        prints: bool = True,
        commits: ConsumerGroupCommits | None = None,
        metrics=None,
    ) -> None:
        self.config = config
        # cdc-run prints one line per run of its own instead.
        self.prints = prints
        self.commits = commits
        self.metrics = metrics
        self.batches = 0
        self.messages = 0
        self.landed = 0
        self._seen: tuple | None = None

    def land(self, records, batch_id: int) -> None:
        from cdc_lakehouse.landing_table import land_new_messages

        rows = with_source_format(self.config, records).persist()
        try:
            by_format = messages_by_format(rows)
            messages = sum(by_format.values())
            landed = land_new_messages(rows) if messages else 0
            if landed < messages:  # a micro-batch replayed after a crash: some of it had landed
                by_format = landed_by_format(rows)
        finally:
            rows.unpersist()
        self.batches += 1
        self.messages += messages
        self.landed += landed
        if self.metrics is not None:
            self.metrics.record_landed(by_format)
        if not self.prints:
            return
        print(
            f"cdc-ingest: batch {batch_id}: {messages} messages, {landed} landed, {messages - landed} already there",
            flush=True,
        )

    def follow(self, query, stopping: Callable[[], bool]) -> None:
        """Until the stream ends, or stopping() says so (then stopped): after each micro-batch, after_batch."""
        try:
            while not query.awaitTermination(2):
                if stopping():
                    query.stop()
                self.after_batch(query.lastProgress)
        finally:
            self.after_batch(query.lastProgress, retry_now=True)

    def after_batch(self, progress: dict | None, retry_now: bool = False) -> None:
        """After a micro-batch (its progress: what it landed up to), the metrics' offsets and the commits."""
        landed = offsets_read(progress)
        batch = (progress.get("id"), progress.get("batchId"), progress.get("timestamp")) if progress else None
        if self.metrics is not None and batch is not None and batch != self._seen:
            self.metrics.record_offsets(landed, offsets_latest(progress))
            self.metrics.record_batch_landed()
        self._seen = batch
        if self.commits is not None:
            self.commits.commit(landed, retry_now)

    def report_end(self, last_progress: dict | None) -> None:
        print(
            f"cdc-ingest: {self.batches} batches, {self.messages} messages read, {self.landed} landed",
            flush=True,
        )
        for topic, lags in sorted(partition_lags(last_progress).items()):
            listed = ", ".join(f"{partition}: {lag}" for partition, lag in sorted(lags.items()))
            print(f"cdc-ingest: lag of {topic} by partition: {listed}", flush=True)


def messages_by_format(rows) -> dict[str, int]:
    counts = rows.groupBy("source_format").count().collect()
    return {row.source_format: row["count"] for row in counts}


def landed_by_format(rows) -> dict[str, int]:
    """Of a micro-batch's rows, those the landing MERGE inserted (not there before it), by format: landing's
    rows at their positions with the micro-batch's ingestion time."""
    from pyspark.sql import functions as F

    from cdc_lakehouse.landing_table import LANDING_TABLE

    ingested_at = rows.select(F.max("ingested_at")).first()[0]
    landing = rows.sparkSession.table(LANDING_TABLE).where(F.col("ingested_at") == F.lit(ingested_at))
    positions = ["topic", "kafka_partition", "kafka_offset"]
    return messages_by_format(landing.select(*positions, "source_format").join(rows.select(*positions), positions))


def partition_lags(last_progress: dict | None) -> dict[str, dict[int, int]]:
    """Messages between the offset read up to and the latest offset of each partition, at the last trigger."""
    if not last_progress:
        return {}
    lags: dict[str, dict[int, int]] = {}
    for source in last_progress.get("sources", []):
        read_to, latest = _offsets(source.get("endOffset")), _offsets(source.get("latestOffset"))
        for topic, partitions in latest.items():
            for partition, offset in partitions.items():
                lags.setdefault(topic, {})[int(partition)] = max(0, offset - read_to.get(topic, {}).get(partition, 0))
    return lags


def _offsets(value) -> dict[str, dict[str, int]]:
    return json.loads(value) if isinstance(value, str) else value or {}


def add_ingest_arguments(parser: argparse.ArgumentParser) -> None:
    """What to read and where to keep its offsets (cdc-ingest's options, and cdc-run's)."""
    parser.add_argument(
        "--config",
        type=Path,
        default=Path(os.environ.get("CDC_INGEST_CONFIG", DEFAULT_CONFIG)),
        help=f"default: $CDC_INGEST_CONFIG, else {DEFAULT_CONFIG}",
    )
    parser.add_argument("--topic", action="append", default=[], dest="topics", help="read only this topic (repeatable)")
    parser.add_argument(
        "--name", default=DEFAULT_NAME, help=f"the stream's name and checkpoint folder (default: {DEFAULT_NAME})"
    )
    parser.add_argument("--checkpoint", help="checkpoint location (default: <warehouse>/checkpoints/<name>)")
    parser.add_argument(
        "--starting-offsets",
        default="earliest",
        help="where a new checkpoint starts: earliest (default), latest, or Spark's JSON of offsets",
    )
    parser.add_argument("--target", help="dbt profile target (default: the profile's)")


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="cdc-ingest", description=__doc__.split("\n\n")[0], error_class=IngestConfigError)
    add_ingest_arguments(parser)
    parser.add_argument(
        "--every", metavar="INTERVAL", help="keep running, a micro-batch per interval ('30 seconds'), until stopped"
    )
    add_metrics_arguments(parser, serves=True)
    return parser


@dataclass(frozen=True)
class IngestJob:
    """What to read and where its offsets are kept: a checked command line."""

    config: IngestConfig
    subscribed: dict[str, str]
    client_settings: dict[str, str]
    name: str = DEFAULT_NAME
    checkpoint: str | None = None
    starting_offsets: str = "earliest"

    def kafka_offsets(self, spark) -> KafkaOffsets:
        """The broker's offsets and consumer groups, with this job's client settings."""
        return KafkaOffsets(spark.sparkContext._jvm, self.client_settings)

    def start(self, spark, every: str | None = None, progress: "Progress | None" = None):
        """The stream, started: availableNow, or a micro-batch per interval `every`. Raises IngestConfigError
        when the checkpoint holds another subscription."""
        checkpoint = self.checkpoint or checkpoint_location(spark, self.name)
        check_subscription_unchanged(spark, checkpoint, self.subscribed)
        # Headers are landed (vendors and Kafka Connect put metadata there).
        reader = spark.readStream.format("kafka").option("startingOffsets", self.starting_offsets)
        reader = reader.option("includeHeaders", "true")
        for option, value in {**self.config.source_options, **self.subscribed}.items():
            reader = reader.option(option, value)
        for setting, value in self.client_settings.items():
            reader = reader.option(f"kafka.{setting}", value)
        progress = progress or Progress(self.config)
        writer = reader.load().writeStream.queryName(self.name).option("checkpointLocation", checkpoint)
        writer = writer.foreachBatch(progress.land)
        writer = writer.trigger(processingTime=every) if every else writer.trigger(availableNow=True)
        if progress.prints:
            subscribed = ", ".join(f"{k} {v}" for k, v in self.subscribed.items())
            print(f"cdc-ingest: {subscribed}; checkpoint {checkpoint}", flush=True)
        return writer.start()


def ingest_job(args: argparse.Namespace, environment: dict[str, str]) -> IngestJob:
    """The job of a command line (cdc-ingest's, or cdc-run's ingest options); IngestConfigError when unusable."""
    config = load_config(args.config)
    return IngestJob(
        config=config,
        subscribed=subscription(config, args.topics),
        client_settings=kafka_client_settings(environment),
        name=args.name,
        checkpoint=args.checkpoint,
        starting_offsets=args.starting_offsets,
    )


def main(argv: list[str] | None = None, environment: dict[str, str] | None = None) -> int:
    environment = dict(os.environ) if environment is None else environment
    try:
        args = _parser().parse_args(argv)
        job = ingest_job(args, environment)
    except IngestConfigError as exc:
        print(f"cdc-ingest: error: {exc}", file=sys.stderr)
        return 2

    from cdc_lakehouse.metrics import metrics_for
    from cdc_lakehouse.session import open_session, profile_spark_settings

    spark = open_session(profile_spark_settings(args.target))
    kafka = job.kafka_offsets(spark)
    metrics = metrics_for(args, "cdc-ingest", kafka=kafka)
    commits = ConsumerGroupCommits(job.config, kafka, job.client_settings, metrics)
    progress = Progress(job.config, commits=commits, metrics=metrics)
    try:
        query = job.start(spark, args.every, progress)
    except IngestConfigError as exc:
        print(f"cdc-ingest: error: {exc}", file=sys.stderr)
        return 2
    stop_requested = []
    signal.signal(signal.SIGTERM, lambda *_: stop_requested.append(True))
    try:
        # In short waits, so that a SIGTERM or Ctrl-C is handled between them.
        progress.follow(query, lambda: bool(stop_requested))
    except KeyboardInterrupt:
        query.stop()
    except Exception as exc:  # a StreamingQueryException
        print(f"cdc-ingest: error: the stream stopped: {without_secrets(exc, job.client_settings)}", file=sys.stderr)
        return 1
    finally:
        if metrics is not None:
            metrics.publish()
        kafka.close()
    progress.report_end(query.lastProgress)
    return 0


def without_secrets(exc: Exception, client_settings: dict[str, str]) -> str:
    """The first line of an error (a Java one's exception and message), with the value of any credential setting
    masked in case a client quoted it."""
    java_exception = getattr(exc, "java_exception", None)
    text = (str(java_exception.toString()) if java_exception is not None else None) or getattr(exc, "desc", None)
    text = (text or str(exc)).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    for setting, value in client_settings.items():
        if value and any(word in setting for word in ("password", "jaas", "secret", "token", "key")):
            line = line.replace(value, "***")
    return line


if __name__ == "__main__":
    sys.exit(main())
