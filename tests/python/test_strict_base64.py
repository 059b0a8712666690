"""Strict base64 (what java.util.Base64.getEncoder() writes), checked natively by the macros
strict_base64_error and first_invalid_base64. Reasons are written by hand from RFC 4648 section 4."""

import base64

from helpers import dbt_show_in_process

VALID = [
    base64.b64encode(data).decode() for data in (b"", b"A", b"AB", b"ABC", "测试text123".encode(), bytes(range(256)))
]
INVALID = [
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
]


def sql_text(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n").replace("\r", "\\r") + "'"


def test_whatever_the_encoder_writes_is_valid_and_anything_else_has_a_reason(spark, dbt_work_dir):
    texts = [*VALID, *(text for text, _ in INVALID), None]
    values = ", ".join(f"({number}, {'null' if text is None else sql_text(text)})" for number, text in enumerate(texts))
    sql = f"""
        select number, {{{{ strict_base64_error('text') }}}} as reason
        from values {values} as texts (number, text)
        order by number
    """
    reasons = [row["reason"] for row in dbt_show_in_process(spark, dbt_work_dir, sql)]
    assert reasons == [None] * len(VALID) + [reason for _, reason in INVALID] + [None]


def test_the_first_invalid_value_is_named_in_name_order(spark, dbt_work_dir):
    sql = """
        select number, {{ first_invalid_base64('named_values') }} as reason
        from values
            (0, map('b', 'QR==', 'a', 'QQ', 'c', 'QQ==')),
            (1, map('x', 'QQ==', 'y', null)),
            (2, map('after.bin', 'QQ==', 'before.bin', 'QR==')),
            (3, cast(null as map<string, string>)),
            (4, cast(map() as map<string, string>))
            as checked (number, named_values)
        order by number
    """
    assert [row["reason"] for row in dbt_show_in_process(spark, dbt_work_dir, sql)] == [
        "a: length 2 is not a multiple of 4",
        None,
        "before.bin: unused bits of the last character are not zero (not canonical)",
        None,
        None,
    ]
