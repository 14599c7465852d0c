"""Turn each found artifact file into a few summarising facts through its probe.

One function per file kind; each catches the probe's InputError, so a broken file is
reported (probe_problem) and the diagnosis goes on with the other evidence. Each reads its
file before it makes a fact citing it, so that the file's sha256 comes from the bytes read
(artifacts.hashing_reads); chart series are handed over unbuilt (evidence.Charts).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from pathlib import PurePosixPath
from typing import Callable

from typing import TYPE_CHECKING

from j6doctor.engine import Source
from j6doctor.probes import InputError
from j6doctor.probes.artifacts import FoundFile

if TYPE_CHECKING:
    from j6doctor.probes.compare_per_layer import CompareTable
    from j6doctor.probes.sensitivity import SensitivityTable

# Each reader imports its probe when a file of its kind is found: a run reads few kinds, and
# importing every probe would cost a cold start more than reading a case.

Problem = Callable[..., None]


def _source(found: FoundFile, line: int | None = None, key: str | None = None) -> Source:
    return Source("file", file=found.display, line=line, key=key, sha256=found.sha256)


# A warning is quoted in the report; a log line can be megabytes long (a dumped tensor, a
# runaway message). The source line points to the full text.
MAX_WARNING_CHARS = 2000


def _warning_text(text: str) -> str:
    if len(text) <= MAX_WARNING_CHARS:
        return text
    return f"{text[:MAX_WARNING_CHARS]}……（原文共 {len(text)} 字符，余下见该行）"


def _folder(found: FoundFile) -> str:
    return str(PurePosixPath(found.display).parent)


def _compare(found: FoundFile, facts, tables: dict[str, CompareTable]) -> None:
    from j6doctor.charts import compare_series
    from j6doctor.probes.compare_per_layer import read_compare_per_layer, summarize

    table = read_compare_per_layer(found.path, found.display)
    tables[_folder(found)] = table
    summary = summarize(table)
    facts.charts.append(lambda: compare_series(found.display, table, summary))
    _non_finite_cells(found, facts, table)
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
        "fused_group": " → ".join(origin.fused_group), "trigger": origin.trigger,
        "high_narrowing": origin.ranges.high_narrowing, "low_narrowing": origin.ranges.low_narrowing,
        "range_deviation": origin.ranges.deviation, "high_limit_steps": origin.ranges.high_limit_steps,
        "low_limit_steps": origin.ranges.low_limit_steps, "has_int_limits": origin.ranges.has_int_limits,
        "cosine": row.cosine, "atol": row.atol, "l1": row.l1, "qscale": row.qscale,
        "max_qscale_diff": row.max_qscale_diff, "dtype": row.dtype or "",
        "base_max": row.base_max, "analy_max": row.analy_max,
        "upstream": up.mod_name if up else "", "upstream_cosine": up.cosine if up else None,
        "upstream_atol": up.atol if up else None,
    }, _source(found, line=row.line, key=f"row {row.index}"))


# The metric columns a reading uses; a nan / inf there is said once per row, however many
# rows hold one (a table of thousands of nan rows gets a count after the first ones).
_METRIC_COLUMNS = (("cosine", "Cosine"), ("l1", "L1"), ("atol", "Atol"), ("max_qscale_diff", "max_qscale_diff"))
MAX_NON_FINITE_NOTES = 20


def _non_finite_cells(found: FoundFile, facts, table: CompareTable) -> None:
    """A nan / inf metric cell is no number a reading can use (the summary, origin and charts
    skip it): each such row is named, whether or not a fact would have carried the cell."""
    import numpy as np

    columns = []
    for field, name in _METRIC_COLUMNS:
        column = table.numbers(field)
        if column is not None:
            values, missing = column
            broken = ~missing & ~np.isfinite(values)
            if broken.any():
                columns.append((name, values, broken))
    if not columns:
        return
    rows = np.flatnonzero(np.logical_or.reduce([broken for _, _, broken in columns]))
    for i in rows[:MAX_NON_FINITE_NOTES].tolist():
        row = table.row(i)
        cells = "，".join(f"{name} 是 {float(values[i])}" for name, values, broken in columns if broken[i])
        where = f"{found.display}:{row.line}（row {row.index}，{row.mod_name}）"
        facts.add("intake_note", {"key": where, "text": f"{where}：{cells}，不作为数值使用"},
                  _source(found, line=row.line, key=f"row {row.index}"))
    if len(rows) > MAX_NON_FINITE_NOTES:
        facts.add("intake_note", {"key": found.display,
                                  "text": f"{found.display}：另有 {len(rows) - MAX_NON_FINITE_NOTES} 行的指标是 nan / inf，"
                                          "不作为数值使用"}, _source(found, key="summary"))


def _compare_for(found: FoundFile, tables: dict[str, CompareTable]) -> CompareTable | None:
    """The compare table a sensitivity file belongs to: the one in its folder, else the only
    one found (the seed's convert flow writes them to two out_dirs)."""
    if _folder(found) in tables:
        return tables[_folder(found)]
    return next(iter(tables.values())) if len(tables) == 1 else None


def _sensitivity(found: FoundFile, facts, tables: dict[str, CompareTable],
                 table: SensitivityTable | None = None) -> None:
    from j6doctor.charts import sensitivity_series
    from j6doctor.probes.compare_per_layer import metric_row_for
    from j6doctor.probes.sensitivity import read_sensitivity_txt, summarize_sensitivity

    table = table or read_sensitivity_txt(found.path, found.display)
    if not len(table):
        raise InputError(found.display, "the sensitivity table has no rows")
    summary = summarize_sensitivity(table)
    facts.charts.append(lambda: sensitivity_series(found.display, table, summary))
    compare = _compare_for(found, tables)
    joined = metric_row_for(compare, summary.top.op_name) if compare is not None else None
    runner = summary.runner_up
    facts.add("sensitivity_summary", {
        "path": found.display, "output": table.name.output, "metric": table.metric,
        "top_op": summary.top.op_name, "top_type": summary.top.sensitive_type, "top_value": summary.top.value,
        "runner_up_op": runner.op_name if runner else "", "runner_up_value": runner.value if runner else None,
        "metric_kind": summary.metric_kind, "top_distance": summary.top_distance,
        "next_share": summary.next_share, "third_share": summary.third_share,
        "top_ops": "、".join(r.op_name for r in summary.top_ops),
        "compare_path": compare.display if joined else "",
        "compare_row": joined.mod_name if joined else "",
    }, _source(found, line=summary.top.line, key=f"rank {summary.top.rank}"))


def _badcase(found: FoundFile, facts) -> None:
    from j6doctor.probes.badcase import read_badcase_txt

    report = read_badcase_txt(found.path, found.display)
    facts.add("badcase_info", {
        "path": found.display, "outputs": len(report.index_by_output),
        "used_index": report.sample_used_by_run("L1"), "disagree": report.outputs_disagree("L1"),
    }, _source(found, line=report.lines.get("index"), key="L1"))


def _pt(found: FoundFile, facts, tables: dict[str, CompareTable], txt_twins: set[str]) -> None:
    from j6doctor.probes.pt_file import read_pt, sensitivity_rows_from_pt
    from j6doctor.probes.sensitivity import SensitivityRow, SensitivityTable, parse_sensitivity_name

    content = read_pt(found.path, found.display)
    facts.add("pt_file", {"path": found.display, "kind": found.kind, "readable": content.readable,
                          "note": content.note}, _source(found))
    if found.kind != "sensitivity_pt" or found.display[:-3] in txt_twins:
        return
    rows = sensitivity_rows_from_pt(content)
    name = parse_sensitivity_name(PurePosixPath(found.display).name)
    if rows and name is not None:
        # Only the .pt twin exists: its row list carries the same table (docs/file_formats.md §6).
        metric = name.metric or "L1"
        table = SensitivityTable(found.display, name, metric, "unsorted", [
            SensitivityRow(rank, 0, op, kind, "", value, None, None)
            for rank, (op, kind, value) in enumerate(rows)])
        _sensitivity(found, facts, tables, table)


# What a script does that rules combine with case facts (M05, M08, M09, M10).
SCRIPT_USES = ("quant_analysis", "split_run", "single_run", "consistency_strategy", "sensitivity",
               "compare_per_layer", "fake_quant_float", "bc_editor")


def _script(found: FoundFile, facts, limit: int) -> None:
    from j6doctor.probes.user_scripts import check_script

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
                                   "detail": signal.detail, "module_type": signal.type}, _source(found, line=signal.line))


def _hb_verifier(found: FoundFile, facts, limit: int) -> None:
    from j6doctor.charts import cosine_series

    from j6doctor.probes.hb_verifier import read_hb_verifier

    report = read_hb_verifier(found.path, found.display)
    kinds = {m.kind for m in report.models}
    pair = "bc_hbm" if "bc" in kinds and kinds & {"hbm", "bin"} else ""
    models = ",".join(m.path for m in report.models)
    if report.layers:
        drop, worst = report.first_drop(), report.worst_layer()
        facts.charts.append(lambda: cosine_series(
            found.display, "hb_verifier", [(i, r.node_name, r.cosine) for i, r in enumerate(report.layers)],
            report.layers.index(drop) if drop else None))
        facts.add("layer_cosines", {
            "path": found.display, "tool": "hb_verifier", "rows": len(report.layers),
            "first_drop_node": drop.node_name if drop else "", "first_drop_cosine": _finite(drop.cosine if drop else None),
            "worst_node": worst.node_name if worst else "", "worst_cosine": _finite(worst.cosine if worst else None),
            "first_node": report.layers[0].node_name, "first_node_cosine": _finite(report.layers[0].cosine),
        }, _source(found, line=(drop or worst or report.layers[0]).line, key="layers"))
    for row in report.outputs[:limit]:
        facts.add("verifier_output", {
            "path": found.display, "output": row.output_name, "consistent": row.consistent,
            "mismatched": row.mismatched, "total": row.total, "max_abs": _finite(row.max_abs_diff),
            "max_rel": _finite(row.max_rel_diff), "pair": pair, "models": models,
        }, _source(found, line=row.line, key=row.output_name))


def _conversion(found: FoundFile, facts, limit: int) -> None:
    """An hb_mapper / hb_compile conversion log or its *_quant_info.json: versions, march and
    input parameters (logs only), the per-node cosine reading, warnings verbatim."""
    from j6doctor.charts import cosine_series

    if found.kind == "conversion_log":
        from j6doctor.probes.conversion_log import read_conversion_log

        log = read_conversion_log(found.path, found.display, require_tables=False)
        nodes, outputs = log.nodes, log.outputs
        for tool, value in sorted(log.versions.items()):
            facts.add_version(tool, value.text, _source(found, line=value.line, key=tool),
                              f"{found.display}:{value.line} 记录")
        if log.march is not None:
            source = _source(found, line=log.march.line, key="march")
            facts.add("artifact_march", {"path": found.display, "march": log.march.text.lower(),
                                         "what": "转换（编译）时的 march"}, source)
            facts.add_platform(log.march.text, source, f"{found.display}:{log.march.line} 记录的 march", note=False)
        multi = len(log.input_parameters) > 1
        for block in log.input_parameters[:limit]:
            for key, value in block.values.items():
                facts.add("input_param", {"name": key, "value": value.text.strip().rstrip(",").lower(),
                                          "input": (block.name or "") if multi else ""},
                          _source(found, line=value.line, key=key))
        for warning in log.warnings[:limit]:
            facts.add("tool_warning", {"path": found.display, "tool": "hb_mapper / hb_compile",
                                         "text": _warning_text(warning.text)},
                      _source(found, line=warning.line))
        summary, tool = log.summary().nodes, "conversion_log"
    else:
        from j6doctor.probes.quant_info import read_quant_info

        info = read_quant_info(found.path, found.display)
        nodes, outputs = info.nodes, []
        summary, tool = info.summary(), "quant_info"
    if not nodes:
        return
    origin, worst, first = summary.origin, summary.worst, summary.first_node
    worst_output = min((o for o in outputs if o.cosine is not None), key=lambda o: o.cosine, default=None)
    facts.charts.append(lambda: cosine_series(found.display, tool, [(i, n.name, n.cosine) for i, n in enumerate(nodes)],
                                              nodes.index(origin.node) if origin else None))
    facts.add("layer_cosines", {
        "path": found.display, "tool": tool, "rows": len(nodes),
        "first_drop_node": origin.node.name if origin else "",
        "first_drop_cosine": _finite(origin.node.cosine if origin else None),
        "worst_node": worst.name if worst else "", "worst_cosine": _finite(worst.cosine if worst else None),
        "worst_output": worst_output.name if worst_output else "",
        "worst_output_cosine": _finite(worst_output.cosine if worst_output else None),
        "first_node": first.node.name if first.node else "", "first_node_cosine": _finite(first.cosine),
        "first_node_nan": first.cosine is not None and math.isnan(first.cosine),
        "next_cosine": _finite(first.following_min),
    }, _source(found, line=(origin.node if origin else (worst or nodes[0])).line, key="nodes"))


def _finite(value: float | None) -> float | None:
    """nan / inf are no number a rule can compare: kept out of the facts (the file shows them)."""
    return value if value is not None and math.isfinite(value) else None


# The input settings a compiled model declares, as the conversion yaml names them.
MODEL_INPUT_KEYS = ("input_type_rt", "input_type_train", "input_layout_rt", "input_layout_train",
                    "norm_type", "mean_value", "scale_value")


def _model_info(found: FoundFile, facts, limit: int) -> None:
    if found.kind == "hb_model_info":
        from j6doctor.probes.hb_model_info import read_hb_model_info as read
    else:
        from j6doctor.probes.hrt_model_info import read_hrt_model_info as read
    info = read(found.path, found.display)
    facts.add("model_info", {
        "path": found.display, "tool": info.tool, "march": info.march.text.lower() if info.march else "",
        "hbrt_older": info.hbrt_older_than_model, "hbrt_warning": info.hbrt_warning.text if info.hbrt_warning else "",
        "removed_nodes": "、".join(v.text for v in info.removed_nodes),
    }, _source(found, line=info.hbrt_warning.line if info.hbrt_warning else info.line, key=info.tool))
    if info.march:
        source = _source(found, line=info.march.line, key="march")
        facts.add("artifact_march", {"path": found.display, "march": info.march.text.lower(),
                                     "what": "模型（hbm / bin）编译的 march"}, source)
        facts.add_platform(info.march.text, source, f"{found.display}:{info.march.line} 记录的模型 march", note=False)
    # the conversion tools' own versions (hb_mapper / horizon_nn on X3 / X5 / J5; a J6 hbm's
    # "builder version"): they answer the versions question for PTQ users
    tools = [(given, info.fields[key]) for key, given in (("hb_mapper_version", "hb_mapper"),
                                                          ("builder_version", "builder"),
                                                          ("horizon_nn_version", "horizon_nn"))
             if key in info.fields]
    for name, value in [("hbdk", info.hbdk_version), *tools, ("UCP", info.ucp_version), ("DNN", info.dnn_version),
                        ("HBRT", info.hbrt_version)]:
        if value is not None:
            facts.add_version(name, value.text, _source(found, line=value.line, key=name),
                              f"{found.display}:{value.line} 记录")
    multi = len(info.inputs) > 1
    for model_input in info.inputs[:limit]:
        for key in MODEL_INPUT_KEYS:
            value = getattr(model_input, key)
            if value is not None:
                facts.add("input_param", {"name": key, "value": value.text.strip().lower(),
                                          "input": model_input.name if multi else ""},
                          _source(found, line=value.line, key=f"{model_input.name}.{key}"))
    for output in info.outputs[:limit]:
        facts.add("model_output", {"path": found.display, "name": output.name,
                                   "quanti_type": output.quanti_type.text if output.quanti_type else "",
                                   "needs_dequantize": output.needs_dequantize},
                  _source(found, line=output.line, key=output.name))


def _plugin_log(found: FoundFile, facts, limit: int) -> None:
    from j6doctor.probes.plugin_log import read_plugin_log

    log = read_plugin_log(found.path, found.display)
    for fact in log.versions:
        facts.add_version(fact.name, fact.version, _source(found, line=fact.line, key=fact.name),
                          f"{found.display}:{fact.line} 记录")
    if log.python is not None:
        facts.add_version("python", log.python.version, _source(found, line=log.python.line, key="python"),
                          f"{found.display}:{log.python.line} 记录的用户环境")
    if log.march is not None:
        source = _source(found, line=log.march.line, key="march")
        facts.add("artifact_march", {"path": found.display, "march": log.march.march,
                                     "what": "plugin 运行时的 march"}, source)
        facts.add_platform(log.march.march, source, f"{found.display}:{log.march.line} 记录的 march", note=False)
    for message in log.warnings[:limit]:
        facts.add("tool_warning", {"path": found.display, "tool": "horizon_plugin_pytorch",
                                   "text": _warning_text(f"{message.level} {message.headline}")},
                  _source(found, line=message.line, key=message.module))


# plugin 3.0.x names each check `model_check_result_<YYMMDD>_<HHMM>_<n>.txt` (docs/file_formats.md R1)
_CHECK_STAMP = re.compile(r"model_check_result_(\d{6})_(\d{4})_(\d+)\.txt$", re.IGNORECASE)


def _check_order(found: FoundFile) -> tuple:
    """Newest last: timestamped checks by their stamp, after the unstamped ones."""
    match = _CHECK_STAMP.search(found.display)
    if match:
        return (1, match.group(1), match.group(2), int(match.group(3)), found.display)
    return (0, "", "", 0, found.display)


def _model_checks(found: list[FoundFile], facts, limit: int, problem: Problem) -> None:
    """The newest model check is the current one: read in full; older ones are listed."""
    checks = sorted((f for f in found if f.kind == "model_check_result"), key=_check_order)
    if not checks:
        return
    from j6doctor.probes.model_check import read_model_check

    current = checks[-1]
    try:  # read before its facts cite it: the sha256 then comes from the bytes read
        check, error = read_model_check(current.path, current.display), None
    except InputError as exc:
        check, error = None, exc
    for older in checks[:-1]:
        facts.add("model_check_info", {"path": older.display, "current": False, "current_path": current.display},
                  _source(older))
    facts.add("model_check_info", {"path": current.display, "current": True, "current_path": current.display},
              _source(current))
    if error is not None:
        problem(facts, current.display, (f"第 {error.line} 行：" if error.line else "") + error.message,
                current.sha256)
        return
    for name in ("horizon_plugin_pytorch", "horizon_plugin_profiler"):
        if name in check.header:
            version, line = check.header[name]
            facts.add_version(name, version, _source(current, line=line, key=name), f"{current.display}:{line} 记录")
    if "march" in check.header:
        march, line = check.header["march"]
        source = _source(current, line=line, key="current march")
        facts.add("artifact_march", {"path": current.display, "march": march.lower(),
                                     "what": "prepare 时的 march（模型检查）"}, source)
        facts.add_platform(march, source, f"{current.display}:{line} 记录的 current march", note=False)
    _signals(current, facts, "model_check", check.signals, limit)


def read_artifacts(found: list[FoundFile], facts, problem: Problem, limit: int, progress=None) -> None:
    tables: dict[str, CompareTable] = {}
    csv_folders = {_folder(f) for f in found if f.kind == "compare_per_layer_csv"}
    txt_twins = {f.display[:-4] for f in found if f.kind == "sensitivity_txt"}
    # compare tables first: sensitivity rows are joined to them through fused groups
    ordered = sorted(found, key=lambda f: (0 if f.kind.startswith("compare_per_layer") else 1, f.display))
    _model_checks(found, facts, limit, problem)
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
            elif item.kind == "fx_graph":
                from j6doctor.probes.fx_graph import read_fx_graph

                _signals(item, facts, "fx_graph", read_fx_graph(item.path, item.display).signals, limit)
            elif item.kind == "script":
                _script(item, facts, limit)
            elif item.kind == "hb_verifier":
                _hb_verifier(item, facts, limit)
            elif item.kind in ("hb_model_info", "hrt_model_info"):
                _model_info(item, facts, limit)
            elif item.kind == "plugin_log":
                _plugin_log(item, facts, limit)
            elif item.kind in ("conversion_log", "quant_info"):
                _conversion(item, facts, limit)
            elif item.kind == "abnormal_layer_advisor":
                from j6doctor.probes.layer_advisor import read_layer_advisor
                from j6doctor.probes.module_signal import Signal

                findings = [Signal(f.kind, f.mod_name, f.text, f.line)
                            for f in read_layer_advisor(item.path, item.display)]
                _signals(item, facts, "layer_advisor", findings, limit)
        except InputError as exc:
            where = f"第 {exc.line} 行：" if exc.line else ""
            problem(facts, item.display, where + exc.message, item.sha256)
