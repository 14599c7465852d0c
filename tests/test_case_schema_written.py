"""The published case schema (`j6doctor schema case`) describes the case file as users write
it: every case the tool reads is valid there (the bundled cases, every rule example, the
case blocks of README and docs), shorthands and aliases included; cases the tool refuses
for their shape are invalid there too."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import jsonschema
import pytest
import yaml

from conftest import EXAMPLE_CASES, REPO
from j6doctor.probes import InputError
from j6doctor.probes.case_file import case_from_data, case_schema
from j6doctor.probes.written_case_schema import written_case_schema


@pytest.fixture(scope="module")
def validator():
    proc = subprocess.run([sys.executable, "-m", "j6doctor", "schema", "case"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    schema = json.loads(proc.stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _load(path):
    text = path.read_text(encoding="utf-8")
    return json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)


@pytest.mark.parametrize("path", EXAMPLE_CASES, ids=lambda p: p.name)
def test_every_bundled_case_is_valid(path, validator):
    validator.validate(_load(path))


def test_every_rule_example_case_is_valid(rulebase, validator):
    checked = 0
    for rule in rulebase.with_examples().rules:
        for example in rule.examples:
            errors = [e.message for e in validator.iter_errors(example.case)]
            assert not errors, (rule.id, example.name, errors[:3])
            checked += 1
    assert checked > 800


def _case_blocks():
    """```yaml blocks of the docs whose top-level keys are all case keys."""
    keys = set(case_schema()["properties"])
    for doc in (REPO / "README.md", REPO / "docs" / "usage.md", REPO / "docs" / "CONTRACT.md",
                REPO / "docs" / "AUTHORING.md"):
        for block in re.findall(r"```yaml\n(.*?)```", doc.read_text(encoding="utf-8"), re.S):
            try:
                data = yaml.safe_load(block)
            except yaml.YAMLError:
                continue
            if isinstance(data, dict) and data and set(data) <= keys:
                data.pop("answers", None)  # its keys are a rule pack's gate items (docs/CONTRACT.md)
                yield doc.name, data


def test_the_case_blocks_of_the_docs_are_valid(validator):
    blocks = list(_case_blocks())
    assert len(blocks) >= 3
    for doc, data in blocks:
        errors = [e.message for e in validator.iter_errors(data)]
        assert not errors, (doc, data, errors[:3])


WRITTEN = [  # what users write: each is read by the tool and valid in the published schema
    {"results": {"Quantized-BC": "掉点", "QAT BC": {"status": "OK", "evidence": "Dataset_Eval"}}},
    {"flow": "PTQ", "results": {"calibrated_model": "normal", "quantized_model": {"status": "bad", "value": "1e-05"}}},
    {"metrics": "eval.csv", "bc_flow_check": "inconsistent", "fake_quant_off_check": "Consistent"},
    {"deployment": {"checklist": {"layout": "mismatch"}}, "user_checks": {"preprocess": {"status": "ok"}}},
    {"metrics": {"file": "eval.csv", "tolerance": "2e-2"}},
    None,  # an empty file
]
REFUSED = [  # refused by the tool for their shape, and invalid in the published schema
    {"platfrom": "J6M"},
    {"results": {"qat_bc": {"status": "maybe"}}},
    {"results": {"banana_model": "normal"}},
    {"results": {"qat_bc": {"status": "normal", "colour": "red"}}},
    {"bc_flow_check": "perhaps"},
    {"metrics": {"tolerance": -1}},
    {"badcase": {"path": "x.jpg"}},
    # the evidence not said is left out (`unspecified` is the tool's own word for that)
    {"results": {"board": {"status": "abnormal", "evidence": "unspecified"}}},
]


@pytest.mark.parametrize("data", WRITTEN, ids=range(len(WRITTEN)))
def test_what_users_write_is_read_and_valid(data, validator):
    case_from_data(data or {})
    validator.validate(data)


@pytest.mark.parametrize("data", REFUSED, ids=range(len(REFUSED)))
def test_what_the_tool_refuses_is_invalid(data, validator):
    with pytest.raises(InputError):
        case_from_data(data)
    assert list(validator.iter_errors(data))


def test_aliases_in_the_schema_come_from_the_vocabulary():
    schema = written_case_schema()
    names = schema["properties"]["results"]["propertyNames"]
    assert re.search(names["pattern"], "Calibrated-Model") and not re.search(names["pattern"], "calibrated_modelx")
    status = schema["properties"]["results"]["additionalProperties"]["anyOf"][1]
    assert re.search(status["pattern"], "异常") and re.search(status["pattern"], " Normal ")
