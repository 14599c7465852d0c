"""A case key is one declaration (facts/case_keys.py): an input fact type's `read_from` in
the vocabulary names the key, its JSON Schema and which part of the value fills each field.
The bundled keys read that way give the facts they gave when read by code; a rule pack adds a
key of its own with no Python; a wrong declaration is refused with its place."""

from __future__ import annotations

import json

import pytest

from conftest import write_file, write_pack
from j6doctor.facts import bundled
from j6doctor.facts.case_keys import case_keys
from j6doctor.probes.case_file import case_facts, case_from_data, case_schema

VOCABULARY = """\
types:
  calibration_set:
    origin: input
    probes: [case_file]
    meaning: 校准数据集的规模与来源
    described_as: '校准数据：{{ images }} 张{% if source %}（{{ source }}）{% endif %}'
    read_from:
      key: calibration_set
      schema:
        type: object
        additionalProperties: false
        required: [images]
        properties: {images: {type: integer, minimum: 1}, source: {type: string}, flow: {enum_of: flow}}
      shorthand: images
      fields: {images: images, source: source}
    fields:
      images: {type: int, required: true}
      source: {type: str, default: ""}
"""

RULES = """\
title: 校准数据规模（试验规则包）
seed: 核心原则
rules:
  - id: finding.calibration_small
    title: 校准数据少于 50 张
    when:
      - calibration_set: {images: {lt: 50}}
        as: c
    then:
      - key_finding: {slot: error_source, text: "校准只用了 ${c.images} 张图"}
    examples:
      - name: 20 张
        case: {flow: ptq, results: {calibrated_model: abnormal}, calibration_set: {images: 20}}
        expect: {stage: qat_training}
      - name: 500 张
        fires: false
        case: {flow: ptq, results: {calibrated_model: abnormal}, calibration_set: 500}
        expect: {stage: qat_training}
"""

CASE = """\
flow: ptq
platform: X5
results:
  calibrated_model: {status: abnormal, evidence: dataset_eval}
calibration_set:
  images: 20
  source: "  验证集前 20 张  "
"""


@pytest.fixture
def pack(tmp_path):
    return write_pack(tmp_path, VOCABULARY, RULES, CASE)


def test_the_bundled_declarations_compile_with_valid_schemas():
    declared = {k.key: k.type for k in case_keys(bundled(), check_schemas=True)}
    assert declared == {"flow": "flow_stated", "badcase": "badcase", "tried": "tried_fix",
                        "bc_flow_check": "bc_flow_check", "fake_quant_off_check": "fake_quant_off_check",
                        "input_formats_differ": "input_formats"}
    assert all(case_schema()["properties"][key] for key in declared)


def test_declared_keys_give_their_facts_with_shorthands_aliases_and_sources():
    case = case_from_data({"flow": "PTQ", "badcase": {"reproducible": True, "path": "bad/0001.jpg"},
                           "tried": ["  关闭 fake quant ", "", "换 march"], "bc_flow_check": "Consistent",
                           "fake_quant_off_check": {"outcome": "inconsistent", "note": "差 0.3"},
                           "input_formats_differ": False}, "case.yaml")
    facts = [(f.type, f.fields, f.source.key) for f in case_facts(case)]
    assert facts == [
        ("flow_stated", {"flow": "ptq"}, "flow"),
        ("badcase", {"reproducible": True, "path": "bad/0001.jpg"}, "badcase"),
        ("tried_fix", {"text": "关闭 fake quant"}, "tried.0"),
        ("tried_fix", {"text": "换 march"}, "tried.2"),
        ("bc_flow_check", {"outcome": "consistent", "note": ""}, "bc_flow_check"),
        ("fake_quant_off_check", {"outcome": "inconsistent", "note": "差 0.3"}, "fake_quant_off_check"),
        ("input_formats", {"differ": False}, "input_formats_differ"),
    ]


def test_a_packs_case_key_is_read_and_reasoned_on_with_no_python(pack, cli):
    done = cli("diagnose", "case.yaml", "--no-env", "--rules", "pack", "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    fact = next(f for f in report["trace"] if f["type"] == "calibration_set")
    assert fact["fields"] == {"images": 20, "source": "验证集前 20 张"}
    assert (fact["source"]["key"], fact["source"]["line"]) == ("calibration_set", 5)
    assert [(k["rule"], k["text"]) for k in report["key_findings"] if k["slot"] == "error_source"] == [
        ("finding.calibration_small", "校准只用了 20 张图")]
    md = cli("diagnose", "case.yaml", "--no-env", "--rules", "pack").stdout
    assert "校准只用了 20 张图" in md
    schema = json.loads(cli("schema", "case", "--rules", "pack").stdout)
    assert schema["properties"]["calibration_set"]["anyOf"][1] == {"type": "integer", "minimum": 1}
    tested = cli("rules", "test", "pack", "-k", "finding.calibration_small")
    assert tested.returncode == 0 and "2 passed, 0 failed" in tested.stdout, tested.stdout + tested.stderr


def test_without_the_pack_the_key_is_unknown(pack, cli):
    done = cli("diagnose", "case.yaml", "--no-env")
    assert done.returncode == 2
    assert "calibration_set" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("change,message", [
    (("      fields: {images: images, source: source}", "      fields: {images: images, count: source}"),
     "types.calibration_set.read_from.fields.count: calibration_set has no such field"),
    (("      fields: {images: images, source: source}", "      fields: {images: size}"),
     "types.calibration_set.read_from.fields.images: 'size' is neither `.` nor a property of the schema"),
    (("      fields: {images: images, source: source}", "      fields: {source: source}"),
     "types.calibration_set.read_from.fields: the required field 'images' is filled by nothing"),
    (("{type: integer, minimum: 1}", "{type: integr}"),
     "types.calibration_set.read_from.schema.properties.images.type: not a valid JSON Schema"),
    (("{enum_of: flow}", "{enum_of: flows}"), "enum_of names no enum: 'flows'"),
    (("      key: calibration_set", "      key: calibration set"),
     "types.calibration_set.read_from.key: expected the name of a top-level case key"),
    (("      key: calibration_set", "      key: tried"),
     "types.calibration_set.read_from.key: 'tried' is read by another type (tried_fix) too"),
    (("      key: calibration_set", "      key: results"),
     "pack/vocabulary.yaml: types.calibration_set.read_from.key: 'results' is a case key j6doctor reads already"),
    (("      shorthand: images", "      shorthand: count"), "read_from.shorthand: expected the name of a property"),
    (("      shorthand: images", "      shorthand: [images]"), "read_from.shorthand: expected the name of a property"),
    (("      fields: {images: images, source: source}", "      fields: {images: [images]}"),
     "read_from.fields.images: ['images'] is neither `.` nor a property of the schema"),
    (("{enum_of: flow}", "{enum_of: [flow]}"), "read_from.schema.properties.flow: enum_of names no enum: ['flow']"),
    (("{enum_of: flow}", "{anyOf: [{enum_of: flow}, {type: 'null'}]}"),
     "enum_of is read only under properties and items"),
    (("{enum_of: flow}", "{$ref: '#/$defs/flow'}"), "read_from.schema.properties.flow: $ref is not read"),
    (("      shorthand: images", "      shorthand: images\n      5: 1"), "read_from: unknown key '5'"),
    (("{type: integer, minimum: 1}", "{type: number}"),
     "read_from.fields.images: the field is int; give its schema type: integer (it has 'number')"),
    (("        required: [images]\n", ""),
     "read_from.fields.images: the field is required, so the schema must require 'images'"),
    (("      shorthand: images\n", "      each: true\n"), "read_from.schema: `each: true` reads a list"),
])
def test_a_wrong_declaration_is_refused_with_its_place(pack, cli, change, message):
    write_file(pack / "pack", "vocabulary.yaml", VOCABULARY.replace(*change))
    done = cli("diagnose", "case.yaml", "--no-env", "--rules", "pack")
    assert done.returncode == 2, done.stderr
    assert message in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
