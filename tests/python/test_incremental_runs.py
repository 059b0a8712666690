"""Staging models run incrementally: what a later run appends, and nothing twice.

Tencent DTS groups split over envelopes and Alibaba Cloud updates sent as two halves can be completed by
messages of a later landing; a message written to the landing table again at its offset by another writer
is not staged again. Each run here lands a few messages and runs the models in process on the test
session, in their own schema, with no lookback window.
"""

import pytest
from conftest import VENDOR_EXAMPLES, dbt_in_process, dts_envelope, dts_heartbeat_entries, dts_split

SCHEMA = "cdc_incremental"
DTS_TOPIC = "tencent_dts_protobuf.incremental"
STREAMX_TOPIC = "aliyun_streamx_json.incremental"
DRS_TOPIC = "huawei_drs_json.incremental"
MODELS = (
    "stg_huawei_drs_json__messages",
    "stg_tencent_dts_protobuf__envelopes",
    "stg_tencent_dts_protobuf__entries",
    "stg_aliyun_streamx_json__messages",
    "int_aliyun_streamx_json__update_pairs",
)


def streamx_update_halves() -> tuple[bytes, bytes]:
    # The vendor's two-message update (seed 003): UPDATE_BEFOR, then UPDATE_AFTER with the same sequenceId.
    lines = (VENDOR_EXAMPLES / "aliyun_streamx_json" / "seed_003_kafka.jsonl").read_bytes().splitlines()
    return lines[2], lines[3]


def dts_groups(spark) -> list[tuple]:
    rows = spark.sql(
        f"""
        select kafka_offset, part_offsets, transform(events, event -> event.seq_id) as seq_ids, quarantine_reason
        from {SCHEMA}.stg_tencent_dts_protobuf__entries
        where topic = '{DTS_TOPIC}'
        order by kafka_offset
        """
    ).collect()
    return [
        (r.kafka_offset, r.part_offsets, r.seq_ids and [int(s) for s in r.seq_ids], r.quarantine_reason) for r in rows
    ]


def update_pairs(spark) -> list[tuple]:
    rows = spark.sql(
        f"""
        select sequence_id, pair_number, message_offsets.kafka_offset as offsets, after_image['sex'] as sex
        from {SCHEMA}.int_aliyun_streamx_json__update_pairs
        where topic = '{STREAMX_TOPIC}'
        order by sequence_id, pair_number
        """
    ).collect()
    return [(str(r.sequence_id), r.pair_number, r.offsets, r.sex) for r in rows]


def drs_staged(spark) -> list[tuple]:
    staged = spark.table(f"{SCHEMA}.stg_huawei_drs_json__messages").where(f"topic = '{DRS_TOPIC}'")
    rows = staged.select("kafka_offset", "quarantine_reason").collect()
    return [(r.kafka_offset, r.quarantine_reason) for r in rows]


@pytest.fixture(scope="module")
def runs(spark, tmp_path_factory) -> list[dict]:
    """Four landings, each followed by an incremental run; what the models hold after each run."""
    from python_udfs.landing import land
    from python_udfs.landing_table import LANDING_TABLE, ensure_landing_table

    heartbeat = dts_heartbeat_entries
    group_502 = dts_split(heartbeat(502), 3)
    group_504 = dts_split(heartbeat(504), 3)
    before, after = streamx_update_halves()
    landings = [
        # DTS offset 0: a whole Entries; 1-2: two parts of a three-part group, which waits.
        # StreamX: the before half of an update, which waits for its after half.
        {"dts": [dts_envelope(heartbeat(501)), *group_502[:2]], "streamx": [before]},
        # DTS 3 completes the group at 1; 4 starts a group whose part at 5 is not landed yet.
        {"dts": [group_502[2], group_504[0]], "streamx": [after]},
        # DTS 6 lands before 5. StreamX: the same update replayed at new offsets.
        {"dts": [group_504[2]], "dts_offset": 6, "streamx": [before, after]},
        # DTS 5 lands after its group was settled.
        {"dts": [group_504[1]], "dts_offset": 5, "streamx": []},
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
                    insert into {LANDING_TABLE}
                    select source_format, topic, kafka_partition, kafka_offset, kafka_key, value,
                           kafka_timestamp, current_timestamp() as ingested_at
                    from {LANDING_TABLE}
                    where topic = '{DRS_TOPIC}' and kafka_offset = 0
                    """
                )
            land(spark, "tencent_dts_protobuf", DTS_TOPIC, 0, landing["dts"], landing.get("dts_offset"))
            if landing["streamx"]:
                land(spark, "aliyun_streamx_json", STREAMX_TOPIC, 0, landing["streamx"])
            dbt_in_process(spark, work_dir, "run", "--select", *MODELS, dbt_vars={"landing_lookback_minutes": 0})
            states.append(
                {"dts_groups": dts_groups(spark), "update_pairs": update_pairs(spark), "drs_staged": drs_staged(spark)}
            )
    return states


def test_a_dts_group_completed_by_a_later_landing_is_decoded_once(runs):
    late_reason = "Envelope group ended before its last part"
    assert [run["dts_groups"] for run in runs] == [
        [(0, [0], [501], None)],
        [(0, [0], [501], None), (1, [1, 2, 3], [502], None)],
        # The group at 4 has passed its end without its middle part: quarantined whole.
        [(0, [0], [501], None), (1, [1, 2, 3], [502], None), (4, [4, 6], None, late_reason)],
        # Offset 5 on its own, nothing decoded twice.
        [
            (0, [0], [501], None),
            (1, [1, 2, 3], [502], None),
            (4, [4, 6], None, late_reason),
            (5, [5], None, "Envelope part landed after its group was settled"),
        ],
    ]


def test_an_update_whose_after_half_lands_later_is_paired_once(runs):
    first_pair = ("1620457642589000001", 1, [0, 1], "woman")
    assert [run["update_pairs"] for run in runs] == [
        [],
        [first_pair],
        # The replayed update is a second pair; the first is not made again.
        [first_pair, ("1620457642589000001", 2, [2, 3], "woman")],
        [first_pair, ("1620457642589000001", 2, [2, 3], "woman")],
    ]


def test_a_message_landed_again_at_its_offset_is_staged_once(runs):
    assert [run["drs_staged"] for run in runs] == [[(0, None)]] * 4
