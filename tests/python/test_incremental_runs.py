"""Staging models run incrementally: what a later run appends, and nothing twice.

Tencent DTS groups split over envelopes and Alibaba Cloud updates sent as two halves can be completed by
messages of a later landing; a message written to the landing table again at its offset by another writer
is not staged again. Each run here lands a few messages and runs the models in process on the test
session, in their own schema; each run reads the landing commits since the previous one.
"""

import pytest
from helpers import VENDOR_EXAMPLES, dbt_in_process, dts_envelope, dts_heartbeat_entries, dts_split

# Many dbt runs on one warehouse: make test-slow, beside make test in CI.
pytestmark = pytest.mark.slow

SCHEMA = "cdc_incremental"
DTS_TOPIC = "tencent_dts_protobuf.incremental"
DTS_GAPS_TOPIC = "tencent_dts_protobuf.incremental_gaps"
STREAMX_TOPIC = "aliyun_streamx_json.incremental"
DRS_TOPIC = "huawei_drs_json.incremental"
MODELS = (
    "stg_huawei_drs__messages",
    "stg_tencent_dts_protobuf__envelopes",
    "stg_tencent_dts_protobuf__groups",
    "stg_tencent_dts_protobuf__entries",
    "stg_aliyun_streamx_json__messages",
    # Pairing reads both Alibaba Cloud formats' staged messages.
    "stg_aliyun_datahub_tuple__messages",
    "int_aliyun__update_pairs",
)


def streamx_update_halves() -> tuple[bytes, bytes]:
    # The vendor's two-message update (seed 003): UPDATE_BEFOR, then UPDATE_AFTER with the same sequenceId.
    lines = (VENDOR_EXAMPLES / "aliyun_streamx_json" / "seed_003_kafka.jsonl").read_bytes().splitlines()
    return lines[2], lines[3]


def dts_groups(spark, topic: str = DTS_TOPIC) -> list[tuple]:
    rows = spark.sql(
        f"""
        select kafka_offset, part_offsets, transform(events, event -> event.seq_id) as seq_ids, quarantine_reason
        from {SCHEMA}.stg_tencent_dts_protobuf__entries
        where topic = '{topic}'
        order by kafka_offset
        """
    ).collect()
    return [
        (r.kafka_offset, r.part_offsets, r.seq_ids and [int(s) for s in r.seq_ids], r.quarantine_reason) for r in rows
    ]


def update_pairs(spark) -> list[tuple]:
    rows = spark.sql(
        f"""
        select sequence_id, message_offsets.kafka_offset as offsets, after_image['sex'] as sex
        from {SCHEMA}.int_aliyun__update_pairs
        where topic = '{STREAMX_TOPIC}'
        order by kafka_partition, kafka_offset
        """
    ).collect()
    return [(str(r.sequence_id), r.offsets, r.sex) for r in rows]


def drs_staged(spark) -> list[tuple]:
    staged = spark.table(f"{SCHEMA}.stg_huawei_drs__messages").where(f"topic = '{DRS_TOPIC}'")
    rows = staged.select("kafka_offset", "quarantine_reason").collect()
    return [(r.kafka_offset, r.quarantine_reason) for r in rows]


@pytest.fixture(scope="module")
def runs(spark, tmp_path_factory) -> list[dict]:
    """Four landings, each followed by an incremental run; what the models hold after each run."""
    from cdc_lakehouse.landing import TopicMessages, land, land_topics
    from cdc_lakehouse.landing_table import LANDING_TABLE, ensure_landing_table

    heartbeat = dts_heartbeat_entries
    group_502 = dts_split(heartbeat(502), 3)
    group_504 = dts_split(heartbeat(504), 3)
    group_801 = dts_split(heartbeat(801), 3)
    group_802 = dts_split(heartbeat(802), 2)
    before, after = streamx_update_halves()
    landings = [
        # DTS offset 0: a whole Entries; 1-2: two parts of a three-part group, which waits.
        # StreamX: the before half of an update, which waits for its after half.
        # DTS with offset gaps {offset: message}: a whole Entries at 2, part 0 of three at 10, which waits.
        {
            "dts": [dts_envelope(heartbeat(501)), *group_502[:2]],
            "streamx": [before],
            "dts_gaps": {2: dts_envelope(heartbeat(800)), 10: group_801[0]},
        },
        # DTS 3 completes the group at 1; 4 starts a group whose part at 5 is not landed yet.
        # DTS with gaps: part 1 at 13, three offsets on; the group still waits.
        {"dts": [group_502[2], group_504[0]], "streamx": [after], "dts_gaps": {13: group_801[1]}},
        # DTS 6 lands before 5. StreamX: the same update replayed at new offsets.
        # DTS with gaps: part 2 at 17 completes the group at 10; part 0 of two at 20 waits.
        {
            "dts": [group_504[2]],
            "dts_offset": 6,
            "streamx": [before, after],
            "dts_gaps": {17: group_801[2], 20: group_802[0]},
        },
        # DTS 5 lands after its group was settled.
        # DTS with gaps: a whole Entries lands late at 15, in a gap of the group settled at 10; 24 completes
        # the group at 20.
        {
            "dts": [group_504[1]],
            "dts_offset": 5,
            "streamx": [],
            "dts_gaps": {15: dts_envelope(heartbeat(803)), 24: group_802[1]},
        },
    ]
    work_dir = tmp_path_factory.mktemp("incremental_dbt")
    states = []
    with pytest.MonkeyPatch.context() as env:
        env.setenv("CDC_SCHEMA", SCHEMA)
        spark.sql(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
        ensure_landing_table(spark)
        dbt_in_process(spark, work_dir, "seed", "--select", "cdc_operation_codes")
        drs_message = (VENDOR_EXAMPLES / "huawei_drs_json" / "seed_004_mysql.jsonl").read_bytes().splitlines()[0]
        land(spark, "huawei_drs_json", DRS_TOPIC, 0, [drs_message])
        for number, landing in enumerate(landings):
            if number == 1:
                # A second writer lands offset 0 of the DRS topic again, bypassing cdc-land's own check.
                spark.sql(
                    f"""
                    insert into {LANDING_TABLE} (source_format, topic, kafka_partition, kafka_offset, kafka_key, value,
                        kafka_timestamp, ingested_at)
                    select source_format, topic, kafka_partition, kafka_offset, kafka_key, value,
                           kafka_timestamp, current_timestamp() as ingested_at
                    from {LANDING_TABLE}
                    where topic = '{DRS_TOPIC}' and kafka_offset = 0
                    """
                )
            land(spark, "tencent_dts_protobuf", DTS_TOPIC, 0, landing["dts"], landing.get("dts_offset"))
            if landing["streamx"]:
                land(spark, "aliyun_streamx_json", STREAMX_TOPIC, 0, landing["streamx"])
            land_topics(
                spark,
                [
                    TopicMessages("tencent_dts_protobuf", DTS_GAPS_TOPIC, 0, offset, [message])
                    for offset, message in landing["dts_gaps"].items()
                ],
            )
            dbt_in_process(spark, work_dir, "run", "--select", *MODELS)
            states.append(
                {
                    "dts_groups": dts_groups(spark),
                    "dts_gap_groups": dts_groups(spark, DTS_GAPS_TOPIC),
                    "update_pairs": update_pairs(spark),
                    "drs_staged": drs_staged(spark),
                }
            )
    return states


def test_a_dts_group_completed_by_a_later_landing_is_decoded_once(runs):
    missing_reason = "Envelope parts repeated, missing or out of order"
    assert [run["dts_groups"] for run in runs] == [
        [(0, [0], [501], None)],
        [(0, [0], [501], None), (1, [1, 2, 3], [502], None)],
        # The message after part 0 at 4 is part 2 (offset 5 may be a gap): quarantined whole.
        [(0, [0], [501], None), (1, [1, 2, 3], [502], None), (4, [4, 6], None, missing_reason)],
        # Offset 5 on its own, nothing decoded twice.
        [
            (0, [0], [501], None),
            (1, [1, 2, 3], [502], None),
            (4, [4, 6], None, missing_reason),
            (5, [5], None, "Envelope part landed after its group was settled"),
        ],
    ]


def test_a_dts_group_across_offset_gaps_and_landings_is_decoded_once(runs):
    whole = (2, [2], [800], None)
    group_801 = (10, [10, 13, 17], [801], None)
    assert [run["dts_gap_groups"] for run in runs] == [
        # Part 0 at 10 waits for its next parts, whatever their offsets.
        [whole],
        [whole],
        [whole, group_801],
        # 15 landed after the group at 10 was settled: on its own, and it does not take part 2 at 17.
        [
            whole,
            group_801,
            (15, [15], None, "Envelope part landed after its group was settled"),
            (20, [20, 24], [802], None),
        ],
    ]


def test_an_update_whose_after_half_lands_later_is_paired_once(runs):
    first_pair = ("1620457642589000001", [0, 1], "woman")
    # The replayed before half is a pair of its own, with the after half that follows it.
    replayed_pair = ("1620457642589000001", [2, 3], "woman")
    assert [run["update_pairs"] for run in runs] == [
        [],
        [first_pair],
        # The first pair is not made again.
        [first_pair, replayed_pair],
        [first_pair, replayed_pair],
    ]


def test_a_message_landed_again_at_its_offset_is_staged_once(runs):
    assert [run["drs_staged"] for run in runs] == [[(0, None)]] * 4
