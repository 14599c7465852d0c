"""`j6doctor cases …`: what each subcommand prints, from the case library. The CLI parses
the arguments and writes the text; these functions know the library, not the terminal."""

from __future__ import annotations

import json
from typing import Any

from j6doctor.store.library import CaseLibrary
from j6doctor.templates import inert_markdown


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2) + "\n"


def list_text(rows: list[dict[str, Any]], fmt: str) -> str:
    if fmt == "json":
        return _json(rows)
    if not rows:
        return "案例库中没有符合条件的案例\n"
    lines = [f"{'id':>5}  {'日期':10}  {'阶段':14}  {'平台':6}  {'流程':4}  {'已确认':10}  案例"]
    for r in rows:
        lines.append(f"{r['id']:>5}  {r['created_at'][:10]:10}  {r['stage']:14}  {r['platform'] or '-':6}  "
                     f"{r['flow'] or '-':4}  {r['resolved_stage'] or '-':10}  {r['title']}")
    lines.append(f"{len(rows)} 个案例")
    return "\n".join(lines) + "\n"


def show_text(library: CaseLibrary, case_id: int, fmt: str) -> str:
    case = library.show(case_id)
    if fmt == "json":
        return _json(case["verdict"])
    # a stored report may come from an imported line or an older j6doctor: no raw HTML either way
    return inert_markdown(case["report_md"])


def stats_text(library: CaseLibrary, fmt: str) -> str:
    stats = library.stats()
    if fmt == "json":
        return _json(stats)
    lines = [f"案例库：{stats['cases']} 个案例"]
    if not stats["per_stage"]:
        lines.append("还没有已确认根因的案例（j6doctor cases resolve ID --stage STAGE）")
    for title, table in (("按已确认的阶段", stats["per_stage"]), ("按规则库版本", stats["per_rulebase"])):
        if table:
            lines.append(f"{title}：")
            for key, entry in table.items():
                share = entry["agree"] / entry["resolved"]
                lines.append(f"  {key:16} 已确认 {entry['resolved']:>4}，结论一致 {entry['agree']:>4}（{share:.0%}）")
    return "\n".join(lines) + "\n"


def rediagnose_text(count: int, changes: list[dict[str, Any]], fmt: str, diff: bool) -> str:
    if fmt == "json":
        return _json({"cases": count, "changed": changes})
    lines = [f"重新诊断 {count} 个案例：{len(changes)} 个的结论会改变"]
    for change in changes:
        before, after = change["before"], change["after"]
        if after is None:
            lines.append(f"- #{change['id']} {change['title']}：{before['stage']} → 无法在这个规则库下重新诊断"
                         f"（{change['error']}；用记录它时的规则包再试，或在词表中补上这个值）")
            continue
        lines.append(f"- #{change['id']} {change['title']}：{before['stage']} → {after['stage']}"
                     f"（变化：{'、'.join(change['changed'])}；规则 {', '.join(before['rules']) or '-'} → "
                     f"{', '.join(after['rules']) or '-'}）")
        if diff:
            for key in change["changed"]:
                if key != "stage":
                    lines.append(f"    {key}: {before[key]} → {after[key]}")
    return "\n".join(lines) + "\n"
