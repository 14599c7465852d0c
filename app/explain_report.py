"""`j6doctor explain`: the derivation tree behind a verdict, and `--why-not STAGE`."""

from __future__ import annotations

import json
from typing import Any

from j6doctor import __version__
from j6doctor.diagnosis import Diagnosis, is_ptq
from j6doctor.case_words import annotate
from j6doctor.describe import has_words, words
from j6doctor.engine.explain import Explainer, derivation_tree, inputs_needed
from j6doctor.facts import enum_values, label
from j6doctor.templates import inert_markdown


def _rules(diagnosis: Diagnosis) -> dict:
    return {r.id: r for r in diagnosis.rulebase.rules}


EXPLAIN_SCHEMA_VERSION = "1.0"  # of this layout (docs/CONTRACT.md): a new key raises the minor number


def explain_data(diagnosis: Diagnosis, why_not_stage: str | None = None) -> dict[str, Any]:
    verdict = diagnosis.verdict
    rules = _rules(diagnosis)
    result = diagnosis.run
    data: dict[str, Any] = {
        "schema_version": EXPLAIN_SCHEMA_VERSION,
        "tool": {"name": "j6doctor", "version": __version__},
        "stage": verdict.stage,
        "stage_label": verdict.stage_label,
        "conclusions": [derivation_tree(result, rules, c.fact) for c in verdict.conclusion],
        "missing": [derivation_tree(result, rules, fid) for m in verdict.missing_detail for fid in m.facts],
        "mistakes": [derivation_tree(result, rules, fid) for m in verdict.mistakes for fid in m.facts],
        "rulebase": diagnosis.verdict_json["rulebase"],
    }
    if why_not_stage is not None:
        checks = Explainer.of(result, diagnosis.rulebase).why_not("verdict", {"stage": why_not_stage})
        annotate(checks, result)
        data["why_not"] = {
            "stage": why_not_stage,
            "stage_label": label("stage", why_not_stage),
            "already": verdict.stage == why_not_stage,
            "rules": [c.as_dict() for c in checks],
            "would_change": inputs_needed(checks),
        }
    return data


def render_explain_json(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2) + "\n"


def tree_lines(node: dict[str, Any], depth: int, out: list[str], ptq: bool = False) -> None:
    """The derivation tree of `node` as Markdown lines; an input fact in the vocabulary's
    words for its type (`ptq`: the artifacts as a PTQ flow names them)."""
    pad = "  " * depth
    if "rule" not in node and has_words(node["type"]):
        local = node.get("source", {}).get("kind") == "environment"
        head = f"{pad}- [{node['fact']}] {node['type']}：{words(node['type'], node['fields'], ptq, local)}"
    else:
        fields = "，".join(f"{k}={v}" for k, v in node["fields"].items() if v not in ("", None))
        head = f"{pad}- [{node['fact']}] {node['type']}（{fields}）"
    if node.get("see_above"):
        out.append(head + "（见上）")
        return
    if "rule" in node:
        where = f"{node['rule_file']}:{node['rule_line']}"
        extra = f"；覆盖了 {node['overrides']}" if node.get("overrides") else ""
        out.append(f"{head} ← 规则 {node['rule']}「{node['rule_title']}」（{where}{extra}）")
        if node.get("absent"):
            out.append(f"{pad}  - 且不存在：{'；'.join(node['absent'])}")
        for premise in node["premises"]:
            tree_lines(premise, depth + 1, out, ptq)
    else:
        src = node.get("source", {})
        where = src.get("file") or src.get("kind", "")
        if src.get("line"):
            where += f":{src['line']}"
        if src.get("key"):
            where += f" {src['key']}"
        if src.get("sha256"):
            where += f"（sha256 {src['sha256'][:12]}）"
        out.append(f"{head} ← 输入：{where}")


def _check_lines(check: dict[str, Any], depth: int, out: list[str]) -> None:
    pad = "  " * depth
    state = "已触发" if check["fired"] else "未触发"
    out.append(f"{pad}- 规则 {check['rule']}「{check['title']}」（{check['file']}:{check['line']}，{state}）")
    for cond in check["conditions"]:
        mark = "？" if cond.get("unknown") else ("✓" if cond["satisfied"] else "✗")
        text = cond.get("words") or (("不存在 " if cond["negated"] else "") + cond["condition"])
        detail = ""
        if cond.get("facts"):
            detail = ("，被 " if cond["negated"] and not cond["satisfied"] else "，由 ") + "、".join(cond["facts"])
        if cond.get("blocked_by"):
            detail += " 阻止，它来自 " + "；".join(cond["blocked_by"])
        if cond.get("written"):
            detail = f"：现在是 {'；'.join(cond['instead'])}" if cond.get("instead") else "：案例中没有写"
        elif cond.get("needs_input"):
            detail = f"，需要输入 {cond['needs_input']}"
        if cond.get("unknown"):
            detail = "，未评估（依赖前面未满足的条件）"
        out.append(f"{pad}  - {mark} {text}{detail}")
        for producer in cond.get("producers", []):
            _check_lines(producer, depth + 2, out)


def _case_key(condition: str) -> str:
    """The case key a written condition sets (`results.qat_bc` of `results.qat_bc: {...}`)."""
    return condition.split(":", 1)[0].strip()


def would_change_lines(items: list[dict[str, Any]]) -> list[str]:
    """What the case would need, the entries it holds that stand in the way first: an
    addition to a key the case already sets is a change of what it says there."""
    instead = {_case_key(i["condition"]): i["instead"] for i in items if i["kind"] == "add" and i.get("instead")}
    change, add, review = [], [], []
    for item in items:
        if item["kind"] == "add" and _case_key(item["condition"]) in instead:
            now = "；".join(item.get("instead") or instead[_case_key(item["condition"])])
            line = f"- 改为 {item['condition']}——现在是 {now}（规则 {item['rule']}）"
            if line not in change:
                change.append(line)
        elif item["kind"] == "add":
            add.append(f"- 补充 {item['condition']}（规则 {item['rule']}）")
        elif item.get("blocked_by"):
            review.append(f"- 复核 {'；'.join(item['blocked_by'])}——它阻止了规则 {item['rule']}")
        else:
            review.append(f"- 复核或去掉：{item['condition']}，当前由 {'、'.join(item['facts'])} 阻止（规则 {item['rule']}）")
    return change + add + review


def render_explain_markdown(diagnosis: Diagnosis, data: dict[str, Any]) -> str:
    out = [f"# j6doctor 证据链：{diagnosis.title}", "",
           f"当前结论：**{data['stage_label']}**（`{data['stage']}`）", ""]
    if "why_not" in data:
        w = data["why_not"]
        out += [f"## 为什么不是 {w['stage_label']}（`{w['stage']}`）", ""]
        if w["already"]:
            out += [f"当前结论就是 {w['stage_label']}。", ""]
        if not w["rules"]:
            out += ["没有任何规则能得出这个结论。", ""]
        if w["would_change"]:
            out += ["案例中挡住这个结论的内容在前，其余是能让某条规则成立的补充（不一定每条都需要）：", ""]
            out += would_change_lines(w["would_change"])
            out.append("")
    ptq = is_ptq(diagnosis)
    out += ["## 结论的推导", ""]
    for tree in data["conclusions"]:
        tree_lines(tree, 0, out, ptq)
    if data["missing"]:
        out += ["", "## 缺失信息的推导", ""]
        for tree in data["missing"]:
            tree_lines(tree, 0, out, ptq)
    if data["mistakes"]:
        out += ["", "## 常见误区的推导", ""]
        for tree in data["mistakes"]:
            tree_lines(tree, 0, out, ptq)
    if "why_not" in data and data["why_not"]["rules"]:
        w = data["why_not"]
        out += ["", f"## 逐条规则：为什么没有得出 {w['stage_label']}", ""]
        for check in w["rules"]:
            _check_lines(check, 0, out)
    out.append("")
    return inert_markdown("\n".join(out))  # the user's words hold no raw HTML for a Markdown viewer


def stage_choices() -> list[str]:
    return list(enum_values("stage"))
