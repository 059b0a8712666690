"""cdc-scaffold: write a typed history model, a typed current model and their schema YAML per source table.

Tables come from the command line (db.table or db.schema.table) or, with none given, from cdc_events
(read through the project's Spark session): those dbt_project.yml's vars cdc_typed_tables include and do not
exclude, and each of its routes (one typed table of the source tables its patterns match, which no table
of their own then gets); their columns from cdc_table_columns. Each table gets
models/tables/<db>__<table>__history.sql, <db>__<table>__current.sql (views over cdc_history in plain SQL;
the typed columns and the table's filter come from the macros cdc_typed_columns / cdc_source_table_filter)
and _<db>__<table>__models.yml (its columns); a table the pipeline already created views of (cdc_typed_views)
keeps their name. A file that exists and differs is reported and kept unless
--force is given; --refresh updates the YAML's columns after schema changes, keeping what was edited in
it (with --force too), and writes again the SQL an earlier scaffold wrote for typed tables merged per batch;
--dry-run shows what would be written.

Names from message content never become bare identifiers or code: file and model names are ASCII
([a-z0-9_], other scripts transliterated, with a hash of the name), and names reach SQL and YAML only as
string literals with every character that could end one escaped.
"""

import argparse
import hashlib
import json
import re
import sys
import unicodedata
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

import yaml
from anyascii import anyascii

from cdc_lakehouse.command_line import OneLineParser, add_project_dir_argument
from cdc_lakehouse.formats import SOURCE_FORMATS
from cdc_lakehouse.typed_table_config import Route, TypedTableConfig, TypedTableConfigError, load_config

MODELS_SUBDIR = Path("models") / "tables"
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


# The tag and meta key of a typed history model (cdc_lakehouse/build_plan.py reads them).
TYPED_TABLE_TAG = "cdc_typed_table"
SOURCE_TABLE_META = "cdc_source_table"
ROUTE_META = "cdc_route"


class ScaffoldError(Exception):
    """A bad argument or an unusable table: one line on stderr, exit code 2."""


@dataclass(frozen=True)
class SourceTable:
    # None: the null database of messages that name none (a table given on the command line always has one).
    database: str | None
    table: str
    schema: str | None = None
    source_format: str | None = None


@dataclass(frozen=True)
class SourceColumn:
    name: str
    vendor_type: str | None
    # None: no type seed maps the vendor type; the value is kept as text.
    spark_type: str | None


def parse_table(text: str, source_format: str | None = None) -> SourceTable:
    """db.table or db.schema.table; every part non-empty."""
    parts = text.split(".")
    if len(parts) not in (2, 3) or not all(part.strip() for part in parts):
        raise ScaffoldError(f"not a table name (db.table or db.schema.table): {text!r}")
    if len(parts) == 2:
        return SourceTable(database=parts[0], table=parts[1], source_format=source_format)
    return SourceTable(database=parts[0], schema=parts[1], table=parts[2], source_format=source_format)


NAME_PART_LENGTH = 40


def name_part(text: str) -> str:
    """A file- and model-name-safe form of a name from message content: ASCII letters, digits and _.

    Accents are dropped; other scripts are transliterated (anyascii: 订单 -> ding_dan), and then a short
    hash of the name is appended, because transliteration is lossy (订单 and 定单 both read ding_dan): the
    name of a table's model never depends on which other tables exist.
    """
    decomposed = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    runs = re.split(r"([^\x00-\x7f]+)", decomposed)
    # Odd runs are the non-ASCII ones; a transliterated syllable starts with a capital: DingDan -> Ding_Dan.
    ascii_text = "".join(
        f"_{re.sub(r'(?<=[a-z])(?=[A-Z])', '_', anyascii(run))}_" if index % 2 else run
        for index, run in enumerate(runs)
    )
    safe = re.sub(r"_+", "_", re.sub(r"[^a-z0-9_]", "_", ascii_text.lower())).strip("_")[:NAME_PART_LENGTH]
    safe = safe.strip("_") or "unnamed"
    if len(runs) > 1:
        safe += "_" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:6]
    return safe


def model_base_name(table: SourceTable) -> str:
    database = "no_database" if table.database is None else table.database
    parts = [database, *([table.schema] if table.schema else []), table.table]
    return "__".join(name_part(part) for part in parts)


def jinja_string(text: str) -> str:
    """A Jinja (and YAML) string literal of any text: JSON escaping, plus braces, % and # as \\u escapes."""
    literal = json.dumps(text, ensure_ascii=False)
    for character in "{}%#":
        literal = literal.replace(character, f"\\u{ord(character):04x}")
    return literal


def dbt_yaml_text(text: str) -> str:
    """Text for a YAML field dbt renders with Jinja (model and column names, descriptions) that shows `text`
    as it is: as itself, or as a Jinja expression of its string literal when it holds Jinja's characters."""
    return "{{ " + jinja_string(text) + " }}" if re.search(r"[{}%#]", text) else text


def table_arguments(table: SourceTable) -> str:
    """The macro arguments naming a source table: Jinja string literals, so no name is ever SQL or Jinja."""
    arguments = ["none" if table.database is None else jinja_string(table.database), jinja_string(table.table)]
    if table.source_format:
        arguments.append(f"source_format={jinja_string(table.source_format)}")
    if table.schema:
        arguments.append(f"schema={jinja_string(table.schema)}")
    return ", ".join(arguments)


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


def _identity(table: SourceTable) -> tuple:
    return tuple(
        (part is None, part or "") for part in (table.database, table.schema, table.table, table.source_format)
    )


def source_key(table: SourceTable) -> tuple:
    return (table.database, table.schema, table.table)


def model_bases(
    tables: list[SourceTable],
    scaffolded: dict[str, str] | None = None,
    multi_stream: Collection[tuple] = (),
    config: TypedTableConfig | None = None,
    taken: Collection[str] = (),
    viewed: dict[SourceTable, str] | None = None,
) -> list[str]:
    """Model base names in the order of the tables. A table scaffolded before keeps its models' name
    (`scaffolded`: the macro arguments of each history model written -> its base name). A new model of one
    format's stream of a table that comes from more than one (among `tables`, or a source_key in
    `multi_stream`) says which: `<base>__<format>`; a new name has the settings' prefix and suffix, unless
    the pipeline created views of the table (`viewed`: table -> their base name), whose name it keeps. Names
    that still collide (with each other, or a route's in `taken`) get a number, the tables in the order of
    their names (whatever order they come in)."""
    scaffolded = scaffolded or {}
    formats_of: dict[tuple, set[str]] = {}
    for table in tables:
        formats_of.setdefault(source_key(table), set()).add(table.source_format)
    multi_stream = {*multi_stream, *(key for key, formats in formats_of.items() if len(formats) > 1)}
    bases = {table: scaffolded[table_arguments(table)] for table in tables if table_arguments(table) in scaffolded}
    for table in tables:
        if table not in bases and table in (viewed or {}):
            bases[table] = viewed[table]
    taken = {*scaffolded.values(), *bases.values(), *taken}
    for table in sorted(set(tables) - set(bases), key=_identity):
        base = model_base_name(table)
        if table.source_format and source_key(table) in multi_stream:
            base = f"{base}__{name_part(table.source_format)}"
        base = config.model_name(base) if config else base
        candidate, number = base, 2
        while candidate in taken:
            candidate, number = f"{base}__{number}", number + 1
        bases[table] = candidate
        taken.add(candidate)
    return [bases[table] for table in tables]


def scaffolded_tables(project_dir: Path) -> dict[str, str]:
    """The tables the history models in models/tables/ select, as their macro arguments -> base name."""
    scaffolded = {}
    for path in sorted((project_dir / MODELS_SUBDIR).glob("*__history.sql")):
        written = re.search(r"cdc_source_table_filter\('versions', (.*)\) }}", path.read_text(encoding="utf-8"))
        if written:
            scaffolded[written.group(1)] = path.name.removesuffix("__history.sql")
    return scaffolded


# What the SQL of an earlier scaffold's typed tables (merged per batch) holds and a view's never does: as a
# view, its history would stamp every version with the batch the view was created in.
EARLIER_TYPED_TABLE_SQL = "cdc_batch()"


@dataclass(frozen=True)
class PlannedFile:
    path: Path
    content: str
    # new, unchanged, kept (exists, differs, no --force), overwritten (--force), refreshed (--refresh)
    status: str


def plan_files(
    tables: list[SourceTable],
    bases: list[str],
    columns: dict[SourceTable, list[SourceColumn]],
    project_dir: Path,
    force: bool = False,
    refresh: bool = False,
    routes: dict[Route, tuple[str, list[SourceColumn]]] | None = None,
) -> list[PlannedFile]:
    """The files of each table and of each route (`routes`: route -> its base name and columns)."""
    target = project_dir / MODELS_SUBDIR
    planned = []
    files = [scaffold_files(table, base, columns.get(table, [])) for table, base in zip(tables, bases, strict=True)]
    files += [route_files(route, base, route_columns) for route, (base, route_columns) in (routes or {}).items()]
    for table_files in files:
        for file_name, content in table_files.items():
            path = target / file_name
            existing = path.read_text(encoding="utf-8") if path.exists() else None
            if existing is None:
                status = "new"
            elif refresh and file_name.endswith(".yml"):
                content = refreshed_yaml(existing, content)
                status = "unchanged" if content == existing else "refreshed"
            elif refresh and EARLIER_TYPED_TABLE_SQL in existing:
                status = "refreshed"
            elif existing == content:
                status = "unchanged"
            else:
                status = "overwritten" if force else "kept"
            planned.append(PlannedFile(path, content, status))
    return planned


def write_files(planned: list[PlannedFile]) -> None:
    for file in planned:
        if file.status in ("new", "overwritten", "refreshed"):
            file.path.parent.mkdir(parents=True, exist_ok=True)
            file.path.write_text(file.content, encoding="utf-8")


def _cdc_relation(name: str) -> str:
    import os

    return f"`{os.environ.get('CDC_SCHEMA', 'cdc').replace('`', '``')}`.{name}"


def discover_tables(spark, source_format: str | None) -> list[SourceTable]:
    """Source tables with row changes in cdc_events, a null database or schema included."""
    events = _cdc_relation("cdc_events")
    if not spark.catalog.tableExists(events):
        raise ScaffoldError(f"{events} does not exist: run dbt build first, or name the tables")
    frame = (
        spark.table(events)
        .where("op in ('c', 'u', 'd', 'r') and source_table is not null")
        .select("source_format", "source_database", "source_schema", "source_table")
        .distinct()
    )
    if source_format:
        frame = frame.where(frame.source_format == source_format)
    return sorted(
        (
            SourceTable(
                database=row.source_database,
                schema=row.source_schema,
                table=row.source_table,
                source_format=row.source_format,
            )
            for row in frame.collect()
        ),
        key=_identity,
    )


def qualified_name(table: SourceTable) -> str:
    """database.table or database.schema.table, as cdc_typed_tables' include and exclude patterns read it (a
    null database as the empty text)."""
    return ".".join(part for part in (table.database or "", table.schema, table.table) if part is not None)


def chosen_tables(tables: list[SourceTable], config: TypedTableConfig) -> list[SourceTable]:
    """The discovered tables the settings select that no route takes (the route's models type them)."""
    return [
        table
        for table in tables
        if config.selects(qualified_name(table))
        and config.routed(
            source_format=table.source_format,
            source_database=table.database,
            source_schema=table.schema,
            source_table=table.table,
        )
        is None
    ]


def viewed_tables(spark) -> dict[SourceTable, str]:
    """The source tables the pipeline created typed views of (cdc_typed_views), each with their base name."""
    relation = _cdc_relation("cdc_typed_views")
    if not spark.catalog.tableExists(relation):
        return {}
    rows = spark.sql(
        f"select source_format, source_database, source_schema, source_table, view_name from {relation}"
        " where route_name is null"
    ).collect()
    return {
        SourceTable(row.source_database, row.source_table, row.source_schema, row.source_format): row.view_name
        for row in rows
    }


def multi_stream_tables(spark) -> set[tuple]:
    """The source_key of every table cdc_table_columns has seen in more than one source format."""
    relation = _cdc_relation("cdc_table_columns")
    if not spark.catalog.tableExists(relation):
        return set()
    rows = spark.sql(
        f"select source_database, source_schema, source_table from {relation} "
        "group by source_database, source_schema, source_table having count(distinct source_format) > 1"
    ).collect()
    return {(row.source_database, row.source_schema, row.source_table) for row in rows}


def table_columns(
    spark, tables: list[SourceTable], routes: tuple[Route, ...] = ()
) -> dict[SourceTable | Route, list[SourceColumn]]:
    """Each table's and route's columns from cdc_table_columns, as the typed models will have them: one per
    name (case-insensitive, the most recently seen wins), in column_position order."""
    relation = _cdc_relation("cdc_table_columns")
    if not spark.catalog.tableExists(relation):
        return {}
    rows = (
        spark.table(relation)
        .select(
            "source_format",
            "source_database",
            "source_schema",
            "source_table",
            "column_name",
            "vendor_type_text",
            "spark_type",
            "is_mapped",
            "column_position",
            "last_seen_at",
        )
        .orderBy("last_seen_at", "column_position", ascending=[False, True])
        .collect()
    )
    columns: dict[SourceTable | Route, list[SourceColumn]] = {}
    for table in tables:
        columns[table] = _columns_of(
            row
            for row in rows
            if row.source_database == table.database
            and row.source_table == table.table
            and table.source_format in (None, row.source_format)
            and table.schema in (None, row.source_schema)
        )
    for route in routes:
        columns[route] = _columns_of(
            row
            for row in rows
            if route.match.matches(
                source_format=row.source_format,
                source_database=row.source_database,
                source_schema=row.source_schema,
                source_table=row.source_table,
            )
        )
    return columns


def _columns_of(rows) -> list[SourceColumn]:
    """One column per name (case-insensitive) of rows newest first, the newest mapping of it, in column_position
    order, as the macro cdc_typed_columns_where reads them."""
    by_name: dict[str, tuple[int, SourceColumn]] = {}
    for row in rows:
        if row.column_name.lower() not in by_name:
            column = SourceColumn(row.column_name, row.vendor_type_text, row.spark_type if row.is_mapped else None)
            by_name[row.column_name.lower()] = (row.column_position, column)
    return [column for _, column in sorted(by_name.values(), key=lambda entry: entry[0])]


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="cdc-scaffold", description=__doc__.split("\n\n")[0], error_class=ScaffoldError)
    parser.add_argument("tables", nargs="*", metavar="DB.TABLE", help="db.table or db.schema.table; none: discover")
    parser.add_argument("--source-format", help="only this source format (" + ", ".join(SOURCE_FORMATS) + ")")
    add_project_dir_argument(parser)
    parser.add_argument("--target", help="dbt profile target for discovery (default: the profile's)")
    parser.add_argument(
        "--force", action="store_true", help="overwrite existing files (with --refresh, the YAML is refreshed)"
    )
    parser.add_argument(
        "--refresh",
        action="store_true",
        help="update the YAML columns of existing tables, keeping edits; rewrite earlier typed-table SQL",
    )
    parser.add_argument("--dry-run", action="store_true", help="show what would be written, write nothing")
    return parser


STATUS_TEXT = {
    "new": "new",
    "unchanged": "unchanged",
    "kept": "kept: exists and differs (--force overwrites, --refresh updates a YAML)",
    "overwritten": "overwritten",
    "refreshed": "refreshed",
}


def main(argv: list[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
        if args.source_format is not None and args.source_format not in SOURCE_FORMATS:
            raise ScaffoldError(f"unknown format {args.source_format!r}; expected one of: {', '.join(SOURCE_FORMATS)}")
        from cdc_lakehouse.dbt_project import resolve_profiles_dir, resolve_project_dir

        args.project_dir = resolve_project_dir(args.project_dir)
        if not (args.project_dir / "dbt_project.yml").is_file():
            raise ScaffoldError(f"not a dbt project (no dbt_project.yml): {args.project_dir}")
        tables = [parse_table(text, args.source_format) for text in args.tables]
        from cdc_lakehouse.session import open_session, profile_spark_settings

        try:
            config = load_config(args.project_dir)
        except TypedTableConfigError as exc:
            raise ScaffoldError(str(exc)) from exc
        spark = open_session(profile_spark_settings(args.target, str(resolve_profiles_dir(args.project_dir))))
        routes: tuple[Route, ...] = ()
        if not tables:
            tables = chosen_tables(discover_tables(spark, args.source_format), config)
            routes = config.routes
            if not tables and not routes:
                raise ScaffoldError("no source tables with row changes in cdc_events that cdc_typed_tables selects")
        route_bases = {route: config.model_name(route.name) for route in routes}
        bases = model_bases(
            tables,
            scaffolded_tables(args.project_dir),
            multi_stream_tables(spark),
            config,
            route_bases.values(),
            viewed_tables(spark),
        )
        columns = table_columns(spark, tables, routes)
        planned = plan_files(
            tables,
            bases,
            columns,
            args.project_dir,
            args.force,
            args.refresh,
            {route: (base, columns.get(route, [])) for route, base in route_bases.items()},
        )
    except ScaffoldError as exc:
        print(f"cdc-scaffold: error: {exc}", file=sys.stderr)
        return 2
    if not args.dry_run:
        write_files(planned)
    prefix = "cdc-scaffold: (dry run) " if args.dry_run else "cdc-scaffold: "
    for table, base in zip(tables, bases, strict=True):
        print(f"{prefix}{describe(table)} -> {base}__history, {base}__current")
    for route, base in route_bases.items():
        print(f"{prefix}route {route.name} -> {base}__history, {base}__current")
    for file in planned:
        print(f"{prefix}{file.path.relative_to(args.project_dir)}: {STATUS_TEXT[file.status]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
