"""Strict base64 (what java.util.Base64.getEncoder() writes), pure and as the registered UDF."""

import base64

import pytest

from python_udfs.strict_base64 import first_invalid_base64, strict_base64_error


@pytest.mark.parametrize("data", [b"", b"A", b"AB", b"ABC", "测试text123".encode(), bytes(range(256))])
def test_whatever_the_encoder_writes_is_valid(data):
    assert strict_base64_error(base64.b64encode(data).decode()) is None


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("QQ", "length 2 is not a multiple of 4"),
        ("QUJD\nREVG", "length 9 is not a multiple of 4"),
        ("QUJDREVG\r\n", "length 10 is not a multiple of 4"),
        ("QU JD", "length 5 is not a multiple of 4"),
        ("QU J", "character ' ' is not in the base64 alphabet"),
        ("QUJ-", "character '-' is not in the base64 alphabet"),  # URL-safe alphabet
        ("QUJ_", "character '_' is not in the base64 alphabet"),
        ("QUJé", "character 'é' is not in the base64 alphabet"),
        ("Q===", "padding '=' is misplaced"),
        ("QQ==QUJD", "padding '=' is misplaced"),
        ("====", "padding '=' is misplaced"),
        ("QR==", "unused bits of the last character are not zero (not canonical)"),
        ("QUJ=", "unused bits of the last character are not zero (not canonical)"),
    ],
)
def test_anything_else_is_invalid_with_a_reason(text, reason):
    assert strict_base64_error(text) == reason


def test_null_is_not_checked():
    assert strict_base64_error(None) is None


def test_first_invalid_names_the_column_in_name_order():
    assert first_invalid_base64({"b": "QR==", "a": "QQ", "c": "QQ=="}) == "a: length 2 is not a multiple of 4"
    assert first_invalid_base64([("x", "QQ=="), ("y", None)]) is None
    assert first_invalid_base64(None) is None


def test_the_udf_checks_a_map_per_row(spark):
    rows = spark.sql(
        """
        select cdc_check_base64(m).error as error
        from values (map('after.bin', 'QQ==')), (map('before.bin', 'QR==')), (null), (map()) as t(m)
        """
    ).collect()
    assert [r.error for r in rows] == [
        None,
        "before.bin: unused bits of the last character are not zero (not canonical)",
        None,
        None,
    ]
