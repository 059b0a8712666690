"""Seeds load when they change, not on every run (README, "The scheduled run").

`make seeds` and cdc-build (so the Airflow DAG and Dagster's schedules) call this before a scheduled run:
when the seed files or cdc_type_mappings (the one model built from seeds alone) differ from what the
warehouse last loaded, it runs `dbt seed` and `dbt run --select cdc_type_mappings` in this process (one
Spark session), then records their fingerprint as a property of the target schema: in the catalog, where
every process of a shared deployment sees it. A warehouse without that table loads them. The audit loads
nothing and tests what was loaded.
"""

import hashlib
import re
import sys
from collections.abc import Callable
from pathlib import Path

from cdc_lakehouse import PROJECT_DIR

SEED_INPUTS = ("seeds", "models/types/cdc_type_mappings.sql")
FINGERPRINT_PROPERTY = "cdc.seeds.fingerprint"
TYPE_MAPPINGS = "cdc_type_mappings"


def seeds_fingerprint(project_dir: Path = PROJECT_DIR) -> str:
    digest = hashlib.sha256()
    for name in SEED_INPUTS:
        root = project_dir / name
        for path in sorted(root.rglob("*")) if root.is_dir() else [root]:
            if path.is_file():
                digest.update(path.relative_to(project_dir).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def loaded_fingerprint(spark, schema: str) -> str | None:
    """The fingerprint of the seeds last loaded into the schema, if their table is there."""
    if not spark.catalog.tableExists(f"{schema}.{TYPE_MAPPINGS}"):
        return None
    described = dict(spark.sql(f"describe schema extended {schema}").collect())
    found = re.search(rf"\({re.escape(FINGERPRINT_PROPERTY)},(\w+)\)", described.get("Properties", ""))
    return found.group(1) if found else None


def load_seeds_if_changed(
    dbt: Callable[[list[str]], None], spark, schema: str, project_dir: Path = PROJECT_DIR
) -> bool:
    """Load the seeds of the project at `project_dir` through `dbt` (a function running one dbt command) into
    `schema` unless loaded as they are; whether it did."""
    fingerprint = seeds_fingerprint(project_dir)
    if loaded_fingerprint(spark, schema) == fingerprint:
        return False
    dbt(["seed"])
    dbt(["run", "--select", TYPE_MAPPINGS])
    spark.sql(f"alter schema {schema} set dbproperties ('{FINGERPRINT_PROPERTY}' = '{fingerprint}')")
    return True


def main() -> int:
    from cdc_lakehouse.dbt_project import DbtProject
    from cdc_lakehouse.schema_lease import schema_lease
    from cdc_lakehouse.session import open_session

    project = DbtProject()
    spark = open_session(project.spark_settings())
    manifest = project.manifest()
    schema = manifest.nodes[f"model.{manifest.metadata.project_name}.{TYPE_MAPPINGS}"].schema
    with schema_lease(spark, schema):
        loaded = load_seeds_if_changed(project.run_checked, spark, schema, project.project_dir)
    print("seeds loaded" if loaded else "seeds unchanged since they were loaded: not reloaded")
    return 0


if __name__ == "__main__":
    sys.exit(main())
