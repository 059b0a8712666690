"""Shared fixtures: a real local Spark session with Delta, and a dbt warehouse built from landed data.

The in-process session keeps its catalog in memory (no Derby), so dbt and cdc-land can run in
subprocesses against their own embedded Derby metastore while tests read the Delta tables by path.
"""

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PROJECT_DIR = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
VENDOR_EXAMPLES = Path(__file__).resolve().parent / "vendor_examples"

os.environ.setdefault("DBT_PROFILES_DIR", str(PROJECT_DIR / "profiles"))
os.environ.setdefault("CDC_JARS_DIR", str(PROJECT_DIR / "jars" / "lib"))
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
# Writer schema of the Huawei DRS Avro test records (dbt var huawei_drs_avro_schema reads this).
DRS_AVRO_SCHEMA = Path(__file__).resolve().parent / "schemas" / "drs_record.avsc"
os.environ.setdefault("CDC_DRS_AVRO_SCHEMA", str(DRS_AVRO_SCHEMA))


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    from python_udfs.session import open_session, profile_spark_settings

    warehouse = tmp_path_factory.mktemp("in_memory_catalog")
    settings = profile_spark_settings("local")
    settings.update(
        {
            "spark.master": "local[2]",
            "spark.sql.catalogImplementation": "in-memory",
            "spark.sql.warehouse.dir": str(warehouse / "tables"),
        }
    )
    session = open_session(settings)
    yield session
    session.stop()


@dataclass
class Warehouse:
    """An embedded dbt warehouse in a temporary folder, driven through the real commands."""

    root: Path

    @property
    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "CDC_WAREHOUSE": str(self.root),
            "DBT_TARGET_PATH": str(self.root / "dbt_target"),
            "DBT_LOG_PATH": str(self.root / "dbt_logs"),
        }

    def run(self, *command: str) -> subprocess.CompletedProcess:
        return subprocess.run(command, cwd=PROJECT_DIR, env=self.env, capture_output=True, text=True, check=False)

    def land(self, *arguments: str) -> subprocess.CompletedProcess:
        return self.run(str(VENV_BIN / "cdc-land"), *arguments)

    def dbt(self, *arguments: str) -> subprocess.CompletedProcess:
        return self.run(str(VENV_BIN / "dbt"), *arguments)

    def table_path(self, schema: str, table: str) -> str:
        return str(self.root / "tables" / f"{schema}.db" / table)


@pytest.fixture(scope="session")
def dbt_work_dir(tmp_path_factory) -> Path:
    """One target and log folder for the in-process dbt runs, so they share dbt's partial parse."""
    return tmp_path_factory.mktemp("in_process_dbt")


def dbt_in_process(spark, work_dir: Path, *arguments: str, dbt_vars: dict | None = None, check: bool = True):
    """Run a dbt command in this process, on the test session (no JVM start): dbt-spark's session method
    gets the running session, and the project's plugin registers the UDFs in it as in any dbt process."""
    from dbt.cli.main import dbtRunner

    assert spark is not None, "the in-process runner works on the test session: request the spark fixture"
    result = dbtRunner().invoke(
        [
            *arguments,
            "--project-dir",
            str(PROJECT_DIR),
            *(["--vars", json.dumps(dbt_vars)] if dbt_vars else []),
            "--target-path",
            str(work_dir / "target"),
            "--log-path",
            str(work_dir / "logs"),
            "--quiet",
        ]
    )
    if check:
        assert result.success, f"dbt {' '.join(arguments)} failed: {result.exception or result.result}"
    return result


def dbt_show_in_process(spark, work_dir: Path, sql: str, dbt_vars: dict | None = None) -> list[dict]:
    """`dbt show --inline` in this process: the rows of the query, for queries of macros and UDFs only."""
    result = dbt_in_process(spark, work_dir, "show", "--inline", sql, "--limit", "1000", dbt_vars=dbt_vars)
    (shown,) = result.result.results
    table = shown.agate_table
    return [dict(zip(table.column_names, row, strict=True)) for row in table.rows]


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


def dts_envelope(data: bytes, total: int = 1, index: int = 0) -> bytes:
    from python_udfs.proto import tencent_dts_subscribe_pb2 as pb

    return pb.Envelope(version=1, total=total, index=index, data=data).SerializeToString()


def dts_split(data: bytes, total: int) -> list[bytes]:
    size = -(-len(data) // total)
    return [dts_envelope(data[i * size : (i + 1) * size], total, i) for i in range(total)]


def write_dts_split_cases(root: Path) -> dict[str, list[bytes]]:
    """Topics of split envelopes, one folder each (landed in file order), as <root>/tencent_dts_protobuf/."""
    in_order = dts_split(dts_heartbeat_entries(101), 3)
    cases = {
        "split_in_order": [*in_order, dts_envelope(dts_heartbeat_entries(102))],
        "split_interleaved#0": dts_split(dts_heartbeat_entries(201), 2),
        "split_interleaved#1": dts_split(dts_heartbeat_entries(202), 2),
        "split_missing_part": [*dts_split(dts_heartbeat_entries(301), 3)[:2], dts_envelope(dts_heartbeat_entries(302))],
        "split_repeated_part": [in_order[0], in_order[1], in_order[1], in_order[2]],
        "split_out_of_order": [in_order[0], in_order[2], in_order[1]],
        "split_waiting": [dts_envelope(dts_heartbeat_entries(401)), dts_split(dts_heartbeat_entries(402), 2)[0]],
    }
    for topic, messages in cases.items():
        folder = root / "tencent_dts_protobuf" / topic
        folder.mkdir(parents=True)
        for number, message in enumerate(messages):
            (folder / f"{number:03d}.bin").write_bytes(message)
    return cases


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

    from python_udfs.huawei_drs_avro import load_schema

    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, load_schema(str(DRS_AVRO_SCHEMA)), record)
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


@pytest.fixture(scope="session")
def built_warehouse(tmp_path_factory) -> Iterator[Warehouse]:
    """Sample data, vendor examples, split-envelope cases and DRS Avro records landed, then one `dbt build`."""
    warehouse = Warehouse(tmp_path_factory.mktemp("dbt_warehouse"))
    split_cases = tmp_path_factory.mktemp("dts_split_cases")
    write_dts_split_cases(split_cases)
    avro_cases = tmp_path_factory.mktemp("drs_avro_cases")
    write_drs_avro_cases(avro_cases)
    assert_succeeded(
        warehouse.run(
            sys.executable,
            "sample_data/land_samples.py",
            "sample_data",
            str(VENDOR_EXAMPLES),
            str(split_cases),
            str(avro_cases),
        )
    )
    # own_schema_evolution.jsonl brings a type no seed maps: test_types expects this one test to fail.
    assert_succeeded(warehouse.dbt("build", "--exclude", "cdc_every_vendor_type_is_mapped"))
    yield warehouse
