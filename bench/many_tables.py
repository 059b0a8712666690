"""make bench-many-tables: what hundreds of typed tables cost a scheduled run.

Two copies of the project under bench/work-many-tables/, each with the typed tables the bench's project has
(shop.orders and bench.t00), plus those of 2 source tables in one and of 400 in the other (Huawei DRS JSON
tables bench.t000 to bench.t399, scaffolded as cdc-scaffold writes them: 800 models and their tests). For
each, in one process as cdc-run keeps it:
- `parse_s`: dbt's parse of the project (the runner parses once, and again only when a file changes), and
  `reparse_s` the parse a new process pays (make build, an orchestrator's task): dbt's partial parse;
- `select_s`: resolving the selectors cdc-build uses (`dbt ls` of `scheduled` and `scheduled_change_log`,
  once per parse);
- `decide_s`: cdc-build's choice of the typed views to create for a batch that added a column to one source
  table, every typed view created in the batch before (as cdc_downstream_builds records it, made here), with
  the number of nodes chosen: one table's two views, whatever the number of tables;
- `dbt_select_one_s` and `dbt_select_every_s`: dbt's own selection of those nodes, and of every typed node
  (a first run), with the arguments cdc-build gives it (`dbt ls` of them).
Then the whole runs, each in a process of its own on a fresh warehouse (bench/changed.py --tables 2 and 400,
CHANGED_EVENTS events of every format over those tables): the first run, a run with nothing new,
`one_table_s`, the median of three runs each after CHANGED_SMALL events of one table, and `all_tables_s`, a
run after one event of every format in each table, as `runs.2_tables` and `runs.400_tables`, with the ratios
`runs.one_table_400_over_2` and `runs.all_tables_400_over_one_table` (every one of 400 typed tables changed
over one changed). Results under `many_tables` in bench/results/latest.json; chart
bench/results/many_tables.png.
"""

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from cdc_lakehouse import PROJECT_DIR

sys.path.insert(0, str(PROJECT_DIR))

from bench.run import RESULTS_DIR, copy_project_with_typed_table, record_results, seconds_bars

WORK_DIR = PROJECT_DIR / "bench" / "work-many-tables"
TABLE_COUNTS = (2, 400)
CHANGED_TABLE = "t001"


def timed(action) -> tuple[float, object]:
    started = time.perf_counter()
    outcome = action()
    return round(time.perf_counter() - started, 3), outcome


def measure(tables: int) -> dict:
    from cdc_lakehouse.build_plan import (
        CHANGE_LOG,
        SCHEDULED,
        ChangedTable,
        pipeline_nodes,
        typed_nodes_to_build,
        typed_roots,
        typed_selection_arguments,
    )
    from cdc_lakehouse.dbt_project import DbtProject
    from cdc_lakehouse.scaffold import plan_files, write_files
    from cdc_lakehouse.typed_model_names import SourceTable, model_base_name

    project_dir = WORK_DIR / f"project_{tables}"
    copy_project_with_typed_table(project_dir)
    # The copy's own shop__orders__huawei_drs_json and bench__t00 stay: `tables` more source tables beside them.
    sources = [SourceTable(database="bench", table=f"t{n:03d}", source_format="huawei_drs_json") for n in range(tables)]
    write_files(plan_files(sources, [model_base_name(table) for table in sources], {}, project_dir))
    project = DbtProject(project_dir=project_dir)
    parse_s, manifest = timed(project.manifest)
    # What a new process (make build, an orchestrator's task) pays: dbt's partial parse of the unchanged files.
    reparse_s, _ = timed(DbtProject(project_dir=project_dir).manifest)
    select_s, _ = timed(lambda: (project.selected(SCHEDULED), project.selected(CHANGE_LOG)))
    scheduled = pipeline_nodes(manifest, project.selected(SCHEDULED))
    roots = typed_roots(manifest, scheduled)
    typed = scheduled - set(project.selected(CHANGE_LOG))
    # Every typed view was created in batch 5; batch 6 added a column to one source table.
    built = {unique_id: 5 for unique_id in typed if unique_id.startswith("model.")}
    retyped = [ChangedTable("huawei_drs_json", "bench", None, CHANGED_TABLE, 6)]
    decide_s, chosen = timed(lambda: typed_nodes_to_build(manifest, scheduled, built, retyped))

    def dbt_selection(nodes: set[str]) -> int:
        listed = project.listed(*typed_selection_arguments(manifest, nodes, typed))
        assert set(listed) == nodes, "cdc-build's arguments select what it chose"
        return len(listed)

    dbt_select_one_s, _ = timed(lambda: dbt_selection(chosen))
    dbt_select_every_s, _ = timed(lambda: dbt_selection(typed))
    return {
        "typed_tables": len(roots),
        "nodes": len(manifest.nodes),
        "parse_s": parse_s,
        "reparse_s": reparse_s,
        "select_s": select_s,
        "decide_s": decide_s,
        "dbt_select_one_s": dbt_select_one_s,
        "dbt_select_every_s": dbt_select_every_s,
        "nodes_chosen": len(chosen),
        "models_chosen": sorted(manifest.nodes[node].name for node in chosen if node.startswith("model.")),
    }


def whole_runs() -> dict:
    """bench/changed.py's runs with 2 and with 400 source tables, each in a process of its own (a Derby
    metastore is one per process)."""
    runs = {}
    for count in TABLE_COUNTS:
        output = WORK_DIR / f"runs_{count}_tables.json"
        command = [sys.executable, str(PROJECT_DIR / "bench" / "changed.py"), "--tables", str(count), "--output"]
        subprocess.run([*command, str(output)], check=True)
        runs[f"{count}_tables"] = json.loads(output.read_text())
    many, few = (runs[f"{count}_tables"]["one_table_s"] for count in (TABLE_COUNTS[-1], TABLE_COUNTS[0]))
    runs["one_table_400_over_2"] = round(many / few, 2)
    most = runs[f"{TABLE_COUNTS[-1]}_tables"]
    runs["all_tables_400_over_one_table"] = round(most["all_tables_s"] / most["one_table_s"], 2)
    return runs


def chart(figures: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = ["parse", "selectors", "choice of typed tables"]
    figure, (axis, runs_axis) = plt.subplots(1, 2, figsize=(11, 4), width_ratios=(3, 2))
    width = 0.35
    parse_figures = {key: value for key, value in figures.items() if key != "runs"}
    for offset, measured in enumerate(parse_figures.values()):
        values = [measured[key] for key in ("parse_s", "select_s", "decide_s")]
        positions = [index + (offset - 0.5) * width for index in range(len(labels))]
        axis.bar(positions, values, width, label=f"{measured['typed_tables']} typed tables")
        for position, value in zip(positions, values, strict=True):
            axis.text(position, value, f"{value:.2f} s", ha="center", va="bottom", fontsize=8)
    axis.set_xticks(range(len(labels)), labels)
    axis.set_ylabel("seconds, once per parse (parse, selectors) or per run")
    axis.legend()
    few, many = (figures["runs"][f"{count}_tables"] for count in TABLE_COUNTS)
    run_labels = [
        f"{few['source_tables']} tables,\n1 changed",
        f"{many['source_tables']} tables,\n1 changed",
        f"{many['source_tables']} tables,\nall changed",
    ]
    values = [few["one_table_s"], many["one_table_s"], many["all_tables_s"]]
    seconds_bars(runs_axis, run_labels, values)
    runs_axis.set_ylabel("scheduled run, s (wall, runner up)")
    runs_axis.set_title("after a change of one table, or of all")
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def main() -> int:
    shutil.rmtree(WORK_DIR, ignore_errors=True)
    figures = {f"{count}_tables": measure(count) for count in TABLE_COUNTS}
    figures["runs"] = whole_runs()
    record_results("many_tables", figures)
    chart(figures, RESULTS_DIR / "many_tables.png")
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
