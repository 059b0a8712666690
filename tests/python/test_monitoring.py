"""The alert rules (monitoring/prometheus/) in a real Prometheus server: Debian's package, unpacked by `make
prometheus` and started here on 127.0.0.1, scraping a real cdc-run beside a real Kafka broker.

First promtool checks the rules and runs their unit tests (series written by hand at and beside each
threshold). Then the server evaluates the project's rules, with the change log's staleness threshold
shortened to minutes of a test, over:
- a healthy runner: `cdc-run --every 2` while a producer writes a change every two seconds; after four runs
  no alert is firing or pending, every rule evaluates without error, and the scraped series are there;
- a stalled one: `cdc-run --every 100000`, which runs once and then waits while the producer goes on: the
  change log goes stale, CdcChangeLogStale fires, and the backlog the server scrapes grows.
"""

import json
import signal
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml
from helpers import PROJECT_DIR, VENV_BIN, Warehouse, drs_json_insert
from kafka_broker import RunningProcess, create_topics, kafka_broker, produce
from server_process import free_port, stop

pytestmark = pytest.mark.monitoring

PROMETHEUS_BIN = PROJECT_DIR / "jars" / "prometheus" / "usr" / "bin"
RULES = PROJECT_DIR / "monitoring" / "prometheus"
TOPIC = "watched.orders"
ONLY_DRS = json.dumps({"cdc_enabled_formats": ["huawei_drs_json"]})
# The change log's staleness threshold of the test: longer than a healthy run here takes, first one included.
STALE_SECONDS = 150


def insert(change: int) -> bytes:
    """An insert of order `change`, its source event now."""
    return drs_json_insert(change, int(time.time() * 1000))


class Producer:
    """A change every two seconds until stopped."""

    def __init__(self, broker) -> None:
        self.broker, self.produced, self._stop = broker, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(2):
            self.produced += 1
            produce(self.broker, [(TOPIC, 0, insert(self.produced))])

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)


class Prometheus:
    """The server, scraping the runner's port every second and evaluating the rules every second."""

    def __init__(self, root: Path, runner_port: int) -> None:
        rules = yaml.safe_load((RULES / "cdc_lakehouse.rules.yml").read_text())
        for group in rules["groups"]:
            for rule in group["rules"]:
                if rule.get("record") == "cdc:alert_change_log_stale_seconds":
                    rule["expr"] = f"vector({STALE_SECONDS})"
        (root / "rules.yml").write_text(yaml.safe_dump(rules))
        (root / "prometheus.yml").write_text(
            yaml.safe_dump(
                {
                    "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                    "rule_files": ["rules.yml"],
                    "scrape_configs": [
                        {"job_name": "cdc_lakehouse", "static_configs": [{"targets": [f"127.0.0.1:{runner_port}"]}]}
                    ],
                }
            )
        )
        self.port = free_port()
        self.log = (root / "prometheus.log").open("w")
        self.process = subprocess.Popen(
            [
                str(PROMETHEUS_BIN / "prometheus"),
                f"--config.file={root / 'prometheus.yml'}",
                f"--storage.tsdb.path={root / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while not self._ready():
            assert self.process.poll() is None and time.monotonic() < deadline, "Prometheus did not start"
            time.sleep(0.5)

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=5) as response:
                return response.status == 200
        except OSError:
            return False

    def api(self, path: str, **query) -> dict | list:
        url = f"http://127.0.0.1:{self.port}/api/v1/{path}"
        if query:
            url += "?" + urllib.parse.urlencode(query)
        with urllib.request.urlopen(url, timeout=30) as response:
            body = json.load(response)
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expression: str) -> list[dict]:
        return self.api("query", query=expression)["result"]

    def alerts(self) -> list[dict]:
        return self.api("alerts")["alerts"]

    def close(self) -> None:
        stop(self.process)
        self.log.close()


def start_runner(env: dict, config: Path, port: int, every: str) -> RunningProcess:
    command = [str(VENV_BIN / "cdc-run"), "--config", str(config), "--vars", ONLY_DRS, "--every", every]
    return RunningProcess(
        subprocess.Popen(
            [*command, "--metrics-port", str(port), "--metrics-host", "127.0.0.1"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
    )


def test_the_alert_rules_pass_promtool_and_their_unit_tests():
    for check in (["check", "rules", "cdc_lakehouse.rules.yml"], ["test", "rules", "cdc_lakehouse.rules.test.yml"]):
        done = subprocess.run([str(PROMETHEUS_BIN / "promtool"), *check], cwd=RULES, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="module")
def watched(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("monitoring")
    (root / "kafka").mkdir()
    warehouse = Warehouse(tmp_path_factory.mktemp("watched_warehouse"))
    config = root / "ingest.yml"
    config.write_text(f"topics: [{{topic: {TOPIC}, format: huawei_drs_json}}]\n")
    runner_port = free_port()
    seen: dict = {}
    with kafka_broker(root / "kafka", {}) as broker:
        env = {**warehouse.env, "CDC_KAFKA_BOOTSTRAP_SERVERS": broker.plaintext}
        create_topics(broker, {TOPIC: 1})
        prometheus = Prometheus(root, runner_port)
        producer = Producer(broker)
        try:
            healthy = start_runner(env, config, runner_port, "2")
            healthy.wait_for(lambda line: line.startswith("cdc-run: run 4:"), timeout=900)
            time.sleep(3)  # the server's next scrapes and evaluations, after the fourth run
            seen["healthy alerts"] = prometheus.alerts()
            seen["rules"] = prometheus.api("rules")["groups"]
            seen["healthy runs"] = prometheus.query('cdc_runs_total{outcome="succeeded"}')
            seen["healthy backlog"] = prometheus.query("cdc_kafka_partition_backlog_messages")
            healthy.process.send_signal(signal.SIGTERM)
            seen["healthy code"], seen["healthy output"] = healthy.finish(timeout=300)

            stalled = start_runner(env, config, runner_port, "100000")
            stalled.wait_for(lambda line: line.startswith("cdc-run: run 1:"), timeout=900)
            seen["stalled run at"] = time.time()
            seen["stalled backlog first"] = prometheus.query("sum(cdc_kafka_partition_backlog_messages)")
            deadline = time.monotonic() + STALE_SECONDS + 120
            while time.monotonic() < deadline:
                firing = [a for a in prometheus.alerts() if a["state"] == "firing"]
                if firing:
                    break
                time.sleep(2)
            seen["stalled firing"] = firing
            seen["stalled firing after"] = time.time() - seen["stalled run at"]
            seen["stalled backlog last"] = prometheus.query("sum(cdc_kafka_partition_backlog_messages)")
            stalled.process.send_signal(signal.SIGTERM)
            seen["stalled code"], seen["stalled output"] = stalled.finish(timeout=300)
        finally:
            producer.stop()
            prometheus.close()
    return seen


def test_a_healthy_runner_raises_no_alert(watched):
    assert watched["healthy alerts"] == []
    rules = [rule for group in watched["rules"] for rule in group["rules"]]
    assert {rule["name"] for rule in rules} >= {"CdcChangeLogStale", "CdcRunsFailing", "cdc:alert_lag_seconds"}
    assert all(rule["health"] == "ok" for rule in rules), [(r["name"], r.get("lastError")) for r in rules]
    assert float(watched["healthy runs"][0]["value"][1]) >= 4
    assert [series["metric"]["topic"] for series in watched["healthy backlog"]] == [TOPIC]
    assert watched["healthy code"] == 0, watched["healthy output"]


def test_a_stalled_runner_fires_the_stale_change_log_alert(watched):
    firing = watched["stalled firing"]
    assert [alert["labels"]["alertname"] for alert in firing] == ["CdcChangeLogStale"], firing
    assert firing[0]["labels"]["severity"] == "critical"
    # Not before the threshold: the runner's last run brought the change log up to date.
    assert watched["stalled firing after"] >= STALE_SECONDS - 5
    # The producer went on: the backlog the server scraped grew while the runner waited.
    first = float(watched["stalled backlog first"][0]["value"][1])
    assert float(watched["stalled backlog last"][0]["value"][1]) > first + 30
    assert watched["stalled code"] == 0, watched["stalled output"]
