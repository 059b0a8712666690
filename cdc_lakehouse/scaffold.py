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
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from cdc_lakehouse.command_line import OneLineParser, add_project_dir_argument
from cdc_lakehouse.formats import SOURCE_FORMATS
from cdc_lakehouse.typed_model_files import describe, refreshed_yaml, route_files, scaffold_files
from cdc_lakehouse.typed_model_names import (
    ScaffoldError,
    SourceColumn,
    SourceTable,
    model_bases,
    parse_table,
    qualified_name,
    table_identity,
)
from cdc_lakehouse.typed_table_config import Route, TypedTableConfig, TypedTableConfigError, load_config

MODELS_SUBDIR = Path("models") / "tables"


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
        key=table_identity,
    )


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
