"""Chart geometry for the HTML report: per-layer COSINE / ATOL lines with the error origin
marked, and sensitivity bars. Pure numbers and labels; the template draws them as inline
SVG (no script, no network), and Jinja escapes every label.

The report calls series_of on the probes' readings (probes/probe_output.Reading) only when
it draws the HTML page; a compare table's series reads its columns, thinned to MAX_POINTS
rows."""

from __future__ import annotations

import math
import sys
import unicodedata
from decimal import Decimal
from typing import Any

MAX_POINTS = 600  # a 100,000-row table is thinned to this many points, origin and worst kept
# PAD_TOP holds the panel's title and the error origin's label above the plot, clear of the curve.
WIDTH, HEIGHT, PAD_LEFT, PAD_RIGHT, PAD_TOP, PAD_BOTTOM = 760, 238, 56, 16, 34, 28
TICK_FONT, ORIGIN_FONT, BAR_FONT = 10, 11, 11
LABEL_MARGIN = 4  # px kept free at the SVG's left edge


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
    return {
        "kind": "compare",
        "title": "逐层对比",
        "path": display,
        "rows": len(table),
        "points": list(zip(rows, [table.name(i) for i in rows], _cells(table, "cosine", rows),
                           _cells(table, "atol", rows))),
        "origin": origin,
        "origin_name": table.name(origin) if origin is not None else "",
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
        # +-1.7e308 padded past the range: up to the largest float
        low, high = max(low - pad, -sys.float_info.max), min(high + pad, sys.float_info.max)
    return low, high


def metric_text(value, digits: int) -> str:
    """A metric value as shown: `digits` significant digits, and a float keeps at least one
    decimal (41.0, not 41), so values side by side read with a consistent precision."""
    if not isinstance(value, float) or not math.isfinite(value):
        return str(value)
    text = format(value, f".{digits}g")
    return text if "." in text or "e" in text else text + ".0"


def _log_text(mantissa: int, exponent: int) -> str:
    """mantissa × 10^exponent, written exactly: 0.05, 1, 300, 2e-07, 1e+300."""
    if -4 <= exponent <= 4:
        return format(Decimal(mantissa).scaleb(exponent), "f")
    return f"{mantissa}e{exponent:+03d}"


def _log_axis(low: float, high: float) -> tuple[float, float, list[tuple[float, str]]]:
    """Round ticks on a log axis (`low`, `high` are log10 values): the powers of ten in range
    (every other one when there are many) when there are two or more; else the 1-2-5 values
    inside, else the 1..9 × 10^k values inside; when even those are fewer than two, the axis
    widens to the nearest 1..9 × 10^k values around the range. Returns the axis's (low, high)
    and the ticks as (log10 value, label)."""
    decades = list(range(math.ceil(low - 1e-9), math.floor(high + 1e-9) + 1))
    if len(decades) >= 2:
        stride = max(1, math.ceil(len(decades) / 6))
        return low, high, [(float(d), _log_text(1, d)) for d in decades[::stride]]
    exponents = range(math.floor(low) - 1, math.ceil(high) + 1)
    for mantissas in ((1, 2, 5), range(1, 10)):
        inside = [(math.log10(m) + e, m, e) for e in exponents for m in mantissas]
        inside = [t for t in inside if low - 1e-9 <= t[0] <= high + 1e-9]
        if len(inside) >= 2:
            return low, high, [(v, _log_text(m, e)) for v, m, e in inside]
    every = [(math.log10(m) + e, m, e) for e in exponents for m in range(1, 10)]
    below = max((t for t in every if t[0] <= low + 1e-9), default=every[0])
    above = min((t for t in every if t[0] >= high - 1e-9), default=every[-1])
    ticks = [t for t in every if below[0] <= t[0] <= above[0]]
    return below[0], above[0], [(v, _log_text(m, e)) for v, m, e in ticks]


def _linear_axis(low: float, high: float) -> tuple[float, float, list[tuple[float, str]]]:
    """Round ticks on a linear axis: a 1-2-5 × 10^k step giving about four intervals, the
    axis widened to whole steps; every label has the step's decimals, so neighbours differ
    (0.9990, 0.9995, 1.0000 — not 0.999, 1, 1)."""
    raw = (high / 2 - low / 2) / 2  # a quarter of the range, without overflowing
    if not (math.isfinite(raw) and raw > 0):  # not expected from _scale; the ends as they are
        return low, high, [(v, format(v, ".3g")) for v in (low, high)]
    power = math.floor(math.log10(raw))
    mantissa = next(m for m in (1, 2, 5, 10) if m * 10.0 ** power >= raw * (1 - 1e-9))
    if mantissa == 10:
        mantissa, power = 1, power + 1
    step = mantissa * 10.0 ** power
    first, last = math.floor(low / step + 1e-9), math.ceil(high / step - 1e-9)
    if math.isfinite(first * step) and math.isfinite(last * step):
        low, high = min(low, first * step), max(high, last * step)
    else:  # the next whole step is past the largest float: ticks inside the range only
        first, last = math.ceil(low / step - 1e-9), math.floor(high / step + 1e-9)
    values = [n * step for n in range(first, last + 1)]
    if len(values) < 2:  # a range at the largest floats holding one whole step: its ends too
        values = sorted({low, *values, high})
    largest = max(abs(v) for v in values) if values else abs(high)
    if power >= -9 and largest < 1e6:
        labels = [format(v, f".{max(0, -power)}f") for v in values]
    else:  # significant digits down to the step's digit
        digits = max(0, math.floor(math.log10(largest)) - power) if largest > 0 else 0
        labels = [format(v, f".{digits}e") if v else "0" for v in values]
    return low, high, list(zip(values, labels))


def _axis(values: list, log: bool) -> tuple[float, float, list[tuple[float, str]]]:
    low, high = _scale(values, log)
    return _log_axis(low, high) if log else _linear_axis(low, high)


def _text_width(text: str, size: float) -> float:
    """A generous estimate of a sans-serif text's width in px (the fonts differ between
    machines): CJK (wide) characters one em, m / w 0.9 em, capitals 0.72 em, narrow
    punctuation and i / l 0.36 em, the rest 0.58 em."""
    width = 0.0
    for ch in text:
        if unicodedata.east_asian_width(ch) in ("W", "F"):
            width += 1.0
        elif ch in "mwMW@%":
            width += 0.9
        elif ch.isupper():
            width += 0.72
        elif ch in "ijlrtf.,:;|!'()[] ":
            width += 0.36
        else:
            width += 0.58
    return width * size


def shorten_left(text: str, size: float, room: float) -> str:
    """`text` if it fits in `room` px at font `size`, else its tail after a leading ellipsis
    (the informative end of a dotted op name), cut after a dot where that loses little."""
    if _text_width(text, size) <= room:
        return text
    keep = len(text)
    while keep > 1 and _text_width("…" + text[len(text) - keep:], size) > room:
        keep -= 1
    tail = text[len(text) - keep:]
    dot = tail.find(".")
    if 0 <= dot < min(12, len(tail) // 3):
        tail = tail[dot + 1:]
    return "…" + tail


def _panel(points: list[tuple], which: int, log: bool, first: int, last: int,
           axis: tuple[float, float, list[tuple[float, str]]], pad_left: int) -> dict[str, Any]:
    low, high, tick_values = axis
    inner_w = WIDTH - pad_left - PAD_RIGHT
    inner_h = HEIGHT - PAD_TOP - PAD_BOTTOM
    span = max(last - first, 1)

    def y_of(v: float) -> float:
        return PAD_TOP + inner_h * (1 - (v / 2 - low / 2) / (high / 2 - low / 2))

    def xy(index: int, value: float) -> tuple[float, float]:
        v = math.log10(value) if log else value
        return pad_left + inner_w * (index - first) / span, y_of(v)

    shown = [p for p in points if _finite(p[which]) and (p[which] > 0 or not log)]
    coords = [xy(p[0], p[which]) for p in shown]
    return {
        "points": " ".join(f"{x:.1f},{y:.1f}" for x, y in coords),
        "dots": [{"x": f"{x:.1f}", "y": f"{y:.1f}"} for x, y in coords] if len(coords) <= 80 else [],
        # one hover target per point: the layer's name and value in an SVG <title>
        "marks": [{"x": f"{x:.1f}", "y": f"{y:.1f}", "title": f"行 {p[0]} {p[1]}：{metric_text(p[which], 6)}"}
                  for (x, y), p in zip(coords, shown)],
        "ticks": [{"y": f"{y_of(v):.1f}", "label": text} for v, text in tick_values],
        "log": log,
    }


def _origin_label(name: str, x: float) -> dict[str, Any]:
    """The error origin's label, in the top margin above the plot (where no curve runs),
    beside the marker line: on its right, or on its left near the right edge; a long name
    keeps its tail."""
    right_room = WIDTH - 4 - (x + 4)
    left_room = (x - 4) - 4
    side = "start" if right_room >= min(left_room, _text_width(f"误差起点 {name}", ORIGIN_FONT)) else "end"
    room = right_room if side == "start" else left_room
    prefix = "误差起点 "
    text = prefix + shorten_left(name, ORIGIN_FONT, room - _text_width(prefix, ORIGIN_FONT))
    return {"x": f"{x + 4 if side == 'start' else x - 4:.1f}", "y": f"{PAD_TOP - 8}", "anchor": side,
            "text": text, "full": prefix + name, "line_top": f"{PAD_TOP - 20}"}


def layout_compare(series: dict[str, Any]) -> dict[str, Any]:
    """Two panels (COSINE linear, ATOL log) sharing the row axis, origin marked. The left
    margin fits the longest tick label of either panel, so both panels line up."""
    points = series["points"]
    first = points[0][0] if points else 0
    last = points[-1][0] if points else 1
    axes = {"cosine": _axis([p[2] for p in points], False), "atol": _axis([p[3] for p in points], True)}
    longest = max((_text_width(text, TICK_FONT) for _, _, ticks in axes.values() for _, text in ticks), default=0)
    pad_left = max(PAD_LEFT, math.ceil(longest) + 10)
    inner_w = WIDTH - pad_left - PAD_RIGHT
    origin_x = origin_label = None
    if series["origin"] is not None and points:
        x = pad_left + inner_w * (series["origin"] - first) / max(last - first, 1)
        origin_x, origin_label = f"{x:.1f}", _origin_label(series["origin_name"], x)
    return {
        **series,
        "width": WIDTH, "height": HEIGHT, "pad_left": pad_left, "pad_top": PAD_TOP,
        "plot_bottom": HEIGHT - PAD_BOTTOM, "plot_right": WIDTH - PAD_RIGHT,
        "cosine": _panel(points, 2, False, first, last, axes["cosine"], pad_left),
        "atol": _panel(points, 3, True, first, last, axes["atol"], pad_left),
        "origin_x": origin_x, "origin_label": origin_label,
        "first_row": first, "last_row": last,
    }


def layout_sensitivity(series: dict[str, Any]) -> dict[str, Any]:
    """Bars scaled to the largest finite distance; the value label sits after the bar's end
    (dark on the light background, never clipped by a short bar). A long op name is shortened
    from the left to fit the label column (its full name stays in the bar's <title>)."""
    bars = series["bars"]
    finite = [d for _, d, _ in bars if _finite(d)]
    top = max(finite) if finite else 1.0
    label_w, bar_w, row_h, value_w = 300, 400, 20, 110
    drawn = []
    for i, (name, dist, value) in enumerate(bars):
        length = (dist / top * bar_w) if _finite(dist) and top > 0 else (bar_w if dist == math.inf else 0.0)
        length = max(length, 1.0)
        drawn.append({"y": f"{10 + i * row_h:.1f}", "text_y": f"{24 + i * row_h:.1f}", "name": name,
                      "label": shorten_left(name, BAR_FONT, label_w - 6 - LABEL_MARGIN),
                      "length": f"{length:.1f}", "value_x": f"{label_w + length + 4:.1f}",
                      "value": metric_text(value, 4)})
    return {**series, "width": label_w + bar_w + value_w, "height": 20 + row_h * len(bars), "label_w": label_w,
            "bars_drawn": drawn}
