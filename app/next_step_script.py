"""Render the concluded stage's next step as a ready-to-run Python script
(templates/next_step/): the right imports and call order of docs/knowledge.md §10, the user's
paths and march filled in where the case has them, clearly marked FILL IN placeholders
(functions that raise NotImplementedError) where it does not.

Safety: the case file's name, the work folders, artifact paths, march and checklist texts
come from the user, and the script is meant to be run. So a template may output a value
only as a Python literal: every `{{ ... }}` must end in `| pyrepr`, which turns the value
into a literal that evaluates back to it, and the environment's `finalize` refuses any other
output (including a literal that was concatenated, sliced or filtered afterwards). No value
is ever written into a docstring or a comment: the script names the case through the CASE /
STAGE constants (_case.py.j2), and its docstring is fixed text.

Platform families (the `series` the vocabulary gives each platform, carried by the platform
fact): the procedure scripts (hbdk4 convert / export, QuantAnalysis, ConsistencyStrategy) are
the J6 toolchain's and are written for J6 or an unknown platform only. The other Horizon
families (X3 / X5 / J5: hbdk 3.x, hb_mapper, QAT through convert_fx / compile) get the
deployment-side checks for compile / board (deployment_hbdk3.py.j2) and, for the other
stages, a file that says plainly that no script is generated and lists the report's next
steps (manual.py.j2); a non-Horizon platform gets that file for every stage."""

from __future__ import annotations

import ast
import math
from typing import Any

from j6doctor import __version__
from j6doctor.diagnosis import Diagnosis, in_its_words, is_ptq
from j6doctor.facts import attr, enum_values, label
from j6doctor.templates import script_environment
from j6doctor.verdict_model import ChecklistEntry

MANUAL_TEMPLATE = "manual.py.j2"  # no script for this family and stage: the steps, by hand


class PyLiteral(str):
    """Python source text of one literal, as made by `pyrepr`: the only output a next-step
    template may produce. (str operations on it return a plain str, which is refused.)"""


def pyrepr(value: Any) -> PyLiteral:
    """`value` as a Python literal that evaluates back to it: None, bool, int, a finite float
    or a str as they are; anything else (a date a YAML file made, an object) by its text.
    repr() of an exact str is a single-line literal whatever it contains: quotes, backslashes
    and newlines are escaped, non-printable characters (including lone surrogates from
    undecodable file names) become \\x / \\u escapes."""
    plain = type(value) in (type(None), bool, int, str) or (type(value) is float and math.isfinite(value))
    if not plain:
        value = str.__str__(str(value))  # an exact str: a subclass could override __repr__
    try:
        text = repr(value)
        same = ast.literal_eval(text) == value and "\n" not in text and "\r" not in text
    except (ValueError, SyntaxError):  # e.g. an int too long for repr
        same = False
    if not same:  # cannot happen for the types above; never emit text that is not a literal
        raise ValueError(f"next-step script: a {type(value).__name__} value has no single-line Python literal")
    return PyLiteral(text)


def _only_literals(value: Any) -> PyLiteral:
    """The environment's finalize: every `{{ ... }}` output must come from `| pyrepr`."""
    if not isinstance(value, PyLiteral):
        raise TypeError(f"next-step template outputs {value!r} without `| pyrepr`: "
                        "every value in a generated script must be a Python literal")
    return value


def _environment():
    return script_environment(_only_literals, {"pyrepr": pyrepr})


def toolchain(diagnosis: Diagnosis) -> str:
    """Which toolchain the case's platform uses: the `toolchain` of its platforms' series in
    the vocabulary (enum `toolchain`; its `default` one when no platform is known)."""
    toolchains = enum_values("toolchain")  # the least specific first (a closed enum)
    named = {attr("platform_series", p["series"], "toolchain", "other") for p in diagnosis.run.by_type("platform")}
    found = next((t for t in toolchains if t in named), None)
    return found or next(t for t in toolchains if attr("toolchain", t, "default"))


def _plan(diagnosis: Diagnosis) -> tuple[str, str] | None:
    """(chain stage, template) of the next step, or None when there is none to write. Each
    stage's scripts are named in the vocabulary (stage: next_step, next_step_hbdk3,
    next_step_ptq); a stage with none gets the manual steps."""
    stages = sorted({f["stage"] for f in diagnosis.run.by_type("chain_stage")})
    if len(stages) != 1 or diagnosis.run.by_type("first_failure"):
        return None
    stage = stages[0]
    chain = toolchain(diagnosis)
    template = attr("stage", stage, "next_step")
    ptq = is_ptq(diagnosis)
    if not attr("stage", stage, "committal", True):
        # no stage yet: where the diagnosis asks for artifacts the J6 QAT chain rebuilds from
        # qat.pt and the case's results give the metric to judge them by, a script evaluates
        # them and records the results (the stage's next_step)
        wanted = _to_evaluate(diagnosis) if _metric(diagnosis) else []
        rebuilt = all(attr("artifact", a, "rebuilt") for a in wanted)
        if wanted and rebuilt and template and chain == "hbdk4" and not ptq:
            return stage, template
        return None
    if chain == "hbdk3":
        return stage, attr("stage", stage, "next_step_hbdk3") or MANUAL_TEMPLATE
    if chain != "hbdk4" or not template:
        return stage, MANUAL_TEMPLATE
    if ptq and not attr("stage", stage, "next_step_ptq", False):
        return None
    return stage, template


def _to_evaluate(diagnosis: Diagnosis) -> list[str]:
    """The artifacts the diagnosis asks to evaluate next, in chain order."""
    order = list(enum_values("artifact"))
    return sorted({f["artifact"] for f in diagnosis.run.by_type("evaluate_next")}, key=order.index)


def _metric(diagnosis: Diagnosis) -> str | None:
    """The metric the case's results are given in (the one most of them use)."""
    metrics = [f["metric"] for f in diagnosis.run.by_type("result") if f["metric"]]
    return max(sorted(set(metrics)), key=metrics.count) if metrics else None


@in_its_words
def script_stage(diagnosis: Diagnosis) -> str | None:
    """The chain stage whose procedure the script runs (a user-side verdict keeps the chain's).
    The scripts write the J6 QAT (horizon_plugin_pytorch + hbdk4) procedure; a PTQ case gets
    the deployment one only, an X3 / X5 / J5 case the deployment-side checks only, a
    non-Horizon platform none, and a failure to build, load or run gets none (it is not an
    accuracy comparison). None also when `j6doctor next-step` writes only the manual steps."""
    plan = _plan(diagnosis)
    return plan[0] if plan is not None and plan[1] != MANUAL_TEMPLATE else None


@in_its_words
def render_next_step(diagnosis: Diagnosis) -> str:
    """The script's text. Where there is no procedure to script (暂不能判断, 基线确认, a
    failure, a platform family whose procedure j6doctor does not script) it is a file that
    says so and lists the report's next steps to carry out by hand. STAGE is the verdict's
    stage; PROCEDURE the chain stage whose procedure the file carries out (a user-side
    verdict keeps the chain's, to run after the fix)."""
    plan = _plan(diagnosis)
    stage, template = plan if plan is not None else (None, MANUAL_TEMPLATE)
    facts = diagnosis.run
    paths: dict[str, str] = {}
    for fact in facts.by_type("artifact_file"):
        paths.setdefault(fact["kind"], fact["path"])
    platforms = facts.by_type("platform")
    # the first march that names a variant (a generic "J6" has none; a file may name it)
    march = next((p["march"] for p in platforms if p["march"]), None)
    families = {p["family"] for p in platforms}
    checklist = diagnosis.verdict.checklist or [
        ChecklistEntry(item, label("check_item", item), attr("check_item", item, "look_at", ""),
                       "unchecked", label("check_status", "unchecked"), "", None)
        for item in enum_values("check_item")
    ]
    badcase = next((f["path"] for f in facts.by_type("badcase") if f["reproducible"] and f["path"]), None)
    context = {
        "case": diagnosis.title,
        "stage": diagnosis.verdict.stage,
        "stage_label": diagnosis.verdict.stage_label,
        "procedure_stage": stage,
        # the verdict is not the procedure's stage (user_side over a chain stage): what to fix first
        "fix_first": [c.reason for c in diagnosis.verdict.conclusion if c.reason]
        if stage is not None and stage != diagnosis.verdict.stage else [],
        "badcase_path": badcase,
        "version": __version__,
        "toolchain": toolchain(diagnosis),
        "family": platforms[0]["family"] if platforms else None,
        "paths": {kind: paths.get(kind) for kind in enum_values("file_kind")},
        "march": march,
        "march_known": march is not None,
        "split_run": any(f["differ"] for f in facts.by_type("input_formats")),
        "consistency_strategy": any(attr("platform", f, "consistency_strategy", False) for f in families),
        "checklist": checklist,
        "manual_steps": [step.text for step in diagnosis.verdict.next_steps],
        # what the diagnosis still needs (the report's 需要用户补充), for `j6doctor ask`
        "missing": [(m.id, m.label, m.why) for m in diagnosis.verdict.missing_detail],
        "case_arg": diagnosis.case.display if diagnosis.case is not None and not diagnosis.case.display.startswith("<")
        else "",  # (standard input: no file for ask to write)
        # the evaluation script: what to evaluate, how each is rebuilt, the case to record into
        "evaluate": [(a, label("artifact", a), attr("artifact", a, "rebuilt")) for a in _to_evaluate(diagnosis)],
        "metric": _metric(diagnosis),
        "case_path": str(diagnosis.case.path) if diagnosis.case is not None and diagnosis.case.path else "",
    }
    return _environment().get_template(template).render(**context)
