"""The registered UDFs, called from Spark SQL in a real session."""

import json


def test_dts_udfs_parse_envelopes_and_decode_entries_in_spark(spark):
    from helpers import dts_envelope, dts_heartbeat_entries

    entries = dts_heartbeat_entries(1621236170)
    frame = spark.createDataFrame([(dts_envelope(entries),), (b"\xff\xff",), (None,)], "value binary").selectExpr(
        "cdc_dts_envelope(value) as envelope"
    )
    envelopes = [row.envelope for row in frame.collect()]
    assert (envelopes[0].version, envelopes[0].total, envelopes[0]["index"], bytes(envelopes[0].data)) == (
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
    assert (event.message_type, event.seq_id, decoded[0].entries.error) == (
        "HEARTBEAT",
        "1621236170",
        None,
    )
    assert decoded[1].entries.events is None
    assert decoded[1].entries.error == "bytes are not a Tencent DTS Entries message (protobuf decode failed)"


def test_mongo_shell_documents_become_their_fields_in_spark(spark):
    rows = spark.sql(
        """
        select cdc_mongo_shell_fields(document) as converted
        from values ('{"_id": ObjectId("64650cf67dc36a464e76e583")}'), ('{"a": Code("x")}'), (null) as t(document)
        """
    ).collect()
    assert [(r.converted.fields, r.converted.error) for r in rows] == [
        ({"_id": '{"$oid":"64650cf67dc36a464e76e583"}'}, None),
        (None, "not a MongoDB shell document: unknown constructor Code at character 10"),
        (None, None),
    ]


def test_drs_avro_writer_schema_is_read_in_spark(spark, tmp_path):
    from helpers import DRS_AVRO_SCHEMA

    missing = tmp_path / "missing.avsc"
    frame = spark.createDataFrame([(str(DRS_AVRO_SCHEMA),), (str(missing),)], "path string")
    read, unreadable = frame.selectExpr("cdc_drs_avro_writer_schema(path) as schema").collect()
    assert json.loads(read.schema.json)["name"] == "Record"
    assert (read.schema.fields[:3], read.schema.binary_image_fields, read.schema.error) == (
        ["id", "es", "ts"],
        [],
        None,
    )
    assert unreadable.schema.json is None
    assert unreadable.schema.error.startswith(f"writer schema {missing} cannot be read: FileNotFoundError")


def test_the_dts_event_struct_has_the_fields_the_decoder_fills_in_its_order():
    from python_udfs.spark_udfs import DTS_EVENT
    from python_udfs.tencent_dts import EVENT_FIELDS

    assert tuple(DTS_EVENT.fieldNames()) == EVENT_FIELDS
