"""cdc-build: a scheduled run that builds what changed and nothing else (README, "The scheduled run").

A run has three parts, the first in one batch:
1. The change log (selector scheduled_change_log: every scheduled model of the pipeline but the typed
   views), unless nothing landed since the newest batch and every one of its incremental models finished
   that batch: then there is nothing for it to do, and no batch opens.
2. The typed views (models tagged cdc_typed_table, written by cdc-scaffold, and the pipeline's views on
   them) that need creating: those no scheduled run created, those whose source table's columns were added
   or retyped in cdc_table_columns after they were created, and those behind the view they select from. A
   typed view selects from cdc_history, so a batch changes its rows without creating it again: most runs
   have nothing to do here. A typed history a deployment stores (materialization cdc_stored_history) is
   built too when its source table had versions in a batch since: it merges them.
3. The analysts' models and tests (every scheduled node that is not the pipeline's, README "Building on
   it") downstream of a pipeline table that changed since they were last built (an incremental model that
   finished a batch, a typed view whose source table had versions in a batch or that was created again),
   and what is built on them: plain `dbt build`, no batch. One that fails is reported and retried by the
   next run; it fails nothing of the pipeline's.

The seeds load first when they changed (cdc_lakehouse.seeds). The report lists, besides every node dbt ran,
each typed view whose source table had versions in the run's batch, so an orchestrator's asset events follow
the data.
"""

import argparse
import sys
import time
from collections.abc import Iterable

import yaml

from cdc_lakehouse.build_outcome import (
    BuildOutcome,
    ClosedBatches,
    failures,
    failures_with_messages,
    node_results,
    write_report,
)
from cdc_lakehouse.build_plan import (
    CHANGE_LOG,
    PASSED,
    SCHEDULED,
    change_log_is_current,
    changed_view_results,
    downstream_plan,
    matches,
    pipeline_nodes,
    run_log_after,
    selection_arguments,
    stored_roots,
    stored_to_merge,
    typed_nodes_to_build,
    typed_roots,
    typed_selection_arguments,
    typed_source_tables,
    views_on_merged,
)
from cdc_lakehouse.command_line import OneLineParser, add_metrics_arguments, add_project_dir_argument
from cdc_lakehouse.dbt_project import DbtCommandError, DbtProject
from cdc_lakehouse.run_state import (
    BATCH_TABLES,
    landing_version,
    read_builds,
    read_run_log,
    record_builds,
    retyped_tables,
    touched_tables,
)
from cdc_lakehouse.schema_lease import SchemaHeld, ensure_held, schema_lease
from cdc_lakehouse.seeds import load_seeds_if_changed
from cdc_lakehouse.typed_table_config import load_config


def scheduled_build(project: DbtProject, spark) -> BuildOutcome:
    """One scheduled run (the module's doc): the change log, then the typed tables whose source table changed,
    then the analysts' models over what changed, holding the schema's lease from the seeds to the last part
    (README, "Sharing a warehouse"). A run whose lease passed to another run while it was stopped stops at its
    next dbt command (LeaseLost)."""
    manifest = project.manifest()
    schema = pipeline_schema(manifest)
    with schema_lease(spark, schema):
        try:
            return _scheduled_build(project, spark, manifest, schema)
        except DbtCommandError:
            ensure_held(schema)
            raise


def pipeline_schema(manifest) -> str:
    """The schema of the pipeline's tables and its run log."""
    return manifest.nodes[f"model.{manifest.metadata.project_name}.{BATCH_TABLES}"].schema


def invoke_held(project: DbtProject, schema: str, *args: str, callbacks: Iterable = ()):
    """A dbt command of the run, then LeaseLost if the run's lease passed to another run meanwhile (its
    statements were refused)."""
    result = project.invoke(*args, callbacks=callbacks)
    ensure_held(schema)
    return result


def _scheduled_build(project: DbtProject, spark, manifest, schema: str) -> BuildOutcome:
    load_seeds_if_changed(project.run_checked, spark, schema, project.project_dir)
    landing = next(source for source in manifest.sources.values() if source.name == "cdc_raw")
    scheduled = set(project.selected(SCHEDULED))
    pipeline = pipeline_nodes(manifest, scheduled)
    change_log = set(project.selected(CHANGE_LOG))
    outcome = BuildOutcome()

    run_log = read_run_log(spark, schema)
    if not change_log_is_current(manifest, change_log, run_log, landing_version(spark, f"{landing.schema}.cdc_raw")):
        started = time.monotonic()
        closed = ClosedBatches()
        result = invoke_held(project, schema, "build", "--selector", CHANGE_LOG, callbacks=[closed])
        outcome.change_log_seconds = time.monotonic() - started
        outcome.change_log_done_at = time.time()
        outcome.change_log_nodes = len(result.result.results) if hasattr(result.result, "results") else 0
        outcome.failures += failures(result) if not result.success else []
        outcome.results += node_results(result)
        outcome.change_log_current = result.success
        before = run_log.batch_id
        run_log = run_log_after(run_log, result, closed.batches) or read_run_log(spark, schema)
        outcome.opened_batch = run_log.batch_id is not None and (before is None or run_log.batch_id > before)
    else:
        outcome.change_log_current = True
    outcome.batch_id = run_log.batch_id

    built = read_builds(spark, schema)
    config = load_config(project.project_dir, project.dbt_vars)
    typed_tables = typed_source_tables(manifest, pipeline, config)
    roots = typed_roots(manifest, pipeline)
    outcome.typed_tables = len(roots)
    earliest = min((built.get(root, -1) for root in roots), default=-1)
    stored = stored_roots(manifest, roots)
    stored_touched = touched_tables(spark, schema, min(built.get(root, -1) for root in stored)) if stored else []
    to_build = typed_nodes_to_build(
        manifest, pipeline, built, retyped_tables(spark, schema, earliest), config, stored_touched
    )
    merged = stored_to_merge(manifest, roots, built, stored_touched, config)
    outcome.typed_tables_built = len(set(roots) & to_build - merged)
    created: set[str] = set()
    if to_build:
        started = time.monotonic()
        result = invoke_held(
            project, schema, "build", *typed_selection_arguments(manifest, to_build, pipeline - change_log)
        )
        outcome.typed_seconds = time.monotonic() - started
        outcome.failures += failures(result) if not result.success else []
        outcome.results += node_results(result)
        succeeded = {r["unique_id"] for r in node_results(result) if r["status"] == "success"}
        created = succeeded & set(typed_tables)
        # A view this run built (or failed to) is current only if it succeeded.
        current = created | (views_on_merged(manifest, merged & succeeded, pipeline, built) - to_build)
        if current and run_log.batch_id is not None:
            record_builds(spark, schema, dict.fromkeys(current, run_log.batch_id))
            built |= dict.fromkeys(current, run_log.batch_id)
    outcome.typed_done_at = time.time()

    # Whatever changed before `since` is older than every analysts' node built, so it makes none due.
    analysts = scheduled - pipeline
    newest = run_log.batch_id or 0
    since = min([built[node] for node in analysts if node in built] + [newest - 1])
    touched = touched_tables(spark, schema, since)
    if outcome.change_log_nodes:
        outcome.tables_touched = sum(1 for table in touched if table.batch_id == newest)
        outcome.results += changed_view_results(
            manifest, typed_tables, touched, newest, {r["unique_id"] for r in outcome.results}
        )
    changed = {
        unique_id: max(
            [built.get(unique_id, -1), since]
            + [t.batch_id for t in touched if source_table and matches(source_table, t)]
        )
        for unique_id, source_table in typed_tables.items()
    }
    # The incremental models' batches; a typed view's name in the run log is the table it replaced (an
    # earlier scaffold's), whose last batch says nothing of the view.
    changed |= {
        unique_id: run_log.finished[manifest.nodes[unique_id].name]
        for unique_id in pipeline
        if unique_id.startswith("model.")
        and manifest.nodes[unique_id].config.materialized == "incremental"
        and manifest.nodes[unique_id].name in run_log.finished
    }
    build_downstream(project, spark, manifest, schema, analysts, pipeline, changed, built, created, outcome)
    return outcome


def build_downstream(
    project: DbtProject,
    spark,
    manifest,
    schema: str,
    analysts: set[str],
    pipeline: set[str],
    changed: dict[str, int],
    built: dict[str, int],
    created: set[str],
    outcome: BuildOutcome,
) -> None:
    """Part 3 (see the module's doc): its failures are the run's downstream failures, not the pipeline's."""
    if not analysts:
        return
    to_build, through = downstream_plan(manifest, analysts, pipeline, changed, built, created)
    if not to_build:
        return
    started = time.monotonic()
    result = invoke_held(project, schema, "build", *selection_arguments(manifest, to_build))
    outcome.downstream_seconds = time.monotonic() - started
    outcome.downstream_nodes = len(result.result.results) if hasattr(result.result, "results") else 0
    outcome.downstream_failures += failures_with_messages(result) if not result.success else []
    outcome.results += node_results(result)
    ran = {r["unique_id"]: r["status"] for r in node_results(result)}
    done = {node: batch for node, batch in through.items() if ran.get(node) in PASSED}
    if done:
        record_builds(spark, schema, done)


class BuildArgumentError(Exception):
    """A bad command line: one line on stderr, exit code 2."""


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="cdc-build", description=__doc__.split("\n\n")[0], error_class=BuildArgumentError)
    add_project_dir_argument(parser)
    parser.add_argument("--target", help="dbt profile target (default: the profile's)")
    parser.add_argument("--vars", help="dbt vars (YAML), as for dbt build")
    add_report_argument(parser)
    add_metrics_arguments(parser, serves=False)
    return parser


def add_report_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--report",
        metavar="FILE",
        help="write the run as JSON: its batch and every node dbt ran (the fields of run_results.json), for an "
        "orchestrator to show per model",
    )


def parse_vars(text: str | None) -> dict:
    if not text:
        return {}
    try:
        parsed = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise BuildArgumentError(f"--vars is not YAML: {exc}") from None
    if not isinstance(parsed, dict):
        raise BuildArgumentError("--vars must be a YAML mapping")
    return parsed


def main(argv: list[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
        dbt_vars = parse_vars(args.vars)
    except BuildArgumentError as exc:
        print(f"cdc-build: error: {exc}", file=sys.stderr)
        return 2
    from cdc_lakehouse.metrics import metrics_for
    from cdc_lakehouse.run_outcome import first_line, record_run
    from cdc_lakehouse.session import open_session

    project = DbtProject(args.project_dir, target=args.target, dbt_vars=dbt_vars)
    spark = open_session(project.spark_settings())
    schema = pipeline_schema(project.manifest())
    metrics = metrics_for(args, "cdc-build", schema=schema)
    try:
        outcome = scheduled_build(project, spark)
    except (DbtCommandError, SchemaHeld) as exc:
        print(f"cdc-build: error: {exc}", file=sys.stderr)
        record_run(spark, schema, metrics, None, False, [first_line(exc)])
        return 1
    if args.report:
        write_report(args.report, outcome.report())
    record_run(spark, schema, metrics, outcome, outcome.succeeded, outcome.failures)
    print(f"cdc-build: {outcome.summary()}", flush=True)
    return 0 if outcome.succeeded else 1


if __name__ == "__main__":
    sys.exit(main())
