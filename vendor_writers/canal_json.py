"""Canal FlatMessage (JSON): the rows of one binlog rows event under a batch id that several messages share
(and that restarts with Canal); `data` holds whole rows, a deleted row included, `old` an update's changed
columns with their values before (null: was NULL); `mysqlType` is the DDL's type text."""

from collections.abc import Sequence

from vendor_writers import UPDATE, Change, Table

WRITE_LAG_MS = 120  # ts: when Canal wrote the message, after es


def flat_message(batch_id: int, changes: Sequence[Change]) -> dict:
    """One message of changes of one table and operation, in the order Canal writes its keys."""
    first = changes[0]
    table = first.table
    return {
        "data": [change.row for change in changes],
        "database": table.database,
        "es": first.at_ms,
        "id": batch_id,
        "isDdl": False,
        "mysqlType": dict(table.types),
        "old": [change.changed_before() for change in changes] if first.op == UPDATE else None,
        "pkNames": list(table.keys),
        "sql": "",
        "sqlType": dict(table.jdbc_types),
        "table": table.name,
        "ts": first.at_ms + WRITE_LAG_MS,
        "type": first.op,
    }


def ddl_message(batch_id: int, table: Table, sql: str, at_ms: int) -> dict:
    """A DDL statement: `isDdl`, its text in `sql` and its kind in `type` (ALTER, CREATE, ...), no rows."""
    return {
        "data": None,
        "database": table.database,
        "es": at_ms,
        "id": batch_id,
        "isDdl": True,
        "mysqlType": None,
        "old": None,
        "pkNames": None,
        "sql": sql,
        "sqlType": None,
        "table": table.name,
        "ts": at_ms + WRITE_LAG_MS,
        "type": sql.split()[0].upper(),
    }
