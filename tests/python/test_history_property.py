"""Property test: cdc_history and cdc_current equal the truth of a generated change stream, in four formats.

A generator draws a change stream over a few keys of one or two tables (inserts of absent keys, full
updates, partial updates where the format has them, key changes, deletes, re-inserts) and keeps its own
truth: every version of every key (the row as the history stores it, column -> text; valid_from = the
event time the vendor wrote, valid_to = the next version's; is_deleted; op; previous_pk) and the final
state. The stream is rendered as the vendor writes it, landed in random batches (each followed by a dbt
run, which reads the landing commits since the previous run; an example draws a stream of each format, and
batch n of every format lands in one commit before the nth run), in any order the vendor's ordering allows,
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
runs one example (HISTORY_EXAMPLES, default 1; derandomized: a stream per format), which is Hypothesis's simplest
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
from typing import NamedTuple

import pytest
from history_project import SCHEMA, project_in_schema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vendor_writers import DELETE, INSERT, UPDATE, Change, Table
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
# ones a partial update carries), and `at_ms` is set when the vendor writes the change.


def key_of(change: Change) -> str:
    return (change.before or change.after)["id"]


def new_key_of(change: Change) -> str:
    return change.row["id"]


def keys_of(change: Change) -> set[str]:
    return {key_of(change), new_key_of(change)}


def seconds_of(change: Change) -> int:
    return (change.at_ms - epoch_ms(0)) // 1000


def written_at(change: Change, seconds: int) -> Change:
    return replace(change, at_ms=epoch_ms(seconds))


def describe(change: Change) -> str:
    keys = key_of(change) if key_of(change) == new_key_of(change) else f"{key_of(change)}->{new_key_of(change)}"
    shown = change.before if change.op == DELETE else change.after
    partial = " partial" if change.is_partial else ""
    return f"t={seconds_of(change)} {change.table.name} {OPERATION_LETTERS[change.op]}{partial} {keys} {shown}"


# cdc_history's op of each change.
OPERATION_LETTERS = {INSERT: "c", UPDATE: "u", DELETE: "d"}


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
        key, time = (change.table.name, pk_text(key_of(change))), at(seconds_of(change))
        if change.op == INSERT:
            starts[key].append((None, change.row, time, False, "c"))
        elif change.op == DELETE:
            starts[key].append((None, change.before, time, True, "d"))
        elif new_key_of(change) == key_of(change):
            starts[key].append((None, change.row, time, False, "u"))
        else:
            # A key change closes the old key with its last row and opens the new key.
            starts[key].append((None, change.before, time, True, "u"))
            new_key = (change.table.name, pk_text(new_key_of(change)))
            starts[new_key].append((pk_text(key_of(change)), change.row, time, False, "u"))
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
        rows.pop((change.table.name, pk_text(key_of(change))), None)
        if change.op != DELETE:
            rows[(change.table.name, pk_text(new_key_of(change)))] = change.row
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
            changes.append(Change(SOURCE_TABLES[table], INSERT, None, live[(table, key)], epoch_ms(0)))
            continue
        before = live.pop((table, key))
        absent = [other for other in KEYS if (table, other) not in live and other != key]
        targets = [other for other in absent if may_change_key(table, key, other)]
        actions = ["update", "delete", *(["partial"] if partial_updates else []), *(["rekey"] if targets else [])]
        action = prefer(draw, actions, tour_action)
        if action == "delete":
            changes.append(Change(SOURCE_TABLES[table], DELETE, before, None, epoch_ms(0)))
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
        changes.append(
            Change(SOURCE_TABLES[table], UPDATE, before, {column: after[column] for column in image}, epoch_ms(0))
        )
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


@st.composite
def huawei_drs_json(draw) -> Rendering:
    partitions = pick(draw, [2, 3, 1])
    changes = draw(change_streams(partial_updates=True, may_change_key=always))
    timed, units = [], []
    time, drs_id = 0, 27_000
    for turn, change in enumerate(changes):
        time = clock(draw, time, turn)
        drs_id += pick(draw, [1, 3], turn)  # DRS numbers the events of other tables too
        change = written_at(change, time)
        message = drs_json_writer.flat_message(drs_id, [change])
        partition = pick(draw, range(partitions), turn)
        units.append(Unit(partition, (json.dumps(message).encode(),), f"id {drs_id}: {describe(change)}"))
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


def old_columns(change: Change) -> dict | None:
    """Canal's `old` of a row: an update's changed columns with their old values (JSON null: was NULL)."""
    return change.changed_before() if change.op == UPDATE else None


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
            and not set().union(*(keys_of(row) for row in last)) & keys_of(change)
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
        statement = [written_at(change, time) for change in statement]
        by_partition: dict[int, list[Change]] = defaultdict(list)
        for change in statement:
            by_partition[canal_partition(change.table.name, change.row, partitions, by_table)].append(change)

        # What identifies a Canal row change, but for the batch id: table, operation, row, es, images.
        contents = [
            (change.table.name, change.op, row_index, time, json.dumps(change.row), json.dumps(old_columns(change)))
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
            units.append(Unit(partition_number, (json.dumps(message).encode(),), label))
        timed.extend(statement)
    return Rendering(timed, units, partitions, keep_partition_order=True, offset_gaps=True)


@st.composite
def tencent_dts_protobuf(draw) -> Rendering:

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
            and not set().union(*(keys_of(row) for row in entry)) & keys_of(change)
            and draw(st.sampled_from([True, False]))
        ):
            entry.append(change)
        else:
            transactions[-1].append([change])
    timed, units = [], []
    writer, time = dts_writer.DtsWriter(DATABASE), 0
    for index, transaction in enumerate(transactions):
        time = clock(draw, time, index)
        writer.clock_s = epoch_ms(time) // 1000
        begin = writer.begin()
        items, labels = [begin], []
        for rows in transaction:
            rows = [written_at(change, time) for change in rows]
            items.append(writer.dml(rows))
            labels += [f"seq {writer.seq_id}: {describe(change)}" for change in rows]
            timed.extend(rows)
        items.append(writer.commit(begin))
        total = pick(draw, [1, 2, 3], index)
        parts = tuple(dts_writer.envelopes(dts_writer.entries(items), total))
        partition = pick(draw, range(partitions), index)
        units.append(Unit(partition, parts, f"{total} part(s): " + "; ".join(labels)))
    return Rendering(timed, units, partitions, keep_partition_order=True, offset_gaps=DTS_OFFSET_GAPS)


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
        change = written_at(change, time)
        for record in streamx_writer.records(sequence_id, change, {"id": "LONG"}, one_record_updates):
            # StreamX shards by primary key: each half goes to its own image's key's partition.
            payload = record["payload"]
            key = str((payload["after"] or payload["before"])["dataColumn"]["id"])
            partition = stable_partition(change.table.name, key, partitions)
            label = f"seq {sequence_id} {payload['op']}: {describe(change)}"
            units.append(Unit(partition, (json.dumps(record).encode(),), label))
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
        lines += [f"  {describe(change)}" for change in self.rendering.changes]
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
    run, so each run works for all four (a run costs about what it would for one)."""
    from cdc_lakehouse.landing import TopicMessages, land_topics

    cases_by_format = {source_format: data.draw(cases(source_format), label=source_format) for source_format in FORMATS}
    project.reset(*FORMATS)
    for number in range(max(len(case.batches) for case in cases_by_format.values())):
        land_topics(
            project.spark,
            [
                TopicMessages(source_format, f"{source_format}.history_property", d.partition, d.offset, [d.value])
                for source_format, case in cases_by_format.items()
                for d in (case.batches[number] if number < len(case.batches) else [])
            ],
        )
        project.run()
    failures = []
    for source_format, case in cases_by_format.items():
        expected, stored = true_history(case.rendering.changes), stored_history(project.spark, source_format)
        if stored != expected:
            failures.append(f"{source_format}: cdc_history differs:\n{differences(expected, stored)}\n{case!r}")
        elif stored_current(project.spark, source_format) != true_current(case.rendering.changes):
            failures.append(f"{source_format}: cdc_current differs from the truth\n{case!r}")
    assert not failures, "\n".join(failures)
