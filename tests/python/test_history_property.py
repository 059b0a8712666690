"""Property test: cdc_history and cdc_current equal the truth of a generated change stream, in four formats.

A generator draws a change stream over a few keys of one or two tables (inserts of absent keys, full
updates, partial updates where the format has them, key changes, deletes, re-inserts, a column dropped by
DDL, the replication task re-created) and keeps its own truth: every version of every key (the row as the
history stores it, column -> text; valid_from = the event time the vendor wrote, valid_to = the next
version's; is_deleted; op; previous_pk) and the final state. The stream is rendered as the vendor writes it,
landed in random batches (each followed by a dbt run, which reads the landing commits since the previous
run; an example draws a stream of each format, and batch n of every format lands in one commit before the
nth run), in any order the vendor's ordering allows, with copies of some messages landed again later at new
offsets, and the history is compared with the truth, key by key and version by version. Nothing of the
expected history comes from running the pipeline.

- huawei_drs_json: one row per message, `id` increasing; messages over 1-3 partitions, landed in any order.
- canal_json: multi-row FlatMessages, several sharing a batch id, ids restarting from 1 after a Canal
  restart; split over partitions by partitionHash (the key's hash, as Canal's MQMessageUtils computes it,
  or the table's) and landed in produced order within each partition, partitions interleaved.
- tencent_dts_protobuf: one Entries per transaction (BEGIN, DML entries of one or more rows, COMMIT),
  `seqId` increasing, sometimes split over several Envelopes; groups routed to 1-3 partitions, parts landed
  in order within their partition (with offset gaps), partitions interleaved.
- aliyun_streamx_json: an update is an UPDATE_BEFOR and an UPDATE_AFTER message with one sequenceId (or,
  per stream, one UPDATE_AFTER record carrying both images); messages routed by key, landed in any order.

Images: after `ALTER TABLE items DROP COLUMN b`, whole images lack b and so does every version made from then
on; the partial images of DRS and DTS (columns the message's schema lists, missing from the image) keep the
other columns, b no more. A re-created task writes to a topic of its own, the source's task 2 (seed
cdc_sources), numbering anew. While no task ran, a live key may be deleted and another updated. DRS, Canal and
StreamX then send a full sync of every live key (INIT rows; StreamX's without a position or time) and, once
the run after the last batch finds it marked complete, the deleted key is closed where task 2 began; a DTS
subscription has no full sync and sends the changes made in between itself. Task 1's messages landed after
task 2's (copies included) still come first.

Where the models cannot tell two changes apart, the generator does not write them: Canal key changes stay
within one partition when the partitions hash the key (across partitions Canal gives no order), and a
Canal change identical to an earlier one at the same batch id, row and execution time (es) starts a new
batch instead (the models take it for a redelivery: the README's "Redeliveries" names this case). A
re-insert after a Canal restart, at a reused batch id but a later es, is written and must be kept. A StreamX
full-load record, which has no position, is not landed twice. A key is deleted while no task ran only when
another key of its table stays live: a full sync that sends nothing of a table says nothing of it.

Every example lands at least two batches (a first build, then incremental runs) and one copy. make test-slow
runs one example (HISTORY_EXAMPLES, default 1; derandomized: a stream per format), which is Hypothesis's simplest
draw: the choices are ordered so that it follows TOUR (two inserts, a key change, a partial update, a
re-insert, the drop, the re-creation, ...) with rotating options (partitions, clock steps, splits, interleaving).
"""

import json
import os
import zlib
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import NamedTuple

import pytest
from history_project import SCHEMA, project_in_schema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vendor_writers import DELETE, INIT, INSERT, UPDATE, Change, Table
from vendor_writers import aliyun_streamx_json as streamx_writer
from vendor_writers import canal_json as canal_writer
from vendor_writers import huawei_drs_json as drs_json_writer
from vendor_writers import tencent_dts_protobuf as dts_writer

pytestmark = pytest.mark.slow

T0 = datetime(2024, 3, 1, 8, 0, 0)
DATABASE = "shop"
# Table -> columns; `id` is the primary key.
TABLES = {"items": ("id", "a", "b"), "notes": ("id", "a")}
COLUMN_TYPES = {"id": "int(11)", "a": "varchar(20)", "b": "varchar(20)"}
JDBC_TYPES = {"id": 4, "a": 12, "b": 12}
SOURCE_TABLES = {
    name: Table(DATABASE, name, {c: COLUMN_TYPES[c] for c in columns}, {c: JDBC_TYPES[c] for c in columns})
    for name, columns in TABLES.items()
}
# items after `ALTER TABLE items DROP COLUMN b`.
DROP_B = "ALTER TABLE `items` DROP COLUMN `b`"
ITEMS_WITHOUT_B = Table(DATABASE, "items", {"id": "int(11)", "a": "varchar(20)"}, {"id": 4, "a": 12})
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


# The generator's changes are vendor_writers Changes; `after` is an update's after image (all columns, or the
# ones a partial update carries), and `at_ms` is set when the vendor writes the change (None: it writes no
# time, as a StreamX full load's rows).


@dataclass(frozen=True)
class Ddl:
    """A statement that changes a table's columns: the table as it is after it."""

    table: Table
    sql: str
    at_ms: int | None = None


@dataclass(frozen=True)
class Stream:
    """A source's steps (Changes and Ddls) in source order, by the task that wrote them: task 1's and, when the task
    was re-created, the changes made while no task ran (`gap`), task 2's full sync (INIT rows of every key live
    then) and task 2's steps. A vendor with a full sync sends the full sync as task 2's first steps, one without
    it the gap's changes."""

    task_1: list
    gap: list = field(default_factory=list)
    full_sync: list = field(default_factory=list)
    task_2: list = field(default_factory=list)
    recreated: bool = False

    def written_by_task_2(self, with_full_sync: bool) -> list:
        return [*self.full_sync, *self.task_2] if with_full_sync else [*self.gap, *self.task_2]


def key_of(change: Change) -> str:
    return (change.before or change.after)["id"]


def new_key_of(change: Change) -> str:
    return change.row["id"]


def keys_of(change: Change) -> set[str]:
    return {key_of(change), new_key_of(change)}


def seconds_of(step: Change | Ddl) -> int | None:
    return None if step.at_ms is None else (step.at_ms - epoch_ms(0)) // 1000


def written_at(step: Change | Ddl, seconds: int | None) -> Change | Ddl:
    return replace(step, at_ms=None if seconds is None else epoch_ms(seconds))


def describe(step: Change | Ddl) -> str:
    if isinstance(step, Ddl):
        return f"t={seconds_of(step)} {step.table.name}: {step.sql}"
    keys = key_of(step) if key_of(step) == new_key_of(step) else f"{key_of(step)}->{new_key_of(step)}"
    shown = step.before if step.op == DELETE else step.after
    partial = " partial" if step.is_partial else ""
    return f"t={seconds_of(step)} {step.table.name} {OPERATION_LETTERS[step.op]}{partial} {keys} {shown}"


# cdc_history's op of each change.
OPERATION_LETTERS = {INSERT: "c", UPDATE: "u", DELETE: "d", INIT: "r"}


def pk_text(key: str) -> str:
    return json.dumps([key])


class Version(NamedTuple):
    previous_pk: str | None
    row: dict
    valid_from: datetime | None
    valid_to: datetime | None
    is_current: bool
    is_deleted: bool
    op: str


Chains = dict[tuple[str, str], list[Version]]


def at(seconds: int | None) -> datetime | None:
    return None if seconds is None else T0 + timedelta(seconds=seconds)


def epoch_ms(seconds: int) -> int:
    return int(at(seconds).timestamp() * 1000)


def true_history(stream: Stream, with_full_sync: bool) -> Chains:
    """Every version of every (table, pk) the stream writes, task 1's, then task 2's. A version without a time is
    valid from the newest time before it in its key's history; valid_to is the next version's valid_from."""
    starts: dict[tuple[str, str], list[tuple]] = defaultdict(list)

    def apply(change: Change) -> None:
        key, time = (change.table.name, pk_text(key_of(change))), at(seconds_of(change))
        if change.op in (INSERT, INIT):
            starts[key].append((None, change.row, time, False, OPERATION_LETTERS[change.op]))
        elif change.op == DELETE:
            starts[key].append((None, change.before, time, True, "d"))
        elif new_key_of(change) == key_of(change):
            starts[key].append((None, change.row, time, False, "u"))
        else:
            # A key change closes the old key with its last row and opens the new key.
            starts[key].append((None, change.before, time, True, "u"))
            new_key = (change.table.name, pk_text(new_key_of(change)))
            starts[new_key].append((pk_text(key_of(change)), change.row, time, False, "u"))

    task_2 = stream.written_by_task_2(with_full_sync)
    for step in stream.task_1:
        if isinstance(step, Change):
            apply(step)
    if stream.recreated and with_full_sync:
        # Once the full sync is complete: a live key of a table task 2 sent, that the full sync did not send, is
        # closed (deleted, its last row kept) where task 2 began, its first change with a time.
        times = [seconds_of(step) for step in task_2 if seconds_of(step) is not None]
        began = at(min(times)) if times else None
        tables = {step.table.name for step in task_2}
        restated = {(change.table.name, pk_text(key_of(change))) for change in stream.full_sync}
        for key, versions in starts.items():
            if key[0] in tables and not versions[-1][3] and key not in restated:
                versions.append((None, versions[-1][1], began, True, "d"))
    for step in task_2:
        if isinstance(step, Change):
            apply(step)
    chains: Chains = {}
    for key, versions in starts.items():
        valid_from, newest = [], None
        for version in versions:
            newest = version[2] if version[2] is not None else newest
            valid_from.append(newest)
        chains[key] = [
            Version(previous, row, start, following, following_index is None, deleted, op)
            for (previous, row, _, deleted, op), start, following, following_index in zip(
                versions,
                valid_from,
                [*valid_from[1:], None],
                [*range(1, len(versions)), None],
                strict=True,
            )
        ]
    return chains


def true_current(chains: Chains) -> dict[tuple[str, str], dict]:
    return {key: versions[-1].row for key, versions in chains.items() if not versions[-1].is_deleted}


def always(table: str, old_key: str, new_key: str) -> bool:
    return True


# The simplest stream (make test-slow's one example): (table, key, action) of each step, as far as it fits.
TOUR = (
    ("items", "1", "insert"),
    ("items", "2", "insert"),
    ("items", "1", "rekey"),
    ("items", "2", "partial"),
    ("items", "1", "insert"),
    ("notes", "1", "insert"),
    ("items", "3", "delete"),
    ("items", "", "drop"),
    ("notes", "1", "rekey"),
    ("items", "2", "partial"),
    ("", "", "recreate"),
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
def change_streams(
    draw, partial_updates: bool, may_change_key: Callable[[str, str, str], bool], full_sync: bool
) -> Stream:
    """A valid change stream: inserts of absent keys, full or partial updates, key changes to absent keys,
    deletes and re-inserts; every update changes at least one value. Once each: items' column b dropped; the
    task re-created, after a live key is deleted (one whose table keeps another) and another updated while no
    task ran, with a full sync of every live key when the vendor writes one."""
    tables = pick(draw, [tuple(TABLES), tuple(TABLES)[:1]])
    schemas = dict(SOURCE_TABLES)
    live: dict[tuple[str, str], dict] = {}
    task_1: list = []
    gap: list[Change] = []
    full_sync_rows: list[Change] = []
    task_2: list = []
    steps = task_1

    def values(columns: Sequence[str], turn: int) -> dict:
        return {column: pick(draw, VALUES, turn + position) for position, column in enumerate(columns)}

    def changed(table: str, before: dict, turn: int) -> dict:
        """A full image of the row with at least one value changed."""
        after = {**before, **values(schemas[table].columns[1:], turn)}
        if after == before:
            column = schemas[table].columns[1 + turn % (len(schemas[table].columns) - 1)]
            after[column] = next(value for value in VALUES if value != before[column])
        return after

    for turn in range(draw(st.integers(len(TOUR), MAX_CHANGES))):
        tour_table, tour_key, tour_action = TOUR[turn % len(TOUR)]
        kinds = [
            "change",
            *(["drop"] if schemas["items"] != ITEMS_WITHOUT_B and "items" in tables else []),
            *(["recreate"] if steps is task_1 and live else []),
        ]
        kind = prefer(draw, kinds, tour_action if tour_action in ("drop", "recreate") else "change")
        if kind == "drop":
            schemas["items"] = ITEMS_WITHOUT_B
            for (table, key), row in live.items():
                if table == "items":
                    live[(table, key)] = {column: row[column] for column in ITEMS_WITHOUT_B.columns}
            steps.append(Ddl(ITEMS_WITHOUT_B, DROP_B))
            continue
        if kind == "recreate":
            deletable = sorted(key for key in live if sum(other[0] == key[0] for other in live) > 1)
            deleted = prefer(draw, [None, *deletable], deletable[0] if deletable else None)
            if deleted is not None:
                gap.append(Change(schemas[deleted[0]], DELETE, live.pop(deleted), None, epoch_ms(0)))
            updatable = sorted(live)
            updated = prefer(draw, [None, *updatable], updatable[0] if updatable else None)
            if updated is not None:
                before = live[updated]
                live[updated] = changed(updated[0], before, turn)
                gap.append(Change(schemas[updated[0]], UPDATE, before, live[updated], epoch_ms(0)))
            if full_sync:
                full_sync_rows = [
                    Change(schemas[table], INIT, None, row, epoch_ms(0)) for (table, _), row in sorted(live.items())
                ]
            steps = task_2
            continue
        table = prefer(draw, tables, tour_table)
        columns = schemas[table].columns
        data_columns = columns[1:]
        key = prefer(draw, KEYS, tour_key)
        if (table, key) not in live:
            live[(table, key)] = {"id": key, **values(data_columns, turn)}
            steps.append(Change(schemas[table], INSERT, None, live[(table, key)], epoch_ms(0)))
            continue
        before = live.pop((table, key))
        absent = [other for other in KEYS if (table, other) not in live and other != key]
        targets = [other for other in absent if may_change_key(table, key, other)]
        actions = ["update", "delete", *(["partial"] if partial_updates else []), *(["rekey"] if targets else [])]
        action = prefer(draw, actions, tour_action)
        if action == "delete":
            steps.append(Change(schemas[table], DELETE, before, None, epoch_ms(0)))
            continue
        new_key = draw(st.sampled_from(targets)) if action == "rekey" else key
        after = {**changed(table, before, turn + 1), "id": new_key}
        if action == "partial":
            # One column changes; the image carries it (and maybe other columns and the key).
            column = pick(draw, data_columns, turn)
            after = {**before, column: pick(draw, [value for value in VALUES if value != before[column]], turn)}
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
        steps.append(Change(schemas[table], UPDATE, before, {column: after[column] for column in image}, epoch_ms(0)))
    return Stream(task_1, gap, full_sync_rows, task_2, recreated=steps is task_2)


# ---------------------------------------------------------------------------------------- vendor shapes


@dataclass(frozen=True)
class Unit:
    """Messages the vendor writes one after the other to one partition (the parts of a split group)."""

    task: int
    partition: int
    parts: tuple[bytes, ...]
    label: str
    # A message without a position (StreamX's full load) landed twice is two changes to the models: not copied.
    has_position: bool = True


@dataclass(frozen=True)
class Rendering:
    stream: Stream  # with the times the vendor wrote
    with_full_sync: bool
    units: list[Unit]  # in produced order
    partitions: int
    # True: each partition must land in produced order (the vendor's order is the offset order, or the
    # parts of a group must follow each other); False: the vendor's sequence orders, any order lands.
    keep_partition_order: bool
    offset_gaps: bool


def clock(draw, time: int, turn: int) -> int:
    return time + pick(draw, CLOCK_STEPS, turn)


def timed(draw, stream: Stream, with_full_sync: bool, timed_full_sync: bool = True) -> Stream:
    """The stream with the times the vendor writes: each step a clock step after the one before; the task is
    re-created 5 seconds after task 1's last step, its full sync's rows all at that time (or, for a vendor that
    writes none, without a time), the changes made while no task ran and task 2's steps after it."""
    time = 0
    turns = iter(range(10_000))

    def tick(step: Change | Ddl) -> Change | Ddl:
        nonlocal time
        time = clock(draw, time, next(turns))
        return written_at(step, time)

    task_1 = [tick(step) for step in stream.task_1]
    time += 5
    full_sync = [written_at(change, time if timed_full_sync else None) for change in stream.full_sync]
    gap = [] if with_full_sync else [tick(change) for change in stream.gap]
    task_2 = [tick(step) for step in stream.task_2]
    return Stream(task_1, gap, full_sync if with_full_sync else [], task_2, stream.recreated)


def tasks(stream: Stream, with_full_sync: bool) -> list[tuple[int, list]]:
    return [(1, stream.task_1), (2, stream.written_by_task_2(with_full_sync))]


def stable_partition(table: str, key: str, partitions: int) -> int:
    return zlib.crc32(f"{table}/{key}".encode()) % partitions


@st.composite
def huawei_drs_json(draw) -> Rendering:
    """Task 1 numbers its events from 27000, task 2 (re-created) from 0."""
    partitions = pick(draw, [2, 3, 1])
    stream = timed(draw, draw(change_streams(partial_updates=True, may_change_key=always, full_sync=True)), True)
    units = []
    for task, steps in tasks(stream, True):
        drs_id = 27_000 if task == 1 else 0
        for turn, step in enumerate(steps):
            drs_id += pick(draw, [1, 3], turn)  # DRS numbers the events of other tables too
            if isinstance(step, Ddl):
                message = drs_json_writer.ddl_message(drs_id, step.table, step.sql, step.at_ms)
            else:
                message = drs_json_writer.flat_message(drs_id, [step])
            partition = pick(draw, range(partitions), turn)
            units.append(Unit(task, partition, (json.dumps(message).encode(),), f"id {drs_id}: {describe(step)}"))
    return Rendering(stream, True, units, partitions, keep_partition_order=False, offset_gaps=True)


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


def old_columns(change: Change) -> dict | None:
    """Canal's `old` of a row: an update's changed columns with their old values (JSON null: was NULL)."""
    return change.changed_before() if change.op == UPDATE else None


@st.composite
def canal_json(draw) -> Rendering:
    """Task 2's full sync as INIT rows, as the Canal output of DTS services writes it; batch ids restart with it."""
    partitions = pick(draw, [2, 3, 1])
    by_table = pick(draw, [False, True])

    def partition(table: str, key: str) -> int:
        return canal_partition(table, {"id": key}, partitions, by_table)

    def same_partition(table: str, old_key: str, new_key: str) -> bool:
        return partition(table, old_key) == partition(table, new_key)

    stream = timed(
        draw, draw(change_streams(partial_updates=False, may_change_key=same_partition, full_sync=True)), True
    )
    units = []
    for task, steps in tasks(stream, True):
        # One binlog rows event: consecutive changes of one table and operation on distinct keys.
        statements: list[list] = []
        for step in steps:
            last = statements[-1] if statements else []
            if (
                isinstance(step, Change)
                and last
                and isinstance(last[0], Change)
                and (last[0].table, last[0].op, last[0].at_ms) == (step.table, step.op, step.at_ms)
                and not set().union(*(keys_of(row) for row in last)) & keys_of(step)
                and draw(st.sampled_from([True, False]))
            ):
                last.append(step)
            else:
                statements.append([step])
        # The first statement after a Canal restart (the end: no restart), by default the middle one.
        restart_at = 1 + middle_index(draw, len(statements)) if task == 1 and statements else None
        batch_id, seen = 1, set()
        for index, statement in enumerate(statements):
            if index == restart_at:
                batch_id = 1
            elif index > 0 and pick(draw, [False, True], index):
                batch_id += 1
            if isinstance(statement[0], Ddl):
                ddl = statement[0]
                message = canal_writer.ddl_message(batch_id, ddl.table, ddl.sql, ddl.at_ms)
                units.append(Unit(task, partition(ddl.table.name, ""), (json.dumps(message).encode(),), describe(ddl)))
                continue
            by_partition: dict[int, list[Change]] = defaultdict(list)
            for change in statement:
                by_partition[canal_partition(change.table.name, change.row, partitions, by_table)].append(change)
            # What identifies a Canal row change, but for the batch id: table, operation, row, es, images.
            contents = [
                (
                    change.table.name,
                    change.op,
                    row_index,
                    change.at_ms,
                    json.dumps(change.row),
                    json.dumps(old_columns(change)),
                )
                for partition_rows in by_partition.values()
                for row_index, change in enumerate(partition_rows)
            ]
            while any((batch_id, *content) in seen for content in contents):
                batch_id += 1  # an identical change at the same batch id and row would be taken for a copy
            seen.update((batch_id, *content) for content in contents)
            for partition_number in sorted(by_partition):
                message = canal_writer.flat_message(batch_id, by_partition[partition_number])
                label = f"batch {batch_id}: {message['type']} {message['table']} {message['data']}"
                if message["old"]:
                    label += f" old {message['old']}"
                units.append(Unit(task, partition_number, (json.dumps(message).encode(),), label))
    return Rendering(stream, True, units, partitions, keep_partition_order=True, offset_gaps=True)


@st.composite
def tencent_dts_protobuf(draw) -> Rendering:
    """A re-created subscription has no full sync: it numbers anew (seqId from 100) and reads the binlog from where
    the old one stopped, so it sends the changes made while no task ran."""
    partitions = pick(draw, [2, 3, 1])
    stream = timed(draw, draw(change_streams(partial_updates=True, may_change_key=always, full_sync=False)), False)
    units = []
    for task, steps in tasks(stream, False):
        # Transactions of DML entries; an entry holds consecutive rows of one table and type on distinct keys.
        transactions: list[list[list]] = []
        for turn, step in enumerate(steps):
            if isinstance(step, Ddl) or not transactions or isinstance(transactions[-1][0][0], Ddl):
                transactions.append([[step]])
                continue
            if pick(draw, [False, True], turn + 1):
                transactions.append([[step]])
                continue
            entry = transactions[-1][-1]
            if (
                (entry[0].table, entry[0].op, entry[0].at_ms) == (step.table, step.op, step.at_ms)
                and not set().union(*(keys_of(row) for row in entry)) & keys_of(step)
                and draw(st.sampled_from([True, False]))
            ):
                entry.append(step)
            else:
                transactions[-1].append([step])
        writer = dts_writer.DtsWriter(DATABASE, seq_id=5000 if task == 1 else 100)
        for index, transaction in enumerate(transactions):
            first = transaction[0][0]
            writer.clock_s = first.at_ms // 1000
            if isinstance(first, Ddl):
                items = [writer.ddl(first.table.name, first.sql)]
                labels = [f"seq {writer.seq_id}: {describe(first)}"]
            else:
                begin = writer.begin()
                items, labels = [begin], []
                for rows in transaction:
                    items.append(writer.dml(rows))
                    labels += [f"seq {writer.seq_id}: {describe(change)}" for change in rows]
                items.append(writer.commit(begin))
            total = pick(draw, [1, 2, 3], index)
            parts = tuple(dts_writer.envelopes(dts_writer.entries(items), total))
            partition = pick(draw, range(partitions), index)
            units.append(Unit(task, partition, parts, f"{total} part(s): " + "; ".join(labels)))
    return Rendering(stream, False, units, partitions, keep_partition_order=True, offset_gaps=DTS_OFFSET_GAPS)


@st.composite
def aliyun_streamx_json(draw) -> Rendering:
    """Task 2's full load: INSERTs without a sequenceId or an eventTime; its ids then take up from its own start."""
    partitions = pick(draw, [2, 3, 1])
    # The task option "update as one Kafka record": one UPDATE_AFTER carrying both images.
    one_record_updates = pick(draw, [False, True])
    stream = draw(change_streams(partial_updates=False, may_change_key=always, full_sync=True))
    stream = timed(draw, stream, True, timed_full_sync=False)
    units = []
    for task, steps in tasks(stream, True):
        sequence_id = 1_709_280_000_000_000_000 if task == 1 else 1_709_290_000_000_000_000
        for turn, step in enumerate(steps):
            sequence_id += pick(draw, [1, 2], turn)
            if isinstance(step, Ddl):
                record = streamx_writer.record(
                    sequence_id, step.table, STREAMX_TYPES, "ALTER", step.at_ms, ddl={"text": step.sql}
                )
                partition = stable_partition(step.table.name, "", partitions)
                units.append(Unit(task, partition, (json.dumps(record).encode(),), describe(step)))
                continue
            for record in streamx_writer.records(sequence_id, step, STREAMX_TYPES, one_record_updates):
                # StreamX shards by primary key: each half goes to its own image's key's partition.
                payload = record["payload"]
                key = str((payload["after"] or payload["before"])["dataColumn"]["id"])
                partition = stable_partition(step.table.name, key, partitions)
                label = f"seq {payload['sequenceId']} {payload['op']}: {describe(step)}"
                has_position = payload["sequenceId"] != "-1"
                units.append(Unit(task, partition, (json.dumps(record).encode(),), label, has_position))
    return Rendering(stream, True, units, partitions, keep_partition_order=False, offset_gaps=True)


STREAMX_TYPES = {"id": "LONG"}
FORMATS = {
    "huawei_drs_json": huawei_drs_json,
    "canal_json": canal_json,
    "tencent_dts_protobuf": tencent_dts_protobuf,
    "aliyun_streamx_json": aliyun_streamx_json,
}


def topic(source_format: str, task: int) -> str:
    return f"{source_format}.history_property" + ("_v2" if task == 2 else "")


# ---------------------------------------------------------------------------------------------- landing


@dataclass(frozen=True)
class Delivery:
    task: int
    partition: int
    offset: int
    value: bytes
    label: str


@dataclass(frozen=True)
class Case:
    rendering: Rendering
    batches: list[list[Delivery]]

    def __repr__(self) -> str:
        stream = self.rendering.stream
        lines = ["task 1 (source order, with the times written):"]
        lines += [f"  {describe(step)}" for step in stream.task_1]
        if stream.recreated:
            lines.append("while no task ran:")
            lines += [f"  {describe(change)}" for change in stream.gap]
            lines.append("task 2:")
            lines += [f"  {describe(step)}" for step in [*stream.full_sync, *stream.task_2]]
        for number, batch in enumerate(self.batches, 1):
            lines.append(f"batch {number} (then a dbt run):")
            lines += [f"  task {d.task} p{d.partition}@{d.offset} {d.label}" for d in batch]
        return "\n".join(lines)


@st.composite
def cases(draw, source_format: str) -> Case:
    rendering = draw(FORMATS[source_format]())
    units = [(unit, "") for unit in rendering.units]
    # Redeliveries: copies of some units landed again later, in their partition, at new offsets.
    copyable = [index for index, (unit, _) in enumerate(units) if unit.has_position]
    copied = draw(st.lists(st.sampled_from(copyable), min_size=1, max_size=2))
    if rendering.keep_partition_order:
        queues: dict[tuple[int, int], list[tuple[Unit, str]]] = defaultdict(list)
        for unit in units:
            queues[(unit[0].task, unit[0].partition)].append(unit)
        for original in copied:
            queue = queues[(units[original][0].task, units[original][0].partition)]
            later = len(queue) - queue.index(units[original])  # boundaries after the original
            queue.insert(len(queue) - draw(st.integers(0, later - 1)), (units[original][0], " (copy)"))
        part_queues = {
            place: [(unit, part, copy) for unit, copy in queue for part in unit.parts]
            for place, queue in queues.items()
        }
        landing = []
        for step in range(sum(len(queue) for queue in part_queues.values())):
            place = pick(draw, [p for p in sorted(part_queues) if part_queues[p]], step)
            landing.append(part_queues[place].pop(0))
    else:
        remaining, order = list(units), []
        while remaining:
            order.append(remaining.pop(middle_index(draw, len(remaining))))
        for original in copied:
            after = order.index(units[original]) + 1
            order.insert(len(order) - draw(st.integers(0, len(order) - after)), (units[original][0], " (copy)"))
        landing = [(unit, part, copy) for unit, copy in order for part in unit.parts]
    offsets: dict[tuple[int, int], int] = defaultdict(int)
    deliveries = []
    for index, (unit, part, copy) in enumerate(landing):
        gap = pick(draw, [0, 2, 0, 1], index) if rendering.offset_gaps else 0
        offset = offsets[(unit.task, unit.partition)] + gap
        offsets[(unit.task, unit.partition)] = offset + 1
        label = unit.label + copy + (f" [part {unit.parts.index(part)}]" if len(unit.parts) > 1 else "")
        deliveries.append(Delivery(unit.task, unit.partition, offset, part, label))
    cut_count = len(deliveries) - 1
    cuts = draw(st.lists(st.integers(0, cut_count - 1), min_size=1, max_size=2, unique=True))
    bounds = sorted({(cut + cut_count // 2) % cut_count + 1 for cut in cuts})
    batches = [deliveries[start:end] for start, end in zip([0, *bounds], [*bounds, len(deliveries)], strict=True)]
    return Case(rendering, batches)


# ------------------------------------------------------------------------------------------------ tests


@pytest.fixture(scope="module")
def project(spark, tmp_path_factory):
    """With the profile's shuffle partitions and Spark's adaptive execution, whatever the suite runs with
    (ci.mk, ONE_TASK_STAGES): a history's order must not depend on how its rows are spread over tasks."""
    adaptive = spark.conf.get("spark.sql.adaptive.enabled")
    spark.conf.set("spark.sql.adaptive.enabled", "true")
    try:
        with pytest.MonkeyPatch.context() as env:
            # Each in-process dbt run sets the session's partitions from the profile.
            env.delenv("CDC_SHUFFLE_PARTITIONS", raising=False)
            yield from project_in_schema(spark, tmp_path_factory)
    finally:
        spark.conf.set("spark.sql.adaptive.enabled", adaptive)


def source_name(source_format: str) -> str:
    return f"property_{source_format}"


def declare_tasks(spark) -> None:
    """The seed cdc_sources as a deployment writes it: each format's two topics are tasks 1 and 2 of one source
    (a topic's name is a pattern that matches it alone)."""
    rows = ", ".join(
        f"('{topic(source_format, task)}', '{source_name(source_format)}', 'UTC', {task}, false)"
        for source_format in FORMATS
        for task in (1, 2)
    )
    spark.sql(f"DELETE FROM {SCHEMA}.cdc_sources WHERE source_name LIKE 'property_%'")
    spark.sql(f"INSERT INTO {SCHEMA}.cdc_sources VALUES {rows}")


def stored_history(spark, source_format: str) -> Chains:
    rows = (
        spark.table(f"{SCHEMA}.cdc_history")
        .where(f"source_format = '{source_format}'")
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
            "source_task",
            "event_order",
            "event_id",
        )
        .collect()
    )
    chains: Chains = defaultdict(list)
    for row in sorted(rows, key=lambda row: (row.source_task, [*row.event_order], row.event_id or "")):
        chains[(row.source_table, row.pk)].append(
            Version(row.previous_pk, row.row, row.valid_from, row.valid_to, row.is_current, row.is_deleted, row.op)
        )
    return dict(chains)


def stored_current(spark, source_format: str) -> dict[tuple[str, str], dict]:
    rows = spark.table(f"{SCHEMA}.cdc_current").where(f"source_format = '{source_format}'").collect()
    return {(row.source_table, row.pk): row.row for row in rows}


def differences(expected: Chains, stored: Chains) -> str:
    lines = []
    for key in sorted({*expected, *stored}):
        if expected.get(key) != stored.get(key):
            lines.append(f"{key}:")
            lines += [f"  expected {version}" for version in expected.get(key, [])]
            lines += [f"  stored   {version}" for version in stored.get(key, [])]
    return "\n".join(lines)


@settings(
    # One stream per format in make test-slow; make test-history-property runs 20.
    max_examples=int(os.environ.get("HISTORY_EXAMPLES", "1")),
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.large_base_example],
)
@given(data=st.data())
def test_history_is_the_generated_truth(project, data):
    """A stream of every format in one warehouse: batch n of each format lands in one commit before the nth
    run, so each run works for all four (a run costs about what it would for one). After the last batch the
    deployment marks the full syncs of the re-created tasks complete, and a run follows."""
    from cdc_lakehouse.landing import TopicMessages, land_topics

    cases_by_format = {source_format: data.draw(cases(source_format), label=source_format) for source_format in FORMATS}
    project.reset(*FORMATS)
    declare_tasks(project.spark)
    try:
        for number in range(max(len(case.batches) for case in cases_by_format.values())):
            land_topics(
                project.spark,
                [
                    TopicMessages(source_format, topic(source_format, d.task), d.partition, d.offset, [d.value])
                    for source_format, case in cases_by_format.items()
                    for d in (case.batches[number] if number < len(case.batches) else [])
                ],
            )
            project.run()
        full_syncs = ", ".join(
            f"'{source_name(f)}'" for f, case in cases_by_format.items() if case.rendering.with_full_sync
        )
        project.spark.sql(
            f"UPDATE {SCHEMA}.cdc_sources SET full_sync_complete = true"
            f" WHERE source_task = 2 AND source_name IN ({full_syncs})"
        )
        # Whatever lands next brings the run that finds the marks: a heartbeat of another stream.
        heartbeat = dts_writer.envelope(dts_writer.entries([dts_writer.DtsWriter(DATABASE).heartbeat()]))
        land_topics(
            project.spark, [TopicMessages("tencent_dts_protobuf", "tencent_dts_protobuf.marked", 0, 0, [heartbeat])]
        )
        project.run()
    finally:
        project.spark.sql(f"DELETE FROM {SCHEMA}.cdc_sources WHERE source_name LIKE 'property_%'")
    failures = []
    for source_format, case in cases_by_format.items():
        rendering = case.rendering
        expected = true_history(rendering.stream, rendering.with_full_sync)
        stored = stored_history(project.spark, source_format)
        if stored != expected:
            failures.append(f"{source_format}: cdc_history differs:\n{differences(expected, stored)}\n{case!r}")
        elif stored_current(project.spark, source_format) != true_current(expected):
            failures.append(f"{source_format}: cdc_current differs from the truth\n{case!r}")
    assert not failures, "\n".join(failures)
