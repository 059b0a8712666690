"""cdc_decoded_text: a JSON message's bytes as strict UTF-8 text, natively in Spark SQL. Expected values
are written by hand from the UTF-8 definition (RFC 3629) and Python's strict decoder."""

from helpers import dbt_show_in_process

NOT_UTF8 = "value is not valid UTF-8"
CASES = [
    # (name, bytes as hex, text, error)
    ("cjk", "华为云huaweicloud".encode().hex(), "华为云huaweicloud", None),
    ("byte-order mark dropped", "EFBBBF7B7D", "{}", None),
    ("a U+FFFD the sender wrote is text", "EFBFBD", "\ufffd", None),
    ("NUL is a character", "610062", "a\x00b", None),
    ("stray byte", "7B22223AFF7D", None, NOT_UTF8),
    ("GBK is not UTF-8", "华为".encode("gbk").hex(), None, NOT_UTF8),
    ("overlong NUL", "C080", None, NOT_UTF8),
    ("surrogate half", "EDA080", None, NOT_UTF8),
    ("past U+10FFFF", "F4908080", None, NOT_UTF8),
    ("truncated sequence", "E4B8", None, NOT_UTF8),
    ("byte-order mark before a bad byte", "EFBBBFFF", None, NOT_UTF8),
]


def test_message_bytes_become_strict_utf8_text_or_a_reason(spark, dbt_work_dir):
    values = ", ".join(f"({number}, X'{hex_bytes}')" for number, (_, hex_bytes, _, _) in enumerate(CASES))
    sql = f"""
        select number, decoded.text, decoded.error
        from (
            select number, {{{{ cdc_decoded_text('value') }}}} as decoded
            from values {values}, ({len(CASES)}, null) as messages (number, value)
        ) as decoded
        order by number
    """
    rows = dbt_show_in_process(spark, dbt_work_dir, sql)
    expected = [(text, error) for _, _, text, error in CASES] + [(None, "message value is null")]
    assert [(row["text"], row["error"]) for row in rows] == expected
