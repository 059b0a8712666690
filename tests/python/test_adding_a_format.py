"""CONTRIBUTING.md, "Adding a format", walked through: a copy of the project gains a format `toy_json` by its steps 1
to 4 (staging folder with its docs block, events model, one registry entry, seed rows), and dbt's own parse
(no Spark) puts it in the change log: its events in the union of events, its quarantined messages in the
quarantine, its docs in the staging model's description, its models leaving the DAG when it is not enabled.
Steps 5 and 6 (sample data, benchmark renderer, vendor examples) are checked for every registered format by
test_sample_data.py and the benchmark's own refusal."""

import json
import os
import subprocess
from pathlib import Path

import pytest
from helpers import PROJECT_DIR, VENV_BIN, project_without_typed_tables
from history_project import format_path_tables

from cdc_lakehouse.formats import SOURCE_FORMATS

STAGING = """{{ config(enabled=cdc_models_enabled(staging='toy_json')) }}

with

landed as (
    {{ landed_messages(['toy_json']) }}
),

parsed as (
    select
        landed.*,
        from_json(cast(landed.value as string), 'op string, tbl string, id string, seq bigint') as message
    from landed
)

select
    parsed.source_format,
    parsed.topic,
    parsed.kafka_partition,
    parsed.kafka_offset,
    parsed.ingested_at,
    parsed.cdc_batch_id,
    parsed.message,
    if(parsed.message.seq is null, 'no seq', null) as quarantine_reason,
    if(parsed.message.seq is null, parsed.value, null) as raw_value
from parsed
"""

EVENTS = """{{ config(enabled=cdc_models_enabled(events='toy_json')) }}

select
    messages.source_format,
    messages.topic,
    messages.kafka_partition,
    messages.kafka_offset,
    0 as row_index,
    'mysql' as source_db_type,
    cast(null as string) as source_database,
    cast(null as string) as source_schema,
    messages.message.tbl as source_table,
    messages.message.op as op,
    cast(null as map<string, string>) as before,
    map('id', messages.message.id) as after,
    cast(null as map<string, string>) as column_types,
    array('id') as primary_key,
    cast(null as timestamp) as event_ts,
    messages.message.seq as source_seq,
    {{ event_order(['messages.message.seq']) }} as event_order,
    cast(messages.message.seq as string) as source_position,
    cast(null as string) as ddl_sql,
    messages.ingested_at,
    messages.cdc_batch_id
from {{ ref('stg_toy_json__messages') }} as messages
where messages.quarantine_reason is null
"""


def add_toy_format(project: Path) -> None:
    # 1. The staging folder: the model, its YAML, and its README as one docs block.
    staging = project / "models" / "staging" / "toy_json"
    staging.mkdir()
    (staging / "stg_toy_json__messages.sql").write_text(STAGING)
    (staging / "README.md").write_text("{% docs toy_json %}\n# toy_json — ordered by seq\n{% enddocs %}\n")
    (staging / "_toy_json__models.yml").write_text(
        "version: 2\nmodels:\n  - name: stg_toy_json__messages\n    description: '{{ doc(\"toy_json\") }}'\n"
    )
    # 2. The events model.
    (project / "models" / "intermediate" / "int_toy_json__events.sql").write_text(EVENTS)
    # 3. One registry entry.
    dbt_project = project / "dbt_project.yml"
    text = dbt_project.read_text()
    assert "  cdc_formats:\n" in text
    dbt_project.write_text(text.replace("  cdc_formats:\n", "  cdc_formats:\n    toy_json: {}\n", 1))
    # 4. Seeds: its operations.
    with (project / "seeds" / "cdc_operation_codes.csv").open("a") as codes:
        codes.write("toy_json,c,c\n")


def parsed_manifest(project: Path, work: Path, enabled: list[str] | None = None) -> dict:
    arguments = ["--vars", json.dumps({"cdc_enabled_formats": enabled})] if enabled else []
    env = {**os.environ, "DBT_TARGET_PATH": str(work / "target"), "DBT_LOG_PATH": str(work / "logs")}
    result = subprocess.run(
        [str(VENV_BIN / "dbt"), "parse", "--quiet", "--project-dir", str(project), *arguments],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads((work / "target" / "manifest.json").read_text())


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    project = tmp_path_factory.mktemp("adding_a_format") / "project"
    project_without_typed_tables(project)
    add_toy_format(project)
    return project


def test_the_new_format_reaches_the_change_log_and_the_quarantine(project, tmp_path):
    nodes = parsed_manifest(project, tmp_path)["nodes"]
    depends_on = {node["name"]: set(node.get("depends_on", {}).get("nodes", [])) for node in nodes.values()}
    assert "model.cdc_lakehouse.int_toy_json__events" in depends_on["int_cdc_events__landed"]
    assert "model.cdc_lakehouse.stg_toy_json__messages" in depends_on["cdc_quarantine"]
    assert "source.cdc_lakehouse.landing.cdc_raw" in depends_on["stg_toy_json__messages"]
    assert "# toy_json — ordered by seq" in nodes["model.cdc_lakehouse.stg_toy_json__messages"]["description"]


def test_the_new_format_leaves_the_dag_when_not_enabled(project, tmp_path):
    names = {node["name"] for node in parsed_manifest(project, tmp_path, ["canal_json"])["nodes"].values()}
    assert "int_canal_json__events" in names
    assert not {"stg_toy_json__messages", "int_toy_json__events"} & names


@pytest.mark.parametrize("source_format", SOURCE_FORMATS)
def test_the_registry_names_each_formats_models(source_format):
    # The tests find a format's stored models by the registry's naming rules (history_project.py).
    for name in format_path_tables(source_format):
        assert list(PROJECT_DIR.glob(f"models/**/{name}.sql")), f"{source_format}: no model {name}"
