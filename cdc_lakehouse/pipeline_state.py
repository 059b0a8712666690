"""What the warehouse says of the pipeline's progress, for its metrics and cdc-status: per source table its
newest source event time and the versions a batch added (cdc_batch_tables), the messages quarantined by
reason, and the record of each scheduled run. Every function reads; only write_run_record writes (a small
file beside the checkpoints, not a table: a run's record costs no Delta commit)."""

import json
import re
import time
from dataclasses import asdict, dataclass

TABLE_LABELS = ("source_format", "source_name", "source_database", "source_schema", "source_table")
RUN_RECORDS_KEPT = 100
# A reason's class: its text before any detail (what follows a colon or an opening parenthesis, digits).
REASON_CLASS_LENGTH = 80


@dataclass(frozen=True)
class TableProgress:
    source_format: str
    source_name: str
    source_database: str | None
    source_schema: str | None
    source_table: str
    # The newest source event time of its versions (epoch seconds); None when none has a time.
    newest_event_time: float | None
    # The versions of the batch (batch_tables) or of every batch (all_tables).
    versions: int
    batch_id: int

    @property
    def labels(self) -> dict[str, str]:
        return {name: getattr(self, name) or "" for name in TABLE_LABELS}


def _has_table(spark, table: str) -> bool:
    return spark.catalog.tableExists(table)


def _newest_time(spark, table: str) -> str:
    """newest_valid_from as epoch seconds; null in a cdc_batch_tables written before it had the column."""
    if "newest_valid_from" in spark.table(table).columns:
        return "max(unix_micros(newest_valid_from)) / 1e6"
    return "cast(null as double)"


def batch_tables(spark, schema: str, batch_id: int) -> list[TableProgress]:
    """The source tables a batch wrote versions of, with how many and the newest source event time."""
    return _table_progress(spark, schema, f"where cdc_batch_id = {int(batch_id)}")


def all_tables(spark, schema: str) -> list[TableProgress]:
    """Every source table of the history: its newest source event time, its versions of the newest batch that
    wrote any, and that batch. Reads all of cdc_batch_tables (a row per table and batch)."""
    return _table_progress(spark, schema, "", newest_batch_only=True)


def _table_progress(spark, schema: str, where: str, newest_batch_only: bool = False) -> list[TableProgress]:
    table = f"{schema}.cdc_batch_tables"
    if not _has_table(spark, table):
        return []
    keys = ", ".join(TABLE_LABELS)
    if newest_batch_only:
        versions = "max_by(versions_of_batch, cdc_batch_id)"
        source = (
            f"(select {keys}, cdc_batch_id, sum(versions) as versions_of_batch, {_newest_time(spark, table)}"
            f" as newest from {table} group by {keys}, cdc_batch_id)"
        )
        newest = "max(newest)"
    else:
        versions, source, newest = "sum(versions)", table, _newest_time(spark, table)
    rows = spark.sql(
        f"select {keys}, {newest} as newest, {versions} as versions, max(cdc_batch_id) as batch_id"
        f" from {source} {where} group by {keys}"
    ).collect()
    return [
        TableProgress(*row[:5], newest_event_time=row.newest, versions=int(row.versions), batch_id=row.batch_id)
        for row in rows
    ]


def reason_class(reason: str) -> str:
    """A quarantine reason without its detail: bounded, whatever a message held."""
    head = re.split(r"[:(]", reason or "", maxsplit=1)[0]
    return re.sub(r"\d+", "N", " ".join(head.split()))[:REASON_CLASS_LENGTH] or "unknown"


def quarantined(
    spark, schema: str, batch_id: int | None = None, since: float | None = None
) -> dict[tuple[str, str], int]:
    """(format, reason class) -> messages quarantined in a batch, or landed since a time (epoch seconds)."""
    table = f"{schema}.cdc_quarantine"
    if not _has_table(spark, table):
        return {}
    where = (
        f"cdc_batch_id = {int(batch_id)}" if batch_id is not None else f"ingested_at >= timestamp_seconds({int(since)})"
    )
    rows = spark.sql(
        f"select source_format, reason, count(*) as messages from {table} where {where} group by 1, 2"
    ).collect()
    counts: dict[tuple[str, str], int] = {}
    for row in rows:
        key = (row.source_format, reason_class(row.reason))
        counts[key] = counts.get(key, 0) + row.messages
    return counts


@dataclass(frozen=True)
class RunRecord:
    """A scheduled run, as cdc-status lists the last ones."""

    ended_at: float
    batch_id: int | None
    succeeded: bool
    seconds: dict[str, float]
    failures: list[str]
    landed: int | None = None


def run_records_folder(spark, schema: str) -> str:
    """<warehouse>/runs/<schema>: beside the tables folder, as the checkpoints are."""
    tables = spark.conf.get("spark.sql.warehouse.dir").rstrip("/")
    return f"{tables.rpartition('/')[0] or '.'}/runs/{schema}"


def _file_system(spark, folder: str):
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(folder)
    return jvm, path, path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())


def write_run_record(spark, schema: str, record: RunRecord) -> None:
    """The run's record, and the newest RUN_RECORDS_KEPT kept."""
    jvm, folder, file_system = _file_system(spark, run_records_folder(spark, schema))
    name = time.strftime("%Y%m%dT%H%M%S", time.gmtime(record.ended_at)) + f"{record.ended_at % 1:.6f}"[1:] + ".json"
    stream = file_system.create(jvm.org.apache.hadoop.fs.Path(folder, name), True)
    try:
        stream.write(bytearray(json.dumps(asdict(record)).encode()))
    finally:
        stream.close()
    names = sorted(status.getPath().getName() for status in file_system.listStatus(folder))
    for old in names[:-RUN_RECORDS_KEPT]:
        file_system.delete(jvm.org.apache.hadoop.fs.Path(folder, old), False)


def run_records(spark, schema: str, last: int) -> list[RunRecord]:
    """The last runs' records, newest first."""
    jvm, folder, file_system = _file_system(spark, run_records_folder(spark, schema))
    if not file_system.exists(folder):
        return []
    records = []
    for status in sorted(file_system.listStatus(folder), key=lambda s: s.getPath().getName(), reverse=True)[:last]:
        stream = file_system.open(status.getPath())
        try:
            text = jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8")
        finally:
            stream.close()
        records.append(RunRecord(**json.loads(text)))
    return records
