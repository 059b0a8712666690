"""make bench-reads: an analyst's queries of a typed table, beside the same queries of a Delta table of the same
typed rows (README, "Typed tables and querying").

A fresh warehouse under bench/work/ and the project with the typed tables of bench.t00 (Huawei DRS JSON,
cdc-scaffold's models), the pipeline's first scheduled run over READS_EVENTS events of every format in 400
source tables (bench.t00 and t001 to t399; no other typed tables). The history then grows as many runs would
leave it, written in one statement each into cdc_history in the change log's own shape: `keys` keys of
bench.t00 with `versions` versions each (a key's last version deleted for one key in 50), and
`other_versions` versions over the other 399 Huawei DRS JSON tables; then the maintenance a deployment runs
(cdc-maintain's `cdc_maintain`: clustering, compaction, vacuum). The Delta tables are materialized from the
typed models (`create table ... as select * from` each), and each query runs three times on the typed model
and on the table, the best of each recorded with their ratio; the two answers must be the same:
- `aggregate`: the current rows counted and their amounts summed by name (eight names);
- `lookup`: one key's current row, by its typed `id`;
- `range`: the versions of one day (by `valid_from`) counted and their amounts summed, from the history.
First on the typed views (`queries.views`), with two scheduled runs after SMALL_EVENTS events of bench.t00
(`small_runs.views`); then with bench.t00's history stored (materialization cdc_stored_history, marked in the
project's dbt_project.yml): its first build from the whole history (`stored_build_s`), two such runs
(`small_runs.stored`: `typed_s` is the merge), the maintenance again, and the queries (`queries.stored`, on
tables materialized again).
`--size default` is 1,000,000 keys and 10,000,000 versions beside 4,000,000 of the other tables; `--size
quick` 100,000 keys and 400,000 versions beside 200,000. Recorded under `reads.<size>` in
bench/results/latest.json; chart bench/results/reads.png (the sizes recorded so far).
"""

import argparse
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from cdc_lakehouse import PROJECT_DIR

sys.path.insert(0, str(PROJECT_DIR))

from bench.changed import bench_tables
from bench.run import BENCH_PROJECT_DIR, RESULTS_DIR, TYPED_TABLE, fresh_warehouse, land, record_results

READS_EVENTS = int(os.environ.get("READS_EVENTS", "20000"))
SCHEMA = "cdc"
REFERENCE_SCHEMA = "bench_reads"
# Synthesized keys start here: beside the generator's own keys of the table, never one of them.
FIRST_KEY = 10_000_000
NAMES = 8
DAY = "2026-03-05"
TIMINGS = 3
SMALL_EVENTS = 100


@dataclass(frozen=True)
class Size:
    keys: int
    versions: int
    other_versions: int


SIZES = {
    "default": Size(keys=1_000_000, versions=10_000_000, other_versions=4_000_000),
    "quick": Size(keys=100_000, versions=400_000, other_versions=200_000),
}

QUERIES = {
    "aggregate": (
        "current",
        "select name, count(*) as rows, cast(sum(amount) as string) as amount from {relation} group by name"
        " order by name",
    ),
    "lookup": ("current", "select * from {relation} where id = {key}"),
    "range": (
        "history",
        "select count(*) as versions, cast(sum(amount) as string) as amount from {relation}"
        f" where valid_from >= timestamp'{DAY} 00:00:00' and valid_from < timestamp'{DAY} 00:00:00' + interval 1 day",
    ),
}


def version_rows(table: str, keys: int, versions_per_key: int, first_key: int) -> str:
    """The versions of `keys` keys of each bench table `table` matches (a SQL predicate on the templates), as the
    change log writes them: one template row of the table gives its source columns, each key `versions_per_key`
    versions an hour apart from its own start in the four days from 2026-03-02 (a row image of the four
    columns of the generator's tables), the last current, deleted for one key in 50."""
    return f"""
        with templates as (
            select *
            from (
                select
                    versions.*,
                    row_number() over (
                        partition by versions.source_format, versions.source_database, versions.source_table
                        order by versions.scd_id
                    ) as template_number
                from {SCHEMA}.cdc_history as versions
                where versions.source_format = 'huawei_drs_json' and versions.source_database = 'bench'
            )
            where template_number = 1 and {table}
        ),
        steps as (
            select
                templates.*,
                keys.id + {first_key} as key,
                version_number,
                version_number = {versions_per_key} - 1 as is_last,
                timestamp'2026-03-02 00:00:00'
                + make_dt_interval(0, 0, 0, (keys.id * 7919) % 345600 + version_number * 3600) as starts
            from templates
            cross join range({keys}) as keys
            lateral view explode(sequence(0, {versions_per_key} - 1)) version_steps as version_number
        )
        select
            source_format,
            source_name,
            source_task,
            source_time_zone,
            source_database,
            source_schema,
            source_table,
            to_json(array(cast(key as string))) as pk,
            cast(null as string) as previous_pk,
            map(
                'amount', format_number(((key * 31 + version_number) % 1000000) / 100.0, '0.00'),
                'id', cast(key as string),
                'name', concat('name_', cast(key % {NAMES} as string)),
                'updated', date_format(starts, 'yyyy-MM-dd HH:mm:ss')
            ) as row,
            starts as valid_from,
            if(is_last, null, starts + interval 1 hour) as valid_to,
            is_last as is_current,
            is_last and key % 50 = 0 as is_deleted,
            case when version_number = 0 then 'c' when is_last and key % 50 = 0 then 'd' else 'u' end as op,
            cast(version_number as decimal(38, 0)) as source_seq,
            array(cast(version_number as decimal(38, 0))) as event_order,
            0 as row_index,
            concat_ws('/', 'bench-reads', source_table, cast(key as string), cast(version_number as string))
                as event_id,
            sha2(concat_ws('/', 'bench-reads', source_table, cast(key as string), cast(version_number as string)), 256)
                as scd_id,
            current_timestamp() as ingested_at,
            cdc_batch_id
        from steps
    """


def grow_history(spark, size: Size, other_tables: int) -> None:
    measured = "source_table = '{table}'".format(**TYPED_TABLE)
    spark.sql(
        f"insert into {SCHEMA}.cdc_history " + version_rows(measured, size.keys, size.versions // size.keys, FIRST_KEY)
    )
    per_table_keys = size.other_versions // other_tables // 4
    spark.sql(f"insert into {SCHEMA}.cdc_history " + version_rows(f"not ({measured})", per_table_keys, 4, FIRST_KEY))


def best_of(spark, sql: str) -> tuple[float, list]:
    seconds, rows = [], None
    for _ in range(TIMINGS):
        started = time.perf_counter()
        rows = [tuple(row) for row in spark.sql(sql).collect()]
        seconds.append(time.perf_counter() - started)
    return round(min(seconds), 3), rows


def mark_stored(project_dir: Path, model: str) -> None:
    """The typed history `model` stored (materialization cdc_stored_history), as a deployment marks it in its
    dbt_project.yml (README, "Typed tables and querying")."""
    path = project_dir / "dbt_project.yml"
    anchor = "    tables:\n      +tags: [cdc_pipeline]\n      +materialized: view\n"
    text = path.read_text()
    if anchor not in text:
        raise SystemExit("bench-reads: dbt_project.yml no longer configures models/tables/ as this expects")
    path.write_text(text.replace(anchor, f"{anchor}      {model}:\n        +materialized: cdc_stored_history\n"))


def timed_queries(spark, typed: dict[str, str], tables: dict[str, str], key: int) -> dict:
    """Each query of QUERIES on the typed models and on the Delta tables, best of TIMINGS, and their ratio."""
    queries = {}
    for name, (part, template) in QUERIES.items():
        typed_sql = template.format(relation=typed[part], key=key)
        typed_s, typed_rows = best_of(spark, typed_sql)
        table_s, table_rows = best_of(spark, template.format(relation=tables[part], key=key))
        if typed_rows != table_rows:
            raise SystemExit(f"bench-reads: {name}: {typed[part]} answers {typed_rows[:3]}, the table {table_rows[:3]}")
        queries[name] = {
            "query": typed_sql,
            "rows": len(typed_rows),
            "typed_s": typed_s,
            "table_s": table_s,
            "typed_over_table": round(typed_s / table_s, 2),
        }
        print(f"bench-reads: {name}: {typed[part]} {typed_s} s, table {table_s} s", flush=True)
    return queries


def small_run(spark, project, first_seq: int, seed: int) -> dict:
    """A scheduled run after SMALL_EVENTS events of bench.t00 (every format): its seconds, and the typed part's."""
    from cdc_lakehouse.scheduled_build import scheduled_build

    land(spark, SMALL_EVENTS, seed, first_seq=first_seq, tables=(TYPED_TABLE["table"],))
    started = time.perf_counter()
    outcome = scheduled_build(project, spark)
    if not outcome.succeeded:
        raise SystemExit(f"bench-reads: a small run failed: {', '.join(outcome.failures)}")
    return {"run_s": round(time.perf_counter() - started, 2), "typed_s": round(outcome.typed_seconds, 2)}


def measure(size_name: str) -> dict:
    from cdc_lakehouse.dbt_project import DbtProject
    from cdc_lakehouse.scheduled_build import scheduled_build
    from cdc_lakehouse.session import open_session, profile_spark_settings

    size = SIZES[size_name]
    base = fresh_warehouse()
    spark = open_session(profile_spark_settings())
    # Typed views of bench.t00 alone: cdc-scaffold's models; the other tables are history only.
    dbt_vars = {"cdc_typed_tables": {"include": ["bench\\.t00"]}}
    project = DbtProject(project_dir=BENCH_PROJECT_DIR, dbt_vars=dbt_vars)
    project.manifest()
    tables = ("t00", *bench_tables(400)[1:])
    land(spark, READS_EVENTS, 7, first_seq=0, tables=tables)
    outcome = scheduled_build(project, spark)
    if not outcome.succeeded:
        raise SystemExit(f"bench-reads: the first run failed: {', '.join(outcome.failures)}")
    started = time.perf_counter()
    grow_history(spark, size, other_tables=len(tables) - 1)
    grow_s = round(time.perf_counter() - started, 1)
    started = time.perf_counter()
    project.run_checked(["run-operation", "cdc_maintain", "--args", '{"retain_hours": 168, "keep_days": 30}'])
    maintain_s = round(time.perf_counter() - started, 1)
    views = {part: f"{SCHEMA}.{base}__{part}" for part in ("current", "history")}
    spark.sql(f"create schema if not exists {REFERENCE_SCHEMA}")
    tables_of = {}
    for part, view in views.items():
        tables_of[part] = f"{REFERENCE_SCHEMA}.{base}__{part}"
        spark.sql(f"create or replace table {tables_of[part]} using delta as select * from {view}")
    (counts,) = spark.sql(
        f"select count(*) as versions, count_if(is_current and not is_deleted) as current_rows from {views['history']}"
    ).collect()
    key = FIRST_KEY + size.keys // 2 + 7
    queries = {"views": timed_queries(spark, views, tables_of, key)}
    seeds = iter(range(100, 200))
    first_seq = READS_EVENTS
    small = {"views": [small_run(spark, project, first_seq + n * SMALL_EVENTS, next(seeds)) for n in range(2)]}
    first_seq += 2 * SMALL_EVENTS

    # The same history stored: built whole once, then the same queries after maintenance, and small runs.
    mark_stored(BENCH_PROJECT_DIR, f"{base}__history")
    started = time.perf_counter()
    project.run_checked(["run", "--select", f"{base}__history"])
    stored_build_s = round(time.perf_counter() - started, 1)
    small["stored"] = [small_run(spark, project, first_seq + n * SMALL_EVENTS, next(seeds)) for n in range(2)]
    project.run_checked(["run-operation", "cdc_maintain", "--args", '{"retain_hours": 168, "keep_days": 30}'])
    spark.sql(f"create or replace table {tables_of['history']} using delta as select * from {views['history']}")
    spark.sql(f"create or replace table {tables_of['current']} using delta as select * from {views['current']}")
    queries["stored"] = timed_queries(spark, views, tables_of, key)
    return {
        **asdict(size),
        "source_tables": len(tables),
        "typed_view": views["current"].split(".")[1].removesuffix("__current"),
        "table_versions": counts["versions"],
        "table_current_rows": counts["current_rows"],
        "grow_s": grow_s,
        "maintain_s": maintain_s,
        "stored_build_s": stored_build_s,
        "queries": queries,
        "small_runs": small,
    }


def chart(reads: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [name for name in SIZES if name in reads]
    figure, axes = plt.subplots(1, len(sizes), figsize=(6 * len(sizes), 4), squeeze=False)
    for axis, size_name in zip(axes[0], sizes, strict=True):
        queries = reads[size_name]["queries"]
        names = list(queries["views"])
        bars = [
            ("typed views", [queries["views"][name]["typed_s"] for name in names]),
            ("stored history", [queries["stored"][name]["typed_s"] for name in names]),
            ("Delta table", [queries["stored"][name]["table_s"] for name in names]),
        ]
        for offset, (label, values) in zip((-0.27, 0, 0.27), bars, strict=True):
            axis.bar([position + offset for position in range(len(names))], values, 0.27, label=label)
        axis.set_xticks(
            list(range(len(names))),
            [
                f"{name}\n{queries['views'][name]['typed_over_table']}x, {queries['stored'][name]['typed_over_table']}x"
                for name in names
            ],
        )
        axis.set_ylabel("query, s (best of 3)")
        axis.set_title(f"{size_name}: {reads[size_name]['table_versions']:,} versions of one table")
        axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def main(argv: list[str] | None = None) -> int:
    import json

    parser = argparse.ArgumentParser(prog="bench-reads")
    parser.add_argument("--size", choices=sorted(SIZES), default="default")
    args = parser.parse_args(argv)
    figures = measure(args.size)
    latest = RESULTS_DIR / "latest.json"
    reads = json.loads(latest.read_text()).get("reads", {}) if latest.exists() else {}
    reads[args.size] = figures
    record_results("reads", reads)
    chart(reads, RESULTS_DIR / "reads.png")
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
