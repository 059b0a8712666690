"""cdc-run: the long-lived runner. In one process, one Spark session and one parsed dbt project, it runs in a
loop: ingest what the Kafka topics hold (cdc-ingest's availableNow catch-up), then a scheduled run (cdc-build:
the change log, then the typed tables whose source tables changed), one line per run, until SIGTERM or
Ctrl-C, which end it after the run under way. A run that fails leaves its batch to the next run (each model
catches up on what it did not finish); the loop goes on.

`cdc-run --once` is one such run, then exit: an orchestrator's task (orchestration/), one Spark driver and one
batch per scheduled run, `--report` saying what dbt ran for the orchestrator to show per model.
"""

import argparse
import os
import signal
import sys
import threading
import time

from cdc_lakehouse.build_outcome import write_report
from cdc_lakehouse.command_line import OneLineParser, add_metrics_arguments, add_project_dir_argument
from cdc_lakehouse.ingest import (
    ConsumerGroupCommits,
    IngestJob,
    Progress,
    add_ingest_arguments,
    ingest_job,
    partition_lags,
    without_secrets,
)
from cdc_lakehouse.ingest_config import IngestConfigError
from cdc_lakehouse.scheduled_build import (
    BuildArgumentError,
    add_report_argument,
    parse_vars,
    scheduled_build,
)

DEFAULT_EVERY_SECONDS = 60.0


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="cdc-run", description=__doc__.split("\n\n")[0], error_class=IngestConfigError)
    add_ingest_arguments(parser)
    parser.add_argument(
        "--every",
        type=float,
        default=DEFAULT_EVERY_SECONDS,
        metavar="SECONDS",
        help=f"start a run at most this often; a longer run is followed at once by the next (default: "
        f"{DEFAULT_EVERY_SECONDS:g})",
    )
    parser.add_argument(
        "--once",
        action="store_true",
        help="one run, then exit (1 if it failed): what an orchestrator's task runs, one driver and one batch",
    )
    add_project_dir_argument(parser)
    parser.add_argument("--vars", help="dbt vars (YAML), as for dbt build")
    add_report_argument(parser)
    add_metrics_arguments(parser, serves=True)
    return parser


def ingest_once(job: IngestJob, spark, stop: threading.Event, progress: Progress) -> tuple[int, int]:
    """Everything the topics hold beyond the checkpoint, landed: (messages landed, messages left behind)."""
    query = job.start(spark, progress=progress)
    progress.follow(query, stop.is_set)
    left = sum(sum(lags.values()) for lags in partition_lags(query.lastProgress).values())
    return progress.landed, left


def main(argv: list[str] | None = None, environment: dict[str, str] | None = None) -> int:
    environment = dict(os.environ) if environment is None else environment
    try:
        args = _parser().parse_args(argv)
        job = ingest_job(args, environment)
        dbt_vars = parse_vars(args.vars)
    except (IngestConfigError, BuildArgumentError) as exc:
        print(f"cdc-run: error: {exc}", file=sys.stderr)
        return 2

    from cdc_lakehouse.dbt_project import DbtProject
    from cdc_lakehouse.metrics import metrics_for
    from cdc_lakehouse.pipeline_state import all_tables
    from cdc_lakehouse.run_outcome import first_line, record_run
    from cdc_lakehouse.scheduled_build import pipeline_schema
    from cdc_lakehouse.session import open_session

    project = DbtProject(args.project_dir, target=args.target, dbt_vars=dbt_vars)
    spark = open_session(project.spark_settings())
    schema = pipeline_schema(project.manifest())
    kafka = job.kafka_offsets(spark)
    metrics = metrics_for(args, "cdc-run", kafka=kafka, schema=schema)
    commits = ConsumerGroupCommits(job.config, kafka, job.client_settings, metrics)
    if metrics is not None and metrics.textfile is None:
        # A served process starts from nothing (a textfile carries them): each table's newest event time.
        try:
            metrics.record_tables(all_tables(spark, schema), time.time(), added=False)
        except Exception as exc:
            print(f"cdc-run: the tables' newest events were not read: {first_line(exc)}", file=sys.stderr)
    stop = threading.Event()
    for signal_number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signal_number, lambda *_: stop.set())
    runs = failed = 0
    while not stop.is_set():
        started = time.monotonic()
        runs += 1
        line = f"cdc-run: run {runs}:"
        report: dict = {"landed": 0, "left_in_kafka": None, "ingest_error": None}
        progress = Progress(job.config, prints=False, commits=commits, metrics=metrics)
        try:
            report["landed"], report["left_in_kafka"] = ingest_once(job, spark, stop, progress)
            line += f" {report['landed']} messages landed, {report['left_in_kafka']} left in Kafka;"
        except IngestConfigError as exc:
            print(f"cdc-run: error: {exc}", file=sys.stderr)
            return 2
        except Exception as exc:  # the stream stopped (a StreamingQueryException): build what landed
            report["ingest_error"] = without_secrets(exc, job.client_settings)
            line += f" ingest failed: {report['ingest_error']};"
        ingest_seconds = time.monotonic() - started
        outcome = None
        try:
            outcome = scheduled_build(project, spark)
            line += f" {outcome.summary()}"
            report.update(outcome.report())
        except Exception as exc:  # dbt could not run (DbtCommandError), or Spark failed reading the run log
            error = first_line(exc)
            line += f" build failed: {error}"
            report.update(succeeded=False, failures=[error], results=[])
        failed += not report["succeeded"]
        if args.report:
            write_report(args.report, report)
        failures = report["failures"] + ([f"ingest: {report['ingest_error']}"] if report["ingest_error"] else [])
        record_run(
            spark,
            schema,
            metrics,
            outcome,
            report["succeeded"] and not report["ingest_error"],
            failures,
            ingest_seconds,
            report["landed"],
        )
        print(f"{line}; {time.monotonic() - started:.1f} s", flush=True)
        if args.once:
            kafka.close()
            return 1 if failed or report["ingest_error"] else 0
        stop.wait(max(0.0, args.every - (time.monotonic() - started)))
    kafka.close()
    print(f"cdc-run: stopped after {runs} runs, {failed} failed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
