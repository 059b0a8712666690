"""Alibaba Cloud DataWorks whole-database sync to Kafka (StreamX JSON): an update is two records of one
sequenceId, UPDATE_BEFOR with the before image and UPDATE_AFTER with the after image (or, with the task's
option "update as one record", one UPDATE_AFTER carrying both). Values are typed by the task's column types
(`types`: LONG, DOUBLE, STRING, ...; a column not named is STRING): LONG as JSON integers, DOUBLE as numbers."""

from collections.abc import Mapping

from vendor_writers import DELETE, INIT, INSERT, Change, Table, json_values

WRITE_LAG_MS = 977  # systemTime: when the record was written, after eventTime
JSON_NUMBERS = {"LONG": int, "DOUBLE": float}


def records(sequence_id: int, change: Change, types: Mapping[str, str], one_record_updates: bool = False) -> list[dict]:
    if change.op == INIT:
        # A row of a task's full load: an INSERT without a position or a change time (both -1).
        return [record(-1, change.table, types, "INSERT", -1, after=change.after)]
    if change.op == INSERT:
        halves = [("INSERT", None, change.after)]
    elif change.op == DELETE:
        halves = [("DELETE", change.before, None)]
    elif one_record_updates:
        halves = [("UPDATE_AFTER", change.before, change.row)]
    else:
        halves = [("UPDATE_BEFOR", change.before, None), ("UPDATE_AFTER", None, change.row)]
    return [record(sequence_id, change.table, types, op, change.at_ms, before, after) for op, before, after in halves]


def record(
    sequence_id: int,
    table: Table,
    types: Mapping[str, str],
    op: str,
    at_ms: int,
    before: dict | None = None,
    after: dict | None = None,
    ddl: dict | None = None,
) -> dict:
    def image(row: dict | None) -> dict | None:
        if row is None:
            return None
        return {"dataColumn": json_values(row, types, JSON_NUMBERS)}

    return {
        "schema": {
            "dataColumn": [{"name": name, "type": types.get(name, "STRING")} for name in table.columns],
            "primaryKey": list(table.keys),
            "source": {"dbType": "MySQL", "dbName": table.database, "tableName": table.name},
        },
        "payload": {
            "before": image(before),
            "after": image(after),
            "sequenceId": str(sequence_id),
            "timestamp": {
                "eventTime": at_ms,
                "systemTime": at_ms + WRITE_LAG_MS if at_ms > 0 else at_ms,
                "checkpointTime": at_ms,
            },
            "op": op,
            "ddl": ddl,
        },
        "version": "0.0.1",
    }


def heartbeat(at_ms: int) -> dict:
    """MHEARTBEAT: no schema, no images, no sequenceId."""
    return {
        "schema": {"dataColumn": None, "primaryKey": None, "source": None},
        "payload": {
            "before": None,
            "after": None,
            "sequenceId": None,
            "timestamp": {"eventTime": at_ms, "checkpointTime": at_ms},
            "op": "MHEARTBEAT",
            "ddl": None,
        },
        "version": "0.0.1",
    }
