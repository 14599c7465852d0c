"""Render a diagnosis as a Chinese report (templates/report.md.j2, docs/knowledge.md §11)."""

from __future__ import annotations

import json
import re
from typing import Any, Callable

from j6doctor.describe import describe as describe_fact
from j6doctor.diagnosis import Diagnosis, in_its_words, is_ptq
from j6doctor.engine import Fact, describe_engine
from j6doctor.facts import attr, enum_values, label
from j6doctor.next_step_script import script_stage
from j6doctor.templates import report_environment
from j6doctor.verdict_model import Verdict

def _checks(diagnosis: Diagnosis) -> list[dict[str, Any]]:
    """What the rule base checked: each rule file, in order, with the rules that fired."""
    fired = diagnosis.run.fired_rules()
    files: dict[str, dict[str, Any]] = {}
    for rule in diagnosis.rulebase.rules:
        entry = files.setdefault(rule.file, {"file": rule.file, "title": rule.file_title or rule.file,
                                             "fired": [], "rules": 0})
        entry["rules"] += 1
        if rule.id in fired:
            entry["fired"].append(rule.id)
    return list(files.values())


def report_context(diagnosis: Diagnosis) -> dict[str, Any]:
    """The report's facts in words, for both pages."""
    verdict = diagnosis.verdict
    result = diagnosis.run
    by_type: dict[str, list[Fact]] = {}
    for fact in result.facts:
        if fact.derivation is None:  # what the case and the files gave
            by_type.setdefault(fact.type, []).append(fact)
    ptq = is_ptq(diagnosis)

    def describe(fact: Fact) -> str:
        return describe_fact(fact, ptq)

    chain = verdict.chain_stage
    by_verdict = result.by_type("verdict")
    return {
        "case": diagnosis.title,
        "verdict": verdict,
        "stage": verdict.stage,
        "stage_label": verdict.stage_label,
        "undetermined": bool(attr("stage", verdict.stage, "open", False)),
        "key_findings": _key_findings(verdict),
        "script_stage": script_stage(diagnosis),
        "command_args": diagnosis.command_args,
        "evidence": [_brief(describe(result.fact(e.fact))) + f" — {result.fact(e.fact).source.describe()}"
                     for e in verdict.evidence],
        **_results(by_type.get("result", []), result, describe),
        **{key: [describe(f) for f in by_type.get(fact_type, [])] for key, fact_type in _DESCRIBED},
        "comparisons": [describe(f) for f in by_type.get("comparison", []) + by_type.get("control", [])],
        "flow": verdict.flow,
        # (a verdict's rule may say the chain's stage tells nothing more after a fix: verdict after_fix)
        "after_fix": chain if chain and chain.stage != verdict.stage
        and all(f["after_fix"] is not False for f in by_verdict) else None,
        "symptom": [_brief(f["text"]) for f in by_type.get("symptom", [])],
        "deployment_notes": [_brief(f["text"]) for f in by_type.get("deployment_notes", [])],
        "tried": [f["text"] for f in by_type.get("tried_fix", [])],
        "files": [_file_line(a) for a in verdict.artifacts],
        "checks": _checks(diagnosis),
        "similar": diagnosis.similar,
        "engine": describe_engine(diagnosis.rulebase.engine),
    }


# report key -> the input fact type listed under it, each fact in words
_DESCRIBED = (("failures", "failure"), ("input_params", "input_param"), ("suspects", "suspect"),
              ("platform", "platform"), ("versions", "version"), ("badcase", "badcase"))


def _results(results: list[Fact], run, describe: Callable[[Fact], str]) -> dict[str, list[str]]:
    """The case's results in words: normal, abnormal, and those the rules did not count
    (with why)."""
    unconfirmed = {(f["artifact"], f["status"]): f["why"] for f in run.by_type("unconfirmed")}
    out: dict[str, list[str]] = {"normal": [], "abnormal": [], "unconfirmed": []}
    for fact in results:
        key = (fact["artifact"], fact["status"])
        if key in unconfirmed:
            out["unconfirmed"].append(describe(fact) + (f"：{unconfirmed[key]}" if unconfirmed[key] else ""))
        elif fact["status"] in ("normal", "abnormal"):
            out[fact["status"]].append(describe(fact))
    return out


def _file_line(artifact) -> str:
    how = "按内容识别" if artifact.by == "content" else "按文件名识别"
    part = f"（只算前 {artifact.hashed // (1024 * 1024)} MiB）" if artifact.hashed >= 0 else ""
    unread = f"；未读取：{artifact.unread}" if artifact.unread else ""
    return (f"{artifact.path}（{label('file_kind', artifact.kind)}，{how}，"
            f"{artifact.size} 字节，sha256 {artifact.sha256[:12]}{part}{unread}）")


MAX_SHOWN_TEXT = 300  # characters of a free text shown in the report (a pasted post is long)


def _brief(text: str) -> str:
    """A free text on one line, cut to MAX_SHOWN_TEXT characters (the case holds all of it;
    what was read from it is listed with its spans)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_SHOWN_TEXT else flat[:MAX_SHOWN_TEXT] + "…（全文见案例）"


def _key_findings(verdict: Verdict) -> list[dict[str, Any]]:
    """The five 关键发现 entries of the report template, in order, filled by the rules."""
    committal = attr("stage", verdict.stage, "committal", True)
    out = []
    for slot in enum_values("key_slot"):  # a slot no rule filled says what its vocabulary entry says
        texts = verdict.key_texts(slot)
        if not texts:
            empty = attr("key_slot", slot, "empty", "暂无")
            texts = [empty if committal else attr("key_slot", slot, "empty_open", empty)]
        out.append({"label": label("key_slot", slot), "texts": texts})
    return out


def _appendix(diagnosis: Diagnosis) -> list[str]:
    """The derivation trees of the verdict and of each mistake, for the audit appendix."""
    from j6doctor.explain_report import explain_data, tree_lines

    data = explain_data(diagnosis)
    lines: list[str] = []
    for tree in data["conclusions"] + data["mistakes"]:
        tree_lines(tree, 0, lines, is_ptq(diagnosis))
    return lines


@in_its_words
def render_markdown(diagnosis: Diagnosis, detail: bool = False) -> str:
    """The Markdown report; `detail` (-v) adds the engine's bookkeeping: every rule file
    checked with its rule count, and the rule base's fingerprint."""
    context = report_context(diagnosis)
    context["detail"] = detail
    context["appendix"] = _appendix(diagnosis)  # the HTML page draws the same trees itself
    return report_environment().get_template("report.md.j2").render(**context)


def _rule_linker(fired: set[str]) -> Callable[[Any], Any]:
    """For the HTML page: a text (escaped) with each fired rule's id in it linked to the rule's
    entry in the fired-rules list (`#rule-<id>`); the id of a rule that did not fire has no
    entry on the page and stays text."""
    from markupsafe import Markup, escape

    if not fired:
        return escape
    pattern = re.compile(r"(?<![\w.-])(" + "|".join(re.escape(r) for r in sorted(fired, key=len, reverse=True))
                         + r")(?![\w-]|\.\w)")

    def link(text: Any) -> Any:
        text = str(text)
        parts, last = [], 0
        for found in pattern.finditer(text):
            parts += [escape(text[last:found.start()]),
                      Markup('<a class="rule" href="#rule-{0}">{0}</a>').format(found.group(1))]
            last = found.end()
        return Markup("").join([*parts, escape(text[last:])])

    return link


@in_its_words
def render_html(diagnosis: Diagnosis) -> str:
    """A self-contained HTML page (inline CSS and SVG, no script, no network); every value
    is escaped by Jinja's autoescape."""
    from j6doctor import __version__
    from j6doctor.charts import layout_compare, layout_sensitivity, series_of
    from j6doctor.explain_report import explain_data

    data = explain_data(diagnosis)
    context = report_context(diagnosis)
    # The rules judge which row of a table is the error origin (rules/54).
    origins = {f.fields["path"]: f.fields["row"] for f in diagnosis.run.by_type("compare_origin")}
    origins.update({f.fields["path"]: f.fields["index"] for f in diagnosis.run.by_type("node_origin")})
    trees = data["conclusions"] + data["mistakes"]
    context.update({
        "version": __version__,
        "trees": trees,
        "link_rules": _rule_linker(diagnosis.run.fired_rules()),
        "fired_rules": [{"id": r.id, "title": r.title, "file": r.file, "line": r.line}
                        for r in diagnosis.rulebase.rules if r.id in diagnosis.run.fired_rules()],
        "compare_charts": [layout_compare(series_of(r, origins)) for r in diagnosis.readings if r.kind in ("compare", "cosines")],
        "sensitivity_charts": [layout_sensitivity(series_of(r)) for r in diagnosis.readings if r.kind == "sensitivity"],
    })
    return report_environment().get_template("report.html.j2").render(**context)


@in_its_words
def render_json(diagnosis: Diagnosis) -> str:
    return json.dumps(diagnosis.verdict_json, ensure_ascii=False, indent=2, sort_keys=False) + "\n"
