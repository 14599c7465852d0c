"""Turn each found artifact file into a few summarising facts through its probe.

One function per file kind; each catches the probe's InputError, so a broken file is
reported (probe_problem) and the diagnosis goes on with the other evidence.
"""

from __future__ import annotations

from collections import Counter
from pathlib import PurePosixPath
from typing import Callable

from .charts import compare_series, sensitivity_series
from .engine import Source
from .probes import InputError
from .probes.artifacts import FoundFile
from .probes.badcase import read_badcase_txt
from .probes.compare_per_layer import CompareTable, metric_row_for, read_compare_per_layer, summarize
from .probes.fx_graph import read_fx_graph
from .probes.layer_advisor import read_layer_advisor
from .probes.model_check import Signal, read_model_check
from .probes.pt_file import read_pt, sensitivity_rows_from_pt
from .probes.user_scripts import check_script
from .probes.sensitivity import (
    SensitivityRow, SensitivityTable, parse_sensitivity_name, read_sensitivity_txt, summarize_sensitivity,
)

Problem = Callable[..., None]


def _source(found: FoundFile, line: int | None = None, key: str | None = None) -> Source:
    return Source("file", file=found.display, line=line, key=key, sha256=found.sha256)


def _folder(found: FoundFile) -> str:
    return str(PurePosixPath(found.display).parent)


def _compare(found: FoundFile, facts, tables: dict[str, CompareTable]) -> None:
    table = read_compare_per_layer(found.path, found.display)
    tables[_folder(found)] = table
    summary = summarize(table)
    facts.charts.append(compare_series(found.display, table, summary))
    facts.add("compare_summary", {
        "path": found.display, "rows": summary.rows, "metric_rows": summary.metric_rows,
        "pattern": summary.pattern, "analysis_type": summary.analysis_type,
        "worst_mod_name": summary.worst.mod_name if summary.worst else "",
        "worst_cosine": summary.worst.cosine if summary.worst else None,
        "gradual_start": summary.gradual_start.mod_name if summary.gradual_start else "",
        "has_origin": summary.origin is not None,
    }, _source(found, key="summary"))
    origin = summary.origin
    if origin is None:
        return
    row, up = origin.row, origin.upstream
    facts.add("compare_origin", {
        "path": found.display, "row": row.index, "mod_name": row.mod_name, "op_type": row.base_op_type,
        "fused_group": " → ".join(origin.fused_group), "trigger": origin.trigger, "reading": origin.reading,
        "cosine": row.cosine, "atol": row.atol, "l1": row.l1, "qscale": row.qscale,
        "max_qscale_diff": row.max_qscale_diff, "dtype": row.dtype or "",
        "base_max": row.base_max, "analy_max": row.analy_max,
        "upstream": up.mod_name if up else "", "upstream_cosine": up.cosine if up else None,
        "upstream_atol": up.atol if up else None,
    }, _source(found, line=row.line, key=f"row {row.index}"))


def _compare_for(found: FoundFile, tables: dict[str, CompareTable]) -> CompareTable | None:
    """The compare table a sensitivity file belongs to: the one in its folder, else the only
    one found (the seed's convert flow writes them to two out_dirs)."""
    if _folder(found) in tables:
        return tables[_folder(found)]
    return next(iter(tables.values())) if len(tables) == 1 else None


def _sensitivity(found: FoundFile, facts, tables: dict[str, CompareTable],
                 table: SensitivityTable | None = None) -> None:
    table = table or read_sensitivity_txt(found.path, found.display)
    if not table.rows:
        raise InputError(found.display, "the sensitivity table has no rows")
    summary = summarize_sensitivity(table)
    facts.charts.append(sensitivity_series(found.display, table, summary))
    compare = _compare_for(found, tables)
    joined = metric_row_for(compare, summary.top.op_name) if compare is not None else None
    runner = summary.runner_up
    facts.add("sensitivity_summary", {
        "path": found.display, "output": table.name.output, "metric": table.metric,
        "top_op": summary.top.op_name, "top_type": summary.top.sensitive_type, "top_value": summary.top.value,
        "runner_up_op": runner.op_name if runner else "", "runner_up_value": runner.value if runner else None,
        "pattern": summary.pattern, "top_ops": "、".join(r.op_name for r in summary.top_ops),
        "compare_path": compare.display if joined else "",
        "compare_row": joined.mod_name if joined else "",
    }, _source(found, line=summary.top.line, key=f"rank {summary.top.rank}"))


def _badcase(found: FoundFile, facts) -> None:
    report = read_badcase_txt(found.path, found.display)
    facts.add("badcase_info", {
        "path": found.display, "outputs": len(report.index_by_output),
        "used_index": report.sample_used_by_run("L1"), "disagree": report.outputs_disagree("L1"),
    }, _source(found, line=report.lines.get("index"), key="L1"))


def _pt(found: FoundFile, facts, tables: dict[str, CompareTable], txt_twins: set[str]) -> None:
    content = read_pt(found.path, found.display)
    facts.add("pt_file", {"path": found.display, "kind": found.kind, "readable": content.readable,
                          "note": content.note}, _source(found))
    if found.kind != "sensitivity_pt" or found.display[:-3] in txt_twins:
        return
    rows = sensitivity_rows_from_pt(content)
    name = parse_sensitivity_name(PurePosixPath(found.display).name)
    if rows and name is not None:
        # Only the .pt twin exists: its row list carries the same table (FORMATS.md §6).
        metric = name.metric or "L1"
        table = SensitivityTable(found.display, name, metric, "unsorted", [
            SensitivityRow(rank, 0, op, kind, "", value, None, None)
            for rank, (op, kind, value) in enumerate(rows)])
        _sensitivity(found, facts, tables, table)


# What a script does that rules combine with case facts (M05, M08, M09, M10).
SCRIPT_USES = ("quant_analysis", "split_run", "single_run", "consistency_strategy", "sensitivity",
               "compare_per_layer", "fake_quant_float", "bc_editor")


def _script(found: FoundFile, facts, limit: int) -> None:
    report = check_script(found.path, found.display)
    per_kind: Counter[str] = Counter()
    for finding in report.findings:
        per_kind[finding.kind] += 1
        if per_kind[finding.kind] <= limit:
            facts.add("script_finding", {"path": found.display, "line": finding.line, "kind": finding.kind,
                                         "detail": finding.detail}, _source(found, line=finding.line))
    for use in sorted(u for u in report.uses if u in SCRIPT_USES or u.startswith("consistency_level:")):
        facts.add("script_use", {"path": found.display, "use": use}, _source(found, key=use))


def _signals(found: FoundFile, facts, source: str, signals, limit: int) -> None:
    per_kind: Counter[str] = Counter()
    for signal in signals:
        per_kind[signal.kind] += 1
        if per_kind[signal.kind] > limit:
            continue
        facts.add("check_signal", {"source": source, "kind": signal.kind, "module": signal.module,
                                   "detail": signal.detail}, _source(found, line=signal.line))


def read_artifacts(found: list[FoundFile], facts, problem: Problem, limit: int, progress=None) -> None:
    tables: dict[str, CompareTable] = {}
    csv_folders = {_folder(f) for f in found if f.kind == "compare_per_layer_csv"}
    txt_twins = {f.display[:-4] for f in found if f.kind == "sensitivity_txt"}
    # compare tables first: sensitivity rows are joined to them through fused groups
    ordered = sorted(found, key=lambda f: (0 if f.kind.startswith("compare_per_layer") else 1, f.display))
    for item in ordered:
        if progress is not None:
            progress(f"读取 {item.display}")
        try:
            if item.kind == "compare_per_layer_csv":
                _compare(item, facts, tables)
            elif item.kind == "compare_per_layer_txt" and _folder(item) not in csv_folders:
                _compare(item, facts, tables)  # the csv is the file to read when both exist
            elif item.kind == "sensitivity_txt":
                _sensitivity(item, facts, tables)
            elif item.kind == "badcase_txt":
                _badcase(item, facts)
            elif item.kind in ("sensitivity_pt", "badcase_pt", "all_badcase_info"):
                _pt(item, facts, tables, txt_twins)
            elif item.kind == "model_check_result":
                _signals(item, facts, "model_check", read_model_check(item.path, item.display).signals, limit)
            elif item.kind == "fx_graph":
                _signals(item, facts, "fx_graph", read_fx_graph(item.path, item.display).signals, limit)
            elif item.kind == "script":
                _script(item, facts, limit)
            elif item.kind == "abnormal_layer_advisor":
                findings = [Signal(f.kind, f.mod_name, f.text, f.line)
                            for f in read_layer_advisor(item.path, item.display)]
                _signals(item, facts, "layer_advisor", findings, limit)
        except InputError as exc:
            where = f"第 {exc.line} 行：" if exc.line else ""
            problem(facts, item.display, where + exc.message, item.sha256)
