"""make bench-readme: the tables of figures in bench/README.md, written from bench/results/latest.json and
cluster.json, so that re-measuring never edits prose. Each table sits between `<!-- figures: NAME -->` and
`<!-- /figures -->`; what is outside the markers is left as it is. Every benchmark writes them again when it
records its figures (bench/run.py, record_results); tests/python/test_bench_readme.py fails when the README's
tables are not the ones the recorded figures give.
"""

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
README = BENCH_DIR / "README.md"
RESULTS_DIR = BENCH_DIR / "results"
MARKED = re.compile(r"(<!-- figures: (\S+) -->\n)(.*?)(<!-- /figures -->)", re.S)

Rows = list[tuple]
# No figure: an en dash, as the tables have it.
NONE = "\u2013"


def number(value) -> str:
    """A recorded figure as recorded, with thousands separators; NONE when not recorded."""
    if value is None:
        return NONE
    if isinstance(value, bool):
        return str(value).lower()
    return f"{value:,}" if isinstance(value, int | float) else str(value)


def seconds(value) -> str:
    return NONE if value is None else f"{number(value)} s"


def listed(values, unit: str = "") -> str:
    return ", ".join(number(value) for value in values) + unit


def table(header: tuple, rows: Rows) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def build_table(results: dict) -> str:
    build, typed = results["build"], results.get("typed_table", {})
    full = build["full_s"]
    rss = results.get("peak_rss_mb_by_process", {})
    return table(
        ("figure", "key", "value", "target"),
        [
            (
                f"full build: seeds (`full_seeds_s` {seconds(build.get('full_seeds_s'))}) and the first scheduled run",
                "`build.full_s`",
                seconds(full),
                NONE,
            ),
            (
                "1% more events, one batch",
                "`build.incremental_1pct_s`",
                seconds(build["incremental_1pct_s"]),
                f"≤ 0.10x `full_s` ({build['incremental_1pct_s'] / full:.2f}x)",
            ),
            (
                "the same batch on a warehouse of a tenth of the events",
                "`build.incremental_1pct_at_100k_s`",
                seconds(build.get("incremental_1pct_at_100k_s")),
                f"1M figure ≤ 1.2x this ({build['incremental_1pct_s'] / build['incremental_1pct_at_100k_s']:.2f}x)",
            ),
            (
                "nothing new landed",
                "`build.no_new_data_s`",
                seconds(build.get("no_new_data_s")),
                f"≤ 0.05x `full_s` ({build['no_new_data_s'] / full:.3f}x)",
            ),
            ("the audit", "`build.audit_s`", seconds(build.get("audit_s")), NONE),
            (
                "node times of the full build: models and snapshot, data tests",
                "`build.full_models_s`, `full_tests_s`",
                listed((build.get("full_models_s"), build.get("full_tests_s")), " s"),
                NONE,
            ),
            (
                "node times of the 1% run: models and snapshot, data tests",
                "`build.incremental_1pct_models_s`, `_tests_s`",
                listed((build.get("incremental_1pct_models_s"), build.get("incremental_1pct_tests_s")), " s"),
                NONE,
            ),
            (
                "the 1% run's three slowest nodes",
                "`build.incremental_1pct_slowest_nodes`",
                ", ".join(
                    f"`{n['node']}` {seconds(n['s'])}" for n in build.get("incremental_1pct_slowest_nodes", [])[:3]
                ),
                NONE,
            ),
            (
                f"peak driver RSS (JVM {number(rss.get('jvm'))} MB, Python {number(rss.get('python'))} MB)",
                "`peak_rss_mb`, `peak_rss_mb_by_process`",
                f"{number(results.get('peak_rss_mb'))} MB",
                "under 4 GB",
            ),
            (
                "messages quarantined in the full build",
                "`quarantined_in_full_build`",
                number(results.get("quarantined_in_full_build") or "none"),
                "none",
            ),
            (
                f"query over {number(typed.get('current_rows'))} current rows, typed view",
                "`typed_table.typed_current_query_s`",
                seconds(typed.get("typed_current_query_s")),
                NONE,
            ),
            (
                "the same query on `cdc_current`",
                "`typed_table.map_typed_current_query_s`",
                seconds(typed.get("map_typed_current_query_s")),
                NONE,
            ),
        ],
    )


def decode_table(results: dict) -> str:
    def baseline(name: str) -> str:
        return "Python upb loop, 1 core" if name.startswith("python loop") else f"`{name}`"

    return table(
        (
            "format",
            "`messages`",
            "`rows_per_s` (per core)",
            "`baseline`",
            "`baseline_rows_per_s`",
            "`share_of_baseline`",
        ),
        [
            (
                f"`{name}`",
                number(f["messages"]),
                number(f["rows_per_s"]),
                baseline(f["baseline"]),
                number(f.get("baseline_rows_per_s")),
                number(f.get("share_of_baseline")),
            )
            for name, f in results["decode"].items()
        ],
    )


def cluster_table(cluster: dict) -> str:
    rows = []
    for name, f in cluster["decode"].items():
        base = f.get("baseline_rows_per_s")
        share = f"{f['rows_per_s'] / base:.2f}" if base else NONE
        rows.append((f"`{name}`", number(f["rows_per_s"]), number(base), share))
    build, rss = cluster["build"], cluster.get("peak_rss_mb_by_process", {})
    rows += [
        (
            "full build: wall, models, tests (`build.full_s`, `full_models_s`, `full_tests_s`)",
            listed((build["full_s"], build.get("full_models_s"), build.get("full_tests_s")), " s"),
            "",
            "",
        ),
        (
            "1% run: wall, models, tests (`build.incremental_1pct_s`, `_models_s`, `_tests_s`)",
            listed(
                (
                    build["incremental_1pct_s"],
                    build.get("incremental_1pct_models_s"),
                    build.get("incremental_1pct_tests_s"),
                ),
                " s",
            ),
            "",
            "",
        ),
        (
            f"peak driver RSS (JVM {number(rss.get('jvm'))} MB, Python {number(rss.get('python'))} MB)",
            f"{number(cluster.get('peak_rss_mb'))} MB",
            "",
            "",
        ),
    ]
    return table(("format, or figure", "`rows_per_s` (per core), or value", "`baseline_rows_per_s`", "share"), rows)


def soak_table(results: dict) -> str:
    soak = results["soak"]
    grown = soak["grown_nodes"][0]
    storage = soak["storage"].values()
    live = sum(table["live_bytes"] for table in storage) / 1e6
    disk = sum(table["disk_bytes"] for table in storage) / 1e6
    return table(
        ("figure", "key", "value", "target"),
        [
            (
                "runs, events a run, nodes a run",
                "`runs`, `events_per_run`, `nodes_per_run`",
                listed((soak["runs"], soak["events_per_run"], soak["nodes_per_run"])),
                NONE,
            ),
            ("mean of runs 5-15", "`early_s`", seconds(soak["early_s"]), NONE),
            ("mean of the last 10 runs", "`last10_s`", seconds(soak["last10_s"]), NONE),
            ("last 10 over runs 5-15", "`last10_over_early`", number(soak["last10_over_early"]), "≤ 1.2"),
            (
                f"node that grew most (`{grown['node']}`), runs 5-15 to last 10",
                "`grown_nodes[0]`",
                f"{seconds(grown['early_s'])} to {seconds(grown['last_s'])}",
                NONE,
            ),
            ("most live files of a table at the end", "`max_live_files`", number(soak["max_live_files"]), "≤ 50"),
            (
                f"storage at the end, {len(soak['storage'])} tables (sum of `storage`)",
                "`storage.*.live_bytes`, `disk_bytes`",
                f"{live:,.1f} MB live, {disk:,.1f} MB on disk",
                NONE,
            ),
            (
                f"maintenance after runs {listed(soak['maintained_after_runs'])}",
                "`maintenance_s`",
                listed(soak["maintenance_s"], " s"),
                NONE,
            ),
        ],
    )


def changed_tables(results: dict) -> str:
    c = results["changed"]
    runs = table(
        ("run", "key", "value"),
        [
            ("dbt's parse of the project, once per process", "`parse_s`", seconds(c["parse_s"])),
            (
                f"first scheduled run ({c['first_typed_built']} tables' typed views created)",
                "`first_s`",
                seconds(c["first_s"]),
            ),
            ("nothing landed (median of 3)", "`idle_s`", seconds(c["idle_s"])),
            (
                f"{c['small_events']} events of one table, median of 3 (`one_table_runs_s`: "
                f"{listed(c['one_table_runs_s'], ' s')}; before them, `warmup_runs_s`: "
                f"{listed(c['warmup_runs_s'], ' s')})",
                "`one_table_s`",
                seconds(c["one_table_s"]),
            ),
            (
                "of which the change log, the typed part",
                "`one_table_change_log_s`, `one_table_typed_s`",
                listed((c["one_table_change_log_s"], c["one_table_typed_s"]), " s"),
            ),
            (
                f"the same with metrics on, each beside one of those (`one_table_metrics_runs_s`: "
                f"{listed(c['one_table_metrics_runs_s'], ' s')})",
                "`one_table_metrics_s`",
                seconds(c["one_table_metrics_s"]),
            ),
            ("that over metrics off (target: as it was)", "`metrics_over_off`", number(c["metrics_over_off"])),
            (
                "what the metrics add after a run, beside the run's record alone",
                "`after_run_metrics_s`, `after_run_record_only_s`",
                listed((c["after_run_metrics_s"], c["after_run_record_only_s"]), " s"),
            ),
            (
                f"one event of every format in each of the {c['source_tables']} tables",
                "`all_tables_s`",
                seconds(c["all_tables_s"]),
            ),
            (
                "of which the change log, the typed part",
                "`all_tables_change_log_s`, `all_tables_typed_s`",
                listed((c["all_tables_change_log_s"], c["all_tables_typed_s"]), " s"),
            ),
            (
                "that run over the one-table run (target ≤ 2 at 40 tables)",
                "`all_tables_over_one_table`",
                number(c["all_tables_over_one_table"]),
            ),
            (
                "the one-table change as `dbt build --selector scheduled` (every typed view created again)",
                "`one_table_all_typed_s`",
                seconds(c.get("one_table_all_typed_s")),
            ),
        ],
    )
    prefix = "one_table_change_log"
    kinds = sorted(
        (key.removeprefix(f"{prefix}_sql_"), c[key], c[f"{key}_s"])
        for key in c
        if key.startswith(f"{prefix}_sql_") and not key.endswith("_s")
    )
    breakdown = table(
        ("part", "nodes, summed", "statements by kind (count, summed s)", "outside statements"),
        [
            (
                f"change log, one-table run (`{prefix}_*`)",
                f"{c[f'{prefix}_models']} models {seconds(c[f'{prefix}_models_s'])}, "
                f"{c[f'{prefix}_tests']} tests {seconds(c[f'{prefix}_tests_s'])}",
                "; ".join(f"{kind.replace('_', ' ')} {count}, {number(s)}" for kind, count, s in kinds),
                seconds(c[f"{prefix}_outside_sql_s"]),
            )
        ],
    )
    return runs + "\n" + breakdown


def latency_table(results: dict) -> str:
    def spread(run_seconds: list[float]) -> str:
        measured = run_seconds[:-1]
        return f"{number(min(measured))}-{number(max(measured))}, {number(run_seconds[-1])}"

    def percentiles(figures: dict) -> str:
        return f"{number(figures['p50'])} / {number(figures['p95'])} / {number(figures['max'])} s"

    return table(
        (
            "key",
            "`produced`",
            "`runs`",
            "`cdc_current` p50 / p95 / max",
            "`typed_table` p50 / p95 / max",
            "`run_seconds`",
            "`backlog_grows`",
        ),
        [
            (
                f"`{key}`",
                number(c["produced"]),
                number(c["runs"]),
                percentiles(c["cdc_current"]),
                percentiles(c["typed_table"]),
                spread(c["run_seconds"]),
                number(c["backlog_grows"]),
            )
            for key, c in results["latency"].items()
        ],
    )


def reads_table(results: dict) -> str:
    reads = results["reads"]
    default, quick = reads["default"]["queries"], reads.get("quick", {}).get("queries")
    labels = {"aggregate": "current rows by name", "lookup": "one key's current row", "range": "a day of versions"}

    def timed(q: dict) -> str:
        return f"{seconds(q['typed_s'])} ({number(q['typed_over_table'])}x)"

    rows = []
    for name, label in labels.items():
        quick_ratios = (
            f"{number(quick['views'][name]['typed_over_table'])}x, {number(quick['stored'][name]['typed_over_table'])}x"
            if quick
            else NONE
        )
        rows.append(
            (
                label,
                f"`queries.*.{name}`",
                timed(default["views"][name]),
                timed(default["stored"][name]),
                f"{seconds(default['views'][name]['table_s'])}, {seconds(default['stored'][name]['table_s'])}",
                quick_ratios,
            )
        )
    figures = reads["default"]
    stored_runs = figures["small_runs"]["stored"]
    rows.append(
        (
            "stored history built whole; runs after 100 events of the table (the merge's part)",
            "`stored_build_s`; `small_runs.stored.*`",
            seconds(figures["stored_build_s"]),
            "; ".join(f"{seconds(r['run_s'])} ({seconds(r['typed_s'])})" for r in stored_runs),
            "",
            "",
        )
    )
    rows.append(
        (
            "the same runs with views",
            "`small_runs.views.*.run_s`",
            "; ".join(seconds(r["run_s"]) for r in figures["small_runs"]["views"]),
            "",
            "",
            "",
        )
    )
    return table(
        ("query", "key", "views", "stored history", "Delta table (beside views, stored)", "quick: views, stored"), rows
    )


def many_tables_table(results: dict) -> str:
    mt = results["many_tables"]
    two, many = mt["2_tables"], mt["400_tables"]
    r2, r400 = mt["runs"]["2_tables"], mt["runs"]["400_tables"]
    return table(
        ("figure", "key", "2 tables", "400 tables"),
        [
            (
                "typed tables, dbt nodes",
                "`typed_tables`, `nodes`",
                listed((two["typed_tables"], two["nodes"])),
                listed((many["typed_tables"], many["nodes"])),
            ),
            (
                "parse, first / in a new process",
                "`parse_s` / `reparse_s`",
                f"{number(two['parse_s'])} / {seconds(two['reparse_s'])}",
                f"{number(many['parse_s'])} / {seconds(many['reparse_s'])}",
            ),
            ("selectors", "`select_s`", seconds(two["select_s"]), seconds(many["select_s"])),
            (
                f"`cdc-build`'s choice of one retyped table's views (`nodes_chosen`: {many['nodes_chosen']})",
                "`decide_s`",
                seconds(two["decide_s"]),
                seconds(many["decide_s"]),
            ),
            (
                "dbt's selection, one table / every typed view",
                "`dbt_select_one_s` / `dbt_select_every_s`",
                f"{number(two['dbt_select_one_s'])} / {seconds(two['dbt_select_every_s'])}",
                f"{number(many['dbt_select_one_s'])} / {seconds(many['dbt_select_every_s'])}",
            ),
            (
                "whole run: first run (typed views created)",
                "`runs.*.first_s`",
                f"{seconds(r2['first_s'])} ({r2['first_typed_built']})",
                f"{seconds(r400['first_s'])} ({r400['first_typed_built']})",
            ),
            ("whole run: nothing new (median of 3)", "`runs.*.idle_s`", seconds(r2["idle_s"]), seconds(r400["idle_s"])),
            (
                "whole run: 100 events of one table (median of 3)",
                "`runs.*.one_table_s`",
                seconds(r2["one_table_s"]),
                seconds(r400["one_table_s"]),
            ),
            (
                "of which the change log, the typed part",
                "`one_table_change_log_s`, `one_table_typed_s`",
                listed((r2["one_table_change_log_s"], r2["one_table_typed_s"]), " s"),
                listed((r400["one_table_change_log_s"], r400["one_table_typed_s"]), " s"),
            ),
            (
                "400 tables over 2 (target ≤ 1.25)",
                "`runs.one_table_400_over_2`",
                NONE,
                number(mt["runs"]["one_table_400_over_2"]),
            ),
            (
                "whole run: one event of every format in each table",
                "`runs.*.all_tables_s`",
                seconds(r2["all_tables_s"]),
                seconds(r400["all_tables_s"]),
            ),
            (
                "every one of 400 tables changed over one (target ≤ 3)",
                "`runs.all_tables_400_over_one_table`",
                NONE,
                number(mt["runs"]["all_tables_400_over_one_table"]),
            ),
        ],
    )


def route_table(results: dict) -> str:
    one, route = results["route"]["one_table"], results["route"]["route"]
    return table(
        ("figure", "key", "1 table", f"{number(route['source_tables'])}-shard route"),
        [
            ("whole run: first run", "`*.first_s`", seconds(one["first_s"]), seconds(route["first_s"])),
            ("whole run: nothing new (median of 3)", "`*.idle_s`", seconds(one["idle_s"]), seconds(route["idle_s"])),
            (
                "whole run: 100 events of one table / shard (median of 3)",
                "`*.one_table_s`",
                seconds(one["one_table_s"]),
                seconds(route["one_table_s"]),
            ),
            (
                "of which the change log",
                "`*.one_table_change_log_s`",
                seconds(one["one_table_change_log_s"]),
                seconds(route["one_table_change_log_s"]),
            ),
            (
                "one shard over one table of one (target ≤ 1.25)",
                "`one_shard_over_one_table`",
                NONE,
                number(results["route"]["one_shard_over_one_table"]),
            ),
        ],
    )


def dts_history_table(results: dict) -> str:
    return table(
        (
            "`messages`",
            "first build of the history (`first_entries_s`)",
            "runs of 20 new messages (`run_entries_s`)",
            "`median_entries_s`",
        ),
        [
            (
                number(size["messages"]),
                seconds(size["first_entries_s"]),
                listed(size["run_entries_s"], " s"),
                seconds(size["median_entries_s"]),
            )
            for size in results["dts_history"]["sizes"]
        ],
    )


TABLES: dict[str, Callable[[dict, dict], str]] = {
    "build": lambda results, cluster: build_table(results),
    "decode": lambda results, cluster: decode_table(results),
    "cluster": lambda results, cluster: cluster_table(cluster),
    "soak": lambda results, cluster: soak_table(results),
    "changed": lambda results, cluster: changed_tables(results),
    "latency": lambda results, cluster: latency_table(results),
    "reads": lambda results, cluster: reads_table(results),
    "many_tables": lambda results, cluster: many_tables_table(results),
    "route": lambda results, cluster: route_table(results),
    "dts_history": lambda results, cluster: dts_history_table(results),
}


def readme_with_tables(text: str, results: dict, cluster: dict) -> str:
    """The README's text with every marked table written from the figures."""

    def rendered(marked: re.Match) -> str:
        name = marked.group(2)
        if name not in TABLES:
            raise SystemExit(f"bench/README.md marks a table {name!r} that bench/readme_tables.py does not write")
        try:
            figures = TABLES[name](results, cluster)
        except KeyError:
            figures = "Not in bench/results/: run this benchmark.\n"
        return marked.group(1) + "\n" + figures + "\n" + marked.group(4)

    return MARKED.sub(rendered, text)


def recorded(name: str) -> dict:
    path = RESULTS_DIR / name
    return json.loads(path.read_text()) if path.exists() else {}


def write_readme() -> None:
    README.write_text(readme_with_tables(README.read_text(), recorded("latest.json"), recorded("cluster.json")))


if __name__ == "__main__":
    write_readme()
    sys.exit(0)
