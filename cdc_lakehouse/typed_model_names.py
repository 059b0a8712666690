"""How cdc-scaffold names a source table's typed models (cdc_lakehouse/scaffold.py's doc): the table as the
macros' arguments name it, and a file- and model-name-safe base name, unique among the project's. Pure: no
Spark, no files.
"""

import hashlib
import json
import re
import unicodedata
from collections.abc import Collection
from dataclasses import dataclass

from anyascii import anyascii

from cdc_lakehouse.typed_table_config import TypedTableConfig

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


def table_arguments(table: SourceTable) -> str:
    """The macro arguments naming a source table: Jinja string literals, so no name is ever SQL or Jinja."""
    arguments = ["none" if table.database is None else jinja_string(table.database), jinja_string(table.table)]
    if table.source_format:
        arguments.append(f"source_format={jinja_string(table.source_format)}")
    if table.schema:
        arguments.append(f"schema={jinja_string(table.schema)}")
    return ", ".join(arguments)


def table_identity(table: SourceTable) -> tuple:
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
    for table in sorted(set(tables) - set(bases), key=table_identity):
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


def qualified_name(table: SourceTable) -> str:
    """database.table or database.schema.table, as cdc_typed_tables' include and exclude patterns read it (a
    null database as the empty text)."""
    return ".".join(part for part in (table.database or "", table.schema, table.table) if part is not None)
