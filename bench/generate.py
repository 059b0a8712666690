"""Synthetic, deterministic change messages of every supported format for the benchmark.

One abstract change stream per format (inserts, full and partial updates, deletes, DDL, heartbeats over
many tables), rendered in that format's wire shape, then disturbed as a real feed is: about 1% of
messages are delivered again at a later offset and about 1% arrive late (swapped with a later message).
Tencent DTS messages are occasionally split over two envelopes; Alibaba Cloud updates are two messages.
The same (events, seed) always gives the same bytes.
"""

import io
import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path

from cdc_lakehouse.formats import SOURCE_FORMATS

T0_MS = 1_772_438_400_000  # 2026-03-02 08:00:00 UTC
TABLES = [f"t{number:02d}" for number in range(20)]
MYSQL_TYPES = {"id": "int(11)", "name": "varchar(64)", "amount": "decimal(12,2)", "updated": "datetime"}
JDBC_TYPES = {"id": 4, "name": 12, "amount": 3, "updated": 93}
DRS_AVRO_SCHEMA = Path(__file__).resolve().parents[1] / "sample_data" / "drs_record.avsc"


@dataclass
class Change:
    kind: str  # insert, update, partial_update, delete, ddl, heartbeat
    table: str
    seq: int
    ts_ms: int
    before: dict | None = None
    after: dict | None = None


@dataclass
class ChangeStream:
    """Valid changes over a few hundred keys per table: updates and deletes only touch existing rows."""

    rng: random.Random
    rows: dict[str, dict[int, dict]] = field(default_factory=dict)
    seq: int = 0
    tables: tuple[str, ...] = tuple(TABLES)

    def next(self) -> Change:
        self.seq += 1
        ts_ms = T0_MS + self.seq * 37
        table = self.rng.choice(self.tables)
        live = self.rows.setdefault(table, {})
        roll = self.rng.random()
        if roll < 0.02:
            return Change("ddl", table, self.seq, ts_ms)
        if roll < 0.05:
            return Change("heartbeat", table, self.seq, ts_ms)
        if roll < 0.60 or not live:
            key = self.seq
            live[key] = self.row(key, ts_ms)
            return Change("insert", table, self.seq, ts_ms, after=live[key])
        # Changes go to the 64 most recently inserted live keys: O(1) per change however large the table.
        key = self.rng.choice(list(islice(reversed(live), 64)))
        before = live[key]
        if roll < 0.75:
            live[key] = {**self.row(key, ts_ms), "id": before["id"]}
            return Change("update", table, self.seq, ts_ms, before=before, after=live[key])
        if roll < 0.90:
            live[key] = {**before, "amount": self.row(key, ts_ms)["amount"]}
            after = {"id": before["id"], "amount": live[key]["amount"]}
            return Change("partial_update", table, self.seq, ts_ms, before=before, after=after)
        del live[key]
        return Change("delete", table, self.seq, ts_ms, before=before)

    def row(self, key: int, ts_ms: int) -> dict:
        return {
            "id": str(key),
            "name": f"客户{self.rng.randint(1, 99_999)}",
            "amount": f"{self.rng.randint(0, 10**7) / 100:.2f}",
            "updated": f"2026-03-02 08:{(ts_ms // 60_000) % 60:02d}:{(ts_ms // 1000) % 60:02d}",
        }


def _json(document: dict) -> bytes:
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode()


def _drs_operation(change: Change) -> str:
    return {"insert": "INSERT", "update": "UPDATE", "partial_update": "UPDATE", "delete": "DELETE"}[change.kind]


def drs_mysql_form(change: Change, deleted_rows_in: str) -> list[bytes]:
    """Huawei DRS JSON (deletes in `old`), DRS JSON-C and Canal FlatMessage (deletes in `data`)."""
    document = {
        "id": change.seq,
        "es": change.ts_ms,
        "ts": change.ts_ms + 120,
        "database": "bench",
        "table": change.table,
        "isDdl": False,
        "sql": "",
        "mysqlType": MYSQL_TYPES,
        "sqlType": JDBC_TYPES,
        "pkNames": ["id"],
        "data": None,
        "old": None,
    }
    if change.kind == "heartbeat":
        # DRS sends no heartbeats: the slot becomes a DDL.
        change = Change("ddl", change.table, change.seq, change.ts_ms)
    if change.kind == "ddl":
        document.update(type="DDL", isDdl=True, sql=f"ALTER TABLE `{change.table}` COMMENT 'seq {change.seq}'")
        document.update(mysqlType=None, sqlType=None, pkNames=None)
        return [_json(document)]
    document["type"] = _drs_operation(change)
    if change.kind == "delete":
        document[deleted_rows_in] = [change.before]
    else:
        document["data"] = [change.after]
        if change.before is not None:
            old = change.before
            if deleted_rows_in == "data":  # FlatMessage: old holds only the changed columns
                merged = {**change.before, **change.after}
                old = {name: value for name, value in change.before.items() if merged[name] != value}
            document["old"] = [old]
    return [_json(document)]


def kafkariver(change: Change) -> list[bytes]:
    change = _row_change(change)
    image = change.before if change.kind == "delete" else {**(change.before or {}), **change.after}
    columns = []
    for name, mysql_type in MYSQL_TYPES.items():
        column = {"n": name, "t": mysql_type, "v": image[name], "null": image[name] is None}
        if change.kind in ("update", "partial_update"):
            changed = change.before[name] != image[name]
            column["updated"] = changed
            if changed:
                column["origin_val"] = change.before[name]
        columns.append(column)
    return [
        _json(
            {
                "binlog": f"{4 + change.seq * 190}@mysql-bin.{1 + change.seq // 1_000_000:06d}",
                "time": change.ts_ms,
                "canalTime": change.ts_ms + 80,
                "db": "bench",
                "table": change.table,
                "event": {"insert": "i", "delete": "d"}.get(change.kind, "u"),
                "columns": columns,
                "keys": ["id"],
            }
        )
    ]


STREAMX_TYPES = [{"name": "id", "type": "LONG"}, {"name": "name", "type": "STRING"}]
STREAMX_TYPES += [{"name": "amount", "type": "DOUBLE"}, {"name": "updated", "type": "STRING"}]


def _streamx_image(row: dict | None) -> dict | None:
    if row is None:
        return None
    typed = {**row, "id": int(row["id"])}
    if "amount" in typed:
        typed["amount"] = float(typed["amount"])
    return {"dataColumn": typed}


def streamx(change: Change) -> list[bytes]:
    def message(op: str, before: dict | None, after: dict | None, ddl: dict | None = None) -> bytes:
        has_rows = op not in ("MHEARTBEAT",)
        return _json(
            {
                "schema": {
                    "dataColumn": STREAMX_TYPES if has_rows else None,
                    "primaryKey": ["id"] if has_rows else None,
                    "source": {"dbType": "MySQL", "dbName": "bench", "tableName": change.table} if has_rows else None,
                },
                "payload": {
                    "before": _streamx_image(before),
                    "after": _streamx_image(after),
                    "sequenceId": str(T0_MS * 1000 + change.seq),
                    "timestamp": {"eventTime": change.ts_ms, "systemTime": change.ts_ms + 5, "checkpointTime": -1},
                    "op": op,
                    "ddl": ddl,
                },
                "version": "1.0.0",
            }
        )

    if change.kind == "heartbeat":
        return [message("MHEARTBEAT", None, None)]
    if change.kind == "ddl":
        return [message("ALTER", None, None, {"text": f"ALTER TABLE `{change.table}` COMMENT 'seq {change.seq}'"})]
    if change.kind == "insert":
        return [message("INSERT", None, change.after)]
    if change.kind == "delete":
        return [message("DELETE", change.before, None)]
    after = {**change.before, **change.after}
    return [message("UPDATE_BEFOR", change.before, None), message("UPDATE_AFTER", None, after)]


def datahub_tuple(change: Change) -> list[bytes]:
    change = _row_change(change)

    def record(operation: str, image: dict, before_flag: str, after_flag: str) -> bytes:
        meta = {
            "_sequence_id_": str(T0_MS * 1000 + change.seq),
            "_operation_type_": operation,
            "_execute_time_": change.ts_ms,
            "_source_table_": change.table,
            "_before_image_": before_flag,
            "_after_image_": after_flag,
        }
        return _json({**meta, **image, "id": int(image["id"])})

    if change.kind == "insert":
        return [record("I", change.after, "N", "Y")]
    if change.kind == "delete":
        return [record("D", change.before, "Y", "N")]
    after = {**change.before, **change.after}
    return [record("U", change.before, "Y", "N"), record("U", after, "N", "Y")]


def mongo(change: Change) -> list[bytes]:
    change = _row_change(change)
    object_id = f'ObjectId("{int(change.table[1:]):08x}{int((change.before or change.after)["id"]):016x}")'

    def shell(row: dict) -> str:
        fields = [f'"_id": {object_id}', f'"name": {json.dumps(row["name"], ensure_ascii=False)}']
        if "amount" in row:
            fields.append(f'"amount": NumberDecimal("{row["amount"]}")')
        fields.append(f'"updated": ISODate("2026-03-02T08:00:00Z"), "n": NumberLong({change.seq})')
        return "{" + ", ".join(fields) + "}"

    operation, record_type, value, where = {
        "insert": ("INSERT", "insert", lambda: shell(change.after), lambda: None),
        "update": ("UPDATE", "replace", lambda: shell(change.after), lambda: f'{{"_id": {object_id}}}'),
        "partial_update": (
            "UPDATE",
            "update",
            lambda: f'{{"$set": {{"amount": NumberDecimal("{change.after["amount"]}")}}}}',
            lambda: f'{{"_id": {object_id}}}',
        ),
        "delete": ("DELETE", "doc", lambda: shell(change.before), lambda: f'{{"_id": {object_id}}}'),
    }[change.kind]
    document = {
        "id": change.seq,
        "op": operation,
        "dbType": "MongoDB",
        "db": "bench",
        "coll": change.table,
        "value": value(),
        "where": where(),
        "recordType": record_type,
        "extra": record_type,
        "es": change.ts_ms,
        "ts": change.ts_ms + 100,
        "clusterTime": f"{change.ts_ms // 1000}:{change.seq % 1000 + 1}",
    }
    return [_json(document)]


def _row_change(change: Change) -> Change:
    """Formats without DDL or heartbeat messages get an insert of a filler row in that slot."""
    if change.kind not in ("ddl", "heartbeat"):
        return change
    filler = {"id": str(10**9 + change.seq), "name": "filler", "amount": "0.00", "updated": "2026-03-02 08:00:00"}
    return Change("insert", change.table, change.seq, change.ts_ms, after=filler)


def dts(change: Change, rng: random.Random) -> list[bytes]:
    from python_udfs.proto import tencent_dts_subscribe_pb2 as pb

    entry = pb.Entry()
    header = entry.header
    header.sourceType = pb.MYSQL
    header.timestamp = change.ts_ms // 1000
    header.fileName = "mysql-bin.000031"
    header.position = 4 + change.seq * 190
    header.seqId = change.seq
    header.serverId = 1
    header.schemaName = "bench"
    header.tableName = change.table
    if change.kind == "heartbeat":
        header.messageType = pb.HEARTBEAT
        entry.event.heartbeatEvent.epoch = change.ts_ms // 1000
    elif change.kind == "ddl":
        header.messageType = pb.DDL
        entry.event.ddlEvent.schemaName = "bench"
        entry.event.ddlEvent.sql = f"ALTER TABLE `{change.table}` COMMENT 'seq {change.seq}'"
    else:
        header.messageType = pb.DML
        dml = entry.event.dmlEvent
        dml.dmlEventType = {"insert": pb.INSERT, "delete": pb.DELETE}.get(change.kind, pb.UPDATE)
        for name, mysql_type in MYSQL_TYPES.items():
            dml.columns.add(name=name, originalType=mysql_type, isKey=name == "id")
        row = dml.rows.add()
        for image, target in ((change.before, row.oldColumns), (change.after, row.newColumns)):
            if image is None:
                continue
            for name in MYSQL_TYPES:
                if name not in image:
                    target.add(dataType=pb.NA)
                elif name in ("name", "updated"):
                    target.add(dataType=pb.STRING, charset="utf8mb4", bv=image[name].encode())
                else:
                    target.add(dataType=pb.INT32 if name == "id" else pb.DECIMAL, sv=image[name])
    data = pb.Entries(items=[entry]).SerializeToString()
    parts = 2 if rng.random() < 0.05 else 1
    size = -(-len(data) // parts)
    return [
        pb.Envelope(version=1, total=parts, index=i, data=data[i * size : (i + 1) * size]).SerializeToString()
        for i in range(parts)
    ]


def drs_avro(change: Change, schema: dict) -> list[bytes]:
    """The DRS JSON record of the change, written as one schemaless Avro record."""
    import fastavro

    (message,) = drs_mysql_form(change, deleted_rows_in="old")
    record = json.loads(message)
    # The writer schema's mysqlType carries bare type names, as DRS JSON's examples do.
    record["mysqlType"] = {k: v.split("(")[0] for k, v in (record["mysqlType"] or {}).items()} or None
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, schema, record)
    return [buffer.getvalue()]


def renderers(rng: random.Random) -> dict[str, Callable[[Change], list[bytes]]]:
    import fastavro

    avro_schema = fastavro.parse_schema(json.loads(DRS_AVRO_SCHEMA.read_text()))
    return {
        "huawei_drs_json": lambda change: drs_mysql_form(change, deleted_rows_in="old"),
        "huawei_drs_jsonc": lambda change: drs_mysql_form(change, deleted_rows_in="data"),
        "canal_json": lambda change: drs_mysql_form(change, deleted_rows_in="data"),
        "kafkariver_json": kafkariver,
        "aliyun_streamx_json": streamx,
        "aliyun_datahub_tuple": datahub_tuple,
        "huawei_drs_mongo_json": mongo,
        "tencent_dts_protobuf": lambda change: dts(change, rng),
        "huawei_drs_avro": lambda change: drs_avro(change, avro_schema),
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
