"""Writes the sample messages under sample_data/<format>/ from a small simulated shop database.

The events are realistic (a MySQL `shop` database replicated by Huawei DRS and Tencent DTS here, the same
day of orders by every other format in shop_story.py) and deterministic: running the script again writes
the same files. `make sample-data` runs it;
`make run` lands what it wrote.
"""

import json
import random
import sys
from datetime import UTC, datetime
from pathlib import Path

import shop_story

from python_udfs.proto import tencent_dts_subscribe_pb2 as pb

SAMPLE_DIR = Path(__file__).resolve().parent
# The formats shop_story renders as one JSON text message per line.
TEXT_FORMATS = (
    "canal_json",
    "huawei_drs_jsonc",
    "huawei_drs_mongo_json",
    "kafkariver_json",
    "aliyun_streamx_json",
    "aliyun_datahub_tuple",
)
START_MS = int(datetime(2026, 3, 2, 8, 0, tzinfo=UTC).timestamp() * 1000)

ORDER_MYSQL_TYPES = {
    "order_id": "bigint",
    "customer": "varchar",
    "amount": "decimal",
    "status": "varchar",
    "note": "varbinary",
    "created_at": "datetime",
    "updated_at": "timestamp",
}
ORDER_JDBC_TYPES = {
    "order_id": -5,
    "customer": 12,
    "amount": 3,
    "status": 12,
    "note": -3,
    "created_at": 93,
    "updated_at": 93,
}
CUSTOMERS = ["王芳", "李伟", "张敏", "Zoë Keller", "O'Brien & Sons"]
STATUSES = ["created", "paid", "shipped", "delivered"]


def java_byte_list(data: bytes) -> str:
    """DRS JSON's rendering of binary values: signed Java bytes."""
    return "[" + ", ".join(str(b - 256 if b > 127 else b) for b in data) + "]"


class DrsJsonWriter:
    def __init__(self, database: str) -> None:
        self.database = database
        self.drs_id = 1000
        self.clock_ms = START_MS
        self.messages: list[dict] = []

    def _envelope(self, table: str, operation: str) -> dict:
        self.drs_id += 1
        self.clock_ms += 1500
        return {
            "id": self.drs_id,
            "es": self.clock_ms,
            "ts": self.clock_ms + 230,
            "database": self.database,
            "table": table,
            "type": operation,
            "isDdl": operation in ("DDL", "INIT_DDL"),
            "sql": "",
        }

    def row_change(self, table: str, operation: str, data: list[dict] | None, old: list[dict] | None) -> None:
        message = self._envelope(table, operation)
        message.update(
            mysqlType=ORDER_MYSQL_TYPES,
            sqlType=ORDER_JDBC_TYPES,
            data=data,
            old=old,
            pkNames=["order_id"],
        )
        self.messages.append(message)

    def ddl(self, table: str, sql: str) -> None:
        message = self._envelope(table, "DDL")
        message.update(sql=sql, mysqlType=None, sqlType=None, data=None, old=None, pkNames=None)
        self.messages.append(message)


def order_row(rng: random.Random, order_id: int, clock_ms: int) -> dict:
    created = datetime.fromtimestamp(clock_ms / 1000, UTC)
    return {
        "order_id": str(order_id),
        "customer": rng.choice(CUSTOMERS),
        "amount": f"{rng.randint(100, 99999) / 100:.2f}",
        "status": "created",
        "note": java_byte_list(rng.randbytes(rng.randint(0, 6))),
        "created_at": created.strftime("%Y-%m-%d %H:%M:%S"),
        "updated_at": f"{clock_ms / 1000:.3f}",
    }


def huawei_drs_json(rng: random.Random) -> list[str]:
    writer = DrsJsonWriter("shop")
    rows: dict[int, dict] = {}
    for order_id in range(1, 7):
        rows[order_id] = order_row(rng, order_id, writer.clock_ms)
        writer.row_change("orders", "INSERT", [rows[order_id]], None)
    for order_id in (2, 3, 2, 5):
        before = dict(rows[order_id])
        after = dict(before)
        after["status"] = STATUSES[min(STATUSES.index(before["status"]) + 1, len(STATUSES) - 1)]
        after["updated_at"] = f"{(writer.clock_ms + 1500) / 1000:.3f}"
        rows[order_id] = after
        writer.row_change("orders", "UPDATE", [after], [before])
    writer.ddl("orders", "ALTER TABLE `orders` ADD COLUMN `coupon` varchar(32) NULL")
    writer.row_change("orders", "DELETE", None, [rows.pop(4)])
    # One statement updating two rows: one message, two row images.
    befores = [dict(rows[1]), dict(rows[6])]
    afters = [dict(row, status="paid", amount=None) for row in befores]
    writer.row_change("orders", "UPDATE", afters, befores)
    lines = [json.dumps(message, ensure_ascii=False) for message in writer.messages]
    # What a broken producer or a truncated copy would deliver: quarantined, never lost.
    lines.append(lines[0][: len(lines[0]) // 2])
    lines.append(json.dumps(dict(writer.messages[0], type="MERGE"), ensure_ascii=False))
    return lines


def dts_value(text: str | None, charset: str = "utf8") -> pb.Data:
    if text is None:
        return pb.Data(dataType=pb.NIL)
    return pb.Data(dataType=pb.STRING, bv=text.encode(CHARSET_CODECS.get(charset, charset)), charset=charset)


CHARSET_CODECS = {"utf8": "utf-8", "utf8mb4": "utf-8"}
DTS_COLUMNS = [
    ("order_id", "bigint(20) unsigned", True),
    ("customer", "varchar(64)", False),
    ("amount", "decimal(10,2)", False),
    ("paid_at", "timestamp", False),
]


class DtsWriter:
    """Entries of a MySQL `shop` database as DTS writes them: header, then the event per message type."""

    def __init__(self) -> None:
        self.seq_id = 5000
        self.clock = START_MS // 1000
        self.position = 4

    def entry(self, message_type: int, table: str = "") -> pb.Entry:
        self.seq_id += 1
        self.clock += 2
        self.position += 187
        entry = pb.Entry()
        header = entry.header
        header.version = 1
        header.sourceType = pb.MYSQL
        header.messageType = message_type
        header.timestamp = self.clock
        header.serverId = 1013306
        header.fileName = "mysql-bin.000031"
        header.position = self.position
        header.gtid = f"5a3c2e1f-11ee-4c3b-9d9d-5b0e8f8a7c21:{self.seq_id - 4000}"
        header.schemaName = "shop"
        header.tableName = table
        header.seqId = self.seq_id
        return entry

    def dml(self, dml_type: int, rows: list[tuple[list | None, list | None]]) -> pb.Entry:
        entry = self.entry(pb.DML, "orders")
        dml = entry.event.dmlEvent
        dml.dmlEventType = dml_type
        for name, original_type, is_key in DTS_COLUMNS:
            dml.columns.add(name=name, originalType=original_type, isKey=is_key)
        for old, new in rows:
            row = dml.rows.add()
            for image, values in ((row.oldColumns, old), (row.newColumns, new)):
                for order_id, customer, amount, paid_at, charset in [values] if values else []:
                    image.extend(
                        [
                            pb.Data(dataType=pb.UINT64, sv=str(order_id)),
                            dts_value(customer, charset),
                            pb.Data(dataType=pb.DECIMAL, sv=amount) if amount else pb.Data(dataType=pb.NIL),
                            dts_value(paid_at),
                        ]
                    )
        return entry

    def begin(self) -> pb.Entry:
        begin = self.entry(pb.BEGIN)
        begin.event.beginEvent.transactionId = f"tx-{self.seq_id}"
        begin.event.beginEvent.threadId = 77
        return begin

    def commit(self, begin: pb.Entry) -> pb.Entry:
        commit = self.entry(pb.COMMIT)
        commit.event.commitEvent.transactionId = begin.event.beginEvent.transactionId
        return commit


def envelopes(items: list[pb.Entry], parts: int = 1) -> list[bytes]:
    data = pb.Entries(items=items).SerializeToString()
    size = -(-len(data) // parts)
    return [
        pb.Envelope(version=1, total=parts, index=i, data=data[i * size : (i + 1) * size]).SerializeToString()
        for i in range(parts)
    ]


def tencent_dts_protobuf() -> list[bytes]:
    writer = DtsWriter()
    begin = writer.begin()
    first = [
        begin,
        writer.dml(
            pb.INSERT, [(None, (1, "王芳", "30.94", None, "utf8mb4")), (None, (2, "李伟", "577.90", None, "gbk"))]
        ),
        writer.commit(begin),
    ]
    begin = writer.begin()
    second = [
        begin,
        writer.dml(
            pb.UPDATE,
            [((2, "李伟", "577.90", None, "gbk"), (2, "李伟", "577.90", "2026-03-02 08:01:10 +08:00", "gbk"))],
        ),
        writer.dml(pb.DELETE, [((1, "王芳", "30.94", None, "utf8mb4"), None)]),
        writer.commit(begin),
    ]
    ddl = writer.entry(pb.DDL, "orders")
    ddl.event.ddlEvent.schemaName = "shop"
    ddl.event.ddlEvent.sql = "ALTER TABLE `orders` ADD COLUMN `coupon` varchar(32) NULL"
    heartbeat = writer.entry(pb.HEARTBEAT)
    heartbeat.event.heartbeatEvent.epoch = writer.clock
    checkpoint = writer.entry(pb.CHECKPOINT)
    checkpoint.event.checkpointEvent.syncedGtid = "5a3c2e1f-11ee-4c3b-9d9d-5b0e8f8a7c21:1-1012"
    checkpoint.event.checkpointEvent.fileName = "mysql-bin.000031"
    checkpoint.event.checkpointEvent.position = writer.position
    begin = writer.begin()
    lost_update = [begin, writer.dml(pb.INSERT, [(None, (3, "张敏", "12.00", None, "utf8"))]), writer.commit(begin)]
    return [
        *envelopes(first),
        # A large transaction split over three messages, reassembled before decoding.
        *envelopes([*second, ddl], parts=3),
        *envelopes([heartbeat, checkpoint]),
        # A split group whose second part never arrived: quarantined whole.
        envelopes(lost_update, parts=2)[0],
        *envelopes([writer.entry(pb.HEARTBEAT)]),
        b"not a protobuf envelope",
    ]


def write_lines(target: Path, lines: list[str]) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {target}")


def write_binary_topic(topic_dir: Path, messages: list[bytes]) -> None:
    """One folder per topic: its files land in name order, one message each."""
    topic_dir.mkdir(parents=True, exist_ok=True)
    for number, message in enumerate(messages):
        (topic_dir / f"{number:03d}.bin").write_bytes(message)
    print(f"wrote {topic_dir}")


def main(out_dir: Path = SAMPLE_DIR) -> None:
    write_lines(out_dir / "huawei_drs_json" / "shop.orders.jsonl", huawei_drs_json(random.Random(20260302)))
    write_binary_topic(out_dir / "tencent_dts_protobuf" / "shop", tencent_dts_protobuf())
    for source_format in TEXT_FORMATS:
        write_lines(out_dir / source_format / "shop.orders.jsonl", getattr(shop_story, source_format)())
    schema = json.loads((SAMPLE_DIR / "drs_record.avsc").read_text())
    write_binary_topic(out_dir / "huawei_drs_avro" / "shop.orders", shop_story.huawei_drs_avro(schema))


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else SAMPLE_DIR)
