"""Tencent DTS through dbt: envelopes reassembled in Spark, decoded by the UDF, events and quarantine."""

from helpers import read_table


def events_by_topic(spark, warehouse, topic: str) -> list[tuple]:
    events = read_table(spark, warehouse, "cdc_events").where(f"topic = 'tencent_dts_protobuf.{topic}'")
    return [
        (e.kafka_partition, e.kafka_offset, e.row_index, e.op, int(e.source_seq))
        for e in events.orderBy("kafka_partition", "kafka_offset", "row_index").collect()
    ]


def quarantined_by_topic(spark, warehouse, topic: str) -> list[tuple]:
    quarantined = read_table(spark, warehouse, "cdc_quarantine").where(f"topic = 'tencent_dts_protobuf.{topic}'")
    return [(q.kafka_offset, q.reason) for q in quarantined.orderBy("kafka_offset").collect()]


def test_a_group_split_over_three_messages_is_decoded_once(spark, built_warehouse):
    assert events_by_topic(spark, built_warehouse, "split_in_order") == [
        (0, 0, 0, "heartbeat", 101),
        (0, 3, 0, "heartbeat", 102),
    ]
    assert quarantined_by_topic(spark, built_warehouse, "split_in_order") == []


def test_groups_of_different_partitions_do_not_mix(spark, built_warehouse):
    assert events_by_topic(spark, built_warehouse, "split_interleaved") == [
        (0, 0, 0, "heartbeat", 201),
        (1, 0, 0, "heartbeat", 202),
    ]


def test_a_group_with_a_missing_part_is_quarantined_whole(spark, built_warehouse):
    assert events_by_topic(spark, built_warehouse, "split_missing_part") == [(0, 2, 0, "heartbeat", 302)]
    reason = "Envelope group ended before its last part"
    assert quarantined_by_topic(spark, built_warehouse, "split_missing_part") == [(0, reason), (1, reason)]


def test_only_a_quarantined_group_keeps_its_bytes_in_staging(spark, built_warehouse):
    # The bytes of a decoded group stay in landing only; a quarantined group's go on to the quarantine.
    entries = read_table(spark, built_warehouse, "stg_tencent_dts_protobuf__entries").where(
        "topic = 'tencent_dts_protobuf.split_missing_part'"
    )
    parts = {group.kafka_offset: group.parts for group in entries.collect()}
    assert parts[2] is None
    assert [(part.kafka_offset, len(part.value) > 0) for part in parts[0]] == [(0, True), (1, True)]


def test_repeated_and_out_of_order_parts_quarantine_the_group(spark, built_warehouse):
    reason = "Envelope parts repeated, missing or out of order"
    assert events_by_topic(spark, built_warehouse, "split_repeated_part") == []
    assert quarantined_by_topic(spark, built_warehouse, "split_repeated_part") == [(o, reason) for o in range(4)]
    assert events_by_topic(spark, built_warehouse, "split_out_of_order") == []
    assert quarantined_by_topic(spark, built_warehouse, "split_out_of_order") == [(o, reason) for o in range(3)]


def test_an_incomplete_group_at_the_end_of_a_partition_waits(spark, built_warehouse):
    assert events_by_topic(spark, built_warehouse, "split_waiting") == [(0, 0, 0, "heartbeat", 401)]
    assert quarantined_by_topic(spark, built_warehouse, "split_waiting") == []


def groups_by_topic(spark, warehouse, topic: str) -> list[tuple]:
    entries = read_table(spark, warehouse, "stg_tencent_dts_protobuf__entries").where(
        f"topic = 'tencent_dts_protobuf.{topic}'"
    )
    return [(g.kafka_offset, g.part_offsets, g.quarantine_reason) for g in entries.orderBy("kafka_offset").collect()]


def test_parts_separated_by_offset_gaps_are_one_group(spark, built_warehouse):
    # The offsets between were never landed (commit markers, compaction): the next part is the next message.
    assert groups_by_topic(spark, built_warehouse, "gaps_in_order") == [
        (10, [10, 12, 15], None),
        (17, [17], None),
        (20, [20, 21], None),
    ]
    assert events_by_topic(spark, built_warehouse, "gaps_in_order") == [
        (0, 10, 0, "heartbeat", 601),
        (0, 17, 0, "heartbeat", 602),
        (0, 20, 0, "heartbeat", 603),
    ]
    assert quarantined_by_topic(spark, built_warehouse, "gaps_in_order") == []


def test_a_part_missing_after_an_offset_gap_quarantines_its_group(spark, built_warehouse):
    ended = "Envelope group ended before its last part"
    out_of_sequence = "Envelope parts repeated, missing or out of order"
    assert groups_by_topic(spark, built_warehouse, "gaps_broken_groups") == [
        (0, [0, 2], ended),
        (5, [5], None),
        # The part after 8 is its last (index 2) where index 1 was due.
        (8, [8, 11], out_of_sequence),
        (13, [13], None),
        # The part at 25 repeats index 1.
        (20, [20, 22, 25], out_of_sequence),
    ]
    assert events_by_topic(spark, built_warehouse, "gaps_broken_groups") == [
        (0, 5, 0, "heartbeat", 702),
        (0, 13, 0, "heartbeat", 704),
    ]
    assert quarantined_by_topic(spark, built_warehouse, "gaps_broken_groups") == [
        (0, ended),
        (2, ended),
        (8, out_of_sequence),
        (11, out_of_sequence),
        (20, out_of_sequence),
        (22, out_of_sequence),
        (25, out_of_sequence),
    ]


def test_sample_transactions_become_ordered_events(spark, built_warehouse):
    events = read_table(spark, built_warehouse, "cdc_events").where("topic = 'tencent_dts_protobuf.shop'")
    rows = [
        (e.kafka_offset, e.row_index, e.op, e.source_table, e.before, e.after)
        for e in events.orderBy("source_seq", "row_index").collect()
    ]
    assert [(offset, index, op) for offset, index, op, *_ in rows] == [
        (0, 0, "begin"),
        (0, 1, "c"),
        (0, 2, "c"),
        (0, 3, "commit"),
        (1, 0, "begin"),
        (1, 1, "u"),
        (1, 2, "d"),
        (1, 3, "commit"),
        (1, 4, "ddl"),
        (4, 0, "heartbeat"),
        (4, 1, "checkpoint"),
        (6, 0, "heartbeat"),
    ]
    inserted_gbk = rows[2][5]
    assert inserted_gbk == {"order_id": "2", "customer": "李伟", "amount": "577.90", "paid_at": None}
    assert rows[5][4:] == (
        {"order_id": "2", "customer": "李伟", "amount": "577.90", "paid_at": None},
        {"order_id": "2", "customer": "李伟", "amount": "577.90", "paid_at": "2026-03-02 08:01:10 +08:00"},
    )
    assert rows[6][4:] == ({"order_id": "1", "customer": "王芳", "amount": "30.94", "paid_at": None}, None)
    quarantined = quarantined_by_topic(spark, built_warehouse, "shop")
    assert quarantined == [
        (5, "Envelope group ended before its last part"),
        (7, "not a Tencent DTS Envelope (protobuf decode failed)"),
    ]


def test_a_change_without_seq_id_is_quarantined_not_sorted_first(spark, built_warehouse):
    assert events_by_topic(spark, built_warehouse, "no_seq_id") == [(0, 1, 0, "c", 7)]
    assert quarantined_by_topic(spark, built_warehouse, "no_seq_id") == [
        (0, "DML or DDL entry without a sequence number (seqId)")
    ]


def test_a_dml_that_repeats_a_column_name_is_quarantined_and_the_build_goes_on(spark, built_warehouse):
    assert events_by_topic(spark, built_warehouse, "repeated_column") == [(0, 1, 0, "c", 4)]
    assert quarantined_by_topic(spark, built_warehouse, "repeated_column") == [
        (0, "undecodable value: columns repeat a name: id")
    ]
