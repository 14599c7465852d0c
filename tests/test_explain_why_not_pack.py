"""`explain --why-not` on a rule pack whose rule needs two facts of one type (issue 25, item
2): two positive conditions never match the same fact, in the engine and so in the
explanation. Before explain asked the engine, its own matcher showed both conditions of
such a rule met "由 f1" on a case with one result, while the engine did not fire the rule."""

from __future__ import annotations

import json
import textwrap

import pytest

from j6doctor.cli import main
from j6doctor.diagnosis import diagnose_data, load_rulebase
from j6doctor.engine.backends import ENGINES, available
from j6doctor.engine.explain import Explainer

ENGINES_HERE = [e for e in ENGINES if available(e)]

TWO_NORMAL = """\
seed: site
rules:
  - id: site.two_normal
    title: 两个产物评测正常
    when:
      - result: {status: normal}
        as: first
      - result: {status: normal}
    then:
      - chain_stage: {stage: convert, next_step: "两个正常结果，其一是 ${first.artifact}"}
    examples:
      - case: {results: {qat_pt: normal, qat_bc: normal}}
"""


def _explain(tmp_path, capsys, monkeypatch, engine: str, results: str, fmt: str) -> str:
    (tmp_path / "pack").mkdir(exist_ok=True)
    (tmp_path / "pack" / "two.yaml").write_text(TWO_NORMAL, encoding="utf-8")
    (tmp_path / "case.yaml").write_text(textwrap.dedent(results), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    main(["explain", "case.yaml", "--no-env", "--rules", "pack", "--engine", engine, "--why-not", "convert",
          "--format", fmt, "-q"])
    return capsys.readouterr().out


def _two_normal(data: dict) -> dict:
    found = []

    def walk(checks):
        for check in checks:
            if check["rule"] == "site.two_normal":
                found.append(check)
            for cond in check["conditions"]:
                walk(cond.get("producers", ()))

    walk(data["why_not"]["rules"])
    assert found, "the pack's rule is not among the rules that could conclude convert"
    return found[0]


ONE_RESULT = """\
    results:
      qat_bc: {status: normal, evidence: dataset_eval}
    """


@pytest.mark.parametrize("engine", ENGINES_HERE)
def test_one_fact_does_not_meet_two_conditions(tmp_path, capsys, monkeypatch, engine):
    data = json.loads(_explain(tmp_path, capsys, monkeypatch, engine, ONE_RESULT, "json"))
    check = _two_normal(data)
    assert check["fired"] is False
    first, second = check["conditions"]
    assert first["satisfied"] is True and first["facts"] == ["f1"]
    assert second["satisfied"] is False and "facts" not in second
    # what would change it: a second normal result, in the words of the case file
    assert any(item["kind"] == "add" and item["rule"] == "site.two_normal" and "status: normal" in item["condition"]
               for item in data["why_not"]["would_change"])


@pytest.mark.parametrize("engine", ENGINES_HERE)
def test_one_fact_does_not_meet_two_conditions_in_markdown(tmp_path, capsys, monkeypatch, engine):
    text = _explain(tmp_path, capsys, monkeypatch, engine, ONE_RESULT, "md")
    detail = text.split("规则 site.two_normal「两个产物评测正常」")[1].split("\n")
    assert detail[0].endswith("，未触发）")
    assert detail[1].startswith("      - ✓ ") and detail[1].endswith("，由 f1")
    assert detail[2].startswith("      - ✗ ") and "f1" not in detail[2]


@pytest.mark.parametrize("engine", ENGINES_HERE)
def test_two_facts_meet_the_two_conditions(tmp_path, engine):
    """With a second normal result the rule fires, each condition is met, and the facts each
    condition shows include the two the engine's firing matched."""
    (tmp_path / "pack").mkdir()
    (tmp_path / "pack" / "two.yaml").write_text(TWO_NORMAL, encoding="utf-8")
    rulebase = load_rulebase([tmp_path / "pack"], engine=engine)
    run = diagnose_data({"results": {"qat_pt": "normal", "qat_bc": "normal"}}, rulebase).run
    firings = [f.premises for f in run.firings if f.rule == "site.two_normal"]
    assert sorted(firings) == [("f1", "f2"), ("f2", "f1")]  # either result first: two matches
    check = Explainer.of(run, rulebase).check(rulebase.rule("site.two_normal"))
    assert check.fired
    first, second = check.conditions
    assert first.satisfied and second.satisfied
    assert first.facts == second.facts == ["f1", "f2"]
