"""AUTHORING.md's promise: knowledge is added without touching Python. A throw-away rule pack
with its own vocabulary.yaml adds a platform, a stage, an info-gate item and a key-findings
slot; `diagnose`, `ask`, `next-step`, `rules test` and `rules lint` use them as they use the
bundled ones, with no Python change."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import write_file, write_pack

VOCABULARY = """\
enums:
  platform:
    values:
      J7X: {board: RDK Z1, march: nova-x, series: J6, label: "J7X (nova-x, RDK Z1)",
            aliases: [nova-x, RDK Z1, journey 7x]}
  stage:
    values:
      calibration_data: {label: 校准数据, next_step_ptq: true, aliases: [校准数据集]}
  gate_item:
    values:
      calib_set: {label: 校准数据集说明, why: 校准数据决定量化 scale, answer: text,
                  question: 校准用了哪些数据（多少张、是否与训练同分布）}
  key_slot:
    values:
      calib_notes: {label: 校准数据摘要, empty: 未提供校准数据说明}
"""

RULES = """\
title: 校准数据（试验规则包）
seed: 核心原则
rules:
  - id: map.ptq_calibration
    title: PTQ：校准模型本身异常 → 校准数据
    when:
      - first_abnormal: {artifact: qat_pt}
      - flow: {flow: ptq}
      - chain_open: {}
    then:
      - chain_stage: {stage: calibration_data, next_step: "核对校准数据集与训练数据的分布"}
    examples:
      - name: 校准模型掉点
        case: {flow: ptq, results: {calibrated_model: abnormal}}
        expect: {stage: calibration_data}
  - id: gate.calib_set
    title: 校准数据阶段，但没有说明校准数据
    when:
      - verdict: {stage: calibration_data}
      - not:
          gate_answer: {item: calib_set}
    then:
      - missing: {item: calib_set}
    examples:
      - name: 没说校准数据
        case: {flow: ptq, results: {calibrated_model: abnormal}}
        expect: {stage: calibration_data}
      - name: 说了
        fires: false
        case: {flow: ptq, results: {calibrated_model: abnormal}, answers: {calib_set: "验证集 100 张"}}
        expect: {stage: calibration_data}
  - id: finding.calib_notes
    title: 校准数据的说明进入关键发现
    when:
      - gate_answer: {item: calib_set}
        as: a
    then:
      - key_finding: {slot: calib_notes, text: "${a.text}"}
    examples:
      - name: 说明了校准数据
        case: {flow: ptq, results: {calibrated_model: abnormal}, answers: {calib_set: "验证集 100 张"}}
        expect: {stage: calibration_data}
"""

CASE = """\
# a PTQ case on a board the bundled vocabulary does not know
flow: ptq
platform: RDK Z1
results:
  calibrated_model: {status: abnormal, evidence: dataset_eval}
"""


@pytest.fixture
def pack(tmp_path):
    return write_pack(tmp_path, VOCABULARY, RULES, CASE)


def test_without_the_pack_the_new_platform_is_refused(pack, cli):
    done = cli("diagnose", "case.yaml", "--no-env")
    assert done.returncode == 2
    assert "case.yaml:3: platform: unknown platform 'RDK Z1'" in done.stderr


def test_diagnose_uses_the_packs_stage_platform_gate_item_and_slot(pack, cli):
    done = cli("diagnose", "case.yaml", "--no-env", "--rules", "pack", "--format", "json")
    assert done.returncode == 0, done.stderr
    verdict = json.loads(done.stdout)
    assert verdict["stage"] == "calibration_data"
    assert [m["id"] for m in verdict["missing_detail"]][-1] == "calib_set"
    report = cli("diagnose", "case.yaml", "--no-env", "--rules", "pack").stdout
    assert "当前最可能阶段：**校准数据**（`calibration_data`）" in report
    assert "平台：J7X (nova-x, RDK Z1)（用户写作 RDK Z1）" in report
    assert "- 校准数据摘要：未提供校准数据说明" in report  # the new slot's empty text
    assert "  - 校准数据集说明：校准数据决定量化 scale" in report  # the new gate item, with its reason


def test_ask_asks_the_new_item_and_the_answer_closes_it(pack):
    answers = "3.0.31\n" + "\n" * 6 + "验证集 100 张\n"
    done = subprocess.run([sys.executable, "-m", "j6doctor", "ask", "case.yaml", "--no-env", "--rules", "pack"],
                          input=answers, cwd=pack, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "[校准数据集说明] 校准数据决定量化 scale" in done.stderr
    assert "校准用了哪些数据（多少张、是否与训练同分布）：" in done.stderr
    text = (pack / "case.yaml").read_text(encoding="utf-8")
    assert text.startswith(CASE)  # what was there is kept as written
    assert 'answers:\n  calib_set: "验证集 100 张"\n' in text
    assert "- 校准数据摘要：验证集 100 张" in done.stdout  # the final report: the rule filled the slot
    assert "  - 校准数据集说明" not in done.stdout.split("已写入")[-1]  # no longer missing


def test_an_unknown_answer_kind_is_refused_before_anything_is_asked(pack):
    """answer_kind is a closed enum: a pack naming another kind is told so when the rule base
    loads, before the first question (and the case file is left as it was)."""
    vocabulary = pack / "pack" / "vocabulary.yaml"
    vocabulary.write_text(vocabulary.read_text(encoding="utf-8").replace("answer: text,", "answer: slider,"),
                          encoding="utf-8")
    before = (pack / "case.yaml").read_bytes()
    done = subprocess.run([sys.executable, "-m", "j6doctor", "ask", "case.yaml", "--no-env", "--rules", "pack"],
                          input="3.0.31\n" + "\n" * 6 + "验证集 100 张\n", cwd=pack, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2, done.stderr
    assert "pack/vocabulary.yaml: enum gate_item.calib_set.answer: expected one of text, named, results, " \
        "badcase, versions, fields (enum answer_kind), got 'slider'" in done.stderr
    assert done.stdout == "" and (pack / "case.yaml").read_bytes() == before


def test_next_step_writes_the_manual_steps_of_a_stage_without_a_script(pack, cli):
    done = cli("next-step", "case.yaml", "--no-env", "--rules", "pack", "-o", "step.py")
    assert done.returncode == 0, done.stderr
    script = (pack / "step.py").read_text(encoding="utf-8")
    assert "no script is generated for this stage" in script
    assert "STAGE = 'calibration_data'" in script and "PLATFORM = 'J7X'" in script
    run = subprocess.run([sys.executable, "step.py"], cwd=pack, capture_output=True, text=True, timeout=60)
    assert run.stdout.splitlines()[0] == "1. 核对校准数据集与训练数据的分布"
    assert run.returncode == 1 and "no script for this stage" in run.stderr


def test_rules_test_and_lint_read_the_packs_vocabulary(pack, cli):
    lint = cli("rules", "lint", "pack")
    assert lint.returncode == 0, lint.stdout + lint.stderr
    tested = cli("rules", "test", "pack", "-k", "*.calib_*")
    assert "FAIL" not in tested.stdout, tested.stdout
    assert "3 passed, 0 failed" in tested.stdout
    assert "gate.calib_set" in tested.stdout and "finding.calib_notes" in tested.stdout


@pytest.mark.parametrize("text, message", [
    ("enums: {stage: {values: {convert: {label: x}}}}",
     "pack/vocabulary.yaml: enums.stage.values.convert: already defined"),
    ("types: {result: {origin: input, fields: {}}}", "pack/vocabulary.yaml: types.result: already defined"),
    ("rules: []", "pack/vocabulary.yaml: unknown key 'rules'"),
    ("enums: {stage: {values: {x: {colour: red}}}}", "enum stage.x: unknown attribute 'colour'"),
    ("enums: [1, 2", "pack/vocabulary.yaml:2: not valid YAML"),
    # ask has one way of asking for each answer kind, next-step templates for each toolchain
    ("enums: {answer_kind: {values: {slider: {label: x}}}}",
     "pack/vocabulary.yaml: enums.answer_kind: a closed enum (j6doctor's code handles exactly its values: "
     "text, named, results, badcase, versions, fields); a pack cannot add 'slider'"),
    ("enums: {gate_item: {values: {rig: {answer: slider}}}}",
     "enum gate_item.rig.answer: expected one of text, named, results, badcase, versions, fields "
     "(enum answer_kind), got 'slider'"),
    ("enums: {gate_item: {values: {rig: {answer: named, of: colour}}}}",
     "enum gate_item.rig.of: expected the name of an enum, got 'colour'"),
    ("enums: {platform_series: {values: {J9: {toolchain: hbdk9}}}}",
     "enum platform_series.J9.toolchain: expected one of other, hbdk3, hbdk4 (enum toolchain), got 'hbdk9'"),
    ("enum_attributes: {colour: hue}", "enum_attributes.colour: kind must be one of str, int, number, bool, "
                                       "list, enum or enum:<an enum's name>"),
])
def test_a_bad_pack_vocabulary_is_refused_with_its_file_and_place(pack, cli, text, message):
    write_file(pack / "pack", "vocabulary.yaml", text)
    done = cli("diagnose", "case.yaml", "--no-env", "--rules", "pack")
    assert done.returncode == 2
    assert message in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_the_bundled_vocabulary_declares_what_ask_report_and_next_step_read():
    from pathlib import Path

    from j6doctor.ask import ANSWER_KINDS
    from j6doctor.facts import attr, enum_values
    from j6doctor.templates import __file__ as templates_init

    scripts = Path(templates_init).parent / "next_step"
    assert set(enum_values("answer_kind")) == set(ANSWER_KINDS)  # the closed enum is what ask handles
    for item in enum_values("gate_item"):
        assert attr("gate_item", item, "answer") in ANSWER_KINDS, item
        assert attr("gate_item", item, "why"), item
    for slot in enum_values("key_slot"):
        assert attr("key_slot", slot, "empty"), slot
    for stage in enum_values("stage"):
        for key in ("next_step", "next_step_hbdk3"):
            name = attr("stage", stage, key)
            assert name is None or (scripts / name).is_file(), (stage, key, name)
    assert [s for s in enum_values("stage") if attr("stage", s, "open")] == ["undetermined"]
    for series in enum_values("platform_series"):
        assert attr("platform_series", series, "toolchain") in ("hbdk4", "hbdk3", "other"), series
    for name in enum_values("threshold"):
        assert isinstance(attr("threshold", name, "value"), (int, float)) and attr("threshold", name, "meaning"), name


def test_a_case_stored_under_the_pack_is_named_when_rediagnosed_without_it(pack, cli):
    """Its stored facts hold the pack's platform: without the pack that case cannot be judged,
    and rediagnose says so (exit 1: a change) instead of judging facts the vocabulary refuses."""
    done = cli("diagnose", "case.yaml", "--no-env", "--rules", "pack", "--store", "lib.db")
    assert done.returncode == 0, done.stderr
    assert cli("cases", "rediagnose", "--store", "lib.db", "--rules", "pack").returncode == 0
    without = cli("cases", "rediagnose", "--store", "lib.db")
    assert without.returncode == 1, without.stderr
    assert "#1 case.yaml：calibration_data → 无法在这个规则库下重新诊断" in without.stdout
    assert "'J7X' is not one of" in without.stdout
    as_json = json.loads(cli("cases", "rediagnose", "--store", "lib.db", "--format", "json").stdout)
    (change,) = as_json["changed"]
    assert change["after"] is None and change["changed"] == ["facts"] and "platform.family" in change["error"]


def test_a_pack_and_the_bundled_rules_diagnose_side_by_side_in_one_process(pack):
    """Loading the bundled rule base after a pack's does not take the pack's words away from
    the pack's rule base (issue 33): each diagnosis reads and reports in its own vocabulary."""
    from j6doctor.diagnosis import diagnose_file, load_rulebase
    from j6doctor.probes import InputError
    from j6doctor.report import render_markdown

    with_pack = load_rulebase([pack / "pack"])
    bundled = load_rulebase()
    d = diagnose_file(pack / "case.yaml", with_pack)
    assert d.verdict_json["stage"] == "calibration_data"
    with pytest.raises(InputError) as info:
        diagnose_file(pack / "case.yaml", bundled)
    assert "unknown platform 'RDK Z1'" in str(info.value)
    assert "平台：J7X (nova-x, RDK Z1)（用户写作 RDK Z1）" in render_markdown(d)  # rendered after the bundled load
    assert diagnose_file(pack / "case.yaml", with_pack).verdict_json["stage"] == "calibration_data"


def test_loading_a_packs_rule_base_changes_no_vocabulary_outside_its_runs(pack):
    """No process-wide vocabulary: a pack's words are in use inside its diagnosis and its
    renderings only, and in the thread that runs them (issue 33)."""
    import threading

    from j6doctor.diagnosis import load_rulebase
    from j6doctor.facts import bundled, using, vocabulary

    with_pack = load_rulebase([pack / "pack"])
    assert vocabulary() is bundled()  # loading it set nothing
    seen = []
    with using(with_pack.vocab):
        assert "J7X" in vocabulary().enums["platform"].values
        thread = threading.Thread(target=lambda: seen.append(vocabulary()))
        thread.start()
        thread.join()
    assert seen == [bundled()]  # another thread never saw the pack's words
    assert vocabulary() is bundled()


def test_the_schemas_hold_the_packs_values_with_rules_only(pack, cli):
    with_pack = cli("schema", "rule", "--rules", "pack")
    assert with_pack.returncode == 0, with_pack.stderr
    assert "J7X" in with_pack.stdout and "calibration_data" in with_pack.stdout
    assert "J7X" not in cli("schema", "rule").stdout


def test_triage_counts_the_packs_stage_under_its_label(pack, cli):
    done = cli("triage", "case.yaml", "--rules", "pack", "--no-progress", "-j", "1")
    assert done.returncode == 0, done.stderr
    assert "按阶段：校准数据 1" in done.stdout
