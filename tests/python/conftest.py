"""Shared fixtures: a real local Spark session with Delta, and a dbt warehouse built from landed data.

The in-process session keeps its catalog in memory (no Derby), so dbt and cdc-land can run in
subprocesses against their own embedded Derby metastore while tests read the Delta tables by path.
"""

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


@pytest.fixture(scope="session")
def built_warehouse(tmp_path_factory) -> Iterator[Warehouse]:
    """Sample data, vendor examples and split-envelope cases landed, then one `dbt build`."""
    warehouse = Warehouse(tmp_path_factory.mktemp("dbt_warehouse"))
    split_cases = tmp_path_factory.mktemp("dts_split_cases")
    write_dts_split_cases(split_cases)
    assert_succeeded(
        warehouse.run(
            sys.executable, "sample_data/land_samples.py", "sample_data", str(VENDOR_EXAMPLES), str(split_cases)
        )
    )
    assert_succeeded(warehouse.dbt("build"))
    yield warehouse
