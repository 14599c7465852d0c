"""Auditing and authoring: explain / --why-not, rules lint, rules test, rule packs, schema."""

from __future__ import annotations

import json
import shutil
import textwrap

import jsonschema
import pytest

from conftest import EXAMPLES, write_case
from j6doctor.engine.strict_yaml import load_yaml
from j6doctor.rules import BUNDLED_RULES_DIR


def pack(tmp_path, text, name="pack.yaml", folder="pack"):
    target = tmp_path / folder
    target.mkdir(exist_ok=True)
    (target / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return target


# ------------------------------------------------------------------ explain

def test_explain_tree_reaches_file_sources_with_sha256(cli, tmp_path):
    shutil.copytree(BUNDLED_RULES_DIR / "fixtures" / "horizon_quant_analysis", tmp_path / "qa")
    case = write_case(tmp_path, "results:\n  qat_bc: {status: normal, evidence: dataset_eval}\n"
                                "  quantized_bc: {status: abnormal, evidence: dataset_eval}\n"
                                "artifacts: [qa]\nplatform: J6M\n")
    proc = cli("explain", str(case), "--no-env", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    (tree,) = data["conclusions"]
    assert tree["rule"] == "verdict.from_chain" and tree["rule_file"] == "rules/40_verdict.yaml" and tree["rule_line"]

    def leaves(node):
        if "premises" not in node:
            return [node]
        return [leaf for p in node["premises"] for leaf in leaves(p)]

    sources = [leaf["source"] for leaf in leaves(tree)]
    assert {s["key"] for s in sources} == {"results.qat_bc", "results.quantized_bc"}
    assert all(s["file"] == "case.yaml" and s["line"] for s in sources)
    mistakes = {m["fields"]["code"] for m in data["mistakes"]}
    assert mistakes == set()  # the fixture has sensitivity: no M09


def test_explain_markdown_and_mistake_trees(cli, tmp_path):
    (tmp_path / "qa").mkdir()
    shutil.copy(BUNDLED_RULES_DIR / "fixtures" / "horizon_quant_analysis" / "compare_per_layer_out.csv", tmp_path / "qa")
    case = write_case(tmp_path, "results:\n  qat_bc: normal\n  quantized_bc: abnormal\nartifacts: [qa]\n")
    proc = cli("explain", str(case), "--no-env")
    assert proc.returncode == 0
    text = proc.stdout
    assert "## 结论的推导" in text and "## 常见误区的推导" in text
    assert "规则 mistake.M09" in text and "qa/compare_per_layer_out.csv（sha256 " in text


def test_why_not_names_rules_failed_conditions_and_evidence(cli):
    proc = cli("explain", str(EXAMPLES / "export_qat_bc_abnormal.yaml"), "--no-env", "--why-not", "convert",
               "--format", "json")
    data = json.loads(proc.stdout)["why_not"]
    assert data["stage"] == "convert" and not data["already"]
    assert [r["rule"] for r in data["rules"]] == ["verdict.decisive", "verdict.from_chain"]
    chain = next(r for r in data["rules"] if r["rule"] == "verdict.from_chain")["conditions"][0]
    assert chain["satisfied"] is False
    convert = next(p for p in chain["producers"] if p["rule"] == "map.convert")
    failed = [c["condition"] for c in convert["conditions"] if not c["satisfied"]]
    assert failed == ["confirmed{artifact=qat_bc, status=normal}", "first_abnormal{artifact=quantized_bc}"]
    changes = [c["condition"] for c in data["would_change"]]  # in the words of the case file
    assert "results.qat_bc: {status: normal, evidence: dataset_eval / badcase / multi_frame_visual}" in changes
    assert "results.quantized_bc: {status: abnormal, evidence: dataset_eval / badcase / multi_frame_visual}" in changes
    qat_bc = next(c for c in data["would_change"] if c["condition"].startswith("results.qat_bc: {status: normal"))
    # ... and what the case says instead, with its line
    assert qat_bc["instead"] == ["results.qat_bc: {status: abnormal, evidence: dataset_eval}"
                                 "（export_qat_bc_abnormal.yaml:10 results.qat_bc）"]


def test_why_not_in_markdown_speaks_the_case_file_and_names_the_blocker_first(cli):
    """The answer comes first, in the case's words: the entry that stands in the way with its
    line; the rule-by-rule detail after it words input conditions as case entries and
    derived ones by the vocabulary's meaning, never in the engine's pattern syntax."""
    proc = cli("explain", str(EXAMPLES / "convert_j6m.yaml"), "--no-env", "--why-not", "export")
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    answer = text.split("## 为什么不是 export（`export`）")[1].split("\n## ")[0]
    first = next(line for line in answer.splitlines() if line.startswith("- "))
    assert first.startswith("- 改为 results.qat_bc: {") and "（convert_j6m.yaml:11 results.qat_bc）" in first
    assert "改为 results.qat_bc: {status: abnormal, evidence: （不写）}" in answer  # the key is there: a change
    assert text.index("## 为什么不是 export") < text.index("## 结论的推导") < text.index("## 逐条规则")
    detail = text.split("## 逐条规则：为什么没有得出 export")[1]
    assert "result{" not in detail and "comparison{" not in detail and "≠float" not in detail
    assert "✗ 链路上最早的已确认异常产物" in detail and "（artifact = qat.bc）" in detail
    assert "✗ 案例中 results.qat_bc: {status: abnormal, evidence: dataset_eval / badcase / multi_frame_visual}" \
        "：现在是 results.qat_bc: {status: normal, evidence: dataset_eval}（convert_j6m.yaml:11 results.qat_bc）" in detail


def test_why_not_blocked_by_a_negation(cli):
    proc = cli("explain", str(EXAMPLES / "contradictory.yaml"), "--no-env", "--why-not", "export", "--format", "json")
    data = json.loads(proc.stdout)["why_not"]
    removes = [c for c in data["would_change"] if c["kind"] == "remove"]
    assert removes and removes[0]["condition"] == "conflict{}" and removes[0]["facts"]


def test_why_not_current_stage_and_bad_stage(cli):
    same = cli("explain", str(EXAMPLES / "convert_j6m.yaml"), "--no-env", "--why-not", "convert")
    assert same.returncode == 0 and "当前结论就是 convert" in same.stdout
    bad = cli("explain", str(EXAMPLES / "convert_j6m.yaml"), "--why-not", "linking")
    assert bad.returncode == 2 and "allowed: pre_export" in bad.stderr


# ------------------------------------------------------------------ rules lint

def test_lint_bundled_rules_is_clean(cli):
    proc = cli("rules", "lint", "--strict")
    assert proc.returncode == 0, proc.stdout
    assert proc.stdout.strip().endswith("0 error(s), 0 warning(s)")


LINT_CASES = [
    ("never fires", """
        seed: t
        rules:
          - id: site.never
            title: waits for a stage no rule concludes
            when:
              - chain_stage: {stage: user_side}
            then:
              - finding: {topic: t, text: never}
            examples: [{case: {}}]
     """, "pack.yaml:7: error: rule site.never: can never fire: no rule derives chain_stage{stage=user_side}"),
    ("disagreement", """
        seed: t
        rules:
          - id: site.a
            title: a
            when: [{confirmed: {artifact: qat_bc, status: abnormal}}]
            then: [{chain_stage: {stage: export}}]
            examples: [{case: {}}]
          - id: site.b
            title: b
            when: [{confirmed: {artifact: qat_bc, status: abnormal}}]
            then: [{chain_stage: {stage: convert}}]
            examples: [{case: {}}]
     """, "rule site.a: concludes a different chain_stage.stage than site.b on the same conditions"),
    ("endless cycle", """
        seed: t
        rules:
          - id: site.grow
            title: grows
            when: [{finding: {topic: loop}, as: f}]
            then: [{finding: {topic: loop, text: "${f.text}+"}}]
            examples: [{case: {}}]
     """, "could not terminate"),
    ("unknown field", """
        seed: t
        rules:
          - id: site.typo
            title: typo
            when: [{result: {artefact: qat_bc}}]
            then: [{finding: {topic: t, text: x}}]
     """, "pack.yaml:6: error: rule site.typo: result.artefact: fact type 'result' has no field 'artefact'\n  hint: did you mean 'artifact'?"),
    ("text rule with a broken pattern", """
        seed: t
        read: [symptom.text]
        rules:
          - id: site.text
            title: bad pattern
            match: ['layout (不一致']
            then: [{text_fact: {topic: layout, kind: stated}}]
     """, "pack.yaml:7: error: rule site.text: match: not a valid text pattern"),
    ("text rule reading a non-text field", """
        seed: t
        rules:
          - id: site.text
            title: reads a number
            read: [result.value]
            match: ['x']
            then: [{text_fact: {topic: layout, kind: stated}}]
     """, "'result.value': 'result' has no text field 'value'"),
    ("rule with both when and match", """
        seed: t
        rules:
          - id: site.both
            title: both
            when: [{symptom: {}}]
            match: ['x']
            then: [{finding: {topic: t, text: x}}]
     """, "a rule has either `when:` (conditions on facts) or `match:` (a text rule), not both"),
    ("over the engine limits", "seed: t\nrules:\n" + "".join(
        f"  - id: site.r{i}\n    title: r{i}\n    when:\n"
        + "".join(f"      - result: {{metric: m{i}_{k}}}\n" for k in range(16))
        + "    then: [{finding: {topic: t, text: x}}]\n" for i in range(40)),
     "durable-rules hangs at 512"),
]


@pytest.mark.parametrize("name,text,expected", LINT_CASES, ids=[c[0] for c in LINT_CASES])
def test_lint_reports_broken_packs(cli, tmp_path, name, text, expected):
    folder = pack(tmp_path, text)
    proc = cli("rules", "lint", str(folder))
    assert proc.returncode == 1, proc.stdout
    assert expected in proc.stdout, proc.stdout


def test_lint_warns_about_missing_examples_and_lists_overrides(cli, tmp_path):
    folder = pack(tmp_path, """
        seed: t
        rules:
          - id: next.convert
            title: site convert steps
            when: [{chain_stage: {stage: convert}}]
            then: [{next_step: {order: 20, text: "site step"}}]
    """)
    proc = cli("rules", "lint", str(folder))
    assert proc.returncode == 0
    assert "warning: rule next.convert: has no example case" in proc.stdout
    assert "info: rule next.convert: overrides the rule at rules/80_next_steps.yaml:" in proc.stdout
    assert cli("rules", "lint", "--strict", str(folder)).returncode == 1


# ------------------------------------------------------------------ rules test

def test_rules_test_on_bundled_rules(cli):
    proc = cli("rules", "test")
    assert proc.returncode == 0, proc.stdout[-2000:]
    last = proc.stdout.strip().splitlines()[-1]
    assert " 0 failed;" in last and "rules fired by their examples; conditions decided by an example: " in last
    covered, total = last.split(";")[1].split()[0].split("/")
    assert covered == total
    decided, conditions = last.split(": ")[-1].split()[0].split("/")
    assert 0 < int(decided) < int(conditions)  # the guards no example shows blocking are listed by --coverage


def test_rules_test_fails_on_a_wrong_example_and_a_rule_without_examples(cli, tmp_path):
    folder = pack(tmp_path, """
        seed: t
        rules:
          - id: site.convert_note
            title: note on convert
            when: [{verdict: {stage: convert}}]
            then: [{finding: {topic: site, text: "site note"}}]
            examples:
              - name: wrong expectation
                case: {results: {qat_bc: normal, quantized_bc: abnormal}}
                expect: {stage: export}
          - id: site.lonely
            title: no example
            when: [{verdict: {stage: board}}]
            then: [{finding: {topic: site, text: "board note"}}]
    """)
    proc = cli("rules", "test", str(folder))
    assert proc.returncode == 1
    assert "pack/pack.yaml:9 site.convert_note: wrong expectation" in proc.stdout
    assert "stage is convert, expected export" in proc.stdout
    assert "rule site.lonely: has no example case" in proc.stdout


def test_rules_test_checks_the_chain_stage_an_example_expects(cli, tmp_path):
    # (a verdict of undetermined that read the board's result stops the chain at baseline; one
    # that read nothing does not: the example's chain_stage tells them apart)
    folder = pack(tmp_path, """
        seed: t
        rules:
          - id: site.board_note
            title: note on an undetermined verdict
            when: [{verdict: {stage: undetermined}}]
            then: [{finding: {topic: site, text: "site note"}}]
            examples:
              - name: board read
                case: {results: {board: abnormal}}
                expect: {stage: undetermined, chain_stage: baseline}
              - name: nothing read
                case: {symptom: "板端有点问题"}
                expect: {stage: undetermined, chain_stage: baseline}
    """)
    proc = cli("rules", "test", str(folder))
    assert proc.returncode == 1
    assert "site.board_note: board read" not in proc.stdout
    assert "site.board_note: nothing read" in proc.stdout and "expected baseline" in proc.stdout


# ------------------------------------------------------------------ rule packs

def test_pack_overrides_a_bundled_rule_and_the_trace_says_so(cli, tmp_path):
    folder = pack(tmp_path, """
        seed: 2. Convert 问题
        rules:
          - id: next.convert
            title: 本站 convert 步骤
            when: [{chain_stage: {stage: convert}}]
            then: [{next_step: {order: 20, text: "本站：先跑 nightly convert 回归"}}]
            examples: [{case: {results: {qat_bc: normal, quantized_bc: abnormal}}}]
          - id: site.extra
            title: 本站附加提示
            when: [{verdict: {stage: convert}}]
            then: [{finding: {topic: site, text: "本站提示：联系 convert 值班"}}]
            examples: [{case: {results: {qat_bc: normal, quantized_bc: abnormal}}}]
    """)
    proc = cli("diagnose", str(EXAMPLES / "convert_j6m.yaml"), "--no-env", "--rules", str(folder), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    verdict = json.loads(proc.stdout)
    texts = [s["text"] for s in verdict["next_steps"]]
    assert "本站：先跑 nightly convert 回归" in texts and not any("确认 quantized.bc 掉点稳定可复现" in t for t in texts)
    entry = next(t for t in verdict["trace"] if t.get("rule") == "next.convert")
    assert entry["rule_file"].endswith("pack/pack.yaml") and entry["overrides"].startswith("rules/80_next_steps.yaml:")
    assert any(f["text"] == "本站提示：联系 convert 值班" for f in verdict["findings"])
    assert cli("rules", "test", str(folder)).returncode == 0


def test_broken_pack_is_an_input_error(cli, tmp_path):
    folder = pack(tmp_path, "rules: [\n")
    proc = cli("diagnose", str(EXAMPLES / "convert_j6m.yaml"), "--rules", str(folder))
    assert proc.returncode == 2 and "pack.yaml:2: not valid YAML" in proc.stderr and "Traceback" not in proc.stderr
    missing = cli("diagnose", str(EXAMPLES / "convert_j6m.yaml"), "--rules", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "no such rule pack folder" in missing.stderr


# ------------------------------------------------------------------ schema

def test_schema_validates_the_bundled_rules_and_rejects_typos(cli):
    proc = cli("rules", "schema")
    schema = json.loads(proc.stdout)
    validator = jsonschema.Draft202012Validator(schema)
    for path in sorted(BUNDLED_RULES_DIR.glob("*.yaml")):
        errors = list(validator.iter_errors(load_yaml(path.read_text(encoding="utf-8")).data))
        assert errors == [], (path.name, errors[0].message)
    bad = {"rules": [{"id": "x", "title": "t", "when": [{"resalt": {}}], "then": [{"finding": {"topic": "a", "text": "b"}}]}]}
    assert list(validator.iter_errors(bad))
    wrong_value = {"rules": [{"id": "x", "title": "t", "when": [{"result": {"status": "fine"}}],
                              "then": [{"finding": {"topic": "a", "text": "b"}}]}]}
    assert list(validator.iter_errors(wrong_value))
    plain = json.loads(cli("rules", "schema", "--plain").stdout)
    assert "fact_tests" not in plain["$defs"]


def test_authoring_guide_text_rule_example_passes_lint_and_test(cli, tmp_path):
    """The text-rule example of docs/AUTHORING.md works as written."""
    import re
    from conftest import REPO
    guide = (REPO / "docs" / "AUTHORING.md").read_text(encoding="utf-8")
    block = next(b for b in re.findall(r"```yaml\n(.*?)```", guide, re.S) if "match:" in b)
    folder = pack(tmp_path, block)
    lint = cli("rules", "lint", "--strict", str(folder))
    assert lint.returncode == 0, lint.stdout
    test = cli("rules", "test", str(folder))
    assert test.returncode == 0, test.stdout
    assert "site.mean_order" in test.stdout


def test_authoring_guide_first_example_passes_lint_and_test(cli, tmp_path):
    """The first rule example of docs/AUTHORING.md works as written: lint and test pass,
    both of its examples are run, and a missing fixture would have been reported."""
    import re
    from conftest import REPO
    guide = (REPO / "docs" / "AUTHORING.md").read_text(encoding="utf-8")
    block = next(b for b in re.findall(r"```yaml\n(.*?)```", guide, re.S) if "site.requantize_hint" in b)
    folder = pack(tmp_path, block)
    lint = cli("rules", "lint", "--strict", str(folder))
    assert lint.returncode == 0, lint.stdout
    test = cli("rules", "test", str(folder))
    assert test.returncode == 0, test.stdout
    assert "2 passed, 0 failed" in test.stdout
    broken = pack(tmp_path, folder="broken", text=block.replace("        facts:                     # what a probe",
                                                     "          artifacts: [fixtures/add_origin]\n"
                                                     "        facts:                     # what a probe", 1))
    lint = cli("rules", "lint", str(broken))
    assert lint.returncode != 0 and "artifacts.0 names fixtures/add_origin, which does not exist" in lint.stdout


def test_rules_test_explains_a_non_firing_example_in_case_terms(cli, tmp_path):
    folder = pack(tmp_path, """\
        seed: test
        rules:
          - id: site.qat_bc_ok
            title: qat.bc 评测正常
            when:
              - result: {artifact: qat_bc, status: normal}
            then:
              - finding: {topic: site, text: qat.bc 正常}
            examples:
              - name: 没写 qat.bc
                case: {results: {board: {status: abnormal}}}
          - id: site.no_board
            title: 没有板端异常时
            when:
              - chain_open: {}
              - not:
                  confirmed: {artifact: board, status: abnormal}
            then:
              - finding: {topic: site, text: 板端未见异常}
            examples:
              - name: 板端异常挡住了
                case:
                  results:
                    board: {status: abnormal, evidence: dataset_eval}
        """)
    test = cli("rules", "test", str(folder))
    assert test.returncode != 0
    out = test.stdout
    assert "blocked at line 6: result{artifact=qat_bc, status=normal}" in out
    assert "the example needs: results.qat_bc: {status: normal, evidence: …}" in out
    # the input behind the blocking fact, and where it came from (the example, its case key)
    assert "it is there because of: results.board: {status: abnormal, evidence: dataset_eval}" \
           "（site.no_board#1 results.board）" in out
