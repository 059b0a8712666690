"""Synthetic, deterministic change messages of every supported format for the benchmark.

One abstract change stream per format (inserts, full and partial updates, deletes, DDL, heartbeats over
many tables), rendered in that format's wire shape, then disturbed as a real feed is: about 1% of
messages are delivered again at a later offset and about 1% arrive late (swapped with a later message).
Tencent DTS messages are occasionally split over two envelopes; Alibaba Cloud updates are two messages.
The same (events, seed) always gives the same bytes.
"""

import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import islice

from cdc_lakehouse.formats import SOURCE_FORMATS
from vendor_writers import DELETE, INSERT, UPDATE, Change, Table
from vendor_writers import aliyun_datahub_tuple as datahub_writer
from vendor_writers import aliyun_streamx_json as streamx_writer
from vendor_writers import canal_json as canal_writer
from vendor_writers import huawei_drs_avro as drs_avro_writer
from vendor_writers import huawei_drs_json as drs_json_writer
from vendor_writers import huawei_drs_jsonc as drs_jsonc_writer
from vendor_writers import huawei_drs_mongo_json as drs_mongo_writer
from vendor_writers import kafkariver_json as kafkariver_writer
from vendor_writers import tencent_dts_protobuf as dts_writer

T0_MS = 1_772_438_400_000  # 2026-03-02 08:00:00 UTC
TABLES = [f"t{number:02d}" for number in range(20)]
MYSQL_TYPES = {"id": "int(11)", "name": "varchar(64)", "amount": "decimal(12,2)", "updated": "datetime"}
JDBC_TYPES = {"id": 4, "name": 12, "amount": 3, "updated": 93}
STREAMX_TYPES = {"id": "LONG", "amount": "DOUBLE"}
DATAHUB_TYPES = {"id": "BIGINT"}
DRS_AVRO_SCHEMA = drs_avro_writer.DRS_RECORD_SCHEMA


def bench_table(name: str) -> Table:
    return Table("bench", name, MYSQL_TYPES, JDBC_TYPES)


@dataclass(frozen=True)
class Step:
    """One step of a stream: a row change, or (change None) a DDL or a heartbeat of a table."""

    seq: int
    ts_ms: int
    table: Table
    kind: str  # change, ddl, heartbeat
    change: Change | None = None

    @property
    def ddl_sql(self) -> str:
        return f"ALTER TABLE `{self.table.name}` COMMENT 'seq {self.seq}'"


@dataclass
class ChangeStream:
    """Valid changes over a few hundred keys per table: updates and deletes only touch existing rows;
    updates are whole or partial (the amount alone)."""

    rng: random.Random
    rows: dict[str, dict[int, dict]] = field(default_factory=dict)
    seq: int = 0
    tables: tuple[str, ...] = tuple(TABLES)

    def next(self) -> Step:
        self.seq += 1
        ts_ms = T0_MS + self.seq * 37
        name = self.rng.choice(self.tables)
        table = bench_table(name)
        live = self.rows.setdefault(name, {})
        roll = self.rng.random()

        def step(op: str, before: dict | None, after: dict | None) -> Step:
            return Step(self.seq, ts_ms, table, "change", Change(table, op, before, after, ts_ms))

        if roll < 0.02:
            return Step(self.seq, ts_ms, table, "ddl")
        if roll < 0.05:
            return Step(self.seq, ts_ms, table, "heartbeat")
        if roll < 0.60 or not live:
            key = self.seq
            live[key] = self.row(key, ts_ms)
            return step(INSERT, None, live[key])
        # Changes go to the 64 most recently inserted live keys: O(1) per change however large the table.
        key = self.rng.choice(list(islice(reversed(live), 64)))
        before = live[key]
        if roll < 0.75:
            live[key] = {**self.row(key, ts_ms), "id": before["id"]}
            return step(UPDATE, before, live[key])
        if roll < 0.90:
            live[key] = {**before, "amount": self.row(key, ts_ms)["amount"]}
            return step(UPDATE, before, {"id": before["id"], "amount": live[key]["amount"]})
        del live[key]
        return step(DELETE, before, None)

    def row(self, key: int, ts_ms: int) -> dict:
        return {
            "id": str(key),
            "name": f"客户{self.rng.randint(1, 99_999)}",
            "amount": f"{self.rng.randint(0, 10**7) / 100:.2f}",
            "updated": f"2026-03-02 08:{(ts_ms // 60_000) % 60:02d}:{(ts_ms // 1000) % 60:02d}",
        }


def _json(document: dict) -> bytes:
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode()


def _row_change(step: Step) -> Change:
    """Formats without DDL or heartbeat messages get an insert of a filler row in that slot."""
    if step.change is not None:
        return step.change
    filler = {"id": str(10**9 + step.seq), "name": "filler", "amount": "0.00", "updated": "2026-03-02 08:00:00"}
    return Change(step.table, INSERT, None, filler, step.ts_ms)


def drs_json(step: Step, flat_message: Callable = drs_json_writer.flat_message) -> dict:
    """DRS JSON and JSON-C; DRS sends no heartbeats: that slot becomes a DDL."""
    if step.change is None:
        return drs_json_writer.ddl_message(step.seq, step.table, step.ddl_sql, step.ts_ms)
    return flat_message(step.seq, [step.change])


def canal(step: Step) -> list[bytes]:
    """Canal, a batch id per message; no heartbeats: that slot becomes a DDL."""
    if step.change is None:
        return [_json(canal_writer.ddl_message(step.seq, step.table, step.ddl_sql, step.ts_ms))]
    return [_json(canal_writer.flat_message(step.seq, [step.change]))]


def kafkariver(step: Step) -> list[bytes]:
    binlog = f"{4 + step.seq * 190}@mysql-bin.{1 + step.seq // 1_000_000:06d}"
    return [_json(kafkariver_writer.message(binlog, _row_change(step)))]


def streamx(step: Step) -> list[bytes]:
    sequence_id = T0_MS * 1000 + step.seq
    if step.kind == "heartbeat":
        return [_json(streamx_writer.heartbeat(step.ts_ms))]
    if step.kind == "ddl":
        ddl = {"text": step.ddl_sql}
        return [_json(streamx_writer.record(sequence_id, step.table, STREAMX_TYPES, "ALTER", step.ts_ms, ddl=ddl))]
    return [_json(record) for record in streamx_writer.records(sequence_id, step.change, STREAMX_TYPES)]


def datahub_tuple(step: Step) -> list[bytes]:
    records = datahub_writer.records(T0_MS * 1000 + step.seq, _row_change(step), DATAHUB_TYPES)
    return [_json(record) for record in records]


def mongo(step: Step) -> list[bytes]:
    change = _row_change(step)
    object_id = f'ObjectId("{int(step.table.name[1:]):08x}{int(change.row["id"]):016x}")'
    collection = Table("bench", step.table.name, dict.fromkeys(["_id", "name", "amount", "updated"], ""), keys=("_id",))

    def shell(row: dict | None) -> dict | None:
        if row is None:
            return None
        fields = {"_id": object_id}
        if "name" in row:
            fields["name"] = json.dumps(row["name"], ensure_ascii=False)
        if "amount" in row:
            fields["amount"] = f'NumberDecimal("{row["amount"]}")'
        if "updated" in row:
            fields["updated"] = 'ISODate("2026-03-02T08:00:00Z")'
        return fields

    document = Change(collection, change.op, shell(change.before), shell(change.after), change.at_ms)
    return [_json(drs_mongo_writer.message(step.seq, document, step.seq % 1000 + 1))]


def dts(step: Step, rng: random.Random) -> list[bytes]:
    # A writer per step, placed where the stream's writer would be: seqId and binlog position follow seq.
    writer = dts_writer.DtsWriter(
        "bench", seq_id=step.seq - 1, clock_s=step.ts_ms // 1000, server_id=1, position=4 + (step.seq - 1) * 187
    )
    if step.kind == "heartbeat":
        entry = writer.heartbeat()
    elif step.kind == "ddl":
        entry = writer.ddl(step.table.name, step.ddl_sql)
    else:
        entry = writer.dml([step.change])
    return dts_writer.envelopes(dts_writer.entries([entry]), parts=2 if rng.random() < 0.05 else 1)


def renderers(rng: random.Random) -> dict[str, Callable[[Step], list[bytes]]]:
    avro_schema = drs_avro_writer.writer_schema()
    return {
        "huawei_drs_json": lambda step: [_json(drs_json(step))],
        "huawei_drs_jsonc": lambda step: [_json(drs_json(step, drs_jsonc_writer.flat_message))],
        "canal_json": canal,
        "kafkariver_json": kafkariver,
        "aliyun_streamx_json": streamx,
        "aliyun_datahub_tuple": datahub_tuple,
        "huawei_drs_mongo_json": mongo,
        "tencent_dts_protobuf": lambda step: dts(step, rng),
        "huawei_drs_avro": lambda step: [drs_avro_writer.record(drs_json(step), avro_schema)],
    }


def messages(
    events: int, seed: int, first_seq: int = 0, tables: tuple[str, ...] = tuple(TABLES)
) -> Iterator[tuple[str, str, bytes]]:
    """(source_format, topic, value) in landing order: events spread evenly over the formats and `tables`."""
    rng = random.Random(seed)
    render = renderers(rng)
    assert set(render) == set(SOURCE_FORMATS), "every supported format has a generator"
    per_format = events // len(render)
    for source_format, to_messages in render.items():
        stream = ChangeStream(random.Random(f"{seed}/{source_format}"), seq=first_seq, tables=tables)
        topic = f"{source_format}.bench"
        delivered: list[bytes] = []
        pending_late: list[bytes] = []
        for _ in range(per_format):
            for value in to_messages(stream.next()):
                roll = rng.random()
                if roll < 0.01 and source_format != "tencent_dts_protobuf":
                    pending_late.append(value)  # held back, landed after the next message
                    continue
                delivered.append(value)
                yield source_format, topic, value
                while pending_late:
                    yield source_format, topic, pending_late.pop()
                if roll > 0.99 and source_format != "tencent_dts_protobuf":
                    yield source_format, topic, rng.choice(delivered[-50:])  # redelivered at a new offset
        yield from ((source_format, topic, value) for value in pending_late)
