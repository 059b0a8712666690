"""What a scheduled run builds (cdc_lakehouse/scheduled_build.py's doc: its three parts), planned from dbt's
manifest, the run log and the source tables that changed: pure functions, no Spark and no dbt command, so each
rule is tested on a manifest alone (tests/python/test_typed_selection.py, test_scheduled_build.py).
"""

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

from cdc_lakehouse.dbt_project import PIPELINE_TAG
from cdc_lakehouse.typed_model_names import ROUTE_META, SOURCE_TABLE_META, TYPED_TABLE_TAG
from cdc_lakehouse.typed_table_config import Route, TypedTableConfig

SCHEDULED = "scheduled"
CHANGE_LOG = "scheduled_change_log"
TYPED_TABLES = "scheduled_typed_tables"
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


def run_log_after(before: RunLog, result, closed: list[dict]) -> RunLog | None:
    """The run log as the change log's dbt command left it, without reading it again (both its tables just took
    a commit): `before` and what the command's run end logged it recorded (`closed`, build_outcome.ClosedBatches:
    the batch and the models that finished it; the rule is cdc_close_batch's alone), when every hook of the
    command succeeded. None where that is not known (no batch closed, a hook that did not succeed): the run
    log is read then. Its landing version is not known: nothing after the change log needs it."""
    results = getattr(result.result, "results", None) or []
    hooks = [r for r in results if r.node.resource_type == "operation"]
    if len(closed) != 1 or not hooks or any(str(r.status) != "success" for r in hooks):
        return None
    ((batch_id, finished),) = [(batch["batch_id"], batch["finished"]) for batch in closed]
    return RunLog(batch_id=batch_id, finished=before.finished | dict.fromkeys(finished, batch_id))


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
    """The typed views of part 2 (cdc_lakehouse/scheduled_build.py's doc), with the pipeline's nodes on them, among the
    pipeline's scheduled nodes: a root no scheduled run created (or without a source table), or whose table was
    retyped after it was created; a view below behind a view it selects from. A stored history whose table had
    versions in a batch (`touched`) after the one it was built through is built alone: it merges them, and the views
    on it read them as they are."""
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
    """Part 3 (cdc_lakehouse/scheduled_build.py's doc): the analysts' nodes to build, each with the newest batch its
    pipeline inputs changed in (what it is built through: every change up to it is in its inputs). `changed`: each
    pipeline table's newest batch, the one an incremental model last finished, or for a typed view the newest that
    wrote versions of its source table or created it. A node is due when the scheduled runs never built it, when one
    of its pipeline inputs changed in a batch after the one it was built through, or when one is a typed view this
    run `created` (again: its columns may differ, whatever the batch); what is built on a due node is due with it. A
    node over no pipeline table (only seeds, or nothing the pipeline writes) is never in the run."""
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
