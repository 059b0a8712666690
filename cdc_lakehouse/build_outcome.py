"""What a scheduled run did: its outcome (the run's line, the report an orchestrator shows) and what dbt said
of the nodes each command ran.
"""

import json
from dataclasses import dataclass, field
from pathlib import Path

# The line the run's end logs of the batch it recorded (macros/batch/cdc_batches.sql, cdc_close_batch).
CLOSED_BATCH_LINE = "cdc_close_batch: "


class ClosedBatches:
    """A dbt callback (dbtRunner's): the batches a command's run end recorded, each {batch_id, finished: the
    models that finished it}, from the line cdc_close_batch logs."""

    def __init__(self) -> None:
        self.batches: list[dict] = []

    def __call__(self, event) -> None:
        if event.info.name == "JinjaLogDebug" and event.data.msg.startswith(CLOSED_BATCH_LINE):
            self.batches.append(json.loads(event.data.msg.removeprefix(CLOSED_BATCH_LINE)))


@dataclass
class BuildOutcome:
    batch_id: int | None = None
    # The change log holds everything landed at the run's start: it finished the batch, or had nothing to do.
    change_log_current: bool = False
    # The run opened a new batch (batch_id): what the batch wrote is this run's, counted once.
    opened_batch: bool = False
    change_log_nodes: int = 0
    change_log_seconds: float = 0.0
    # Source tables with versions in this run's batch.
    tables_touched: int = 0
    typed_tables: int = 0
    # Typed tables whose views this run created (part 2).
    typed_tables_built: int = 0
    typed_seconds: float = 0.0
    # When each part's tables held the batch (epoch seconds), for produce-to-visible latency (bench/latency.py).
    change_log_done_at: float | None = None
    typed_done_at: float | None = None
    # Part 3: the analysts' nodes it ran, and those that failed ("name: dbt's message"), which fail no part of
    # the pipeline's.
    downstream_nodes: int = 0
    downstream_seconds: float = 0.0
    downstream_failures: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    # Every node either dbt command ran, in dbt's run_results.json shape (node_results).
    results: list[dict] = field(default_factory=list)

    @property
    def succeeded(self) -> bool:
        return not self.failures

    def summary(self) -> str:
        change_log = (
            f"change log {self.change_log_nodes} nodes in {self.change_log_seconds:.1f} s, "
            f"{self.tables_touched} source tables touched"
            if self.change_log_nodes
            else "change log: nothing new"
        )
        tables = f"{self.typed_tables} table" + ("" if self.typed_tables == 1 else "s")
        typed = (
            f"typed views of {self.typed_tables_built} of {tables} created in {self.typed_seconds:.1f} s"
            if self.typed_tables_built
            else f"typed views of {tables} as they were"
        )
        downstream = ""
        if self.downstream_nodes:
            downstream = f"; downstream {self.downstream_nodes} nodes in {self.downstream_seconds:.1f} s"
        if self.downstream_failures:
            downstream += f", failed: {'; '.join(self.downstream_failures)}"
        failed = f"; failed: {', '.join(self.failures)}" if self.failures else ""
        return f"batch {self.batch_id}: {change_log}; {typed}{downstream}{failed}"

    def report(self) -> dict:
        """What an orchestrator shows of the run: dbt's run_results.json fields for every dbt command, and the
        batch."""
        return {
            "batch_id": self.batch_id,
            "succeeded": self.succeeded,
            "failures": self.failures,
            "downstream_failures": self.downstream_failures,
            "results": self.results,
        }


def node_results(result) -> list[dict]:
    """The nodes one dbt command ran, with the run_results.json fields an orchestrator reads: a run has two
    commands, and dbt's run_results.json keeps only the last."""
    return [
        {
            "unique_id": r.node.unique_id,
            "status": str(r.status),
            "execution_time": r.execution_time,
            "message": r.message,
            "relation_name": getattr(r.node, "relation_name", None),
        }
        for r in getattr(result.result, "results", None) or []
    ]


def write_report(path: str, report: dict) -> None:
    """The report, written whole or not at all: a reader never sees half a file."""
    partial = Path(f"{path}.partial")
    partial.write_text(json.dumps(report, indent=1))
    partial.replace(path)


FAILED = ("error", "fail", "runtime error")


def failures(result) -> list[str]:
    if result.result is None or not hasattr(result.result, "results"):
        return [f"dbt: {result.exception}"]
    return [r.node.name for r in result.result.results if str(r.status) in FAILED]


def failures_with_messages(result) -> list[str]:
    """Each failed node with dbt's message on one line, for the run's line and report."""
    if result.result is None or not hasattr(result.result, "results"):
        return [f"dbt: {one_line(result.exception)}"]
    return [
        f"{r.node.name}: {one_line(r.message)}" if r.message else r.node.name
        for r in result.result.results
        if str(r.status) in FAILED
    ]


def one_line(text, limit: int = 400) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
