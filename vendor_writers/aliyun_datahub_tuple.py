"""Alibaba Cloud DataHub tuples (DTS to DataHub): the row's columns beside _sequence_id_, _operation_type_
(I/U/D), the execution time (spelt `_excute_time_`, as the vendor document does) and the image flags; an
update is a before and an after record of one _sequence_id_. Values are typed by the topic's field types
(`types`: BIGINT as JSON integers, DOUBLE as numbers; a column not named is STRING)."""

from collections.abc import Mapping

from vendor_writers import DELETE, INSERT, Change, json_values

JSON_NUMBERS = {"BIGINT": int, "DOUBLE": float}


def records(sequence_id: int, change: Change, types: Mapping[str, str]) -> list[dict]:
    if change.op == INSERT:
        images = [("I", change.after, "N", "Y")]
    elif change.op == DELETE:
        images = [("D", change.before, "Y", "N")]
    else:
        images = [("U", change.before, "Y", "N"), ("U", change.row, "N", "Y")]

    return [
        {
            "_sequence_id_": str(sequence_id),
            "_operation_type_": operation,
            "_excute_time_": change.at_ms,
            "_source_table_": change.table.name,
            "_before_image_": before_image,
            "_after_image_": after_image,
            **json_values(row, types, JSON_NUMBERS),
        }
        for operation, row, before_image, after_image in images
    ]
