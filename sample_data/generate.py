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
from vendor_writers import DELETE, INSERT, UPDATE, Change, Table
from vendor_writers import huawei_drs_json as drs_json_writer
from vendor_writers.tencent_dts_protobuf import DtsWriter, entries, envelopes

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

ORDERS = Table(
    "shop",
    "orders",
    types={
        "order_id": "bigint",
        "customer": "varchar",
        "amount": "decimal",
        "status": "varchar",
        "note": "varbinary",
        "created_at": "datetime",
        "updated_at": "timestamp",
    },
    jdbc_types={
        "order_id": -5,
        "customer": 12,
        "amount": 3,
        "status": 12,
        "note": -3,
        "created_at": 93,
        "updated_at": 93,
    },
    keys=("order_id",),
)
CUSTOMERS = ["王芳", "李伟", "张敏", "Zoë Keller", "O'Brien & Sons"]
STATUSES = ["created", "paid", "shipped", "delivered"]


def java_byte_list(data: bytes) -> str:
    """DRS JSON's rendering of binary values: signed Java bytes."""
    return "[" + ", ".join(str(b - 256 if b > 127 else b) for b in data) + "]"


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
    """Orders placed, paid and shipped, a DDL, a delete and one statement updating two rows (one message,
    two row images); DRS numbers every event, 1.5 s apart."""
    messages: list[dict] = []
    clock_ms = START_MS

    def tick() -> tuple[int, int]:
        nonlocal clock_ms
        clock_ms += 1500
        return 1001 + len(messages), clock_ms

    def write(op: str, befores: list[dict | None], afters: list[dict | None]) -> None:
        drs_id, at_ms = tick()
        changes = [Change(ORDERS, op, before, after, at_ms) for before, after in zip(befores, afters, strict=True)]
        messages.append(drs_json_writer.flat_message(drs_id, changes))

    rows: dict[int, dict] = {}
    for order_id in range(1, 7):
        rows[order_id] = order_row(rng, order_id, clock_ms)
        write(INSERT, [None], [rows[order_id]])
    for order_id in (2, 3, 2, 5):
        before = dict(rows[order_id])
        after = dict(before)
        after["status"] = STATUSES[min(STATUSES.index(before["status"]) + 1, len(STATUSES) - 1)]
        after["updated_at"] = f"{(clock_ms + 1500) / 1000:.3f}"
        rows[order_id] = after
        write(UPDATE, [before], [after])
    drs_id, at_ms = tick()
    messages.append(
        drs_json_writer.ddl_message(drs_id, ORDERS, "ALTER TABLE `orders` ADD COLUMN `coupon` varchar(32) NULL", at_ms)
    )
    write(DELETE, [rows.pop(4)], [None])
    befores = [dict(rows[1]), dict(rows[6])]
    write(UPDATE, befores, [dict(row, status="paid", amount=None) for row in befores])
    lines = [json.dumps(message, ensure_ascii=False) for message in messages]
    # What a broken producer or a truncated copy would deliver: quarantined, never lost.
    lines.append(lines[0][: len(lines[0]) // 2])
    lines.append(json.dumps(dict(messages[0], type="MERGE"), ensure_ascii=False))
    return lines


DTS_ORDERS = Table(
    "shop",
    "orders",
    types={
        "order_id": "bigint(20) unsigned",
        "customer": "varchar(64)",
        "amount": "decimal(10,2)",
        "paid_at": "timestamp",
    },
    keys=("order_id",),
    charsets={"customer": "gbk"},
)


def tencent_dts_protobuf() -> list[bytes]:
    writer = DtsWriter("shop", seq_id=5000, clock_s=START_MS // 1000)

    def order(order_id: int, customer: str, amount: str, paid_at: str | None = None) -> dict:
        return {"order_id": str(order_id), "customer": customer, "amount": amount, "paid_at": paid_at}

    def dml(op: str, rows: list[tuple[dict | None, dict | None]]) -> pb.Entry:
        at_ms = (writer.clock_s + 2) * 1000
        return writer.dml([Change(DTS_ORDERS, op, before, after, at_ms) for before, after in rows])

    wang, li = order(1, "王芳", "30.94"), order(2, "李伟", "577.90")
    begin = writer.begin()
    first = [begin, dml(INSERT, [(None, wang), (None, li)]), writer.commit(begin)]
    begin = writer.begin()
    second = [
        begin,
        dml(UPDATE, [(li, dict(li, paid_at="2026-03-02 08:01:10 +08:00"))]),
        dml(DELETE, [(wang, None)]),
        writer.commit(begin),
    ]
    ddl = writer.ddl("orders", "ALTER TABLE `orders` ADD COLUMN `coupon` varchar(32) NULL")
    heartbeat = writer.heartbeat()
    checkpoint = writer.checkpoint("5a3c2e1f-11ee-4c3b-9d9d-5b0e8f8a7c21:1-5009")
    begin = writer.begin()
    lost_update = [begin, dml(INSERT, [(None, order(3, "张敏", "12.00"))]), writer.commit(begin)]
    return [
        *envelopes(entries(first)),
        # A large transaction split over three messages, reassembled before decoding.
        *envelopes(entries([*second, ddl]), parts=3),
        *envelopes(entries([heartbeat, checkpoint])),
        # A split group whose second part never arrived: quarantined whole.
        envelopes(entries(lost_update), parts=2)[0],
        *envelopes(entries([writer.heartbeat()])),
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
    write_binary_topic(out_dir / "huawei_drs_avro" / "shop.orders", shop_story.huawei_drs_avro())


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else SAMPLE_DIR)
