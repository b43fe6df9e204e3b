"""The health page's latency: per tool, calls and the p50/p95 estimated from the metrics' histograms, and a
bar chart of them on a log scale (a 30 s call would otherwise flatten every other bar to nothing)."""

from __future__ import annotations

import math
from typing import Any

LATENCIES = ("memtrove_tool_latency_seconds", "memtrove_search_latency_seconds")
# The chart's scale, in milliseconds: 1 ms to 60 s, a tick each power of ten.
AXIS = (1.0, 60_000.0)
TICKS = (1.0, 10.0, 100.0, 1_000.0, 10_000.0)
LABEL_WIDTH, BAR_WIDTH, ROW = 220, 330, 22  # the SVG's columns (its own units: it scales as a whole)


def latency_rows(registry: Any) -> list[dict[str, Any]]:
    """Per tool (and search mode): calls, and the p50/p95 latency in ms estimated as Prometheus'
    histogram_quantile does (linear within the bucket the quantile falls in); ``over`` names a quantile
    past the last finite bucket (its value is then that bucket's bound: "more than")."""
    rows = []
    for family in registry.collect():
        if family.name not in LATENCIES:
            continue
        series: dict[tuple[tuple[str, str], ...], list[tuple[float, float]]] = {}
        for sample in family.samples:
            if sample.name.endswith("_bucket"):
                labels = tuple(sorted((k, v) for k, v in sample.labels.items() if k != "le"))
                series.setdefault(labels, []).append((float(sample.labels["le"]), sample.value))
        for labels, buckets in series.items():
            buckets.sort()
            total = buckets[-1][1] if buckets else 0
            if not total:
                continue
            named = dict(labels)
            tool = named.pop("tool", "")
            name = f"{tool} ({' '.join(named.values())} search)" if "search" in family.name else tool
            p50, over50 = quantile(buckets, 0.5)
            p95, over95 = quantile(buckets, 0.95)
            rows.append({"name": name, "calls": int(total), "p50_ms": p50, "p95_ms": p95,
                         "p50_over": over50, "p95_over": over95})
    return sorted(rows, key=lambda r: str(r["name"]))


def quantile(buckets: list[tuple[float, float]], q: float) -> tuple[float, bool]:
    """(ms, past the last finite bound) for the ``q`` quantile of cumulative ``(upper bound s, count)``."""
    total = buckets[-1][1]
    rank = q * total
    lower, below = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank and count > below:
            if math.isinf(bound):
                return round(lower * 1000, 1), True
            return round((lower + (bound - lower) * (rank - below) / (count - below)) * 1000, 1), False
        lower, below = bound, count
    return round(lower * 1000, 1), True


def position(ms: float) -> float:
    """Where ``ms`` stands on the chart's log axis, 0 to 1."""
    low, high = AXIS
    ms = min(max(ms, low), high)
    return math.log10(ms / low) / math.log10(high / low)


def bar_chart(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The SVG's geometry: a bar per row (its p95 on the log axis, the value written after it) and the
    axis ticks."""
    bars = [{"label": row["name"], "ms": row["p95_ms"], "over": row.get("p95_over", False),
             "y": index * ROW, "width": round(BAR_WIDTH * position(row["p95_ms"] or 0.0), 1)}
            for index, row in enumerate(rows)]
    ticks = [{"ms": ms, "x": round(LABEL_WIDTH + BAR_WIDTH * position(ms), 1)} for ms in TICKS]
    height = len(bars) * ROW + 24
    return {"bars": bars, "ticks": ticks, "label_width": LABEL_WIDTH, "bar_width": BAR_WIDTH,
            "width": LABEL_WIDTH + BAR_WIDTH + 90, "height": height, "axis_y": len(bars) * ROW + 4}
