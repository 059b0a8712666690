"""One day of a MySQL `shop.orders` table (and a MongoDB `shop.orders` collection), as a list of changes,
and the messages each vendor format writes for them: Canal FlatMessage, Huawei DRS JSON-C, Avro and DDS
(MongoDB), the Canal-derived KafkaRiver JSON, Alibaba Cloud StreamX JSON and DataHub tuples.

Each rendering follows its vendor's conventions (see each staging folder's README): Canal batches several
messages under one batch id and keeps only the changed columns in `old`; DRS puts a deleted row in `old`;
KafkaRiver marks updated columns and their `origin_val`; StreamX and DataHub split an update into its
before and after records. Each format ends with one truncated message: quarantined, never lost.
"""

import json
from datetime import UTC, datetime

from vendor_writers import DELETE, INSERT, UPDATE, Change, Table
from vendor_writers import aliyun_datahub_tuple as datahub_writer
from vendor_writers import aliyun_streamx_json as streamx_writer
from vendor_writers import canal_json as canal_writer
from vendor_writers import huawei_drs_avro as drs_avro_writer
from vendor_writers import huawei_drs_json as drs_json_writer
from vendor_writers import huawei_drs_jsonc as drs_jsonc_writer
from vendor_writers import huawei_drs_mongo_json as drs_mongo_writer
from vendor_writers import kafkariver_json as kafkariver_writer

START_MS = int(datetime(2026, 3, 2, 9, 0, tzinfo=UTC).timestamp() * 1000)
ORDERS = Table(
    "shop",
    "orders",
    types={
        "order_id": "bigint(20)",
        "customer": "varchar(64)",
        "amount": "decimal(10,2)",
        "status": "varchar(16)",
        "created_at": "datetime",
    },
    jdbc_types={"order_id": -5, "customer": 12, "amount": 3, "status": 12, "created_at": 93},
    keys=("order_id",),
)
# DataWorks' and DataHub's types of the columns that are not STRING.
STREAMX_TYPES = {"order_id": "LONG"}
DATAHUB_TYPES = {"order_id": "BIGINT"}


def order(order_id: int, customer: str, amount: str, status: str, minute: int) -> dict:
    created = datetime.fromtimestamp((START_MS + minute * 60_000) / 1000, UTC)
    return {
        "order_id": str(order_id),
        "customer": customer,
        "amount": amount,
        "status": status,
        "created_at": created.strftime("%Y-%m-%d %H:%M:%S"),
    }


def story() -> list[tuple[int, Change]]:
    """Four orders placed (two in one transaction), two paid, one cancelled, one shipped: each change with
    its source transaction (Canal writes a transaction's changes under one batch id)."""
    rows = {
        1: order(1, "王芳", "30.94", "created", 0),
        2: order(2, "李伟", "577.90", "created", 1),
        3: order(3, "Zoë Keller", "12.00", "created", 1),
        4: order(4, "O'Brien & Sons", "99.99", "created", 3),
    }
    changes = [
        (1, Change(ORDERS, INSERT, None, rows[1], START_MS)),
        (2, Change(ORDERS, INSERT, None, rows[2], START_MS + 60_000)),
        (2, Change(ORDERS, INSERT, None, rows[3], START_MS + 60_000)),
        (3, Change(ORDERS, INSERT, None, rows[4], START_MS + 180_000)),
    ]
    for order_id, status, minute, transaction in ((2, "paid", 5, 4), (3, "paid", 6, 5), (2, "shipped", 30, 7)):
        before = rows[order_id]
        rows[order_id] = dict(before, status=status)
        changes.append((transaction, Change(ORDERS, UPDATE, before, rows[order_id], START_MS + minute * 60_000)))
    changes.insert(6, (6, Change(ORDERS, DELETE, rows[4], None, START_MS + 20 * 60_000)))
    return changes


def changes() -> list[Change]:
    return [change for _, change in story()]


def truncated(message: str) -> str:
    return message[: len(message) // 2]


def json_lines(messages: list[dict]) -> list[str]:
    lines = [json.dumps(message, ensure_ascii=False) for message in messages]
    return [*lines, truncated(lines[-1])]


def canal_json() -> list[str]:
    return json_lines([canal_writer.flat_message(9000 + transaction, [change]) for transaction, change in story()])


def huawei_drs_jsonc() -> list[str]:
    return json_lines([drs_jsonc_writer.flat_message(41000 + n, [change]) for n, change in enumerate(changes())])


def huawei_drs_avro() -> list[bytes]:
    """DRS Avro records of the same changes (writer schema: sample_data/drs_record.avsc)."""
    schema = drs_avro_writer.writer_schema()
    records = [
        drs_avro_writer.record(drs_json_writer.flat_message(41000 + n, [change]), schema)
        for n, change in enumerate(changes())
    ]
    return [*records, records[-1][: len(records[-1]) // 2]]


def mongo_fields(row: dict) -> dict:
    """An order as a DDS document's fields, in MongoDB shell syntax."""
    return {
        "_id": f'ObjectId("6650a1f07dc36a464e76e{int(row["order_id"]):03d}")',
        "customer": json.dumps(row["customer"], ensure_ascii=False),
        "amount": f'NumberDecimal("{row["amount"]}")',
        "status": json.dumps(row["status"]),
        "created_at": f'ISODate("{row["created_at"].replace(" ", "T")}Z")',
    }


def huawei_drs_mongo_json() -> list[str]:
    """DDS (MongoDB) through DRS: inserts and replaces carry the whole document, a delete its _id."""
    collection = Table("shop", "orders", dict.fromkeys(mongo_fields(order(0, "", "0", "", 0)), ""), keys=("_id",))

    def as_document(change: Change) -> Change:
        before, after = (mongo_fields(row) if row else None for row in (change.before, change.after))
        return Change(collection, change.op, before, after, change.at_ms)

    return json_lines(
        [drs_mongo_writer.message(700 + n, as_document(change), n + 1) for n, change in enumerate(changes())]
    )


def kafkariver_json() -> list[str]:
    """KafkaRiver: binlog position, i/u/d, every column with its type; an update marks what changed."""
    return json_lines(
        [kafkariver_writer.message(f"{4 + 311 * n}@mysql-bin.000112", change) for n, change in enumerate(changes(), 1)]
    )


def aliyun_streamx_json() -> list[str]:
    """DataWorks whole-database sync to Kafka: an update is two records, UPDATE_BEFOR then UPDATE_AFTER, of
    one sequenceId; then a heartbeat."""
    records = [
        record
        for sequence, change in enumerate(changes())
        for record in streamx_writer.records(1772442000000000000 + sequence, change, STREAMX_TYPES)
    ]
    return json_lines([*records, streamx_writer.heartbeat(START_MS + 3_600_000)])


def aliyun_datahub_tuple() -> list[str]:
    """DataHub tuples: an update is a before and an after record of one _sequence_id_."""
    return json_lines(
        [
            record
            for sequence, change in enumerate(changes())
            for record in datahub_writer.records(1772442000000000000 + sequence, change, DATAHUB_TYPES)
        ]
    )
