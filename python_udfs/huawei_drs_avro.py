"""The writer schema of Huawei DRS Avro records, read and checked once per model build.

DRS writes each Kafka message as one schemaless Avro record (no container header): the writer schema is
needed to read it. The vendor ships that schema only as a download (record.rar) that is not public here,
so it is a file the user names (dbt var ``huawei_drs_avro_schema``). Spark's ``from_avro`` decodes the
records (models/staging/huawei_drs); it needs the schema as a literal when the query is planned, so the
staging model reads the file through this function first and inlines the text. A schema that Spark could
not use would fail the plan, and with it every DRS format: it is refused here with a reason instead, and the
messages are quarantined with it.
"""

import json
from pathlib import Path
from typing import Any

import fastavro

# Row images: Spark reads an Avro map as map<string, value>; these are the value types a staging model
# can turn into DRS JSON text (bytes become base64, as DRS JSON writes binary).
IMAGE_FIELDS = ("data", "old")
IMAGE_VALUE_TYPES = ("string", "bytes")


def _without_null(avro_type: Any) -> Any:
    """The one non-null branch of ``["null", T]`` (T itself when not such a union)."""
    if isinstance(avro_type, list):
        branches = [branch for branch in avro_type if branch != "null"]
        return branches[0] if len(branches) == 1 else avro_type
    return avro_type


def _image_value_type(field_type: Any) -> str | None:
    """The value type of an image field written as [null,] array<map<[null,] string|bytes>>, else None."""
    array = _without_null(field_type)
    if not isinstance(array, dict) or array.get("type") != "array":
        return None
    image = _without_null(array["items"])
    if not isinstance(image, dict) or image.get("type") != "map":
        return None
    value_type = _without_null(image["values"])
    return value_type if value_type in IMAGE_VALUE_TYPES else None


def writer_schema_or_error(path: str | None) -> tuple[str | None, list[str], list[str], str | None]:
    """``(schema_json, fields, binary_image_fields, None)`` or ``(None, [], [], reason)``.

    ``schema_json`` is the schema as compact JSON text, ``fields`` the record's field names and
    ``binary_image_fields`` the image fields whose values are Avro ``bytes``."""
    try:
        schema = json.loads(Path(path or "").read_text(encoding="utf-8"))
        fastavro.parse_schema(schema)
    except (OSError, ValueError, TypeError, fastavro.schema.SchemaParseException) as exc:
        return None, [], [], f"writer schema {path} cannot be read: {type(exc).__name__}: {exc}"
    if not isinstance(schema, dict) or schema.get("type") != "record":
        return None, [], [], f"writer schema {path} is not an Avro record schema"
    if not schema["fields"]:
        return None, [], [], f"writer schema {path} is not an Avro record schema with fields"
    fields = [field["name"] for field in schema["fields"]]
    binary_image_fields = []
    for field in schema["fields"]:
        if field["name"] not in IMAGE_FIELDS:
            continue
        value_type = _image_value_type(field["type"])
        if value_type is None:
            return (
                None,
                [],
                [],
                f"writer schema {path}: field {field['name']} is not an array of maps of string or bytes",
            )
        if value_type == "bytes":
            binary_image_fields.append(field["name"])
    return json.dumps(schema, ensure_ascii=False, separators=(",", ":")), fields, binary_image_fields, None
