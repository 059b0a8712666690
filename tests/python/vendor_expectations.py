"""Expected rows of vendor examples and streams that more than one suite lands: Huawei DRS JSON's own examples
(seed 004; also read as JSON-C and as Canal's FlatMessage), and Canal FlatMessage topics (the cluster suite lands
them again). Written by hand from the vendor's texts; the suites that first check them say how.
"""

import base64
from datetime import datetime, timedelta

from helpers import read_table

# Huawei DRS JSON (test_huawei_drs_json; as JSON-C in test_huawei_drs_jsonc): the vendor's MySQL-form UPDATE, its
# full-sync INIT row and its INIT_DDL message.
DRS_VENDOR_TOPIC = "huawei_drs_json.seed_004_mysql"
# Binary columns of the vendor example, as the bytes their Java byte lists spell.
C12_BYTES = b"jgojgoidsjgojosog934094309tjhrgjew9tu09340teroejg98304ieurg9ewurg0weut9r04u095tu3092ut093ut0w9e"
C14_BYTES = (
    b'jgojgoidsjgojosog934094309tjhrgjew9tu09340teroejg98304i79846546661465!@#$%^*()_)+_+|}"?>::'
    b"eurg9ewurg0weut9r04u095tu3092ut093ut0w9e"
)
LONG_TEXT = "asfiajhfiaf939-0239uoituqorjoqirfoidjfqrniowejoiwqjroqwjrowqjojoiqgoiegnkjgoi23roiugouofdug9u90weurtg103"
AFTER_IMAGE = {
    "c11": "",
    "c10": "华为云huaweicloud",
    "c13": LONG_TEXT,
    "c12": base64.b64encode(C12_BYTES).decode(),
    "c14": base64.b64encode(C14_BYTES).decode(),
    "c1": "cf3f70a7-7565-44b0-ae3c-83bec549ea8e:104",
    "c2": "",
    "c3": "103",
    "c4": "2021-06-25 17:51:53",
    "c5": "1624614713.201",
    "c6": "!@#$%90weurtg103",
    "c7": "10357.0",
    "c8": "1.2510357E7",
    "c9": "9874510357",
    "id": "104",
}
BEFORE_IMAGE = {**AFTER_IMAGE, "c13": "asfiajhfiaf939-0239", "id": "103"}
MYSQL_TYPES = {
    "c11": "binary",
    "c10": "varchar",
    "c13": "text",
    "c12": "varbinary",
    "c14": "blob",
    "c1": "varchar",
    "c2": "varbinary",
    "c3": "int",
    "c4": "datetime",
    "c5": "timestamp",
    "c6": "char",
    "c7": "float",
    "c8": "double",
    "c9": "decimal",
    "id": "int",
}
DRS_VENDOR_COMMON = {
    "source_format": "huawei_drs_json",
    "topic": DRS_VENDOR_TOPIC,
    "kafka_partition": 0,
    "row_index": 0,
    "source_db_type": "mysql",
    "source_database": "test01",
    "source_schema": None,
}
EXPECTED_VENDOR_EVENTS = [
    {
        **DRS_VENDOR_COMMON,
        "kafka_offset": 0,
        "source_table": "test ",  # verbatim: the vendor example's table name ends with a space
        "op": "u",
        "before": BEFORE_IMAGE,
        "after": AFTER_IMAGE,
        "column_types": MYSQL_TYPES,
        "primary_key": ["id"],
        "event_ts": datetime(2021, 6, 25, 9, 51, 53),
        "source_seq": 27677,
        "source_position": "27677",
        "ddl_sql": None,
    },
    {
        **DRS_VENDOR_COMMON,
        "kafka_offset": 1,
        "source_table": "test",
        "op": "r",
        "before": None,
        "after": AFTER_IMAGE,
        "column_types": MYSQL_TYPES,
        "primary_key": ["id"],
        "event_ts": datetime(2021, 6, 25, 9, 51, 53),
        "source_seq": 27677,
        "source_position": "mysql-bin.000065:800;2bf665dc-f8e2-11eb-bcfd-6c4b90b9d8b3:1-251167",
        "ddl_sql": None,
    },
    {
        **DRS_VENDOR_COMMON,
        "kafka_offset": 2,
        "source_table": "test",
        "op": "ddl",
        "before": None,
        "after": None,
        "column_types": None,
        "primary_key": [],
        "event_ts": datetime(2024, 12, 12, 10, 6, 46, 282000),
        "source_seq": 0,
        "source_position": "0",
        "ddl_sql": (
            "CREATE TABLE `test` ( `id` int(11) NOT NULL AUTO_INCREMENT, `c1` varchar(255) DEFAULT NULL, "
            "`c2` blob, `c3` longblob, `c4` bit(2) DEFAULT NULL, `c5` binary(255) DEFAULT NULL, `c6` "
            "varchar(255) DEFAULT NULL, PRIMARY KEY (`id`)) ENGINE InnoDB AUTO_INCREMENT DEFAULT CHARSET utf8"
        ),
    },
]

# Canal FlatMessage (test_canal_json; the cluster suite lands the same topics): the DRS JSON-C seed examples,
# our own file of FlatMessage operations, bad messages, and a stream with shared batch ids and a restart.
SEED_TOPIC = "canal_json.seed_004_drs_json_c"
OWN_TOPIC = "canal_json.own_flatmessage_ops"
BAD_TOPIC = "canal_json.bad_messages"


def java_byte_list(data: bytes) -> str:
    """The text DRS writes for binary values."""
    return "[" + ", ".join(str(byte) for byte in data) + "]"


def canal_binary(text: str) -> str:
    """A binary column's value in cdc_events: Canal writes one ISO-8859-1 character per byte, these are base64.
    (A DRS byte list landed as canal_json is read by Canal's rule: the bytes of its text.)"""
    return base64.b64encode(text.encode("iso-8859-1")).decode()


SEED_AFTER = {
    "c11": canal_binary("[]"),
    "c10": "华为云huaweicloud",
    "c13": LONG_TEXT,
    "c12": canal_binary(java_byte_list(C12_BYTES)),
    "c14": canal_binary(java_byte_list(C14_BYTES)),
    "c1": "cf3f70a7-7565-44b0-ae3c-83bec549ea8e:104",
    "c2": canal_binary("[]"),
    "c3": "103",
    "c4": "2021-06-25 17:51:53",
    "c5": "1624614713.201",
    "c6": "!@#$%90weurtg103",
    "c7": "10357.0",
    "c8": "1.2510357E7",
    "c9": "9874510357",
    "id": "104",
}
SEED_BEFORE = {**SEED_AFTER, "c13": "asfiajhfiaf939-0239", "id": "103"}
SEED_COMMON = {
    "source_format": "canal_json",
    "topic": SEED_TOPIC,
    "kafka_partition": 0,
    "row_index": 0,
    "source_db_type": "mysql",
    "source_database": "test01",
    "source_schema": None,
}
EXPECTED_SEED_EVENTS = [
    {
        **SEED_COMMON,
        "kafka_offset": 0,
        "source_table": "test ",
        "op": "u",
        "before": SEED_BEFORE,
        "after": SEED_AFTER,
        "column_types": MYSQL_TYPES,
        "primary_key": ["id"],
        "event_ts": datetime(2021, 6, 25, 9, 51, 53),
        "source_seq": 27677,
        "source_position": "27677",
        "ddl_sql": None,
    },
    {
        **SEED_COMMON,
        "kafka_offset": 1,
        "source_table": "test",
        "op": "r",
        "before": None,
        "after": SEED_AFTER,
        "column_types": MYSQL_TYPES,
        "primary_key": ["id"],
        "event_ts": datetime(2021, 6, 25, 9, 51, 53),
        "source_seq": 27677,
        "source_position": "27677",
        "ddl_sql": None,
    },
    {
        **SEED_COMMON,
        "kafka_offset": 2,
        "source_table": "test",
        "op": "ddl",
        "before": None,
        "after": None,
        "column_types": None,
        "primary_key": [],
        "event_ts": datetime(2024, 12, 12, 10, 6, 46, 282000),
        "source_seq": 0,
        "source_position": "0",
        "ddl_sql": (
            "CREATE TABLE `test` ( `id` int(11) NOT NULL AUTO_INCREMENT, `c1` varchar(255) DEFAULT NULL, "
            "`c2` blob, `c3` longblob, `c4` bit(2) DEFAULT NULL, `c5` binary(255) DEFAULT NULL, `c6` "
            "varchar(255) DEFAULT NULL, PRIMARY KEY (`id`)) ENGINE InnoDB AUTO_INCREMENT DEFAULT CHARSET utf8"
        ),
    },
]
ORDER_TYPES = {"id": "int(11)", "status": "varchar(16)", "note": "varchar(64)"}
OWN_COMMON = {
    "source_format": "canal_json",
    "topic": OWN_TOPIC,
    "kafka_partition": 0,
    "source_db_type": "mysql",
    "source_database": "shop",
    "source_schema": None,
    "source_table": "orders",
    "column_types": ORDER_TYPES,
    "primary_key": ["id"],
    "ddl_sql": None,
}
CONTROL = {"before": None, "after": None, "column_types": None, "primary_key": [], "row_index": 0}
EXPECTED_OWN_EVENTS = [
    {
        **OWN_COMMON,
        "kafka_offset": 0,
        "row_index": 0,
        "op": "c",
        "before": None,
        "after": {"id": "1", "status": "created", "note": None},
        "event_ts": datetime(2026, 1, 1, 0, 0, 0),
        "source_seq": 101,
        "source_position": "101",
    },
    {
        **OWN_COMMON,
        "kafka_offset": 0,
        "row_index": 1,
        "op": "c",
        "before": None,
        "after": {"id": "2", "status": "created", "note": "gift"},
        "event_ts": datetime(2026, 1, 1, 0, 0, 0),
        "source_seq": 101,
        "source_position": "101",
    },
    {
        **OWN_COMMON,
        "kafka_offset": 1,
        "row_index": 0,
        "op": "u",
        # old = {"status": "created", "note": null}: note WAS NULL (not "unchanged"); id is not in old.
        "before": {"id": "1", "status": "created", "note": None},
        "after": {"id": "1", "status": "paid", "note": "rush"},
        "event_ts": datetime(2026, 1, 1, 0, 1, 0),
        "source_seq": 102,
        "source_position": "102",
    },
    {
        **OWN_COMMON,
        "kafka_offset": 1,
        "row_index": 1,
        "op": "u",
        "before": {"id": "2", "status": "created", "note": "gift"},
        "after": {"id": "2", "status": "paid", "note": None},
        "event_ts": datetime(2026, 1, 1, 0, 1, 0),
        "source_seq": 102,
        "source_position": "102",
    },
    {
        **OWN_COMMON,
        "kafka_offset": 2,
        "row_index": 0,
        "op": "d",
        "before": {"id": "2", "status": "paid", "note": None},
        "after": None,
        "event_ts": datetime(2026, 1, 1, 0, 2, 0),
        "source_seq": 103,
        "source_position": "103",
    },
    {
        **OWN_COMMON,
        **CONTROL,
        "kafka_offset": 3,
        "source_table": "audit",
        "op": "ddl",
        "event_ts": datetime(2026, 1, 1, 0, 3, 0),
        "source_seq": 104,
        "source_position": "104",
        "ddl_sql": "CREATE TABLE `audit` (`id` int(11) NOT NULL, PRIMARY KEY (`id`))",
    },
    {
        **OWN_COMMON,
        **CONTROL,
        "kafka_offset": 4,
        "op": "t",
        "event_ts": datetime(2026, 1, 1, 0, 4, 0),
        "source_seq": 105,
        "source_position": "105",
        "ddl_sql": "TRUNCATE TABLE `orders`",
    },
]
NOT_CANAL = "not a Canal FlatMessage (malformed JSON or wrong field types)"
EXPECTED_QUARANTINE = [
    (0, NOT_CANAL),  # truncated JSON
    (1, "unknown operation type: MERGE"),
    (2, NOT_CANAL),  # data is a string, not an array of rows
    (3, "update with 2 after images in data and 1 change sets in old"),
    (4, "DELETE without rows in data or old"),
    (5, "no operation type (type)"),
    (6, "INSERT flagged isDdl"),
    (7, NOT_CANAL),  # the JSON text `null`
    (8, "a binary column holds characters beyond ISO-8859-1 (not one byte per character)"),
]
# A Canal stream as Canal writes it (stream_shop_*.jsonl, written by hand from Canal's FlatMessage rules):
# batch 50 holds five messages (two inserts, an update, two different ALTERs), Canal restarts and numbers
# batches from 1 again, the update of batch 50 is delivered again at offset 7, a TRUNCATE follows a delete.
# Server B has the same database and table names; the seed cdc_sources names the topics of server A shop_a.
STREAM_A = "canal_json.stream_shop_a"
STREAM_B = "canal_json.stream_shop_b"
T = datetime(2023, 11, 14, 22, 13, 20)  # es 1700000000000


def at(seconds: int) -> datetime:
    return T + timedelta(seconds=seconds)


def stream_history(spark, warehouse) -> list[tuple]:
    history = (
        read_table(spark, warehouse, "cdc_history")
        .where(f"source_name in ('shop_a', '{STREAM_B}')")
        .orderBy("source_name", "source_table", "pk", "event_order", "event_id")
    )
    columns = ("source_name", "source_time_zone", "source_table", "pk", "row", "valid_from", "valid_to")
    flags = ("is_current", "is_deleted", "op")
    return [tuple(row[name] for name in (*columns, *flags)) for row in history.collect()]


def a_row(key: str, note, payload) -> dict:
    return {"id": key, "note": note, "payload": payload}


SHANGHAI = "Asia/Shanghai"
EXPECTED_STREAM_HISTORY = [
    ("canal_json.stream_shop_b", "UTC", "orders", '["1"]', a_row("1", "other", None), at(0), None, True, False, "c"),
    ("shop_a", SHANGHAI, "items", '["7"]', {"id": "7", "note": "item", "payload": None}, at(1), None, True, False, "c"),
    # Batch 50's insert and update share id and es: the offset orders them (a zero-length first version).
    ("shop_a", SHANGHAI, "orders", '["1"]', a_row("1", "a", "/wE="), at(0), at(0), False, False, "c"),
    ("shop_a", SHANGHAI, "orders", '["1"]', a_row("1", "a2", "/wE="), at(0), at(5), False, False, "u"),
    # After the restart, batch 1 orders after batch 50.
    ("shop_a", SHANGHAI, "orders", '["1"]', a_row("1", "a3", "/wE="), at(5), at(8), False, False, "u"),
    ("shop_a", SHANGHAI, "orders", '["1"]', a_row("1", "a3", "/wE="), at(8), None, True, True, "t"),
    ("shop_a", SHANGHAI, "orders", '["2"]', a_row("2", "b", None), at(0), at(6), False, False, "c"),
    # Deleted before the truncate: the truncate adds no second deleted version.
    ("shop_a", SHANGHAI, "orders", '["2"]', a_row("2", "b", None), at(6), at(9), False, True, "d"),
    ("shop_a", SHANGHAI, "orders", '["2"]', a_row("2", "b2", ""), at(9), None, True, False, "c"),
]
