"""Huawei Cloud DRS, JSON of DDS (MongoDB) sources: `value` and `where` are documents in MongoDB shell syntax.
An insert carries the whole document; an update the whole new document (recordType replace) or, when its
image is partial, a `$set` of the fields it carries (recordType update), with the `_id` filter in `where`;
a delete the deleted document's `_id` in `value` and no `where` (recordType doc).

Rows of these changes hold each field as shell text: `ObjectId("…")`, `"text"`, `NumberDecimal("1.50")`,
`ISODate("…")`; the key column is `_id`.
"""

from vendor_writers import DELETE, INSERT, Change

WRITE_LAG_MS = 130  # ts: when DRS wrote the message, after es


def shell_document(fields: dict) -> str:
    return "{" + ", ".join(f'"{name}": {value}' for name, value in fields.items()) + "}"


def message(record_id: int, change: Change, increment: int = 1) -> dict:
    """One message; `increment` orders the change within its clusterTime second."""
    key = shell_document({"_id": (change.before or change.after)["_id"]})
    if change.op == INSERT:
        record_type, value, where = "insert", shell_document(change.after), None
    elif change.op == DELETE:
        record_type, value, where = "doc", key, None
    elif change.is_partial:
        changed = {name: value for name, value in change.after.items() if name != "_id"}
        record_type, value, where = "update", shell_document({"$set": shell_document(changed)}), key
    else:
        record_type, value, where = "replace", shell_document(change.after), key
    return {
        "id": record_id,
        "op": change.op,
        "dbType": "MongoDB",
        "db": change.table.database,
        "coll": change.table.name,
        "value": value,
        "where": where,
        "recordType": record_type,
        "extra": record_type,
        "es": change.at_ms,
        "ts": change.at_ms + WRITE_LAG_MS,
        "clusterTime": f"{change.at_ms // 1000}:{increment}",
    }
