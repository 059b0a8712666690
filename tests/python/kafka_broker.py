"""A single-node Apache Kafka broker in KRaft mode (no ZooKeeper), started from the jars `make kafka-broker`
fetched into jars/kafka-broker/lib, on free ports of 127.0.0.1, with its data in a temporary folder.

It listens in plain text, and with SASL_PLAINTEXT (mechanism PLAIN) for the users it is given, as the
vendors' Kafka services do with credentials.
"""

import base64
import queue
import re
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from server_process import free_port, stop

BROKER_LIB = Path(__file__).resolve().parents[2] / "jars" / "kafka-broker" / "lib"


@dataclass(frozen=True)
class Broker:
    plaintext: str
    sasl_plaintext: str


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@contextmanager
def kafka_broker(root: Path, sasl_users: Mapping[str, str]) -> Iterator[Broker]:
    """Start the broker, yield its addresses, and stop it at the end whatever happened."""
    if not any(BROKER_LIB.glob("kafka_2.13-*.jar")):
        raise FileNotFoundError(f"no broker jars in {BROKER_LIB}: run `make kafka-broker`")
    plain, sasl, controller = free_port(), free_port(), free_port()
    users = " ".join(f'user_{name}="{password}"' for name, password in sasl_users.items())
    properties = root / "server.properties"
    properties.write_text(
        "\n".join(
            [
                "process.roles=broker,controller",
                "node.id=1",
                f"controller.quorum.voters=1@127.0.0.1:{controller}",
                f"listeners=PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl},"
                f"CONTROLLER://127.0.0.1:{controller}",
                f"advertised.listeners=PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}",
                "controller.listener.names=CONTROLLER",
                "inter.broker.listener.name=PLAINTEXT",
                "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
                "listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN",
                "listener.name.sasl_plaintext.plain.sasl.jaas.config="
                f"org.apache.kafka.common.security.plain.PlainLoginModule required {users};",
                f"log.dirs={root / 'data'}",
                "num.partitions=1",
                "offsets.topic.replication.factor=1",
                "transaction.state.log.replication.factor=1",
                "transaction.state.log.min.isr=1",
                "group.initial.rebalance.delay.ms=0",
                # Records keep their producers' timestamps, which tests write by hand and in the past: time
                # retention (7 days by default) would delete them while a suite runs, and an ingest would then
                # fail on the lost offsets (Spark's failOnDataLoss).
                "log.retention.ms=-1",
            ]
        )
        + "\n"
    )
    classpath = f"{BROKER_LIB}/*"
    # A random id may start with "-": given as --cluster-id=…, it cannot be read as an option.
    cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    subprocess.run(
        [
            "java",
            "-cp",
            classpath,
            "kafka.tools.StorageTool",
            "format",
            f"--cluster-id={cluster_id}",
            "-c",
            str(properties),
        ],
        check=True,
        capture_output=True,
    )
    log = (root / "broker.log").open("w")
    process = subprocess.Popen(
        ["java", "-Xmx512m", "-cp", classpath, "kafka.Kafka", str(properties)], stdout=log, stderr=subprocess.STDOUT
    )
    try:
        deadline = time.monotonic() + 60
        while not (_listening(plain) and _listening(sasl)):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the Kafka broker did not start (exit {process.poll()}); see {log.name}")
            time.sleep(0.2)
        yield Broker(plaintext=f"127.0.0.1:{plain}", sasl_plaintext=f"127.0.0.1:{sasl}")
    finally:
        stop(process)
        log.close()


def create_topics(broker: Broker, partitions: dict[str, int], config: dict[str, str] | None = None) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": broker.plaintext})
    created = admin.create_topics([NewTopic(name, count, 1, config=config or {}) for name, count in partitions.items()])
    for future in created.values():
        future.result(30)


def produce(broker: Broker, messages: list[tuple]) -> None:
    """(topic, partition, value[, key[, timestamp ms[, headers]]]) in order."""
    producer = producer_of(broker)
    send_messages(producer, messages)
    assert producer.flush(30) == 0


def producer_of(broker: Broker, **settings):
    from confluent_kafka import Producer

    return Producer({"bootstrap.servers": broker.plaintext, "enable.idempotence": True, **settings})


def send_messages(producer, messages: list[tuple]) -> None:
    for topic, partition, value, *rest in messages:
        key = rest[0] if rest else None
        timestamp = rest[1] if len(rest) > 1 else 0
        headers = rest[2] if len(rest) > 2 else None
        producer.produce(topic, value=value, key=key, partition=partition, timestamp=timestamp, headers=headers)


class RunningProcess:
    def __init__(self, process: subprocess.Popen) -> None:
        self.process = process
        self.lines: queue.Queue[str] = queue.Queue()
        self.output: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line)

    def wait_for(self, predicate, timeout: float = 180) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=1)
            except queue.Empty:
                assert self.process.poll() is None, "the command ended:\n" + "".join(self.output)
                continue
            self.output.append(line)
            if predicate(line):
                return line
        raise AssertionError("the command printed no such line:\n" + "".join(self.output))

    def wait_for_landed(self, total: int) -> None:
        """Until the batches printed so far have landed this many messages in all."""

        def landed_so_far(_line: str) -> bool:
            return (
                sum(int(n) for n in re.findall(r"batch \d+: \d+ messages, (\d+) landed", "".join(self.output))) >= total
            )

        self.wait_for(landed_so_far)

    def finish(self, timeout: float = 120) -> tuple[int, str]:
        code = self.process.wait(timeout)
        time.sleep(0.5)
        while not self.lines.empty():
            self.output.append(self.lines.get())
        return code, "".join(self.output)
