"""make bench-route: a scheduled run after one shard of a 1,024-shard route changed, beside a run after one table
of a one-table deployment changed (README, "The estate: routes, ...").

bench/changed.py twice, each in a process of its own on a fresh warehouse, CHANGED_EVENTS events of every
format over its tables: `--tables 1` (one source table, its typed views), and `--tables 1024 --route` (1,024
source tables of database bench in every format, the shards of one route: two views). Each records `one_table_s`,
the median of three runs, each after CHANGED_SMALL events of one table. Results under `route` in
bench/results/latest.json, with `one_shard_over_one_table`; chart bench/results/route.png.
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

from cdc_lakehouse import PROJECT_DIR

sys.path.insert(0, str(PROJECT_DIR))

from bench.run import RESULTS_DIR, record_results, seconds_bars

WORK_DIR = PROJECT_DIR / "bench" / "work-route"
SHARDS = 1024


def run(name: str, *arguments: str) -> dict:
    output = WORK_DIR / f"{name}.json"
    subprocess.run(
        [sys.executable, str(PROJECT_DIR / "bench" / "changed.py"), *arguments, "--output", str(output)], check=True
    )
    return json.loads(output.read_text())


def chart(figures: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = ["1 table,\n1 changed", f"{SHARDS}-shard route,\n1 shard changed"]
    values = [figures["one_table"]["one_table_s"], figures["route"]["one_table_s"]]
    figure, axis = plt.subplots(figsize=(6, 4))
    seconds_bars(axis, labels, values)
    axis.set_ylabel("scheduled run, s (wall, runner up)")
    axis.set_title(f"a small batch of one table: {figures['one_shard_over_one_table']}x")
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def main() -> int:
    shutil.rmtree(WORK_DIR, ignore_errors=True)
    WORK_DIR.mkdir(parents=True)
    figures = {
        "one_table": run("one_table", "--tables", "1"),
        "route": run("route", "--tables", str(SHARDS), "--route"),
    }
    figures["one_shard_over_one_table"] = round(
        figures["route"]["one_table_s"] / figures["one_table"]["one_table_s"], 2
    )
    record_results("route", figures)
    chart(figures, RESULTS_DIR / "route.png")
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
