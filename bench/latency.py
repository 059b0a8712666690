"""make bench-latency: produce-to-visible latency with the long-lived runner's loop against a real broker.

A Kafka broker (KRaft, started from jars/kafka-broker on 127.0.0.1, as make test-kafka starts it) and a fresh
warehouse under bench/work/ where every source table the producers write is typed: the typed views of the
400 tables bench.t00 to bench.t399 of both formats (800 typed tables), created, with their columns, by a
first build after one change of each table (not measured). For each configuration (events per second x
source tables), a producer thread writes Canal and Huawei DRS JSON inserts, half each, at a steady rate for
LATENCY_SECONDS (default 600), each message carrying its production time as its source commit time (`es`);
meanwhile this process runs cdc-run's loop (availableNow ingest, then cdc-build) back to back, and once the
window ends, until a run finds nothing left (every change produced in the window is measured). A change is
visible in cdc_current when the change log part of the run that wrote it ends, and in its typed view
(bench.t00's changes of DRS JSON are measured) when the run's typed part ends: its latency is that moment
minus its production time.

Recorded under `latency` in bench/results/latest.json, per configuration: p50, p95 and max of both latencies,
the runs, the events, the Kafka backlog after each run's ingest, and whether the backlog grows (the p95 of
the changes produced in the window's second half above 1.5x that of its first half). Chart:
bench/results/latency.png. Targets on 2 cores: p95 <= 60 s at 1,000 events/s and <= 120 s at 5,000
events/s, no backlog growth.
"""

import json
import os
import sys
import threading
import time
from pathlib import Path

from cdc_lakehouse import PROJECT_DIR

sys.path.insert(0, str(PROJECT_DIR))
sys.path.insert(0, str(PROJECT_DIR / "tests" / "python"))

from kafka_broker import kafka_broker

from bench.run import BENCH_PROJECT_DIR, RESULTS_DIR, WORK_DIR, fresh_warehouse, record_results

RATES = (1000, 5000)
TABLE_COUNTS = (20, 400)
FORMATS = ("canal_json", "huawei_drs_json")
COLUMNS = {"id": ("bigint", -5), "note": ("varchar(32)", 12)}


def table_name(number: int) -> str:
    return f"t{number:02d}"


def type_every_table(spark) -> int:
    """The typed views of every table the producers write, in both formats, and one change of each landed (on
    topics of their own) so that the first build knows their columns; the number of typed tables."""
    from cdc_lakehouse.landing import land
    from cdc_lakehouse.scaffold import plan_files, scaffolded_tables, write_files
    from cdc_lakehouse.typed_model_names import SourceTable, model_bases

    tables = [
        SourceTable(database="bench", table=table_name(number), source_format=source_format)
        for number in range(max(TABLE_COUNTS))
        for source_format in FORMATS
    ]
    write_files(plan_files(tables, model_bases(tables, scaffolded_tables(BENCH_PROJECT_DIR)), {}, BENCH_PROJECT_DIR))
    produced_ms = int(time.time() * 1000)
    for source_format in FORMATS:
        changes = [
            message(source_format, table_name(number), number, produced_ms) for number in range(max(TABLE_COUNTS))
        ]
        land(spark, source_format, f"warmup.{source_format}", 0, changes)
    return len(tables)


def message(source_format: str, table: str, key: int, produced_ms: int) -> bytes:
    """An insert of one row of bench.<table>, committed at the source when produced."""
    common = {
        "database": "bench",
        "table": table,
        "type": "INSERT",
        "isDdl": False,
        "sql": "",
        "es": produced_ms,
        "ts": produced_ms,
        "mysqlType": {name: vendor for name, (vendor, _) in COLUMNS.items()},
        "sqlType": {name: jdbc for name, (_, jdbc) in COLUMNS.items()},
        "pkNames": ["id"],
        "data": [{"id": str(key), "note": "x"}],
        "old": None,
    }
    # Canal numbers the batches it fetched; DRS its changes: both grow with the key here.
    return json.dumps({**common, "id": key}).encode()


class SteadyProducer(threading.Thread):
    """`rate` messages a second, alternating Canal and DRS JSON, over `tables` tables, until stopped."""

    def __init__(self, bootstrap: str, topics: dict[str, str], rate: int, tables: int, first_key: int) -> None:
        super().__init__(daemon=True)
        from confluent_kafka import Producer

        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
        self.topics, self.rate, self.tables, self.key = topics, rate, tables, first_key
        self.stop = threading.Event()
        self.sent = 0

    def run(self) -> None:
        started, tick = time.monotonic(), 0.02
        while not self.stop.is_set():
            due = int((time.monotonic() - started) * self.rate)
            produced_ms = int(time.time() * 1000)
            while self.sent < due:
                source_format = FORMATS[self.sent % 2]
                table = table_name(self.sent // 2 % self.tables)
                self.producer.produce(
                    self.topics[source_format], message(source_format, table, self.key, produced_ms), partition=0
                )
                self.key += 1
                self.sent += 1
            self.producer.poll(0)
            time.sleep(tick)
        self.producer.flush(60)


def percentiles(spark, rows: str) -> dict:
    """p50, p95 and max of the `latency_s` column of a query."""
    (row,) = spark.sql(
        f"select percentile(latency_s, 0.5) as p50, percentile(latency_s, 0.95) as p95, max(latency_s) as max,"
        f" count(*) as changes from ({rows})"
    ).collect()
    return {key: (round(value, 1) if isinstance(value, float) else value) for key, value in row.asDict().items()}


def measure(spark, project, broker, rate: int, tables: int, seconds: float, first_key: int) -> dict:
    from cdc_lakehouse.ingest import IngestJob
    from cdc_lakehouse.ingest_config import load_config
    from cdc_lakehouse.runner import ingest_once
    from cdc_lakehouse.scheduled_build import scheduled_build

    name = f"latency_{rate}_{tables}"
    topics = {"canal_json": f"canal.{name}", "huawei_drs_json": f"drs.{name}"}
    config_path = WORK_DIR / f"{name}.yml"
    config_path.write_text(
        "topics:\n" + "".join(f"  - {{topic: {topic}, format: {fmt}}}\n" for fmt, topic in topics.items())
    )
    config = load_config(config_path)
    job = IngestJob(
        config=config,
        subscribed={"subscribe": ",".join(topics.values())},
        client_settings={"bootstrap.servers": broker.plaintext},
        name=name,
    )
    producer = SteadyProducer(broker.plaintext, topics, rate, tables, first_key)
    never = threading.Event()
    runs = []
    producer.start()
    started, window_started_at = time.monotonic(), time.time()
    draining = False
    while True:
        if not draining and time.monotonic() - started >= seconds:
            # The window ends: the runs go on until every change produced in it is visible.
            producer.stop.set()
            producer.join()
            draining = True
        run_started = time.monotonic()
        landed, left = ingest_once(job, spark, never)
        outcome = scheduled_build(project, spark)
        if not outcome.succeeded:
            raise SystemExit(f"bench-latency: a run failed: {', '.join(outcome.failures)}")
        runs.append(
            {
                "batch_id": outcome.batch_id,
                "landed": landed,
                "left_in_kafka": left,
                "draining": draining,
                "seconds": round(time.monotonic() - run_started, 1),
                "change_log_done_at": outcome.change_log_done_at,
                "typed_done_at": outcome.typed_done_at,
            }
        )
        print(f"bench-latency: {name}: {landed} landed, {left} left; {outcome.summary()}", flush=True)
        if draining and landed == 0 and left == 0:
            break

    done = [run for run in runs if run["change_log_done_at"]]
    spark.createDataFrame(
        [
            (run["batch_id"], run["change_log_done_at"], run["typed_done_at"] or run["change_log_done_at"])
            for run in done
        ],
        "batch_id long, change_log_done_at double, typed_done_at double",
    ).createOrReplaceTempView("bench_latency_runs")
    topic_list = ", ".join(f"'{topic}'" for topic in topics.values())
    change_log = f"""
        select
            runs.change_log_done_at - unix_millis(events.event_ts) / 1000.0 as latency_s,
            unix_millis(events.event_ts) / 1000.0 as produced_at
        from cdc.cdc_events as events
        inner join bench_latency_runs as runs on events.cdc_batch_id = runs.batch_id
        where events.topic in ({topic_list})
    """
    typed = f"""
        select runs.typed_done_at - unix_millis(typed.valid_from) / 1000.0 as latency_s
        from cdc.bench__t00__history as typed
        inner join bench_latency_runs as runs on typed.cdc_batch_id = runs.batch_id
        where typed.source_name in ({topic_list})
    """
    # Backlog growth: changes produced in the window's second half wait longer than those of its first.
    half = window_started_at + seconds / 2
    first_half = percentiles(spark, f"select * from ({change_log}) where produced_at < {half}")
    second_half = percentiles(spark, f"select * from ({change_log}) where produced_at >= {half}")
    return {
        "events_per_s": rate,
        "source_tables": tables,
        "seconds": seconds,
        "produced": producer.sent,
        "runs": len(runs),
        "runs_draining": sum(run["draining"] for run in runs),
        "cdc_current": percentiles(spark, change_log),
        "typed_table": percentiles(spark, typed),
        "left_in_kafka_after_ingest": [run["left_in_kafka"] for run in runs],
        "run_seconds": [run["seconds"] for run in runs],
        "first_half_p95_s": first_half["p95"],
        "second_half_p95_s": second_half["p95"],
        "backlog_grows": bool(
            first_half["p95"] and second_half["p95"] and second_half["p95"] > 1.5 * first_half["p95"]
        ),
    }, producer.key


def chart(latency: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(latency)
    figure, axis = plt.subplots(figsize=(9, 4))
    width = 0.2
    for offset, (label, where, key) in enumerate(
        [
            ("cdc_current p50", "cdc_current", "p50"),
            ("cdc_current p95", "cdc_current", "p95"),
            ("typed p50", "typed_table", "p50"),
            ("typed p95", "typed_table", "p95"),
        ]
    ):
        values = [latency[name][where][key] or 0 for name in names]
        axis.bar([index + (offset - 1.5) * width for index in range(len(names))], values, width, label=label)
    axis.set_xticks(range(len(names)), [n.replace("_", " ") for n in names])
    axis.set_ylabel("produce to visible, s")
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def main() -> int:
    seconds = float(os.environ.get("LATENCY_SECONDS", "600"))
    fresh_warehouse()
    from cdc_lakehouse.dbt_project import DbtProject
    from cdc_lakehouse.scheduled_build import scheduled_build
    from cdc_lakehouse.session import open_session, profile_spark_settings

    spark = open_session(profile_spark_settings())
    project = DbtProject(project_dir=BENCH_PROJECT_DIR, dbt_vars={"cdc_enabled_formats": list(FORMATS)})
    typed_tables = type_every_table(spark)
    # The first build (every table and typed view created) is not part of any measurement.
    print(f"bench-latency: first build: {scheduled_build(project, spark).summary()}", flush=True)
    latency, key = {}, 1
    (WORK_DIR / "kafka").mkdir()
    with kafka_broker(WORK_DIR / "kafka", {}) as broker:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": broker.plaintext})
        for rate in RATES:
            for tables in TABLE_COUNTS:
                name = f"latency_{rate}_{tables}"
                created = admin.create_topics([NewTopic(f"{p}.{name}", 1, 1) for p in ("canal", "drs")])
                for future in created.values():
                    future.result(30)
                figures, key = measure(spark, project, broker, rate, tables, seconds, key)
                latency[f"{rate}_per_s_{tables}_tables"] = {**figures, "typed_tables": typed_tables}
    record_results("latency", latency)
    chart(latency, RESULTS_DIR / "latency.png")
    print(
        json.dumps(
            {name: {k: v for k, v in figures.items() if not isinstance(v, list)} for name, figures in latency.items()},
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
