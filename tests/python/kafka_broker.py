"""A single-node Apache Kafka broker in KRaft mode (no ZooKeeper), started from the jars `make kafka-broker`
fetched into jars/kafka-broker/lib, on free ports of 127.0.0.1, with its data in a temporary folder.

It listens in plain text, and with SASL_PLAINTEXT (mechanism PLAIN) for the users it is given, as the
vendors' Kafka services do with credentials.
"""

import base64
import socket
import subprocess
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
