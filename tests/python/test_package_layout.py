"""Python by where it runs: executors receive python_udfs only, so it imports neither dbt nor the driver
package cdc_lakehouse, and its decoders import no Spark (bytes in, plain values out). Test modules stand
alone: what they share is in tests/python/helpers.py, vendor_expectations.py and conftest.py's fixtures."""

import ast
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "python_udfs"
SPARK_REGISTRATION = {"spark_udfs.py"}


def imported_modules(path: Path) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.add(node.module)
    return modules


MODULES = sorted(path for path in PACKAGE.rglob("*.py") if not path.name.endswith("_pb2.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda path: str(path.relative_to(PACKAGE)))
def test_executor_code_imports_no_dbt_and_no_driver_code(path):
    roots = {module.split(".")[0] for module in imported_modules(path)}
    assert not roots & {"dbt", "dbt_common", "cdc_lakehouse", "dbt_cdc_udfs"}
    if path.name not in SPARK_REGISTRATION:
        assert "pyspark" not in roots


def test_executor_environment_has_every_package_python_udfs_imports():
    """make executor-env packs python_udfs/requirements.txt; Spark puts pyspark on its workers' path."""
    required = {
        line.strip().lower() for line in (PACKAGE / "requirements.txt").read_text().splitlines() if line.strip()
    }
    required -= {line for line in required if line.startswith("#")}
    providers = packages_distributions()
    roots = {module.split(".")[0] for path in PACKAGE.rglob("*.py") for module in imported_modules(path)}
    third_party = roots - set(sys.stdlib_module_names) - {"python_udfs", "pyspark"}
    assert "pyarrow" in third_party
    for root in third_party:
        assert {distribution.lower() for distribution in providers[root]} & required, root


def test_no_test_module_imports_another_nor_conftest():
    tests = Path(__file__).resolve().parent
    leaning = {
        path.name: sorted(m for m in imported_modules(path) if m.split(".")[0].startswith("test_") or m == "conftest")
        for path in sorted(tests.glob("*.py"))
    }
    assert {name: modules for name, modules in leaning.items() if modules} == {}
