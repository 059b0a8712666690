"""Tencent DTS Protobuf decoding (pure Python): values per data type and charset, NULL vs absent, every
message type, unknown fields and enum numbers, bad bytes. Entries are built with the protobuf runtime
from the schema the vendor publishes (seed 001, ../shared/formats/tencent_dts_subscribe.proto)."""

import base64

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from python_udfs.proto import tencent_dts_subscribe_pb2 as pb
from python_udfs.tencent_dts import decode_entries, decode_entries_or_error, parse_envelope

T = pb.DataType


def data(data_type=None, sv=None, bv=None, charset=None) -> pb.Data:
    value = pb.Data()
    if data_type is not None:
        value.dataType = data_type
    if sv is not None:
        value.sv = sv
    if bv is not None:
        value.bv = bv
    if charset is not None:
        value.charset = charset
    return value


def dml_entry(dml_type, columns, rows, **header) -> pb.Entry:
    entry = pb.Entry()
    entry.header.messageType = pb.DML
    entry.header.sourceType = pb.MYSQL
    for key, value in header.items():
        setattr(entry.header, key, value)
    entry.event.dmlEvent.dmlEventType = dml_type
    for name, original_type, is_key in columns:
        entry.event.dmlEvent.columns.add(name=name, originalType=original_type, isKey=is_key)
    for old, new in rows:
        row = entry.event.dmlEvent.rows.add()
        row.oldColumns.extend(old)
        row.newColumns.extend(new)
    return entry


def entries(*items: pb.Entry) -> bytes:
    message = pb.Entries()
    message.items.extend(items)
    return message.SerializeToString()


COLUMNS = [("id", "bigint(20) unsigned", True), ("name", "varchar(20)", False), ("note", "blob", False)]


def test_insert_values_per_data_type():
    columns = [
        ("id", "bigint(20) unsigned", True),
        ("small", "tinyint(4)", False),
        ("price", "decimal(20,4)", False),
        ("ratio", "double", False),
        ("name", "varchar(20)", False),
        ("payload", "blob", False),
        ("created", "timestamp", False),
    ]
    new = [
        data(T.UINT64, sv="18446744073709551615"),
        data(T.INT8, sv="-128"),
        data(T.DECIMAL, sv="9874510357.0100"),
        data(T.FLOAT64, sv="1.2510357E7"),
        data(T.STRING, bv="华为云huaweicloud".encode(), charset="utf8mb4"),
        data(T.BYTES, bv=b"\x00\xffjg"),
        # The vendor's example: TIMESTAMP values carry their zone offset.
        data(T.STRING, bv=b"2021-05-17 07:22:42 +00:00", charset="utf8"),
    ]
    (event,) = decode_entries(
        entries(
            dml_entry(
                pb.INSERT,
                columns,
                [([], new)],
                timestamp=1621236162,
                serverId=3306,
                fileName="mysql-bin.000012",
                position=18446744073709551000,
                gtid="2bf665dc-f8e2-11eb-bcfd-6c4b90b9d8b3:251167",
                schemaName="shop",
                tableName="orders",
                seqId=18446744073709551615,
            )
        )
    )
    assert event == {
        "message_type": "DML",
        "source_type": "MYSQL",
        "timestamp": 1621236162,
        "file_name": "mysql-bin.000012",
        "position": "18446744073709551000",
        "gtid": "2bf665dc-f8e2-11eb-bcfd-6c4b90b9d8b3:251167",
        "schema_name": "shop",
        "table_name": "orders",
        "seq_id": "18446744073709551615",
        "dml_type": "INSERT",
        "column_names": ["id", "small", "price", "ratio", "name", "payload", "created"],
        "column_types": [
            "bigint(20) unsigned",
            "tinyint(4)",
            "decimal(20,4)",
            "double",
            "varchar(20)",
            "blob",
            "timestamp",
        ],
        "key_columns": ["id"],
        "before": None,
        "after": {
            "id": "18446744073709551615",
            "small": "-128",
            "price": "9874510357.0100",
            "ratio": "1.2510357E7",
            "name": "华为云huaweicloud",
            "payload": base64.b64encode(b"\x00\xffjg").decode(),
            "created": "2021-05-17 07:22:42 +00:00",
        },
        "ddl_sql": None,
    }


@pytest.mark.parametrize(
    ("charset", "raw", "text"),
    [
        ("utf8", "订单".encode(), "订单"),
        ("utf8mb4", "😀".encode(), "😀"),
        ("gbk", "华为云".encode("gbk"), "华为云"),
        ("GBK", "华为云".encode("gbk"), "华为云"),
        ("gb18030", "𠀀".encode("gb18030"), "𠀀"),
        ("big5", "資料".encode("big5"), "資料"),
        ("latin1", b"caf\xe9 \x80", "café €"),
        ("latin1", b"\x81", "\x81"),
        ("ucs2", "ab".encode("utf-16-be"), "ab"),
        ("sjis", "データ".encode("shift_jis"), "データ"),
        ("cp1251", "данные".encode("cp1251"), "данные"),
    ],
)
def test_strings_are_transcoded_from_their_charset(charset, raw, text):
    (event,) = decode_entries(
        entries(dml_entry(pb.INSERT, COLUMNS[1:2], [([], [data(T.STRING, bv=raw, charset=charset)])]))
    )
    assert event["after"] == {"name": text}


def test_null_and_absent_are_different():
    new = [data(T.INT64, sv="7"), data(T.NIL), data()]  # explicit NIL, then no dataType at all
    old = [data(T.INT64, sv="7"), data(T.NA)]  # NA, and a short image: note is not in it
    (event,) = decode_entries(entries(dml_entry(pb.UPDATE, COLUMNS, [(old, new)])))
    assert event["after"] == {"id": "7", "name": None, "note": None}
    assert event["before"] == {"id": "7"}


def test_update_and_delete_images_and_many_rows_per_event():
    rows = [
        (
            [data(T.UINT64, sv="1"), data(T.STRING, bv=b"a", charset="utf8")],
            [data(T.UINT64, sv="1"), data(T.STRING, bv=b"b", charset="utf8")],
        ),
        (
            [data(T.UINT64, sv="2"), data(T.STRING, bv=b"c", charset="utf8")],
            [data(T.UINT64, sv="20"), data(T.STRING, bv=b"c", charset="utf8")],
        ),
    ]
    delete = dml_entry(pb.DELETE, COLUMNS[:2], [([data(T.UINT64, sv="3"), data(T.NIL)], [])])
    events = decode_entries(entries(dml_entry(pb.UPDATE, COLUMNS[:2], rows), delete))
    # One event per row, in entry then row order.
    assert [(e["dml_type"], e["before"], e["after"]) for e in events] == [
        ("UPDATE", {"id": "1", "name": "a"}, {"id": "1", "name": "b"}),
        ("UPDATE", {"id": "2", "name": "c"}, {"id": "20", "name": "c"}),
        ("DELETE", {"id": "3", "name": None}, None),
    ]


def test_every_control_message_type_is_one_event():
    begin, commit, ddl, rollback, heartbeat, checkpoint = (pb.Entry() for _ in range(6))
    begin.header.messageType = pb.BEGIN
    begin.event.beginEvent.transactionId = "tx-9"
    begin.event.beginEvent.threadId = 42
    commit.header.messageType = pb.COMMIT
    commit.event.commitEvent.transactionId = "tx-9"
    ddl.header.messageType = pb.DDL
    ddl.header.schemaName = "shop"
    ddl.event.ddlEvent.schemaName = "shop"
    ddl.event.ddlEvent.sql = "ALTER TABLE orders ADD COLUMN coupon varchar(32)"
    ddl.event.ddlEvent.executionTime = 3
    rollback.header.messageType = pb.ROLLBACK
    rollback.event.rollbackEvent.SetInParent()
    heartbeat.header.messageType = pb.HEARTBEAT
    heartbeat.event.heartbeatEvent.epoch = 1621236170
    checkpoint.header.messageType = pb.CHECKPOINT
    checkpoint.event.checkpointEvent.syncedGtid = "uuid:1-100"
    checkpoint.event.checkpointEvent.fakeGtid = True
    checkpoint.event.checkpointEvent.fileName = "mysql-bin.000012"
    checkpoint.event.checkpointEvent.position = 4096
    events = decode_entries(entries(begin, commit, ddl, rollback, heartbeat, checkpoint))
    assert [e["message_type"] for e in events] == ["BEGIN", "COMMIT", "DDL", "ROLLBACK", "HEARTBEAT", "CHECKPOINT"]
    # Only DDL carries a field of its own that the models read; the others are events of their type.
    ddl_sql = "ALTER TABLE orders ADD COLUMN coupon varchar(32)"
    assert [e.get("ddl_sql") for e in events] == [None, None, ddl_sql, None, None, None]
    # proto3 defaults: BEGIN is message type 0 and ORACLE source type 0, absent on the wire.
    assert events[0]["source_type"] == "ORACLE"


def test_unknown_fields_and_enum_numbers_are_tolerated():
    entry = dml_entry(pb.INSERT, COLUMNS[:1], [([], [data(99, sv="5")])])
    entry.header.properties.add(key="k", value="v")
    serialized = entries(entry)
    # A field number the schema does not have (200, varint 1) appended to Entries.
    with_unknown_field = serialized + bytes([0xC0, 0x0C, 0x01])
    (event,) = decode_entries(with_unknown_field)
    assert event["after"] == {"id": "5"}
    other = pb.Entry()
    other.header.messageType = 42
    (unknown,) = decode_entries(entries(other))
    assert unknown["message_type"] == "UNKNOWN(42)"


def test_bad_bytes_are_reported_not_raised():
    serialized = entries(dml_entry(pb.INSERT, COLUMNS[:2], [([], [data(T.UINT64, sv="1"), data(T.STRING, bv=b"x")])]))
    assert decode_entries_or_error(serialized[:-3]) == (
        None,
        "bytes are not a Tencent DTS Entries message (protobuf decode failed)",
    )
    assert decode_entries_or_error(None) == (None, "no Entries bytes")
    bad_gbk = entries(dml_entry(pb.INSERT, COLUMNS[1:2], [([], [data(T.STRING, bv=b"\xff\xff", charset="gbk")])]))
    assert decode_entries_or_error(bad_gbk) == (None, "undecodable value: bytes at 0 are not valid gbk")
    unknown_charset = entries(dml_entry(pb.INSERT, COLUMNS[1:2], [([], [data(T.STRING, bv=b"x", charset="klingon")])]))
    assert decode_entries_or_error(unknown_charset) == (None, "undecodable value: unknown encoding: klingon")
    repeated_name = entries(dml_entry(pb.INSERT, [*COLUMNS[:2], COLUMNS[1]], [([], [data(T.STRING, bv=b"x")] * 3)]))
    assert decode_entries_or_error(repeated_name) == (None, "undecodable value: columns repeat a name: name")


@given(st.binary(max_size=300))
@settings(max_examples=300, deadline=None)
def test_random_bytes_never_raise(blob):
    events, error = decode_entries_or_error(blob)
    assert (events is None) != (error is None)


def test_envelope_fields():
    envelope = pb.Envelope(version=1, total=3, index=2, data=b"\x0a\x00")
    assert parse_envelope(envelope.SerializeToString()) == (1, 3, 2, b"\x0a\x00")


# Round trip: random Entries built with the protobuf runtime decode to exactly the values put in.
VALUE = st.one_of(
    st.tuples(st.just("int"), st.integers(min_value=0, max_value=2**64 - 1)),
    st.tuples(st.just("text"), st.text(max_size=12), st.sampled_from(["utf8", "utf8mb4", "gb18030", "utf16"])),
    st.tuples(st.just("bytes"), st.binary(max_size=12)),
    st.tuples(st.just("null")),
    st.tuples(st.just("absent")),
)


def to_data(value) -> pb.Data:
    kind = value[0]
    if kind == "int":
        return data(T.UINT64, sv=str(value[1]))
    if kind == "text":
        return data(
            T.STRING,
            bv=value[1].encode({"utf8": "utf-8", "utf8mb4": "utf-8", "utf16": "utf-16-be"}.get(value[2], value[2])),
            charset=value[2],
        )
    if kind == "bytes":
        return data(T.BYTES, bv=value[1])
    return data(T.NIL) if kind == "null" else data(T.NA)


def expected_text(value):
    kind = value[0]
    return {
        "int": lambda: str(value[1]),
        "text": lambda: value[1],
        "bytes": lambda: base64.b64encode(value[1]).decode(),
        "null": lambda: None,
    }[kind]()


@given(
    st.lists(
        st.tuples(
            st.sampled_from([pb.INSERT, pb.UPDATE, pb.DELETE]),
            st.lists(st.lists(VALUE, min_size=3, max_size=3), min_size=1, max_size=3),
        ),
        min_size=1,
        max_size=4,
    ),
    st.integers(min_value=0, max_value=2**64 - 1),
)
@settings(max_examples=150, deadline=None)
def test_round_trip_of_random_entries(dml_events, seq_id):
    items = []
    for dml_type, rows in dml_events:
        images = [([to_data(v) for v in row], [to_data(v) for v in row]) for row in rows]
        items.append(dml_entry(dml_type, COLUMNS, images, seqId=seq_id))
    events = decode_entries(entries(*items))
    expected = []
    for _, rows in dml_events:
        for row in rows:
            image = {name: expected_text(v) for (name, _, _), v in zip(COLUMNS, row, strict=True) if v[0] != "absent"}
            expected.append((image, image, str(seq_id)))
    assert [(e["before"], e["after"], e["seq_id"]) for e in events] == expected


def test_a_bad_entries_appends_nothing_to_the_columns_of_the_good_ones():
    from python_udfs.tencent_dts import EventColumns

    good = entries(dml_entry(pb.INSERT, COLUMNS[:1], [([], [data(T.UINT64, sv="1")])], seqId=1))
    repeated_name = entries(
        dml_entry(pb.INSERT, COLUMNS[:1], [([], [data(T.UINT64, sv="2")])], seqId=2),
        dml_entry(pb.INSERT, [COLUMNS[0], COLUMNS[0]], [([], [data(T.UINT64, sv="3")] * 2)], seqId=3),
    )
    columns = EventColumns()
    assert columns.add_entries_or_error(good) is None
    assert columns.add_entries_or_error(repeated_name) == "undecodable value: columns repeat a name: id"
    assert columns.add_entries_or_error(good) is None
    assert [(event["seq_id"], event["after"]) for event in columns.rows()] == [("1", {"id": "1"}), ("1", {"id": "1"})]
