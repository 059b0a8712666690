"""What cdc-scaffold writes for a source table or a route (cdc_lakehouse/scaffold.py's doc): the SQL of its
typed history and current models and their schema YAML, and that YAML refreshed after schema changes keeping
what was edited. Pure: no Spark, no files.
"""

import re

import yaml

from cdc_lakehouse.typed_model_names import (
    ROUTE_META,
    SOURCE_TABLE_META,
    TYPED_TABLE_TAG,
    SourceColumn,
    SourceTable,
    jinja_string,
    model_base_name,
    table_arguments,
)
from cdc_lakehouse.typed_table_config import Route

# The columns of cdc_history a typed table keeps beside the typed columns, as the macro
# cdc_typed_table_metadata_columns lists them (a source column of one of these names gets a suffix).
HISTORY_METADATA_COLUMNS = (
    "source_format",
    "source_name",
    "source_database",
    "source_schema",
    "source_table",
    "pk",
    "valid_from",
    "valid_to",
    "is_current",
    "is_deleted",
    "op",
    "source_seq",
    "scd_id",
    "chain_id",
    "cdc_batch_id",
)
# The metadata columns the history view computes; the others are cdc_history's.
COMPUTED_METADATA_COLUMNS = {"chain_id": "{{ history_chain_id('versions') }}"}
METADATA_SELECT = ",\n".join(
    f"    {COMPUTED_METADATA_COLUMNS[column]} as {column}"
    if column in COMPUTED_METADATA_COLUMNS
    else f"    versions.{column}"
    for column in HISTORY_METADATA_COLUMNS
)


def dbt_yaml_text(text: str) -> str:
    """Text for a YAML field dbt renders with Jinja (model and column names, descriptions) that shows `text`
    as it is: as itself, or as a Jinja expression of its string literal when it holds Jinja's characters."""
    return "{{ " + jinja_string(text) + " }}" if re.search(r"[{}%#]", text) else text


def source_table_meta(table: SourceTable) -> dict:
    """A source table as a typed model's meta names it (cdc-build matches it against the changed tables), in
    YAML values dbt renders back to the names; the keys are those of cdc_source_table_filter's arguments,
    named source_* as earlier scaffolds' tests named them (dbt takes `database` and `schema` of a test for
    its config)."""
    arguments = {"source_database": None if table.database is None else dbt_yaml_text(table.database)}
    arguments["source_table"] = dbt_yaml_text(table.table)
    if table.source_format:
        arguments["source_format"] = table.source_format
    if table.schema:
        arguments["source_schema"] = dbt_yaml_text(table.schema)
    return arguments


def model_config(table: SourceTable) -> str:
    """The config call of a typed view of one format's stream: it leaves the DAG where that format is not
    enabled (cdc_enabled_formats), as the format's own models do."""
    if not table.source_format:
        return ""
    return f"{{{{ config(enabled=cdc_format_enabled({jinja_string(table.source_format)})) }}}}\n"


def history_sql(table: SourceTable) -> str:
    arguments = table_arguments(table)
    return (
        # No name of the table here but as a Jinja string literal: a name could end a comment or a string.
        "-- Written by cdc-scaffold: every version of the source table, one typed column per source column,\n"
        '-- a view over cdc_history (README, "Typed tables and querying").\n'
        + model_config(table)
        + f"select\n{METADATA_SELECT}\n"
        f"    {{{{- cdc_typed_columns('versions', {arguments}) }}}}\n"
        "from {{ ref('cdc_history') }} as versions\n"
        "where\n"
        f"    {{{{ cdc_source_table_filter('versions', {arguments}) }}}}\n"
    )


def current_sql(table: SourceTable, base: str) -> str:
    return (
        "-- Written by cdc-scaffold: the open version of every live key of the history view.\n"
        + model_config(table)
        + "select typed_versions.*  -- noqa: AM04\n"
        f"from {{{{ ref('{base}__history') }}}} as typed_versions\n"
        "where typed_versions.is_current and not typed_versions.is_deleted\n"
    )


def route_history_sql(route: Route) -> str:
    """The history view of a route: its name (checked: lower-case letters, digits and _) is the only text
    from the settings here; its patterns reach SQL through the macros, as string literals."""
    return (
        f"-- Written by cdc-scaffold: every version of the source tables of route {route.name} (dbt_project.yml,\n"
        "-- vars cdc_typed_tables), one typed column per column any of them has, a view over cdc_history.\n"
        f"select\n{METADATA_SELECT}\n"
        f"    {{{{- cdc_route_typed_columns('versions', '{route.name}') }}}}\n"
        "from {{ ref('cdc_history') }} as versions\n"
        "where\n"
        f"    {{{{ cdc_route_filter('versions', '{route.name}') }}}}\n"
    )


def route_current_sql(route: Route, base: str) -> str:
    return (
        "-- Written by cdc-scaffold: the open version of every live key of the history view, one per key and\n"
        "-- source table, or one per key with the route's `key: global`.\n"
        "select typed_versions.*  -- noqa: AM04\n"
        f"from {{{{ ref('{base}__history') }}}} as typed_versions\n"
        "where typed_versions.is_current and not typed_versions.is_deleted\n"
        f"{{{{ cdc_route_current_rows('typed_versions', '{route.name}') }}}}\n"
    )


def route_files(route: Route, base: str, columns: list[SourceColumn] = ()) -> dict[str, str]:
    """File name (inside models/tables/) -> content, for one route."""
    patterns = ", ".join(f"{column} ~ {pattern}" for column, pattern in route.match.patterns)
    label = f"route {route.name} ({patterns})"
    return {
        f"{base}__history.sql": route_history_sql(route),
        f"{base}__current.sql": route_current_sql(route, base),
        f"_{base}__models.yml": views_yaml(label, base, columns, {ROUTE_META: route.name}),
    }


def describe(table: SourceTable) -> str:
    database = "(no database)" if table.database is None else table.database
    where = ".".join(part for part in (database, table.schema, table.table) if part)
    return where + (f" ({table.source_format})" if table.source_format else "")


def typed_column_names(columns: list[SourceColumn]) -> list[tuple[str, SourceColumn]]:
    """(column name in the typed models, source column), as the macro cdc_table_typed_columns names them."""
    return [
        (column.name + ("__value" if column.name.lower() in HISTORY_METADATA_COLUMNS else ""), column)
        for column in columns
    ]


# The columns an earlier scaffold tested per column or per model (never null, the merge keys unique): the
# history's own test checks them now (cdc_versions_hold on cdc_history, which every typed view inherits).
NOT_NULL_COLUMNS = ("pk", "is_current", "is_deleted", "scd_id", "chain_id")
EARLIER_KEY_TESTS = (["not_null"], ["not_null", "unique"])


def earlier_model_tests(model_name: str, table_arguments: dict) -> list:
    """The model tests earlier scaffolds wrote on a typed table: their guarantees are cdc_history's now, and a
    view's columns have their types by construction."""
    key_column = "scd_id" if model_name.endswith("__history") else "chain_id"
    return [
        {"not_null_columns": {"arguments": {"columns": list(NOT_NULL_COLUMNS)}}},
        {"unique": {"arguments": {"column_name": key_column}}},
        {
            "cdc_typed_columns_hold_their_types": {
                "name": f"{model_name}_holds_its_source_types",
                "arguments": table_arguments,
            }
        },
        {"cdc_typed_rows_hold": {"name": f"{model_name}_holds_its_keys", "arguments": {"key_column": key_column}}},
        {
            "cdc_typed_rows_hold": {
                "name": f"{model_name}_holds_its_keys_and_types",
                "arguments": {"key_column": key_column, **table_arguments},
            }
        },
    ]


YAML_HEADER = (
    "# Written by cdc-scaffold; `cdc-scaffold --refresh` adds the columns of later schema changes and keeps\n"
    "# what is edited here. The views' typed columns follow cdc_table_columns: cdc-build creates them again when\n"
    "# a column is added or retyped.\n"
)


def schema_yaml(table: SourceTable, base: str, columns: list[SourceColumn] = ()) -> str:
    """The schema YAML of a source table's two views: the metadata columns, then the typed columns."""
    return views_yaml(describe(table), base, columns, {SOURCE_TABLE_META: source_table_meta(table)})


def views_yaml(label: str, base: str, columns: list[SourceColumn], meta: dict) -> str:
    """The schema YAML of the two views of a source table or route (`label`); `meta`, what names the tables
    in the history view's meta."""

    def column(name: str, description: str, tests: list[str] | None = None, data_type: str | None = None) -> dict:
        entry = {"name": dbt_yaml_text(name), "description": dbt_yaml_text(description)}
        if data_type:
            entry["data_type"] = data_type
        if tests:
            entry["data_tests"] = tests
        return entry

    def model(name: str, description: str) -> dict:
        typed = [
            column(
                alias,
                f"Source column {source.name}: {source.vendor_type or 'type unknown'}"
                + (f" as {source.spark_type}" if source.spark_type else ", unmapped: kept as text"),
                data_type=source.spark_type or "string",
            )
            for alias, source in typed_column_names(list(columns))
        ]
        return {
            "name": name,
            "description": dbt_yaml_text(description),
            "columns": [
                column("pk", "JSON array text of the primary-key values."),
                column("valid_from", "event_ts of the change that opened the version."),
                column("valid_to", "valid_from of the next version; null while open."),
                column("is_current", "The open version of its key."),
                column("is_deleted", "The version a delete opened."),
                column("op", "The change that opened the version: c, u, d, r or t."),
                column("source_seq", "The vendor's position of that change."),
                column("scd_id", "The version's id in cdc_history: one row per scd_id."),
                column("chain_id", "The key's id (source, table, pk): one open version per chain_id."),
                column("cdc_batch_id", "The batch that last wrote the version in cdc_history (README, Batches)."),
                *typed,
            ],
        }

    history = model(f"{base}__history", f"Every version of {label}, one typed column per source column.")
    # What a scheduled run matches against the source tables of its batch to build only the changed ones.
    history["config"] = {"tags": [TYPED_TABLE_TAG], "meta": meta}
    current = model(
        f"{base}__current",
        f"The open version of every live key of {label}, typed: one row per chain_id. A view of {base}__history.",
    )
    document = {"version": 2, "models": [history, current]}
    return YAML_HEADER + _dump_yaml(document)


class _IndentedListsDumper(yaml.SafeDumper):
    """Lists indented under their key, as the project's hand-written YAML has them."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        return super().increase_indent(flow, False)


def _dump_yaml(document: dict) -> str:
    return yaml.dump(document, Dumper=_IndentedListsDumper, allow_unicode=True, sort_keys=False, width=120)


def refreshed_yaml(existing_text: str, generated_text: str) -> str:
    """The generated YAML with what was edited in the existing one kept: a column entry already there stays
    as edited (its data_type and generated description follow the table), columns no longer seen stay, a
    model's other keys stay as edited, and generated keys it lacks (a newer scaffold's) are added; an earlier
    scaffold's unedited tests of the key columns and of the models go (cdc_history's test checks what they
    checked)."""
    existing = yaml.safe_load(existing_text) or {}
    generated = yaml.safe_load(generated_text)
    old_models = {model.get("name"): model for model in existing.get("models") or []}
    table_arguments = generated["models"][0]["config"]["meta"].get(SOURCE_TABLE_META, {})
    models = []
    for model in generated["models"]:
        old_model = old_models.get(model["name"])
        if old_model is None:
            models.append(model)
            continue
        old_columns = {entry.get("name"): entry for entry in old_model.get("columns") or []}
        columns = []
        for entry in model["columns"]:
            old_entry = old_columns.pop(entry["name"], None)
            if old_entry is None:
                columns.append(entry)
                continue
            if str(old_entry.get("description", "")).startswith("Source column "):
                old_entry["description"] = entry["description"]
            if "data_type" in entry:
                old_entry["data_type"] = entry["data_type"]
            if entry["name"] in NOT_NULL_COLUMNS and old_entry.get("data_tests") in EARLIER_KEY_TESTS:
                del old_entry["data_tests"]  # an earlier scaffold's: the model's tests below check them now
            columns.append(old_entry)
        earlier = earlier_model_tests(model["name"], table_arguments)
        tests = [test for test in old_model.get("data_tests") or [] if test not in earlier]
        refreshed = {**model, **old_model, "columns": [*columns, *old_columns.values()]}
        refreshed.pop("data_tests", None)
        models.append({**refreshed, "data_tests": tests} if tests else refreshed)
    return YAML_HEADER + _dump_yaml({**existing, **generated, "models": models})


def scaffold_files(table: SourceTable, base: str | None = None, columns: list[SourceColumn] = ()) -> dict[str, str]:
    """File name (inside models/tables/) -> content, for one table."""
    base = base or model_base_name(table)
    return {
        f"{base}__history.sql": history_sql(table),
        f"{base}__current.sql": current_sql(table, base),
        f"_{base}__models.yml": schema_yaml(table, base, columns),
    }
