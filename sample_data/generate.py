"""Writes the sample messages under sample_data/<format>/ from a small simulated shop database.

The events are realistic (a MySQL `shop` database replicated by Huawei DRS to Kafka) and
deterministic: running the script again writes the same files. `make sample-data` runs it;
`make run` lands what it wrote.
"""

import json
import random
import sys
from datetime import UTC, datetime
from pathlib import Path

SAMPLE_DIR = Path(__file__).resolve().parent
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


def main(out_dir: Path = SAMPLE_DIR) -> None:
    rng = random.Random(20260302)
    target = out_dir / "huawei_drs_json" / "shop.orders.jsonl"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("\n".join(huawei_drs_json(rng)) + "\n", encoding="utf-8")
    print(f"wrote {target}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else SAMPLE_DIR)
