"""Assemble the public JSON verdict (shared/contracts/CASE_AND_OUTPUT.md) from the facts
a rule run produced. Nothing here decides a stage: it reads the rules' conclusions,
orders them, and keeps the links to the facts they came from."""

from __future__ import annotations

from typing import Any

from .engine import Fact, RuleBase, RunResult
from .facts import attr, enum_values, label

UNDETERMINED = "undetermined"


def _num(fact_id: str) -> tuple[int, int]:
    return (0 if fact_id.startswith("f") else 1, int(fact_id[1:]))


def supporting_inputs(result: RunResult, roots: list[Fact]) -> list[Fact]:
    """Input facts reachable from `roots` through derivations."""
    seen: set[str] = set()
    inputs: list[Fact] = []
    stack = [f.id for f in roots]
    while stack:
        fact = result.fact(stack.pop())
        if fact.id in seen:
            continue
        seen.add(fact.id)
        if fact.derivation is None:
            inputs.append(fact)
        else:
            stack.extend(fact.derivation.premises)
    return sorted(inputs, key=lambda f: _num(f.id))


def trace_entry(fact: Fact) -> dict[str, Any]:
    entry: dict[str, Any] = {"id": fact.id, "type": fact.type, "fields": dict(fact.fields)}
    if fact.source is not None:
        entry["source"] = fact.source.as_dict()
    if fact.derivation is not None:
        entry.update(fact.derivation.as_dict())
    return entry


def build_verdict(result: RunResult, rulebase: RuleBase) -> dict[str, Any]:
    stage_order = list(enum_values("stage"))
    verdicts = result.by_type("verdict")
    stages = sorted({f["stage"] for f in verdicts}, key=stage_order.index)
    warnings = [f["text"] for f in result.by_type("warning")]
    if len(stages) == 1:
        stage = stages[0]
    elif not stages:
        stage = UNDETERMINED
        warnings.append("规则库没有给出任何结论阶段（规则库不完整），按暂不能判断处理")
    else:
        stage = UNDETERMINED
        rules = sorted({f.derivation.rule for f in verdicts if f.derivation})
        warnings.append(
            f"规则给出相互冲突的阶段（{'、'.join(stages)}；规则 {', '.join(rules)}），按暂不能判断处理"
        )
    if result.truncated:
        warnings.append("推理超出预算被截断，结论可能不完整")
    chosen = [f for f in verdicts if f["stage"] == stage] if stage in stages else []

    gate_order = list(enum_values("gate_item"))
    missing_facts = sorted(result.by_type("missing"), key=lambda f: (gate_order.index(f["item"]), _num(f.id)))
    missing: list[str] = []
    missing_detail: list[dict[str, Any]] = []
    for fact in missing_facts:
        if fact["item"] not in missing:
            missing.append(fact["item"])
            missing_detail.append({
                "id": fact["item"], "label": label("gate_item", fact["item"]),
                "why": attr("gate_item", fact["item"], "why", ""), "details": [], "facts": [],
            })
        entry = missing_detail[missing.index(fact["item"])]
        if fact["detail"] and fact["detail"] not in entry["details"]:
            entry["details"].append(fact["detail"])
        entry["facts"].append(fact.id)

    checklist = []
    if result.by_type("show_checklist"):
        given = {f["item"]: f for f in result.by_type("checklist_item")}
        for item in enum_values("check_item"):
            fact = given.get(item)
            checklist.append({
                "id": item,
                "label": label("check_item", item),
                "look_at": attr("check_item", item, "look_at", ""),
                "status": fact["status"] if fact else "unchecked",
                "note": fact["note"] if fact else "",
                "fact": fact.id if fact else None,
            })

    mistakes: dict[str, dict[str, Any]] = {}
    for fact in sorted(result.by_type("mistake"), key=lambda f: (f["code"], _num(f.id))):
        entry = mistakes.setdefault(fact["code"], {
            "id": fact["code"], "title": label("mistake", fact["code"]),
            "instead": attr("mistake", fact["code"], "instead", ""), "details": [], "facts": [],
        })
        if fact["detail"] and fact["detail"] not in entry["details"]:
            entry["details"].append(fact["detail"])
        entry["facts"].append(fact.id)

    next_steps: list[dict[str, Any]] = []
    for fact in sorted(result.by_type("next_step"), key=lambda f: (f["order"], _num(f.id))):
        if all(s["text"] != fact["text"] for s in next_steps):
            next_steps.append({"order": fact["order"], "text": fact["text"],
                               "rule": fact.derivation.rule, "fact": fact.id})

    retain: list[dict[str, Any]] = []
    for fact in sorted(result.by_type("retain"), key=lambda f: (f["order"], _num(f.id))):
        if all(r["item"] != fact["item"] for r in retain):
            retain.append({"item": fact["item"], "rule": fact.derivation.rule, "fact": fact.id})

    evaluate_next = [
        {"artifact": f["artifact"], "label": label("artifact", f["artifact"]), "reason": f["reason"], "fact": f.id}
        for f in sorted(result.by_type("evaluate_next"), key=lambda f: _num(f.id))
    ]

    findings = [
        {"topic": f["topic"], "text": f["text"], "rule": f.derivation.rule, "fact": f.id}
        for f in sorted(result.by_type("finding"), key=lambda f: _num(f.id))
    ]

    slot_order = list(enum_values("key_slot"))
    key_findings = [
        {"slot": f["slot"], "text": f["text"], "rule": f.derivation.rule, "fact": f.id}
        for f in sorted(result.by_type("key_finding"),
                        key=lambda f: (slot_order.index(f["slot"]), f["order"], _num(f.id)))
    ]
    artifacts = [
        {"kind": f["kind"], "path": f["path"], "size": f["size"], "sha256": f["sha256"], "fact": f.id}
        for f in result.by_type("artifact_file")
    ]

    evidence = [
        {"fact": f.id, "type": f.type, "fields": dict(f.fields),
         "source": f.source.as_dict() if f.source else {}}
        for f in supporting_inputs(result, chosen)
    ]

    return {
        "stage": stage,
        "stage_label": label("stage", stage),
        "missing": missing,
        "missing_detail": missing_detail,
        "evaluate_next": evaluate_next,
        "evidence": evidence,
        "conclusion": [
            {"fact": f.id, "rule": f.derivation.rule, "reason": f["reason"]}
            for f in sorted(chosen, key=lambda f: _num(f.id))
        ],
        "findings": findings,
        "key_findings": key_findings,
        "warnings": warnings,
        "checklist": checklist,
        "mistakes": list(mistakes.values()),
        "next_steps": next_steps,
        "retain": retain,
        "artifacts": artifacts,
        "trace": [trace_entry(f) for f in result.facts],
        "rulebase": {"fingerprint": rulebase.compiled.fingerprint, "rules": len(rulebase.rules)},
    }
