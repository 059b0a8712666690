"""MongoDB shell-syntax documents, as Huawei DRS writes `value` and `where` for DDS (MongoDB) sources,
converted to canonical MongoDB Extended JSON v2 (relaxed mode).

The input is not JSON: it holds constructor calls such as ``ObjectId("…")``, ``ISODate("…")``,
``NumberLong(…)``, ``NumberDecimal("…")``, ``Timestamp(t, i)``, ``BinData(subtype, "…")``. This is a small
recursive-descent parser over that grammar; it never evaluates anything it reads.
"""

import json
import math
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_WHITESPACE = re.compile(r"\s*")
_STRING_ESCAPES = {'"': '"', "'": "'", "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class ShellSyntaxError(ValueError):
    """Input that is not a MongoDB shell document; the message says where and why."""


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, message: str) -> ShellSyntaxError:
        return ShellSyntaxError(f"{message} at character {self.pos}")

    def skip_whitespace(self) -> None:
        self.pos = _WHITESPACE.match(self.text, self.pos).end()

    def peek(self) -> str:
        self.skip_whitespace()
        return self.text[self.pos : self.pos + 1]

    def expect(self, char: str) -> None:
        if self.peek() != char:
            raise self.fail(f"expected {char!r}")
        self.pos += 1

    def document(self) -> Any:
        value = self.value()
        if self.peek():
            raise self.fail("unexpected text after the document")
        return value

    def value(self) -> Any:
        char = self.peek()
        if not char:
            raise self.fail("expected a value")
        if char == "{":
            return self.object()
        if char == "[":
            return self.array()
        if char in "\"'":
            return self.string()
        if char == "-" or char.isdigit():
            return self.number()
        match = _IDENTIFIER.match(self.text, self.pos)
        if not match:
            raise self.fail("expected a value")
        self.pos = match.end()
        name = match.group()
        if name in ("true", "false"):
            return name == "true"
        if name == "null":
            return None
        if name == "undefined":
            return {"$undefined": True}
        if name in ("NaN", "Infinity"):
            return float(name)
        if name == "new":
            return self.value()
        return self.constructor(name)

    def delimited(self, opening: str, closing: str, item: Callable[[], Any]) -> list[Any]:
        """Comma-separated items between an opening and a closing character."""
        self.expect(opening)
        items: list[Any] = []
        if self.peek() == closing:
            self.pos += 1
            return items
        while True:
            items.append(item())
            if self.peek() == ",":
                self.pos += 1
                continue
            self.expect(closing)
            return items

    def object(self) -> dict[str, Any]:
        return dict(self.delimited("{", "}", self.member))

    def member(self) -> tuple[str, Any]:
        key = self.key()
        self.expect(":")
        return key, self.value()

    def key(self) -> str:
        if self.peek() and self.peek() in "\"'":
            return self.string()
        match = _IDENTIFIER.match(self.text, self.pos)
        if not match:
            raise self.fail("expected a field name")
        self.pos = match.end()
        return match.group()

    def array(self) -> list[Any]:
        return self.delimited("[", "]", self.value)

    def string(self) -> str:
        quote = self.text[self.pos]
        self.pos += 1
        chars: list[str] = []
        while True:
            if self.pos >= len(self.text):
                raise self.fail("unterminated string")
            char = self.text[self.pos]
            self.pos += 1
            if char == quote:
                return "".join(chars)
            if char != "\\":
                chars.append(char)
                continue
            escape = self.text[self.pos : self.pos + 1]
            self.pos += 1
            if escape == "u":
                digits = self.text[self.pos : self.pos + 4]
                if not re.fullmatch(r"[0-9a-fA-F]{4}", digits):
                    raise self.fail("bad \\u escape")
                self.pos += 4
                chars.append(chr(int(digits, 16)))
            elif escape in _STRING_ESCAPES:
                chars.append(_STRING_ESCAPES[escape])
            else:
                raise self.fail(f"bad escape \\{escape}")

    def number(self) -> int | float:
        self.skip_whitespace()
        match = _NUMBER.match(self.text, self.pos)
        if not match:
            raise self.fail("bad number")
        self.pos = match.end()
        literal = match.group()
        return float(literal) if any(c in literal for c in ".eE") else int(literal)

    def constructor(self, name: str) -> Any:
        start = self.pos
        args = self.delimited("(", ")", self.value)
        try:
            return _CONSTRUCTORS[name](*args)
        except KeyError:
            self.pos = start
            raise self.fail(f"unknown constructor {name}") from None
        except (TypeError, ValueError) as exc:
            self.pos = start
            raise self.fail(f"bad arguments to {name}: {exc}") from None


def _object_id(hex_text: str) -> dict[str, str]:
    if not re.fullmatch(r"[0-9a-fA-F]{24}", hex_text):
        raise ValueError("an ObjectId is 24 hex digits")
    return {"$oid": hex_text.lower()}


def _date(value: str | int | float | None = None) -> dict[str, Any]:
    if value is None:
        raise ValueError("a date needs a value")
    if isinstance(value, str):
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        millis = int(moment.timestamp() * 1000)
    else:
        millis = int(value)
    # Relaxed mode: ISO-8601 text for years 1970..9999, canonical $numberLong otherwise.
    if 0 <= millis < 253402300800000:
        moment = datetime.fromtimestamp(millis / 1000, UTC)
        return {"$date": moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{millis % 1000:03d}Z"}
    return {"$date": {"$numberLong": str(millis)}}


def _number_long(value: str | int) -> int:
    return int(value)


def _number_int(value: str | int) -> int:
    return int(value)


def _number_decimal(value: str | int | float) -> dict[str, str]:
    return {"$numberDecimal": str(value)}


def _timestamp(seconds: int, increment: int) -> dict[str, Any]:
    return {"$timestamp": {"t": int(seconds), "i": int(increment)}}


def _bin_data(subtype: int, base64_text: str) -> dict[str, Any]:
    return {"$binary": {"base64": base64_text, "subType": f"{int(subtype):02x}"}}


def _uuid(text: str) -> dict[str, Any]:
    import base64
    import uuid

    return {"$binary": {"base64": base64.b64encode(uuid.UUID(text).bytes).decode(), "subType": "04"}}


def _regex(pattern: str, options: str = "") -> dict[str, Any]:
    return {"$regularExpression": {"pattern": pattern, "options": "".join(sorted(options))}}


_CONSTRUCTORS = {
    "ObjectId": _object_id,
    "ISODate": _date,
    "Date": _date,
    "NumberLong": _number_long,
    "NumberInt": _number_int,
    "NumberDecimal": _number_decimal,
    "Timestamp": _timestamp,
    "BinData": _bin_data,
    "UUID": _uuid,
    "RegExp": _regex,
    "MinKey": lambda: {"$minKey": 1},
    "MaxKey": lambda: {"$maxKey": 1},
}


def _relaxed(value: Any) -> Any:
    """Non-finite doubles have no JSON form; relaxed Extended JSON writes them as $numberDouble."""
    if isinstance(value, float) and not math.isfinite(value):
        return {"$numberDouble": "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")}
    if isinstance(value, dict):
        return {key: _relaxed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_relaxed(item) for item in value]
    return value


def shell_to_fields(text: str | None) -> tuple[dict[str, str | None] | None, str | None]:
    """The document's top-level fields, each value as compact Extended JSON v2 relaxed text (a null value
    as None), parsed once; ``(None, None)`` for null text or a value that is not a document, and
    ``(None, reason)`` for text that does not parse."""
    if text is None:
        return None, None
    try:
        document = _Parser(text).document()
    except ShellSyntaxError as exc:
        return None, f"not a MongoDB shell document: {exc}"
    except RecursionError:
        return None, "not a MongoDB shell document: nested too deeply"
    if not isinstance(document, dict):
        return None, None
    return {
        name: None if value is None else json.dumps(_relaxed(value), ensure_ascii=False, separators=(",", ":"))
        for name, value in document.items()
    }, None
