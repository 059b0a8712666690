"""Property test: cdc_history and cdc_current equal the truth of a generated change stream, in four formats.

A generator draws a change stream over a few keys of one or two tables (inserts of absent keys, full
updates, partial updates where the format has them, key changes, deletes, re-inserts) and keeps its own
truth: every version of every key (the row as the history stores it, column -> text; valid_from = the
event time the vendor wrote, valid_to = the next version's; is_deleted; op; previous_pk) and the final
state. The stream is rendered as the vendor writes it, landed in random batches (each followed by a dbt
run, which reads the landing commits since the previous run), in any order the vendor's ordering allows,
with copies of some messages landed again later at new offsets, and the history is compared with the
truth, key by key and version by version. Nothing of the expected history comes from running the pipeline.

- huawei_drs_json: one row per message, `id` increasing; messages over 1-3 partitions, landed in any order.
- canal_json: multi-row FlatMessages, several sharing a batch id, ids restarting from 1 after a Canal
  restart; split over partitions by partitionHash (the key's hash, as Canal's MQMessageUtils computes it,
  or the table's) and landed in produced order within each partition, partitions interleaved.
- tencent_dts_protobuf: one Entries per transaction (BEGIN, DML entries of one or more rows, COMMIT),
  `seqId` increasing, sometimes split over several Envelopes; groups routed to 1-3 partitions, parts landed
  in order within their partition (with offset gaps), partitions interleaved.
- aliyun_streamx_json: an update is an UPDATE_BEFOR and an UPDATE_AFTER message with one sequenceId (or,
  per stream, one UPDATE_AFTER record carrying both images); messages routed by key, landed in any order.

Where the models cannot tell two changes apart, the generator does not write them: Canal key changes stay
within one partition when the partitions hash the key (across partitions Canal gives no order), and a
Canal change identical to an earlier one at the same batch id, row and execution time (es) starts a new
batch instead (the models take it for a redelivery: the README's "Redeliveries" names this case). A
re-insert after a Canal restart, at a reused batch id but a later es, is written and must be kept.

Every example lands at least two batches (a first build, then incremental runs) and one copy. make test-slow
runs one example per format (HISTORY_EXAMPLES, default 1; derandomized), which is Hypothesis's simplest
draw: the choices are ordered so that it follows TOUR (two inserts, a key change, a partial update, a
re-insert, ...) with rotating options (partitions, clock steps, splits, interleaving).
"""

import json
import os
import zlib
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, NamedTuple

import pytest
from conftest import dts_envelope, dts_split
from history_project import SCHEMA, project_in_schema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.slow

T0 = datetime(2024, 3, 1, 8, 0, 0)
DATABASE = "shop"
# Table -> columns; `id` is the primary key.
TABLES = {"items": ("id", "a", "b"), "notes": ("id", "a")}
KEYS = ("1", "2", "3")
VALUES = ("x", None, "y", "", "ü")
# Seconds between consecutive source commits: ties give zero-length versions; -1, a clock running back
# (every one of the four formats orders by its sequence, not by time).
CLOCK_STEPS = (1, 0, 2, -1)
MAX_CHANGES = 16
# Offset gaps between landed messages of a partition (transaction markers, compaction). Tencent DTS
# reassembly places parts by rank, not by offset arithmetic, so gaps inside a split group are allowed.
DTS_OFFSET_GAPS = True


# ---------------------------------------------------------------------------------------------- drawing


def rotated(options: Sequence, turn: int) -> list:
    """The options starting at position `turn`: the simplest draw of `pick` changes with the turn."""
    options = list(options)
    start = turn % len(options)
    return [*options[start:], *options[:start]]


def pick(draw, options: Sequence, turn: int = 0):
    return draw(st.sampled_from(rotated(options, turn)))


def middle_index(draw, size: int) -> int:
    """An index below size whose simplest draw is the middle one."""
    return (draw(st.integers(0, size - 1)) + size // 2) % size


# ------------------------------------------------------------------------------------ changes and truth


@dataclass(frozen=True)
class Change:
    """One row change at the source, with the full rows before and after it."""

    table: str
    op: str  # 'c' insert, 'u' update (a key change when the keys differ), 'd' delete
    before: dict | None
    after: dict | None
    # The columns the update's after image carries: all of them unless the update is partial.
    image: tuple[str, ...] = ()
    time: int = 0  # seconds after T0, set when the vendor writes the change

    @property
    def key(self) -> str:
        return (self.before or self.after)["id"]

    @property
    def new_key(self) -> str:
        return (self.after or self.before)["id"]

    @property
    def after_image(self) -> dict | None:
        if self.after is None:
            return None
        return {column: self.after[column] for column in self.image or TABLES[self.table]}

    @property
    def keys(self) -> set[str]:
        return {self.key, self.new_key}

    def __str__(self) -> str:
        keys = self.key if self.key == self.new_key else f"{self.key}->{self.new_key}"
        shown = self.after_image if self.op != "d" else self.before
        partial = " partial" if self.image and self.image != TABLES[self.table] else ""
        return f"t={self.time} {self.table} {self.op}{partial} {keys} {shown}"


def pk_text(key: str) -> str:
    return json.dumps([key])


class Version(NamedTuple):
    previous_pk: str | None
    row: dict
    valid_from: datetime
    valid_to: datetime | None
    is_current: bool
    is_deleted: bool
    op: str


Chains = dict[tuple[str, str], list[Version]]


def at(seconds: int) -> datetime:
    return T0 + timedelta(seconds=seconds)


def epoch_ms(seconds: int) -> int:
    return int(at(seconds).timestamp() * 1000)


def true_history(changes: list[Change]) -> Chains:
    """Every version of every (table, pk) the stream writes, in source order."""
    starts: dict[tuple[str, str], list[tuple]] = defaultdict(list)
    for change in changes:
        key = (change.table, pk_text(change.key))
        if change.op == "c":
            starts[key].append((None, change.after, at(change.time), False, "c"))
        elif change.op == "d":
            starts[key].append((None, change.before, at(change.time), True, "d"))
        elif change.new_key == change.key:
            starts[key].append((None, change.after, at(change.time), False, "u"))
        else:
            # A key change closes the old key with its last row and opens the new key.
            starts[key].append((None, change.before, at(change.time), True, "u"))
            new_key = (change.table, pk_text(change.new_key))
            starts[new_key].append((pk_text(change.key), change.after, at(change.time), False, "u"))
    chains: Chains = {}
    for key, versions in starts.items():
        chains[key] = [
            Version(previous, row, start, following[2] if following else None, following is None, deleted, op)
            for (previous, row, start, deleted, op), following in zip(versions, [*versions[1:], None], strict=True)
        ]
    return chains


def true_current(changes: list[Change]) -> dict[tuple[str, str], dict]:
    rows: dict[tuple[str, str], dict] = {}
    for change in changes:
        rows.pop((change.table, pk_text(change.key)), None)
        if change.after is not None:
            rows[(change.table, pk_text(change.new_key))] = change.after
    return rows


def always(table: str, old_key: str, new_key: str) -> bool:
    return True


# The simplest stream (make test-slow's one example): (table, key, action) of each change, as far as it fits.
TOUR = (
    ("items", "1", "insert"),
    ("items", "2", "insert"),
    ("items", "1", "rekey"),
    ("items", "2", "partial"),
    ("items", "1", "insert"),
    ("notes", "1", "insert"),
    ("items", "3", "delete"),
    ("notes", "1", "rekey"),
    ("items", "2", "update"),
    ("items", "1", "delete"),
    ("notes", "2", "update"),
    ("items", "1", "insert"),
)


def prefer(draw, options: Sequence, wanted):
    """One of the options, whose simplest draw is `wanted` when it is one of them (else the first)."""
    options = list(options)
    if wanted in options:
        options.remove(wanted)
        options.insert(0, wanted)
    return draw(st.sampled_from(options))


@st.composite
def change_streams(draw, partial_updates: bool, may_change_key: Callable[[str, str, str], bool]) -> list[Change]:
    """A valid change stream: inserts of absent keys, full or partial updates, key changes to absent keys,
    deletes and re-inserts; every update changes at least one value."""
    tables = pick(draw, [tuple(TABLES), tuple(TABLES)[:1]])
    live: dict[tuple[str, str], dict] = {}
    changes: list[Change] = []

    def values(columns: Sequence[str], turn: int) -> dict:
        return {column: pick(draw, VALUES, turn + position) for position, column in enumerate(columns)}

    for turn in range(draw(st.integers(len(TOUR), MAX_CHANGES))):
        tour_table, tour_key, tour_action = TOUR[turn % len(TOUR)]
        table = prefer(draw, tables, tour_table)
        columns = TABLES[table]
        data_columns = columns[1:]
        key = prefer(draw, KEYS, tour_key)
        if (table, key) not in live:
            live[(table, key)] = {"id": key, **values(data_columns, turn)}
            changes.append(Change(table, "c", None, live[(table, key)]))
            continue
        before = live.pop((table, key))
        absent = [other for other in KEYS if (table, other) not in live and other != key]
        targets = [other for other in absent if may_change_key(table, key, other)]
        actions = ["update", "delete", *(["partial"] if partial_updates else []), *(["rekey"] if targets else [])]
        action = prefer(draw, actions, tour_action)
        if action == "delete":
            changes.append(Change(table, "d", before, None))
            continue
        new_key = draw(st.sampled_from(targets)) if action == "rekey" else key
        after = {"id": new_key, **values(data_columns, turn + 1)}
        if action == "partial":
            # One column changes; the image carries it (and maybe other columns and the key).
            column = pick(draw, data_columns, turn)
            after = {**before, column: pick(draw, [value for value in VALUES if value != before[column]], turn)}
        if after == before:
            column = data_columns[turn % len(data_columns)]
            after[column] = next(value for value in VALUES if value != before[column])
        image = columns
        if action == "partial" or (action == "rekey" and partial_updates and pick(draw, [True, False], turn)):
            # The changed columns, maybe some unchanged ones, the key when it changes or when drawn.
            image = tuple(
                column
                for column in columns
                if after[column] != before[column]
                or pick(draw, [False, True], turn + len(column))
                or (column == "id" and action == "rekey")
            )
        live[(table, new_key)] = after
        changes.append(Change(table, "u", before, after, image))
    return changes


# ---------------------------------------------------------------------------------------- vendor shapes


@dataclass(frozen=True)
class Unit:
    """Messages the vendor writes one after the other to one partition (the parts of a split group)."""

    partition: int
    parts: tuple[bytes, ...]
    label: str


@dataclass(frozen=True)
class Rendering:
    changes: list[Change]  # with the times the vendor wrote
    units: list[Unit]  # in produced order
    partitions: int
    # True: each partition must land in produced order (the vendor's order is the offset order, or the
    # parts of a group must follow each other); False: the vendor's sequence orders, any order lands.
    keep_partition_order: bool
    offset_gaps: bool


def clock(draw, time: int, turn: int) -> int:
    return time + pick(draw, CLOCK_STEPS, turn)


def stable_partition(table: str, key: str, partitions: int) -> int:
    return zlib.crc32(f"{table}/{key}".encode()) % partitions


DRS_MYSQL_TYPES = {"id": "int", "a": "varchar", "b": "varchar"}
DRS_JDBC_TYPES = {"id": 4, "a": 12, "b": 12}
VENDOR_OPERATIONS = {"c": "INSERT", "u": "UPDATE", "d": "DELETE"}


@st.composite
def huawei_drs_json(draw) -> Rendering:
    partitions = pick(draw, [2, 3, 1])
    changes = draw(change_streams(partial_updates=True, may_change_key=always))
    timed, units = [], []
    time, drs_id = 0, 27_000
    for turn, change in enumerate(changes):
        time = clock(draw, time, turn)
        drs_id += pick(draw, [1, 3], turn)  # DRS numbers the events of other tables too
        change = replace(change, time=time)
        columns = TABLES[change.table]
        message = {
            "id": drs_id,
            "es": epoch_ms(time),
            "ts": epoch_ms(time) + 40,
            "database": DATABASE,
            "table": change.table,
            "type": VENDOR_OPERATIONS[change.op],
            "isDdl": False,
            "sql": "",
            "pkNames": ["id"],
            "mysqlType": {column: DRS_MYSQL_TYPES[column] for column in columns},
            "sqlType": {column: DRS_JDBC_TYPES[column] for column in columns},
            "data": None if change.op == "d" else [change.after_image],
            "old": None if change.op == "c" else [change.before],
        }
        partition = pick(draw, range(partitions), turn)
        units.append(Unit(partition, (json.dumps(message).encode(),), f"id {drs_id}: {change}"))
        timed.append(change)
    return Rendering(timed, units, partitions, keep_partition_order=False, offset_gaps=True)


def java_string_hash(text: str) -> int:
    value = 0
    for character in text:
        value = (31 * value + ord(character)) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def canal_partition(table: str, row: dict, partitions: int, by_table: bool) -> int:
    """Canal's partitionHash (MQMessageUtils.messagePartition): the table's hash, or the database's hash
    XOR the hashes of the row's key values, as Java computes them, modulo the partition count."""
    code = java_string_hash(table) if by_table else java_string_hash(DATABASE) ^ java_string_hash(row["id"] or "")
    return abs(abs(code) % partitions)


CANAL_MYSQL_TYPES = {"id": "int(11)", "a": "varchar(20)", "b": "varchar(20)"}


@st.composite
def canal_json(draw) -> Rendering:
    partitions = pick(draw, [2, 3, 1])
    by_table = pick(draw, [False, True])

    def partition(table: str, key: str) -> int:
        return canal_partition(table, {"id": key}, partitions, by_table)

    def same_partition(table: str, old_key: str, new_key: str) -> bool:
        return partition(table, old_key) == partition(table, new_key)

    changes = draw(change_streams(partial_updates=False, may_change_key=same_partition))
    # One binlog rows event: consecutive changes of one table and operation on distinct keys.
    statements: list[list[Change]] = []
    for change in changes:
        last = statements[-1] if statements else []
        if (
            last
            and (last[0].table, last[0].op) == (change.table, change.op)
            and not set().union(*(row.keys for row in last)) & change.keys
            and draw(st.sampled_from([True, False]))
        ):
            last.append(change)
        else:
            statements.append([change])
    # The first statement after a Canal restart (the end: no restart), by default the middle one.
    restart_at = 1 + middle_index(draw, len(statements))
    timed, units = [], []
    time, batch_id, seen = 0, 1, set()
    for index, statement in enumerate(statements):
        time = clock(draw, time, index)
        if index == restart_at:
            batch_id = 1
        elif index > 0 and pick(draw, [False, True], index):
            batch_id += 1
        columns = TABLES[statement[0].table]
        rows = [
            (
                change.before if change.op == "d" else change.after,
                # An update's old holds the changed columns with their old values (JSON null: was NULL).
                {column: change.before[column] for column in columns if change.before[column] != change.after[column]}
                if change.op == "u"
                else None,
            )
            for change in statement
        ]
        by_partition: dict[int, list[tuple]] = defaultdict(list)
        for data, old in rows:
            by_partition[canal_partition(statement[0].table, data, partitions, by_table)].append((data, old))

        # What identifies a Canal row change, but for the batch id: table, operation, row, es, images.
        contents = [
            (statement[0].table, statement[0].op, row_index, time, json.dumps(data), json.dumps(old))
            for partition_rows in by_partition.values()
            for row_index, (data, old) in enumerate(partition_rows)
        ]
        while any((batch_id, *content) in seen for content in contents):
            batch_id += 1  # an identical change at the same batch id and row would be taken for a copy
        seen.update((batch_id, *content) for content in contents)
        for partition_number in sorted(by_partition):
            partition_rows = by_partition[partition_number]
            message = {
                "data": [data for data, _ in partition_rows],
                "database": DATABASE,
                "es": epoch_ms(time),
                "id": batch_id,
                "isDdl": False,
                "mysqlType": {column: CANAL_MYSQL_TYPES[column] for column in columns},
                "old": [old for _, old in partition_rows] if statement[0].op == "u" else None,
                "pkNames": ["id"],
                "sql": "",
                "sqlType": {column: DRS_JDBC_TYPES[column] for column in columns},
                "table": statement[0].table,
                "ts": epoch_ms(time) + 7,
                "type": VENDOR_OPERATIONS[statement[0].op],
            }
            label = f"batch {batch_id}: {VENDOR_OPERATIONS[statement[0].op]} {statement[0].table} {message['data']}"
            if message["old"]:
                label += f" old {message['old']}"
            units.append(Unit(partition_number, (json.dumps(message).encode(),), label))
        timed.extend(replace(change, time=time) for change in statement)
    return Rendering(timed, units, partitions, keep_partition_order=True, offset_gaps=True)


DTS_COLUMN_TYPES = {"id": "int(11)", "a": "varchar(20)", "b": "varchar(20)"}


def dts_image(columns: Sequence[str], row: dict | None, present: Sequence[str]) -> list:
    from python_udfs.proto import tencent_dts_subscribe_pb2 as pb

    if row is None:
        return []
    image = []
    for column in columns:
        if column not in present:
            image.append(pb.Data(dataType=pb.NA))
        elif column == "id":
            image.append(pb.Data(dataType=pb.INT32, sv=row[column]))
        elif row[column] is None:
            image.append(pb.Data(dataType=pb.NIL))
        else:
            image.append(pb.Data(dataType=pb.STRING, charset="utf8mb4", bv=row[column].encode()))
    return image


class DtsWriter:
    """Entries of the `shop` database as DTS writes them: a header with an increasing seqId per entry."""

    def __init__(self) -> None:
        self.time = 0
        self.seq_id = 5_000
        self.position = 4
        self.items: list = []

    def entry(self, message_type: int, table: str = "") -> Any:
        from python_udfs.proto import tencent_dts_subscribe_pb2 as pb

        self.seq_id += 1
        self.position += 187
        item = pb.Entry()
        header = item.header
        header.version = 1
        header.sourceType = pb.MYSQL
        header.messageType = message_type
        header.timestamp = int(at(self.time).timestamp())
        header.serverId = 1013306
        header.fileName = "mysql-bin.000031"
        header.position = self.position
        header.gtid = f"5a3c2e1f-11ee-4c3b-9d9d-5b0e8f8a7c21:{self.seq_id}"
        header.schemaName = DATABASE
        header.tableName = table
        header.seqId = self.seq_id
        self.items.append(item)
        return item


@st.composite
def tencent_dts_protobuf(draw) -> Rendering:
    from python_udfs.proto import tencent_dts_subscribe_pb2 as pb

    partitions = pick(draw, [2, 3, 1])
    changes = draw(change_streams(partial_updates=True, may_change_key=always))
    # Transactions of DML entries; an entry holds consecutive rows of one table and type on distinct keys.
    transactions: list[list[list[Change]]] = []
    for turn, change in enumerate(changes):
        if not transactions or pick(draw, [False, True], turn + 1):
            transactions.append([[change]])
            continue
        entry = transactions[-1][-1]
        if (
            (entry[0].table, entry[0].op) == (change.table, change.op)
            and not set().union(*(row.keys for row in entry)) & change.keys
            and draw(st.sampled_from([True, False]))
        ):
            entry.append(change)
        else:
            transactions[-1].append([change])
    timed, units = [], []
    writer = DtsWriter()
    dml_types = {"c": pb.INSERT, "u": pb.UPDATE, "d": pb.DELETE}
    for index, transaction in enumerate(transactions):
        writer.time = clock(draw, writer.time, index)
        writer.items = []
        writer.entry(pb.BEGIN).event.beginEvent.transactionId = f"tx-{index}"
        labels = []
        for rows in transaction:
            table, op = rows[0].table, rows[0].op
            columns = TABLES[table]
            dml = writer.entry(pb.DML, table).event.dmlEvent
            dml.dmlEventType = dml_types[op]
            for column in columns:
                dml.columns.add(name=column, originalType=DTS_COLUMN_TYPES[column], isKey=column == "id")
            for change in rows:
                row = dml.rows.add()
                row.oldColumns.extend(dts_image(columns, change.before, columns))
                row.newColumns.extend(dts_image(columns, change.after, change.image or columns))
                labels.append(f"seq {writer.seq_id}: {replace(change, time=writer.time)}")
        writer.entry(pb.COMMIT).event.commitEvent.transactionId = f"tx-{index}"
        data = pb.Entries(items=writer.items).SerializeToString()
        total = pick(draw, [1, 2, 3], index)
        parts = tuple(dts_split(data, total)) if total > 1 else (dts_envelope(data),)
        partition = pick(draw, range(partitions), index)
        units.append(Unit(partition, parts, f"{total} part(s): " + "; ".join(labels)))
        timed.extend(replace(change, time=writer.time) for rows in transaction for change in rows)
    return Rendering(timed, units, partitions, keep_partition_order=True, offset_gaps=DTS_OFFSET_GAPS)


def streamx_message(change: Change, op: str, sequence_id: int, before: dict | None, after: dict | None) -> bytes:
    columns = TABLES[change.table]

    def image(row: dict | None) -> dict | None:
        if row is None:
            return None
        return {"dataColumn": {column: int(row[column]) if column == "id" else row[column] for column in columns}}

    return json.dumps(
        {
            "schema": {
                "dataColumn": [{"name": column, "type": "LONG" if column == "id" else "STRING"} for column in columns],
                "primaryKey": ["id"],
                "source": {"dbType": "MySQL", "dbName": DATABASE, "tableName": change.table},
            },
            "payload": {
                "before": image(before),
                "after": image(after),
                "sequenceId": str(sequence_id),
                "timestamp": {
                    "eventTime": epoch_ms(change.time),
                    "systemTime": epoch_ms(change.time) + 500,
                    "checkpointTime": epoch_ms(change.time),
                },
                "op": op,
                "ddl": None,
            },
            "version": "0.0.1",
        }
    ).encode()


@st.composite
def aliyun_streamx_json(draw) -> Rendering:
    partitions = pick(draw, [2, 3, 1])
    # The task option "update as one Kafka record": one UPDATE_AFTER carrying both images.
    one_record_updates = pick(draw, [False, True])
    changes = draw(change_streams(partial_updates=False, may_change_key=always))
    timed, units = [], []
    time, sequence_id = 0, 1_709_280_000_000_000_000
    for turn, change in enumerate(changes):
        time = clock(draw, time, turn)
        sequence_id += pick(draw, [1, 2], turn)
        change = replace(change, time=time)
        if change.op == "c":
            messages = [("INSERT", None, change.after, change.key)]
        elif change.op == "d":
            messages = [("DELETE", change.before, None, change.key)]
        elif one_record_updates:
            messages = [("UPDATE_AFTER", change.before, change.after, change.new_key)]
        else:
            messages = [
                ("UPDATE_BEFOR", change.before, None, change.key),
                ("UPDATE_AFTER", None, change.after, change.new_key),
            ]
        for op, before, after, key in messages:
            # StreamX shards by primary key: each half goes to its own image's key's partition.
            partition = stable_partition(change.table, key, partitions)
            value = streamx_message(change, op, sequence_id, before, after)
            units.append(Unit(partition, (value,), f"seq {sequence_id} {op}: {change}"))
        timed.append(change)
    return Rendering(timed, units, partitions, keep_partition_order=False, offset_gaps=True)


FORMATS = {
    "huawei_drs_json": huawei_drs_json,
    "canal_json": canal_json,
    "tencent_dts_protobuf": tencent_dts_protobuf,
    "aliyun_streamx_json": aliyun_streamx_json,
}


# ---------------------------------------------------------------------------------------------- landing


@dataclass(frozen=True)
class Delivery:
    partition: int
    offset: int
    value: bytes
    label: str


@dataclass(frozen=True)
class Case:
    rendering: Rendering
    batches: list[list[Delivery]]

    def __repr__(self) -> str:
        lines = ["changes (source order, with the times written):"]
        lines += [f"  {change}" for change in self.rendering.changes]
        for number, batch in enumerate(self.batches, 1):
            lines.append(f"batch {number} (then a dbt run):")
            lines += [f"  p{d.partition}@{d.offset} {d.label}" for d in batch]
        return "\n".join(lines)


@st.composite
def cases(draw, source_format: str) -> Case:
    rendering = draw(FORMATS[source_format]())
    units = [(unit, "") for unit in rendering.units]
    # Redeliveries: copies of some units landed again later, in their partition, at new offsets.
    copied = draw(st.lists(st.integers(0, len(units) - 1), min_size=1, max_size=2))
    if rendering.keep_partition_order:
        queues: dict[int, list[tuple[Unit, str]]] = defaultdict(list)
        for unit in units:
            queues[unit[0].partition].append(unit)
        for original in copied:
            queue = queues[units[original][0].partition]
            later = len(queue) - queue.index(units[original])  # boundaries after the original
            queue.insert(len(queue) - draw(st.integers(0, later - 1)), (units[original][0], " (copy)"))
        part_queues = {
            partition: [(unit, part, copy) for unit, copy in queue for part in unit.parts]
            for partition, queue in queues.items()
        }
        landing = []
        for step in range(sum(len(queue) for queue in part_queues.values())):
            partition = pick(draw, [p for p in sorted(part_queues) if part_queues[p]], step)
            landing.append(part_queues[partition].pop(0))
    else:
        remaining, order = list(units), []
        while remaining:
            order.append(remaining.pop(middle_index(draw, len(remaining))))
        for original in copied:
            after = order.index(units[original]) + 1
            order.insert(len(order) - draw(st.integers(0, len(order) - after)), (units[original][0], " (copy)"))
        landing = [(unit, part, copy) for unit, copy in order for part in unit.parts]
    offsets: dict[int, int] = defaultdict(int)
    deliveries = []
    for index, (unit, part, copy) in enumerate(landing):
        gap = pick(draw, [0, 2, 0, 1], index) if rendering.offset_gaps else 0
        offset = offsets[unit.partition] + gap
        offsets[unit.partition] = offset + 1
        label = unit.label + copy + (f" [part {unit.parts.index(part)}]" if len(unit.parts) > 1 else "")
        deliveries.append(Delivery(unit.partition, offset, part, label))
    cut_count = len(deliveries) - 1
    cuts = draw(st.lists(st.integers(0, cut_count - 1), min_size=1, max_size=2, unique=True))
    bounds = sorted({(cut + cut_count // 2) % cut_count + 1 for cut in cuts})
    batches = [deliveries[start:end] for start, end in zip([0, *bounds], [*bounds, len(deliveries)], strict=True)]
    return Case(rendering, batches)


# ------------------------------------------------------------------------------------------------ tests


@pytest.fixture(scope="module")
def project(spark, tmp_path_factory):
    yield from project_in_schema(spark, tmp_path_factory)


def stored_history(spark) -> Chains:
    rows = (
        spark.table(f"{SCHEMA}.cdc_history")
        .select(
            "source_table",
            "pk",
            "previous_pk",
            "row",
            "valid_from",
            "valid_to",
            "is_current",
            "is_deleted",
            "op",
            "event_order",
            "event_id",
        )
        .collect()
    )
    chains: Chains = defaultdict(list)
    for row in sorted(rows, key=lambda row: ([*row.event_order], row.event_id)):
        chains[(row.source_table, row.pk)].append(
            Version(row.previous_pk, row.row, row.valid_from, row.valid_to, row.is_current, row.is_deleted, row.op)
        )
    return dict(chains)


def stored_current(spark) -> dict[tuple[str, str], dict]:
    rows = spark.table(f"{SCHEMA}.cdc_current").select("source_table", "pk", "row").collect()
    return {(row.source_table, row.pk): row.row for row in rows}


def differences(expected: Chains, stored: Chains) -> str:
    lines = []
    for key in sorted({*expected, *stored}):
        if expected.get(key) != stored.get(key):
            lines.append(f"{key}:")
            lines += [f"  expected {version}" for version in expected.get(key, [])]
            lines += [f"  stored   {version}" for version in stored.get(key, [])]
    return "\n".join(lines)


@pytest.mark.parametrize("source_format", list(FORMATS))
@settings(
    # One stream per format in make test-slow (each costs a few dbt runs); make test-history-property runs 20.
    max_examples=int(os.environ.get("HISTORY_EXAMPLES", "1")),
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.large_base_example],
)
@given(data=st.data())
def test_history_is_the_generated_truth(project, source_format, data):
    from cdc_lakehouse.landing import TopicMessages, land_topics

    case = data.draw(cases(source_format), label="case")
    topic = f"{source_format}.history_property"
    project.reset(source_format)
    for batch in case.batches:
        land_topics(
            project.spark,
            [TopicMessages(source_format, topic, d.partition, d.offset, [d.value]) for d in batch],
        )
        project.run()
    expected, stored = true_history(case.rendering.changes), stored_history(project.spark)
    assert stored == expected, f"cdc_history differs from the truth:\n{differences(expected, stored)}\n{case!r}"
    assert stored_current(project.spark) == true_current(case.rendering.changes), "cdc_current differs"
