"""The pipeline's Prometheus metrics (README, "Operating it"), through prometheus_client.

A long-lived process (cdc-run, cdc-ingest --every) serves them over HTTP (--metrics-port); a one-shot one
(cdc-run --once, cdc-build, cdc-ingest) writes them in the text format to a file for node_exporter's
textfile collector (--metrics-textfile). Since a one-shot process starts from nothing, it first reads the
file the previous run left: its counters go on from there and its gauges keep what this run does not set, so
counters never go back and a table the run did not touch keeps its figures.

Labels come from the deployment, never free text from messages: topics and partitions it reads, source
tables its history has, formats, consumer groups of ingest.yml, and quarantine reasons cut to their class
(pipeline_state.reason_class) with at most MAX_REASON_CLASSES per format.
"""

import contextlib
import os
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    disable_created_metrics,
    start_http_server,
    write_to_textfile,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.parser import text_string_to_metric_families

from cdc_lakehouse.kafka_offsets import KafkaOffsets, Partition
from cdc_lakehouse.pipeline_state import TABLE_LABELS, TableProgress

MAX_REASON_CLASSES = 20

# A counter's creation time is one more series per child that no dashboard here reads.
disable_created_metrics()
OTHER_REASON = "other"
# A textfile's partition families, carried into what this process knows (a run that reads no offset keeps them).
PARTITION_FAMILIES = {
    "cdc_kafka_partition_landed_offset": "_carried_landed",
    "cdc_kafka_partition_end_offset": "_carried_end",
    "cdc_kafka_partition_backlog_messages": "_backlog_after_batch",
}
# How long a scrape waits for the broker's end offsets.
SCRAPE_BROKER_SECONDS = 3
# Gauges that count runs in a row a condition held.
IN_A_ROW = ("cdc_kafka_partition_backlog_growing_batches", "cdc_runs_failed_in_a_row")


class PartitionOffsets:
    """Per partition: the offset landed up to, the broker's end offset, and the backlog between them. A
    scrape asks the broker for its end offsets, waiting at most SCRAPE_BROKER_SECONDS (else the last it
    said stand), so a served backlog grows as messages arrive, between runs too; a textfile's is the run's."""

    def __init__(self, kafka: KafkaOffsets | None) -> None:
        self.kafka = kafka
        self.landed: dict[Partition, int] = {}
        self.end: dict[Partition, int] = {}

    # The run's thread records, a scrape's thread reads: each reads copies (a dict's copy is one step under
    # the GIL).
    def refresh(self) -> None:
        landed = dict(self.landed)
        if self.kafka is not None and landed:
            # When the broker does not answer in time, the last end offsets it gave stand: a scrape must end
            # well within Prometheus's scrape timeout (10 s by default), or every series would be lost.
            with contextlib.suppress(Exception):
                self.end.update(self.kafka.end_offsets(landed, timeout_seconds=SCRAPE_BROKER_SECONDS))

    def backlog(self) -> dict[Partition, int]:
        landed, end = dict(self.landed), dict(self.end)
        return {p: max(0, end[p] - offset) for p, offset in landed.items() if p in end}

    def collect(self):
        self.refresh()
        families = {
            "landed": GaugeMetricFamily(
                "cdc_kafka_partition_landed_offset",
                "The offset a partition's messages are landed up to (the next to read)",
                labels=["topic", "partition"],
            ),
            "end": GaugeMetricFamily(
                "cdc_kafka_partition_end_offset",
                "The broker's end offset of a partition, for a read_committed consumer",
                labels=["topic", "partition"],
            ),
            "backlog": GaugeMetricFamily(
                "cdc_kafka_partition_backlog_messages",
                "Messages between a partition's landed offset and the broker's end offset",
                labels=["topic", "partition"],
            ),
        }
        for values, family in ((dict(self.landed), "landed"), (dict(self.end), "end"), (self.backlog(), "backlog")):
            for (topic, partition), value in sorted(values.items()):
                families[family].add_metric([topic, str(partition)], value)
        yield from families.values()

    def describe(self):
        return []


class LeaseHeld:
    """Whether this process holds a schema's lease now (schema_lease; always 0 without a shared metastore)."""

    def __init__(self, schemas: Iterable[str]) -> None:
        self.schemas = sorted(set(schemas))

    def collect(self):
        from cdc_lakehouse import schema_lease

        family = GaugeMetricFamily(
            "cdc_schema_lease_held", "1 while this process holds the schema's lease", labels=["schema"]
        )
        for schema in self.schemas:
            family.add_metric([schema], 1.0 if schema in schema_lease._held else 0.0)
        yield family

    def describe(self):
        return []


class Metrics:
    """One registry; ingest and the scheduled run each add their metrics (what a command does, it reports)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        # Counters and gauges by name, for carrying a textfile's values over.
        self.owned: dict[str, Counter | Gauge] = {}
        self.partitions: PartitionOffsets | None = None
        self.textfile: Path | None = None
        self._reasons: dict[str, set[str]] = {}
        # Runs in a row a condition held, by (gauge, labels): the gauges' values, kept where they can be read.
        self._in_a_row: dict[tuple[str, tuple], int] = {}
        self._backlog_after_batch: dict[Partition, int] = {}
        self._carried_landed: dict[Partition, int] = {}
        self._carried_end: dict[Partition, int] = {}

    def _counter(self, name: str, documentation: str, labels: Iterable[str] = ()) -> Counter:
        self.owned[name] = Counter(name, documentation, labels, registry=self.registry)
        return self.owned[name]

    def _gauge(self, name: str, documentation: str, labels: Iterable[str] = ()) -> Gauge:
        self.owned[name] = Gauge(name, documentation, labels, registry=self.registry)
        return self.owned[name]

    def add_ingest(self, kafka: KafkaOffsets | None) -> None:
        self.partitions = PartitionOffsets(kafka)
        self.registry.register(self.partitions)
        self.landed = self._counter(
            "cdc_landed_messages",
            "Messages ingest landed in landing.cdc_raw (a redelivered offset is not counted)",
            ["source_format"],
        )
        self.commit_failures = self._counter(
            "cdc_consumer_group_commit_failures",
            "Commits of landed offsets to a consumer group that failed or found no broker (retried later)",
            ["consumer_group"],
        )
        self.backlog_growing = self._gauge(
            "cdc_kafka_partition_backlog_growing_batches",
            "Micro-batches in a row after which the partition's backlog was larger than after the one before",
            ["topic", "partition"],
        )

    def add_runs(self, schema: str) -> None:
        self.registry.register(LeaseHeld([schema]))
        labels = list(TABLE_LABELS)
        self.runs = self._counter("cdc_runs", "Scheduled runs, by outcome", ["outcome"])
        self.failed_in_a_row = self._gauge(
            "cdc_runs_failed_in_a_row", "Scheduled runs that failed since the last that succeeded"
        )
        self.part_seconds = self._gauge(
            "cdc_last_run_part_seconds", "Seconds the last run spent in each part", ["part"]
        )
        self.run_seconds = self._gauge("cdc_last_run_duration_seconds", "Seconds the last run took")
        self.run_ended = self._gauge("cdc_last_run_end_timestamp_seconds", "When the last run ended")
        self.batch = self._gauge("cdc_change_log_batch_id", "The newest batch the change log finished")
        self.batch_finished = self._gauge(
            "cdc_change_log_finished_timestamp_seconds",
            "When the change log last held everything landed: it finished a batch, or nothing new had landed",
        )
        # From the process's start until a run says otherwise (or the textfile does): a runner that never
        # brings the change log up to date is then as stale as its age, not since 1970.
        self.batch_finished.set(time.time())
        self.quarantined = self._counter(
            "cdc_quarantined_messages",
            "Messages the change log quarantined, by format and reason class",
            ["source_format", "reason"],
        )
        self.table_newest = self._gauge(
            "cdc_source_table_newest_event_timestamp_seconds",
            "The source event time of a table's newest version in cdc_history",
            labels,
        )
        self.table_lag = self._gauge(
            "cdc_source_table_lag_seconds",
            "For each table the last run with new versions added some to: seconds from its newest source event "
            "to that run's end",
            labels,
        )
        self.table_versions = self._counter(
            "cdc_source_table_versions", "Versions the runs added to a table's history", labels
        )

    # Ingest.

    def record_landed(self, by_format: Mapping[str, int]) -> None:
        for source_format, messages in by_format.items():
            self.landed.labels(source_format).inc(messages)

    def record_offsets(self, landed: Mapping[Partition, int], end: Mapping[Partition, int]) -> None:
        self.partitions.landed.update(landed)
        self.partitions.end.update(end)

    def record_batch_landed(self) -> None:
        """After a micro-batch: count, per partition, the micro-batches in a row after which the backlog (asked
        of the broker now) grew."""
        self.partitions.refresh()
        backlog = self.partitions.backlog()
        for (topic, partition), messages in backlog.items():
            before = self._backlog_after_batch.get((topic, partition))
            labels = {"topic": topic, "partition": str(partition)}
            grew = before is not None and messages > before
            self.backlog_growing.labels(**labels).set(self._count_in_a_row(IN_A_ROW[0], labels, grew))
        self._backlog_after_batch = backlog

    # Scheduled runs.

    def record_tables(self, tables: Iterable[TableProgress], ended_at: float, added: bool) -> None:
        """Each table's newest event time; with `added`, the versions a run added and the lag at its end, which
        replaces the lag of every table (a table the run did not touch has no lag, rather than an old one)."""
        tables = list(tables)
        if added:
            self.table_lag.clear()
        for table in tables:
            if table.newest_event_time is not None:
                self.table_newest.labels(**table.labels).set(table.newest_event_time)
            if added:
                self.table_versions.labels(**table.labels).inc(table.versions)
                if table.newest_event_time is not None:
                    self.table_lag.labels(**table.labels).set(max(0.0, ended_at - table.newest_event_time))

    def record_quarantined(self, counts: Mapping[tuple[str, str], int]) -> None:
        for (source_format, reason), messages in sorted(counts.items()):
            known = self._reasons.setdefault(source_format, set())
            if reason not in known and len(known) >= MAX_REASON_CLASSES:
                reason = OTHER_REASON
            known.add(reason)
            self.quarantined.labels(source_format, reason).inc(messages)

    def record_run(self, seconds: Mapping[str, float], succeeded: bool, batch_id: int | None, current: bool) -> None:
        """A run's parts' seconds and outcome; `current`: its change log holds everything landed."""
        ended = time.time()
        for part, part_seconds in seconds.items():
            self.part_seconds.labels(part).set(part_seconds)
        self.run_seconds.set(sum(seconds.values()))
        self.run_ended.set(ended)
        self.runs.labels("succeeded" if succeeded else "failed").inc()
        self.failed_in_a_row.set(self._count_in_a_row(IN_A_ROW[1], {}, not succeeded))
        if current and batch_id is not None:
            self.batch.set(batch_id)
            self.batch_finished.set(ended)

    def _count_in_a_row(self, name: str, labels: dict[str, str], happened: bool) -> int:
        key = (name, tuple(sorted(labels.items())))
        self._in_a_row[key] = self._in_a_row.get(key, 0) + 1 if happened else 0
        return self._in_a_row[key]

    # Exposition.

    def serve(self, port: int, host: str) -> None:
        start_http_server(port, addr=host, registry=self.registry)

    def carry_over(self, textfile: Path) -> None:
        """Start from the values a previous one-shot run wrote to the file (the module's doc)."""
        try:
            text = textfile.read_text(encoding="utf-8")
        except FileNotFoundError:
            return
        try:
            families = list(text_string_to_metric_families(text))
        except ValueError as exc:
            print(f"cdc: {textfile} is not Prometheus's text format, started anew: {exc}", file=sys.stderr)
            return
        for family in families:
            try:
                self._carry_family(family)
            except (KeyError, ValueError) as exc:  # a file of another release: its labels differ
                print(f"cdc: {textfile}: {family.name} not carried over: {exc}", file=sys.stderr)

    def _carry_family(self, family) -> None:
        if self.partitions is not None and family.name in PARTITION_FAMILIES:
            for sample in family.samples:
                partition = (sample.labels["topic"], int(sample.labels["partition"]))
                getattr(self, PARTITION_FAMILIES[family.name])[partition] = int(sample.value)
        if family.name in IN_A_ROW:
            for sample in family.samples:
                self._in_a_row[(family.name, tuple(sorted(sample.labels.items())))] = int(sample.value)
        if family.name == "cdc_quarantined_messages":
            for sample in family.samples:
                self._reasons.setdefault(sample.labels["source_format"], set()).add(sample.labels["reason"])
        metric = self.owned.get(family.name)
        for sample in family.samples if metric is not None else []:
            child = metric.labels(**sample.labels) if sample.labels else metric
            if isinstance(metric, Counter) and sample.name.endswith("_total"):
                child.inc(sample.value)
            elif isinstance(metric, Gauge):
                child.set(sample.value)

    def publish(self) -> None:
        """After a run: the textfile written, when there is one (a scrape reads the process's values live). A
        file that cannot be written is said on stderr: it never fails the run."""
        if self.textfile is None:
            return
        if self.partitions is not None:
            for carried, known in (
                (self._carried_landed, self.partitions.landed),
                (self._carried_end, self.partitions.end),
            ):
                for partition, offset in carried.items():
                    known.setdefault(partition, offset)
        try:
            write_to_textfile(str(self.textfile), self.registry)
        except OSError as exc:
            print(f"cdc: the metrics were not written to {self.textfile}: {exc}", file=sys.stderr, flush=True)


TEXTFILE_FOLDER_VARIABLE = "CDC_METRICS_TEXTFILE_DIR"


def metrics_for(
    args, command: str, kafka: KafkaOffsets | None = None, schema: str | None = None, environment=None
) -> "Metrics | None":
    """The metrics a command's arguments ask for (--metrics-port, --metrics-textfile, else
    $CDC_METRICS_TEXTFILE_DIR/<command>.prom: what an orchestrator's tasks write, a file per command), None
    without any: ingest's when it reads Kafka (`kafka`), the scheduled runs' when it runs them (`schema`);
    served at once, and going on from the textfile."""
    environment = os.environ if environment is None else environment
    port, textfile = getattr(args, "metrics_port", None), args.metrics_textfile
    if textfile is None and environment.get(TEXTFILE_FOLDER_VARIABLE):
        textfile = Path(environment[TEXTFILE_FOLDER_VARIABLE]) / f"{command}.prom"
    if port is None and textfile is None:
        return None
    metrics = Metrics()
    if kafka is not None:
        metrics.add_ingest(kafka)
    if schema is not None:
        metrics.add_runs(schema)
    if textfile is not None:
        metrics.carry_over(textfile)
    if port is not None:
        metrics.serve(port, args.metrics_host)
    metrics.textfile = textfile
    return metrics
