"""Chart geometry for the HTML report: per-layer COSINE / ATOL lines with the error origin
marked, and sensitivity bars. Pure numbers and labels; the template draws them as inline
SVG (no script, no network), and Jinja escapes every label.

The report calls series_of on the probes' readings (probes/probe_output.Reading) only when
it draws the HTML page; a compare table's series reads its columns, thinned to MAX_POINTS
rows."""

from __future__ import annotations

import math
from typing import Any

MAX_POINTS = 600  # a 100,000-row table is thinned to this many points, origin and worst kept
WIDTH, HEIGHT, PAD_LEFT, PAD_RIGHT, PAD_TOP, PAD_BOTTOM = 760, 220, 56, 16, 16, 28


def _thin(rows: list, keep: set[int]) -> list:
    if len(rows) <= MAX_POINTS:
        return rows
    step = len(rows) / MAX_POINTS
    chosen = {int(i * step) for i in range(MAX_POINTS)} | {i for i, r in enumerate(rows) if r.index in keep}
    return [rows[i] for i in sorted(chosen)]


def _finite(value) -> bool:
    return value is not None and math.isfinite(value)


def _thin_positions(count: int, keep: set[int]) -> list[int]:
    """_thin's choice as positions: every one up to MAX_POINTS, else MAX_POINTS evenly spaced
    plus those in `keep`."""
    if count <= MAX_POINTS:
        return list(range(count))
    step = count / MAX_POINTS
    return sorted({int(i * step) for i in range(MAX_POINTS)} | keep)


def series_of(reading, origins: dict[str, int] | None = None) -> dict[str, Any]:
    """The chart series of a probe's reading (probes/probe_output.Reading): a compare table
    and its summary, a per-node cosine list (tool, [(name, cosine)]), or a sensitivity
    table and its summary. `origins` gives the error-origin row (or node position) the rules
    found in each table, by the table's path."""
    if reading.kind == "compare":
        table, summary = reading.data
        return compare_series(reading.path, table, summary, (origins or {}).get(reading.path))
    if reading.kind == "sensitivity":
        return sensitivity_series(reading.path, *reading.data)
    tool, nodes = reading.data
    return cosine_series(reading.path, tool, [(i, name, cosine) for i, (name, cosine) in enumerate(nodes)],
                         (origins or {}).get(reading.path))


def compare_series(display: str, table, summary, origin: int | None = None) -> dict[str, Any]:
    """The metric rows of a compare table (probes.compare_per_layer.CompareTable, by column),
    as data for two line panels, the error origin (a row index) marked."""
    import numpy as np

    metric = np.flatnonzero(table.has_metrics)
    worst = summary.worst.index if summary.worst else None
    keep = set()
    for index in (origin, worst):
        at = int(np.searchsorted(metric, index)) if index is not None else len(metric)
        if at < len(metric) and metric[at] == index:
            keep.add(at)
    rows = metric[_thin_positions(len(metric), keep)].tolist()
    names = table.names
    return {
        "kind": "compare",
        "title": "逐层对比",
        "path": display,
        "rows": len(table),
        "points": list(zip(rows, [names[i] for i in rows], _cells(table, "cosine", rows),
                           _cells(table, "atol", rows))),
        "origin": origin,
        "origin_name": names[origin] if origin is not None else "",
    }


def _cells(table, field: str, rows: list[int]) -> list[float | None]:
    """A number column's cells at the given rows: float, or None for a blank cell."""
    column = table.numbers(field)
    if column is None:
        return [None] * len(rows)
    values, missing = column
    return [None if missing[i] else float(values[i]) for i in rows]


def cosine_series(display: str, tool: str, nodes: list[tuple[int, str, float | None]],
                  origin: int | None) -> dict[str, Any]:
    """A per-node cosine table of a tool (hb_verifier, a conversion log): one COSINE panel,
    drawn like a compare table's, the first sudden fall marked. `nodes` are (index, name, cosine)."""
    class _Node:  # the shape _thin expects
        def __init__(self, index: int, name: str, cosine: float | None):
            self.index, self.name, self.cosine = index, name, cosine
    rows = [_Node(*n) for n in nodes]
    points = _thin(rows, {origin} if origin is not None else set())
    return {
        "kind": "compare",
        "title": f"逐节点 cosine（{tool}）",
        "path": display,
        "rows": len(nodes),
        "points": [(r.index, r.name, r.cosine, None) for r in points],
        "origin": origin,
        "origin_name": next((r.name for r in rows if r.index == origin), ""),
    }


def sensitivity_series(display: str, table, summary, top: int = 15) -> dict[str, Any]:
    """The most sensitive rows as bars whose length is the distance from the metric's ideal
    value (1 − Cosine, the SQNR noise ratio, an error itself): the most sensitive op has the
    longest bar whatever the metric's direction; each bar is labelled with the value as written."""
    from j6doctor.probes.sensitivity import distance_function, metric_kind

    distance = distance_function(table)
    ranked = [table.row(k) for k in range(min(top, len(table)))]  # file order: rank order
    kind = metric_kind(table.metric)
    measure = {"similarity": f"1 − {table.metric}", "snr": f"噪声幅度比 10^(−{table.metric}/20)"}.get(kind, table.metric)
    return {
        "kind": "sensitivity",
        "path": display,
        "metric": table.metric,
        "measure": measure,
        "bars": [(f"{r.op_name} ({r.sensitive_type})", distance(r.value), r.value) for r in ranked],
        "top": summary.top.op_name,
    }


def _scale(values: list[float], log: bool) -> tuple[float, float]:
    finite = [v for v in values if _finite(v) and (v > 0 or not log)]
    if not finite:
        return (0.0, 1.0)
    low, high = min(finite), max(finite)
    if log:
        low, high = math.log10(low), math.log10(high)
    if high / 2 - low / 2 < 1e-12 * max(1.0, abs(low), abs(high)):
        # One value: half a unit around it, or 5 % of it where half a unit is lost (1e16).
        pad = 0.5 if log else max(0.5, abs(low) * 0.05)
        low, high = low - pad, high + pad
        if not (math.isfinite(low) and math.isfinite(high)):  # +-1.7e308 padded past the range
            low, high = low / 2, high / 2
    return low, high


def _between(low: float, high: float, fraction: float) -> float:
    # Weighted sum: high - low overflows for values near +-1.8e308.
    return low * (1 - fraction) + high * fraction


def _label(v: float, log: bool) -> str:
    if not log:
        return format(v, ".3g")
    exponent = math.floor(v)
    # 10 ** v overflows above 308; mantissa and exponent apart print the same as .3g.
    if abs(exponent) < 300:
        return format(10 ** v, ".3g")
    return f"{10 ** (v - exponent):.3g}e{exponent:+03d}"


def _panel(points: list[tuple], which: int, log: bool, first: int, last: int) -> dict[str, Any]:
    values = [p[which] for p in points]
    low, high = _scale(values, log)
    inner_w = WIDTH - PAD_LEFT - PAD_RIGHT
    inner_h = HEIGHT - PAD_TOP - PAD_BOTTOM
    span = max(last - first, 1)

    def xy(index: int, value: float) -> tuple[float, float]:
        v = math.log10(value) if log else value
        x = PAD_LEFT + inner_w * (index - first) / span
        y = PAD_TOP + inner_h * (1 - (v / 2 - low / 2) / (high / 2 - low / 2))
        return x, y

    shown = [p for p in points if _finite(p[which]) and (p[which] > 0 or not log)]
    coords = [xy(p[0], p[which]) for p in shown]
    ticks = [{"y": f"{PAD_TOP + inner_h * (1 - (v / 2 - low / 2) / (high / 2 - low / 2)):.1f}", "label": _label(v, log)}
             for v in _tick_values(low, high, log)]
    return {
        "points": " ".join(f"{x:.1f},{y:.1f}" for x, y in coords),
        "dots": [{"x": f"{x:.1f}", "y": f"{y:.1f}"} for x, y in coords] if len(coords) <= 80 else [],
        # one hover target per point: the layer's name and value in an SVG <title>
        "marks": [{"x": f"{x:.1f}", "y": f"{y:.1f}", "title": f"行 {p[0]} {p[1]}：{format(p[which], '.6g')}"}
                  for (x, y), p in zip(coords, shown)],
        "ticks": ticks,
        "log": log,
    }


def _tick_values(low: float, high: float, log: bool) -> list[float]:
    """Axis ticks: on a log axis the powers of ten in range (every other one when there are
    many), or 1-2-5 steps when the range spans less than two decades; five even steps on a
    linear axis."""
    if not log:
        return [_between(low, high, k / 4) for k in range(5)]
    decades = list(range(math.ceil(low - 1e-9), math.floor(high + 1e-9) + 1))
    if len(decades) >= 2:
        stride = max(1, math.ceil(len(decades) / 6))
        return [float(d) for d in decades[::stride]]
    nice = [math.log10(m) + e for e in range(math.floor(low) - 1, math.ceil(high) + 1) for m in (1, 2, 5)]
    inside = [v for v in nice if low - 1e-9 <= v <= high + 1e-9]
    return inside if len(inside) >= 2 else [_between(low, high, k / 4) for k in range(5)]


def layout_compare(series: dict[str, Any]) -> dict[str, Any]:
    """Two panels (COSINE linear, ATOL log) sharing the row axis, origin marked."""
    points = series["points"]
    first = points[0][0] if points else 0
    last = points[-1][0] if points else 1
    inner_w = WIDTH - PAD_LEFT - PAD_RIGHT
    origin_x = None
    if series["origin"] is not None and points:
        origin_x = f"{PAD_LEFT + inner_w * (series['origin'] - first) / max(last - first, 1):.1f}"
    return {
        **series,
        "width": WIDTH, "height": HEIGHT, "pad_left": PAD_LEFT, "pad_top": PAD_TOP,
        "plot_bottom": HEIGHT - PAD_BOTTOM, "plot_right": WIDTH - PAD_RIGHT,
        "cosine": _panel(points, 2, False, first, last),
        "atol": _panel(points, 3, True, first, last),
        "origin_x": origin_x,
        "first_row": first, "last_row": last,
    }


def layout_sensitivity(series: dict[str, Any]) -> dict[str, Any]:
    """Bars scaled to the largest finite distance; the value label sits after the bar's end
    (dark on the light background, never clipped by a short bar)."""
    bars = series["bars"]
    finite = [d for _, d, _ in bars if _finite(d)]
    top = max(finite) if finite else 1.0
    label_w, bar_w, row_h, value_w = 300, 400, 20, 110
    drawn = []
    for i, (name, dist, value) in enumerate(bars):
        length = (dist / top * bar_w) if _finite(dist) and top > 0 else (bar_w if dist == math.inf else 0.0)
        length = max(length, 1.0)
        drawn.append({"y": f"{10 + i * row_h:.1f}", "text_y": f"{24 + i * row_h:.1f}", "name": name,
                      "length": f"{length:.1f}", "value_x": f"{label_w + length + 4:.1f}",
                      "value": format(value, ".4g") if _finite(value) else str(value)})
    return {**series, "width": label_w + bar_w + value_w, "height": 20 + row_h * len(bars), "label_w": label_w,
            "bars_drawn": drawn}
