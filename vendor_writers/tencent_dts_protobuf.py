"""Tencent Cloud DTS data subscription (Protobuf, ../shared/formats/tencent_dts_subscribe.proto): entries with
a header (seqId increasing per entry, binlog file and position, GTID), a transaction as BEGIN, DML entries
of one table and operation, COMMIT; serialized as one Entries, then cut into Envelopes (index of total) when
it is large.

Values are typed by the column's MySQL type: integers as their DTS integer type in `sv`, decimals as DECIMAL
in `sv`, anything else as STRING bytes in the column's charset (Table.charsets, default utf8mb4); NULL is NIL,
and a column a partial image does not carry is NA.
"""

from collections.abc import Sequence

from python_udfs.proto import tencent_dts_subscribe_pb2 as pb
from vendor_writers import DELETE, INSERT, Change, Table

PYTHON_CODECS = {"utf8": "utf-8", "utf8mb4": "utf-8"}
DML_TYPES = {INSERT: pb.INSERT, "UPDATE": pb.UPDATE, DELETE: pb.DELETE}


class DtsWriter:
    """Entries of one MySQL database as DTS writes them. Each entry takes the next seqId and binlog position;
    its header's timestamp is `clock_s` (seconds), which a DML entry moves to its changes' commit time."""

    def __init__(
        self, database: str, seq_id: int = 5000, clock_s: int = 0, server_id: int = 1013306, position: int = 4
    ) -> None:
        self.database = database
        self.seq_id = seq_id
        self.clock_s = clock_s
        self.server_id = server_id
        self.position = position

    def entry(self, message_type: int, table: str = "") -> pb.Entry:
        self.seq_id += 1
        self.position += 187
        entry = pb.Entry()
        header = entry.header
        header.version = 1
        header.sourceType = pb.MYSQL
        header.messageType = message_type
        header.timestamp = self.clock_s
        header.serverId = self.server_id
        header.fileName = "mysql-bin.000031"
        header.position = self.position
        header.gtid = f"5a3c2e1f-11ee-4c3b-9d9d-5b0e8f8a7c21:{self.seq_id}"
        header.schemaName = self.database
        header.tableName = table
        header.seqId = self.seq_id
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

    def dml(self, changes: Sequence[Change]) -> pb.Entry:
        """One DML entry: changes of one table and operation, a row each (old and new images)."""
        table = changes[0].table
        self.clock_s = changes[0].at_ms // 1000
        entry = self.entry(pb.DML, table.name)
        dml = entry.event.dmlEvent
        dml.dmlEventType = DML_TYPES[changes[0].op]
        for name, mysql_type in table.types.items():
            dml.columns.add(name=name, originalType=mysql_type, isKey=name in table.keys)
        for change in changes:
            row = dml.rows.add()
            row.oldColumns.extend(image(table, change.before))
            row.newColumns.extend(image(table, change.after))
        return entry

    def ddl(self, table: str, sql: str) -> pb.Entry:
        entry = self.entry(pb.DDL, table)
        entry.event.ddlEvent.schemaName = self.database
        entry.event.ddlEvent.sql = sql
        return entry

    def heartbeat(self) -> pb.Entry:
        entry = self.entry(pb.HEARTBEAT)
        entry.event.heartbeatEvent.epoch = self.clock_s
        return entry

    def checkpoint(self, synced_gtid: str) -> pb.Entry:
        entry = self.entry(pb.CHECKPOINT)
        entry.event.checkpointEvent.syncedGtid = synced_gtid
        entry.event.checkpointEvent.fileName = "mysql-bin.000031"
        entry.event.checkpointEvent.position = self.position
        return entry


def image(table: Table, row: dict | None) -> list[pb.Data]:
    """A row image in column order; none for an absent image (an insert's old, a delete's new)."""
    if row is None:
        return []
    return [value(table, name, row[name]) if name in row else pb.Data(dataType=pb.NA) for name in table.columns]


def value(table: Table, column: str, text: str | None) -> pb.Data:
    mysql_type = table.types[column].lower()
    if text is None:
        return pb.Data(dataType=pb.NIL)
    if mysql_type.startswith("bigint"):
        return pb.Data(dataType=pb.UINT64 if "unsigned" in mysql_type else pb.INT64, sv=text)
    if mysql_type.startswith("int"):
        return pb.Data(dataType=pb.UINT32 if "unsigned" in mysql_type else pb.INT32, sv=text)
    if mysql_type.startswith("decimal"):
        return pb.Data(dataType=pb.DECIMAL, sv=text)
    charset = table.charsets.get(column, "utf8mb4")
    return pb.Data(dataType=pb.STRING, charset=charset, bv=text.encode(PYTHON_CODECS.get(charset, charset)))


def entries(items: Sequence[pb.Entry]) -> bytes:
    return pb.Entries(items=items).SerializeToString()


def envelope(data: bytes, total: int = 1, index: int = 0) -> bytes:
    return pb.Envelope(version=1, total=total, index=index, data=data).SerializeToString()


def envelopes(data: bytes, parts: int = 1) -> list[bytes]:
    """Serialized Entries as DTS sends it: one Envelope, or `parts` Envelopes of consecutive slices."""
    size = -(-len(data) // parts)
    return [envelope(data[i * size : (i + 1) * size], parts, i) for i in range(parts)]
