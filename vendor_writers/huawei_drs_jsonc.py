"""Huawei Cloud DRS JSON-C: DRS JSON (huawei_drs_json) but for a deleted row, which is in `data`."""

from collections.abc import Sequence

from vendor_writers import Change, huawei_drs_json


def flat_message(drs_id: int, changes: Sequence[Change]) -> dict:
    return huawei_drs_json.flat_message(drs_id, changes, deleted_rows_in="data")
