"""Alibaba Cloud updates sent as two messages, on streams as they arrive: halves in two runs, in two
partitions, landed again, or without a sequenceId ("-1").

An update's event takes its before half's position, so its event_id is the same whether its halves land
together or apart, and a half landed again at another offset adds no second event. dbt runs in this
process on the test session, on the project test_history.py uses (history_project.py), with StreamX alone
enabled: each scenario starts from an emptied landing table and the tables a StreamX message passes
through dropped, and an incremental run reads only the landing commits since the previous one. The
messages have the shape of seed 003 (whole database to Kafka); expected rows are written by hand.
"""

import json
from datetime import datetime

import pytest
from history_project import SCHEMA, project_in_schema

pytestmark = pytest.mark.slow

FORMAT = "aliyun_streamx_json"
TOPIC = f"{FORMAT}.pairing"
SEQ = "1700000000000000005"
RECONCILIATION_TEST = "cdc_every_landed_message_is_accounted_for"


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


def state(project) -> dict:
    """What the tables hold for the topic, and whether the reconciliation test passes."""
    spark = project.spark
    events = spark.sql(
        f"""
        select kafka_partition, kafka_offset, op, event_id, event_order, source_seq, after['status'] as status
        from {SCHEMA}.cdc_events where topic = '{TOPIC}' order by kafka_partition, kafka_offset
        """
    ).collect()
    pairs = spark.sql(
        f"""
        select kafka_partition, kafka_offset, sequence_id, message_offsets
        from {SCHEMA}.int_aliyun__update_pairs where topic = '{TOPIC}'
        order by kafka_partition, kafka_offset
        """
    ).collect()
    redeliveries = spark.sql(
        f"""
        select kafka_partition, kafka_offset from {SCHEMA}.cdc_redeliveries where topic = '{TOPIC}'
        order by kafka_partition, kafka_offset
        """
    ).collect()
    current = spark.sql(
        f"""
        select pk, op, row['status'] as status from {SCHEMA}.cdc_current
        where source_format = '{FORMAT}' and source_name = '{TOPIC}' order by pk
        """
    ).collect()
    reconciliation = project.dbt("test", "--select", RECONCILIATION_TEST, check=False)
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


def run(project) -> dict:
    """An incremental run, then the state it left."""
    project.run()
    return state(project)


@pytest.fixture(scope="module")
def project(spark, tmp_path_factory):
    yield from project_in_schema(spark, tmp_path_factory)


@pytest.fixture(scope="module")
def together(project) -> dict:
    """The before half in partition 0 and the after half in partition 1, landed before one run."""
    project.reset(FORMAT)
    project.land(TOPIC, [BEFORE], 0)
    project.land(TOPIC, [AFTER], 1)
    return run(project)


@pytest.fixture(scope="module")
def apart(project, together) -> list[dict]:
    """The same two halves at the same positions, the after half in one run and the before half in the
    next; then both landed again at new offsets, then the after half once more."""
    project.reset(FORMAT)
    states = []
    project.land(TOPIC, [AFTER], 1)
    states.append(run(project))
    project.land(TOPIC, [BEFORE], 0)
    states.append(run(project))
    project.land(TOPIC, [BEFORE], 0)
    project.land(TOPIC, [AFTER], 1)
    states.append(run(project))
    project.land(TOPIC, [AFTER], 1)
    states.append(run(project))
    return states


@pytest.fixture(scope="module")
def unknown_sequence(project, apart) -> list[dict]:
    """An insert with a known sequenceId, then updates with "-1", their halves landed in two runs."""
    project.reset(FORMAT)
    states = []
    project.land(
        TOPIC,
        [
            streamx("INSERT", "1700000000000000001", 1700000001000, after=status(7, "new")),
            streamx("UPDATE_BEFOR", "-1", 1700000002000, before=status(7, "new")),
        ],
    )
    states.append(run(project))
    project.land(
        TOPIC,
        [
            streamx("UPDATE_AFTER", "-1", 1700000002000, after=status(7, "paid")),
            # Halves of two other updates, both "-1", not next to each other: never paired together.
            streamx("UPDATE_BEFOR", "-1", 1700000003000, before=status(8, "new")),
            streamx("INSERT", "1700000000000000002", 1700000003000, after=status(9, "new")),
            streamx("UPDATE_AFTER", "-1", 1700000003000, after=status(10, "paid")),
        ],
    )
    states.append(run(project))
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
