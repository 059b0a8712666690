"""Strict base64: the text java.util.Base64.getEncoder() produces (RFC 4648 section 4, padded, canonical).

DataWorks StreamX writes BYTES values with ``Base64.getEncoder().encodeToString(...)``, so a value is valid
only if that encoder could have written it: the standard alphabet (``A-Z a-z 0-9 + /``), no whitespace or
line breaks, a length that is a multiple of 4, ``=`` padding only at the end, and zero unused bits in the
last character (``QQ==`` is "A"; ``QR==`` decodes to "A" too under lenient decoders but is not canonical).
"""

import base64
import binascii
import re

_SHAPE = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")


def strict_base64_error(text: str | None) -> str | None:
    """None when ``text`` is strict base64 (or null), else why it is not."""
    if text is None:
        return None
    if not _SHAPE.fullmatch(text):
        if len(text) % 4:
            return f"length {len(text)} is not a multiple of 4"
        bad = next((c for c in text if not (c.isascii() and (c.isalnum() or c in "+/="))), None)
        if bad is not None:
            return f"character {bad!r} is not in the base64 alphabet"
        return "padding '=' is misplaced"
    try:
        decoded = base64.b64decode(text, validate=True)
    except binascii.Error as exc:  # pragma: no cover - the pattern already rules these out
        return str(exc)
    if base64.b64encode(decoded).decode("ascii") != text:
        return "unused bits of the last character are not zero (not canonical)"
    return None


def first_invalid_base64(values: dict[str, str | None] | list[tuple[str, str | None]] | None) -> str | None:
    """The first named value (in name order) that is not strict base64, as ``name: reason``; None if all are."""
    if values is None:
        return None
    items = values.items() if isinstance(values, dict) else values
    for name, text in sorted(items, key=lambda item: item[0]):
        error = strict_base64_error(text)
        if error is not None:
            return f"{name}: {error}"
    return None
