"""JSON read from a file a person hands ``memtrove import``: every way a value can be wrong said plainly
(issue 41.10), never a traceback, and no line read past what a record can hold.

- a line is read up to ``MAX_LINE`` bytes, never whole: a longer one is refused having read that much;
- NaN, Infinity and numbers past a float (``1e400``) are refused naming the field: JSON has no such
  numbers, and sent on to the server they would arrive as null ("Missing required field");
- an integer of more digits than Python reads (4,300) is refused naming the field;
- nesting deeper than ``MAX_DEPTH`` is refused: no record is that deep, and the MCP transport's JSON
  parser would refuse it anyway.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterator
from typing import IO, Any

# A line of memtrove's export is at most an artifact's 10 MB of text, each byte escaped to at most six
# (\u0001), with its other fields: a longer line is no record of the format.
MAX_LINE = 64 * 1024 * 1024
# The MCP transport's JSON parser (pydantic-core) stops at 201 levels, four of which are the call around
# a record (the message, params, arguments, records): a record can be 197 deep and still reach the server.
MAX_DEPTH = 197
MAX_DIGITS = sys.get_int_max_str_digits() or 4300


class JsonProblem(Exception):
    """What is wrong with a JSON value: the field (dotted path, "record" for the whole) and the problem."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(problem)
        self.field, self.problem = field, problem


class LineTooLong(Exception):
    """A line past ``MAX_LINE`` bytes (``number``: its line)."""

    def __init__(self, number: int, limit: int) -> None:
        super().__init__(f"line {number} is over {limit:,} bytes, longer than any record: it was not read further")
        self.number, self.limit = number, limit


class _Odd:
    """A number JSON cannot carry, kept as its text until its field is known."""

    def __init__(self, text: str, why: str) -> None:
        self.text, self.why = text, why


def _float(text: str) -> Any:
    value = float(text)
    return value if math.isfinite(value) else _Odd(text, "is not a finite number")


def _int(text: str) -> Any:
    digits = len(text.lstrip("-"))
    return int(text) if digits <= MAX_DIGITS else _Odd(f"{text[:12]}...", f"is an integer of {digits:,} digits, "
                                                                           f"past the {MAX_DIGITS:,} a number may have")


DECODER = json.JSONDecoder(parse_float=_float, parse_int=_int,
                           parse_constant=lambda text: _Odd(text, "is not a finite number"))


def loads(text: str) -> Any:
    """The JSON value of ``text``; JsonProblem if it is not JSON or holds what the import cannot take."""
    try:
        value, end = DECODER.raw_decode(text, _space(text, 0))
    except json.JSONDecodeError as exc:
        raise JsonProblem("record", f"not a JSON object ({exc.msg}, column {exc.colno})") from None
    except RecursionError:
        raise JsonProblem("record", f"nested deeper than {MAX_DEPTH} levels") from None
    if _space(text, end) != len(text):
        raise JsonProblem("record", f"not a JSON object (more after the value, column {end + 1})")
    return checked(value)


def raw_decode(text: str, at: int) -> tuple[Any, int]:
    """``json.JSONDecoder.raw_decode`` with the same checks as ``loads`` (a value inside a larger text)."""
    try:
        value, end = DECODER.raw_decode(text, at)
    except RecursionError:
        raise JsonProblem("record", f"nested deeper than {MAX_DEPTH} levels") from None
    return checked(value), end


def checked(value: Any) -> Any:
    """``value`` if it is deep enough and holds no number JSON cannot carry (JsonProblem naming the field:
    the number's path, or the top field of what is too deep)."""
    stack: list[tuple[Any, int, str, str]] = [(value, 1, "record", "record")]
    while stack:
        item, depth, where, top = stack.pop()
        if isinstance(item, _Odd):
            raise JsonProblem(where, f"{where} {item.why} ({item.text})")
        if isinstance(item, float) and not math.isfinite(item):  # a converted file's value
            raise JsonProblem(where, f"{where} is not a finite number ({item})")
        if isinstance(item, (dict, list)):
            if depth > MAX_DEPTH:
                raise JsonProblem(top, f"{top} is nested deeper than {MAX_DEPTH} levels")
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            for key, inner in pairs:
                path = str(key) if where == "record" else f"{where}.{key}"
                stack.append((inner, depth + 1, path if len(path) <= 200 else where, path if top == "record" else top))
    return value


def _space(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\n\r":
        at += 1
    return at


def lines(stream: IO[bytes], limit: int = MAX_LINE) -> Iterator[tuple[int, bytes]]:
    """(number, line without its end) of a binary stream, each read up to ``limit`` bytes (LineTooLong past it)."""
    number = 0
    while True:
        line = stream.readline(limit + 1)
        if not line:
            return
        number += 1
        line = line.removesuffix(b"\n")
        if len(line) > limit:  # read to limit + 1 without an end: longer still
            raise LineTooLong(number, limit)
        yield number, line
