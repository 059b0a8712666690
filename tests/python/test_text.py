from python_udfs.text import decode_utf8


def test_utf8_text_is_returned_unchanged():
    assert decode_utf8('{"c10":"华为云huaweicloud"}'.encode()) == ('{"c10":"华为云huaweicloud"}', None)


def test_byte_order_mark_is_dropped():
    assert decode_utf8(b'\xef\xbb\xbf{"a":1}') == ('{"a":1}', None)


def test_invalid_utf8_gives_the_position_of_the_bad_byte():
    text, error = decode_utf8(b'{"a":"\xff"}')
    assert text is None
    assert error == "value is not valid UTF-8: byte 6 (b'\\xff')"


def test_gbk_bytes_are_not_taken_for_utf8():
    text, error = decode_utf8("华为".encode("gbk"))
    assert text is None
    assert error.startswith("value is not valid UTF-8: byte 0")


def test_null_value_is_an_error_not_an_empty_text():
    assert decode_utf8(None) == (None, "message value is null")
