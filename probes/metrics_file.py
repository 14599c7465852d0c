"""Evaluation results file → normal / abnormal per artifact.

Format (CSV, YAML or JSON): rows of `artifact, metric, value` with optional `dataset`,
`frames`. The qat.pt row of the same metric and dataset is the baseline; an artifact is
abnormal when its drop from the baseline exceeds the tolerance (absolute, or relative to
the baseline). `frames: 1` means a single frame: such a row is single-frame evidence.

    artifact,metric,value,dataset,frames
    qat_pt,mAP,41.2,val2017,5000
    quantized_bc,mAP,36.0,val2017,5000

A row that cannot be read (an unknown artifact, a value that is no number, more fields than
the header) is skipped and named in `MetricRows.skipped`; `judge` reports it with the rows
it could not judge. A file without a readable row raises InputError naming the file, the
line and what was expected.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from j6doctor.engine.strict_yaml import YamlInputError, load_json, load_yaml
from j6doctor.facts import enum_values, resolve
from j6doctor.probes.input_error import InputError, Skips
from j6doctor.probes.tolerance import Tolerance
from j6doctor.probes.text_file import decode_written_text, read_bytes
from j6doctor.probes.text_tables import check_table_width

BASELINE = "qat_pt"
# A metrics file holds a row per artifact, metric and dataset: a few kilobytes. Every row
# becomes a fact, so the limit keeps a wrong file (a prediction dump) from taking gigabytes.
MAX_BYTES = 1024 * 1024
WHAT = "a CSV / YAML / JSON metrics file (rows of artifact, metric, value[, dataset, frames])"


@dataclass(frozen=True)
class MetricRow:
    line: int
    artifact: str
    metric: str
    value: float
    dataset: str
    frames: int | None


@dataclass(frozen=True)
class Judgement:
    artifact: str
    status: str  # normal | abnormal
    evidence: str  # dataset_eval | single_frame
    row: MetricRow
    baseline: float | None  # None for the baseline row itself
    drop: float | None
    threshold: float | None


class MetricRows(list):
    """The rows read (MetricRow), and `skipped`: the rows that could not be read (line, why)."""

    def __init__(self, rows: list[MetricRow], skipped: Skips):
        super().__init__(rows)
        self.skipped = skipped


def _fail(display: str, message: str, line: int | None = None):
    raise InputError(display, message, line)


class _BadRow(ValueError):
    """Why a row of the file cannot be read (the row is skipped)."""


def _rows_from_records(records: list[Any], lines: list[int | None], display: str,
                       skips: Skips | None = None) -> MetricRows:
    """The rows; a record that is no row is skipped and named in `skips`. InputError when no
    record is a row (for the first one's reason)."""
    skips = skips if skips is not None else Skips()
    rows = []
    for record, line in zip(records, lines):
        try:
            rows.append(_row(record, line))
        except _BadRow as problem:
            skips.add(line, str(problem))
    skips.in_file_order()
    if not rows and skips:
        first = skips.kept[0]
        raise InputError(display, first.reason, first.line)
    return MetricRows(rows, skips)


def _row(record: Any, line: int | None) -> MetricRow:
    if not isinstance(record, dict):
        raise _BadRow("each row must be a mapping with artifact, metric, value")
    unknown = sorted(set(record) - {"artifact", "metric", "value", "dataset", "frames"}, key=str)
    if unknown:
        raise _BadRow(f"unknown column {unknown[0]!r}; expected artifact, metric, value, dataset, frames")
    for key in ("artifact", "metric", "value"):
        if record.get(key) in (None, ""):
            raise _BadRow(f"missing {key!r} (expected artifact, metric, value)")
    artifact = resolve("artifact", str(record["artifact"]).strip())
    if artifact is None:
        raise _BadRow(f"unknown artifact {record['artifact']!r}; allowed: {', '.join(enum_values('artifact'))} "
                      "(or their usual names, e.g. qat.bc, calibrated_model)")
    try:
        value = float(record["value"])
    except (TypeError, ValueError):
        raise _BadRow(f"value {record['value']!r} is not a number") from None
    if not math.isfinite(value):
        raise _BadRow(f"value {record['value']!r} is not a finite number")
    return MetricRow(line or 0, artifact, str(record["metric"]).strip(), value,
                     str(record.get("dataset") or "").strip(), _frames(record.get("frames")))


def _frames(frames: Any) -> int | None:
    if frames in (None, ""):
        return None
    try:
        frames = int(frames)
    except (TypeError, ValueError, OverflowError):
        raise _BadRow(f"frames {frames!r} is not a whole number") from None
    if frames < 1:
        raise _BadRow("frames must be at least 1")
    return frames


def read_metrics(path: Path, display: str | None = None) -> MetricRows:
    display = display or path.name
    # An empty file passes here: the format checks below say what its header should be.
    text, _ = decode_written_text(read_bytes(path, display, WHAT, MAX_BYTES), display, WHAT)
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return _csv_rows(text, display)
    if suffix in (".yaml", ".yml", ".json"):
        return _document_rows(text, suffix, display)
    _fail(display, "a metrics file ends in .csv, .yaml, .yml or .json")
    return MetricRows([], Skips())


def _csv_rows(text: str, display: str) -> MetricRows:
    header_end = text.find("\n")
    check_table_width(text.count(",", 0, header_end if header_end >= 0 else len(text)) + 1,
                      display, 1, "the header")
    reader = csv.DictReader(io.StringIO(text), skipinitialspace=True)
    try:
        fieldnames = reader.fieldnames
    except csv.Error as exc:
        _fail(display, f"not a valid CSV header ({exc})", 1)
    if not fieldnames:
        _fail(display, "empty; expected a header line artifact,metric,value[,dataset,frames]", 1)
    header = [h.strip() for h in reader.fieldnames]
    if not {"artifact", "metric", "value"} <= set(header):
        _fail(display, f"header {','.join(header)!r} lacks artifact, metric, value", 1)
    records, lines = [], []
    skips = Skips()
    try:
        for record in reader:
            if None in record:
                skips.add(reader.line_num, "more fields than the header; quote a value that holds a comma")
                continue
            records.append({k.strip(): (v.strip() if isinstance(v, str) else v)
                            for k, v in record.items() if k})
            lines.append(reader.line_num)
    except csv.Error as exc:  # e.g. a field over the csv module's size limit
        skips.add(reader.line_num or None, f"not a valid CSV row ({exc}); the rest of the file is not read")
    return _rows_from_records(records, lines, display, skips)


def _document_rows(text: str, suffix: str, display: str) -> MetricRows:
    """The rows of a YAML / JSON metrics file: a list of rows, or a mapping with `results`."""
    try:
        located = load_json(text, "a metrics file", non_finite=True) if suffix == ".json" else load_yaml(text)
    except YamlInputError as exc:
        _fail(display, exc.message, exc.line)
    doc = located.data
    records = doc.get("results") if isinstance(doc, dict) else doc
    if not isinstance(records, list):
        _fail(display, "expected a list of rows (or a mapping with a 'results' list)")
    prefix = ("results",) if isinstance(doc, dict) else ()
    lines = [located.line_of(prefix + (i,)) for i in range(len(records))]
    return _rows_from_records(records, lines, display)


def judge(rows: list[MetricRow], tolerance: Tolerance) -> tuple[list[Judgement], list[str]]:
    """Judge every artifact against the qat.pt baseline of the same metric and dataset.
    Returns one judgement per artifact (its worst row) and notes on rows that could not be read
    (MetricRows.skipped) or judged."""
    baselines: dict[tuple[str, str], MetricRow] = {}
    for row in rows:
        if row.artifact == BASELINE:
            baselines.setdefault((row.metric, row.dataset), row)
    per_artifact: dict[str, Judgement] = {}
    skipped = getattr(rows, "skipped", None)
    notes = [f"line {item.line}: {item.reason}; row not read" if item.line else f"{item.reason}; not read"
             for item in (skipped.kept if skipped else [])]
    if skipped and skipped.more:
        notes.append(f"{skipped.more} more rows not read")
    for row in rows:
        if row.artifact == "float":
            continue  # the float model is not on the consistency chain
        evidence = "single_frame" if row.frames == 1 else "dataset_eval"
        if row.artifact == BASELINE:
            current = Judgement(row.artifact, "normal", evidence, row, None, None, None)
        else:
            base = baselines.get((row.metric, row.dataset))
            if base is None:
                notes.append(f"line {row.line}: no qat_pt baseline for {row.metric}"
                             + (f" on {row.dataset}" if row.dataset else "") + "; row not judged")
                continue
            drop, threshold = tolerance.drop(base.value, row.value)
            status = "abnormal" if drop > threshold else "normal"
            current = Judgement(row.artifact, status, evidence, row, base.value, drop, threshold)
        previous = per_artifact.get(row.artifact)
        if previous is None or _worse(current, previous):
            per_artifact[row.artifact] = current
    order = list(enum_values("artifact"))
    return sorted(per_artifact.values(), key=lambda j: order.index(j.artifact)), notes


def _worse(a: Judgement, b: Judgement) -> bool:
    if a.status != b.status:
        return a.status == "abnormal"
    return (a.drop or 0.0) > (b.drop or 0.0)
