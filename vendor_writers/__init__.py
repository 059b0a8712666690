"""What each vendor writes for a row change: one module per source format, named as the format is in
cdc_lakehouse.formats, turning `Change`s into that vendor's messages (dicts of its JSON, or bytes).

The sample data (sample_data/), the benchmark generator (bench/generate.py) and the tests write their
messages with these; each decides the stream (ids, batches, partitions, disturbances), the writer only the
message's shape. Nothing here runs on executors or reads a message, and the installed package leaves it
out (pyproject.toml): it is the project's test and benchmark support.
"""

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

INSERT, UPDATE, DELETE = "INSERT", "UPDATE", "DELETE"
# A row of a task's full sync, as Huawei DRS and the Canal-format producers of DTS services type it.
INIT = "INIT"


@dataclass(frozen=True)
class Table:
    """A source table: its database, name, columns with their MySQL DDL types ("bigint(20)") in column
    order, JDBC type codes, and primary key columns."""

    database: str
    name: str
    types: Mapping[str, str]
    jdbc_types: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    keys: tuple[str, ...] = ("id",)
    # The character set of text columns that are not utf8mb4 (Tencent DTS names it with each value).
    charsets: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(self.types)

    def bare_types(self) -> dict[str, str]:
        """The types without length or precision ("bigint(20) unsigned" -> "bigint")."""
        return {name: re.split(r"[( ]", text)[0] for name, text in self.types.items()}


@dataclass(frozen=True)
class Change:
    """One row change at the source. Rows map column names to their text (None: NULL). `after` is what an
    update's after image carries: every column, or (a partial image) only some of them."""

    table: Table
    op: str  # INSERT, UPDATE, DELETE, or INIT (a full sync's row)
    before: dict | None
    after: dict | None
    at_ms: int  # when the source committed it, Unix milliseconds

    @property
    def row(self) -> dict:
        """The whole row the change leaves (a deleted row: the row it removed)."""
        if self.op == DELETE:
            return self.before
        return {**(self.before or {}), **self.after}

    @property
    def is_partial(self) -> bool:
        return self.op == UPDATE and set(self.after) != set(self.table.columns)

    def changed_before(self) -> dict:
        """An update's columns whose value changed, with their values before."""
        row = self.row
        return {name: value for name, value in self.before.items() if row[name] != value}


def json_values(row: dict, types: Mapping[str, str], numbers: Mapping[str, Callable]) -> dict:
    """The row as a vendor's JSON writes it: columns whose vendor type is in `numbers` as JSON numbers."""
    return {
        name: numbers[types[name]](value) if value is not None and types.get(name) in numbers else value
        for name, value in row.items()
    }
