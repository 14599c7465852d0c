"""What a probe hands to the diagnosis when it reads an artifact file: input facts with their
sources (file, line, key, sha256 of the bytes read), and readings — its tables and summaries
kept for the report to draw, never turned into presentation here.

Each probe module that reads an artifact kind has `add_facts(found, out)` (each file kind of
the vocabulary names its probe; probes/registry.py); the diagnosis calls it for each file found.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, Iterable, Iterator, NamedTuple

if TYPE_CHECKING:
    from j6doctor.engine.facts import Source
    from j6doctor.probes.artifacts import FoundFile
    from j6doctor.probes.compare_per_layer import CompareTable
    from j6doctor.probes.input_error import Skips

# A warning is quoted in the report; a log line can be megabytes long (a dumped tensor, a
# runaway message). The source line points to the full text.
MAX_WARNING_CHARS = 2000
# What a reader skipped of a file is said line by line for the first ones, then counted: a
# pasted log with hundreds of garbled lines must not bury the report in warnings.
MAX_SKIP_NOTES = 10


class Reading(NamedTuple):
    """A probe's table and summary kept on the diagnosis; the report decides what to draw."""

    kind: str        # "compare" (per-layer metrics), "cosines" (per-node cosine), "sensitivity"
    path: str        # the file, as shown
    data: Any        # the probe's objects (see charts.series_of for what each kind holds)


@dataclass
class ProbeOutput:
    """Where probes put what they read. `facts` adds input facts (add, add_version,
    add_platform); the other fields carry what one file's reading needs from the others."""

    facts: Any
    limit: int                                   # most facts of one kind from one file
    readings: list[Reading] = field(default_factory=list)
    compare_tables: dict[str, CompareTable] = field(default_factory=dict)  # by folder
    csv_folders: set[str] = field(default_factory=set)   # folders with a compare csv (read it, not the txt)
    txt_twins: set[str] = field(default_factory=set)     # sensitivity .txt files, without the suffix
    unread: dict[str, str] = field(default_factory=dict)  # found files left unread on purpose: display -> why

    def source(self, found: FoundFile, line: int | None = None, key: str | None = None) -> Source:
        from j6doctor.engine.facts import Source  # the diagnosis has it loaded; `inspect` needs no engine

        origin = getattr(found, "origin", None)
        if origin is not None:  # output pasted into a text of the case: the case key holds it
            return origin
        return Source("file", file=found.display, line=line, key=key, sha256=found.sha256)

    def add(self, type_name: str, fields: dict[str, Any], found: FoundFile, line: int | None = None,
            key: str | None = None) -> None:
        self.facts.add(type_name, fields, self.source(found, line, key))

    def skipped(self, found: FoundFile, skips: Skips) -> None:
        """What a reader went past in a file it read (probes/input_error.Skips), as warnings
        on that file (intake_note facts): each skipped part with its line and why, the rest
        counted. The file's other contents are used as read."""
        for item in skips.kept[:MAX_SKIP_NOTES]:
            where = f"{found.display}:{item.line}" if item.line else found.display
            self.add("intake_note", {"key": where, "text": warning_text(
                f"{where}：{item.reason}——已跳过这部分，文件其余内容照常读取")}, found, line=item.line)
        rest = len(skips) - min(len(skips.kept), MAX_SKIP_NOTES)
        if rest > 0:
            self.add("intake_note", {"key": found.display, "text": f"{found.display}：另有 {rest} 处无法读取的内容"
                                     "已跳过，文件其余内容照常读取"}, found)

    def keep(self, kind: str, found: FoundFile, data: Any) -> None:
        self.readings.append(Reading(kind, found.display, data))

    def limited(self, items: Iterable) -> Iterator:
        """The items, at most `limit` of each `.kind` (facts stay few: probes summarise)."""
        per_kind: Counter[str] = Counter()
        for item in items:
            per_kind[item.kind] += 1
            if per_kind[item.kind] <= self.limit:
                yield item

    def signals(self, found: FoundFile, source: str, signals: Iterable) -> None:
        """Structure signals (module_signal.Signal) as check_signal facts, at most `limit` per kind."""
        for signal in self.limited(signals):
            self.add("check_signal", {"source": source, "kind": signal.kind, "module": signal.module,
                                      "detail": signal.detail, "module_type": signal.type},
                     found, line=signal.line)

    def compare_table_for(self, found: FoundFile) -> CompareTable | None:
        """The compare table a file belongs to: the one in its folder, else the only one read
        (the seed's convert flow writes them to two out_dirs)."""
        tables = self.compare_tables
        if folder_of(found) in tables:
            return tables[folder_of(found)]
        return next(iter(tables.values())) if len(tables) == 1 else None


def folder_of(found: FoundFile) -> str:
    return str(PurePosixPath(found.display).parent)


def warning_text(text: str) -> str:
    if len(text) <= MAX_WARNING_CHARS:
        return text
    return f"{text[:MAX_WARNING_CHARS]}……（原文共 {len(text)} 字符，余下见该行）"


def finite(value: float | None) -> float | None:
    """nan / inf are no number a rule can compare: kept out of the facts (the file shows them)."""
    return value if value is not None and math.isfinite(value) else None
