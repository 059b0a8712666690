"""make bench-changed: what a scheduled run costs when one source table of many changed, with cdc-build in a
long-lived process (README, "The scheduled run").

A fresh warehouse under bench/work/ and the project with the typed tables of every Huawei DRS JSON bench table
(20 source tables, bench/generate.py), built from CHANGED_EVENTS (default 20,000) events of every format over
all tables, in one process (as cdc-run): the project's parse, then these runs, each timed:
- `first`: the first scheduled run (cdc-build);
- `idle`: three runs with nothing landed (the median): the floor of a run once the runner is up;
- `one_table`: three runs, each after CHANGED_SMALL (default 100) events of one table, t05, in every format
  (one typed table of the 20 changed): the median, runner warm, as the targets are: after WARMUP_RUNS runs
  of the same kind, not timed but recorded (`warmup_runs_s`), while the JVM still compiles the run's code
  (docs/decisions.md, "A small batch's time is Spark's work per statement"); its breakdown is that run's;
- `all_tables`: a run after one event of every format in each of the 20 tables: every typed table changed,
  by a row or two (a replicated database changing at once); `all_tables_over_one_table` is its cost beside
  `one_table`'s;
- `one_table_all_typed`: the one-table change, built as `dbt build --selector scheduled` builds it, every
  typed table in the run;
- `one_table_metrics`: the one-table runs again, each beside one of `one_table`'s (alternating), with what
  cdc-run does after a run when its metrics are on (the batch's tables and quarantine read, the textfile
  written) where `one_table`'s write the run's record alone: `metrics_over_off` is the cost of metrics, and
  `after_run_metrics_s` beside `after_run_record_only_s` that step's own seconds, without the runs' noise.
Recorded under `changed` in bench/results/latest.json; chart bench/results/changed.png. With `--tables N
--output PATH` (make bench-many-tables), N source tables and their typed tables instead of 20, the changed
table the sixth (or the last), and the figures written to PATH without the run of every typed table; with
`--route` too (make bench-route), the N tables are the shards of one route (two views), and the figures stop
after `one_table`.
"""

import argparse
import itertools
import json
import os
import statistics
import sys
import time
from pathlib import Path

from cdc_lakehouse import PROJECT_DIR

sys.path.insert(0, str(PROJECT_DIR))

from bench.breakdown import StatementTimes, statement_seconds
from bench.run import BENCH_PROJECT_DIR, RESULTS_DIR, fresh_warehouse, land, record_results, seconds_bars

ONE_TABLE_RUNS = 3
WARMUP_RUNS = 7


def timed(action) -> tuple[float, object]:
    started = time.perf_counter()
    outcome = action()
    return round(time.perf_counter() - started, 2), outcome


def chart(changed: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tables = changed["source_tables"]
    labels = [
        "first run",
        "nothing new",
        f"1 of {tables} tables\n(cdc-build)",
        f"{tables} of {tables} tables\n(cdc-build)",
        f"1 of {tables} tables\n(dbt build --selector\nscheduled)",
    ]
    keys = ("first_s", "idle_s", "one_table_s", "all_tables_s", "one_table_all_typed_s")
    values = [changed[key] for key in keys]
    figure, axis = plt.subplots(figsize=(9, 4))
    seconds_bars(axis, labels, values)
    axis.set_ylabel("scheduled run, s (wall, runner up)")
    axis.set_title(f"{changed['typed_tables']} typed tables, {changed['events']:,} events, one process")
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def bench_tables(count: int) -> tuple[str, ...]:
    """`count` Huawei DRS JSON source tables: t00 to t19 for the default 20, t000 to t399 for 400."""
    width = max(2, len(str(count - 1)))
    return tuple(f"t{number:0{width}d}" for number in range(count))


# `--route`: the source tables as the shards of one route (README, "The estate: routes, ...").
SHARDS_ROUTE = {"name": "bench_shards", "match": {"source_database": "bench"}}


def measure(
    table_count: int, events: int, small: int, seed: int, every_typed_table: bool, as_route: bool = False
) -> dict:
    fresh_warehouse()
    from bench.generate import DRS_AVRO_SCHEMA
    from cdc_lakehouse.dbt_project import DbtProject
    from cdc_lakehouse.metrics import Metrics
    from cdc_lakehouse.run_outcome import record_run
    from cdc_lakehouse.scaffold import plan_files, write_files
    from cdc_lakehouse.scheduled_build import pipeline_schema, scheduled_build
    from cdc_lakehouse.session import open_session, profile_spark_settings
    from cdc_lakehouse.typed_model_names import SourceTable, model_base_name
    from cdc_lakehouse.typed_table_config import parse_config

    os.environ["CDC_DRS_AVRO_SCHEMA"] = str(DRS_AVRO_SCHEMA)
    names = bench_tables(table_count)
    changed_table = names[min(5, table_count - 1)]
    tables = [SourceTable(database="bench", table=name, source_format="huawei_drs_json") for name in names]
    dbt_vars = {}
    if as_route:
        dbt_vars = {"cdc_typed_tables": {"routes": [SHARDS_ROUTE]}}
        route = parse_config(dbt_vars["cdc_typed_tables"]).route(SHARDS_ROUTE["name"])
        write_files(plan_files([], [], {}, BENCH_PROJECT_DIR, routes={route: (route.name, [])}))
    else:
        write_files(plan_files(tables, [model_base_name(table) for table in tables], {}, BENCH_PROJECT_DIR))
    spark = open_session(profile_spark_settings())
    statements = StatementTimes()
    project = DbtProject(project_dir=BENCH_PROJECT_DIR, callbacks=[statements], dbt_vars=dbt_vars)
    parse_s, _ = timed(project.manifest)

    schema = pipeline_schema(project.manifest())

    # Seconds of what cdc-run does after each run (record_run), by metrics off (False) and on (True).
    after_run_s: dict[bool, list[float]] = {False: [], True: []}

    def build(metrics: Metrics | None = None):
        outcome = scheduled_build(project, spark)
        print(f"bench-changed: {outcome.summary()}", flush=True)
        if not outcome.succeeded:
            raise SystemExit(f"bench-changed: failed: {', '.join(outcome.failures)}")
        seconds, _ = timed(lambda: record_run(spark, schema, metrics, outcome, outcome.succeeded, outcome.failures))
        after_run_s[metrics is not None].append(seconds)
        return outcome

    metrics = Metrics()
    metrics.add_runs(schema)
    metrics.textfile = RESULTS_DIR.parent / "work" / "changed-metrics.prom"

    land(spark, events, seed, first_seq=0, tables=names)
    seeds = itertools.count(seed + 1)
    first_s, first = timed(build)
    idle_s = statistics.median(timed(build)[0] for _ in range(3))
    one_table_runs, metrics_runs = [], []
    small_runs = WARMUP_RUNS + ONE_TABLE_RUNS * (1 if as_route else 2)
    for number in range(small_runs):
        land(spark, small, next(seeds), first_seq=events + number * small, tables=(changed_table,))
        statements.statements.clear()
        with_metrics = not as_route and number >= WARMUP_RUNS and (number - WARMUP_RUNS) % 2 == 1
        if with_metrics:
            metrics_runs.append(timed(lambda: build(metrics))[0])
        else:
            one_table_runs.append((*timed(build), list(statements.statements)))
    warmup_runs, one_table_runs = one_table_runs[:WARMUP_RUNS], one_table_runs[WARMUP_RUNS:]
    one_table_s, one_table, one_table_statements = sorted(one_table_runs, key=lambda run: run[0])[ONE_TABLE_RUNS // 2]
    changed = {
        "events": events,
        "small_events": small,
        "source_tables": table_count,
        "typed_tables": first.typed_tables,
        "parse_s": parse_s,
        "first_s": first_s,
        "first_typed_built": first.typed_tables_built,
        "idle_s": idle_s,
        "one_table_s": one_table_s,
        "one_table_runs_s": [run[0] for run in one_table_runs],
        "warmup_runs_s": [run[0] for run in warmup_runs],
        "one_table_typed_built": one_table.typed_tables_built,
        "one_table_change_log_s": round(one_table.change_log_seconds, 2),
        "one_table_typed_s": round(one_table.typed_seconds, 2),
        **statement_seconds(
            one_table.results[: one_table.change_log_nodes], one_table_statements, "one_table_change_log"
        ),
        **statement_seconds(one_table.results[one_table.change_log_nodes :], one_table_statements, "one_table_typed"),
        "one_table_sql_outside_nodes": sum(1 for node, _, _ in one_table_statements if not node),
        "one_table_sql_outside_nodes_s": round(
            sum(seconds for node, _, seconds in one_table_statements if not node), 2
        ),
    }
    if as_route:
        return changed
    changed |= {
        "one_table_metrics_s": statistics.median(metrics_runs),
        "one_table_metrics_runs_s": metrics_runs,
        "metrics_over_off": round(statistics.median(metrics_runs) / one_table_s, 2),
        # What the metrics add to a run: the after-run step's seconds with them, beside without (the run's
        # record alone), medians over the timed one-table runs.
        "after_run_metrics_s": statistics.median(after_run_s[True]),
        "after_run_record_only_s": statistics.median(after_run_s[False][-ONE_TABLE_RUNS:]),
    }
    formats = 9
    after_one_table = events + small_runs * small
    for number, name in enumerate(names):
        land(spark, formats, next(seeds), first_seq=after_one_table + number * formats, tables=(name,))
    statements.statements.clear()
    all_tables_s, all_tables = timed(build)
    changed |= {
        "all_tables_s": all_tables_s,
        "all_tables_typed_built": all_tables.typed_tables_built,
        "all_tables_change_log_s": round(all_tables.change_log_seconds, 2),
        "all_tables_typed_s": round(all_tables.typed_seconds, 2),
        "all_tables_over_one_table": round(all_tables_s / one_table_s, 2),
        **statement_seconds(
            all_tables.results[all_tables.change_log_nodes :], statements.statements, "all_tables_typed"
        ),
    }
    first_seq = after_one_table + table_count * formats
    if every_typed_table:
        land(spark, small, next(seeds), first_seq=first_seq, tables=(changed_table,))
        all_typed_s, all_typed = timed(lambda: project.invoke("build", "--selector", "scheduled"))
        if not all_typed.success:
            raise SystemExit(f"bench-changed: dbt build --selector scheduled failed: {all_typed.exception}")
        changed |= {
            "one_table_all_typed_s": all_typed_s,
            "one_table_all_typed_nodes": len(all_typed.result.results),
            "one_table_over_all_typed": round(one_table_s / all_typed_s, 2),
        }
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=20, help="source tables with a typed table (default 20)")
    parser.add_argument(
        "--output", type=Path, help="write the figures here, without the run of every typed table (bench-many-tables)"
    )
    parser.add_argument(
        "--route", action="store_true", help="the tables as the shards of one route, without the run of every table"
    )
    arguments = parser.parse_args(argv)
    events = int(os.environ.get("CHANGED_EVENTS", "20000"))
    small = int(os.environ.get("CHANGED_SMALL", "100"))
    seed = int(os.environ.get("BENCH_SEED", "7"))
    changed = measure(
        arguments.tables, events, small, seed, every_typed_table=arguments.output is None, as_route=arguments.route
    )
    if arguments.output:
        arguments.output.write_text(json.dumps(changed, indent=2))
        return 0
    record_results("changed", changed)
    chart(changed, RESULTS_DIR / "changed.png")
    print(json.dumps(changed, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
