"""KafkaRiver JSON (Canal-derived): the binlog position, i/u/d, every column with its type, value and null
flag; an update marks each column `updated` and gives a changed column's `origin_val`."""

from vendor_writers import DELETE, INSERT, UPDATE, Change

WRITE_LAG_MS = 1370  # canalTime: when Canal read the change, after the source's time


def message(binlog: str, change: Change) -> dict:
    """`binlog` is "<position>@<file>"."""
    row = change.row
    columns = []
    for name, mysql_type in change.table.types.items():
        column = {"n": name, "t": mysql_type, "v": row[name], "null": row[name] is None}
        if change.op == UPDATE:
            column["updated"] = change.before[name] != row[name]
            if column["updated"]:
                column["origin_val"] = change.before[name]
        columns.append(column)
    return {
        "binlog": binlog,
        "time": change.at_ms,
        "canalTime": change.at_ms + WRITE_LAG_MS,
        "db": change.table.database,
        "table": change.table.name,
        "event": {INSERT: "i", UPDATE: "u", DELETE: "d"}[change.op],
        "columns": columns,
        "keys": list(change.table.keys),
    }
