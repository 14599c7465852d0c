"""Evaluation results file → normal / abnormal per artifact against the qat.pt baseline."""

from __future__ import annotations

import pytest

from j6doctor.probes import InputError
from j6doctor.probes.metrics_file import judge, read_metrics
from j6doctor.probes.tolerance import Tolerance

CSV = ("artifact,metric,value,dataset,frames\n"
       "qat_pt,mAP,41.2,val,5000\n"
       "qat.bc,mAP,41.0,val,5000\n"
       "quantized.bc,mAP,36.0,val,5000\n"
       "board,mAP,35.0,val,1\n")


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def statuses(judgements):
    return {j.artifact: (j.status, j.evidence) for j in judgements}


def test_relative_tolerance_and_single_frame(tmp_path):
    rows = read_metrics(write(tmp_path, "m.csv", CSV))
    judgements, notes = judge(rows, Tolerance(0.01))
    assert statuses(judgements) == {
        "qat_pt": ("normal", "dataset_eval"), "qat_bc": ("normal", "dataset_eval"),
        "quantized_bc": ("abnormal", "dataset_eval"), "board": ("abnormal", "single_frame")}
    quantized = next(j for j in judgements if j.artifact == "quantized_bc")
    assert quantized.baseline == 41.2 and quantized.drop == pytest.approx(5.2)
    assert quantized.threshold == pytest.approx(0.412) and quantized.row.line == 4
    assert notes == []


def test_absolute_tolerance(tmp_path):
    rows = read_metrics(write(tmp_path, "m.csv", CSV))
    judgements, _ = judge(rows, Tolerance(6.0, relative=False))
    assert statuses(judgements)["quantized_bc"] == ("normal", "dataset_eval")


def test_lower_is_better(tmp_path):
    text = "artifact,metric,value\nqat_pt,L1,0.10\nquantized_bc,L1,0.30\nqat_bc,L1,0.05\n"
    judgements, _ = judge(read_metrics(write(tmp_path, "m.csv", text)), Tolerance(0.5, higher_is_better=False))
    assert statuses(judgements)["quantized_bc"][0] == "abnormal"
    assert statuses(judgements)["qat_bc"][0] == "normal"


def test_worst_metric_decides_and_missing_baseline_is_noted(tmp_path):
    text = ("artifact,metric,value\nqat_pt,mAP,40\nqat_pt,NDS,50\nquantized_bc,mAP,39.9\n"
            "quantized_bc,NDS,45\nquantized_bc,mIoU,60\n")
    judgements, notes = judge(read_metrics(write(tmp_path, "m.csv", text)), Tolerance(0.01))
    quantized = next(j for j in judgements if j.artifact == "quantized_bc")
    assert quantized.status == "abnormal" and quantized.row.metric == "NDS"
    assert notes == ["line 6: no qat_pt baseline for mIoU; row not judged"]


@pytest.mark.parametrize("name,text", [
    ("m.yaml", "- {artifact: qat_pt, metric: mAP, value: 41.2}\n- {artifact: quantized_bc, metric: mAP, value: 36}\n"),
    ("m.yaml", "results:\n  - {artifact: qat_pt, metric: mAP, value: 41.2}\n  - {artifact: quantized_bc, metric: mAP, value: 36}\n"),
    ("m.json", '[{"artifact": "qat_pt", "metric": "mAP", "value": 41.2}, {"artifact": "quantized_bc", "metric": "mAP", "value": 36}]'),
])
def test_yaml_and_json(tmp_path, name, text):
    judgements, _ = judge(read_metrics(write(tmp_path, name, text)), Tolerance())
    assert statuses(judgements)["quantized_bc"][0] == "abnormal"


@pytest.mark.parametrize("name,text,line,fragment", [
    ("m.csv", "", 1, "empty"),
    ("m.csv", "model,score\nqat_pt,1\n", 1, "lacks artifact, metric, value"),
    ("m.csv", "artifact,metric,value\nqat_pt,mAP,high\n", 2, "is not a number"),
    ("m.csv", "artifact,metric,value\nqat_pt,mAP,nan\n", 2, "not a finite number"),
    ("m.csv", "artifact,metric,value\nqat_pc,mAP,1\n", 2, "unknown artifact 'qat_pc'"),
    ("m.csv", "artifact,metric,value\nqat_pt,mAP,1,extra\n", 2, "more fields than the header"),
    ("m.csv", "artifact,metric,value,frames\nqat_pt,mAP,1,0\n", 2, "frames must be at least 1"),
    ("m.yaml", "- {artifact: qat_pt, metric: mAP, value: 1, color: red}\n", 1, "unknown column 'color'"),
    ("m.yaml", "qat_pt: 1\n", None, "expected a list of rows"),
    ("m.json", "[{", 1, "not valid JSON"),
    ("m.txt", "x", None, "ends in .csv"),
])
def test_bad_metrics_files(tmp_path, name, text, line, fragment):
    with pytest.raises(InputError) as info:
        read_metrics(write(tmp_path, name, text))
    assert info.value.line == line and fragment in info.value.render() and name in info.value.render()


def test_binary_metrics_file(tmp_path):
    path = tmp_path / "m.csv"
    path.write_bytes(b"\x00\x01\x02")
    with pytest.raises(InputError, match="binary data"):
        read_metrics(path)


def test_a_bad_row_among_good_ones_is_skipped_and_noted(tmp_path):
    text = ("artifact,metric,value,dataset\nqat_pt,mAP,41.2,val\nqat_bc,mAP,high,val\n"
            "quantized_bc,mAP,36.0,val,extra\nquantized_bc,mAP,36.0,val\n")
    rows = read_metrics(write(tmp_path, "m.csv", text))
    assert [(r.line, r.artifact) for r in rows] == [(2, "qat_pt"), (5, "quantized_bc")]
    assert [(s.line, s.reason) for s in rows.skipped.kept] == [
        (3, "value 'high' is not a number"), (4, "more fields than the header; quote a value that holds a comma")]
    judgements, notes = judge(rows, Tolerance(0.01))
    assert [j.artifact for j in judgements] == ["qat_pt", "quantized_bc"]
    assert notes == ["line 3: value 'high' is not a number; row not read",
                     "line 4: more fields than the header; quote a value that holds a comma; row not read"]


def test_a_bad_yaml_row_is_skipped(tmp_path):
    text = "- {artifact: qat_pt, metric: mAP, value: 41}\n- {artifact: qat_pc, metric: mAP, value: 40}\n"
    rows = read_metrics(write(tmp_path, "m.yaml", text))
    assert [r.artifact for r in rows] == ["qat_pt"]
    (item,) = rows.skipped.kept
    assert item.line == 2 and "unknown artifact 'qat_pc'" in item.reason
