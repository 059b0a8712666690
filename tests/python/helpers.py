"""What the suites share: the warehouses they drive, in-process dbt, project copies, the messages they land and
the tables they read back. Test modules import from here (and from vendor_expectations.py), never from each
other; conftest.py holds the fixtures.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from kafka_broker import Broker, RunningProcess

from cdc_lakehouse import PROJECT_DIR
from vendor_writers.tencent_dts_protobuf import envelope as dts_envelope
from vendor_writers.tencent_dts_protobuf import envelopes as dts_split

__all__ = ["PROJECT_DIR", "dts_envelope", "dts_split"]
VENV_BIN = Path(sys.executable).parent
VENDOR_EXAMPLES = Path(__file__).resolve().parent / "vendor_examples"
# Writer schema of the Huawei DRS Avro test records (dbt var huawei_drs_avro_schema reads this).
DRS_AVRO_SCHEMA = PROJECT_DIR / "sample_data" / "drs_record.avsc"


@dataclass
class Warehouse:
    """An embedded dbt warehouse in a temporary folder, driven through the real commands."""

    root: Path
    # The output of the build that built it, for tests of what dbt reported.
    build_output: str = ""
    # Where the tables are when not under root (an hdfs:// URI); dbt's target and logs stay under root.
    storage: str | None = None
    # More environment of its commands (a shared metastore's settings).
    settings: dict[str, str] = field(default_factory=dict)

    @property
    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "CDC_WAREHOUSE": self.storage or str(self.root),
            "DBT_TARGET_PATH": str(self.root / "dbt_target"),
            "DBT_LOG_PATH": str(self.root / "dbt_logs"),
            **self.settings,
        }

    def run(self, *command: str) -> subprocess.CompletedProcess:
        return subprocess.run(command, cwd=PROJECT_DIR, env=self.env, capture_output=True, text=True, check=False)

    def land(self, *arguments: str) -> subprocess.CompletedProcess:
        return self.run(str(VENV_BIN / "cdc-land"), *arguments)

    def dbt(self, *arguments: str) -> subprocess.CompletedProcess:
        return self.run(str(VENV_BIN / "dbt"), *arguments)

    def table_path(self, schema: str, table: str) -> str:
        return f"{self.storage or self.root}/tables/{schema}.db/{table}"


def read_view(spark, warehouse: Warehouse, model: str, schema: str = "cdc"):
    """A view a dbt process created in a local warehouse (a typed view), read by this session as the tests read
    its tables (a dbt process would cost a JVM start): the view's SQL as dbt compiled it (under the warehouse's
    dbt target), each relation of `schema` it selects from read from its Delta files, or from its own
    compiled SQL when it is a view too."""
    compiled = warehouse.root / "dbt_target" / "compiled"

    def sql_of(name: str) -> str:
        (path,) = compiled.rglob(f"models/**/{name}.sql")
        return re.sub(rf"\b{schema}\.(\w+)\b", relation, path.read_text())

    def relation(reference: re.Match) -> str:
        path = warehouse.table_path(schema, reference.group(1))
        is_table = (Path(path) / "_delta_log").is_dir()
        return f"delta.`{path}`" if is_table else f"({sql_of(reference.group(1))})"

    return spark.sql(sql_of(model))


def dbt_in_process(
    spark,
    work_dir: Path,
    *arguments: str,
    dbt_vars: dict | None = None,
    check: bool = True,
    project_dir: Path = PROJECT_DIR,
):
    """Run a dbt command in this process, on the test session (no JVM start): dbt-spark's session method
    gets the running session, and the project's plugin registers the UDFs in it as in any dbt process."""
    from dbt.cli.main import dbtRunner

    assert spark is not None, "the in-process runner works on the test session: request the spark fixture"
    result = dbtRunner().invoke(
        [
            *arguments,
            "--project-dir",
            str(project_dir),
            *(["--vars", json.dumps(dbt_vars)] if dbt_vars else []),
            "--target-path",
            str(work_dir / "target"),
            "--log-path",
            str(work_dir / "logs"),
            "--quiet",
        ]
    )
    if check:
        assert result.success, f"dbt {' '.join(arguments)} failed: {result.exception or failed_nodes(result.result)}"
    return result


@contextmanager
def in_process_schema(spark, schema: str) -> Iterator[None]:
    """The in-process dbt runs on `schema` (CDC_SCHEMA) of the test session, from nothing, with an empty
    landing table; landing emptied again after, for the worker's next module."""
    from cdc_lakehouse.landing_table import LANDING_TABLE, ensure_landing_table

    with pytest.MonkeyPatch.context() as env:
        env.setenv("CDC_SCHEMA", schema)
        spark.sql(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        ensure_landing_table(spark)
        spark.sql(f"DELETE FROM {LANDING_TABLE}")
        yield
        spark.sql(f"DELETE FROM {LANDING_TABLE}")


def failed_nodes(result) -> str:
    """The nodes of a dbt result that errored or failed, one line each with dbt's message."""
    done = getattr(result, "results", None) or []
    failed = [f"{r.node.name}: {r.status}: {r.message}" for r in done if str(r.status) in ("error", "fail")]
    return "\n".join(failed) or repr(result)[:2000]


def dbt_show_in_process(spark, work_dir: Path, sql: str, dbt_vars: dict | None = None) -> list[dict]:
    """`dbt show --inline` in this process: the rows of the query, for queries of macros and UDFs only."""
    result = dbt_in_process(spark, work_dir, "show", "--inline", sql, "--limit", "1000", dbt_vars=dbt_vars)
    (shown,) = result.result.results
    table = shown.agate_table
    return [dict(zip(table.column_names, row, strict=True)) for row in table.rows]


def project_copy(project: Path) -> Path:
    """A copy of this dbt project at `project`: its dbt files, not its Python, profile or warehouse."""
    for item in ["dbt_project.yml", "selectors.yml", "models", "macros", "seeds", "snapshots", "tests"]:
        source = PROJECT_DIR / item
        if source.is_dir():
            shutil.copytree(source, project / item, ignore=shutil.ignore_patterns("python", "__pycache__"))
        else:
            (project / item).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, project / item)
    return project


def project_without_typed_tables(project: Path) -> Path:
    """A copy of this dbt project at `project` without its typed table models, for cdc-scaffold to write
    into, nor its snapshot."""
    shutil.rmtree(project_copy(project) / "models" / "tables")
    shutil.rmtree(project / "snapshots")
    return project


def mark_stored_history(project: Path, *models: str) -> Path:
    """The project at `project` with these typed history models stored (README, "Typed tables and querying"),
    as a deployment marks them in its dbt_project.yml."""
    path = project / "dbt_project.yml"
    text = path.read_text()
    anchor = "    tables:\n      +tags: [cdc_pipeline]\n      +materialized: view\n"
    assert anchor in text, "dbt_project.yml no longer configures models/tables/ as this expects"
    marks = "".join(f"      {model}:\n        +materialized: cdc_stored_history\n" for model in models)
    path.write_text(text.replace(anchor, anchor + marks))
    return project


def typed_text_sql(expression: str) -> str:
    """SQL of "typeof|text" of a typed value: binary as upper-case hex, NULL for null."""
    return (
        f"concat(typeof({expression}), '|', coalesce(if(typeof({expression}) = 'binary', hex({expression}),"
        f" cast({expression} as string)), 'NULL'))"
    )


def assert_succeeded(result: subprocess.CompletedProcess) -> None:
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout[-6000:]}\n{result.stderr[-6000:]}"


def dts_heartbeat_entries(epoch: int) -> bytes:
    """A serialized Entries holding one HEARTBEAT entry with this epoch and seqId."""
    from python_udfs.proto import tencent_dts_subscribe_pb2 as pb

    entry = pb.Entry()
    entry.header.messageType = pb.HEARTBEAT
    entry.header.sourceType = pb.MYSQL
    entry.header.seqId = epoch
    entry.event.heartbeatEvent.epoch = epoch
    return pb.Entries(items=[entry]).SerializeToString()


def dts_insert_entries(seq_id: int, key: str, column_names: tuple[str, ...] = ("id",)) -> bytes:
    """A serialized Entries holding one INSERT of `key` into shop.items, with this seqId (0: none); every
    column (id by default) holds the key."""
    from python_udfs.proto import tencent_dts_subscribe_pb2 as pb

    entry = pb.Entry()
    entry.header.messageType = pb.DML
    entry.header.sourceType = pb.MYSQL
    entry.header.schemaName = "shop"
    entry.header.tableName = "items"
    entry.header.seqId = seq_id
    entry.event.dmlEvent.dmlEventType = pb.INSERT
    row = entry.event.dmlEvent.rows.add()
    for name in column_names:
        entry.event.dmlEvent.columns.add(name=name, originalType="int(11)", isKey=name == "id")
        row.newColumns.add(dataType=pb.INT32, sv=key)
    return pb.Entries(items=[entry]).SerializeToString()


def write_dts_split_cases(root: Path) -> dict[str, dict[int, bytes]]:
    """Topics of split envelopes, one folder each (landed in file order), as <root>/tencent_dts_protobuf/:
    {topic: {offset: message}}."""
    in_order = dts_split(dts_heartbeat_entries(101), 3)
    cases = {
        "split_in_order": [*in_order, dts_envelope(dts_heartbeat_entries(102))],
        "split_interleaved#0": dts_split(dts_heartbeat_entries(201), 2),
        "split_interleaved#1": dts_split(dts_heartbeat_entries(202), 2),
        "split_missing_part": [*dts_split(dts_heartbeat_entries(301), 3)[:2], dts_envelope(dts_heartbeat_entries(302))],
        "split_repeated_part": [in_order[0], in_order[1], in_order[1], in_order[2]],
        "split_out_of_order": [in_order[0], in_order[2], in_order[1]],
        "split_waiting": [dts_envelope(dts_heartbeat_entries(401)), dts_split(dts_heartbeat_entries(402), 2)[0]],
        # DTS numbers every entry: an insert without seqId has no place in the order.
        "no_seq_id": [dts_envelope(dts_insert_entries(0, "1")), dts_envelope(dts_insert_entries(7, "2"))],
        # A row image is a map of column names: an Entries whose DML repeats a name is not a valid change.
        "repeated_column": [
            dts_envelope(dts_insert_entries(3, "1", ("id", "id"))),
            dts_envelope(dts_insert_entries(4, "2")),
        ],
    }
    heartbeat = dts_heartbeat_entries
    group_601 = dts_split(heartbeat(601), 3)
    group_603 = dts_split(heartbeat(603), 2)
    group_701 = dts_split(heartbeat(701), 3)
    group_703 = dts_split(heartbeat(703), 3)
    group_705 = dts_split(heartbeat(705), 2)
    # Streams with offset gaps, as a consumer of a transactional producer's topic (commit markers take
    # offsets) or of a compacted topic lands them: {offset: message}, the offsets between never landed.
    gap_cases = {
        # Three parts at 10, 12 and 15; a whole Entries at 17 and a two-part group at 20-21, after gaps.
        "gaps_in_order": {
            10: group_601[0],
            12: group_601[1],
            15: group_601[2],
            17: dts_envelope(heartbeat(602)),
            20: group_603[0],
            21: group_603[1],
        },
        "gaps_broken_groups": {
            # The last part of the group at 0 never lands: the whole Entries at 5 starts the next group.
            0: group_701[0],
            2: group_701[1],
            5: dts_envelope(heartbeat(702)),
            # The middle part of the group at 8 never lands: its last part is the next message.
            8: group_703[0],
            11: group_703[2],
            13: dts_envelope(heartbeat(704)),
            # The second part of the group at 20 is delivered again at 25.
            20: group_705[0],
            22: group_705[1],
            25: group_705[1],
        },
    }
    for topic, messages in cases.items():
        folder = root / "tencent_dts_protobuf" / topic
        folder.mkdir(parents=True)
        for number, message in enumerate(messages):
            (folder / f"{number:03d}.bin").write_bytes(message)
    for topic, stream in gap_cases.items():
        folder = root / "tencent_dts_protobuf" / topic
        folder.mkdir(parents=True)
        for number, (offset, message) in enumerate(stream.items()):
            # land_samples.py lands a file named <name>@<offset> at that offset.
            (folder / f"{number:03d}@{offset}.bin").write_bytes(message)
    return {**{topic: dict(enumerate(messages)) for topic, messages in cases.items()}, **gap_cases}


# Huawei DRS Avro records, following the DRS JSON field list and the vendor's JSON examples (seed 004).
DRS_AVRO_TYPES = {"id": "int", "c1": "varchar", "c5": "timestamp", "c12": "varbinary"}
DRS_AVRO_JDBC_TYPES = {"id": 4, "c1": 12, "c5": 93, "c12": -3}
DRS_AVRO_COMMON = {
    "ts": 1625058726990,
    "database": "test01",
    "table": "test",
    "isDdl": False,
    "sql": "",
    "mysqlType": DRS_AVRO_TYPES,
    "sqlType": DRS_AVRO_JDBC_TYPES,
    "pkNames": ["id"],
}
DRS_AVRO_ROW_103 = {"id": "103", "c1": "华为云huaweicloud", "c5": "1624614713.201", "c12": "[106, 103, 111]"}
DRS_AVRO_ROW_104 = {"id": "104", "c1": "cf3f70a7-7565-44b0-ae3c-83bec549ea8e:104", "c5": None, "c12": "[]"}
DRS_AVRO_RECORDS = {
    "insert": {**DRS_AVRO_COMMON, "id": 27676, "es": 1624614712000, "type": "INSERT", "data": [DRS_AVRO_ROW_103]},
    "update": {
        **DRS_AVRO_COMMON,
        "id": 27677,
        "es": 1624614713000,
        "type": "UPDATE",
        "data": [DRS_AVRO_ROW_104],
        "old": [DRS_AVRO_ROW_103],
    },
    "delete": {**DRS_AVRO_COMMON, "id": 27678, "es": 0, "type": "DELETE", "old": [DRS_AVRO_ROW_104]},
    "init_ddl": {
        **DRS_AVRO_COMMON,
        "id": 0,
        "es": 1733998006282,
        "type": "INIT_DDL",
        "isDdl": True,
        "sql": "CREATE TABLE `test` ( `id` int(11) NOT NULL, PRIMARY KEY (`id`))",
        "mysqlType": None,
        "sqlType": None,
        "pkNames": None,
    },
    "merge": {**DRS_AVRO_COMMON, "id": 27679, "es": 1624614714000, "type": "MERGE", "data": [DRS_AVRO_ROW_103]},
}


def drs_avro_record(record: dict) -> bytes:
    """One schemaless Avro record written with the test writer schema, as DRS writes one Kafka message."""
    import io

    import fastavro

    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, fastavro.parse_schema(json.loads(DRS_AVRO_SCHEMA.read_text())), record)
    return buffer.getvalue()


def write_drs_avro_cases(root: Path) -> dict[str, list[bytes]]:
    """DRS Avro topics, one folder each (one .bin file per message, in order), as <root>/huawei_drs_avro/."""
    records = {name: drs_avro_record(record) for name, record in DRS_AVRO_RECORDS.items()}
    cases = {
        "records": [records["insert"], records["update"], records["delete"], records["init_ddl"]],
        "bad_records": [
            records["update"][: len(records["update"]) // 2],  # truncated
            b"\xff\xfe\xfd garbage, not an Avro record",
            records["insert"] + b"\x00",  # a trailing byte after the record
            records["merge"],  # a good record with an unknown operation
        ],
    }
    for topic, messages in cases.items():
        folder = root / "huawei_drs_avro" / topic
        folder.mkdir(parents=True)
        for number, message in enumerate(messages):
            (folder / f"{number:03d}.bin").write_bytes(message)
    return cases


GARBAGE_TOPIC = "garbage"


def garbage_messages() -> list[bytes]:
    """Bytes no vendor writes: random bytes, broken UTF-8, JSON of other shapes, nesting past parser limits."""
    import random

    generator = random.Random(12)
    return [
        *(generator.randbytes(generator.randint(1, 64)) for _ in range(4)),
        b'\xff\xfe{"id": 1}',
        b"\xef\xbb\xbf",
        *(text.encode() for text in ('{"a": 1}', "[]", '"x"', "123", "{}", '{"id": 1e999, "data": [[]]}')),
        b"[" * 5000 + b"]" * 5000,
        b'{"data": ' * 3000 + b"1" + b"}" * 3000,
    ]


def write_garbage_cases(root: Path) -> None:
    """The same garbage as a topic of every format, one .bin file per message, as <root>/<format>/garbage/."""
    from cdc_lakehouse.formats import SOURCE_FORMATS

    for source_format in SOURCE_FORMATS:
        folder = root / source_format / GARBAGE_TOPIC
        folder.mkdir(parents=True)
        for number, message in enumerate(garbage_messages()):
            (folder / f"{number:03d}.bin").write_bytes(message)


def drs_json_insert(change: int, event_ms: int) -> bytes:
    """A Huawei DRS JSON insert of order `change` into shop.orders (MySQL), its source event (`es`) at event_ms."""
    return json.dumps(
        {
            "id": change,
            "es": event_ms,
            "ts": event_ms + 200,
            "database": "shop",
            "table": "orders",
            "type": "INSERT",
            "isDdl": False,
            "sql": "",
            "mysqlType": {"order_id": "bigint", "status": "varchar"},
            "sqlType": {"order_id": -5, "status": 12},
            "data": [{"order_id": str(change), "status": "created"}],
            "old": None,
            "pkNames": ["order_id"],
        }
    ).encode()


def read_table(spark, warehouse, table: str):
    return spark.read.format("delta").load(warehouse.table_path("cdc", table))


def event_rows(spark, warehouse, topic: str) -> list[dict]:
    events = read_table(spark, warehouse, "cdc_events").where(f"topic = '{topic}'").orderBy("kafka_offset", "row_index")
    return [row.asDict(recursive=True) for row in events.collect()]


def comparable_event_rows(spark, warehouse, topic: str) -> list[dict]:
    """A topic's events without event_id, ingested_at and cdc_batch_id (checked present), source_seq as int. The source
    identity and event_order are left out: test_event_order.py checks them for every format. So is row_columns, which
    each format's row_columns test checks."""
    rows = event_rows(spark, warehouse, topic)
    for row in rows:
        assert len(row.pop("event_id")) == 64
        assert row.pop("ingested_at") is not None
        assert row.pop("cdc_batch_id") is not None
        for column in ("source_name", "source_task", "source_time_zone", "event_order", "row_columns"):
            row.pop(column)
        row["source_seq"] = None if row["source_seq"] is None else int(row["source_seq"])
    return rows


def row_change(change_id: int, operation: str, seconds: int, data: dict, old: dict | None = None) -> bytes:
    """A Canal FlatMessage (Huawei DRS JSON has the same MySQL form) of one row of shop.items at T0 + seconds."""
    es = 1_700_000_000_000 + seconds * 1000
    message = {
        "id": change_id,
        "es": es,
        "ts": es + 7,
        "database": "shop",
        "table": "items",
        "type": operation,
        "isDdl": False,
        "sql": "",
        "pkNames": ["id"],
        "mysqlType": {"id": "int(11)", "note": "varchar(20)"},
        "sqlType": {"id": 4, "note": 12},
        "data": [data],
        "old": None if old is None else [old],
    }
    return json.dumps(message).encode()


def format_events(spark, warehouse, topic: str) -> list[dict]:
    """A topic's events in offset order, without the columns every event has (checked), the source
    identity, event_order (see event_orders) and row_columns (see row_columns)."""
    events = read_table(spark, warehouse, "cdc_events").where(f"topic = '{topic}'").orderBy("kafka_offset", "row_index")
    rows = []
    for row in events.collect():
        event = row.asDict(recursive=True)
        assert len(event.pop("event_id")) == 64
        assert event.pop("ingested_at") is not None
        assert event.pop("cdc_batch_id") is not None
        assert event.pop("source_format") == topic.split(".")[0]
        assert event.pop("topic") == topic
        assert event.pop("kafka_partition") == 0
        for column in ("source_name", "source_task", "source_time_zone", "event_order", "row_columns"):
            event.pop(column)
        rows.append(event)
    return rows


CREATED_MS = 1767225600000  # 2026-01-01 00:00:00 UTC
# What the build at the end selects: everything but the typed tables, the type seeds and the snapshot.
CHANGE_LOG = ("+cdc_history", "+cdc_quarantine", "+cdc_redeliveries", "cdc_current")


def drs(drs_id: int, operation: str, row: dict | None, old: dict | None = None) -> bytes:
    """A Huawei DRS JSON message of one row of shop.orders (a DELETE has its row in `old` only)."""
    return json.dumps(
        {
            "id": drs_id,
            "es": CREATED_MS + drs_id,
            "ts": CREATED_MS + drs_id + 230,
            "database": "shop",
            "table": "orders",
            "type": operation,
            "isDdl": False,
            "sql": "",
            "mysqlType": {"order_id": "bigint", "status": "varchar"},
            "sqlType": {"order_id": -5, "status": 12},
            "data": [row] if row else None,
            "old": [old] if old else None,
            "pkNames": ["order_id"],
        }
    ).encode()


def drs_insert(drs_id: int, order_id: str) -> bytes:
    return drs(drs_id, "INSERT", {"order_id": order_id, "status": "created"})


class Ingest:
    """cdc-ingest in a subprocess on the warehouse, with a configuration file of its own."""

    def __init__(self, warehouse: Warehouse, broker: Broker, name: str, rules: str) -> None:
        self.warehouse, self.name = warehouse, name
        self.config = warehouse.root / f"{name}.yml"
        self.config.write_text(rules)
        self.env = {**warehouse.env, "CDC_KAFKA_BOOTSTRAP_SERVERS": broker.plaintext}

    def command(self, *arguments: str) -> list[str]:
        return [str(VENV_BIN / "cdc-ingest"), "--config", str(self.config), "--name", self.name, *arguments]

    def run(self, *arguments: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            self.command(*arguments), env=env or self.env, capture_output=True, text=True, check=False, timeout=600
        )

    def start(self, *arguments: str) -> "RunningProcess":
        return RunningProcess(
            subprocess.Popen(
                self.command(*arguments),
                env=self.env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                start_new_session=True,
            )
        )
