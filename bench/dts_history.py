"""make bench-dts-history: what regrouping Tencent DTS Envelope parts costs a run, by how much DTS history the
warehouse holds (bench/README.md, "`make bench-dts-history`").

For each history size in DTS_HISTORY_GROUPS (default 40,000 and 1,200,000 Entries, each split in two
Envelopes over four partitions: 80,000 and 2,400,000 messages), a fresh warehouse under bench/work/: the
seeds, the history landed and staged (stg_tencent_dts_protobuf__envelopes, __groups and __entries), then
DTS_HISTORY_BATCHES (default 3) runs of the three models, each after 10 more split Entries landed in one
partition. Recorded under `dts_history` in bench/results/latest.json: per size, the seconds of the groups
and entries models together in each small run (dbt's node times) and their median; chart
bench/results/dts_history.png.
"""

import json
import os
import statistics
import subprocess
import sys

from cdc_lakehouse import PROJECT_DIR

sys.path.insert(0, str(PROJECT_DIR))

from bench.run import RESULTS_DIR, Warehouse, fresh_warehouse, model_seconds, record_results, seconds_bars

MODELS = (
    "stg_tencent_dts_protobuf__envelopes",
    "stg_tencent_dts_protobuf__groups",
    "stg_tencent_dts_protobuf__entries",
)
REGROUPING = MODELS[1:]
TOPIC = "dts.bench"
PARTITIONS = 4


def split_entries(writer, count: int) -> list[bytes]:
    """`count` transactions (BEGIN, a heartbeat, COMMIT), each one Entries cut into two Envelopes."""
    from vendor_writers.tencent_dts_protobuf import entries, envelopes

    messages = []
    for _ in range(count):
        begin = writer.begin()
        messages += envelopes(entries([begin, writer.heartbeat(), writer.commit(begin)]), 2)
    return messages


def regrouping_seconds(run: dict) -> float:
    return round(sum(model_seconds(run["nodes"], model) for model in REGROUPING), 2)


def measure(groups: int, batches: int) -> dict:
    from cdc_lakehouse.landing import land
    from cdc_lakehouse.landing_table import ensure_landing_table
    from cdc_lakehouse.session import open_session, profile_spark_settings
    from vendor_writers.tencent_dts_protobuf import DtsWriter

    fresh_warehouse()
    spark = open_session(profile_spark_settings())
    ensure_landing_table(spark)
    warehouse = Warehouse()
    warehouse.load_seeds(f"dts_{groups}")
    writer = DtsWriter("bench")
    for partition in range(PARTITIONS):
        land(spark, "tencent_dts_protobuf", TOPIC, partition, split_entries(writer, groups // PARTITIONS))
    first = warehouse.dbt(f"dts_{groups}_first", ["run", "--select", *MODELS])
    runs = []
    for number in range(batches):
        land(spark, "tencent_dts_protobuf", TOPIC, number % PARTITIONS, split_entries(writer, 10))
        run = warehouse.dbt(f"dts_{groups}_run_{number}", ["run", "--select", *MODELS])
        runs.append(regrouping_seconds(run))
    return {
        "messages": groups * 2,
        "first_entries_s": regrouping_seconds(first),
        "run_entries_s": runs,
        "median_entries_s": statistics.median(runs),
    }


def chart(figures: dict, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = figures["sizes"]
    labels = [f"{size['messages']:,} messages" for size in sizes]
    values = [size["median_entries_s"] for size in sizes]
    figure, axis = plt.subplots(figsize=(6, 4))
    seconds_bars(axis, labels, values)
    axis.set_ylabel("DTS __groups + __entries, s (median)")
    axis.set_title("A run of 20 new messages, by the DTS history held")
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def main(argv: list[str]) -> int:
    if argv:  # one size, in a process of its own: a session's metastore and warehouse are fixed at its start
        print(json.dumps(measure(int(argv[0]), int(argv[1]))))
        return 0
    sizes = os.environ.get("DTS_HISTORY_GROUPS", "40000,1200000").split(",")
    batches = os.environ.get("DTS_HISTORY_BATCHES", "3")
    figures = {"partitions": PARTITIONS, "sizes": []}
    for size in sizes:
        child = subprocess.run([sys.executable, __file__, size, batches], stdout=subprocess.PIPE, text=True, check=True)
        figures["sizes"].append(json.loads(child.stdout.splitlines()[-1]))
    record_results("dts_history", figures)
    chart(figures, RESULTS_DIR / "dts_history.png")
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
