"""The broker's side of ingest: each partition's end offset, and the offsets a consumer group has committed.

Through Kafka's own Java admin client (kafka-clients, on Spark's class path for its Kafka source) in the
driver's JVM, with the client settings cdc-ingest reads with: SASL and TLS settings reach the broker exactly
as they reach Spark's consumers, a vendor's JAAS text included.
"""

import threading
from collections.abc import Iterable, Mapping

Partition = tuple[str, int]

# A call that does not answer in this time fails (the caller logs it and goes on).
TIMEOUT_SECONDS = 10
# Consumer settings the admin client has no use for (it would log each as unknown).
CONSUMER_ONLY = ("isolation.level", "group.id", "auto.offset.reset", "enable.auto.commit")


def offsets_read(progress: Mapping | None) -> dict[Partition, int]:
    """The offsets a streaming query's progress says its last micro-batch read up to (and landed: the progress
    of a micro-batch comes after its sink committed), for every partition it reads."""
    return _source_offsets(progress, "endOffset")


def offsets_latest(progress: Mapping | None) -> dict[Partition, int]:
    """The partitions' end offsets as the query's last trigger saw them."""
    return _source_offsets(progress, "latestOffset")


def _source_offsets(progress: Mapping | None, key: str) -> dict[Partition, int]:
    import json

    offsets: dict[Partition, int] = {}
    for source in (progress or {}).get("sources", []):
        value = source.get(key)
        value = json.loads(value) if isinstance(value, str) else value or {}
        for topic, partitions in value.items():
            for partition, offset in partitions.items():
                offsets[(topic, int(partition))] = int(offset)
    return offsets


class KafkaOffsets:
    """An admin client of the broker, opened on first use and closed by close()."""

    def __init__(self, jvm, client_settings: Mapping[str, str]) -> None:
        self._jvm = jvm
        self._settings = {k: v for k, v in client_settings.items() if k not in CONSUMER_ONLY}
        self._admin = None
        self._lock = threading.Lock()

    def _client(self):
        # A scrape's thread and the run's may ask at once: one client between them.
        with self._lock:
            return self._open()

    def _open(self):
        if self._admin is None:
            properties = self._jvm.java.util.Properties()
            for setting, value in self._settings.items():
                properties.setProperty(setting, value)
            properties.setProperty("client.id", "cdc-lakehouse-offsets")
            self._admin = self._jvm.org.apache.kafka.clients.admin.AdminClient.create(properties)
        return self._admin

    def _topic_partition(self, partition: Partition):
        return self._jvm.org.apache.kafka.common.TopicPartition(partition[0], partition[1])

    def _wait(self, future, timeout_seconds: float = TIMEOUT_SECONDS):
        return future.get(int(timeout_seconds * 1000), self._jvm.java.util.concurrent.TimeUnit.MILLISECONDS)

    def end_offsets(
        self, partitions: Iterable[Partition], timeout_seconds: float = TIMEOUT_SECONDS
    ) -> dict[Partition, int]:
        """Each partition's end offset for a read_committed consumer (its last stable offset): where ingest
        would read up to now."""
        jvm, specs = self._jvm, self._jvm.java.util.HashMap()
        chosen = sorted(set(partitions))
        if not chosen:
            return {}
        for partition in chosen:
            specs.put(self._topic_partition(partition), jvm.org.apache.kafka.clients.admin.OffsetSpec.latest())
        options = jvm.org.apache.kafka.clients.admin.ListOffsetsOptions(
            jvm.org.apache.kafka.common.IsolationLevel.READ_COMMITTED
        )
        found = self._wait(self._client().listOffsets(specs, options).all(), timeout_seconds)
        return {partition: int(found.get(self._topic_partition(partition)).offset()) for partition in chosen}

    def commit(self, group: str, offsets: Mapping[Partition, int]) -> None:
        """Record the offsets as the group's committed ones, as a consumer of the group would commit them."""
        committed = self._jvm.java.util.HashMap()
        for partition, offset in offsets.items():
            committed.put(
                self._topic_partition(partition),
                self._jvm.org.apache.kafka.clients.consumer.OffsetAndMetadata(int(offset)),
            )
        self._wait(self._client().alterConsumerGroupOffsets(group, committed).all())

    def committed(self, group: str) -> dict[Partition, int]:
        found = self._wait(self._client().listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata())
        return {
            (partition.topic(), int(partition.partition())): int(offset.offset())
            for partition, offset in found.items()
            if offset is not None
        }

    def close(self) -> None:
        with self._lock:
            if self._admin is not None:
                self._admin.close(self._jvm.java.time.Duration.ofSeconds(TIMEOUT_SECONDS))
                self._admin = None
