"""Newline-delimited JSON-RPC as the bridge sees it: whole lines, and the few fields it reads of them."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

NO_ID: Any = object()  # a message that is not a request (notification, response) or carries no usable id
RESPONSE_PREFIX = b'{"jsonrpc":"2.0","id":'  # how the mcp SDK writes every response and request
NOTIFICATION_PREFIX = b'{"jsonrpc":"2.0","method":'


def read_lines(read: Callable[[], bytes], leftover: bytes = b"") -> Iterator[bytes]:
    """Lines (with their newline) from ``read`` until it returns nothing or fails; a last partial line
    gets its newline."""
    buffer = bytearray(leftover)
    scan = 0
    while True:
        while (end := buffer.find(b"\n", scan)) >= 0:
            yield bytes(buffer[:end + 1])
            del buffer[:end + 1]
            scan = 0
        scan = len(buffer)
        try:
            chunk = read()
        except OSError:
            chunk = b""
        if not chunk:
            if buffer.strip():
                yield bytes(buffer) + b"\n"
            return
        buffer += chunk


def peek(line: bytes) -> tuple[Any, str | None]:
    """A client message's request id (NO_ID unless it is a request) and method."""
    try:
        message = json.loads(line)
    except ValueError:
        return NO_ID, None
    if not isinstance(message, dict):
        return NO_ID, None
    method = message.get("method")
    if not isinstance(method, str):
        return NO_ID, None
    return request_id(message.get("id")), method


def response_key(line: bytes) -> tuple[Any, bool]:
    """The id a server line answers (NO_ID for its requests and notifications) and whether it is a
    result (not an error), read from the line's first bytes as the mcp SDK writes them."""
    if line.startswith(NOTIFICATION_PREFIX):
        return NO_ID, False
    if line.startswith(RESPONSE_PREFIX):
        rest = line[len(RESPONSE_PREFIX):len(RESPONSE_PREFIX) + 256]
        end = rest.find(b'"', 1) + 1 if rest[:1] == b'"' else rest.find(b",")
        if end > 0 and b"\\" not in rest[:end]:
            after = rest[end:end + 9]
            if after.startswith(b',"method"'):
                return NO_ID, False
            if after.startswith((b',"result"', b',"error"')):
                token = rest[:end]
                key = int(token) if token.isdigit() else token[1:-1].decode() if token[:1] == b'"' else NO_ID
                if key is not NO_ID:
                    return key, after.startswith(b',"result"')
    try:  # written some other way: read it whole
        message = json.loads(line)
    except ValueError:
        return NO_ID, False
    if not isinstance(message, dict) or "method" in message:
        return NO_ID, False
    return request_id(message.get("id")), "result" in message


def request_id(value: Any) -> Any:
    """A JSON-RPC id usable as a key (a string or an integer), else NO_ID."""
    return value if isinstance(value, int | str) and not isinstance(value, bool) else NO_ID
