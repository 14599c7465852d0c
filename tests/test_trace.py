"""The evidence chain: every conclusion links back to input facts with their sources."""

from __future__ import annotations

import pytest

from conftest import EXAMPLES, EXAMPLE_CASES
from j6doctor.diagnosis import diagnose_file

CASES = [p for p in EXAMPLE_CASES if p.suffix == ".yaml"]


@pytest.mark.parametrize("path", CASES, ids=[p.name for p in CASES])
def test_trace_is_closed_and_sourced(path, rulebase):
    d = diagnose_file(path, rulebase)
    trace = {t["id"]: t for t in d.verdict_json["trace"]}
    rule_ids = {r.id for r in rulebase.rules}
    for entry in trace.values():
        if "rule" in entry:
            assert entry["rule"] in rule_ids
            assert entry["rule_file"].startswith("rules/") and entry["rule_line"] > 0
            for premise in entry["premises"]:
                assert premise in trace, f"{entry['id']} cites unknown fact {premise}"
        else:
            source = entry["source"]
            if source["kind"] == "file":  # a file the case lists (qa_convert/badcase.txt), by its content
                assert (path.parent / source["file"]).is_file() and len(source.get("sha256", "0" * 64)) == 64
                continue
            assert source["kind"] == "case" and source["file"] == path.name
            assert source["key"] and source["line"] > 0


@pytest.mark.parametrize("path", CASES, ids=[p.name for p in CASES])
def test_every_conclusion_reaches_input_facts(path, rulebase):
    d = diagnose_file(path, rulebase)
    trace = {t["id"]: t for t in d.verdict_json["trace"]}

    def leaves(fact_id, seen=None):
        seen = seen if seen is not None else set()
        entry = trace[fact_id]
        if "rule" not in entry:
            return {fact_id}
        found = set()
        for premise in entry["premises"]:
            if premise not in seen:
                seen.add(premise)
                found |= leaves(premise, seen)
        return found

    for conclusion in d.verdict_json["conclusion"]:
        entry = trace[conclusion["fact"]]
        assert entry["type"] == "verdict" and entry["fields"]["stage"] == d.verdict_json["stage"]
        inputs = leaves(conclusion["fact"])
        if d.verdict_json["stage"] not in ("undetermined",):
            assert inputs, "a committed stage must rest on input facts"
        assert inputs == {e["fact"] for e in d.verdict_json["evidence"]} or len(d.verdict_json["conclusion"]) > 1
    for key in ("findings", "next_steps", "retain"):
        for item in d.verdict_json[key]:
            assert trace[item["fact"]]["rule"] == item["rule"]


def test_evidence_lists_the_deciding_facts_with_lines(rulebase):
    d = diagnose_file(EXAMPLES / "convert_j6m.yaml", rulebase)
    evidence = {(e["fields"]["artifact"], e["source"]["line"]) for e in d.verdict_json["evidence"]}
    assert evidence == {("qat_bc", 11), ("quantized_bc", 12)}
    chain = [t for t in d.verdict_json["trace"] if t.get("rule") == "map.convert"]
    assert chain and "chain_open" in {trace_type(d, p) for p in chain[0]["premises"]}


def trace_type(d, fact_id):
    return next(t["type"] for t in d.verdict_json["trace"] if t["id"] == fact_id)


def test_report_shows_the_chain(rulebase):
    from j6doctor.report import render_markdown
    text = render_markdown(diagnose_file(EXAMPLES / "convert_j6m.yaml", rulebase))
    appendix = text.split("## 附录：证据链")[1]
    assert "规则 map.convert" in appendix and "convert_j6m.yaml:12 results.quantized_bc" in appendix
