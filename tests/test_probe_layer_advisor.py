"""abnormal_layer_advisor.txt probe: the fixture against EXPECTED.json, one finding per
fragment with its kind, absent file = no findings, InputError for broken input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from j6doctor.probes import InputError
from j6doctor.probes.layer_advisor import fragments, read_layer_advisor

FORMATS = Path(__file__).parent / "fixtures" / "formats"
ADVISOR = FORMATS / "horizon_quant_analysis" / "abnormal_layer_advisor.txt"
EXPECTED = json.loads((FORMATS / "EXPECTED.json").read_text(encoding="utf-8"))
HEADERS = ["mod_name", "op_type", "abnormal_info", "advice"]


def psql(headers: list[str], rows: list[list[str]]) -> str:
    """tabulate's psql layout (written with f.write: no trailing newline)."""
    widths = [max(len(c) for c in col) for col in zip(headers, *rows)]
    border = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    line = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"
    rule = "|" + "+".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([border, line(headers), rule] + [line(r) for r in rows] + [border])


def advisor_file(tmp_path: Path, rows: list[list[str]]) -> Path:
    path = tmp_path / "abnormal_layer_advisor.txt"
    path.write_text(psql(HEADERS, rows), encoding="utf-8")
    return path


def test_fixture_matches_expected():
    findings = read_layer_advisor(ADVISOR).findings
    expected_modules = [row[0] for row in EXPECTED["abnormal_layer_advisor"]["rows"]]
    assert [f.mod_name for f in findings] == expected_modules
    assert [(f.mod_name, f.kind) for f in findings] == [
        ("quant", "asymmetric"), ("backbone.layer3.relu2", "int8_range")]
    quant, relu = findings
    assert (quant.line, quant.op_type, quant.text, quant.advice) == (
        4, "horizon_plugin_pytorch.nn.qat.stubs.QuantStub", "Asymmetric about 0.",
        "Do symmetric normalization about 0.")
    assert relu.line == 5 and relu.op_type == "torch.nn.modules.activation.ReLU"
    assert relu.text == "Data range 285.2091064453125 maybe too large for int8 quantization."
    assert relu.advice == "Please try qint16 quantization."


def test_absent_file_means_no_findings(tmp_path):
    assert read_layer_advisor(tmp_path / "abnormal_layer_advisor.txt").findings == []


def test_every_kind_and_multi_fragment_rows(tmp_path):
    rows = [
        ["quant", "<class 'horizon_plugin_pytorch.nn.qat.stubs.QuantStub'>",
         "Asymmetric about 0. Large input range 300.0 with qint8 output. ",
         "Do symmetric normalization about 0. Please use qint16 for the input. "],
        ["dequant", "DeQuantStub", "The outputs are not in high precision.",
         "Set activation=None on the last conv."],
        ["big", "torch.nn.modules.conv.Conv2d", "Total data range 70000.0 is too large.", ""],
        ["clip", "torch.nn.modules.conv.Conv2d",
         "The current scale does not cover the data range. Min -9.1 max 9.3.", "Set a fixed scale."],
        ["nan", "torch.nn.modules.conv.Conv2d", "Found inf/nan output.", ""],
        ["odd", "torch.nn.modules.conv.Conv2d", "Something new.", "Look at it."],
    ]
    findings = read_layer_advisor(advisor_file(tmp_path, rows)).findings
    assert [(f.mod_name, f.kind) for f in findings] == [
        ("quant", "asymmetric"), ("quant", "large_input_range"),
        ("dequant", "output_not_high_precision"), ("big", "total_range"),
        ("clip", "scale_coverage"), ("nan", "inf_nan"), ("odd", "other")]
    # Concatenated fragments keep their own advice when the counts match.
    assert findings[0].advice == "Do symmetric normalization about 0."
    assert findings[1].advice == "Please use qint16 for the input."
    assert findings[1].text == "Large input range 300.0 with qint8 output."
    assert findings[0].line == findings[1].line == 4
    # A sentence without a match token stays with the finding before it.
    assert findings[4].text == "The current scale does not cover the data range. Min -9.1 max 9.3."
    assert findings[5].advice == ""   # inf/nan rows have blank advice


def test_fragments_keep_numbers_intact():
    assert fragments("Data range 285.2 maybe too large for int8 quantization. ") == [
        ("int8_range", "Data range 285.2 maybe too large for int8 quantization.")]
    assert fragments("") == []


def test_multi_line_cell_is_merged(tmp_path):
    rows = [["m", "Conv2d", "Total data range 1e6", "Use a"],
            ["", "", "is too large.", "fixed scale."]]
    findings = read_layer_advisor(advisor_file(tmp_path, rows)).findings
    assert len(findings) == 1
    assert findings[0].text == "Total data range 1e6 is too large."
    assert findings[0].advice == "Use a fixed scale."


def _truncated() -> bytes:
    text = ADVISOR.read_text(encoding="utf-8")
    return text[:text.index("| backbone.layer3.relu2") + 40].encode()


BROKEN = [
    ("empty", b"", "empty file"),
    ("NUL bytes", b"+--+\n\x00", "binary"),
    ("not UTF-8", b"+----+\n| \xe9 |\n", "not UTF-8"),
    ("CSV", b"mod_name,op_type,abnormal_info,advice\nquant,QuantStub,x,y\n", "psql table"),
    ("other psql table", psql(["a", "b"], [["1", "2"]]).encode(), "mod_name | op_type"),
    ("header only, cut", ADVISOR.read_bytes().split(b"\n")[0] + b"\n" + ADVISOR.read_bytes().split(b"\n")[1]
     + b"\n" + ADVISOR.read_bytes().split(b"\n")[2] + b"\n| quant | Quant", "no readable row: row cut off"),
]


@pytest.mark.parametrize("label, data, findings, skipped", [
    ("truncated", _truncated(), 1, [(5, "row cut off"), (5, "without its closing +---+ border")]),
    ("missing closing border", ADVISOR.read_bytes().rsplit(b"\n", 1)[0] + b"\n\nmore", 2,
     [(5, "without its closing +---+ border")]),
])
def test_an_excerpt_keeps_its_rows_and_names_what_is_missing(tmp_path, label, data, findings, skipped):
    path = tmp_path / "abnormal_layer_advisor.txt"
    path.write_bytes(data)
    report = read_layer_advisor(path)
    assert len(report.findings) == findings
    assert [(item.line, fragment in item.reason) for item, (_, fragment) in zip(report.skipped.kept, skipped)] \
        == [(line, True) for line, _ in skipped], report.skipped


@pytest.mark.parametrize("label,data,fragment", BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_input_raises_input_error(tmp_path, label, data, fragment):
    path = tmp_path / "broken_advisor.txt"
    path.write_bytes(data)
    with pytest.raises(InputError) as info:
        read_layer_advisor(path)
    assert "broken_advisor.txt" in str(info.value)
    assert fragment in str(info.value)
