"""`dbt docs generate` on the built warehouse: it succeeds, each format's decisions (the docs block of its
staging README) are in the description of its staging model, and the catalog holds the built tables."""

import json

from conftest import PROJECT_DIR, assert_succeeded

from cdc_lakehouse.formats import SOURCE_FORMATS


def test_docs_show_each_formats_decisions_and_the_tables(built_warehouse):
    assert_succeeded(built_warehouse.dbt("docs", "generate"))
    target = built_warehouse.root / "dbt_target"
    models = json.loads((target / "manifest.json").read_text())["nodes"].values()
    for source_format in SOURCE_FORMATS:
        readme = (PROJECT_DIR / "models" / "staging" / source_format / "README.md").read_text().splitlines()
        heading = readme[1]  # the line after {% docs <format> %}
        assert heading.startswith("# ")
        folder = f"models/staging/{source_format}/"
        staged = [model for model in models if model["original_file_path"].startswith(folder)]
        assert any(heading in model["description"] for model in staged), source_format
    catalog = json.loads((target / "catalog.json").read_text())["nodes"]
    history_columns = catalog["model.cdc_lakehouse.cdc_history"]["columns"]
    assert {"source_name", "event_order", "valid_from", "is_current"} <= set(history_columns)
