"""cdc-status: where the pipeline stands, read from the warehouse, the ingest checkpoint and the broker.

Per source table its newest source event time, lag and versions in the newest batch; per partition the
offsets landed (the checkpoint's), the broker's end offsets and each consumer group's committed ones;
quarantined messages by reason since a time; the last runs with their parts' seconds and failures; the
schema's lease holder. A table by default, --json for scripts. It reads and writes nothing. On the
embedded default (Derby admits one Spark driver) it runs between runs, not beside cdc-run.
"""

import argparse
import datetime
import json
import os
import re
import sys
import time
from dataclasses import asdict
from pathlib import Path

from cdc_lakehouse.command_line import OneLineParser, add_project_dir_argument, non_negative
from cdc_lakehouse.ingest import DEFAULT_CONFIG, DEFAULT_NAME, checkpoint_location, without_secrets
from cdc_lakehouse.ingest_config import IngestConfigError, kafka_client_settings, load_config

DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smhd])")
UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


class StatusArgumentError(Exception):
    """A bad command line: one line on stderr, exit code 2."""


def since_seconds(text: str, now: float) -> float:
    """`24h`, `30m`, `2d`, `90s` before now, or an ISO 8601 time (UTC unless it says its zone): epoch seconds."""
    duration = DURATION.fullmatch(text.strip())
    if duration:
        return now - float(duration.group(1)) * UNIT_SECONDS[duration.group(2)]
    try:
        moment = datetime.datetime.fromisoformat(text.strip())
    except ValueError:
        raise StatusArgumentError(f"--since {text!r}: expected a duration (24h, 30m, 2d) or an ISO 8601 time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.timestamp()


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="cdc-status", description=__doc__.split("\n\n")[0], error_class=StatusArgumentError)
    add_project_dir_argument(parser)
    parser.add_argument("--target", help="dbt profile target (default: the profile's)")
    parser.add_argument(
        "--config",
        type=Path,
        default=Path(os.environ.get("CDC_INGEST_CONFIG", DEFAULT_CONFIG)),
        help=f"ingest's topics (default: $CDC_INGEST_CONFIG, else {DEFAULT_CONFIG}); without it, no partitions",
    )
    parser.add_argument("--name", default=DEFAULT_NAME, help=f"ingest's stream name (default: {DEFAULT_NAME})")
    parser.add_argument("--checkpoint", help="ingest's checkpoint (default: <warehouse>/checkpoints/<name>)")
    parser.add_argument("--since", default="24h", help="quarantined messages landed since: 24h (default), 30m, ISO")
    parser.add_argument("--runs", type=non_negative, default=10, help="how many of the last runs (default: 10)")
    parser.add_argument("--json", action="store_true", help="one JSON document instead of tables")
    return parser


def checkpoint_offsets(spark, checkpoint: str) -> dict[tuple[str, int], int]:
    """The offsets of the newest micro-batch the checkpoint records as committed (landed): its offsets log's
    entry of that batch, whose third line on is each source's offsets."""
    jvm = spark.sparkContext._jvm
    commits = jvm.org.apache.hadoop.fs.Path(f"{checkpoint}/commits")
    file_system = commits.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    if not file_system.exists(commits):
        return {}
    batches = [int(s.getPath().getName()) for s in file_system.listStatus(commits) if s.getPath().getName().isdigit()]
    if not batches:
        return {}
    stream = file_system.open(jvm.org.apache.hadoop.fs.Path(f"{checkpoint}/offsets/{max(batches)}"))
    try:
        text = jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8")
    finally:
        stream.close()
    offsets = {}
    for line in text.splitlines()[2:]:
        for topic, partitions in (json.loads(line) if line.startswith("{") else {}).items():
            for partition, offset in partitions.items():
                offsets[(topic, int(partition))] = int(offset)
    return offsets


def partitions_status(spark, args, environment: dict[str, str]) -> tuple[list[dict], str | None]:
    """Per partition: landed, end and committed offsets; and what could not be read, if anything."""
    from cdc_lakehouse.kafka_offsets import KafkaOffsets

    if not args.config.is_file():
        return [], f"no {args.config}: ingest's partitions not shown"
    config = load_config(args.config)
    landed = checkpoint_offsets(spark, args.checkpoint or checkpoint_location(spark, args.name))
    rows = {partition: {"landed_offset": offset} for partition, offset in landed.items()}
    try:
        settings = kafka_client_settings(environment)
    except IngestConfigError as exc:
        return _partition_rows(rows), f"the broker was not asked: {exc}"
    kafka = KafkaOffsets(spark.sparkContext._jvm, settings)
    problem = None
    try:
        ends = kafka.end_offsets(rows)
        groups = {config.consumer_group_of(topic) for topic, _ in rows} - {None}
        committed = {group: kafka.committed(group) for group in sorted(groups)}
        for partition, row in rows.items():
            row["end_offset"] = ends.get(partition)
            row["backlog"] = None if row["end_offset"] is None else max(0, row["end_offset"] - row["landed_offset"])
            group = config.consumer_group_of(partition[0])
            row["consumer_group"] = group
            row["committed_offset"] = committed.get(group, {}).get(partition) if group else None
    except Exception as exc:
        problem = f"the broker did not answer: {without_secrets(exc, settings)}"
    finally:
        kafka.close()
    return _partition_rows(rows), problem


def _partition_rows(rows: dict) -> list[dict]:
    return [{"topic": topic, "partition": partition, **row} for (topic, partition), row in sorted(rows.items())]


def lease_holder(spark, schema: str) -> dict | None:
    """The schema's lease row on a shared metastore; None without a lease (the embedded default)."""
    from cdc_lakehouse.schema_lease import HOLDER, database_of

    database = database_of(spark)
    if database is None:
        return None
    try:
        rows = database.query(HOLDER, schema)
    except Exception:  # the lease table does not exist yet: nothing ever held it
        rows = []
    if not rows:
        return {"holder": None, "expires_at": None}
    holder, expires_at = rows[0]
    return {"holder": holder, "expires_at": expires_at}


def gather(spark, schema: str, args, environment: dict[str, str], now: float) -> dict:
    from cdc_lakehouse.pipeline_state import all_tables, quarantined, run_records

    since = since_seconds(args.since, now)
    newest_batch = None
    if spark.catalog.tableExists(f"{schema}.cdc_batches"):
        newest_batch = spark.sql(f"select max(batch_id) from {schema}.cdc_batches").first()[0]
    tables = [
        {
            **table.labels,
            "newest_event_at": _iso(table.newest_event_time),
            "lag_seconds": None if table.newest_event_time is None else round(now - table.newest_event_time, 1),
            "versions_in_newest_batch": table.versions if table.batch_id == newest_batch else 0,
            "last_batch": table.batch_id,
        }
        for table in sorted(all_tables(spark, schema), key=lambda t: tuple(t.labels.values()))
    ]
    partitions, partitions_problem = partitions_status(spark, args, environment)
    counts = quarantined(spark, schema, since=since)
    return {
        "schema": schema,
        "at": _iso(now),
        "newest_batch": newest_batch,
        "tables": tables,
        "partitions": partitions,
        "partitions_problem": partitions_problem,
        "quarantined_since": _iso(since),
        "quarantined": [
            {"source_format": source_format, "reason": reason, "messages": messages}
            for (source_format, reason), messages in sorted(counts.items())
        ],
        "runs": [
            {**asdict(record), "ended_at": _iso(record.ended_at)} for record in run_records(spark, schema, args.runs)
        ],
        "lease": lease_holder(spark, schema),
    }


def _iso(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    return datetime.datetime.fromtimestamp(epoch, datetime.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def table_text(title: str, rows: list[dict], columns: list[str]) -> str:
    if not rows:
        return f"{title}: none"
    cells = [[_cell(row.get(column)) for column in columns] for row in rows]
    widths = [max(len(column), *(len(line[i]) for line in cells)) for i, column in enumerate(columns)]
    lines = [f"{title}:", "  " + "  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True))]
    lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) for line in cells]
    return "\n".join(line.rstrip() for line in lines)


def duration_text(seconds: float | None) -> str | None:
    """Seconds as a person reads them: 45 s, 12 min, 3 h 20 min, 5 d 4 h."""
    if seconds is None:
        return None
    minutes, hours, days = seconds / 60, seconds / 3600, seconds / 86400
    if seconds < 60:
        return f"{seconds:.0f} s"
    if minutes < 60:
        return f"{minutes:.0f} min"
    if hours < 24:
        return f"{int(hours)} h {int(minutes % 60)} min"
    return f"{int(days)} d {int(hours % 24)} h"


def _cell(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, dict):
        return ", ".join(f"{k} {v:g}" for k, v in value.items())
    if isinstance(value, list):
        return "; ".join(str(v) for v in value) or "-"
    return str(value)


def text_report(status: dict) -> str:
    lease = status["lease"]
    lease_line = (
        "lease: none (the embedded metastore admits one driver at a time)"
        if lease is None
        else f"lease: {lease['holder'] or 'free'}" + (f", until {lease['expires_at']} UTC" if lease["holder"] else "")
    )
    sections = [
        f"cdc-status: schema {status['schema']} at {status['at']}; newest batch {status['newest_batch']}",
        lease_line,
        table_text(
            "source tables",
            [{**table, "lag": duration_text(table["lag_seconds"])} for table in status["tables"]],
            [
                "source_format",
                "source_name",
                "source_database",
                "source_schema",
                "source_table",
                "newest_event_at",
                "lag",
                "versions_in_newest_batch",
            ],
        ),
        table_text(
            "partitions",
            status["partitions"],
            ["topic", "partition", "landed_offset", "end_offset", "backlog", "consumer_group", "committed_offset"],
        ),
    ]
    if status["partitions_problem"]:
        sections.append(f"partitions: {status['partitions_problem']}")
    sections.append(
        table_text(
            f"quarantined since {status['quarantined_since']}",
            status["quarantined"],
            ["source_format", "reason", "messages"],
        )
    )
    sections.append(
        table_text("last runs", status["runs"], ["ended_at", "batch_id", "succeeded", "landed", "seconds", "failures"])
    )
    return "\n".join(sections)


def main(argv: list[str] | None = None, environment: dict[str, str] | None = None) -> int:
    environment = dict(os.environ) if environment is None else environment
    try:
        args = _parser().parse_args(argv)
        since_seconds(args.since, time.time())
    except StatusArgumentError as exc:
        print(f"cdc-status: error: {exc}", file=sys.stderr)
        return 2

    from cdc_lakehouse.dbt_project import DbtProject
    from cdc_lakehouse.run_outcome import first_line
    from cdc_lakehouse.scheduled_build import pipeline_schema
    from cdc_lakehouse.session import open_session

    project = DbtProject(args.project_dir, target=args.target)
    spark = open_session(project.spark_settings())
    try:
        status = gather(spark, pipeline_schema(project.manifest()), args, environment, time.time())
    except IngestConfigError as exc:
        print(f"cdc-status: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # the metastore in another driver's hands (Derby), a table unreadable
        print(f"cdc-status: error: the warehouse could not be read: {first_line(exc)}", file=sys.stderr)
        return 1
    print(json.dumps(status, indent=1) if args.json else text_report(status), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
