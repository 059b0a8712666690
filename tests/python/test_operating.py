"""Operating it (README, "Operating it"), against a real Kafka broker and the real runner: the metrics cdc-run
serves and the textfile of one-shot runs, the landed offsets committed to the topic's consumer group (read back
with a separate admin client, as the vendor's console reads them), and cdc-status, all checked against what
was produced, written here by hand.

Huawei DRS JSON changes of shop.orders over two partitions, with source event times ten minutes old, and two
messages that are not DRS JSON:
1. `cdc-run --every 3600 --metrics-port`: its first run lands and builds them, then it idles. Scraped while
   idle: no backlog, the landed and quarantined counters, the table's newest event time and lag, the run.
2. Five more produced while it idles: the backlog, scraped, reads 5 (the scrape asks the broker).
3. `cdc-run --once --metrics-textfile` while another consumer is a member of the group: Kafka refuses a
   commit to a group with members, so the commit fails; the run lands everything once and succeeds.
4. The member gone and one more change produced, `cdc-run --once` again: the commit carries every landed
   offset; the textfile's counters went on from the previous run's.
5. cdc-status (JSON and text) says the same numbers.
"""

import json
import signal
import subprocess
import time
import urllib.request

import pytest
from helpers import VENV_BIN, Warehouse, drs_json_insert
from kafka_broker import Broker, RunningProcess, create_topics, kafka_broker, produce
from prometheus_client.parser import text_string_to_metric_families
from server_process import free_port

pytestmark = pytest.mark.kafka

TOPIC, GROUP = "ops.orders", "ops-console"
RULES = f"topics: [{{topic: {TOPIC}, format: huawei_drs_json, consumer_group: {GROUP}}}]\n"
ONLY_DRS = json.dumps({"cdc_enabled_formats": ["huawei_drs_json"]})
NOT_DRS = "not a Huawei DRS JSON message"
# The source event time of change i (seconds): ten minutes before the test, i seconds apart.
EVENTS_FROM = int(time.time()) - 600
TABLE = {
    "source_format": "huawei_drs_json",
    "source_name": TOPIC,
    "source_database": "shop",
    "source_schema": "",
    "source_table": "orders",
}


def insert(change: int) -> bytes:
    """An insert of order `change`, its source event EVENTS_FROM + change seconds."""
    return drs_json_insert(change, (EVENTS_FROM + change) * 1000)


def changes(first: int, last: int) -> list[tuple]:
    """Orders first..last, odd ones to partition 0, even ones to partition 1."""
    return [(TOPIC, 1 if change % 2 == 0 else 0, insert(change)) for change in range(first, last + 1)]


def scrape(port: int) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as response:
        return samples(response.read().decode())


def samples(text: str) -> dict:
    """(name, frozenset of labels) -> value."""
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(scraped: dict, name: str, **labels) -> float | None:
    return scraped.get((name, frozenset(labels.items())))


def backlog(scraped: dict) -> dict[int, float]:
    return {
        int(dict(labels)["partition"]): number
        for (name, labels), number in scraped.items()
        if name == "cdc_kafka_partition_backlog_messages"
    }


def committed(broker: Broker) -> dict[int, int]:
    """The group's committed offsets, as the vendor's console reads them: a separate admin client."""
    from confluent_kafka import ConsumerGroupTopicPartitions
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": broker.plaintext})
    (future,) = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(GROUP)]).values()
    return {tp.partition: tp.offset for tp in future.result(30).topic_partitions if tp.offset >= 0}


def member_of_the_group(broker: Broker):
    """A consumer that joined the group and holds its partitions (Kafka then refuses others' commits)."""
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": broker.plaintext, "group.id": GROUP, "enable.auto.commit": False})
    consumer.subscribe([TOPIC])
    deadline = time.monotonic() + 60
    while not consumer.assignment():
        assert time.monotonic() < deadline, "the consumer was given no partition"
        consumer.poll(0.5)
    return consumer


@pytest.fixture(scope="module")
def operated(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("operating")
    warehouse = Warehouse(tmp_path_factory.mktemp("operated_warehouse"))
    (root / "kafka").mkdir()
    config = root / "ingest.yml"
    config.write_text(RULES)
    textfile = root / "cdc.prom"
    seen: dict = {}
    with kafka_broker(root / "kafka", {}) as broker:
        env = {**warehouse.env, "CDC_KAFKA_BOOTSTRAP_SERVERS": broker.plaintext}
        run = [str(VENV_BIN / "cdc-run"), "--config", str(config), "--vars", ONLY_DRS]
        create_topics(broker, {TOPIC: 2})
        produce(broker, [*changes(1, 6), (TOPIC, 0, b'{"broken'), (TOPIC, 1, b"not json at all")])

        port = free_port()
        looping = RunningProcess(
            subprocess.Popen(
                [*run, "--every", "3600", "--metrics-port", str(port), "--metrics-host", "127.0.0.1"],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                start_new_session=True,
            )
        )
        seen["run 1"] = looping.wait_for(lambda line: line.startswith("cdc-run: run 1:"), timeout=900)
        seen["after run 1"] = scrape(port)
        seen["committed after run 1"] = committed(broker)
        produce(broker, changes(7, 11))
        seen["idle with 5 new"] = scrape(port)
        looping.process.send_signal(signal.SIGTERM)
        seen["loop code"], seen["loop output"] = looping.finish(timeout=300)

        member = member_of_the_group(broker)
        try:
            seen["refused"] = subprocess.run(
                [*run, "--once", "--metrics-textfile", str(textfile)], env=env, capture_output=True, text=True
            )
            seen["textfile refused"] = samples(textfile.read_text())
            seen["committed while refused"] = committed(broker)
        finally:
            member.close()

        produce(broker, changes(12, 12))
        seen["retried"] = subprocess.run(
            [*run, "--once", "--metrics-textfile", str(textfile)], env=env, capture_output=True, text=True
        )
        seen["textfile retried"] = samples(textfile.read_text())
        seen["committed at the end"] = committed(broker)

        status = [str(VENV_BIN / "cdc-status"), "--config", str(config), "--since", "1h"]
        seen["status"] = subprocess.run([*status, "--json"], env=env, capture_output=True, text=True)
        seen["status text"] = subprocess.run(status, env=env, capture_output=True, text=True)
    return seen


def test_a_scrape_between_runs_says_what_the_run_landed_quarantined_and_built(operated):
    scraped = operated["after run 1"]
    assert operated["run 1"].startswith("cdc-run: run 1: 8 messages landed, 0 left in Kafka; batch 1:")
    assert backlog(scraped) == {0: 0, 1: 0}
    assert value(scraped, "cdc_kafka_partition_landed_offset", topic=TOPIC, partition="0") == 4
    assert value(scraped, "cdc_landed_messages_total", source_format="huawei_drs_json") == 8
    assert value(scraped, "cdc_quarantined_messages_total", source_format="huawei_drs_json", reason=NOT_DRS) == 2
    assert value(scraped, "cdc_source_table_versions_total", **TABLE) == 6
    # The table's newest version is order 6's; it reached the history ten minutes after its source event.
    assert value(scraped, "cdc_source_table_newest_event_timestamp_seconds", **TABLE) == EVENTS_FROM + 6
    lag = value(scraped, "cdc_source_table_lag_seconds", **TABLE)
    assert 594 <= lag < 594 + 1800
    assert value(scraped, "cdc_runs_total", outcome="succeeded") == 1
    assert value(scraped, "cdc_runs_failed_in_a_row") == 0
    assert value(scraped, "cdc_change_log_batch_id") == 1
    assert value(scraped, "cdc_schema_lease_held", schema="cdc") == 0
    assert {
        part for (name, labels), _ in scraped.items() if name == "cdc_last_run_part_seconds" for _, part in labels
    } == {
        "ingest",
        "change_log",
        "typed_views",
        "downstream",
    }
    # The landed offsets, committed to the group: what the vendor's console shows as consumed.
    assert operated["committed after run 1"] == {0: 4, 1: 4}


def test_the_backlog_grows_between_runs_as_messages_arrive(operated):
    assert backlog(operated["idle with 5 new"]) == {0: 3, 1: 2}
    assert operated["loop code"] == 0, operated["loop output"]


def test_a_refused_commit_is_said_and_retried_and_never_lands_twice(operated):
    refused = operated["refused"]
    assert refused.returncode == 0, refused.stdout + refused.stderr
    assert "cdc-run: run 1: 5 messages landed, 0 left in Kafka;" in refused.stdout
    assert f"cdc-ingest: consumer group {GROUP}: landed offsets not committed" in refused.stderr
    textfile = operated["textfile refused"]
    assert value(textfile, "cdc_consumer_group_commit_failures_total", consumer_group=GROUP) >= 1
    assert value(textfile, "cdc_landed_messages_total", source_format="huawei_drs_json") == 5
    assert operated["committed while refused"] == {0: 4, 1: 4}

    retried = operated["retried"]
    assert retried.returncode == 0, retried.stdout + retried.stderr
    assert "landed offsets not committed" not in retried.stderr
    assert operated["committed at the end"] == {0: 7, 1: 7}
    textfile = operated["textfile retried"]
    # The textfile's counters go on from the previous one-shot run's.
    assert value(textfile, "cdc_landed_messages_total", source_format="huawei_drs_json") == 6
    assert value(textfile, "cdc_runs_total", outcome="succeeded") == 2
    assert value(textfile, "cdc_source_table_versions_total", **TABLE) == 6
    assert backlog(textfile) == {0: 0, 1: 0}
    assert value(textfile, "cdc_source_table_newest_event_timestamp_seconds", **TABLE) == EVENTS_FROM + 12


def test_cdc_status_says_the_same_numbers(operated):
    assert operated["status"].returncode == 0, operated["status"].stderr
    status = json.loads(operated["status"].stdout)
    assert status["schema"] == "cdc" and status["lease"] is None
    (table,) = status["tables"]
    assert {key: table[key] for key in TABLE} == {**TABLE, "source_schema": ""}
    assert table["newest_event_at"] == time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(EVENTS_FROM + 12))
    assert table["versions_in_newest_batch"] == 1
    assert status["newest_batch"] == 3
    assert [
        (p["partition"], p["landed_offset"], p["end_offset"], p["backlog"], p["committed_offset"])
        for p in status["partitions"]
    ] == [
        (0, 7, 7, 0, 7),
        (1, 7, 7, 0, 7),
    ]
    assert status["quarantined"] == [{"source_format": "huawei_drs_json", "reason": NOT_DRS, "messages": 2}]
    runs = status["runs"]
    assert [(run["batch_id"], run["succeeded"], run["landed"]) for run in runs] == [
        (3, True, 1),
        (2, True, 5),
        (1, True, 8),
    ]
    assert set(runs[0]["seconds"]) == {"ingest", "change_log", "typed_views", "downstream"}
    text = operated["status text"].stdout
    assert "cdc-status: schema cdc at " in text and "newest batch 3" in text
    assert "lease: none (the embedded metastore admits one driver at a time)" in text
    assert f"{NOT_DRS}  2" in text
