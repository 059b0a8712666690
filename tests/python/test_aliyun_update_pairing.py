"""Alibaba Cloud updates sent as two messages, on streams as they arrive: halves in two runs, in two
partitions, landed again, or without a sequenceId ("-1").

An update's event takes its before half's position, so its event_id is the same whether its halves land
together or apart, and a half landed again at another offset adds no second event. dbt runs in this
process on the test session, like test_history.py: the first run builds every model the history and the
reconciliation test need (the other formats' staging tables stay empty); each scenario then starts from an
emptied landing table and drops only the tables a StreamX message passes through. An incremental run
reads only the landing commits since the previous one. The messages have the
shape of seed 003 (whole database to Kafka); expected rows are written by hand.
"""

import json
import os
from datetime import datetime

import pytest
from conftest import dbt_in_process
from history_project import COMMON_PATH_TABLES, format_path_tables

pytestmark = pytest.mark.slow

SCHEMA = "aliyun_pairing_test"
FORMAT = "aliyun_streamx_json"
TOPIC = f"{FORMAT}.pairing"
SEQ = "1700000000000000005"
# The tables a StreamX message passes through on its way to the history and the reconciliation test.
PATH_TABLES = (*format_path_tables(FORMAT), *COMMON_PATH_TABLES, "cdc_quarantine")
RECONCILIATION_TEST = "cdc_every_landed_message_is_accounted_for"
# The first run builds every model the history and the reconciliation test read; the seeds loaded are theirs.
FIRST_RUN = (
    "+cdc_current",
    "+cdc_redeliveries",
    "+cdc_quarantine",
    "+stg_tencent_dts_protobuf__envelopes",
    "+int_aliyun__update_pairs",
)


def streamx(op: str, sequence_id: str | None, event_time: int, before=None, after=None) -> bytes:
    """A StreamX message of table shop.orders (primary key id) as DataWorks writes it to Kafka."""
    return json.dumps(
        {
            "schema": {
                "dataColumn": [{"name": "id", "type": "LONG"}, {"name": "status", "type": "STRING"}],
                "primaryKey": ["id"],
                "source": {"dbType": "MySQL", "dbName": "shop", "tableName": "orders"},
            },
            "payload": {
                "before": None if before is None else {"dataColumn": before},
                "after": None if after is None else {"dataColumn": after},
                "sequenceId": sequence_id,
                "timestamp": {
                    "eventTime": event_time,
                    "systemTime": event_time + 700,
                    "checkpointTime": event_time,
                },
                "op": op,
                "ddl": None,
            },
            "version": "0.0.1",
        }
    ).encode()


def status(key: int, value: str) -> dict:
    return {"id": key, "status": value}


# An update of order 7 from new to paid: its two halves, one sequenceId.
BEFORE = streamx("UPDATE_BEFOR", SEQ, 1700000002000, before=status(7, "new"))
AFTER = streamx("UPDATE_AFTER", SEQ, 1700000002000, after=status(7, "paid"))


class StreamxProject:
    """The project's models run in process on the test session, in their own schema."""

    def __init__(self, spark, root) -> None:
        self.spark = spark
        self.root = root
        self.built = False

    def dbt(self, *arguments: str, check: bool = True):
        return dbt_in_process(self.spark, self.root, *arguments, check=check)

    def reset(self) -> None:
        from cdc_lakehouse.landing_table import LANDING_TABLE, ensure_landing_table

        if self.built:
            for table in PATH_TABLES:
                self.spark.sql(f"DROP TABLE IF EXISTS {SCHEMA}.{table}")
        else:
            self.spark.sql(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
            ensure_landing_table(self.spark)
            self.dbt("seed", "--select", *FIRST_RUN)
        self.spark.sql(f"DELETE FROM {LANDING_TABLE}")

    def land(self, partition: int, *messages: bytes) -> None:
        from cdc_lakehouse.landing import land

        land(self.spark, FORMAT, TOPIC, partition, list(messages))

    def run(self) -> dict:
        """An incremental run, then what the tables hold for the topic."""
        if self.built:
            self.dbt("run", "--select", *PATH_TABLES, "cdc_current")
        else:
            self.dbt("run", "--select", *FIRST_RUN)
            self.built = True
        return self.state()

    def state(self) -> dict:
        events = self.spark.sql(
            f"""
            select kafka_partition, kafka_offset, op, event_id, event_order, source_seq, after['status'] as status
            from {SCHEMA}.cdc_events where topic = '{TOPIC}' order by kafka_partition, kafka_offset
            """
        ).collect()
        pairs = self.spark.sql(
            f"""
            select kafka_partition, kafka_offset, sequence_id, message_offsets
            from {SCHEMA}.int_aliyun__update_pairs where topic = '{TOPIC}'
            order by kafka_partition, kafka_offset
            """
        ).collect()
        redeliveries = self.spark.sql(
            f"""
            select kafka_partition, kafka_offset from {SCHEMA}.cdc_redeliveries where topic = '{TOPIC}'
            order by kafka_partition, kafka_offset
            """
        ).collect()
        current = self.spark.sql(
            f"""
            select pk, op, row['status'] as status from {SCHEMA}.cdc_current
            where source_format = '{FORMAT}' and source_name = '{TOPIC}' order by pk
            """
        ).collect()
        reconciliation = self.dbt("test", "--select", RECONCILIATION_TEST, check=False)
        return {
            "events": [
                (e.kafka_partition, e.kafka_offset, e.op, e.status, e.event_id, [int(part) for part in e.event_order])
                for e in events
            ],
            "pairs": [
                (p.kafka_partition, p.kafka_offset, p.sequence_id, [tuple(m) for m in p.message_offsets]) for p in pairs
            ],
            "redeliveries": [tuple(r) for r in redeliveries],
            "current": [tuple(c) for c in current],
            "accounted": reconciliation.success,
        }


@pytest.fixture(scope="module")
def project(spark, tmp_path_factory):
    saved = os.environ.get("CDC_SCHEMA")
    os.environ["CDC_SCHEMA"] = SCHEMA
    yield StreamxProject(spark, tmp_path_factory.mktemp("aliyun_pairing_dbt"))
    if saved is None:
        os.environ.pop("CDC_SCHEMA", None)
    else:
        os.environ["CDC_SCHEMA"] = saved


@pytest.fixture(scope="module")
def together(project) -> dict:
    """The before half in partition 0 and the after half in partition 1, landed before one run."""
    project.reset()
    project.land(0, BEFORE)
    project.land(1, AFTER)
    return project.run()


@pytest.fixture(scope="module")
def apart(project, together) -> list[dict]:
    """The same two halves at the same positions, the after half in one run and the before half in the
    next; then both landed again at new offsets, then the after half once more."""
    project.reset()
    states = []
    project.land(1, AFTER)
    states.append(project.run())
    project.land(0, BEFORE)
    states.append(project.run())
    project.land(0, BEFORE)
    project.land(1, AFTER)
    states.append(project.run())
    project.land(1, AFTER)
    states.append(project.run())
    return states


@pytest.fixture(scope="module")
def unknown_sequence(project, apart) -> list[dict]:
    """An insert with a known sequenceId, then updates with "-1", their halves landed in two runs."""
    project.reset()
    states = []
    project.land(
        0,
        streamx("INSERT", "1700000000000000001", 1700000001000, after=status(7, "new")),
        streamx("UPDATE_BEFOR", "-1", 1700000002000, before=status(7, "new")),
    )
    states.append(project.run())
    project.land(
        0,
        streamx("UPDATE_AFTER", "-1", 1700000002000, after=status(7, "paid")),
        # Halves of two other updates, both "-1", not next to each other: never paired together.
        streamx("UPDATE_BEFOR", "-1", 1700000003000, before=status(8, "new")),
        streamx("INSERT", "1700000000000000002", 1700000003000, after=status(9, "new")),
        streamx("UPDATE_AFTER", "-1", 1700000003000, after=status(10, "paid")),
    )
    states.append(project.run())
    return states


def test_halves_landed_together_in_two_partitions_are_one_event(together):
    ((partition, offset, op, value, _, order),) = together["events"]
    assert (partition, offset, op, value, order) == (0, 0, "u", "paid", [int(SEQ), 0, 0])
    assert together["pairs"] == [(0, 0, SEQ, [(0, 0), (1, 0)])]
    assert together["current"] == [('["7"]', "u", "paid")]
    assert together["accounted"]


def test_halves_landed_in_two_runs_give_the_same_event(together, apart):
    (event_landed_together,) = together["events"]
    waiting, paired, *_ = apart
    # The after half waits, accounted for, without an event.
    assert (waiting["events"], waiting["pairs"], waiting["accounted"]) == ([], [], True)
    assert paired["events"] == [event_landed_together]
    assert paired["pairs"] == together["pairs"]
    assert paired["current"] == [('["7"]', "u", "paid")]
    assert paired["accounted"]


def test_halves_landed_again_add_no_event(together, apart):
    (event_landed_together,) = together["events"]
    _, _, both_again, after_again = apart
    # The before half again at offset 1 is a pair of its own, the same change: cdc_redeliveries holds it.
    # No after half follows it in its partition: it names the first after half in (partition, offset)
    # order. The after half landed again (twice) pairs with nothing new.
    for state in (both_again, after_again):
        assert state["events"] == [event_landed_together]
        assert state["pairs"] == [(0, 0, SEQ, [(0, 0), (1, 0)]), (0, 1, SEQ, [(0, 1), (1, 0)])]
        assert state["redeliveries"] == [(0, 1)]
        assert state["current"] == [('["7"]', "u", "paid")]
        assert state["accounted"]


def test_unknown_sequence_halves_pair_with_their_neighbour_across_runs(unknown_sequence):
    waiting, paired = unknown_sequence
    assert [event[:4] for event in waiting["events"]] == [(0, 0, "c", "new")]
    assert waiting["accounted"]  # the before half waits
    assert [(op, value, order) for _, _, op, value, _, order in paired["events"]] == [
        ("c", "new", [1700000000000000001, 0, 0]),
        # "-1": placed at the end of its eventTime's millisecond, after the known insert.
        ("u", "paid", [1700000002000999999, 0, 1]),
        ("c", "new", [1700000000000000002, 0, 4]),
    ]
    assert paired["pairs"] == [(0, 1, None, [(0, 1), (0, 2)])]
    # The halves at 3 and 5 are not neighbours: they wait (accounted for) and make no update.
    assert paired["accounted"]
    assert paired["current"] == [('["7"]', "u", "paid"), ('["9"]', "c", "new")]


def test_unknown_sequence_update_is_after_the_known_insert_in_history(project, unknown_sequence):
    versions = project.spark.sql(
        f"""
        select op, row['status'] as status, valid_from, valid_to, is_current
        from {SCHEMA}.cdc_history where pk = '["7"]' and source_name = '{TOPIC}'
        order by event_order, event_id
        """
    ).collect()
    assert [tuple(v) for v in versions] == [
        ("c", "new", datetime(2023, 11, 14, 22, 13, 21), datetime(2023, 11, 14, 22, 13, 22), False),
        ("u", "paid", datetime(2023, 11, 14, 22, 13, 22), None, True),
    ]
