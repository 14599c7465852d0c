"""`abnormal_layer_advisor.txt` (QuantAnalysis, docs/file_formats.md §4) → one AdvisorFinding per
finding fragment.

The file is written only when something was found, so a missing file means "no
findings" and yields none. Kinds come from the stable match tokens of §4; text that
matches none of them is kept as kind "other". Rows that do not line up and a missing
closing border (an excerpt) are skipped and named in `AdvisorReport.skipped`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from j6doctor.probes.input_error import InputError, Skips
from j6doctor.probes.text_file import load_text, split_lines
from j6doctor.probes.text_tables import Row, is_psql_start, parse_psql, skip_blank

WHAT = "abnormal_layer_advisor.txt"
# A table row per layer: a few MB for large models; parsed rows cost about 20 times the
# file size, so the limit keeps a wrong file from taking gigabytes.
MAX_TEXT_BYTES = 16 * 1024 * 1024
COLUMNS = ("mod_name", "op_type", "abnormal_info", "advice")

# Match token → kind, checked in this order (docs/file_formats.md §4).
KINDS = (
    ("Asymmetric about 0", "asymmetric"),
    ("Large input range", "large_input_range"),
    ("not in high precision", "output_not_high_precision"),
    ("maybe too large for int8", "int8_range"),
    ("Total data range", "total_range"),
    ("does not cover the data range", "scale_coverage"),
    ("inf/nan output", "inf_nan"),
)
# Fragments end in ". "; a dot inside a number ("285.2091") is not followed by a space.
_SENTENCE_END = re.compile(r"(?<=\.)\s+")


@dataclass(frozen=True)
class AdvisorFinding:
    line: int
    mod_name: str
    op_type: str
    kind: str
    text: str
    advice: str


@dataclass
class AdvisorReport:
    findings: list[AdvisorFinding]
    skipped: Skips = field(default_factory=Skips)   # what could not be read (line and why)


def read_layer_advisor(path: Path, display: str | None = None) -> AdvisorReport:
    display = display or path.name
    if not path.exists():
        return AdvisorReport([])   # the profiler writes this file only when it has findings
    lines = split_lines(load_text(path, display, WHAT, MAX_TEXT_BYTES))
    start = skip_blank(lines, 0)
    if not is_psql_start(lines, start):
        raise InputError(display, f"not an {WHAT}: expected a psql table (+---+ border) with "
                                  "columns " + " | ".join(COLUMNS), start + 1)
    table = parse_psql(lines, start, 1, display)
    cols = [table.column(c) for c in COLUMNS]
    if any(c is None for c in cols[:3]):
        raise InputError(display, f"not an {WHAT}: expected columns " + " | ".join(COLUMNS)
                                  + f", got {' | '.join(table.headers)}", start + 2)
    findings: list[AdvisorFinding] = []
    for line, mod_name, op_type, info, advice in _merged_rows(table.rows, cols):
        findings += _findings(line, mod_name, op_type, info, advice)
    skipped = Skips()
    skipped.extend(table.skipped)
    if not findings and skipped:
        first = skipped.kept[0]
        raise InputError(display, f"no readable row: {first.reason}", first.line)
    return AdvisorReport(findings, skipped)


def _merged_rows(rows: list[Row], cols: list[int | None]) -> list[tuple[int, str, str, str, str]]:
    """Rows as (line, mod_name, op_type, abnormal_info, advice). A row with blank mod_name
    and op_type continues the previous one (tabulate splits multi-line cells)."""
    merged: list[tuple[int, str, str, str, str]] = []
    for row in rows:
        mod_name, op_type, info, advice = (row.cells[c] if c is not None else "" for c in cols)
        if merged and not mod_name and not op_type:
            line, m, o, i, a = merged[-1]
            merged[-1] = (line, m, o, _join(i, info), _join(a, advice))
        else:
            merged.append((row.line, mod_name, op_type, info, advice))
    return merged


def _join(a: str, b: str) -> str:
    return f"{a} {b}".strip()


def kind_of(text: str) -> str:
    for token, kind in KINDS:
        if token.lower() in text.lower():
            return kind
    return "other"


def fragments(text: str) -> list[tuple[str, str]]:
    """(kind, text) per finding. A sentence with a match token opens a fragment; a
    sentence without one belongs to the fragment before it (or opens an "other")."""
    result: list[tuple[str, str]] = []
    for sentence in (s for s in _SENTENCE_END.split(text.strip()) if s):
        kind = kind_of(sentence)
        if kind == "other" and result:
            prev_kind, prev_text = result[-1]
            result[-1] = (prev_kind, f"{prev_text} {sentence}")
        else:
            result.append((kind, sentence))
    return result


def _findings(line: int, mod_name: str, op_type: str, info: str,
              advice: str) -> list[AdvisorFinding]:
    parts = fragments(info)
    if not parts:
        return []
    advices = [s for s in _SENTENCE_END.split(advice.strip()) if s]
    # Concatenated rows carry one advice sentence per fragment, in the same order;
    # otherwise every fragment gets the whole advice.
    paired = advices if len(advices) == len(parts) else [advice.strip()] * len(parts)
    return [AdvisorFinding(line, mod_name, op_type, kind, text, adv)
            for (kind, text), adv in zip(parts, paired)]


# --- facts (probes/probe_output.py) -------------------------------------------------------

def add_facts(found, out) -> None:
    from j6doctor.probes.module_signal import Signal

    report = read_layer_advisor(found.path, found.display)
    out.skipped(found, report.skipped)
    out.signals(found, "layer_advisor", [Signal(f.kind, f.mod_name, f.text, f.line) for f in report.findings])
