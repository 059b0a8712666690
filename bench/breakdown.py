"""Where a scheduled run's seconds go (bench-changed): its nodes by kind, and the SQL statements dbt sent to
Spark, by what they do, with the time each node spent outside them (dbt's own work: selection, rendering,
the materialization's Python, the adapter's cache)."""

import re
import threading
from dataclasses import dataclass, field

# A statement's first words name what Spark does with it: a model's query defined (temporary view), its rows
# written (insert, merge, delete: execution and the Delta commit), a test's or a macro's query (select), the
# catalog read (describe, show).
_KEYWORDS = re.compile(
    r"(?:\s|/\*.*?\*/|--[^\n]*\n)*(create(?: or replace)?(?: temporary)? (?:view|table)|\w+)", re.S | re.I
)


def statement_kind(sql: str) -> str:
    found = _KEYWORDS.match(sql)
    words = found.group(1).lower().split() if found else ["other"]
    return words[0] if words[0] != "create" else f"create {words[-1]}"


@dataclass
class StatementTimes:
    """A dbt callback (DbtProject's callbacks): each statement dbt sends to Spark, with its node, kind and
    seconds. dbt fires a statement's SQLQuery and its SQLQueryStatus on the thread that runs it."""

    statements: list[tuple[str, str, float]] = field(default_factory=list)
    _running: dict[int, str] = field(default_factory=dict)

    def __call__(self, event) -> None:
        name = event.info.name
        if name == "SQLQuery":
            self._running[threading.get_ident()] = statement_kind(event.data.sql)
        elif name == "SQLQueryStatus":
            kind = self._running.pop(threading.get_ident(), "other")
            self.statements.append((event.data.node_info.unique_id, kind, event.data.elapsed))


def node_seconds(results: list[dict], prefix: str) -> dict:
    """Where a dbt command's seconds went: its models' and its tests' execution times, summed over its threads
    (so more than the command's wall time), and how many of each."""
    kinds = {"model": "models", "test": "tests"}
    figures = {}
    for kind, name in kinds.items():
        times = [r["execution_time"] for r in results if r["unique_id"].startswith(f"{kind}.")]
        figures |= {f"{prefix}_{name}": len(times), f"{prefix}_{name}_s": round(sum(times), 2)}
    return figures


def statement_seconds(results: list[dict], statements: list[tuple[str, str, float]], prefix: str) -> dict:
    """The nodes' figures of node_seconds, then their statements by kind (count and seconds), and the seconds
    their nodes spent outside any statement: dbt's own work, and fetching a query's rows. Spark plans a select
    when dbt sends it and runs it when dbt fetches its rows, so a test's query runs outside its statement;
    a command (create, insert, merge, delete, describe) runs in it."""
    nodes = {r["unique_id"] for r in results}
    figures = node_seconds(results, prefix)
    ran = [(kind, seconds) for unique_id, kind, seconds in statements if unique_id in nodes]
    for kind in sorted({kind for kind, _ in ran}):
        times = [seconds for each, seconds in ran if each == kind]
        key = f"{prefix}_sql_{kind.replace(' ', '_')}"
        figures |= {key: len(times), f"{key}_s": round(sum(times), 2)}
    in_nodes = sum(r["execution_time"] for r in results)
    figures[f"{prefix}_outside_sql_s"] = round(in_nodes - sum(seconds for _, seconds in ran), 2)
    return figures
