"""The published JSON Schema of the verdict (`j6doctor schema verdict`): every bundled
example's verdict validates against it, it refuses what the layout does not have, and the
verdict names its schema version and the tool that made it."""

from __future__ import annotations

import copy
import json

import jsonschema
import pytest

from conftest import EXAMPLES, EXAMPLE_CASES
from j6doctor import __version__
from j6doctor.cli import main
from j6doctor.diagnosis import diagnose_file
from j6doctor.verdict_model import SCHEMA_VERSION
from j6doctor.verdict_schema import verdict_schema

CASES = EXAMPLE_CASES


@pytest.fixture(scope="module")
def validator():
    schema = verdict_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.name)
def test_every_bundled_example_verdict_validates(path, rulebase, validator):
    verdict = diagnose_file(path, rulebase).verdict_json
    validator.validate(verdict)
    assert verdict["schema_version"] == SCHEMA_VERSION
    assert verdict["tool"] == {"name": "j6doctor", "version": __version__}
    assert list(verdict)[:3] == ["schema_version", "tool", "stage"]


def test_the_schema_refuses_what_the_layout_does_not_have(rulebase, validator):
    verdict = diagnose_file(EXAMPLES / "convert_j6m.yaml", rulebase).verdict_json
    cases = []
    extra = copy.deepcopy(verdict)
    extra["surprise"] = 1
    cases.append(extra)
    wrong_stage = copy.deepcopy(verdict)
    wrong_stage["stage"] = "somewhere"
    cases.append(wrong_stage)
    no_rule = copy.deepcopy(verdict)
    no_rule["conclusion"][0].pop("rule")
    cases.append(no_rule)
    old = copy.deepcopy(verdict)
    old["schema_version"] = "0.9"
    cases.append(old)
    for broken in cases:
        with pytest.raises(jsonschema.ValidationError):
            validator.validate(broken)


@pytest.mark.parametrize("what, title", [("verdict", "j6doctor verdict"), ("case", "j6doctor case file"),
                                         ("rule", None)])
def test_schema_command_prints_each_schema(what, title, capsys):
    main(["schema", what])
    schema = json.loads(capsys.readouterr().out)
    jsonschema.Draft202012Validator.check_schema(schema)
    if title:
        assert schema["title"] == title
    if what == "case":  # a bundled case is valid under the printed case schema
        import yaml
        data = yaml.safe_load((EXAMPLES / "convert_j6m.yaml").read_text(encoding="utf-8"))
        jsonschema.Draft202012Validator(schema).validate(data)
