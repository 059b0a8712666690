"""Message text: the bytes of a JSON message value as UTF-8 text, or the reason they are not."""

UTF8_BOM = b"\xef\xbb\xbf"


def decode_utf8(value: bytes | None) -> tuple[str | None, str | None]:
    """Return ``(text, error)``: exactly one of them is set."""
    if value is None:
        return None, "message value is null"
    if value.startswith(UTF8_BOM):
        value = value[len(UTF8_BOM) :]
    try:
        return value.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return None, f"value is not valid UTF-8: byte {exc.start} ({value[exc.start : exc.start + 1]!r})"
