"""The filter format every index port takes."""

from __future__ import annotations

from typing import Any

# A vector/metadata filter: field -> value (equality) or {"$gte"|"$lte"|"$in": value}.
Filter = dict[str, Any]
