"""A deployment reads only the formats it enables (var cdc_enabled_formats), here Canal and Huawei DRS JSON: the
other formats' models leave the DAG, and their landed messages stay in landing, neither events nor quarantined
nor counted as lost. One `dbt build` (seeds, models, snapshot, every data and unit test) builds the warehouse
(schema enabled_formats_test), on which the other slow tests of a built warehouse run, in this one file:
make test-slow spreads files over two workers, and each worker would build it.

- `dbt docs generate`: it succeeds, each format's decisions (its docs block, beside its staging model) are
  in the description of a staging model, and the catalog holds the built tables. With every format
  enabled, docs generate documents them all and catalogs what exists.
- cdc-scaffold writes typed models for the warehouse's DRS source tables into a copy of the project, and
  they build, a column added by DDL null in the versions from before it.
"""

import json
from pathlib import Path
from typing import NamedTuple

import pytest
import yaml
from helpers import VENDOR_EXAMPLES, dbt_in_process, in_process_schema, project_without_typed_tables

from cdc_lakehouse.formats import SOURCE_FORMATS

# Many dbt runs on one warehouse: make test-slow, beside make test in CI.
pytestmark = pytest.mark.slow

SCHEMA = "enabled_formats_test"
ENABLED = {"cdc_enabled_formats": ["canal_json", "huawei_drs_json"]}
CANAL_TOPIC = "canal_json.enabled"
DRS_TOPIC = "huawei_drs_json.own_schema_evolution"
DTS_TOPIC = "tencent_dts_protobuf.enabled"


class Deployment(NamedTuple):
    work_dir: Path  # the in-process dbt runs' target and logs (docs generate writes the catalog there)
    models: set[str]  # what `dbt ls` lists


@pytest.fixture(scope="module")
def deployment(spark, tmp_path_factory) -> Deployment:
    """The messages landed, then the models dbt lists and the build."""
    from cdc_lakehouse.landing import land, read_messages

    work_dir = tmp_path_factory.mktemp("enabled_formats_dbt")
    with in_process_schema(spark, SCHEMA):
        # Insert, delete, re-insert after a Canal restart, and a copy of the re-insert (written by hand).
        canal = (VENDOR_EXAMPLES / "canal_json" / "stream_shop_c.jsonl").read_bytes().splitlines()
        land(spark, "canal_json", CANAL_TOPIC, 0, canal)
        land(
            spark,
            "huawei_drs_json",
            DRS_TOPIC,
            0,
            read_messages([VENDOR_EXAMPLES / "huawei_drs_json" / "own_schema_evolution.jsonl"]),
        )
        land(spark, "tencent_dts_protobuf", DTS_TOPIC, 0, [b"not even an Envelope"])
        listing = ("ls", "--resource-type", "model", "--output", "name")
        listed = dbt_in_process(spark, work_dir, *listing, dbt_vars=ENABLED)
        # The build runs every test, the reconciliation of landed messages included.
        dbt_in_process(spark, work_dir, "build", dbt_vars=ENABLED)
        yield Deployment(work_dir, set(listed.result))


def test_only_the_enabled_formats_models_are_in_the_dag(deployment):
    assert {"stg_canal_json__messages", "int_canal_json__events", "stg_huawei_drs__messages"} <= deployment.models
    assert {"cdc_events", "cdc_history"} <= deployment.models
    assert not {name for name in deployment.models if "dts" in name or "aliyun" in name or "river" in name}


def test_the_enabled_formats_are_read_and_the_other_left_in_landing(spark, deployment):
    events = spark.sql(f"select topic, kafka_offset, op from {SCHEMA}.cdc_events order by topic, kafka_offset")
    assert [tuple(event) for event in events.collect()] == [
        (CANAL_TOPIC, 0, "c"),
        (CANAL_TOPIC, 1, "d"),
        (CANAL_TOPIC, 2, "c"),
        # evo.items: an insert, the DDL adding color, an insert with color; evo.shapes: an insert.
        (DRS_TOPIC, 0, "c"),
        (DRS_TOPIC, 1, "ddl"),
        (DRS_TOPIC, 2, "c"),
        (DRS_TOPIC, 3, "c"),
    ]
    redeliveries = spark.sql(f"select topic, kafka_offset from {SCHEMA}.cdc_redeliveries").collect()
    assert [tuple(row) for row in redeliveries] == [(CANAL_TOPIC, 3)]
    assert spark.sql(f"select * from {SCHEMA}.cdc_quarantine").count() == 0
    assert spark.sql(f"select * from landing.cdc_raw where topic = '{DTS_TOPIC}'").count() == 1


def test_docs_show_each_formats_decisions_and_the_tables(spark, deployment):
    dbt_in_process(spark, deployment.work_dir, "docs", "generate")
    target = deployment.work_dir / "target"
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
    the deployment, where vendor_examples/huawei_drs_json/own_schema_evolution.jsonl landed: `evo.items`
    gains a column `color` by DDL between two inserts, and `evo.shapes` has a type no seed maps."""
    return project_without_typed_tables(tmp_path_factory.mktemp("scaffold_project") / "project")


def test_scaffolded_tables_build_with_added_columns_null_before(spark, deployment, scaffold_project, tmp_path, capsys):
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
