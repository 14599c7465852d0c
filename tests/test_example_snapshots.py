"""Every bundled example's report, kept as the expected text beside the case
(examples/cases/<case file>.expected.json and .expected.md), so that a rule or template change shows its effect on every example in review.

A report is produced exactly as README's command does (`j6doctor diagnose
examples/cases/<case> --format json|md --no-env`, from the repository folder) and compared
byte for byte, after normalisations of bookkeeping only: the engine that ran (durable-rules
or CLIPS, whichever this Python has), the rule-base fingerprint (a hash of every rule file,
which any edit changes) and rule count, and the line of each rule in its file (a rule added
above it moves it), so that a new rule changes only the reports it takes part in. A
difference fails with a diff;

    python -m pytest tests/test_example_snapshots.py --update

rewrites the expected files (and removes those of deleted examples) for the change to be
reviewed and committed with it."""

from __future__ import annotations

import difflib
import json
import re

import pytest

from conftest import EXAMPLE_CASES, EXAMPLES, REPO
from j6doctor.cli import main

CASES = [p.name for p in EXAMPLE_CASES]
FORMATS = ("json", "md")
UPDATE_HINT = "python -m pytest tests/test_example_snapshots.py --update"
_ENGINE_LINE = re.compile(r"^(规则引擎：).+$", re.M)
_RULE_LINE = re.compile(r"(rules/[\w./-]+\.yaml):\d+")  # a rule's place, as the report writes it


def normalise(text: str, fmt: str) -> str:
    if fmt == "json":
        verdict = json.loads(text)
        verdict["rulebase"]["fingerprint"] = "<fingerprint>"
        verdict["rulebase"]["engine"] = "<engine>"
        verdict["rulebase"]["rules"] = "<rules>"  # bookkeeping: a new rule elsewhere changes it
        verdict["tool"]["version"] = "<version>"  # a release changes it, not a rule
        for entry in verdict.get("trace", ()):
            if "rule_line" in entry:
                entry["rule_line"] = "<line>"
        return _RULE_LINE.sub(r"\1:<line>", json.dumps(verdict, ensure_ascii=False, indent=2)) + "\n"
    normalised, count = _ENGINE_LINE.subn(r"\1<engine>", text)
    assert count == 1, "the report's engine line changed its wording: update _ENGINE_LINE"
    return _RULE_LINE.sub(r"\1:<line>", normalised)


def report(case: str, fmt: str, capsys, monkeypatch) -> str:
    monkeypatch.chdir(REPO)
    capsys.readouterr()
    main(["diagnose", f"examples/cases/{case}", "--format", fmt, "--no-env"])
    return normalise(capsys.readouterr().out, fmt)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("case", CASES)
def test_example_report_is_as_expected(case, fmt, capsys, monkeypatch, request):
    got = report(case, fmt, capsys, monkeypatch)
    expected_file = EXAMPLES / f"{case}.expected.{fmt}"
    if request.config.getoption("snapshot_update"):
        expected_file.write_text(got, encoding="utf-8", newline="\n")
        return
    if not expected_file.is_file():
        pytest.fail(f"no expected report {expected_file.relative_to(REPO)}; create it with: {UPDATE_HINT}")
    expected = expected_file.read_text(encoding="utf-8")
    if got != expected:
        diff = difflib.unified_diff(expected.splitlines(), got.splitlines(), f"{case}.expected.{fmt}",
                                    f"now/{case}.{fmt}", lineterm="", n=2)
        shown = "\n".join(list(diff)[:80])
        pytest.fail(f"the {fmt} report of examples/cases/{case} changed:\n{shown}\n"
                    f"if the change is intended: {UPDATE_HINT}", pytrace=False)


def test_no_expected_report_without_its_example(request):
    wanted = {f"{case}.expected.{fmt}" for case in CASES for fmt in FORMATS}
    stale = sorted(p.name for p in EXAMPLES.iterdir() if ".expected." in p.name and p.name not in wanted)
    if request.config.getoption("snapshot_update"):
        for name in stale:
            (EXAMPLES / name).unlink()
        return
    assert not stale, f"expected reports of examples that no longer exist: {stale}; remove them with: {UPDATE_HINT}"


def test_the_normalisation_only_touches_engine_fingerprint_rule_count_version_and_rule_lines():
    md = ("# t\n规则引擎：durable-rules 2.0.28\n正文 durable-rules\n"
          "- [d1] x ← 规则 a.b「t」（rules/40_verdict.yaml:58） ← 输入：case.yaml:12 results.board\n")
    assert normalise(md, "md") == ("# t\n规则引擎：<engine>\n正文 durable-rules\n"
                                   "- [d1] x ← 规则 a.b「t」（rules/40_verdict.yaml:<line>） ← 输入：case.yaml:12 "
                                   "results.board\n")
    verdict = {"tool": {"name": "j6doctor", "version": "9.9"}, "stage": "convert",
               "rulebase": {"fingerprint": "abc", "rules": 3, "engine": "clips"},
               "trace": [{"id": "f1", "source": {"file": "case.yaml", "line": 3}},
                         {"id": "d1", "rule": "a.b", "rule_file": "rules/40_verdict.yaml", "rule_line": 58}]}
    assert json.loads(normalise(json.dumps(verdict), "json")) == {
        "tool": {"name": "j6doctor", "version": "<version>"}, "stage": "convert",
        "rulebase": {"fingerprint": "<fingerprint>", "rules": "<rules>", "engine": "<engine>"},
        "trace": [{"id": "f1", "source": {"file": "case.yaml", "line": 3}},
                  {"id": "d1", "rule": "a.b", "rule_file": "rules/40_verdict.yaml", "rule_line": "<line>"}]}
