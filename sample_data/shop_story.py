"""One day of a MySQL `shop.orders` table (and a MongoDB `shop.orders` collection), as a list of changes,
and the messages each vendor format writes for them: Canal FlatMessage, Huawei DRS JSON-C, Avro and DDS
(MongoDB), the Canal-derived KafkaRiver JSON, Alibaba Cloud StreamX JSON and DataHub tuples.

Each rendering follows its vendor's conventions (see each staging folder's README): Canal batches several
messages under one batch id and keeps only the changed columns in `old`; DRS puts a deleted row in `old`;
KafkaRiver marks updated columns and their `origin_val`; StreamX and DataHub split an update into its
before and after records. Each format ends with one truncated message: quarantined, never lost.
"""

import io
import json
from dataclasses import dataclass
from datetime import UTC, datetime

START_MS = int(datetime(2026, 3, 2, 9, 0, tzinfo=UTC).timestamp() * 1000)
COLUMNS = ("order_id", "customer", "amount", "status", "created_at")
MYSQL_TYPES = {
    "order_id": "bigint(20)",
    "customer": "varchar(64)",
    "amount": "decimal(10,2)",
    "status": "varchar(16)",
    "created_at": "datetime",
}
JDBC_TYPES = {"order_id": -5, "customer": 12, "amount": 3, "status": 12, "created_at": 93}
STREAMX_TYPES = {
    "order_id": "LONG",
    "customer": "STRING",
    "amount": "STRING",
    "status": "STRING",
    "created_at": "STRING",
}


@dataclass(frozen=True)
class Change:
    op: str  # INSERT, UPDATE, DELETE
    before: dict | None
    after: dict | None
    at_ms: int
    # Changes of one source transaction share it: Canal writes them under one batch id.
    transaction: int


def order(order_id: int, customer: str, amount: str, status: str, minute: int) -> dict:
    created = datetime.fromtimestamp((START_MS + minute * 60_000) / 1000, UTC)
    return {
        "order_id": str(order_id),
        "customer": customer,
        "amount": amount,
        "status": status,
        "created_at": created.strftime("%Y-%m-%d %H:%M:%S"),
    }


def story() -> list[Change]:
    """Four orders placed (two in one transaction), two paid, one cancelled, one shipped."""
    rows = {
        1: order(1, "王芳", "30.94", "created", 0),
        2: order(2, "李伟", "577.90", "created", 1),
        3: order(3, "Zoë Keller", "12.00", "created", 1),
        4: order(4, "O'Brien & Sons", "99.99", "created", 3),
    }
    changes = [
        Change("INSERT", None, rows[1], START_MS, 1),
        Change("INSERT", None, rows[2], START_MS + 60_000, 2),
        Change("INSERT", None, rows[3], START_MS + 60_000, 2),
        Change("INSERT", None, rows[4], START_MS + 180_000, 3),
    ]
    for order_id, status, minute, transaction in ((2, "paid", 5, 4), (3, "paid", 6, 5), (2, "shipped", 30, 7)):
        before = rows[order_id]
        rows[order_id] = dict(before, status=status)
        changes.append(Change("UPDATE", before, rows[order_id], START_MS + minute * 60_000, transaction))
    changes.insert(6, Change("DELETE", rows[4], None, START_MS + 20 * 60_000, 6))
    return changes


def truncated(message: str) -> str:
    return message[: len(message) // 2]


def json_lines(messages: list[dict]) -> list[str]:
    lines = [json.dumps(message, ensure_ascii=False) for message in messages]
    return [*lines, truncated(lines[-1])]


def changed_columns(change: Change) -> dict:
    return {name: value for name, value in change.before.items() if change.after[name] != value}


def canal_json() -> list[str]:
    """Canal FlatMessage: a transaction's changes share its batch id; `old` has the changed columns only."""
    messages = []
    for change in story():
        messages.append(
            {
                "id": 9000 + change.transaction,
                "database": "shop",
                "table": "orders",
                "pkNames": ["order_id"],
                "isDdl": False,
                "type": change.op,
                "es": change.at_ms,
                "ts": change.at_ms + 120,
                "sql": "",
                "sqlType": JDBC_TYPES,
                "mysqlType": MYSQL_TYPES,
                "data": [change.after or change.before],
                "old": [changed_columns(change)] if change.op == "UPDATE" else None,
            }
        )
    return json_lines(messages)


def drs_flat_message(number: int, change: Change, deleted_row_in: str = "old") -> dict:
    """DRS JSON (and Avro): increasing ids, whole rows in `old`, a deleted row in `old`; JSON-C puts a deleted
    row in `data`, as Canal does."""
    return {
        "mysqlType": {name: text.split("(")[0] for name, text in MYSQL_TYPES.items()},
        "id": 41000 + number,
        "es": change.at_ms,
        "ts": change.at_ms + 230,
        "database": "shop",
        "table": "orders",
        "type": change.op,
        "isDdl": False,
        "sql": "",
        "sqlType": JDBC_TYPES,
        "data": [change.after] if change.after else None,
        "old": [change.before] if change.before else None,
        "pkNames": ["order_id"],
    } | ({"data": [change.before], "old": None} if change.op == "DELETE" and deleted_row_in == "data" else {})


def huawei_drs_jsonc() -> list[str]:
    return json_lines([drs_flat_message(number, change, "data") for number, change in enumerate(story())])


def huawei_drs_avro(schema: dict) -> list[bytes]:
    """DRS Avro records of the same changes (writer schema: sample_data/drs_record.avsc)."""
    import fastavro

    parsed = fastavro.parse_schema(schema)
    records = []
    for number, change in enumerate(story()):
        buffer = io.BytesIO()
        fastavro.schemaless_writer(buffer, parsed, drs_flat_message(number, change))
        records.append(buffer.getvalue())
    return [*records, records[-1][: len(records[-1]) // 2]]


def mongo_document(row: dict) -> str:
    """A DDS document in MongoDB shell syntax, as DRS writes `value` and `where`."""
    object_id = f"6650a1f07dc36a464e76e{int(row['order_id']):03d}"
    return (
        f'{{"_id": ObjectId("{object_id}"), "customer": "{row["customer"]}", '
        f'"amount": NumberDecimal("{row["amount"]}"), "status": "{row["status"]}", '
        f'"created_at": ISODate("{row["created_at"].replace(" ", "T")}Z")}}'
    )


def huawei_drs_mongo_json() -> list[str]:
    """DDS (MongoDB) through DRS: inserts and replaces carry the whole document, a delete its _id."""
    messages = []
    for number, change in enumerate(story()):
        row = change.after or change.before
        where = mongo_document(row).split(", ")[0] + "}"
        record_type = {"INSERT": "insert", "UPDATE": "replace", "DELETE": "doc"}[change.op]
        messages.append(
            {
                "id": 700 + number,
                "op": change.op,
                "dbType": "MongoDB",
                "db": "shop",
                "coll": "orders",
                "value": where if change.op == "DELETE" else mongo_document(row),
                "where": where if change.op == "UPDATE" else None,
                "recordType": record_type,
                "extra": record_type,
                "es": change.at_ms,
                "ts": change.at_ms + 130,
                "clusterTime": f"{change.at_ms // 1000}:{number + 1}",
            }
        )
    return json_lines(messages)


def kafkariver_json() -> list[str]:
    """KafkaRiver: binlog position, i/u/d, every column with its type; an update marks what changed."""
    messages = []
    position = 4
    for change in story():
        position += 311
        row = change.after or change.before
        columns = []
        for name in COLUMNS:
            column = {"n": name, "t": MYSQL_TYPES[name], "v": row[name], "null": row[name] is None}
            if change.op == "UPDATE":
                column["updated"] = change.before[name] != row[name]
                if column["updated"]:
                    column["origin_val"] = change.before[name]
            columns.append(column)
        messages.append(
            {
                "binlog": f"{position}@mysql-bin.000112",
                "time": change.at_ms,
                "canalTime": change.at_ms + 1370,
                "db": "shop",
                "table": "orders",
                "event": change.op[0].lower(),
                "columns": columns,
                "keys": ["order_id"],
            }
        )
    return json_lines(messages)


def streamx_record(sequence: int, op: str, change: Change, before: dict | None, after: dict | None) -> dict:
    def image(row: dict | None) -> dict | None:
        return {"dataColumn": {**row, "order_id": int(row["order_id"])}} if row else None

    return {
        "schema": {
            "dataColumn": [{"name": name, "type": STREAMX_TYPES[name]} for name in COLUMNS],
            "primaryKey": ["order_id"],
            "source": {"dbType": "MySQL", "dbName": "shop", "tableName": "orders"},
        },
        "payload": {
            "before": image(before),
            "after": image(after),
            "sequenceId": str(1772442000000000000 + sequence),
            "timestamp": {"eventTime": change.at_ms, "systemTime": change.at_ms + 977, "checkpointTime": change.at_ms},
            "op": op,
            "ddl": None,
        },
        "version": "0.0.1",
    }


def aliyun_streamx_json() -> list[str]:
    """DataWorks whole-database sync to Kafka: an update is two records, UPDATE_BEFOR then UPDATE_AFTER, of
    one sequenceId."""
    messages = []
    for sequence, change in enumerate(story()):
        if change.op == "UPDATE":
            messages.append(streamx_record(sequence, "UPDATE_BEFOR", change, change.before, None))
            messages.append(streamx_record(sequence, "UPDATE_AFTER", change, None, change.after))
        else:
            messages.append(streamx_record(sequence, change.op, change, change.before, change.after))
    heartbeat = {
        "schema": {"dataColumn": None, "primaryKey": None, "source": None},
        "payload": {
            "before": None,
            "after": None,
            "sequenceId": None,
            "timestamp": {"eventTime": START_MS + 3_600_000, "checkpointTime": START_MS + 3_600_000},
            "op": "MHEARTBEAT",
            "ddl": None,
        },
        "version": "0.0.1",
    }
    return json_lines([*messages, heartbeat])


def aliyun_datahub_tuple() -> list[str]:
    """DataHub tuples: the row's columns beside _sequence_id_, _operation_type_ and the image flags; an
    update is a before and an after record of one _sequence_id_."""
    records = []

    def record(sequence: int, op: str, change: Change, row: dict, before_image: str, after_image: str) -> None:
        records.append(
            {
                "_sequence_id_": str(1772442000000000000 + sequence),
                "_operation_type_": op,
                "_excute_time_": change.at_ms,
                "_source_table_": "orders",
                "_before_image_": before_image,
                "_after_image_": after_image,
                **{**row, "order_id": int(row["order_id"])},
            }
        )

    for sequence, change in enumerate(story()):
        if change.op == "INSERT":
            record(sequence, "I", change, change.after, "N", "Y")
        elif change.op == "UPDATE":
            record(sequence, "U", change, change.before, "Y", "N")
            record(sequence, "U", change, change.after, "N", "Y")
        else:
            record(sequence, "D", change, change.before, "Y", "N")
    return json_lines(records)
