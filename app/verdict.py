"""Assemble the verdict (verdict_model.Verdict; its JSON is the public one, docs/CONTRACT.md)
from the facts a rule run produced. Nothing here decides a stage: it reads the rules'
conclusions, orders them, and keeps the links to the facts they came from."""

from __future__ import annotations

from typing import Any

from j6doctor import __version__
from j6doctor.engine import Fact, RuleBase, RunResult
from j6doctor.facts import attr, enum_values, label, vocabulary, written_form, written_value
from j6doctor.verdict_model import (ArtifactEntry, Candidate, ChecklistEntry, Conclusion, EvaluateNext,
                                    EvidenceEntry, Finding, FlowRef, KeyFinding, MissingItem, Mistake, NextStep,
                                    Retained, RulebaseInfo, SCHEMA_VERSION, StageRef, TextFact, ToolInfo, UnreadText,
                                    Verdict)

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


def build_verdict(result: RunResult, rulebase: RuleBase) -> Verdict:
    stage_order = list(enum_values("stage"))
    stage, chosen, warnings = _stage(result, stage_order)
    missing, missing_detail = _missing(result)
    chain = sorted({f["stage"] for f in result.by_type("chain_stage")}, key=stage_order.index)
    flows = sorted(result.by_type("flow"), key=lambda f: _num(f.id))  # one value (exclusive), maybe several reasons
    return Verdict(
        schema_version=SCHEMA_VERSION,
        tool=ToolInfo("j6doctor", __version__),
        stage=stage,
        stage_label=label("stage", stage),
        missing=missing,
        missing_detail=missing_detail,
        evaluate_next=[EvaluateNext(f["artifact"], label("artifact", f["artifact"]), f["reason"], f.id)
                       for f in sorted(result.by_type("evaluate_next"), key=lambda f: _num(f.id))],
        evidence=[EvidenceEntry(f.id, f.type, dict(f.fields), f.source.as_dict() if f.source else {})
                  for f in supporting_inputs(result, chosen)],
        conclusion=[Conclusion(f.id, f.derivation.rule, f["reason"]) for f in sorted(chosen, key=lambda f: _num(f.id))],
        chain_stage=StageRef(chain[0], label("stage", chain[0])) if len(chain) == 1 else None,
        candidates=_candidates(result),
        flow=(FlowRef(flows[0]["flow"], label("flow", flows[0]["flow"]), flows[0]["how"], flows[0].id)
              if len({f["flow"] for f in flows}) == 1 else None),
        text_facts=_text_facts(result),
        unread=_unread(result),
        findings=[Finding(f["topic"], f["text"], f.derivation.rule, f.id)
                  for f in sorted(result.by_type("finding"), key=lambda f: _num(f.id))],
        key_findings=_key_findings(result),
        warnings=warnings,
        checklist=_checklist(result) if result.by_type("show_checklist") else [],
        mistakes=_mistakes(result),
        next_steps=_next_steps(result),
        retain=_retained(result),
        artifacts=[ArtifactEntry(f["kind"], f["path"], f["size"], f["sha256"], f["by"], f["hashed"], f.id,
                                 f.fields.get("unread", ""))  # a case stored before the field existed has none
                   for f in result.by_type("artifact_file")],
        trace=[trace_entry(f) for f in result.facts],
        rulebase=RulebaseInfo(rulebase.compiled.fingerprint, len(rulebase.rules), rulebase.engine),
    )


def _stage(result: RunResult, stage_order: list[str]) -> tuple[str, list[Fact], list[str]]:
    """The verdict stage, the verdict facts that give it, and the run's warnings (with one
    for no stage or conflicting stages, and for a truncated run)."""
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
    return stage, chosen, warnings


def _missing(result: RunResult) -> tuple[list[str], list[MissingItem]]:
    """The info-gate items still missing, in the gate's order, each with its details."""
    gate_order = list(enum_values("gate_item"))
    detail: dict[str, MissingItem] = {}
    for fact in sorted(result.by_type("missing"), key=lambda f: (gate_order.index(f["item"]), _num(f.id))):
        item = fact["item"]
        if item not in detail:
            detail[item] = MissingItem(id=item, label=label("gate_item", item), why=attr("gate_item", item, "why", ""),
                                       details=[], ask=[], facts=[])
        entry = detail[item]
        if fact["detail"] and fact["detail"] not in entry.details:
            entry.details.append(fact["detail"])
        if fact["ask"] and fact["ask"] not in entry.ask:
            entry.ask.append(fact["ask"])
        entry.facts.append(fact.id)
    return list(detail), list(detail.values())


def _mistakes(result: RunResult) -> list[Mistake]:
    out: dict[str, Mistake] = {}
    for fact in sorted(result.by_type("mistake"), key=lambda f: (f["code"], _num(f.id))):
        code = fact["code"]
        if code not in out:
            out[code] = Mistake(id=code, title=label("mistake", code), instead=attr("mistake", code, "instead", ""),
                                details=[], facts=[])
        entry = out[code]
        if fact["detail"] and fact["detail"] not in entry.details:
            entry.details.append(fact["detail"])
        entry.facts.append(fact.id)
    return list(out.values())


def _next_steps(result: RunResult) -> list[NextStep]:
    """In order; a text said by two rules once (the first)."""
    out: list[NextStep] = []
    for fact in sorted(result.by_type("next_step"), key=lambda f: (f["order"], _num(f.id))):
        if all(s.text != fact["text"] for s in out):
            out.append(NextStep(order=fact["order"], text=fact["text"], rule=fact.derivation.rule, fact=fact.id))
    return out


def _retained(result: RunResult) -> list[Retained]:
    out: list[Retained] = []
    for fact in sorted(result.by_type("retain"), key=lambda f: (f["order"], _num(f.id))):
        if all(r.item != fact["item"] for r in out):
            out.append(Retained(item=fact["item"], rule=fact.derivation.rule, fact=fact.id))
    return out


def _key_findings(result: RunResult) -> list[KeyFinding]:
    slot_order = list(enum_values("key_slot"))
    return [KeyFinding(f["slot"], f["text"], f.derivation.rule, f.id)
            for f in sorted(result.by_type("key_finding"),
                            key=lambda f: (slot_order.index(f["slot"]), f["order"], _num(f.id)))]


def _checklist(result: RunResult) -> list[ChecklistEntry]:
    """One entry per deployment checklist item: the status the case gives, or a mismatch
    the user stated in their own words; unchecked otherwise."""
    given = {f["item"]: f for f in result.by_type("checklist_item")}
    stated = {}
    for fact in sorted(result.by_type("user_mismatch"), key=lambda f: _num(f.id)):
        if fact["via"] != "checklist":
            stated.setdefault(fact["item"], fact)
    out = []
    for item in enum_values("check_item"):
        fact = given.get(item)
        status, note, source = (fact["status"], fact["note"], fact) if fact else ("unchecked", "", None)
        if item in stated and status != "mismatch":
            status, note, source = "mismatch", stated[item]["note"], stated[item]
        out.append(ChecklistEntry(item, label("check_item", item), attr("check_item", item, "look_at", ""),
                                  status, label("check_status", status), note, source.id if source else None))
    return out


def _candidates(result: RunResult) -> list[Candidate]:
    """The stages still possible, each once (its first check by order), in order."""
    out: dict[str, Candidate] = {}
    for fact in sorted(result.by_type("candidate"), key=lambda f: (f["order"], _num(f.id))):
        if fact["stage"] not in out:
            out[fact["stage"]] = Candidate(fact["stage"], label("stage", fact["stage"]), fact["check"], fact["why"],
                                           fact.derivation.rule, fact.id)
    return list(out.values())


def _unread(result: RunResult) -> list[UnreadText]:
    """The sentences of the user's words that say how a result was but that no text rule
    could place (text_unread): listed, never guessed into a result."""
    out = []
    for fact in sorted(result.by_type("text_unread"), key=lambda f: _num(f.id)):
        premise = result.fact(fact.derivation.premises[0])
        line = premise.source.as_dict().get("line") if premise.source else None
        out.append(UnreadText(fact["terms"], fact["quote"], fact["field"], line, fact["start"], fact["end"],
                              fact.derivation.rule, fact.id))
    return out


def _text_facts(result: RunResult) -> list[TextFact]:
    """What was read from the user's own words: quote, case key and span, and the rule. A
    mismatch topic (text_fact) is shown by its topic; anything else read from the words (a
    result, a control, a failure, a setting) as the case entry it stands for."""
    out = []
    read = [f for f in result.facts if f.derivation is not None and f.stratum == -1 and "quote" in f.fields
            and f.type != "text_unread"]
    for fact in sorted(read, key=lambda f: _num(f.id)):
        premise = result.fact(fact.derivation.premises[0])
        source = premise.source.as_dict() if premise.source else {}
        if fact.type == "text_fact":
            topic, topic_label = fact["topic"], label("text_topic", fact["topic"])
            kind, item, value = fact["kind"], fact["item"], fact["value"]
        else:
            words = {k: written_value(fact.type, k, v) for k, v in fact.fields.items()}
            topic, kind, item, value = fact.type, "stated", "none", ""
            topic_label = written_form(fact.type, words) or vocabulary().types[fact.type].meaning
        out.append(TextFact(
            topic=topic, topic_label=topic_label, kind=kind, kind_label=label("text_kind", kind),
            item=item, value=value, quote=fact["quote"],
            key=fact["field"], line=source.get("line"), start=fact["start"], end=fact["end"],
            rule=fact.derivation.rule, fact=fact.id,
        ))
    return out
