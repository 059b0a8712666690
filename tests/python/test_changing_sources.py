"""A source that changes shape, as four vendors write it: Huawei DRS JSON, Huawei DRS DDS (MongoDB), Canal JSON and
Tencent DTS. One story of shop.orders (id, status, note) in each, landed in four batches, each followed by a
scheduled run (cdc-build) or a plain `dbt build`, in a copy of the project whose seed cdc_sources the deployment
edits; the expected history is written by hand from each vendor's documented behaviour (README, "History and
order"):

- task 1 inserts orders 1-4 and sets order 2 paid with a partial image (DRS and DTS: a MINIMAL image, the others'
  columns NA or absent though the message's schema lists them; DDS: a $set; Canal writes whole rows);
- `ALTER TABLE orders DROP COLUMN note` (DDS: none), then order 1 paid with a full-row image without note
  (DDS: a replacement without the field) and order 3 paid with a partial image (DDS: a $set): note is gone
  from both relational versions, and stays in the DDS document that $set changed;
- the task is re-created (a topic of its own, `source_task` 2; it numbers its events anew). While no task ran,
  order 4 was deleted and order 1 shipped. DRS and Canal send a full sync (INIT rows) of orders 1-3 as they
  are; DDS sends its full sync as inserts; DTS, whose subscriptions have no full sync, starts reading the
  binlog where task 1 stopped and so sends the delete and the update. Task 1's last message lands only now,
  after task 2's first ones, and a copy of the one before it lands again;
- task 2 refunds order 2 and inserts order 5; the deployment marks task 2's full sync complete in the seed
  (not DTS's); the next run closes order 4 as deleted where task 2 began; task 2 then pays order 5.
"""

import json
from datetime import datetime, timedelta

import pytest
from helpers import in_process_schema, project_copy

from vendor_writers import DELETE, INIT, INSERT, UPDATE, Change, Table
from vendor_writers import canal_json as canal_writer
from vendor_writers import huawei_drs_json as drs_writer
from vendor_writers import huawei_drs_mongo_json as dds_writer
from vendor_writers import tencent_dts_protobuf as dts_writer

pytestmark = pytest.mark.slow

SCHEMA = "changing_sources"
T0 = datetime(2026, 3, 1, 8, 0, 0)
FORMATS = ("huawei_drs_json", "huawei_drs_mongo_json", "canal_json", "tencent_dts_protobuf")
SOURCE_NAMES = {
    "huawei_drs_json": "drs_shop",
    "huawei_drs_mongo_json": "dds_shop",
    "canal_json": "canal_shop",
    "tencent_dts_protobuf": "dts_shop",
}
WITH_NOTE = Table(
    "shop",
    "orders",
    {"id": "int(11)", "status": "varchar(16)", "note": "varchar(32)"},
    {"id": 4, "status": 12, "note": 12},
)
NOTE_DROPPED = Table("shop", "orders", {"id": "int(11)", "status": "varchar(16)"}, {"id": 4, "status": 12})
DROP_NOTE = "ALTER TABLE `orders` DROP COLUMN `note`"
# DDS documents: fields as shell text; a document replaced without note is of a collection "without" it.
DOCUMENT = Table("shop", "orders", {"_id": "", "status": "", "note": ""}, keys=("_id",))
DOCUMENT_WITHOUT_NOTE = Table("shop", "orders", {"_id": "", "status": ""}, keys=("_id",))


def ms(seconds: int) -> int:
    return int((T0 + timedelta(seconds=seconds)).timestamp() * 1000)


def at(seconds: int | None) -> datetime | None:
    return None if seconds is None else T0 + timedelta(seconds=seconds)


def order(key: str, status: str, note: str | None = None) -> dict:
    return {"id": key, "status": status} if note is None else {"id": key, "status": status, "note": note}


def document(key: str, status: str, note: str | None = None) -> dict:
    fields = {"_id": key, "status": json.dumps(status)}
    return fields if note is None else {**fields, "note": json.dumps(note)}


# ------------------------------------------------------------------------------------ the vendors' messages


def task_topics(source_format: str) -> tuple[str, str]:
    return f"{source_format}.shape", f"{source_format}.shape_v2"


def drs_stream(deleted_rows_in: str = "old") -> dict[str, list[list[bytes]]]:
    """Huawei DRS JSON, message by message: task 1's ids from 27001, task 2's from 1 (re-created tasks number
    anew); each batch's messages of task 1, then of task 2 (a full sync as INIT rows)."""

    def message(drs_id: int, change: Change) -> bytes:
        return json.dumps(drs_writer.flat_message(drs_id, [change], deleted_rows_in)).encode()

    paid_2 = Change(WITH_NOTE, UPDATE, order("2", "new", "n2"), {"id": "2", "status": "paid"}, ms(5))
    paid_1 = Change(NOTE_DROPPED, UPDATE, order("1", "new"), order("1", "paid"), ms(7))
    paid_3 = Change(NOTE_DROPPED, UPDATE, order("3", "new"), {"id": "3", "status": "paid"}, ms(8))
    return {
        "task 1": [
            [
                *(
                    message(27000 + n, Change(WITH_NOTE, INSERT, None, order(str(n), "new", f"n{n}"), ms(n)))
                    for n in (1, 2, 3, 4)
                ),
                message(27005, paid_2),
            ],
            [
                json.dumps(drs_writer.ddl_message(27006, WITH_NOTE, DROP_NOTE, ms(6))).encode(),
                message(27007, paid_1),
            ],
            # Task 1's last message, landed late, and the one before it again.
            [message(27008, paid_3), message(27007, paid_1)],
            [],
        ],
        "task 2": [
            [],
            [],
            [
                message(1, Change(NOTE_DROPPED, INIT, None, order("1", "shipped"), ms(30))),
                message(2, Change(NOTE_DROPPED, INIT, None, order("2", "paid"), ms(30))),
                message(3, Change(NOTE_DROPPED, INIT, None, order("3", "paid"), ms(30))),
                message(4, Change(NOTE_DROPPED, UPDATE, order("2", "paid"), order("2", "refunded"), ms(40))),
                message(5, Change(NOTE_DROPPED, INSERT, None, order("5", "new"), ms(41))),
            ],
            [message(6, Change(NOTE_DROPPED, UPDATE, order("5", "new"), order("5", "paid"), ms(42)))],
        ],
    }


def canal_stream() -> dict[str, list[list[bytes]]]:
    """Canal JSON: whole rows in `data` (mysqlType lists the table's columns); batch ids restart with task 2,
    whose full sync is INIT rows (a Canal-format producer's, as DTS services write them)."""

    def message(batch_id: int, change: Change) -> bytes:
        return json.dumps(canal_writer.flat_message(batch_id, [change])).encode()

    paid_1 = Change(NOTE_DROPPED, UPDATE, order("1", "new"), order("1", "paid"), ms(7))
    return {
        "task 1": [
            [
                *(
                    message(n, Change(WITH_NOTE, INSERT, None, order(str(n), "new", f"n{n}"), ms(n)))
                    for n in (1, 2, 3, 4)
                ),
                message(5, Change(WITH_NOTE, UPDATE, order("2", "new", "n2"), {"status": "paid"}, ms(5))),
            ],
            [json.dumps(canal_writer.ddl_message(6, WITH_NOTE, DROP_NOTE, ms(6))).encode(), message(7, paid_1)],
            [
                message(8, Change(NOTE_DROPPED, UPDATE, order("3", "new"), {"status": "paid"}, ms(8))),
                message(7, paid_1),
            ],
            [],
        ],
        "task 2": [
            [],
            [],
            [
                message(1, Change(NOTE_DROPPED, INIT, None, order("1", "shipped"), ms(30))),
                message(1, Change(NOTE_DROPPED, INIT, None, order("2", "paid"), ms(30))),
                message(1, Change(NOTE_DROPPED, INIT, None, order("3", "paid"), ms(30))),
                message(2, Change(NOTE_DROPPED, UPDATE, order("2", "paid"), {"status": "refunded"}, ms(40))),
                message(3, Change(NOTE_DROPPED, INSERT, None, order("5", "new"), ms(41))),
            ],
            [message(4, Change(NOTE_DROPPED, UPDATE, order("5", "new"), {"status": "paid"}, ms(42)))],
        ],
    }


def dds_stream() -> dict[str, list[list[bytes]]]:
    """Huawei DRS DDS: inserts, $set updates of partial images, a replacement of the whole document; task 2's
    full sync is inserts of the documents as they are."""

    def message(record_id: int, change: Change) -> bytes:
        return json.dumps(dds_writer.message(record_id, change)).encode()

    paid_1 = Change(DOCUMENT_WITHOUT_NOTE, UPDATE, document("1", "new", "n1"), document("1", "paid"), ms(7))
    return {
        "task 1": [
            [
                *(
                    message(255 + n, Change(DOCUMENT, INSERT, None, document(str(n), "new", f"n{n}"), ms(n)))
                    for n in (1, 2, 3, 4)
                ),
                message(260, Change(DOCUMENT, UPDATE, document("2", "new", "n2"), document("2", "paid"), ms(5))),
            ],
            [message(262, paid_1)],
            [
                message(263, Change(DOCUMENT, UPDATE, document("3", "new", "n3"), document("3", "paid"), ms(8))),
                message(262, paid_1),
            ],
            [],
        ],
        "task 2": [
            [],
            [],
            [
                message(1, Change(DOCUMENT_WITHOUT_NOTE, INSERT, None, document("1", "shipped"), ms(30))),
                message(2, Change(DOCUMENT, INSERT, None, document("2", "paid", "n2"), ms(30))),
                message(3, Change(DOCUMENT, INSERT, None, document("3", "paid", "n3"), ms(30))),
                message(4, Change(DOCUMENT, UPDATE, document("2", "paid", "n2"), document("2", "refunded"), ms(40))),
                message(5, Change(DOCUMENT_WITHOUT_NOTE, INSERT, None, document("5", "new"), ms(41))),
            ],
            [message(6, Change(DOCUMENT, UPDATE, document("5", "new"), document("5", "paid"), ms(42)))],
        ],
    }


def dts_stream() -> dict[str, list[list[bytes]]]:
    """Tencent DTS: a transaction (BEGIN, one DML entry, COMMIT) per change; an image lacking a column the
    entry's column list names has it NA. Task 2 (seqIds anew) reads the binlog from where task 1 stopped."""

    def transaction(writer: dts_writer.DtsWriter, change: Change) -> bytes:
        writer.clock_s = change.at_ms // 1000
        begin = writer.begin()
        return dts_writer.envelope(dts_writer.entries([begin, writer.dml([change]), writer.commit(begin)]))

    def ddl(writer: dts_writer.DtsWriter, seconds: int) -> bytes:
        writer.clock_s = ms(seconds) // 1000
        return dts_writer.envelope(dts_writer.entries([writer.ddl("orders", DROP_NOTE)]))

    first, second = dts_writer.DtsWriter("shop", seq_id=5000), dts_writer.DtsWriter("shop", seq_id=100)
    batch_1 = [
        transaction(first, Change(WITH_NOTE, INSERT, None, order(str(n), "new", f"n{n}"), ms(n))) for n in (1, 2, 3, 4)
    ]
    batch_1.append(
        transaction(first, Change(WITH_NOTE, UPDATE, order("2", "new", "n2"), {"id": "2", "status": "paid"}, ms(5)))
    )
    drop_note = ddl(first, 6)
    paid_1 = transaction(first, Change(NOTE_DROPPED, UPDATE, order("1", "new"), order("1", "paid"), ms(7)))
    batch_2 = [drop_note, paid_1]
    batch_3 = [
        transaction(first, Change(NOTE_DROPPED, UPDATE, order("3", "new"), {"id": "3", "status": "paid"}, ms(8))),
        paid_1,
    ]
    task_2 = [
        transaction(second, Change(NOTE_DROPPED, DELETE, order("4", "new"), None, ms(20))),
        transaction(second, Change(NOTE_DROPPED, UPDATE, order("1", "paid"), order("1", "shipped"), ms(21))),
        transaction(second, Change(NOTE_DROPPED, UPDATE, order("2", "paid"), order("2", "refunded"), ms(40))),
        transaction(second, Change(NOTE_DROPPED, INSERT, None, order("5", "new"), ms(41))),
    ]
    last = [transaction(second, Change(NOTE_DROPPED, UPDATE, order("5", "new"), order("5", "paid"), ms(42)))]
    return {"task 1": [batch_1, batch_2, batch_3, []], "task 2": [[], [], task_2, last]}


STREAMS = {
    "huawei_drs_json": drs_stream,
    "huawei_drs_mongo_json": dds_stream,
    "canal_json": canal_stream,
    "tencent_dts_protobuf": dts_stream,
}


# ------------------------------------------------------------------------------------ the expected history


def relational(status: str, key: str, note: str | None = None) -> dict:
    return order(key, status, note)


def dds(status: str, key: str, note: str | None = None) -> dict:
    return document(key, status, note)


# (pk, source_task, op, row, valid_from, valid_to, is_deleted) of every version, in order; a close has op d
# and no event.
def expected_history(source_format: str) -> list[tuple]:
    if source_format == "huawei_drs_mongo_json":
        row = dds
        closes = [("1", 7), ("2", 5), ("3", 8)]
    else:
        row = relational
        closes = []
    first = {
        "1": [("c", row("new", "1", "n1"), 1, 7), ("u", row("paid", "1"), 7, None)],
        "2": [("c", row("new", "2", "n2"), 2, 5), ("u", row("paid", "2", "n2"), 5, None)],
        # DDS: a $set keeps the note; the others' versions after the drop have none.
        "3": [("c", row("new", "3", "n3"), 3, 8), ("u", row("paid", "3", "n3" if row is dds else None), 8, None)],
        "4": [("c", row("new", "4", "n4"), 4, None)],
    }
    if source_format == "tencent_dts_protobuf":
        second = {
            "1": [("u", row("shipped", "1"), 21)],
            "2": [("u", row("refunded", "2"), 40)],
            "3": [],
            "4": [("d", row("new", "4"), 20)],
            "5": [("c", row("new", "5"), 41), ("u", row("paid", "5"), 42)],
        }
    else:
        full_sync = "c" if row is dds else "r"
        second = {
            "1": [(full_sync, row("shipped", "1"), 30)],
            "2": [
                (full_sync, row("paid", "2", "n2" if row is dds else None), 30),
                ("u", row("refunded", "2", "n2" if row is dds else None), 40),
            ],
            "3": [(full_sync, row("paid", "3", "n3" if row is dds else None), 30)],
            # Not in the full sync: closed where task 2 began, its last row kept.
            "4": [("close", row("new", "4", "n4"), 30)],
            "5": [("c", row("new", "5"), 41), ("u", row("paid", "5"), 42)],
        }
        for key, _ in closes:
            # DDS marks no full-sync row: every key of task 1 is closed where task 2 began, then inserted again.
            second[key] = [("close", first[key][-1][1], 30), *second[key]]
    versions = []
    for key in ("1", "2", "3", "4", "5"):
        chain = [(1, op, image, start) for op, image, start, _ in first.get(key, [])]
        chain += [(2, op, image, start) for op, image, start in second[key]]
        for (task, op, image, start), following in zip(chain, [*chain[1:], None], strict=True):
            deleted = op in ("d", "close")
            versions.append(
                (
                    json.dumps([key]),
                    task,
                    "d" if op == "close" else op,
                    image,
                    at(start),
                    at(following[3]) if following else None,
                    deleted,
                )
            )
    return versions


# ---------------------------------------------------------------------------------------------- the runs


class Deployment:
    """A copy of the project whose seed cdc_sources names each format's two tasks, built on the test session
    by cdc-build (scheduled_build) or a plain `dbt build`."""

    def __init__(self, spark, tmp_path_factory) -> None:
        from cdc_lakehouse.dbt_project import DbtProject

        self.spark = spark
        self.root = project_copy(tmp_path_factory.mktemp("changing_sources") / "project")
        self.project = DbtProject(project_dir=self.root, dbt_vars={"cdc_enabled_formats": list(FORMATS)})
        self.write_sources(complete=())

    def write_sources(self, complete: tuple[str, ...]) -> None:
        """The seed: each format's task topics as tasks 1 and 2 of its source; `complete` names the formats whose
        task 2 the deployment marks as having landed its full sync whole."""
        lines = ["topic_pattern,source_name,source_time_zone,source_task,full_sync_complete"]
        for source_format in FORMATS:
            first, second = (topic.replace(".", "\\.") for topic in task_topics(source_format))
            name = SOURCE_NAMES[source_format]
            lines += [f"{first},{name},UTC,,", f"{second},{name},UTC,2,{'true' if source_format in complete else ''}"]
        (self.root / "seeds" / "cdc_sources.csv").write_text("\n".join(lines) + "\n")

    def land(self, number: int) -> None:
        from cdc_lakehouse.landing import TopicMessages, land_topics

        batches = []
        for source_format in FORMATS:
            stream = STREAMS[source_format]()
            for task, topic in zip(("task 1", "task 2"), task_topics(source_format), strict=True):
                messages = stream[task][number]
                if messages:
                    landed = (
                        self.spark.sql(f"select count(*) as n from landing.cdc_raw where topic = '{topic}'").first().n
                    )
                    batches.append(TopicMessages(source_format, topic, 0, landed, messages))
        land_topics(self.spark, batches)

    def scheduled_run(self) -> None:
        from cdc_lakehouse.scheduled_build import scheduled_build

        outcome = scheduled_build(self.project, self.spark)
        assert outcome.succeeded, outcome.failures

    def dbt_build(self) -> None:
        self.project.run_checked(["build"])

    def history(self, source_format: str) -> list[tuple]:
        rows = (
            self.spark.table(f"{SCHEMA}.cdc_history")
            .where(f"source_format = '{source_format}' and source_table = 'orders'")
            .orderBy("pk", "source_task", "event_order", "event_id")
            .collect()
        )
        return [
            (row.pk, row.source_task, row.op, dict(row.row), row.valid_from, row.valid_to, row.is_deleted)
            for row in rows
        ]


@pytest.fixture(scope="module")
def deployment(spark, tmp_path_factory):
    with in_process_schema(spark, SCHEMA), pytest.MonkeyPatch.context() as env:
        env.setenv("CDC_WAREHOUSE", str(tmp_path_factory.mktemp("changing_warehouse")))
        deployment = Deployment(spark, tmp_path_factory)
        deployment.land(0)
        deployment.scheduled_run()
        deployment.land(1)
        deployment.dbt_build()
        deployment.land(2)
        deployment.scheduled_run()
        # The consoles show task 2's full sync finished and ingest has landed it: the deployment says so.
        deployment.write_sources(complete=("huawei_drs_json", "huawei_drs_mongo_json", "canal_json"))
        deployment.land(3)
        deployment.scheduled_run()
        yield deployment
        spark.sql(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")


@pytest.mark.parametrize("source_format", FORMATS)
def test_history_is_each_vendors_story(deployment, source_format):
    assert deployment.history(source_format) == expected_history(source_format)


@pytest.mark.parametrize("source_format", FORMATS)
def test_the_current_state_holds_one_row_per_order(deployment, source_format):
    rows = deployment.spark.table(f"{SCHEMA}.cdc_current").where(f"source_format = '{source_format}'").collect()
    row = dds if source_format == "huawei_drs_mongo_json" else relational
    assert sorted((r.pk, dict(r.row)) for r in rows) == [
        ('["1"]', row("shipped", "1")),
        ('["2"]', row("refunded", "2", "n2" if row is dds else None)),
        ('["3"]', row("paid", "3", "n3" if row is dds else None)),
        ('["5"]', row("paid", "5")),
    ]


def test_the_typed_views_keep_note_for_the_versions_before_the_drop(deployment):
    current = deployment.spark.table(f"{SCHEMA}.shop__orders__huawei_drs_json__current")
    assert sorted(map(tuple, current.select("id", "status", "note").collect())) == [
        (1, "shipped", None),
        (2, "refunded", None),
        (3, "paid", None),
        (5, "paid", None),
    ]
    history = deployment.spark.table(f"{SCHEMA}.shop__orders__huawei_drs_json__history")
    notes = history.where("note is not null").select("id", "status", "note", "valid_from", "valid_to")
    assert sorted(map(tuple, notes.collect())) == [
        (1, "new", "n1", at(1), at(7)),
        (2, "new", "n2", at(2), at(5)),
        (2, "paid", "n2", at(5), at(30)),
        (3, "new", "n3", at(3), at(8)),
        (4, "new", "n4", at(4), at(30)),
        (4, "new", "n4", at(30), None),
    ]


def test_the_copy_of_task_1s_message_is_a_redelivery_and_task_2s_tables_are_recorded(deployment):
    redeliveries = deployment.spark.table(f"{SCHEMA}.cdc_redeliveries").groupBy("source_format").count().collect()
    # DTS's copy is a transaction: its BEGIN, its update and its COMMIT.
    assert {row.source_format: row["count"] for row in redeliveries} == {
        **dict.fromkeys(FORMATS, 1),
        "tencent_dts_protobuf": 3,
    }
    tasks = deployment.spark.sql(
        "select source_format, source_task, min(first_event_ts) as began,"
        f" min(full_sync_completed_in_batch) as completed from {SCHEMA}.cdc_task_tables"
        " where source_table = 'orders' group by 1, 2"
    ).collect()
    last_batch = deployment.spark.sql(f"select max(batch_id) as b from {SCHEMA}.cdc_batches").first().b
    began = {
        "huawei_drs_json": at(30),
        "huawei_drs_mongo_json": at(30),
        "canal_json": at(30),
        "tencent_dts_protobuf": at(20),
    }
    assert sorted(map(tuple, tasks)) == sorted(
        [(f, 1, at(1), None) for f in FORMATS]
        + [(f, 2, began[f], None if f == "tencent_dts_protobuf" else last_batch) for f in FORMATS]
    )


def test_the_whole_history_holds_its_invariants(deployment):
    # The history's audit tests (one open version per key, contiguous versions) read every row.
    deployment.project.run_checked(["test", "--select", "cdc_history", "cdc_current", "cdc_task_tables"])
