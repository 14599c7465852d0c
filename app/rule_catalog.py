"""`j6doctor rules list` and `rules show ID`: the rules of a rule base as their author reads
them — id, title, seed section, file and line; for one rule its conditions in words, its
conclusions, its examples, and where it sits in the chain (which rules feed the facts it
reads, which rules read the facts it concludes)."""

from __future__ import annotations

import difflib
from typing import Any

from j6doctor.engine import RuleBase
from j6doctor.engine.rule_model import Rule


def listing(rulebase: RuleBase) -> list[dict[str, Any]]:
    """One entry per rule, in rule-base order."""
    return [{"id": r.id, "title": r.title, "seed": r.seed, "file": r.file, "line": r.line,
             "kind": "text" if r.text is not None else "fact", "examples": len(r.examples),
             "overrides": r.overrides} for r in rulebase.with_examples().rules]


def find(rulebase: RuleBase, rule_id: str) -> tuple[Rule | None, list[str]]:
    """The rule with this id, or None and the closest ids."""
    ids = [r.id for r in rulebase.rules]
    for rule in rulebase.rules:
        if rule.id == rule_id:
            return rule, []
    return None, difflib.get_close_matches(rule_id, ids, n=3, cutoff=0.5)


def _value(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_value(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)  # a reference to another condition's fact: alias.field


def detail(rulebase: RuleBase, rule: Rule) -> dict[str, Any]:
    """Everything `rules show` prints about one rule."""
    rulebase.with_examples()
    reads = rule.consumes() | rule.negates()
    made = rule.produces()
    fed_by = sorted(r.id for r in rulebase.rules if r.id != rule.id and r.produces() & reads)
    read_by = sorted(r.id for r in rulebase.rules
                     if r.id != rule.id and (r.consumes() | r.negates()) & made)
    out: dict[str, Any] = {
        "id": rule.id, "title": rule.title, "seed": rule.seed, "file": rule.file, "line": rule.line,
        "file_title": rule.file_title, "knowledge": rule.knowledge, "priority": rule.priority,
        "overrides": rule.overrides, "table": rule.table or None,
        "when": [{"condition": c.in_words(), "alias": c.alias, "line": c.line}
                 for c in rule.when],
        "then": [{"type": c.type, "fields": {k: _value(v) for k, v in c.fields.items()}, "line": c.line}
                 for c in rule.then],
        "examples": [{"name": e.name, "fires": e.fires, "line": e.line, "case": e.case, "expect": e.expect}
                     for e in rule.examples],
        "fed_by": fed_by, "read_by": read_by,
    }
    if rule.text is not None:
        out["text"] = {"reads": [f"{t}.{f}" for t, f in rule.text.reads], "match": list(rule.text.match),
                       "unless": list(rule.text.unless)}
    return out


def render_listing(entries: list[dict[str, Any]]) -> str:
    width = max((len(e["id"]) for e in entries), default=2)
    lines = [f"{e['id']:<{width}}  {e['title']}  [{e['seed']}]  {e['file']}:{e['line']}"
             + ("  (text rule)" if e["kind"] == "text" else "")
             + (f"  (replaces the rule of {e['overrides']})" if e["overrides"] else "")
             for e in entries]
    lines.append(f"{len(entries)} rule(s)")
    return "\n".join(lines)


def _detail_header(d: dict[str, Any]) -> list[str]:
    """Which rule, where it is written, what it replaces, what it reads (a text rule)."""
    where = f"{d['file']}:{d['line']}" if d["line"] else d["file"]
    lines = [f"{d['id']}: {d['title']}", f"  seed section: {d['seed']}", f"  file: {where}"
             + (f"  ({d['file_title']})" if d["file_title"] else "")]
    if d["table"]:
        lines.append(f"  a row of the decision table {d['table']} (its cells are the conditions below)")
    if d["overrides"]:
        lines.append(f"  replaces the rule of the same id in {d['overrides']}")
    if d["knowledge"]:
        lines.append(f"  knowledge: {d['knowledge']}")
    if "text" in d:
        lines.append(f"  reads the text of: {', '.join(d['text']['reads'])}")
        lines += [f"    matches: {p}" for p in d["text"]["match"]]
        lines += [f"    unless: {p}" for p in d["text"]["unless"]]
    return lines


def _line_note(line: int | None) -> str:
    return f"  (line {line})" if line else ""


def render_detail(d: dict[str, Any]) -> str:
    lines = _detail_header(d)
    if d["when"]:
        lines.append("  when:")
        lines += [f"    {c['condition']}" + (f"  as {c['alias']}" if c["alias"] else "") + _line_note(c["line"])
                  for c in d["when"]]
    lines.append("  then:")
    for c in d["then"]:
        fields = ", ".join(f"{k}={v}" for k, v in c["fields"].items())
        lines.append(f"    {c['type']}{{{fields}}}" + _line_note(c["line"]))
    lines.append(f"  examples: {len(d['examples'])}")
    lines += [f"    {'fires' if e['fires'] else 'blocked'}: {e['name'] or '(unnamed)'}" + _line_note(e["line"])
              for e in d["examples"]]
    lines.append(f"  fed by: {', '.join(d['fed_by']) or '(input facts only)'}")
    lines.append(f"  read by: {', '.join(d['read_by']) or '(no rule: its facts go to the report)'}")
    return "\n".join(lines)
