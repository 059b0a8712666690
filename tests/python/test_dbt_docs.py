"""`dbt docs generate` on a built warehouse: it succeeds, each format's decisions (its docs block, beside
its staging model) are in the description of a staging model, and the catalog holds the built tables.
The warehouse built only Huawei DRS JSON's models; docs generate, with every format enabled, documents them
all and catalogs what exists."""

import json

import pytest
from conftest import assert_succeeded

from cdc_lakehouse.formats import SOURCE_FORMATS


# A dbt process of its own (about 60 s): make test-slow, which keeps make test under its 12 minutes.
@pytest.mark.slow
def test_docs_show_each_formats_decisions_and_the_tables(drs_warehouse):
    assert_succeeded(drs_warehouse.dbt("docs", "generate"))
    target = drs_warehouse.root / "dbt_target"
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
