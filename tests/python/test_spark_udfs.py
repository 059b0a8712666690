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
