"""A shared deployment started on 127.0.0.1: the Hive metastore on PostgreSQL, the warehouse on HDFS, and the
`cluster` profile against a Spark standalone master with two workers; then two scheduled builds started
together while `cdc-ingest --every` lands from a real Kafka broker and cdc-land lands files (README,
"Sharing a warehouse").

Marked `cluster` (run by `make test-cluster`): the servers and the JVMs are too slow for `make test`.
"""

import functools
import itertools
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hdfs_server import hdfs_cluster
from helpers import (
    CHANGE_LOG,
    DRS_AVRO_SCHEMA,
    VENDOR_EXAMPLES,
    VENV_BIN,
    Ingest,
    Warehouse,
    assert_succeeded,
    comparable_event_rows,
    drs_insert,
    read_table,
)
from kafka_broker import Broker, create_topics, kafka_broker, produce
from postgres_server import Postgres, postgres_server
from pyspark.sql import DataFrame
from vendor_expectations import (
    BAD_TOPIC,
    EXPECTED_OWN_EVENTS,
    EXPECTED_QUARANTINE,
    EXPECTED_SEED_EVENTS,
    EXPECTED_STREAM_HISTORY,
    OWN_TOPIC,
    SEED_TOPIC,
    stream_history,
)

from bench.standalone import standalone_cluster as start_standalone_cluster
from cdc_lakehouse import PROJECT_DIR

pytestmark = pytest.mark.cluster

# What the concurrent builds read: two formats keep each build to about a minute.
FORMATS = ("huawei_drs_json", "canal_json")
# The server trusts every local login: any password works, and none may show in an output or a file.
METASTORE_PASSWORD = "metastore-s3cret-password"
# Where each landed message of the concurrent builds' formats ends up.
ACCOUNTED_IN = ("cdc_events", "cdc_redeliveries", "cdc_quarantine")


@pytest.fixture(scope="module")
def postgres() -> Postgres:
    with postgres_server() as server:
        yield server


@pytest.fixture(scope="module")
def broker(tmp_path_factory) -> Broker:
    with kafka_broker(tmp_path_factory.mktemp("kafka"), {}) as started:
        yield started


@pytest.fixture(scope="module")
def hdfs(tmp_path_factory) -> str:
    with hdfs_cluster(tmp_path_factory.mktemp("hdfs")) as uri:
        yield uri


def shared_warehouse(root, postgres: Postgres, hdfs: str, name: str, **settings: str) -> Warehouse:
    """A warehouse whose metastore is a new PostgreSQL database and whose tables are on HDFS."""
    postgres.psql("postgres", f"create database {name}")
    root.mkdir(parents=True)
    return Warehouse(
        root,
        storage=f"{hdfs}/{name}",
        settings={
            "CDC_METASTORE_URL": postgres.jdbc_url(name),
            "CDC_METASTORE_USER": "postgres",
            "CDC_METASTORE_PASSWORD": METASTORE_PASSWORD,
            "CDC_DRIVER_MEMORY": "1g",
            **settings,
        },
    )


def deployed_evaluation(java_options: str) -> str:
    """The suite's JVM options less its Spark settings (ci.mk, TEST_JAVA_OPTIONS): executors refuse
    spark.* options (INVALID_EXECUTOR_SPARK_OPTIONS), and a run on the cluster keeps Spark's code generation,
    as deployed."""
    return " ".join(option for option in java_options.split() if not option.startswith("-Dspark."))


def test_dbt_build_runs_on_a_standalone_master_with_a_shared_metastore_and_storage(spark, tmp_path, postgres, hdfs):
    with start_standalone_cluster(tmp_path) as (master_url, work_dirs):
        warehouse = shared_warehouse(
            tmp_path / "warehouse",
            postgres,
            hdfs,
            "standalone",
            CDC_TARGET="cluster",
            CDC_SPARK_MASTER=master_url,
            CDC_EXECUTOR_MEMORY="1g",
            CDC_JAVA_OPTIONS=deployed_evaluation(os.environ.get("CDC_JAVA_OPTIONS", "")),
            # The formats whose decoding runs on the executors (Python UDFs, spark-avro, the schema file).
            CDC_ENABLED_FORMATS="tencent_dts_protobuf,huawei_drs_avro,huawei_drs_json",
            # Python workers must run the packed environment's interpreter (spark.archives), not this one.
            PYSPARK_PYTHON="/nonexistent/python",
        )
        assert_succeeded(warehouse.run(sys.executable, "sample_data/land_samples.py"))
        # The change log and the history with their seeds and tests: where executors decode, with Spark's code
        # generation, as deployed. The typed tables are SQL over the history, built by make test's shared build.
        build = warehouse.dbt("build", "--select", *CHANGE_LOG)
    assert_succeeded(build)
    assert "Completed successfully" in build.stdout
    # Executors of both applications (landing, dbt) ran on both workers, each with the unpacked environment
    # (python_udfs and what it imports) and its copy of the writer schema.
    for work_dir in work_dirs:
        executor_dirs = list(work_dir.glob("app-*/*"))
        assert len(executor_dirs) == 2
        for executor_dir in executor_dirs:
            assert (executor_dir / "environment" / "bin" / "python").exists()
            assert list((executor_dir / "environment").glob("lib/python3.11/site-packages/python_udfs/tencent_dts.py"))
            assert (executor_dir / DRS_AVRO_SCHEMA.name).read_bytes() == DRS_AVRO_SCHEMA.read_bytes()
    # The catalog is in PostgreSQL and every table is on HDFS; nothing was written on the local disk.
    locations = postgres.psql(
        "standalone",
        'select d."NAME" || \'.\' || t."TBL_NAME", s."LOCATION" from "TBLS" t join "DBS" d using ("DB_ID") '
        'join "SDS" s using ("SD_ID") where t."TBL_TYPE" <> \'VIRTUAL_VIEW\'',
    ).split()
    tables = dict(line.split("|") for line in locations)
    assert {"landing.cdc_raw", "cdc.cdc_events", "cdc.cdc_history", "cdc.cdc_batches"} <= tables.keys()
    assert all(location.startswith(f"{hdfs}/standalone/tables/") for location in tables.values()), tables
    assert not list(tmp_path.rglob("*.db")) and not list(tmp_path.rglob("_delta_log"))
    events = spark.read.format("delta").load(warehouse.table_path("cdc", "cdc_events"))
    # Tencent DTS is decoded by Python UDFs: the sample's envelopes, one split in three, become the
    # transactions' rows, GBK text transcoded (tests/python/test_tencent_dts_pipeline.py has them all).
    dts = events.where("topic = 'tencent_dts_protobuf.shop'").orderBy("source_seq", "row_index").collect()
    assert [(event.kafka_offset, event.op) for event in dts] == [
        *[(0, "begin"), (0, "c"), (0, "c"), (0, "commit")],
        *[(1, "begin"), (1, "u"), (1, "d"), (1, "commit"), (1, "ddl")],
        *[(4, "heartbeat"), (4, "checkpoint"), (6, "heartbeat")],
    ]
    assert dts[2].after["customer"] == "李伟"
    assert events.where("topic = 'huawei_drs_json.shop.orders'").count() == 14
    # Executors need the spark-avro jar and read the writer schema file (through a UDF) for DRS Avro: the
    # sample's eight changes of shop.orders are one row each, and its last record is cut in half.
    assert events.where("topic = 'huawei_drs_avro.shop.orders'").count() == 8
    quarantine = spark.read.format("delta").load(warehouse.table_path("cdc", "cdc_quarantine"))
    (truncated,) = quarantine.where("topic = 'huawei_drs_avro.shop.orders'").collect()
    assert (truncated.kafka_offset, truncated.reason.endswith("(from_avro could not read it)")) == (8, True)


def examples_of(root: Path, source: Path, formats) -> str:
    """A folder of these formats' folders from a folder of every format's (sample_data, the vendor examples)."""
    root.mkdir()
    for source_format in formats:
        (root / source_format).symlink_to(source / source_format)
    return str(root)


LIVE_TOPIC = "drs.live"
LIVE_RULES = f"topics: [{{topic: {LIVE_TOPIC}, format: huawei_drs_json}}]\n"


def live_orders(first: int, count: int, topic: str = LIVE_TOPIC) -> list[tuple]:
    """DRS JSON inserts of orders first.. over the topic's two partitions."""
    return [(topic, number % 2, drs_insert(number, str(number))) for number in range(first, first + count)]


def test_two_scheduled_builds_started_together_take_turns_while_ingest_and_cdc_land_write_landing(
    spark, tmp_path, postgres, hdfs, broker
):
    first = examples_of(tmp_path / "first", PROJECT_DIR / "sample_data", FORMATS)
    more = examples_of(tmp_path / "more", VENDOR_EXAMPLES, ["canal_json"])
    enabled = {"CDC_ENABLED_FORMATS": ",".join(FORMATS)}
    shared = shared_warehouse(tmp_path / "shared", postgres, hdfs, "two_builds", **enabled)
    assert_succeeded(shared.run(sys.executable, "sample_data/land_samples.py", first))
    create_topics(broker, {LIVE_TOPIC: 2})
    produce(broker, live_orders(1, 100))
    ingest = Ingest(shared, broker, "live", LIVE_RULES).start("--every", "2 seconds")

    def start(*command: str) -> subprocess.Popen:
        return subprocess.Popen(
            command, cwd=PROJECT_DIR, env=shared.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )

    builds = [start(str(VENV_BIN / "cdc-build")) for _ in range(2)]
    for chunk in range(10):
        time.sleep(3)
        produce(broker, live_orders(101 + chunk * 10, 10))
    lander = start(sys.executable, "sample_data/land_samples.py", more)
    outputs = [process.communicate(timeout=900)[0] for process in [*builds, lander]]
    assert [process.returncode for process in [*builds, lander]] == [0, 0, 0], "\n".join(outputs)
    ingest.wait_for_landed(200)
    ingest.process.send_signal(signal.SIGTERM)
    ingest_code, ingest_output = ingest.finish()
    assert ingest_code == 0, ingest_output
    # What landed after the second build's batch opened is read by the next run.
    assert_succeeded(shared.run(str(VENV_BIN / "cdc-build")))

    batches = spark.read.format("delta").load(shared.table_path("cdc", "cdc_batches")).orderBy("batch_id").collect()
    assert [batch.batch_id for batch in batches] == list(range(1, len(batches) + 1))
    finished = spark.read.format("delta").load(shared.table_path("cdc", "cdc_batch_models"))
    for batch, following in itertools.pairwise(batches):
        (last_finished,) = finished.where(f"batch_id = {batch.batch_id}").agg({"finished_at": "max"}).first()
        assert last_finished <= following.opened_at, f"batch {following.batch_id} opened inside {batch.batch_id}"
    # Three runs held the lease in turn: each taking it from another holder added one to its token.
    leases = "select schema_name, token from cdc_schema_leases where schema_name = 'cdc'"
    assert postgres.psql("two_builds", leases).split() == ["cdc|3"]
    # A dbt command run by hand takes it too: held elsewhere, it refuses, naming the holder.
    postgres.psql(
        "two_builds",
        "update cdc_schema_leases set holder = 'a run elsewhere', token = token + 1, "
        "expires_at = now() + interval '10 minutes' where schema_name = 'cdc'",
    )
    refused = subprocess.run(
        [str(VENV_BIN / "dbt"), "seed"],
        cwd=PROJECT_DIR,
        env={**shared.env, "CDC_LEASE_WAIT_SECONDS": "0"},
        capture_output=True,
        text=True,
    )
    assert refused.returncode != 0
    assert "schema cdc is held by a run elsewhere until " in refused.stdout, refused.stdout[-3000:]
    # Every produced message once in landing, and once in the change log: one insert each.
    produced = [(number % 2, (number - 1) // 2) for number in range(1, 201)]
    landed = spark.read.format("delta").load(shared.table_path("landing", "cdc_raw")).where(f"topic = '{LIVE_TOPIC}'")
    assert sorted((row.kafka_partition, row.kafka_offset) for row in landed.collect()) == sorted(produced)
    events = spark.read.format("delta").load(shared.table_path("cdc", "cdc_events")).where(f"topic = '{LIVE_TOPIC}'")
    assert sorted((row.kafka_partition, row.kafka_offset, row.op) for row in events.collect()) == sorted(
        (partition, offset, "c") for partition, offset in produced
    )

    written = [path.read_text(errors="replace") for path in shared.root.rglob("*") if path.is_file()]
    assert not [
        text
        for text in [*outputs, ingest_output, refused.stdout, refused.stderr, *written]
        if METASTORE_PASSWORD in text
    ]

    # Builds that took turns miss nothing and repeat nothing: the shared warehouse holds the rows written by hand
    # from the vendors' documented behaviour (test_canal_json, test_huawei_drs_json), and every landed message
    # is an event, a redelivery or quarantined.
    assert comparable_event_rows(spark, shared, SEED_TOPIC) == EXPECTED_SEED_EVENTS
    assert comparable_event_rows(spark, shared, OWN_TOPIC) == EXPECTED_OWN_EVENTS
    assert stream_history(spark, shared) == EXPECTED_STREAM_HISTORY
    bad = read_table(spark, shared, "cdc_quarantine").where(f"topic = '{BAD_TOPIC}'").orderBy("kafka_offset")
    assert [(row.kafka_offset, row.reason) for row in bad.collect()] == EXPECTED_QUARANTINE
    assert read_table(spark, shared, "cdc_events").where("topic = 'huawei_drs_json.shop.orders'").count() == 14
    keys = ["topic", "kafka_partition", "kafka_offset"]
    accounted = [read_table(spark, shared, table).select(*keys) for table in ACCOUNTED_IN]
    landed = spark.read.format("delta").load(shared.table_path("landing", "cdc_raw")).select(*keys)
    assert landed.subtract(functools.reduce(DataFrame.union, accounted)).count() == 0


MAINTAINED_TOPIC = "drs.maintained"


def test_maintenance_beside_a_running_ingest_lands_every_message_once_and_loses_none(
    spark, tmp_path, postgres, hdfs, broker
):
    shared = shared_warehouse(
        tmp_path / "shared", postgres, hdfs, "maintained_beside_ingest", CDC_ENABLED_FORMATS="huawei_drs_json"
    )
    create_topics(broker, {MAINTAINED_TOPIC: 2})
    produce(broker, live_orders(1, 100, MAINTAINED_TOPIC))
    rules = f"topics: [{{topic: {MAINTAINED_TOPIC}, format: huawei_drs_json}}]\n"
    ingest = Ingest(shared, broker, "maintained", rules).start("--every", "1 second")
    ingest.wait_for_landed(100)
    # Every model reads the first 100: retention (--keep-days 0) may remove them.
    assert_succeeded(shared.run(str(VENV_BIN / "cdc-build")))

    produced = [100]
    stop = threading.Event()

    def keep_producing() -> None:
        while not stop.wait(0.5):
            produce(broker, live_orders(produced[0] + 1, 5, MAINTAINED_TOPIC))
            produced[0] += 5

    producer = threading.Thread(target=keep_producing)
    producer.start()
    try:
        started = time.time()
        maintenance = shared.run(str(VENV_BIN / "cdc-maintain"), "--keep-days", "0", "--retain-hours", "0")
        ended = time.time()
    finally:
        stop.set()
        producer.join()
    assert_succeeded(maintenance)
    ingest.wait_for_landed(produced[0])
    ingest.process.send_signal(signal.SIGTERM)
    ingest_code, ingest_output = ingest.finish()
    assert ingest_code == 0, ingest_output
    assert_succeeded(shared.run(str(VENV_BIN / "cdc-build")))

    landing = shared.table_path("landing", "cdc_raw")
    history = spark.sql(f"describe history delta.`{landing}`").collect()
    # The two ran side by side: ingest committed while maintenance ran, and retention removed messages.
    assert any(
        row.operation == "MERGE"
        and started < row.timestamp.timestamp() < ended
        and row.operationMetrics.get("numTargetRowsInserted", "0") != "0"
        for row in history
    ), [(row.version, row.operation, row.timestamp) for row in history]
    removed = sum(int(row.operationMetrics.get("numTargetRowsDeleted", 0)) for row in history)
    assert removed > 0
    # Every produced message landed once (what retention removed had been read) and is one event.
    offsets = [(number % 2, (number - 1) // 2) for number in range(1, produced[0] + 1)]
    landed = spark.read.format("delta").load(landing).groupBy("kafka_partition", "kafka_offset").count()
    assert landed.where("count > 1").count() == 0
    assert landed.count() == len(offsets) - removed
    events = spark.read.format("delta").load(shared.table_path("cdc", "cdc_events"))
    assert sorted((row.kafka_partition, row.kafka_offset, row.op) for row in events.collect()) == sorted(
        (partition, offset, "c") for partition, offset in offsets
    )


# The run-specific columns: when a message landed, the batch that wrote a row.
RUN_COLUMNS = ("ingested_at", "cdc_batch_id")


def table_digest(spark, warehouse: Warehouse, table: str) -> tuple[int, int]:
    """A table's row count and an order-free hash of its rows, less the run-specific columns."""
    rows = read_table(spark, warehouse, table)
    rows = rows.select(*[column for column in rows.columns if column not in RUN_COLUMNS])
    digest = rows.selectExpr("cast(xxhash64(to_json(struct(*))) as decimal(38, 0)) as row_hash")
    count, total = digest.selectExpr("count(*)", "sum(row_hash)").first()
    return count, int(total or 0)


def test_a_run_stopped_past_its_lease_is_fenced_when_it_wakes(spark, tmp_path, postgres, hdfs):
    enabled = {"CDC_ENABLED_FORMATS": ",".join(FORMATS)}
    shared = shared_warehouse(tmp_path / "shared", postgres, hdfs, "fenced", CDC_LEASE_SECONDS="10", **enabled)
    clean = Warehouse(tmp_path / "clean", settings=enabled)
    samples = examples_of(tmp_path / "samples", PROJECT_DIR / "sample_data", FORMATS)
    for warehouse in (shared, clean):
        assert_succeeded(warehouse.run(sys.executable, "sample_data/land_samples.py", samples))
    assert_succeeded(clean.run(str(VENV_BIN / "cdc-build")))

    def start_build() -> subprocess.Popen:
        # A session of its own: a signal to its group reaches the run's Python, its JVM and its Python workers.
        return subprocess.Popen(
            [str(VENV_BIN / "cdc-build")],
            cwd=PROJECT_DIR,
            env=shared.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )

    # The first run is stopped as it starts writing the change log's events, a write in flight.
    first = start_build()
    before_stop = []
    for line in first.stdout:
        before_stop.append(line)
        if "START sql incremental model cdc.cdc_events " in line:
            break
    else:
        pytest.fail("".join(before_stop))
    os.killpg(first.pid, signal.SIGSTOP)
    try:
        time.sleep(15)  # past its term: its lease expires unrenewed
        second = start_build()
        second_output = second.communicate(timeout=900)[0]
        assert second.returncode == 0, second_output
    finally:
        os.killpg(first.pid, signal.SIGCONT)
    first_output = "".join(before_stop) + first.communicate(timeout=600)[0]

    # The first run stops at its next write, in one line naming the run that took the lease.
    assert first.returncode == 1, first_output[-5000:]
    (stopped,) = [line for line in first_output.splitlines() if line.startswith("cdc-build: ")]
    assert stopped.startswith("cdc-build: error: lost the lease of cdc to "), stopped
    assert f" pid {second.pid} (" in stopped and "CDC_LEASE_SECONDS" in stopped, stopped
    # Nothing it wrote after that is visible: the second run's tables are one clean run's.
    for table in ("cdc_events", "cdc_history", "cdc_quarantine", "cdc_redeliveries"):
        assert table_digest(spark, shared, table) == table_digest(spark, clean, table), table
    # The next run is green, and reads what landed since as any run would.
    more = examples_of(tmp_path / "more", VENDOR_EXAMPLES, ["canal_json"])
    assert_succeeded(shared.run(sys.executable, "sample_data/land_samples.py", more))
    assert_succeeded(shared.run(str(VENV_BIN / "cdc-build")))
    assert comparable_event_rows(spark, shared, OWN_TOPIC) == EXPECTED_OWN_EVENTS
    assert stream_history(spark, shared) == EXPECTED_STREAM_HISTORY
