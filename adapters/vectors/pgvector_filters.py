"""pgvector's metadata filter: the jsonb conditions of a vector-index filter (VectorIndex semantics)."""

from __future__ import annotations

import json
from typing import Any

from domain.ports import Filter

_SIGNS = {"$gte": ">=", "$lte": "<=", "$gt": ">", "$lt": "<"}


def filter_sql(where: Filter | None) -> tuple[str, dict[str, Any]]:
    """`` AND ...`` jsonb conditions with adapters.vectors.similarity.matches' semantics: equality, $ne, $gte/$lte
    (same JSON type only: numbers numerically, strings in order), $in; an absent field (None is never
    stored) matches nothing. Equalities become one ``meta @> {...}``, $in ``meta @> ANY(...)``: the GIN
    index serves both, and containment is estimated from statistics (``meta -> f = v``: a fixed 0.5%),
    so the planner sees when a filter leaves rows enough for the HNSW scan, or few for an exact one."""
    clauses: list[str] = []
    params: dict[str, Any] = {}
    contained: dict[str, Any] = {}  # scalar equalities on metadata
    for n, (name, cond) in enumerate((where or {}).items()):
        if name == "$or":  # of single-field equalities (access keys): one containment test against any
            params[f"or{n}"] = [json.dumps(_equality(sub)) for sub in cond]
            clauses.append(f"meta @> ANY(CAST(:or{n} AS jsonb[]))")
            continue
        field = "to_jsonb(record_id)" if name == "record_id" else f"(meta -> CAST(:f{n} AS text))"
        params[f"f{n}"] = name
        for i, (op, value) in enumerate((cond.items() if isinstance(cond, dict) else [("$eq", cond)])):
            key = f"v{n}_{i}"
            params[key] = json.dumps(value)
            if op == "$eq" and name != "record_id" and not isinstance(value, (dict, list, tuple)):
                contained[name] = value
            elif op in ("$eq", "$ne"):
                clauses.append(f"{field} {'=' if op == '$eq' else '<>'} CAST(:{key} AS jsonb)")
            elif op in _SIGNS:
                clauses.append(f"jsonb_typeof({field}) = jsonb_typeof(CAST(:{key} AS jsonb)) "
                               f"AND {field} {_SIGNS[op]} CAST(:{key} AS jsonb)")
            elif op == "$in" and name == "record_id":  # the btree's column
                params[key] = [v for v in value if isinstance(v, str)]
                clauses.append(f"record_id = ANY(CAST(:{key} AS text[]))")
            elif op == "$in":
                params[key] = [json.dumps({name: v}) for v in value]
                clauses.append(f"meta @> ANY(CAST(:{key} AS jsonb[]))")
            else:
                raise ValueError(f"the pgvector index cannot filter with {op!r}")
    if contained:
        clauses.insert(0, "meta @> CAST(:eq AS jsonb)")
        params["eq"] = json.dumps(contained)
    return "".join(f" AND {c}" for c in clauses), params


def _equality(sub: Filter) -> Filter:
    if len(sub) != 1 or isinstance(next(iter(sub.values())), dict):
        raise ValueError("the pgvector index takes $or of single-field equalities only")
    return sub
