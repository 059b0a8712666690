"""cdc-scaffold: write a typed history model, a typed current model and their schema YAML per source table.

Tables come from the command line (db.table or db.schema.table) or, with none given, from cdc_events
(read through the project's Spark session). Each table gets models/tables/<db>__<table>__history.sql,
<db>__<table>__current.sql (plain SQL; the typed columns and the table's filter come from the macros
cdc_typed_columns / cdc_source_table_filter) and _<db>__<table>__models.yml (tests). Existing files are
left alone unless --force is given.

Names from message content never become bare identifiers or code: file and model names are reduced to
[a-z0-9_], and the macro arguments are Jinja string literals with every character that could end one
escaped.
"""

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from cdc_lakehouse.formats import SOURCE_FORMATS

PROJECT_DIR = Path(__file__).resolve().parent.parent
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
)


class ScaffoldError(Exception):
    """A bad argument or an unusable table: one line on stderr, exit code 2."""


@dataclass(frozen=True)
class SourceTable:
    database: str
    table: str
    schema: str | None = None
    source_format: str | None = None


def parse_table(text: str, source_format: str | None = None) -> SourceTable:
    """db.table or db.schema.table; every part non-empty."""
    parts = text.split(".")
    if len(parts) not in (2, 3) or not all(part.strip() for part in parts):
        raise ScaffoldError(f"not a table name (db.table or db.schema.table): {text!r}")
    if len(parts) == 2:
        return SourceTable(database=parts[0], table=parts[1], source_format=source_format)
    return SourceTable(database=parts[0], schema=parts[1], table=parts[2], source_format=source_format)


def name_part(text: str) -> str:
    """A file- and model-name-safe form of a name from message content."""
    safe = re.sub(r"_+", "_", re.sub(r"[^a-z0-9_]", "_", text.strip().lower())).strip("_")
    return safe or "unnamed"


def model_base_name(table: SourceTable) -> str:
    parts = [table.database, *([table.schema] if table.schema else []), table.table]
    return "__".join(name_part(part) for part in parts)


def jinja_string(text: str) -> str:
    """A Jinja (and YAML) string literal of any text: JSON escaping, plus braces, % and # as \\u escapes."""
    literal = json.dumps(text, ensure_ascii=False)
    for character in "{}%#":
        literal = literal.replace(character, f"\\u{ord(character):04x}")
    return literal


def table_arguments(table: SourceTable) -> str:
    """The macro arguments naming a source table: Jinja string literals, so no name is ever SQL or Jinja."""
    arguments = [jinja_string(table.database), jinja_string(table.table)]
    if table.source_format:
        arguments.append(f"source_format={jinja_string(table.source_format)}")
    if table.schema:
        arguments.append(f"schema={jinja_string(table.schema)}")
    return ", ".join(arguments)


def history_sql(table: SourceTable) -> str:
    arguments = table_arguments(table)
    metadata = ",\n".join(f"    versions.{column}" for column in HISTORY_METADATA_COLUMNS)
    return (
        # No name of the table here but as a Jinja string literal: a name could end a comment or a string.
        "-- Written by cdc-scaffold: every version of the source table, one typed column per source column.\n"
        f"select\n{metadata}\n"
        f"    {{{{- cdc_typed_columns('versions', {arguments}) }}}}\n"
        "from {{ ref('cdc_history') }} as versions\n"
        f"where {{{{ cdc_source_table_filter('versions', {arguments}) }}}}\n"
    )


def current_sql(base: str) -> str:
    return (
        "-- Written by cdc-scaffold: the open, non-deleted versions of the history model.\n"
        "-- Its columns are the history model's, which follow the table's column types.\n"
        "select typed_versions.*  -- noqa: AM04\n"
        f"from {{{{ ref('{base}__history') }}}} as typed_versions\n"
        "where typed_versions.is_current and not typed_versions.is_deleted\n"
    )


def describe(table: SourceTable) -> str:
    where = ".".join(p for p in (table.database, table.schema, table.table) if p)
    return where + (f" ({table.source_format})" if table.source_format else "")


def schema_yaml(table: SourceTable, base: str) -> str:
    """The schema YAML of the two models: descriptions as JSON strings (YAML strings) with no Jinja delimiters."""
    label = describe(table)
    current_key_tests = ["not_null", "unique"] if table.source_format else ["not_null"]

    def column(name: str, description: str, tests: list[str] | None = None) -> list[str]:
        lines = [f"      - name: {name}", f"        description: {jinja_string(description)}"]
        if tests:
            lines.append("        data_tests:")
            lines.extend(f"          - {test}" for test in tests)
        return lines

    def model(name: str, description: str, key_tests: list[str]) -> list[str]:
        return [
            f"  - name: {name}",
            f"    description: {jinja_string(description)}",
            "    columns:",
            *column("pk", "JSON array text of the primary-key values.", key_tests),
            *column("valid_from", "event_ts of the change that opened the version."),
            *column("valid_to", "valid_from of the next version; null while open."),
            *column("is_current", "The open version of its key.", ["not_null"]),
            *column("is_deleted", "The version a delete opened.", ["not_null"]),
        ]

    lines = [
        "# Written by cdc-scaffold; typed columns follow the table's column types (cdc_table_columns).",
        "version: 2",
        "",
        "models:",
        *model(
            f"{base}__history",
            f"Every version of {label}, one typed column per source column.",
            ["not_null"],
        ),
        "",
        *model(
            f"{base}__current",
            f"The open, non-deleted versions of {label} with typed columns.",
            current_key_tests,
        ),
    ]
    return "\n".join(lines) + "\n"


def scaffold_files(table: SourceTable, base: str | None = None) -> dict[str, str]:
    """File name (inside models/tables/) -> content, for one table."""
    base = base or model_base_name(table)
    return {
        f"{base}__history.sql": history_sql(table),
        f"{base}__current.sql": current_sql(base),
        f"_{base}__models.yml": schema_yaml(table, base),
    }


def model_bases(tables: list[SourceTable]) -> list[str]:
    """Model base names, made unique with the source format (then a number) where names collide."""
    bases: list[str] = []
    for table in tables:
        base = model_base_name(table)
        if base in bases and table.source_format:
            base = f"{base}__{name_part(table.source_format)}"
        candidate, number = base, 2
        while candidate in bases:
            candidate, number = f"{base}__{number}", number + 1
        bases.append(candidate)
    return bases


def write_scaffolds(tables: list[SourceTable], project_dir: Path, force: bool = False) -> list[Path]:
    target = project_dir / MODELS_SUBDIR
    target.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for table, base in zip(tables, model_bases(tables), strict=True):
        for file_name, content in scaffold_files(table, base).items():
            path = target / file_name
            if path.exists() and not force:
                continue
            path.write_text(content, encoding="utf-8")
            written.append(path)
    return written


def discover_tables(target: str | None, source_format: str | None) -> list[SourceTable]:
    """Source tables with row changes in cdc_events, through the project's Spark session."""
    import os

    from cdc_lakehouse.session import open_session, profile_spark_settings

    spark = open_session(profile_spark_settings(target))
    events = f"`{os.environ.get('CDC_SCHEMA', 'cdc').replace('`', '``')}`.cdc_events"
    if not spark.catalog.tableExists(events):
        raise ScaffoldError(f"{events} does not exist: run dbt build first, or name the tables")
    frame = (
        spark.table(events)
        .where("op in ('c', 'u', 'd', 'r') and source_table is not null and source_database is not null")
        .select("source_format", "source_database", "source_schema", "source_table")
        .distinct()
    )
    if source_format:
        frame = frame.where(frame.source_format == source_format)
    rows = frame.orderBy("source_database", "source_schema", "source_table", "source_format").collect()
    return [
        SourceTable(
            database=row.source_database,
            schema=row.source_schema,
            table=row.source_table,
            source_format=row.source_format,
        )
        for row in rows
    ]


class _OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise ScaffoldError(message)


def _parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(prog="cdc-scaffold", description=__doc__.split("\n\n")[0])
    parser.add_argument("tables", nargs="*", metavar="DB.TABLE", help="db.table or db.schema.table; none: discover")
    parser.add_argument("--source-format", help="only this source format (" + ", ".join(SOURCE_FORMATS) + ")")
    parser.add_argument("--project-dir", type=Path, default=PROJECT_DIR, help="dbt project (default: this one)")
    parser.add_argument("--target", help="dbt profile target for discovery (default: the profile's)")
    parser.add_argument("--force", action="store_true", help="overwrite existing files")
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
        if args.source_format is not None and args.source_format not in SOURCE_FORMATS:
            raise ScaffoldError(f"unknown format {args.source_format!r}; expected one of: {', '.join(SOURCE_FORMATS)}")
        if not (args.project_dir / "dbt_project.yml").is_file():
            raise ScaffoldError(f"not a dbt project (no dbt_project.yml): {args.project_dir}")
        tables = [parse_table(text, args.source_format) for text in args.tables]
        if not tables:
            tables = discover_tables(args.target, args.source_format)
            if not tables:
                raise ScaffoldError("no source tables with row changes in cdc_events")
        written = write_scaffolds(tables, args.project_dir, args.force)
    except ScaffoldError as exc:
        print(f"cdc-scaffold: error: {exc}", file=sys.stderr)
        return 2
    for table in tables:
        print(f"cdc-scaffold: {describe(table)}")
    print(f"cdc-scaffold: {len(written)} files written in {args.project_dir / MODELS_SUBDIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
