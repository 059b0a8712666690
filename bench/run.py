"""make bench: throughput, incremental cost and memory of the project on one embedded Spark session.

1. BENCH_EVENTS (default 1,000,000) generated messages of every format (bench/generate.py) are appended to
   the landing table of a fresh warehouse under bench/work/, in commits of 100,000 messages.
2. The seeds load and the first scheduled run runs in this process on that session, as cdc-run runs it
   (cdc-build, the project parsed once beforehand), from an empty warehouse: the full build time. Node
   times (models and snapshot, data tests; summed over dbt's threads) are those cdc-build reports.
3. Decode throughput per format beside its baseline on the same messages (bench/decode.py: `from_json`
   with an explicit schema, a bare `from_avro`, for DTS a bare Python protobuf loop). `make bench-decode`
   (`--decode-only`) runs steps 1-3 only and replaces the `decode` figures of the results file.
4. 1% more events are landed and the scheduled run runs again: the incremental time, with its ten slowest
   nodes; then once more with nothing landed, and the audit (`dbt build --selector audit`) once.
5. Cost follows the batch: beforehand, the same 1% batch lands on a warehouse of a tenth of the events
   (schemas cdc_small / landing_small of the same session) after its own full build.
6. The peak resident memory of the driver (JVM high-water mark plus this Python process).
7. Typed tables: the project runs from a copy under bench/work/ with cdc-scaffold's models of one bench
   table (bench.t00 of Huawei DRS JSON). One query over that table's current rows, typed, times against
   the same query on the map-typed cdc_current (best of two); its two models' times in the full and the
   1% runs.
Results: bench/results/latest.json and bench/results/latest.png (bench/cluster.py: cluster.json and .png).
"""

import json
import os
import shutil
import sys
import time
from pathlib import Path

from bench.readme_tables import write_readme
from cdc_lakehouse import PROJECT_DIR

WORK_DIR = PROJECT_DIR / "bench" / "work"
RESULTS_DIR = PROJECT_DIR / "bench" / "results"
COMPILED_STAGING = WORK_DIR / "target" / "compiled" / "cdc_lakehouse" / "models" / "staging"
LANDING_CHUNK = 100_000  # messages per landing commit: the driver never holds the whole load in Python
# The warehouse of BENCH_EVENTS events uses the profile's schemas; the one a tenth of its size, beside it in
# the same session, its own landing and target schemas.
SMALL_SCHEMA = "cdc_small"
SMALL_LANDING_SCHEMA = "landing_small"
# The project the benchmark runs: a copy with the typed tables of one bench table.
BENCH_PROJECT_DIR = WORK_DIR / "project"
TYPED_TABLE = {"database": "bench", "table": "t00", "source_format": "huawei_drs_json"}
# One question of that table's current rows (the bench's amount is decimal(12,2) text), typed and map-typed.
TYPED_QUERY = (
    "select count(*) as orders, cast(cast(sum(amount) as decimal(38, 2)) as string) as amount"
    " from cdc.{model} where amount > 50000"
)
MAP_TYPED_QUERY = """
    select count(*) as orders, cast(cast(sum(amount) as decimal(38, 2)) as string) as amount
    from (
        select cast(row['amount'] as decimal(12, 2)) as amount
        from cdc.cdc_current
        where source_format = '{source_format}' and source_database = '{database}' and source_table = '{table}'
    )
    where amount > 50000
"""


def land(
    spark,
    events: int,
    seed: int,
    first_seq: int,
    landing_schema: str = "landing",
    tables: tuple[str, ...] | None = None,
    next_offset: dict[str, int] | None = None,
) -> dict[str, int]:
    """Append generated messages (of `tables`, by default all 20) after the landed offsets of their topics, or
    at the offsets `next_offset` holds per topic, which it advances (as Kafka does, whatever landing
    retention removed); messages per format. A run reads the landing commits since the previous one
    (README, "The scheduled run"), whatever their ingested_at."""
    import pandas as pd

    from bench.generate import TABLES, messages
    from cdc_lakehouse.landing_table import ensure_landing_table

    landing_table = ensure_landing_table(spark, landing_schema)
    if next_offset is None:
        next_offset = {
            row.topic: row.last + 1
            for row in spark.sql(
                f"select topic, max(kafka_offset) as last from {landing_table} group by topic"
            ).collect()
        }
    counts: dict[str, int] = {}
    rows: list[tuple] = []

    def append(chunk: list[tuple]) -> None:
        frame = pd.DataFrame(chunk, columns=["source_format", "topic", "kafka_partition", "kafka_offset", "value"])
        frame["kafka_partition"] = frame["kafka_partition"].astype("int32")
        (
            spark.createDataFrame(frame)
            .selectExpr(
                "source_format",
                "topic",
                "kafka_partition",
                "kafka_offset",
                "cast(null as binary) as kafka_key",
                "value",
                "cast(null as timestamp) as kafka_timestamp",
                "current_timestamp() as ingested_at",
                "cast(null as array<struct<key: string, value: binary>>) as kafka_headers",
                "cast(null as string) as kafka_timestamp_type",
            )
            .write.format("delta")
            .mode("append")
            .saveAsTable(landing_table)
        )

    for source_format, topic, value in messages(events, seed, first_seq, tables or tuple(TABLES)):
        offset = next_offset.get(topic, 0)
        next_offset[topic] = offset + 1
        counts[source_format] = counts.get(source_format, 0) + 1
        rows.append((source_format, topic, 0, offset, value))
        if len(rows) == LANDING_CHUNK:
            append(rows)
            rows = []
    if rows:
        append(rows)
    return counts


class Warehouse:
    """One warehouse of the benchmark on this process's Spark session. Its seeds and scheduled runs go as cdc-run
    runs them: cdc-build on the project parsed once (the parse is not timed); any other dbt command is timed
    whole. Each keeps its nodes as bench/work/<name>.json."""

    def __init__(self, schema: str | None = None, landing_schema: str | None = None) -> None:
        self.schema = schema
        self.dbt_vars = {"landing_schema": landing_schema} if landing_schema else {}
        self._project = None

    def _select(self) -> None:
        """This warehouse's schema and dbt's target folder, for the next command."""
        if self.schema:
            os.environ["CDC_SCHEMA"] = self.schema
        else:
            os.environ.pop("CDC_SCHEMA", None)
        os.environ["DBT_TARGET_PATH"] = str(WORK_DIR / "target")

    def project(self):
        from cdc_lakehouse.dbt_project import DbtProject

        self._select()
        if self._project is None:
            self._project = DbtProject(BENCH_PROJECT_DIR, dbt_vars=self.dbt_vars)
        self._project.manifest()
        return self._project

    def dbt(self, name: str, args: list[str], run_results: bool = True) -> dict:
        from dbt.cli.main import dbtRunner

        self._select()
        target = WORK_DIR / "target"
        variables = ["--vars", json.dumps(self.dbt_vars)] if self.dbt_vars else []
        started = time.perf_counter()
        result = dbtRunner().invoke([*args, *variables, "--project-dir", str(BENCH_PROJECT_DIR)])
        seconds = time.perf_counter() - started
        if not result.success:
            failed = [r.node.name for r in (result.result or []) if r.status in ("error", "fail")]
            raise SystemExit(f"bench: dbt {' '.join(args)} failed: {result.exception or ', '.join(failed)}")
        if not run_results:  # a run-operation's
            print(f"bench: {name}: {seconds:.1f} s", flush=True)
            return {"seconds": seconds, "nodes": []}
        shutil.copy(target / "run_results.json", WORK_DIR / f"{name}.json")
        nodes = json.loads((target / "run_results.json").read_text())["results"]
        print(f"bench: {name}: {seconds:.1f} s, {len(nodes)} nodes", flush=True)
        return {"seconds": seconds, "nodes": nodes}

    def load_seeds(self, name: str) -> float:
        """What cdc-build and `make seeds` do when a seed changed: the seeds and the table built from them."""
        from pyspark.sql import SparkSession

        from cdc_lakehouse.seeds import TYPE_MAPPINGS, load_seeds_if_changed

        project = self.project()
        manifest = project.manifest()
        schema = manifest.nodes[f"model.{manifest.metadata.project_name}.{TYPE_MAPPINGS}"].schema
        started = time.perf_counter()
        load_seeds_if_changed(project.run_checked, SparkSession.builder.getOrCreate(), schema, BENCH_PROJECT_DIR)
        seconds = time.perf_counter() - started
        print(f"bench: {name}_seeds: {seconds:.1f} s", flush=True)
        return seconds

    def scheduled_run(self, name: str) -> dict:
        """One scheduled run, as cdc-run runs it (cdc-build): one batch, then the typed views new or retyped."""
        from pyspark.sql import SparkSession

        from cdc_lakehouse.build_outcome import write_report
        from cdc_lakehouse.scheduled_build import scheduled_build

        project = self.project()
        started = time.perf_counter()
        outcome = scheduled_build(project, SparkSession.builder.getOrCreate())
        seconds = time.perf_counter() - started
        if not outcome.succeeded:
            raise SystemExit(f"bench: {name} failed: {', '.join(outcome.failures)}")
        write_report(str(WORK_DIR / f"{name}.json"), outcome.report())
        print(f"bench: {name}: {seconds:.1f} s, {len(outcome.results)} nodes ({outcome.summary()})", flush=True)
        return {"seconds": seconds, "nodes": outcome.results}


def fresh_warehouse() -> str:
    """An empty bench/work/ as the warehouse, and the project copied under it with its typed tables."""
    shutil.rmtree(WORK_DIR, ignore_errors=True)
    WORK_DIR.mkdir(parents=True)
    os.environ["CDC_WAREHOUSE"] = str(WORK_DIR)
    return copy_project_with_typed_table()


def record_results(section: str, figures: dict) -> None:
    """Figures of one benchmark as their section of bench/results/latest.json, the other sections kept; the
    tables of bench/README.md written again."""
    path = RESULTS_DIR / "latest.json"
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    results = json.loads(path.read_text()) if path.exists() else {}
    results[section] = figures
    path.write_text(json.dumps(results, indent=2) + "\n")
    write_readme()


def copy_project_with_typed_table(destination: Path = BENCH_PROJECT_DIR) -> str:
    """The project copied to `destination`, with cdc-scaffold's models of TYPED_TABLE; their base name."""
    from cdc_lakehouse.scaffold import plan_files, write_files
    from cdc_lakehouse.typed_model_names import SourceTable, model_base_name

    for item in ("dbt_project.yml", "selectors.yml", "models", "macros", "seeds", "snapshots", "tests"):
        source = PROJECT_DIR / item
        if source.is_dir():
            shutil.copytree(source, destination / item, ignore=shutil.ignore_patterns("python", "__pycache__"))
        elif source.exists():
            destination.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, destination / item)
    table = SourceTable(**TYPED_TABLE)
    base = model_base_name(table)
    write_files(plan_files([table], [base], {}, destination))
    return base


def typed_query_figures(spark, base: str) -> dict:
    """The same question of one table's current rows on its typed current table and on cdc_current."""

    def timed(sql: str) -> tuple[float, tuple]:
        seconds = []
        for _ in range(2):
            started = time.perf_counter()
            (row,) = spark.sql(sql).collect()
            seconds.append(time.perf_counter() - started)
        return min(seconds), tuple(row)

    typed_s, typed_answer = timed(TYPED_QUERY.format(model=f"{base}__current"))
    map_typed_s, map_typed_answer = timed(MAP_TYPED_QUERY.format(**TYPED_TABLE))
    if typed_answer != map_typed_answer:
        raise SystemExit(f"bench: the typed table answers {typed_answer}, cdc_current {map_typed_answer}")
    current_rows = spark.table(f"cdc.{base}__current").count()
    return {
        "table": "{database}.{table} ({source_format})".format(**TYPED_TABLE),
        "current_rows": current_rows,
        "query": TYPED_QUERY.format(model=f"{base}__current"),
        "typed_current_query_s": round(typed_s, 2),
        "map_typed_current_query_s": round(map_typed_s, 2),
    }


def model_seconds(nodes: list[dict], name: str) -> float:
    return round(sum(node["execution_time"] for node in nodes if node["unique_id"].split(".")[-1] == name), 2)


def node_seconds(nodes: list[dict], resource_type: str) -> float:
    """Execution time of the run's nodes of one type, summed over dbt's threads."""
    return sum(node["execution_time"] for node in nodes if node["unique_id"].split(".")[0] == resource_type)


def slowest_nodes(nodes: list[dict], count: int = 10) -> list[dict]:
    ranked = sorted(nodes, key=lambda node: node["execution_time"], reverse=True)[:count]
    return [{"node": node["unique_id"].split(".", 2)[2], "s": round(node["execution_time"], 1)} for node in ranked]


def seconds_bars(axis, labels: list[str], values: list[float]) -> None:
    """A bar per label, each with its seconds written above it."""
    axis.bar(labels, values)
    for index, value in enumerate(values):
        axis.text(index, value, f"{value:.1f} s", ha="center", va="bottom")


def peak_rss_mb(spark) -> dict[str, int]:
    """High-water marks of resident memory: the driver JVM and this Python process."""

    def high_water_mark_kb(pid: int) -> int:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
        return 0

    return {
        "jvm": round(high_water_mark_kb(spark.sparkContext._gateway.proc.pid) / 1024),
        "python": round(high_water_mark_kb(os.getpid()) / 1024),
    }


def chart(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    formats = list(results["decode"])
    project = [results["decode"][f]["rows_per_s"] for f in formats]
    native = [results["decode"][f]["baseline_rows_per_s"] or 0 for f in formats]
    figure, (decode_axis, build_axis) = plt.subplots(1, 2, figsize=(13, 5), gridspec_kw={"width_ratios": [3, 1]})
    positions = range(len(formats))
    decode_axis.bar([p - 0.2 for p in positions], project, 0.4, label="project path")
    decode_axis.bar([p + 0.2 for p in positions], native, 0.4, label="baseline (bench/decode.py)")
    decode_axis.set_xticks(list(positions), formats, rotation=30, ha="right")
    decode_axis.set_ylabel("rows / s / core")
    decode_axis.set_title(f"Decode, {results['events']:,} events, {results['cores']} cores")
    decode_axis.legend()
    build = results["build"]
    runs = {
        "full": build["full_s"],
        "1%": build["incremental_1pct_s"],
        "1% on\n1/10": build["incremental_1pct_at_100k_s"],
        "nothing\nnew": build["no_new_data_s"],
        "audit": build["audit_s"],
    }
    build_axis.bar(list(runs), list(runs.values()))
    build_axis.set_ylabel("dbt run, s (wall)")
    build_axis.set_title(f"Build (peak driver RSS {results['peak_rss_mb']} MB)")
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def measure_decode(spark, events: int, seed: int, cores: int, results_name: str) -> int:
    from bench.decode import decode_figures
    from bench.generate import DRS_AVRO_SCHEMA

    counts = land(spark, events, seed, first_seq=0)
    warehouse = Warehouse()
    warehouse.load_seeds("full")
    warehouse.scheduled_run("full")
    decode = decode_figures(spark, COMPILED_STAGING, counts, cores, DRS_AVRO_SCHEMA)
    path = RESULTS_DIR / f"{results_name}.json"
    results = json.loads(path.read_text()) if path.exists() else {}
    if results.get("events") not in (None, events):
        results = {}  # figures of another size are not mixed
    results |= {"events": events, "messages": sum(counts.values()), "cores": cores, "decode": decode}
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2) + "\n")
    write_readme()
    if "build" in results:
        chart(results, RESULTS_DIR / f"{results_name}.png")
    print(json.dumps(decode, indent=2))
    return 0


def main(results_name: str = "latest", decode_only: bool = False) -> int:
    """The whole benchmark; with decode_only (make bench-decode), the full build and the decode figures
    only, which replace the `decode` of the results file."""
    try:
        events = int(os.environ.get("BENCH_EVENTS", "1000000"))
        seed = int(os.environ.get("BENCH_SEED", "7"))
    except ValueError as exc:
        print(f"bench: BENCH_EVENTS and BENCH_SEED must be whole numbers ({exc})", file=sys.stderr)
        return 2
    if events < 1000:
        print("bench: BENCH_EVENTS must be at least 1000", file=sys.stderr)
        return 2
    sys.path.insert(0, str(PROJECT_DIR))
    typed_base = fresh_warehouse()
    from bench.decode import decode_figures
    from bench.generate import DRS_AVRO_SCHEMA

    # The generated DRS Avro records are written with the test writer schema (the vendor's is not public).
    os.environ["CDC_DRS_AVRO_SCHEMA"] = str(DRS_AVRO_SCHEMA)

    from cdc_lakehouse.session import open_session, profile_spark_settings

    spark = open_session(profile_spark_settings())
    cores = spark.sparkContext.defaultParallelism
    if decode_only:
        return measure_decode(spark, events, seed, cores, results_name)
    # The batch both warehouses receive: the same 1% of BENCH_EVENTS messages.
    batch = {"events": events // 100, "seed": seed + 1, "first_seq": events}

    # Cost follows the batch: the same batch on a warehouse a tenth of the size.
    small = Warehouse(SMALL_SCHEMA, SMALL_LANDING_SCHEMA)
    land(spark, events // 10, seed, first_seq=0, landing_schema=SMALL_LANDING_SCHEMA)
    small.load_seeds("small_full")
    small.scheduled_run("small_full")
    land(spark, **batch, landing_schema=SMALL_LANDING_SCHEMA)
    small_incremental = small.scheduled_run("small_incremental")

    warehouse = Warehouse()
    counts = land(spark, events, seed, first_seq=0)
    full_seeds_s = warehouse.load_seeds("full")
    full = warehouse.scheduled_run("full")
    # Generated messages are all valid: a quarantined one means the generator or a model is wrong.
    quarantined = {
        row.source_format: row.messages
        for row in spark.sql(
            "select source_format, count(*) as messages from cdc.cdc_quarantine group by source_format"
        ).collect()
    }
    decode = decode_figures(spark, COMPILED_STAGING, counts, cores, DRS_AVRO_SCHEMA)
    typed_table = typed_query_figures(spark, typed_base)
    land(spark, **batch)
    incremental = warehouse.scheduled_run("incremental")
    for model in (f"{typed_base}__history", f"{typed_base}__current"):
        typed_table[f"{model}_full_s"] = model_seconds(full["nodes"], model)
        typed_table[f"{model}_incremental_1pct_s"] = model_seconds(incremental["nodes"], model)
    no_new_data = warehouse.scheduled_run("no_new_data")
    audit = warehouse.dbt("audit", ["build", "--selector", "audit"])
    memory = peak_rss_mb(spark)
    results = {
        "events": events,
        "messages": sum(counts.values()),
        "cores": cores,
        "spark_master": spark.conf.get("spark.master"),
        "decode": decode,
        "build": {
            "full_s": round(full_seeds_s + full["seconds"], 1),
            "incremental_1pct_s": round(incremental["seconds"], 1),
            "no_new_data_s": round(no_new_data["seconds"], 1),
            "incremental_1pct_at_100k_s": round(small_incremental["seconds"], 1),
            "audit_s": round(audit["seconds"], 1),
            "full_seeds_s": round(full_seeds_s, 1),
            "full_models_s": round(node_seconds(full["nodes"], "model") + node_seconds(full["nodes"], "snapshot"), 1),
            "full_tests_s": round(node_seconds(full["nodes"], "test"), 1),
            "incremental_1pct_models_s": round(
                node_seconds(incremental["nodes"], "model") + node_seconds(incremental["nodes"], "snapshot"), 1
            ),
            "incremental_1pct_tests_s": round(node_seconds(incremental["nodes"], "test"), 1),
            "incremental_1pct_slowest_nodes": slowest_nodes(incremental["nodes"]),
            "no_new_data_slowest_nodes": slowest_nodes(no_new_data["nodes"]),
            "incremental_1pct_at_100k_slowest_nodes": slowest_nodes(small_incremental["nodes"]),
        },
        "peak_rss_mb": sum(memory.values()),
        "peak_rss_mb_by_process": memory,
        "quarantined_in_full_build": quarantined,
        "typed_table": typed_table,
    }
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    (RESULTS_DIR / f"{results_name}.json").write_text(json.dumps(results, indent=2) + "\n")
    write_readme()
    chart(results, RESULTS_DIR / f"{results_name}.png")
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(decode_only="--decode-only" in sys.argv[1:]))
