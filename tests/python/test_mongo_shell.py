"""Huawei DRS MongoDB (DDS) `value` / `where` documents to their top-level fields as Extended JSON v2
relaxed. The first cases are the documents of the vendor's own examples (seed 004); the expected JSON is
written out by hand."""

import json

import pytest

from python_udfs.mongo_shell import shell_to_fields

OID = "64650cf67dc36a464e76e583"


def document(shell: str) -> dict:
    """The parsed fields as one document again, their JSON texts read back."""
    fields, error = shell_to_fields(shell)
    assert error is None, error
    return {name: None if text is None else json.loads(text) for name, text in fields.items()}


@pytest.mark.parametrize(
    ("shell", "extended_json"),
    [
        # insert
        (
            '{"_id": ObjectId("64650cf67dc36a464e76e583"), "c1": "baz", "tags": ["mongodb", "database", "NoSQL"]}',
            {"_id": {"$oid": OID}, "c1": "baz", "tags": ["mongodb", "database", "NoSQL"]},
        ),
        # replace: value, then where
        ('{"_id": ObjectId("64650cf67dc36a464e76e583"), "c1": "sss"}', {"_id": {"$oid": OID}, "c1": "sss"}),
        ('{"_id": ObjectId("64650cf67dc36a464e76e583")}', {"_id": {"$oid": OID}}),
        # update of a value, update of keys
        ('{"$set": {"c1": "aaa"}}', {"$set": {"c1": "aaa"}}),
        ('{"$unset": {"c1": true}, "$set": {"column1": "aaa"}}', {"$unset": {"c1": True}, "$set": {"column1": "aaa"}}),
    ],
)
def test_vendor_examples(shell, extended_json):
    assert document(shell) == extended_json


@pytest.mark.parametrize(
    ("shell", "extended_json"),
    [
        ('{"at": ISODate("2023-05-17T09:18:31.439Z")}', {"at": {"$date": "2023-05-17T09:18:31.439Z"}}),
        ('{"at": new Date(1684315111439)}', {"at": {"$date": "2023-05-17T09:18:31.439Z"}}),
        ('{"at": ISODate("1969-12-31T23:59:59.000Z")}', {"at": {"$date": {"$numberLong": "-1000"}}}),
        ('{"n": NumberLong("9223372036854775807")}', {"n": 9223372036854775807}),
        ('{"n": NumberLong(42), "i": NumberInt(7)}', {"n": 42, "i": 7}),
        ('{"price": NumberDecimal("1234.5000")}', {"price": {"$numberDecimal": "1234.5000"}}),
        ('{"ts": Timestamp(1684344064, 1)}', {"ts": {"$timestamp": {"t": 1684344064, "i": 1}}}),
        ('{"b": BinData(0, "AQID")}', {"b": {"$binary": {"base64": "AQID", "subType": "00"}}}),
        ("{'single': 'quotes', unquoted: 1.5e3, neg: -2}", {"single": "quotes", "unquoted": 1500.0, "neg": -2}),
        ('{"s": "tab\\tand \\u534e"}', {"s": "tab\tand 华"}),
        (
            '{"nested": {"a": [1, {"b": null}], "e": {}, "l": []}}',
            {"nested": {"a": [1, {"b": None}], "e": {}, "l": []}},
        ),
        ('{"x": NaN}', {"x": {"$numberDouble": "NaN"}}),
    ],
)
def test_shell_types(shell, extended_json):
    assert document(shell) == extended_json


def test_field_values_are_compact_json_text_and_null_is_none():
    assert shell_to_fields('{"_id": ObjectId("64650cf67dc36a464e76e583"), "s": "华", "n": null, "a": [1, 2]}') == (
        {"_id": '{"$oid":"64650cf67dc36a464e76e583"}', "s": '"华"', "n": None, "a": "[1,2]"},
        None,
    )


def test_a_value_that_is_not_a_document_has_no_fields_and_no_error():
    assert shell_to_fields("[1, 2]") == (None, None)


@pytest.mark.parametrize(
    ("shell", "reason"),
    [
        ('{"a": "unterminated}', "unterminated string at character 20"),
        ('{"a": Code("function() {}")}', "unknown constructor Code at character 10"),
        ('{"a": 1} db.dropDatabase()', "unexpected text after the document at character 9"),
        ('{"_id": ObjectId("xyz")}', "bad arguments to ObjectId: an ObjectId is 24 hex digits at character 16"),
        ('{"a" 1}', "expected ':' at character 5"),
        ("", "expected a value at character 0"),
    ],
)
def test_unparseable_documents_get_a_reason(shell, reason):
    assert shell_to_fields(shell) == (None, f"not a MongoDB shell document: {reason}")


def test_null_stays_null():
    assert shell_to_fields(None) == (None, None)


def test_deep_nesting_is_a_reason_not_a_crash():
    fields, error = shell_to_fields("[" * 5000 + "]" * 5000)
    assert fields is None
    assert error == "not a MongoDB shell document: nested too deeply"
