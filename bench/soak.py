"""make bench-soak: the cost of a scheduled run over hundreds of runs, with maintenance on its schedule.

One embedded session, a fresh warehouse under bench/work/ and the project with the typed tables of one bench
table (as make bench). Each of SOAK_RUNS (default 200) runs lands a small batch, SOAK_EVENTS (default
1,000) generated changes of every format over three tables (bench/generate.py), and runs the scheduled
build (`dbt build --selector scheduled`) in this process; every SOAK_MAINTAIN_EVERY runs (default 48: a
run every half hour, maintenance daily) `cdc-maintain`'s operation runs too. Wall-clock time is
compressed (hundreds of runs in a few hours), so the maintenance is told what a deployment's would see
after days: every removed file and every message all models have read is past its retention
(--retain-hours 0, --keep-days 0).

Recorded under `soak` in bench/results/latest.json: each run's seconds, the mean of runs 5-15 and of the
last ten and their ratio (target: last <= 1.2x early), the nodes whose time grew the most between the two,
each maintenance's seconds, and per table at the end its live files (target <= 50) and its bytes, live
and on disk. Chart: bench/results/soak.png, run cost by run number.
"""

import json
import os
import sys
import time
from pathlib import Path
from statistics import mean

from cdc_lakehouse import PROJECT_DIR

sys.path.insert(0, str(PROJECT_DIR))

from bench.run import (
    BENCH_PROJECT_DIR,
    RESULTS_DIR,
    Warehouse,
    fresh_warehouse,
    land,
    record_results,
)

SOAK_TABLES = ("t00", "t01", "t02")
EARLY_RUNS = range(5, 16)  # runs 5-15: after the first builds, before anything could accumulate


def maintain(warehouse: Warehouse, name: str) -> float:
    """The operations cdc-maintain runs, in this process, with every retention past."""
    started = time.perf_counter()
    warehouse.dbt(
        name, ["run-operation", "cdc_expire_landing", "--args", json.dumps({"keep_days": 0})], run_results=False
    )
    operation = ["run-operation", "cdc_maintain", "--args", json.dumps({"retain_hours": 0, "keep_days": 0})]
    warehouse.dbt(name, operation, run_results=False)
    return time.perf_counter() - started


def table_storage(spark) -> dict[str, dict[str, int]]:
    """Per Delta table of the warehouse and landing: live files, live bytes, and bytes on disk (log included)."""
    tables = [f"cdc.{t.name}" for t in spark.catalog.listTables("cdc") if t.tableType in ("MANAGED", "EXTERNAL")]
    storage = {}
    for table in [*sorted(tables), "landing.cdc_raw"]:
        detail = spark.sql(f"describe detail {table}").first()
        root = Path(detail.location.removeprefix("file:"))
        on_disk = sum(path.stat().st_size for path in root.rglob("*") if path.is_file())
        storage[table] = {"live_files": detail.numFiles, "live_bytes": detail.sizeInBytes, "disk_bytes": on_disk}
    return storage


def node_growth(early: list[list[dict]], late: list[list[dict]], count: int = 10) -> list[dict]:
    """The nodes whose mean time grew the most from the early runs to the last ones."""

    def means(runs: list[list[dict]]) -> dict[str, float]:
        times: dict[str, list[float]] = {}
        for nodes in runs:
            for node in nodes:
                times.setdefault(node["unique_id"].split(".", 2)[2], []).append(node["execution_time"])
        return {name: mean(values) for name, values in times.items()}

    before, after = means(early), means(late)
    grown = sorted(after, key=lambda name: after[name] - before.get(name, 0.0), reverse=True)[:count]
    return [
        {"node": name, "early_s": round(before.get(name, 0.0), 2), "last_s": round(after[name], 2)} for name in grown
    ]


def chart(soak: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(11, 4.5))
    runs = range(1, len(soak["run_s"]) + 1)
    axis.plot(runs, soak["run_s"], linewidth=1, label="scheduled run")
    for number, run in enumerate(soak["maintained_after_runs"]):
        axis.axvline(run + 0.5, color="grey", linestyle=":", label="maintenance" if number == 0 else None)
    axis.set_xlabel("run")
    axis.set_ylabel("dbt build --selector scheduled, s (wall)")
    axis.set_title(
        f"{len(soak['run_s'])} runs of {soak['events_per_run']:,} events: runs 5-15 {soak['early_s']} s,"
        f" last 10 {soak['last10_s']} s ({soak['last10_over_early']}x)"
    )
    axis.set_ylim(bottom=0)
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def main() -> int:
    try:
        runs = int(os.environ.get("SOAK_RUNS", "200"))
        events = int(os.environ.get("SOAK_EVENTS", "1000"))
        maintain_every = int(os.environ.get("SOAK_MAINTAIN_EVERY", "48"))
        seed = int(os.environ.get("BENCH_SEED", "7"))
    except ValueError as exc:
        print(
            f"bench-soak: SOAK_RUNS, SOAK_EVENTS, SOAK_MAINTAIN_EVERY, BENCH_SEED are whole numbers ({exc})",
            file=sys.stderr,
        )
        return 2
    if runs < 25:
        print("bench-soak: SOAK_RUNS must be at least 25 (runs 5-15 and the last ten are compared)", file=sys.stderr)
        return 2
    fresh_warehouse()
    from bench.generate import DRS_AVRO_SCHEMA

    os.environ["CDC_DRS_AVRO_SCHEMA"] = str(DRS_AVRO_SCHEMA)
    from cdc_lakehouse.session import open_session, profile_spark_settings

    spark = open_session(profile_spark_settings())
    warehouse = Warehouse()
    warehouse.load_seeds("soak")
    next_offset: dict[str, int] = {}
    run_s: list[float] = []
    nodes: list[list[dict]] = []
    maintenance_s: list[float] = []
    maintained_after: list[int] = []
    for number in range(1, runs + 1):
        land(spark, events, seed + number, first_seq=number * events, tables=SOAK_TABLES, next_offset=next_offset)
        done = warehouse.scheduled_run(f"soak_run_{number:03d}")
        run_s.append(round(done["seconds"], 2))
        nodes.append(done["nodes"])
        if number % maintain_every == 0:
            maintenance_s.append(round(maintain(warehouse, f"soak_maintain_{number:03d}"), 1))
            maintained_after.append(number)
    early = [run_s[number - 1] for number in EARLY_RUNS]
    soak = {
        "runs": runs,
        "events_per_run": events,
        "tables_per_batch": len(SOAK_TABLES),
        "maintain_every": maintain_every,
        "maintained_after_runs": maintained_after,
        "maintenance_s": maintenance_s,
        "run_s": run_s,
        "early_s": round(mean(early), 1),
        "last10_s": round(mean(run_s[-10:]), 1),
        "nodes_per_run": len(nodes[-1]),
        "grown_nodes": node_growth([nodes[number - 1] for number in EARLY_RUNS], nodes[-10:]),
        "storage": table_storage(spark),
        "project": str(BENCH_PROJECT_DIR.relative_to(PROJECT_DIR)),
    }
    soak["last10_over_early"] = round(soak["last10_s"] / soak["early_s"], 2)
    soak["max_live_files"] = max(table["live_files"] for table in soak["storage"].values())
    record_results("soak", soak)
    chart(soak, RESULTS_DIR / "soak.png")
    summary = {key: value for key, value in soak.items() if key not in ("run_s", "storage")}
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
