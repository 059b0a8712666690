"""cdc-ingest against a real Kafka broker (KRaft, started from jars/kafka-broker on 127.0.0.1), then dbt build.

Topics of three formats are produced as their vendors write them: Canal and DRS JSON over several
partitions with keys and producer timestamps, DTS envelopes split across messages and written in a Kafka
transaction (its commit marker takes an offset: the partition has a gap). Expected rows are written by hand
from the messages below. One warehouse holds every scenario; one `dbt build` of the change log and the
history runs at the end.
"""

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import (
    CHANGE_LOG,
    CREATED_MS,
    VENV_BIN,
    Ingest,
    Warehouse,
    assert_succeeded,
    drs,
    drs_insert,
    dts_envelope,
    dts_heartbeat_entries,
    dts_insert_entries,
    read_table,
    read_view,
)
from helpers import dts_split as split_envelopes
from kafka_broker import Broker, RunningProcess, create_topics, kafka_broker, produce, producer_of, send_messages

pytestmark = pytest.mark.kafka

SASL_USER, SASL_PASSWORD = "cdc", "s3cret-cdc-password"
HEADERS = [("trace", b"a"), ("trace", b"b"), ("source", None)]
FORMATS = {"cdc_enabled_formats": ["canal_json", "tencent_dts_protobuf", "huawei_drs_json"]}
# Messages per partition of the topic whose ingest is killed mid-way.
KILLED_OFFSETS = 30

VENDOR_RULES = """
topics:
  # Every topic ending in .shop is Canal, except dts.shop: a named topic wins over a pattern.
  - pattern: '.*\\.shop'
    format: canal_json
  - topic: dts.shop
    format: tencent_dts_protobuf
  - pattern: 'drs\\..*'
    format: huawei_drs_json
"""


def canal(batch_id: int, operation: str, row: dict, old: dict | None = None) -> bytes:
    return json.dumps(
        {
            "id": batch_id,
            "database": "shop",
            "table": "orders",
            "type": operation,
            "isDdl": False,
            "sql": "",
            "es": CREATED_MS + batch_id,
            "ts": CREATED_MS + batch_id + 5,
            "mysqlType": {"id": "int(11)", "status": "varchar(16)"},
            "sqlType": {"id": 4, "status": 12},
            "pkNames": ["id"],
            "data": [row],
            "old": [old] if old else None,
        }
    ).encode()


class Transaction:
    """A transactional producer's transaction, as Flink's and Debezium's exactly-once writers use them: sent
    messages stay invisible to read_committed consumers until the commit, for ever when it aborts."""

    def __init__(self, broker: Broker, transactional_id: str) -> None:
        # Longer than an ingest run, so a transaction left open across one is not aborted by the broker.
        self.producer = producer_of(broker, **{"transactional.id": transactional_id, "transaction.timeout.ms": 600_000})
        self.producer.init_transactions(30)
        self.producer.begin_transaction()

    def send(self, messages: list[tuple]) -> None:
        send_messages(self.producer, messages)
        assert self.producer.flush(30) == 0

    def commit(self) -> None:
        self.producer.commit_transaction(30)

    def abort(self) -> None:
        self.producer.abort_transaction(30)

    def __enter__(self) -> "Transaction":
        return self

    def __exit__(self, *failure) -> None:
        if failure[0] is None:
            self.commit()


def landed(spark, warehouse: Warehouse, topic: str) -> list[tuple]:
    rows = read_table_landing(spark, warehouse).where(f"topic = '{topic}'")
    return sorted((r.kafka_partition, r.kafka_offset) for r in rows.collect())


def read_table_landing(spark, warehouse: Warehouse):
    return spark.read.format("delta").load(warehouse.table_path("landing", "cdc_raw"))


@pytest.fixture(scope="module")
def broker(tmp_path_factory) -> Iterator[Broker]:
    with kafka_broker(tmp_path_factory.mktemp("kafka"), {SASL_USER: SASL_PASSWORD}) as started:
        yield started


@pytest.fixture(scope="module")
def ingested(spark, broker, tmp_path_factory) -> Iterator[dict]:
    """Every scenario's topics produced and ingested into one warehouse, then one build of the change log and
    the history; their outputs."""
    warehouse = Warehouse(tmp_path_factory.mktemp("kafka_warehouse"))
    outputs: dict[str, object] = {"warehouse": warehouse}
    create_topics(
        broker,
        {
            "canal.shop": 2,
            "dts.shop": 2,
            "drs.orders": 3,
            "drs.headers": 1,
            "kill.orders": 3,
            "sasl.orders": 1,
            "live.orders": 1,
            "txn.orders": 1,
        },
    )
    create_topics(broker, {"drs.appendtime": 1}, {"message.timestamp.type": "LogAppendTime"})

    # Vendor topics: keys and producer timestamps on Canal; DTS parts 0-2 in a transaction, then a heartbeat.
    produce(
        broker,
        [
            ("canal.shop", 0, canal(7, "INSERT", {"id": "1", "status": "created"}), b"1", CREATED_MS + 7),
            ("canal.shop", 1, canal(7, "INSERT", {"id": "2", "status": "created"}), b"2", CREATED_MS + 8),
            ("canal.shop", 0, canal(8, "UPDATE", {"id": "1", "status": "paid"}, {"status": "created"}), b"1"),
            ("canal.shop", 1, canal(9, "DELETE", {"id": "2", "status": "created"}), b"2"),
            ("dts.shop", 1, dts_envelope(dts_insert_entries(12, "2"))),
            ("drs.orders", 2, drs_insert(1001, "5")),
        ],
    )
    with Transaction(broker, "dts-writer") as transaction:
        transaction.send([("dts.shop", 0, part) for part in split_envelopes(dts_insert_entries(11, "1"), 3)])
    produce(broker, [("dts.shop", 0, dts_envelope(dts_heartbeat_entries(13)))])
    # Headers (a key may repeat, a value may be null) and a topic whose timestamps are the broker's.
    produce(broker, [("drs.headers", 0, drs_insert(5001, "51"), b"51", CREATED_MS + 51, HEADERS)])
    outputs["append_time_window"] = [time.time()]
    produce(broker, [("drs.appendtime", 0, drs_insert(5002, "52"), None, CREATED_MS)])
    outputs["append_time_window"].append(time.time())
    vendor = Ingest(warehouse, broker, "vendor", VENDOR_RULES)
    outputs["vendor"] = vendor.run()
    outputs["vendor_again"] = vendor.run()

    # Transactions, as exactly-once producers write them: one committed (offsets 0-1, its marker at 2), one
    # aborted (3, marker 4), one left open (5) across an ingest run with a plain message behind it (6), then
    # committed (marker 7). A read_committed consumer reads up to the first open transaction.
    with Transaction(broker, "txn-writer") as committed:
        committed.send([("txn.orders", 0, drs_insert(4001, "41")), ("txn.orders", 0, drs_insert(4002, "42"))])
    aborted = Transaction(broker, "txn-writer")
    aborted.send([("txn.orders", 0, drs_insert(4003, "43"))])
    aborted.abort()
    left_open = Transaction(broker, "txn-writer")
    left_open.send([("txn.orders", 0, drs_insert(4004, "44"))])
    produce(broker, [("txn.orders", 0, drs_insert(4005, "45"))])
    transactional = Ingest(warehouse, broker, "txn", "topics: [{topic: txn.orders, format: huawei_drs_json}]\n")
    outputs["txn_while_open"] = transactional.run()
    outputs["txn_landed_while_open"] = landed(spark, warehouse, "txn.orders")
    left_open.commit()
    outputs["txn_after_commit"] = transactional.run()

    # Killed after its first micro-batch of 20 messages (of 90: four batches to go), then run again.
    produce(
        broker,
        [
            ("kill.orders", partition, canal(offset, "INSERT", {"id": f"{partition}{offset:03d}", "status": "new"}))
            for offset in range(KILLED_OFFSETS)
            for partition in range(3)
        ],
    )
    killed = Ingest(
        warehouse,
        broker,
        "kill",
        "topics: [{topic: kill.orders, format: canal_json}]\nsource_options: {maxOffsetsPerTrigger: 20}\n",
    )
    running = killed.start()
    running.wait_for(lambda line: line.startswith("cdc-ingest: batch "))
    os.killpg(running.process.pid, signal.SIGKILL)
    running.finish()
    outputs["kill_rerun"] = killed.run()

    # Credentials: the SASL listener, with the properties file a vendor's console gives.
    produce(broker, [("sasl.orders", 0, drs_insert(2001, "9"))])
    with_credentials = Ingest(warehouse, broker, "sasl", "topics: [{topic: sasl.orders, format: huawei_drs_json}]\n")
    properties = warehouse.root / "client.properties"
    properties.write_text(
        "# from the console\nsecurity.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \\\n"
        f'    username="{SASL_USER}" password="{SASL_PASSWORD}";\n'
    )
    sasl_env = {**with_credentials.env, "CDC_KAFKA_BOOTSTRAP_SERVERS": broker.sasl_plaintext}
    outputs["sasl"] = with_credentials.run(env={**sasl_env, "CDC_KAFKA_PROPERTIES": str(properties)})
    # A variable wins over the file: the same login with a wrong password.
    wrong_login = f'org.apache.kafka.common.security.plain.PlainLoginModule required username="{SASL_USER}" '
    wrong_login += 'password="wrong-password";'
    outputs["sasl_wrong"] = Ingest(warehouse, broker, "sasl-wrong", with_credentials.config.read_text()).run(
        env={**sasl_env, "CDC_KAFKA_PROPERTIES": str(properties), "CDC_KAFKA_SASL_JAAS_CONFIG": wrong_login},
    )

    # Continuous: a micro-batch every second until SIGTERM.
    live = Ingest(warehouse, broker, "live", "topics: [{topic: live.orders, format: huawei_drs_json}]\n")
    running = live.start("--every", "1 second")
    produce(broker, [("live.orders", 0, drs_insert(3001, "31")), ("live.orders", 0, drs_insert(3002, "32"))])
    running.wait_for_landed(2)
    produce(broker, [("live.orders", 0, drs_insert(3003, "33"))])
    running.wait_for_landed(3)
    running.process.send_signal(signal.SIGTERM)
    outputs["live"] = running.finish()

    # The change log, the history and current state, the quarantine and the redeliveries, with their seeds and
    # tests (every landed message accounted for among them); the scheduled-build and orchestration suites build
    # the typed tables.
    build = warehouse.dbt("build", "--select", *CHANGE_LOG, "--vars", json.dumps(FORMATS))
    assert_succeeded(build)
    yield outputs


def events(spark, warehouse: Warehouse, topic: str) -> list[tuple]:
    rows = read_table(spark, warehouse, "cdc_events").where(f"topic = '{topic}'")
    return sorted(
        (r.kafka_partition, r.kafka_offset, r.row_index, r.source_format, r.op, int(r.source_seq), r.after)
        for r in rows.collect()
    )


def test_vendor_topics_land_and_become_events(spark, ingested):
    assert_succeeded(ingested["vendor"])
    warehouse = ingested["warehouse"]
    assert events(spark, warehouse, "canal.shop") == [
        (0, 0, 0, "canal_json", "c", 7, {"id": "1", "status": "created"}),
        (0, 1, 0, "canal_json", "u", 8, {"id": "1", "status": "paid"}),
        (1, 0, 0, "canal_json", "c", 7, {"id": "2", "status": "created"}),
        (1, 1, 0, "canal_json", "d", 9, None),
    ]
    # Offset 3 of partition 0 is the transaction's commit marker: the heartbeat is at 4.
    assert events(spark, warehouse, "dts.shop") == [
        (0, 0, 0, "tencent_dts_protobuf", "c", 11, {"id": "1"}),
        (0, 4, 0, "tencent_dts_protobuf", "heartbeat", 13, None),
        (1, 0, 0, "tencent_dts_protobuf", "c", 12, {"id": "2"}),
    ]
    assert events(spark, warehouse, "drs.orders") == [
        (2, 0, 0, "huawei_drs_json", "c", 1001, {"order_id": "5", "status": "created"})
    ]


def test_keys_and_producer_timestamps_are_landed(spark, ingested):
    rows = read_table_landing(spark, ingested["warehouse"]).where("topic = 'canal.shop' and kafka_offset = 0")
    landed_rows = {
        r.kafka_partition: (bytes(r.kafka_key), int(r.kafka_timestamp.timestamp() * 1000)) for r in rows.collect()
    }
    assert landed_rows == {0: (b"1", CREATED_MS + 7), 1: (b"2", CREATED_MS + 8)}


def test_headers_and_the_timestamp_type_are_landed(spark, ingested):
    rows = read_table_landing(spark, ingested["warehouse"]).where("topic in ('drs.headers', 'drs.appendtime')")
    landed_rows = {r.topic: r for r in rows.collect()}
    with_headers, append_time = landed_rows["drs.headers"], landed_rows["drs.appendtime"]
    assert [(h.key, None if h.value is None else bytes(h.value)) for h in with_headers.kafka_headers] == HEADERS
    assert with_headers.kafka_timestamp_type == "CreateTime"
    assert int(with_headers.kafka_timestamp.timestamp() * 1000) == CREATED_MS + 51
    # The broker's append time, not the producer's 2026-01-01.
    assert append_time.kafka_timestamp_type == "LogAppendTime"
    produced_from, produced_to = ingested["append_time_window"]
    assert produced_from - 1 <= append_time.kafka_timestamp.timestamp() <= produced_to + 1
    assert append_time.kafka_headers == []


def test_only_committed_records_land_and_an_open_transaction_lands_after_its_commit(spark, ingested):
    assert_succeeded(ingested["txn_while_open"])
    assert_succeeded(ingested["txn_after_commit"])
    warehouse = ingested["warehouse"]
    assert ingested["txn_landed_while_open"] == [(0, 0), (0, 1)]
    # Offsets 2, 4 and 7 are transaction markers and 3 an aborted record: never landed, and not a loss to
    # Spark's failOnDataLoss (on by default: the runs succeeded), nor a lag.
    assert landed(spark, warehouse, "txn.orders") == [(0, 0), (0, 1), (0, 5), (0, 6)]
    assert "lag of txn.orders by partition: 0: 0" in ingested["txn_after_commit"].stdout
    assert events(spark, warehouse, "txn.orders") == [
        (0, 0, 0, "huawei_drs_json", "c", 4001, {"order_id": "41", "status": "created"}),
        (0, 1, 0, "huawei_drs_json", "c", 4002, {"order_id": "42", "status": "created"}),
        (0, 5, 0, "huawei_drs_json", "c", 4004, {"order_id": "44", "status": "created"}),
        (0, 6, 0, "huawei_drs_json", "c", 4005, {"order_id": "45", "status": "created"}),
    ]
    # The aborted change reaches no table.
    history = read_table(spark, warehouse, "cdc_history").where("source_name = 'txn.orders'")
    assert sorted(r.pk for r in history.collect()) == ['["41"]', '["42"]', '["44"]', '["45"]']


def test_a_run_reports_its_batches_and_the_lag_of_every_partition(ingested):
    output = ingested["vendor"].stdout
    assert "12 messages read, 12 landed" in output
    assert "lag of dts.shop by partition: 0: 0, 1: 0" in output
    assert "lag of drs.orders by partition: 0: 0, 1: 0, 2: 0" in output


def test_a_second_run_finds_nothing_new(ingested):
    again = ingested["vendor_again"]
    assert_succeeded(again)
    assert "0 messages read, 0 landed" in again.stdout


def test_a_run_killed_mid_ingest_and_rerun_lands_every_message_once(spark, ingested):
    assert_succeeded(ingested["kill_rerun"])
    warehouse = ingested["warehouse"]
    offsets = range(KILLED_OFFSETS)
    assert landed(spark, warehouse, "kill.orders") == [(p, o) for p in range(3) for o in offsets]
    assert events(spark, warehouse, "kill.orders") == [
        (p, o, 0, "canal_json", "c", o, {"id": f"{p}{o:03d}", "status": "new"}) for p in range(3) for o in offsets
    ]


def test_credentials_reach_the_broker_and_are_never_printed(spark, ingested):
    sasl, wrong = ingested["sasl"], ingested["sasl_wrong"]
    assert_succeeded(sasl)
    assert landed(spark, ingested["warehouse"], "sasl.orders") == [(0, 0)]
    assert wrong.returncode == 1
    assert "cdc-ingest: error: the stream stopped" in wrong.stderr
    for run in (sasl, wrong):
        assert SASL_PASSWORD not in run.stdout + run.stderr
        assert "wrong-password" not in run.stdout + run.stderr


def test_the_continuous_mode_lands_as_messages_arrive_and_stops_on_sigterm(spark, ingested):
    code, output = ingested["live"]
    assert code == 0, output
    assert "messages read, 3 landed" in output
    assert landed(spark, ingested["warehouse"], "live.orders") == [(0, 0), (0, 1), (0, 2)]


def test_a_topic_with_no_rule_and_an_unknown_format_are_refused(broker, tmp_path):
    warehouse = Warehouse(tmp_path)
    ingest = Ingest(warehouse, broker, "refused", VENDOR_RULES)
    no_rule = ingest.run("--topic", "payments")
    assert no_rule.returncode == 2
    assert no_rule.stderr == "cdc-ingest: error: topic 'payments' matches no rule of the configuration\n"
    unknown = Ingest(warehouse, broker, "unknown", "topics: [{topic: a, format: debezium_json}]\n").run()
    assert unknown.returncode == 2
    assert unknown.stderr.startswith(f"cdc-ingest: error: {Path(warehouse.root / 'unknown.yml')}: topics entry 1:")
    assert "unknown format 'debezium_json'" in unknown.stderr
    assert len(unknown.stderr.splitlines()) == 1


@pytest.fixture(scope="module")
def runner(spark, broker, tmp_path_factory) -> dict:
    """cdc-run looping on a warehouse of its own while DRS JSON changes of shop.orders are produced, then SIGTERM."""
    warehouse = Warehouse(tmp_path_factory.mktemp("runner_warehouse"))
    create_topics(broker, {"runner.orders": 1})
    produce(broker, [("runner.orders", 0, drs_insert(1, "1")), ("runner.orders", 0, drs_insert(2, "2"))])
    looping = Ingest(warehouse, broker, "runner", "topics: [{topic: runner.orders, format: huawei_drs_json}]\n")
    only_drs = json.dumps({"cdc_enabled_formats": ["huawei_drs_json"]})
    command = [str(VENV_BIN / "cdc-run"), "--config", str(looping.config), "--name", "runner", "--every", "2"]
    running = RunningProcess(
        subprocess.Popen(
            [*command, "--vars", only_drs],
            env=looping.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
    )
    seen = {"first": running.wait_for(lambda line: line.startswith("cdc-run: run 1:"), timeout=600)}
    produce(
        broker,
        [
            (
                "runner.orders",
                0,
                drs(3, "UPDATE", {"order_id": "2", "status": "paid"}, {"order_id": "2", "status": "created"}),
            )
        ],
    )
    seen["update"] = running.wait_for(lambda line: " 1 messages landed" in line, timeout=300)
    seen["idle"] = running.wait_for(lambda line: " 0 messages landed" in line, timeout=300)
    running.process.send_signal(signal.SIGTERM)
    seen["code"], seen["output"] = running.finish(timeout=300)
    seen["current"] = sorted(
        (row.pk, row.row["status"])
        for row in read_table(spark, warehouse, "cdc_history").where("is_current and not is_deleted").collect()
    )
    seen["typed"] = sorted(
        (row.order_id, row.status)
        for row in read_view(spark, warehouse, "shop__orders__huawei_drs_json__current")
        .select("order_id", "status")
        .collect()
    )
    return seen


def test_the_runner_ingests_and_builds_in_a_loop_and_stops_on_sigterm(runner):
    assert runner["first"].startswith("cdc-run: run 1: 2 messages landed, 0 left in Kafka; batch 1: change log ")
    assert "1 source tables touched; typed views of 1 of 1 table created in" in runner["first"]
    # The update reaches the change log, and the typed view over it, in the run that lands it; nothing else is
    # built.
    assert "1 source tables touched; typed views of 1 table as they were" in runner["update"]
    assert "change log: nothing new; typed views of 1 table as they were" in runner["idle"]
    assert runner["code"] == 0, runner["output"]
    assert re.search(r"cdc-run: stopped after \d+ runs, 0 failed", runner["output"])
    assert runner["current"] == [('["1"]', "created"), ('["2"]', "paid")]
    assert runner["typed"] == [(1, "created"), (2, "paid")]
