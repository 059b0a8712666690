"""vendor_writers: one writer per source format, and the rules of each vendor's shape that are easy to get
wrong, with the expected messages written by hand from the vendor documents (../shared/formats/)."""

from helpers import PROJECT_DIR

from cdc_lakehouse.formats import SOURCE_FORMATS
from vendor_writers import (
    DELETE,
    INIT,
    UPDATE,
    Change,
    Table,
    aliyun_datahub_tuple,
    aliyun_streamx_json,
    canal_json,
    huawei_drs_json,
    huawei_drs_jsonc,
    huawei_drs_mongo_json,
    tencent_dts_protobuf,
)

ITEMS = Table("shop", "items", {"id": "int(11)", "a": "varchar(20)", "b": "varchar(20)"}, {"id": 4, "a": 12, "b": 12})
BEFORE = {"id": "1", "a": "x", "b": None}
UPDATED = Change(ITEMS, UPDATE, BEFORE, {"id": "1", "a": "y", "b": None}, 1_700_000_000_000)
PARTIAL = Change(ITEMS, UPDATE, BEFORE, {"id": "1", "b": "z"}, 1_700_000_000_000)
DELETED = Change(ITEMS, DELETE, BEFORE, None, 1_700_000_000_000)


def test_every_format_has_one_writer_module():
    modules = {path.stem for path in (PROJECT_DIR / "vendor_writers").glob("*.py")} - {"__init__"}
    assert modules == set(SOURCE_FORMATS)


def test_canal_old_holds_only_the_changed_columns_and_data_whole_rows():
    message = canal_json.flat_message(7, [UPDATED, PARTIAL])
    assert message["data"] == [{"id": "1", "a": "y", "b": None}, {"id": "1", "a": "x", "b": "z"}]
    assert message["old"] == [{"a": "x"}, {"b": None}]
    assert (message["id"], message["type"], message["mysqlType"]["id"]) == (7, "UPDATE", "int(11)")


def test_drs_json_keeps_a_deleted_row_in_old_and_json_c_in_data_with_bare_types():
    assert huawei_drs_json.flat_message(3, [DELETED])["data"] is None
    assert huawei_drs_json.flat_message(3, [DELETED])["old"] == [BEFORE]
    jsonc = huawei_drs_jsonc.flat_message(3, [DELETED])
    assert (jsonc["data"], jsonc["old"], jsonc["mysqlType"]) == (
        [BEFORE],
        None,
        {"id": "int", "a": "varchar", "b": "varchar"},
    )
    assert huawei_drs_json.flat_message(4, [PARTIAL])["data"] == [{"id": "1", "b": "z"}]


def test_streamx_and_datahub_write_an_update_as_two_halves_of_one_sequence():
    halves = aliyun_streamx_json.records(9, UPDATED, {"id": "LONG"})
    assert [(r["payload"]["op"], r["payload"]["sequenceId"]) for r in halves] == [
        ("UPDATE_BEFOR", "9"),
        ("UPDATE_AFTER", "9"),
    ]
    assert halves[0]["payload"]["before"] == {"dataColumn": {"id": 1, "a": "x", "b": None}}
    assert halves[1]["payload"]["after"] == {"dataColumn": {"id": 1, "a": "y", "b": None}}
    one = aliyun_streamx_json.records(9, UPDATED, {"id": "LONG"}, one_record_updates=True)
    assert [r["payload"]["op"] for r in one] == ["UPDATE_AFTER"]
    tuples = aliyun_datahub_tuple.records(9, UPDATED, {"id": "BIGINT"})
    assert [(t["_operation_type_"], t["_before_image_"], t["_after_image_"], t["a"]) for t in tuples] == [
        ("U", "Y", "N", "x"),
        ("U", "N", "Y", "y"),
    ]


def test_a_full_syncs_row_is_init_for_drs_and_canal_and_a_streamx_insert_without_position_or_time():
    # Seed 004: 全量同步为INIT; seed 003 / DataWorks: a full load's records carry sequenceId and eventTime -1.
    row = Change(ITEMS, INIT, None, BEFORE, 1_700_000_000_000)
    drs = huawei_drs_json.flat_message(5, [row])
    assert (drs["type"], drs["data"], drs["old"]) == ("INIT", [BEFORE], None)
    canal = canal_json.flat_message(5, [row])
    assert (canal["type"], canal["data"], canal["old"]) == ("INIT", [BEFORE], None)
    (record,) = aliyun_streamx_json.records(9, row, {"id": "LONG"})
    payload = record["payload"]
    assert (payload["op"], payload["sequenceId"], payload["timestamp"]["eventTime"]) == ("INSERT", "-1", -1)
    assert (payload["before"], payload["after"]) == (None, {"dataColumn": {"id": 1, "a": "x", "b": None}})


def test_dds_partial_update_is_a_set_and_a_delete_names_only_the_key():
    collection = Table("shop", "items", {"_id": "", "a": "", "b": ""}, keys=("_id",))
    before = {"_id": 'ObjectId("64650cf67dc36a464e76e583")', "a": '"x"', "b": "NumberInt(1)"}
    update = Change(collection, UPDATE, before, {"_id": before["_id"], "b": "NumberInt(2)"}, 1_700_000_000_000)
    message = huawei_drs_mongo_json.message(1, update)
    assert (message["recordType"], message["value"]) == ("update", '{"$set": {"b": NumberInt(2)}}')
    assert message["where"] == '{"_id": ObjectId("64650cf67dc36a464e76e583")}'
    deleted = huawei_drs_mongo_json.message(2, Change(collection, DELETE, before, None, 1_700_000_000_000))
    assert (deleted["recordType"], deleted["value"], deleted["where"]) == (
        "doc",
        '{"_id": ObjectId("64650cf67dc36a464e76e583")}',
        None,
    )


def test_dts_partial_image_marks_absent_columns_na_and_split_envelopes_rejoin():
    from python_udfs.proto import tencent_dts_subscribe_pb2 as pb

    writer = tencent_dts_protobuf.DtsWriter("shop", seq_id=10)
    entry = writer.dml([PARTIAL])
    assert (entry.header.seqId, entry.header.tableName, entry.header.timestamp) == (11, "items", 1_700_000_000)
    (row,) = entry.event.dmlEvent.rows
    assert [value.dataType for value in row.newColumns] == [pb.INT32, pb.NA, pb.STRING]
    assert [value.dataType for value in row.oldColumns] == [pb.INT32, pb.STRING, pb.NIL]
    data = tencent_dts_protobuf.entries([entry])
    parts = [pb.Envelope.FromString(part) for part in tencent_dts_protobuf.envelopes(data, 3)]
    assert [(part.index, part.total) for part in parts] == [(0, 3), (1, 3), (2, 3)]
    assert b"".join(part.data for part in parts) == data
