"""The slow tests on a warehouse of the Huawei DRS JSON vendor examples, built with only that format enabled
(schema drs_examples, in this worker's session), in one file: make test-slow spreads files over two
workers, and each worker would build it.

- `dbt docs generate`: it succeeds, each format's decisions (its docs block, beside its staging model) are
  in the description of a staging model, and the catalog holds the built tables. With every format
  enabled, docs generate documents them all and catalogs what exists.
- cdc-scaffold writes typed models for the warehouse's source tables into a copy of the project, and they
  build, a column added by DDL null in the versions from before it.
"""

import json
from pathlib import Path

import pytest
import yaml
from conftest import VENDOR_EXAMPLES, dbt_in_process, in_process_schema, project_without_typed_tables

from cdc_lakehouse.formats import SOURCE_FORMATS

# Many dbt runs: make test-slow, which keeps make test under its 12 minutes.
pytestmark = pytest.mark.slow

SCHEMA = "drs_examples"
ONLY_DRS = {"cdc_enabled_formats": ["huawei_drs_json"]}


@pytest.fixture(scope="module")
def drs_warehouse(spark, tmp_path_factory) -> Path:
    """The DRS JSON vendor examples landed, then one `dbt build` of the seeds, models and snapshot with only
    that format enabled; its tests are left out: make test's shared build runs them all, test_enabled_formats
    those of a one-format deployment. Its dbt work folder (the target of docs generate)."""
    from cdc_lakehouse.landing import land, read_messages

    work_dir = tmp_path_factory.mktemp("drs_examples_dbt")
    with in_process_schema(spark, SCHEMA):
        for path in sorted((VENDOR_EXAMPLES / "huawei_drs_json").glob("*.jsonl")):
            land(spark, "huawei_drs_json", f"huawei_drs_json.{path.stem}", 0, read_messages([path]))
        dbt_in_process(spark, work_dir, "build", "--exclude-resource-type", "test", "unit_test", dbt_vars=ONLY_DRS)
        yield work_dir


def test_docs_show_each_formats_decisions_and_the_tables(spark, drs_warehouse):
    dbt_in_process(spark, drs_warehouse, "docs", "generate")
    target = drs_warehouse / "target"
    manifest = json.loads((target / "manifest.json").read_text())
    staging_models = [
        model for model in manifest["nodes"].values() if model["original_file_path"].startswith("models/staging/")
    ]
    for source_format in SOURCE_FORMATS:
        block = manifest["docs"][f"doc.cdc_lakehouse.{source_format}"]
        heading = block["block_contents"].strip().splitlines()[0]
        assert heading.startswith(f"# {source_format} — ")
        assert any(heading in model["description"] for model in staging_models), source_format
    catalog = json.loads((target / "catalog.json").read_text())["nodes"]
    history_columns = catalog["model.cdc_lakehouse.cdc_history"]["columns"]
    assert {"source_name", "event_order", "valid_from", "is_current"} <= set(history_columns)


@pytest.fixture(scope="module")
def scaffold_project(tmp_path_factory) -> Path:
    """A copy of the project without typed table models, for cdc-scaffold to write into; it builds against
    drs_warehouse, where vendor_examples/huawei_drs_json/own_schema_evolution.jsonl landed: `evo.items`
    gains a column `color` by DDL between two inserts, and `evo.shapes` has a type no seed maps."""
    return project_without_typed_tables(tmp_path_factory.mktemp("scaffold_project") / "project")


def test_scaffolded_tables_build_with_added_columns_null_before(
    spark, drs_warehouse, scaffold_project, tmp_path, capsys
):
    from cdc_lakehouse.scaffold import main as scaffold

    arguments = ["--project-dir", str(scaffold_project), "--source-format", "huawei_drs_json"]
    assert scaffold([*arguments, "--dry-run"]) == 0
    assert "cdc-scaffold: (dry run) models/tables/evo__items__history.sql: new" in capsys.readouterr().out
    assert not (scaffold_project / "models" / "tables").exists()
    assert scaffold(arguments) == 0
    written = sorted(p.name for p in (scaffold_project / "models" / "tables").iterdir())
    assert {
        "_evo__items__models.yml",
        "_evo__shapes__models.yml",
        "evo__items__current.sql",
        "evo__items__history.sql",
        "evo__shapes__current.sql",
        "evo__shapes__history.sql",
    } <= set(written)
    # The YAML documents the typed columns: color arrived by DDL; DRS's mysqlType "decimal" has no parameters.
    (items_history, _) = yaml.safe_load(
        (scaffold_project / "models" / "tables" / "_evo__items__models.yml").read_text()
    )["models"]
    assert [(column["name"], column.get("data_type")) for column in items_history["columns"][10:]] == [
        ("id", "int"),
        ("price", "decimal(38,10)"),
        ("color", "string"),
    ]
    evo_models = ["evo__items__history", "evo__items__current", "evo__shapes__history", "evo__shapes__current"]
    dbt_in_process(spark, tmp_path, "build", "--select", *evo_models, project_dir=scaffold_project)
    items = spark.table(f"{SCHEMA}.evo__items__history").orderBy("id")
    assert [
        row.asDict()
        for row in items.selectExpr(
            "id", "typeof(id) as id_type", "cast(price as string) as price", "color", "is_current"
        ).collect()
    ] == [
        {"id": 1, "id_type": "int", "price": "9.5000000000", "color": None, "is_current": True},
        {"id": 2, "id_type": "int", "price": "3.2500000000", "color": "red", "is_current": True},
    ]
    # The unmapped type is kept as its text (the DRS staging turned the byte list "[]" into base64 "").
    shapes = spark.table(f"{SCHEMA}.evo__shapes__current")
    assert [row.shape for row in shapes.collect()] == [""]
