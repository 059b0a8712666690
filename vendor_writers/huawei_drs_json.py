"""Huawei Cloud DRS, JSON of MySQL sources: `id` increases over every event of the task; `mysqlType` holds bare
type names; `data` holds the after images, `old` the whole rows before (an update's and a deleted row)."""

from collections.abc import Sequence

from vendor_writers import DELETE, Change, Table

WRITE_LAG_MS = 230  # ts: when DRS wrote the message to Kafka, after es


def flat_message(drs_id: int, changes: Sequence[Change], deleted_rows_in: str = "old") -> dict:
    """One message of changes of one table and operation. DRS JSON-C writes deleted rows in `data` instead,
    as Canal does (`deleted_rows_in="data"`)."""
    first = changes[0]
    table = first.table
    message = envelope(drs_id, table, first.op, first.at_ms)
    afters = [change.after for change in changes if change.after is not None]
    befores = [change.before for change in changes if change.before is not None]
    message.update(
        mysqlType=table.bare_types(),
        sqlType=dict(table.jdbc_types),
        data=afters or None,
        old=befores or None,
        pkNames=list(table.keys),
    )
    if first.op == DELETE and deleted_rows_in == "data":
        message.update(data=befores, old=None)
    return message


def ddl_message(drs_id: int, table: Table, sql: str, at_ms: int) -> dict:
    """A DDL statement: its text in `sql`, no rows or types (never executed by the pipeline)."""
    message = envelope(drs_id, table, "DDL", at_ms)
    message.update(sql=sql, mysqlType=None, sqlType=None, data=None, old=None, pkNames=None)
    return message


def envelope(drs_id: int, table: Table, operation: str, at_ms: int) -> dict:
    return {
        "id": drs_id,
        "es": at_ms,
        "ts": at_ms + WRITE_LAG_MS,
        "database": table.database,
        "table": table.name,
        "type": operation,
        "isDdl": operation in ("DDL", "INIT_DDL"),
        "sql": "",
    }
