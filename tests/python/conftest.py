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


@pytest.fixture(scope="session")
def built_warehouse(tmp_path_factory) -> Iterator[Warehouse]:
    """Sample data and vendor examples landed, then one `dbt build` (seeds, models, dbt tests)."""
    warehouse = Warehouse(tmp_path_factory.mktemp("dbt_warehouse"))
    assert_succeeded(warehouse.run(sys.executable, "sample_data/land_samples.py", "sample_data", str(VENDOR_EXAMPLES)))
    assert_succeeded(warehouse.dbt("build"))
    yield warehouse
