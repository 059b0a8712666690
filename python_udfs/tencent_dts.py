"""Tencent Cloud DTS data subscription (Kafka edition), Protobuf format.

A Kafka message value is an ``Envelope``; the ``data`` of one envelope, or the concatenated ``data`` of a
split group (``total`` parts, ``index`` from 0), is a serialized ``Entries``. ``EventColumns`` appends the
events of many ``Entries`` field by field, as the Arrow UDF returns them: one per row of a DML entry, one
per BEGIN, COMMIT, ROLLBACK, DDL, HEARTBEAT and CHECKPOINT entry (``decode_entries``: one ``Entries`` as
dicts).

Values: ``sv`` carries numbers and decimals as text, ``bv`` carries STRING bytes in ``charset`` (transcoded
to UTF-8 text) and BYTES (base64). NIL, or no dataType at all, is SQL NULL; NA, or an image shorter than
the column list, means the column is not in the image, so it is left out of the map.
"""

import base64
import codecs
from functools import cache
from typing import Any

from google.protobuf.message import DecodeError

from python_udfs.proto import tencent_dts_subscribe_pb2 as pb

DML_TYPES = {0: "INSERT", 1: "UPDATE", 2: "DELETE"}
MESSAGE_TYPES = {0: "BEGIN", 1: "COMMIT", 2: "DML", 3: "DDL", 4: "ROLLBACK", 5: "HEARTBEAT", 6: "CHECKPOINT"}
SOURCE_TYPES = {0: "ORACLE", 1: "MYSQL", 2: "PGSQL", 3: "MARIADB"}

NIL, BYTES, STRING, NA = 0, 11, 13, 14

# MySQL charset names that are not Python codec names, or that mean something else in Python.
MYSQL_CHARSETS = {
    "utf8": "utf-8",
    "utf8mb3": "utf-8",
    "utf8mb4": "utf-8",
    # MySQL's latin1 is Windows-1252 (with the five bytes cp1252 leaves undefined passed through).
    "latin1": "cp1252",
    "latin2": "iso8859-2",
    "latin5": "iso8859-9",
    "latin7": "iso8859-13",
    "ucs2": "utf-16-be",
    "utf16": "utf-16-be",
    "utf32": "utf-32-be",
    "ujis": "euc-jp",
    "sjis": "shift_jis",
    "euckr": "euc-kr",
    "greek": "iso8859-7",
    "hebrew": "iso8859-8",
    "koi8r": "koi8-r",
    "koi8u": "koi8-u",
    "ascii": "ascii",
    "binary": "latin-1",
}


class ValueDecodeError(ValueError):
    """A value whose bytes do not decode in their declared charset."""


@cache
def python_codec(charset: str) -> str:
    """The Python codec for a MySQL (or Python) charset name; raises LookupError for unknown ones."""
    name = charset.strip().lower()
    return codecs.lookup(MYSQL_CHARSETS.get(name, name or "utf-8")).name


def transcode(raw: bytes, charset: str) -> str:
    codec = python_codec(charset)
    try:
        return raw.decode(codec)
    except UnicodeDecodeError as exc:
        if codec == "cp1252":
            # The bytes cp1252 leaves undefined are control characters in MySQL's latin1.
            return raw.decode("latin-1")
        raise ValueDecodeError(f"bytes at {exc.start} are not valid {charset}") from None


def value_text(data: Any) -> tuple[bool, str | None]:
    """(present, text) of one ``Data``: absent for NA, None for NIL."""
    data_type = data.dataType
    if data_type == NA:
        return False, None
    if data_type == NIL:
        return True, None
    if data_type == STRING:
        return True, transcode(data.bv, data.charset)
    if data_type == BYTES:
        return True, base64.b64encode(data.bv).decode("ascii")
    # Numbers and decimals are text in sv; an enum number this schema does not know is read the same way,
    # unless only bv is set.
    if not data.sv and data.bv:
        return True, base64.b64encode(data.bv).decode("ascii")
    return True, data.sv


def image(names: list[str], values: Any) -> list[tuple[str, str | None]] | None:
    """(column, text) pairs of one row image; columns past the end of a short image are absent."""
    if not values:
        return None
    pairs = []
    for name, data in zip(names, values, strict=False):
        present, text = value_text(data)
        if present:
            pairs.append((name, text))
    return pairs


def parse_envelope(value: bytes) -> tuple[int, int, int, bytes]:
    """(version, total, index, data) of an ``Envelope``; raises DecodeError on bytes that are not one."""
    envelope = pb.Envelope.FromString(value)
    return envelope.version, envelope.total, envelope.index, envelope.data


# The fields of an event, in the order of the UDF's struct (python_udfs/spark_udfs.py, DTS_EVENT).
EVENT_FIELDS = (
    "message_type",
    "source_type",
    "timestamp",
    "file_name",
    "position",
    "gtid",
    "schema_name",
    "table_name",
    "seq_id",
    "dml_type",
    "column_names",
    "column_types",
    "key_columns",
    "before",
    "after",
    "ddl_sql",
)
_HEADER_FIELDS = EVENT_FIELDS[:9]
_DML_FIELDS = EVENT_FIELDS[9:15]


class EventColumns:
    """The events of many ``Entries``, field by field: one list per field, which Arrow turns into arrays
    without a Python object per event. Row images are lists of (column, text) pairs."""

    def __init__(self) -> None:
        self.columns: dict[str, list[Any]] = {name: [] for name in EVENT_FIELDS}

    def __len__(self) -> int:
        return len(self.columns["message_type"])

    def add_entries(self, data: bytes) -> None:
        """Append the events of one serialized ``Entries``: one per row of a DML entry, one per other
        entry. Raises DecodeError or ValueDecodeError on bad input, and then appends nothing."""
        before = len(self)
        try:
            self._add_entries(data)
        except Exception:
            for values in self.columns.values():
                del values[before:]
            raise

    def add_entries_or_error(self, data: bytes | None) -> str | None:
        """``add_entries`` that reports instead of raising: None, or why nothing was appended."""
        if data is None:
            return "no Entries bytes"
        try:
            self.add_entries(data)
        except DecodeError:
            return "bytes are not a Tencent DTS Entries message (protobuf decode failed)"
        except (ValueDecodeError, LookupError) as exc:
            return f"undecodable value: {exc}"
        return None

    def _add_entries(self, data: bytes) -> None:
        columns = self.columns
        header_columns = [columns[name] for name in _HEADER_FIELDS]
        dml_columns = [columns[name] for name in _DML_FIELDS]
        ddl_sql = columns["ddl_sql"]
        for entry in pb.Entries.FromString(data).items:
            header = entry.header
            message_type = MESSAGE_TYPES.get(header.messageType, f"UNKNOWN({header.messageType})")
            header_values = (
                message_type,
                SOURCE_TYPES.get(header.sourceType, f"UNKNOWN({header.sourceType})"),
                header.timestamp,
                header.fileName,
                str(header.position),
                header.gtid,
                header.schemaName,
                header.tableName,
                str(header.seqId),
            )
            if message_type != "DML":
                for values, value in zip(header_columns, header_values, strict=True):
                    values.append(value)
                for values in dml_columns:
                    values.append(None)
                ddl_sql.append(entry.event.ddlEvent.sql if message_type == "DDL" else None)
                continue
            dml = entry.event.dmlEvent
            names = [column.name for column in dml.columns]
            # A row image is a map: a repeated name would make one of its values vanish.
            repeated = sorted({name for name in names if names.count(name) > 1})
            if repeated:
                raise ValueDecodeError(f"columns repeat a name: {', '.join(repeated)}")
            dml_type = DML_TYPES.get(dml.dmlEventType, f"UNKNOWN({dml.dmlEventType})")
            column_types = [column.originalType for column in dml.columns]
            key_columns = [column.name for column in dml.columns if column.isKey]
            for row in dml.rows:
                for values, value in zip(header_columns, header_values, strict=True):
                    values.append(value)
                row_values = (
                    dml_type,
                    names,
                    column_types,
                    key_columns,
                    image(names, row.oldColumns),
                    image(names, row.newColumns),
                )
                for values, value in zip(dml_columns, row_values, strict=True):
                    values.append(value)
                ddl_sql.append(None)

    def rows(self) -> list[dict[str, Any]]:
        """The events as dicts (row images as dicts), for reading and tests."""
        events = [dict(zip(EVENT_FIELDS, values, strict=True)) for values in zip(*self.columns.values(), strict=True)]
        for event in events:
            for side in ("before", "after"):
                if event[side] is not None:
                    event[side] = dict(event[side])
        return events


def decode_entries(data: bytes) -> list[dict[str, Any]]:
    """Events of one serialized ``Entries`` as dicts; raises DecodeError or ValueDecodeError on bad input."""
    columns = EventColumns()
    columns.add_entries(data)
    return columns.rows()


def decode_entries_or_error(data: bytes | None) -> tuple[list[dict[str, Any]] | None, str | None]:
    """``decode_entries`` that reports instead of raising: (events, None) or (None, reason)."""
    columns = EventColumns()
    error = columns.add_entries_or_error(data)
    return (None, error) if error else (columns.rows(), None)
