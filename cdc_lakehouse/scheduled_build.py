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
import json
import sys
import time
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from cdc_lakehouse.command_line import OneLineParser, add_metrics_arguments, add_project_dir_argument
from cdc_lakehouse.dbt_project import PIPELINE_TAG, DbtCommandError, DbtProject
from cdc_lakehouse.scaffold import ROUTE_META, SOURCE_TABLE_META, TYPED_TABLE_TAG
from cdc_lakehouse.schema_lease import SchemaHeld, ensure_held, schema_lease
from cdc_lakehouse.seeds import load_seeds_if_changed
from cdc_lakehouse.typed_table_config import Route, TypedTableConfig, load_config

SCHEDULED = "scheduled"
CHANGE_LOG = "scheduled_change_log"
TYPED_TABLES = "scheduled_typed_tables"
BATCH_TABLES = "cdc_batch_tables"
TABLE_COLUMNS = "cdc_table_columns"
# The nodes the scheduled runs built outside the batch (parts 2 and 3), each with the batch it is built
# through: a typed view, the batch it was created in; an analyst's node, the newest batch its pipeline inputs
# had finished or changed in when it was built.
BUILDS = "cdc_downstream_builds"
# The materialization of a typed history stored as a Delta table (macros/types/cdc_stored_history.sql).
STORED_HISTORY = "cdc_stored_history"
PASSED = ("success", "pass", "warn")


@dataclass(frozen=True)
class RunLog:
    """What the run log says: the newest batch, and the batch each incremental model last finished."""

    batch_id: int | None = None
    landing_version: int | None = None
    # model name -> the last batch it finished; absent: none, or its table was rebuilt in a later batch
    finished: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ChangedTable:
    """A source table and the newest batch that changed it (its versions, or how its columns are typed)."""

    source_format: str
    source_database: str | None
    source_schema: str | None
    source_table: str
    batch_id: int
    # The versions of the table cdc_history wrote in that batch (cdc_batch_tables); none for a retyping.
    versions: int | None = None


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


def read_run_log(spark, schema: str) -> RunLog:
    """The run log as the batch macros read it (macros/batch/cdc_batches.sql, cdc_read_run_log)."""
    if not spark.catalog.tableExists(f"{schema}.cdc_batch_models"):
        return RunLog()
    newest = spark.sql(f"select batch_id, landing_version from {schema}.cdc_batches order by batch_id desc limit 1")
    rows = newest.collect()
    if not rows:
        return RunLog()
    finished = spark.sql(
        "select model_name, max(if(finished_at is not null, batch_id, null)) as batch_id,"
        " max(if(finished_at is null, batch_id, null)) as rebuilt_in_batch_id"
        f" from {schema}.cdc_batch_models group by model_name"
    ).collect()
    return RunLog(
        batch_id=rows[0].batch_id,
        landing_version=rows[0].landing_version,
        finished={
            row.model_name: row.batch_id
            for row in finished
            if row.batch_id is not None and (row.rebuilt_in_batch_id is None or row.batch_id >= row.rebuilt_in_batch_id)
        },
    )


def run_log_after(before: RunLog, result) -> RunLog | None:
    """The run log as the change log's dbt command left it, from what dbt reports of it: every hook of the
    command succeeded, so its run's start opened the batch after the newest of `before` and its run's end
    recorded every incremental model of the pipeline that succeeded as finishing it (macros/batch/cdc_batches.sql,
    cdc_open_batch and cdc_close_batch). Reading the run log again cost a run 0.3-1 s: both tables had just
    taken a commit. None where that is not known (no batch before, a hook that did not succeed): the run
    log is read then. Its landing version is not known: nothing after the change log needs it."""
    results = getattr(result.result, "results", None) or []
    hooks = [r for r in results if r.node.resource_type == "operation"]
    if before.batch_id is None or not hooks or any(str(r.status) != "success" for r in hooks):
        return None
    batch_id = before.batch_id + 1
    succeeded = {
        r.node.name
        for r in results
        if r.node.resource_type == "model"
        and r.node.config.materialized == "incremental"
        and PIPELINE_TAG in r.node.tags
        and str(r.status) == "success"
    }
    return RunLog(batch_id=batch_id, finished=before.finished | dict.fromkeys(succeeded, batch_id))


def landing_version(spark, landing: str) -> int:
    return spark.sql(f"describe history {landing} limit 1").collect()[0].version


def touched_tables(spark, schema: str, after_batch: int) -> list[ChangedTable]:
    """The source tables cdc_batch_tables lists after a batch, each with the newest batch that wrote versions of
    it and how many it wrote then."""
    if not spark.catalog.tableExists(f"{schema}.{BATCH_TABLES}"):
        return []
    rows = spark.sql(
        "select source_format, source_database, source_schema, source_table, cdc_batch_id, sum(versions) as versions"
        f" from {schema}.{BATCH_TABLES} where cdc_batch_id > {int(after_batch)}"
        " group by source_format, source_database, source_schema, source_table, cdc_batch_id"
    ).collect()
    newest: dict[tuple, ChangedTable] = {}
    for row in rows:
        table = tuple(row[:4])
        if table not in newest or row.cdc_batch_id > newest[table].batch_id:
            newest[table] = ChangedTable(*table, batch_id=row.cdc_batch_id, versions=row.versions)
    return list(newest.values())


def retyped_tables(spark, schema: str, after_batch: int) -> list[ChangedTable]:
    """The source tables a column of which cdc_table_columns added or retyped after a batch, each with the newest
    such batch (a column typed before its stamps existed counts as retyped when it was last typed)."""
    if not spark.catalog.tableExists(f"{schema}.{TABLE_COLUMNS}"):
        return []
    changed_in = "coalesce(typing_changed_in_batch, cdc_batch_id)"
    if "typing_changed_in_batch" not in spark.table(f"{schema}.{TABLE_COLUMNS}").columns:
        changed_in = "cdc_batch_id"
    rows = spark.sql(
        f"select source_format, source_database, source_schema, source_table, max({changed_in}) as batch_id"
        f" from {schema}.{TABLE_COLUMNS} where {changed_in} > {int(after_batch)}"
        " group by source_format, source_database, source_schema, source_table"
    ).collect()
    return [ChangedTable(*row) for row in rows]


def matches(source_table: dict | Route, touched: ChangedTable) -> bool:
    """Whether a typed model's source table (its meta, as cdc_source_table_filter reads its arguments) is the
    touched one: database and table always, format and schema when the model names them; or whether a route's
    patterns match it."""
    if isinstance(source_table, Route):
        return source_table.match.matches(
            source_format=touched.source_format,
            source_database=touched.source_database,
            source_schema=touched.source_schema,
            source_table=touched.source_table,
        )
    return (
        source_table.get("source_database") == touched.source_database
        and source_table.get("source_table") == touched.source_table
        and source_table.get("source_format", touched.source_format) == touched.source_format
        and source_table.get("source_schema", touched.source_schema) == touched.source_schema
    )


def descendants(manifest, roots: Iterable[str], within: set[str] | None = None) -> set[str]:
    """The roots and every node downstream of them, among `within` (default: the whole project)."""
    found, pending = set(), [root for root in roots if within is None or root in within]
    while pending:
        node = pending.pop()
        if node not in found:
            found.add(node)
            pending.extend(child for child in manifest.child_map.get(node, []) if within is None or child in within)
    return found


def typed_roots(manifest, pipeline: set[str]) -> list[str]:
    return sorted(
        unique_id
        for unique_id in pipeline
        if unique_id.startswith("model.") and TYPED_TABLE_TAG in manifest.nodes[unique_id].tags
    )


def typed_source_table(node, config: TypedTableConfig | None = None) -> dict | Route | None:
    """What a typed root selects: its source table (its meta, as cdc_source_table_filter reads its arguments),
    or its route in the settings; None when it says neither (or names a route the settings no longer have)."""
    route = node.config.meta.get(ROUTE_META)
    return (config or TypedTableConfig()).route(route) if route else node.config.meta.get(SOURCE_TABLE_META)


def typed_source_tables(
    manifest, pipeline: set[str], config: TypedTableConfig | None = None
) -> dict[str, dict | Route]:
    """Every typed view (the typed roots and the pipeline's models below them) -> the source table of its root
    (typed_source_table); a root without one maps to {}."""
    roots = typed_roots(manifest, pipeline)
    tables = {root: typed_source_table(manifest.nodes[root], config) or {} for root in roots}
    for root in roots:
        for unique_id in descendants(manifest, [root], pipeline):
            if unique_id.startswith("model."):
                tables.setdefault(unique_id, tables[root])
    return tables


def stored_roots(manifest, roots: Iterable[str]) -> list[str]:
    """The typed roots stored as Delta tables (materialization cdc_stored_history), not views."""
    return [root for root in roots if manifest.nodes[root].config.materialized == STORED_HISTORY]


def stored_to_merge(
    manifest,
    roots: Iterable[str],
    built: dict[str, int],
    touched: Collection[ChangedTable],
    config: TypedTableConfig | None = None,
) -> set[str]:
    """The stored typed histories built before whose source table had versions in a later batch."""
    return {
        root
        for root in stored_roots(manifest, roots)
        if root in built
        and any(
            t.batch_id > built[root] and matches(typed_source_table(manifest.nodes[root], config) or {}, t)
            for t in touched
        )
    }


def views_on_merged(manifest, merged: Iterable[str], pipeline: set[str], built: dict[str, int]) -> set[str]:
    """The views on stored histories that merged a batch and were not behind them before: a merge changes
    their rows, not their columns, so they are as current as their history after it."""
    return {
        node
        for root in merged
        for node in descendants(manifest, [root], pipeline) - {root}
        if node.startswith("model.") and built.get(node, -1) >= built[root]
    }


def typed_nodes_to_build(
    manifest,
    pipeline: set[str],
    built: dict[str, int],
    retyped: list[ChangedTable],
    config: TypedTableConfig | None = None,
    touched: Collection[ChangedTable] = (),
) -> set[str]:
    """The typed views of part 2 (see the module's doc), with the pipeline's nodes on them, among the pipeline's
    scheduled nodes: a root no scheduled run created (or without a source table), or whose table was retyped
    after it was created; a view below behind a view it selects from. A stored history whose table had
    versions in a batch (`touched`) after the one it was built through is built alone: it merges them, and the
    views on it read them as they are."""
    roots = typed_roots(manifest, pipeline)
    typed = descendants(manifest, roots, pipeline)
    selected = []
    for unique_id in roots:
        source_table = typed_source_table(manifest.nodes[unique_id], config)
        created = built.get(unique_id)
        if (
            source_table is None
            or created is None
            or any(t.batch_id > created and matches(source_table, t) for t in retyped)
        ):
            selected.append(unique_id)
    for unique_id in typed - set(roots):
        if not unique_id.startswith("model."):
            continue
        created = built.get(unique_id)
        upstream = [built.get(parent) for parent in manifest.nodes[unique_id].depends_on.nodes if parent in typed]
        if created is None or any(batch is None or batch > created for batch in upstream):
            selected.append(unique_id)
    return descendants(manifest, selected, typed) | stored_to_merge(manifest, roots, built, touched, config)


def changed_view_results(
    manifest, typed_tables: dict[str, dict], touched: list[ChangedTable], batch_id: int, ran: set[str]
) -> list[dict]:
    """For the report: each typed view (not among the nodes dbt ran) whose source table had versions in this
    batch, in the shape of node_results: a view's rows changed though nothing created it."""
    results = []
    for unique_id, source_table in sorted(typed_tables.items()):
        if unique_id in ran:
            continue
        versions = [t.versions for t in touched if t.batch_id == batch_id and source_table and matches(source_table, t)]
        if versions:
            results.append(
                {
                    "unique_id": unique_id,
                    "status": "success",
                    "execution_time": 0.0,
                    "message": f"{sum(versions)} versions of its source table in batch {batch_id}",
                    "relation_name": manifest.nodes[unique_id].relation_name,
                }
            )
    return results


def change_log_is_current(manifest, change_log: set[str], run_log: RunLog, landed_version: int) -> bool:
    """Nothing landed since the newest batch, and every incremental model of the change log finished it."""
    if run_log.batch_id is None or landed_version != run_log.landing_version:
        return False
    return all(
        run_log.finished.get(manifest.nodes[unique_id].name) == run_log.batch_id
        for unique_id in change_log
        if unique_id.startswith("model.") and manifest.nodes[unique_id].config.materialized == "incremental"
    )


def node_selector(manifest, unique_id: str) -> str:
    """A selection method that names exactly one node: its fully qualified name."""
    return "fqn:" + ".".join(manifest.nodes[unique_id].fqn)


def selection_arguments(
    manifest, to_build: set[str], within: set[str] | None = None, within_criterion: str = ""
) -> list[str]:
    """dbt's arguments selecting exactly `to_build` in few criteria, each intersected (`,`) with
    `within_criterion` when given, which selects the nodes `within` (default: every node). dbt matches each
    criterion against every node of the project (about 0.1 s a criterion at 6,000 nodes): a criterion per
    node took minutes when a batch touched hundreds of tables. `fqn:<node>+` for each chosen node none of
    whose parents is chosen (one criterion for a scaffolded table instead of four), less what dbt would add
    below them that was not chosen, or a criterion per node when fewer."""
    heads = [node for node in to_build if not any(p in to_build for p in manifest.parent_map.get(node, []))]
    extras = descendants(manifest, heads, within) - to_build
    if len(heads) + len(extras) < len(to_build):
        selected = sorted(node_selector(manifest, head) + "+" + within_criterion for head in heads)
        excluded = sorted(node_selector(manifest, extra) for extra in extras)
        return ["--select", *selected, *(["--exclude", *excluded] if excluded else []), "--indirect-selection", "empty"]
    return ["--select", *sorted(node_selector(manifest, node) for node in to_build), "--indirect-selection", "empty"]


def typed_selection_arguments(manifest, to_build: set[str], typed: set[str]) -> list[str]:
    """Part 2's arguments: one selector when every typed node (`typed`) is in the run, as in a first run;
    otherwise the changed tables' pipeline nodes in few criteria (selection_arguments)."""
    if to_build == typed:
        return ["--selector", TYPED_TABLES]
    return selection_arguments(manifest, to_build, pipeline_nodes(manifest, manifest.nodes), f",tag:{PIPELINE_TAG}")


def pipeline_nodes(manifest, nodes: Iterable[str]) -> set[str]:
    """The pipeline's own nodes among these (tag cdc_pipeline): the others are the analysts'."""
    return {unique_id for unique_id in nodes if PIPELINE_TAG in manifest.nodes[unique_id].tags}


def pipeline_inputs(manifest, unique_id: str, pipeline: set[str], typed: set[str]) -> set[str]:
    """The pipeline's tables nearest upstream of a node, through views, ephemeral models, tables and analysts'
    models: its incremental models and typed views (`typed`), what a batch changes under it (seeds and sources
    are no batch)."""
    found, seen, pending = set(), set(), list(manifest.parent_map.get(unique_id, []))
    while pending:
        parent = pending.pop()
        if parent in seen or parent not in manifest.nodes or manifest.nodes[parent].resource_type != "model":
            continue
        seen.add(parent)
        if parent in typed or (parent in pipeline and manifest.nodes[parent].config.materialized == "incremental"):
            found.add(parent)
        else:
            pending.extend(manifest.parent_map.get(parent, []))
    return found


def downstream_plan(
    manifest,
    analysts: set[str],
    pipeline: set[str],
    changed: dict[str, int],
    built: dict[str, int],
    created: Collection[str] = (),
) -> tuple[set[str], dict[str, int]]:
    """Part 3 (see the module's doc): the analysts' nodes to build, each with the newest batch its pipeline
    inputs changed in (what it is built through: every change up to it is in its inputs). `changed`: each
    pipeline table's newest batch, the one an incremental model last finished, or for a typed view the newest
    that wrote versions of its source table or created it. A node is due when the scheduled runs never built
    it, when one of its pipeline inputs changed in a batch after the one it was built through, or when one is
    a typed view this run `created` (again: its columns may differ, whatever the batch); what is built on a
    due node is due with it. A node over no pipeline table (only seeds, or nothing the pipeline writes) is
    never in the run."""
    typed = set(typed_source_tables(manifest, pipeline))
    inputs = {node: pipeline_inputs(manifest, node, pipeline, typed) for node in analysts}
    through = {node: max(changed.get(table, -1) for table in tables) for node, tables in inputs.items() if tables}
    due = [
        node
        for node in through
        if node not in built
        or not inputs[node].isdisjoint(created)
        or any(changed.get(table, -1) > built[node] for table in inputs[node])
    ]
    buildable = {
        node
        for node in analysts
        if manifest.nodes[node].resource_type == "test" or manifest.nodes[node].config.materialized != "ephemeral"
    }
    to_build = descendants(manifest, due, analysts) & buildable
    return to_build, {node: through.get(node, -1) for node in to_build}


def read_builds(spark, schema: str) -> dict[str, int]:
    if not spark.catalog.tableExists(f"{schema}.{BUILDS}"):
        return {}
    rows = spark.sql(f"select unique_id, built_through from {schema}.{BUILDS}").collect()
    return {row.unique_id: row.built_through for row in rows}


def record_builds(spark, schema: str, built: dict[str, int]) -> None:
    """One MERGE: each node's batch, replacing what the table held of it."""
    table = f"{schema}.{BUILDS}"
    spark.sql(f"create table if not exists {table} (unique_id string, built_through bigint) using delta")
    spark.createDataFrame(sorted(built.items()), "unique_id string, built_through bigint").createOrReplaceTempView(
        "cdc_built_now"
    )
    spark.sql(
        f"merge into {table} as stored using cdc_built_now as now on stored.unique_id = now.unique_id"
        " when matched then update set built_through = now.built_through when not matched then insert *"
    )


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


def invoke_held(project: DbtProject, schema: str, *args: str):
    """A dbt command of the run, then LeaseLost if the run's lease passed to another run meanwhile (its
    statements were refused)."""
    result = project.invoke(*args)
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
        result = invoke_held(project, schema, "build", "--selector", CHANGE_LOG)
        outcome.change_log_seconds = time.monotonic() - started
        outcome.change_log_done_at = time.time()
        outcome.change_log_nodes = len(result.result.results) if hasattr(result.result, "results") else 0
        outcome.failures += failures(result) if not result.success else []
        outcome.results += node_results(result)
        outcome.change_log_current = result.success
        before = run_log.batch_id
        run_log = run_log_after(run_log, result) or read_run_log(spark, schema)
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
