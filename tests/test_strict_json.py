"""One strict JSON reader (engine/strict_yaml.load_json) for every JSON input with lines:
the case file and the metrics file. What it refuses carries the line; what it reads carries
the line of every key path (a metrics row in JSON is named by its line, as in YAML)."""

from __future__ import annotations

import pytest

from j6doctor.engine.strict_yaml import MAX_DEPTH, MAX_NODES, YamlInputError, load_json
from j6doctor.probes.metrics_file import read_metrics


def test_every_key_path_has_its_line():
    doc = load_json('{\n  "symptom": "x",\n  "results": {\n    "board": {"status": "abnormal"}\n  }\n}\n')
    assert doc.data["results"]["board"]["status"] == "abnormal"
    assert doc.line_of(("symptom",)) == 2 and doc.line_of(("results", "board")) == 4


@pytest.mark.parametrize("text,message,line", [
    ('{\n "a": 1,\n "a": 2\n}', "duplicate key", 3),
    ('{\n "a": 1,\n "b": NaN\n}', "NaN is not a valid number in a document", 3),
    ('{\n "a": "NaN",\n "b": -Infinity\n}', "-Infinity is not a valid number in a document", 3),
    ('{\n "a": 1,\n "b": \n}', "not valid JSON: Expecting value", 4),
    ('{"a": 1' + '0' * 5000 + '}', "not valid JSON: Exceeds the limit", None),
    # a duplicate key before a syntax error: the syntax error is said (the decoder stops at the first)
    ('{\n "a": {"b": 1, "b": 2},\n "c": ]}', "not valid JSON: Expecting value", 3),
    ('{\n "a": {"b": 1, "b": 2}\n', "not valid JSON: Expecting ',' delimiter", 3),
])
def test_what_it_refuses_is_named_with_its_line(text, message, line):
    with pytest.raises(YamlInputError) as refused:
        load_json(text)
    assert refused.value.message.startswith(message) and refused.value.line == line


def test_nesting_and_size_are_bounded_on_every_python():
    with pytest.raises(YamlInputError) as deep:
        load_json("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    assert "nesting is too deep" in deep.value.message
    with pytest.raises(YamlInputError) as large:
        load_json("[" + "0," * (MAX_NODES + 1) + "0]", "a case file")
    assert large.value.message.startswith(f"more than {MAX_NODES} values; a case file holds a few thousand")
    assert large.value.line == 1


def _metrics(tmp_path, *rows: tuple[str, str]):
    """A metrics.json of one mAP row per (artifact, value as written), one row a line."""
    path = tmp_path / "metrics.json"
    lines = ",\n".join(f'  {{"artifact": "{a}", "metric": "mAP", "value": {v}}}' for a, v in rows)
    path.write_text(f"[\n{lines}\n]\n", encoding="utf-8")
    return read_metrics(path, "metrics.json")


def test_a_json_metrics_row_is_named_by_its_line(tmp_path):
    rows = _metrics(tmp_path, ("qat_pt", "41.2"), ("qat_bc", "41.0"), ("no_such_model", "40.0"))
    assert [r.line for r in rows] == [2, 3]
    assert [item.line for item in rows.skipped.kept] == [4]


def test_a_json_metrics_row_with_nan_is_skipped_with_its_line_and_the_others_are_read(tmp_path):
    """json.dump writes NaN: the row is skipped, as a YAML .nan is, and the others judged."""
    rows = _metrics(tmp_path, ("qat_pt", "41.2"), ("quantized_bc", "NaN"), ("qat_bc", "41.0"))
    assert [(r.artifact, r.line) for r in rows] == [("qat_pt", 2), ("qat_bc", 4)]
    assert [item.line for item in rows.skipped.kept] == [3]
