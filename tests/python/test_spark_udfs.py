"""The registered UDFs, called from Spark SQL in a real session."""


def test_decode_utf8_is_registered_and_decodes_a_clean_batch(spark):
    rows = spark.sql(
        "select cdc_decode_utf8(cast(text as binary)) as decoded from values ('{}'), ('王芳') as t(text)"
    ).collect()
    assert [(r.decoded.text, r.decoded.error) for r in rows] == [("{}", None), ("王芳", None)]


def test_one_bad_value_does_not_fail_the_batch_and_carries_its_reason(spark):
    rows = spark.sql(
        """
        select cdc_decode_utf8(value) as decoded
        from values (X'7B7D'), (X'7BFF7D'), (null), (X'EFBBBF5B5D') as t(value)
        """
    ).collect()
    assert [(r.decoded.text, r.decoded.error) for r in rows] == [
        ("{}", None),
        (None, "value is not valid UTF-8: byte 1 (b'\\xff')"),
        (None, "message value is null"),
        ("[]", None),
    ]


def test_decode_utf8_over_many_arrow_batches(spark):
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "100")
    try:
        result = spark.sql(
            """
            select count(*) as total, count(decoded.text) as decoded, count(decoded.error) as failed
            from (
                select cdc_decode_utf8(if(id = 777, X'C3', cast(cast(id as string) as binary))) as decoded
                from range(2000)
            )
            """
        ).first()
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    assert (result.total, result.decoded, result.failed) == (2000, 1999, 1)


def test_dts_udfs_parse_envelopes_and_decode_entries_in_spark(spark):
    from conftest import dts_envelope, dts_heartbeat_entries

    entries = dts_heartbeat_entries(1621236170)
    frame = spark.createDataFrame([(dts_envelope(entries),), (b"\xff\xff",), (None,)], "value binary").selectExpr(
        "cdc_dts_envelope(value) as envelope"
    )
    envelopes = [row.envelope for row in frame.collect()]
    assert (envelopes[0].version, envelopes[0].total, envelopes[0].index, bytes(envelopes[0].data)) == (
        1,
        1,
        0,
        entries,
    )
    assert envelopes[1].error == "not a Tencent DTS Envelope (protobuf decode failed)"
    assert envelopes[2].error == "message value is null"

    decoded = (
        spark.createDataFrame([(entries,), (entries[:-2],)], "data binary")
        .selectExpr("cdc_dts_decode(data) as entries")
        .collect()
    )
    (event,) = decoded[0].entries.events
    assert (event.message_type, event.heartbeat_epoch, event.seq_id, decoded[0].entries.error) == (
        "HEARTBEAT",
        1621236170,
        "1621236170",
        None,
    )
    assert decoded[1].entries.events is None
    assert decoded[1].entries.error == "bytes are not a Tencent DTS Entries message (protobuf decode failed)"
