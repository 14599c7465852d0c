"""engine/schema_certain.py may only ever spare jsonschema a document jsonschema accepts:
checked on documents generated from the real case schema (mostly well formed, with wrong
values, types and keys mixed in), and on the bundled example cases, which it must settle
without jsonschema."""

from __future__ import annotations

import sys
import subprocess
from pathlib import Path

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from j6doctor.engine.schema_certain import certainly_valid
from j6doctor.engine.strict_yaml import load_yaml
from j6doctor.probes.case_file import _Normalizer, case_schema

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((REPO / "examples" / "cases").glob("*.yaml"))

_JUNK = st.one_of(st.none(), st.booleans(), st.integers(-3, 10**20), st.floats(allow_nan=True),
                  st.text(max_size=6), st.lists(st.integers(), max_size=2),
                  st.dictionaries(st.text(max_size=4), st.integers(), max_size=2))


def _from_schema(schema, depth: int = 0):
    """Values shaped by a schema, wrong now and then."""
    if not isinstance(schema, dict) or depth > 6:
        return _JUNK
    options = []
    if "enum" in schema:
        options.append(st.sampled_from(schema["enum"]))
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds] if kinds else []
    for kind in kinds:
        if kind == "object":
            props = schema.get("properties") or {}
            fixed = st.fixed_dictionaries({}, optional={k: _from_schema(v, depth + 1) for k, v in props.items()})
            extra = schema.get("additionalProperties")
            if isinstance(extra, dict):
                fixed = st.dictionaries(st.text(min_size=1, max_size=8), _from_schema(extra, depth + 1), max_size=3)
            options.append(fixed)
        elif kind == "array":
            options.append(st.lists(_from_schema(schema.get("items", {}), depth + 1), max_size=3))
        elif kind == "string":
            options.append(st.text(max_size=8))
        elif kind == "number":
            options.append(st.one_of(st.integers(-5, 5), st.floats(-1e6, 1e6)))
        elif kind == "integer":
            options.append(st.integers(-5, 5))
        elif kind == "boolean":
            options.append(st.booleans())
    if not options:
        options.append(_JUNK)
    return st.one_of(*options, _JUNK) if depth else st.one_of(*options)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_document_it_passes_is_one_jsonschema_accepts(data):
    schema = case_schema()
    document = data.draw(_from_schema(schema))
    if certainly_valid(document, schema):
        errors = list(jsonschema.Draft202012Validator(schema).iter_errors(document))
        assert not errors, (document, [e.message for e in errors])


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_the_bundled_cases_are_settled_without_jsonschema(path):
    doc = load_yaml(path.read_text(encoding="utf-8"))
    data = _Normalizer(doc).run(doc.data or {})
    assert certainly_valid(data, case_schema())


@pytest.mark.parametrize("document", [
    {"flow": "QAT!"}, {"results": {"board": {"status": "fine"}}}, {"results": {"board": {"note": "x"}}},
    {"symptom": 3}, {"unknown_key": 1}, {"results": {"board": {"status": True}}},
])
def test_it_leaves_a_wrong_case_to_jsonschema(document):
    assert not certainly_valid(document, case_schema())
    assert list(jsonschema.Draft202012Validator(case_schema()).iter_errors(document))


def test_a_valid_case_is_read_without_importing_jsonschema(tmp_path):
    code = ("import sys; from pathlib import Path; from j6doctor.probes.case_file import read_case; "
            f"read_case(Path({str(REPO / 'examples' / 'cases' / 'convert_j6m.yaml')!r})); "
            "print('jsonschema' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
