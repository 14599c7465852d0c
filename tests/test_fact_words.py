"""The words of a fact come from the vocabulary (`described_as` of its type), the same in the
report and in `explain`: a fact's wording is changed in facts/vocabulary.yaml, not in Python.
Templates run sandboxed; a pack's template that does not parse is refused with its place."""

from __future__ import annotations

import pytest

from conftest import EXAMPLES, write_file
from j6doctor.describe import has_words, words
from j6doctor.diagnosis import diagnose_file, load_rulebase
from j6doctor.engine import VocabularyError
from j6doctor.explain_report import explain_data, render_explain_markdown
from j6doctor.facts import bundled, with_packs
from j6doctor.report import render_markdown


def test_every_template_of_the_bundled_vocabulary_renders_with_its_types_defaults():
    vocab = bundled()
    described = [name for name, t in vocab.types.items() if t.described_as]
    assert {"result", "failure", "platform", "version", "badcase", "symptom"} <= set(described)
    for name in described:
        fields = {f: (spec.default if spec.default is not None else _sample(spec, vocab))
                  for f, spec in vocab.types[name].fields.items()}
        text = words(name, fields)
        assert text and "{{" not in text and "{%" not in text, (name, text)


def _sample(spec, vocab):
    if spec.type == "enum":
        return vocab.enums[spec.enum].values[0]
    return {"str": "x", "int": 1, "number": 0.5, "bool": True}.get(spec.type, "x")


def test_the_report_and_explain_word_an_input_fact_alike():
    diagnosis = diagnose_file(EXAMPLES / "convert_j6m.yaml", load_rulebase())
    wording = "quantized.bc：异常（数据集评测指标；mAP = 36.0）"
    report = render_markdown(diagnosis)
    explained = render_explain_markdown(diagnosis, explain_data(diagnosis))
    assert f"异常产物：{wording}" in report
    assert f"[f8] result：{wording} ← 输入：convert_j6m.yaml:12 results.quantized_bc" in report  # the appendix
    assert f"[f8] result：{wording} ← 输入：convert_j6m.yaml:12 results.quantized_bc" in explained


def test_a_ptq_case_names_its_artifacts_as_ptq_users_do():
    diagnosis = diagnose_file(EXAMPLES / "ptq_x5_quantized_drop.yaml", load_rulebase())
    explained = render_explain_markdown(diagnosis, explain_data(diagnosis))
    assert "result：定点模型" in explained or "result：校准模型" in explained


def test_a_type_without_words_is_shown_by_its_fields():
    assert not has_words("chain_stage")
    assert words("chain_stage", {"stage": "convert", "next_step": ""}) == "chain_stage（stage=convert）"


@pytest.mark.parametrize("template,message", [
    ("{{ text.__class__ }}", "Getattr is not allowed"),
    ("{{ text[0] }}", "Getitem is not allowed"),
    ("{{ text * 300000000 }}", "Mul is not allowed"),
    ("{{ text ~ text }}", "Concat is not allowed"),
    ("{{ range(10) }}", "Call is not allowed"),
    ("{% for c in text %}{{ c }}{% endfor %}", "For is not allowed"),
    ("{{ txt }}", "'txt' is no field of calib_note (fields: text; also ptq, local)"),
    ("{{ text|upper }}", "no filter 'upper' (filters: label, artifact)"),
    ("{{ text|label('nosuch') }}", "label takes the name of an enum of the vocabulary"),
    ("校准：{{ text", "not a valid template"),
])
def test_a_packs_template_may_only_word_its_fields(tmp_path, template, message):
    write_file(tmp_path / "pack", "vocabulary.yaml",
               "types:\n  calib_note:\n    origin: derived\n    described_as: " + _quoted(template) + "\n"
               "    fields:\n      text: {type: str, required: true}\n")
    with pytest.raises(VocabularyError) as refused:
        with_packs([tmp_path / "pack"], {tmp_path / "pack": "pack"})
    assert str(refused.value).startswith("pack/vocabulary.yaml: types.calib_note.described_as: ")
    assert message in str(refused.value)


def test_a_packs_good_template_words_its_facts(tmp_path):
    from j6doctor.facts import using

    write_file(tmp_path / "pack", "vocabulary.yaml",
               "types:\n  calib_note:\n    origin: derived\n"
               "    described_as: '校准：{{ text }}{% if status %}（{{ status|label(\"status\") }}）{% endif %}'\n"
               "    fields:\n      text: {type: str, required: true}\n      status: {type: str, default: ''}\n")
    vocab = with_packs([tmp_path / "pack"], {tmp_path / "pack": "pack"})
    with using(vocab):
        assert words("calib_note", {"text": "用了 200 张", "status": "abnormal"}) == "校准：用了 200 张（异常）"
        assert words("calib_note", {"text": "用了 200 张", "status": ""}) == "校准：用了 200 张"


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
