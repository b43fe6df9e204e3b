"""What an HTTP API said when it refused a request, on one line (embedding and rerank APIs alike)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx


def api_detail(response: httpx.Response, keys: Sequence[str] = ("detail", "message", "error")) -> str:
    """The API's own explanation: the first of ``keys`` its JSON body holds (a nested message, or a
    validation list's messages), else the body's text; whitespace folded to one line, not yet shortened."""
    try:
        body: Any = response.json()
    except ValueError:
        body = response.text
    if isinstance(body, dict):
        found = next((body[k] for k in keys if body.get(k)), None)
        if isinstance(found, dict):
            found = found.get("message")
        if isinstance(found, list):  # request validation: [{"loc": ..., "msg": ...}, ...]
            found = "; ".join(str(item.get("msg", item)) if isinstance(item, dict) else str(item) for item in found)
        body = found or ""
    return " ".join(str(body).split())
