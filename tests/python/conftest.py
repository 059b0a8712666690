"""Shared fixtures: a real local Spark session with Delta, and a dbt warehouse built from landed data.

The in-process session keeps its catalog in memory (no Derby), so dbt and cdc-land can run in
subprocesses against their own embedded Derby metastore while tests read the Delta tables by path.
What the suites share besides fixtures is in helpers.py.
"""

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# Asserts in the shared helpers report their operands, as they did in the test modules.
pytest.register_assert_rewrite("helpers", "vendor_expectations")

from helpers import (  # noqa: E402
    DRS_AVRO_SCHEMA,
    VENDOR_EXAMPLES,
    Warehouse,
    assert_succeeded,
    write_drs_avro_cases,
    write_dts_split_cases,
    write_garbage_cases,
)

from cdc_lakehouse import PROJECT_DIR  # noqa: E402

os.environ.setdefault("DBT_PROFILES_DIR", str(PROJECT_DIR / "profiles"))
os.environ.setdefault("CDC_JARS_DIR", str(PROJECT_DIR / "jars" / "lib"))
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("CDC_DRS_AVRO_SCHEMA", str(DRS_AVRO_SCHEMA))


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    from cdc_lakehouse.session import open_session, profile_spark_settings

    warehouse = tmp_path_factory.mktemp("in_memory_catalog")
    settings = profile_spark_settings("local")
    settings.update(
        {
            "spark.master": "local[2]",
            "spark.sql.catalogImplementation": "in-memory",
            "spark.sql.warehouse.dir": str(warehouse / "tables"),
            # This JVM runs the suite's in-process dbt runs for up to half an hour in CI: C2's code pays for
            # its compiling here, unlike in the short dbt and cdc-* JVMs the tests start, which keep the
            # C1 alone of ci.mk (docs/decisions.md, "CI: the data path's suites").
            "spark.driver.extraJavaOptions": settings["spark.driver.extraJavaOptions"].replace(
                "-XX:TieredStopAtLevel=1", ""
            ),
        }
    )
    session = open_session(settings)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def dbt_work_dir(tmp_path_factory) -> Path:
    """One target and log folder for the in-process dbt runs, so they share dbt's partial parse."""
    return tmp_path_factory.mktemp("in_process_dbt")


@pytest.fixture(scope="session")
def built_warehouse(tmp_path_factory) -> Iterator[Warehouse]:
    """Sample data, vendor examples, split-envelope cases, DRS Avro records and garbage landed, then one
    `dbt build`, which must complete."""
    warehouse = Warehouse(tmp_path_factory.mktemp("dbt_warehouse"))
    split_cases = tmp_path_factory.mktemp("dts_split_cases")
    write_dts_split_cases(split_cases)
    avro_cases = tmp_path_factory.mktemp("drs_avro_cases")
    write_drs_avro_cases(avro_cases)
    garbage_cases = tmp_path_factory.mktemp("garbage_cases")
    write_garbage_cases(garbage_cases)
    assert_succeeded(
        warehouse.run(
            sys.executable,
            "sample_data/land_samples.py",
            "sample_data",
            str(VENDOR_EXAMPLES),
            str(split_cases),
            str(avro_cases),
            str(garbage_cases),
        )
    )
    # Every landed byte builds: vendor findings (an unmapped type of own_schema_evolution.jsonl) only warn.
    build = warehouse.dbt("build")
    assert_succeeded(build)
    warehouse.build_output = build.stdout
    yield warehouse
