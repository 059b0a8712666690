"""The deployment's typed tables: dbt_project.yml vars `cdc_typed_tables` (README, "Typed tables and querying").

    cdc_typed_tables:
      include: ['shop\\..*']          # source tables cdc-scaffold types, as database.table or
      exclude: ['shop\\.tmp_.*']      #   database.schema.table, whole-name regular expressions
      name_prefix: ods_               # of every typed model cdc-scaffold names from now on
      name_suffix: ''
      routes:                         # one typed table of many source tables (shards as one)
        - name: orders
          match: {source_format: canal_json, source_database: 'order_db_\\d+', source_table: 'orders_\\d+'}
          key: per_shard              # or global: one current row per key across the shards
          primary_key: [order_id]     # optional: declared where the source has none
      primary_keys:                   # keys declared for tables outside routes
        - match: {source_database: logs, source_table: page_views}
          primary_key: [view_id]

The macros of macros/types/cdc_routes.sql read the same var; this module reads and checks it for the commands.
"""

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

MATCH_COLUMNS = ("source_format", "source_name", "source_database", "source_schema", "source_table")
ROUTE_KEYS = ("per_shard", "global")
ROUTE_NAME = re.compile(r"[a-z][a-z0-9_]*")


class TypedTableConfigError(Exception):
    """A setting that cannot be used: one line naming it."""


@dataclass(frozen=True)
class Match:
    """Whole-name regular expressions over a source table's names; a name left out matches any."""

    patterns: tuple[tuple[str, str], ...] = ()

    def matches(self, **names: str | None) -> bool:
        """Whether the names given match; a pattern of a name not given (cdc-build knows no source name of a
        table whose columns changed) counts as matching, so a route is rebuilt rather than missed."""
        for column, pattern in self.patterns:
            if column in names and (names[column] is None or not re.fullmatch(pattern, names[column])):
                return False
        return True


@dataclass(frozen=True)
class Route:
    name: str
    match: Match
    key: str = "per_shard"
    primary_key: tuple[str, ...] = ()


@dataclass(frozen=True)
class TypedTableConfig:
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    name_prefix: str = ""
    name_suffix: str = ""
    routes: tuple[Route, ...] = ()
    primary_keys: tuple[tuple[Match, tuple[str, ...]], ...] = field(default=())

    def route(self, name: str) -> Route | None:
        return next((route for route in self.routes if route.name == name), None)

    def routed(self, **names: str | None) -> Route | None:
        """The first route whose patterns match the table's names."""
        return next((route for route in self.routes if route.match.matches(**names)), None)

    def selects(self, qualified_name: str) -> bool:
        """Whether cdc-scaffold types a table of this name (database.table or database.schema.table)."""
        included = not self.include or any(re.fullmatch(pattern, qualified_name) for pattern in self.include)
        return included and not any(re.fullmatch(pattern, qualified_name) for pattern in self.exclude)

    def model_name(self, base: str) -> str:
        return f"{self.name_prefix}{base}{self.name_suffix}"


def _patterns(value, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise TypedTableConfigError(f"cdc_typed_tables.{where}: a list of regular expressions")
    for pattern in value:
        _compiled(pattern, where)
    return tuple(value)


def _compiled(pattern: str, where: str) -> None:
    try:
        re.compile(pattern)
    except re.error as exc:
        message = f"cdc_typed_tables.{where}: {pattern!r} is not a regular expression: {exc}"
        raise TypedTableConfigError(message) from exc


def _match(value, where: str) -> Match:
    if not isinstance(value, dict) or not value:
        raise TypedTableConfigError(f"cdc_typed_tables.{where}.match: a mapping of some of {', '.join(MATCH_COLUMNS)}")
    unknown = sorted(set(value) - set(MATCH_COLUMNS))
    if unknown:
        raise TypedTableConfigError(
            f"cdc_typed_tables.{where}.match names {', '.join(unknown)}; expected some of {', '.join(MATCH_COLUMNS)}"
        )
    for column, pattern in value.items():
        if not isinstance(pattern, str):
            raise TypedTableConfigError(f"cdc_typed_tables.{where}.match.{column}: a regular expression")
        _compiled(pattern, f"{where}.match.{column}")
    return Match(tuple(sorted(value.items())))


def _primary_key(value, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not value or not all(isinstance(item, str) and item for item in value):
        raise TypedTableConfigError(f"cdc_typed_tables.{where}.primary_key: a list of column names")
    return tuple(value)


def parse_config(settings: dict | None) -> TypedTableConfig:
    settings = settings or {}
    if not isinstance(settings, dict):
        raise TypedTableConfigError("cdc_typed_tables: a mapping")
    unknown = sorted(set(settings) - {"include", "exclude", "name_prefix", "name_suffix", "routes", "primary_keys"})
    if unknown:
        raise TypedTableConfigError(f"cdc_typed_tables: unknown settings {', '.join(unknown)}")
    routes, names = [], set()
    for index, route in enumerate(settings.get("routes") or []):
        where = f"routes[{index}]"
        name = route.get("name") if isinstance(route, dict) else None
        if not isinstance(name, str) or not ROUTE_NAME.fullmatch(name):
            raise TypedTableConfigError(f"cdc_typed_tables.{where}.name: lower-case letters, digits and _")
        if name in names:
            raise TypedTableConfigError(f"cdc_typed_tables.routes: {name} twice")
        names.add(name)
        key = route.get("key", "per_shard")
        if key not in ROUTE_KEYS:
            raise TypedTableConfigError(f"cdc_typed_tables.{where}.key: {' or '.join(ROUTE_KEYS)}, not {key!r}")
        routes.append(
            Route(name, _match(route.get("match"), where), key, _primary_key(route.get("primary_key"), where))
        )
    primary_keys = []
    for index, declared in enumerate(settings.get("primary_keys") or []):
        where = f"primary_keys[{index}]"
        if not isinstance(declared, dict) or not declared.get("primary_key"):
            raise TypedTableConfigError(f"cdc_typed_tables.{where}: a match and a primary_key")
        primary_keys.append((_match(declared.get("match"), where), _primary_key(declared["primary_key"], where)))
    for affix in ("name_prefix", "name_suffix"):
        if not re.fullmatch(r"[a-z0-9_]*", settings.get(affix) or ""):
            raise TypedTableConfigError(f"cdc_typed_tables.{affix}: lower-case letters, digits and _")
    return TypedTableConfig(
        include=_patterns(settings.get("include"), "include"),
        exclude=_patterns(settings.get("exclude"), "exclude"),
        name_prefix=settings.get("name_prefix") or "",
        name_suffix=settings.get("name_suffix") or "",
        routes=tuple(routes),
        primary_keys=tuple(primary_keys),
    )


def load_config(project_dir: Path, dbt_vars: dict | None = None) -> TypedTableConfig:
    """The project's setting, or the one `dbt_vars` (the command's --vars) gives instead."""
    if dbt_vars and "cdc_typed_tables" in dbt_vars:
        return parse_config(dbt_vars["cdc_typed_tables"])
    project = yaml.safe_load((project_dir / "dbt_project.yml").read_text(encoding="utf-8")) or {}
    return parse_config((project.get("vars") or {}).get("cdc_typed_tables"))
