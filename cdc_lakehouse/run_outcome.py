"""What a scheduled run leaves for the people who run it (README, "Operating it"): its record, which cdc-status
lists, and, when asked for, its metrics: the parts' seconds and the outcome, each table the batch touched
(versions added, newest source event time, lag) and the messages it quarantined."""

import sys
import time

from cdc_lakehouse.build_outcome import BuildOutcome
from cdc_lakehouse.metrics import Metrics
from cdc_lakehouse.pipeline_state import RunRecord, batch_tables, quarantined, write_run_record


def run_seconds(outcome: BuildOutcome | None, ingest_seconds: float | None = None) -> dict[str, float]:
    seconds = {"ingest": ingest_seconds} if ingest_seconds is not None else {}
    if outcome is not None:
        seconds |= {
            "change_log": outcome.change_log_seconds,
            "typed_views": outcome.typed_seconds,
            "downstream": outcome.downstream_seconds,
        }
    return {part: round(value, 3) for part, value in seconds.items()}


def record_run(
    spark,
    schema: str,
    metrics: Metrics | None,
    outcome: BuildOutcome | None,
    succeeded: bool,
    failures: list[str],
    ingest_seconds: float | None = None,
    landed: int | None = None,
) -> None:
    """The run's record and metrics; what cannot be read or written is said on stderr, never the run's
    failure (the run itself is done)."""
    ended_at = time.time()
    seconds = run_seconds(outcome, ingest_seconds)
    batch_id = outcome.batch_id if outcome is not None else None
    try:
        write_run_record(spark, schema, RunRecord(ended_at, batch_id, succeeded, seconds, failures, landed))
    except Exception as exc:
        print(f"cdc: the run's record was not written: {first_line(exc)}", file=sys.stderr, flush=True)
    if metrics is None:
        return
    try:
        if outcome is not None and outcome.opened_batch:
            metrics.record_tables(batch_tables(spark, schema, batch_id), ended_at, added=True)
            metrics.record_quarantined(quarantined(spark, schema, batch_id=batch_id))
    except Exception as exc:
        print(f"cdc: the batch's tables were not read for the metrics: {first_line(exc)}", file=sys.stderr, flush=True)
    current = outcome is not None and outcome.change_log_current
    metrics.record_run(seconds, succeeded, batch_id, current)
    metrics.publish()


def first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
