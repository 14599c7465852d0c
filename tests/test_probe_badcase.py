"""badcase.txt (FORMATS.md §7) against the synthetic fixture and EXPECTED.json."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from j6doctor.probes.badcase import read_badcase_txt
from j6doctor.probes.input_error import InputError

FORMATS = Path(__file__).parent / "fixtures" / "formats"
BADCASE = FORMATS / "horizon_quant_analysis" / "badcase.txt"
EXPECTED = json.loads((FORMATS / "EXPECTED.json").read_text(encoding="utf-8"))["badcase"]

# Rendered with tabulate 0.9.0 exactly as find_bad_case does, with a 6th "custom" metric
# column but only 6 headers: tabulate pads the header list on the left (headers shift right).
CUSTOM = (
    "The bad case input index of each output:\n"
    "    Name/Index    Cosine    MSE    L1    KL    SQNR\n"
    "--  ------------  --------  -----  ----  ----  ------\n"
    "0   12            12        7      3     12    5\n"
    "1   12            4         12     12    12    5\n"
    "\n"
    "The metric results of each badcase:\n"
    "    Name/Index    Cosine    MSE     L1       KL     SQNR\n"
    "--  ------------  --------  ------  -------  -----  ------\n"
    "0   0.981234      0.0123    0.0456  0.00031  17.25  0.5\n"
    "1   0.9712        0.0456    0.0789  0.0021   inf    0.25\n"
    "\n"
    "The bad case input index of the worst output:\n"
    "metric    dataloader index\n"
    "--------  ------------------\n"
    "Cosine    12\n"
    "MSE       4\n"
    "L1        12\n"
    "KL        12\n"
    "SQNR      12\n"
    "custom    5"
)


def write(tmp_path: Path, text: str | bytes, name: str = "badcase.txt") -> Path:
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


def test_fixture_matches_expected():
    report = read_badcase_txt(BADCASE)
    assert report.display == "badcase.txt"
    assert report.metrics == ["Cosine", "MSE", "L1", "KL", "SQNR"]
    assert list(report.index_by_output) == EXPECTED["names"] == ["cls_score", "bbox_pred"]
    assert report.worst_index == EXPECTED["worst_index"]
    assert report.sample_used_by_run() == EXPECTED["sample_used_by_run"] == 137
    assert report.lines == {"index": 1, "values": 7, "worst": 13}


def test_fixture_table_1_indices():
    report = read_badcase_txt(BADCASE)
    assert report.index_by_output == {
        "cls_score": {"Cosine": 137, "MSE": 137, "L1": 137, "KL": 58, "SQNR": 137},
        "bbox_pred": {"Cosine": 137, "MSE": 92, "L1": 137, "KL": 137, "SQNR": 137},
    }


def test_fixture_table_2_values():
    values = read_badcase_txt(BADCASE).value_by_output
    assert list(values) == ["cls_score", "bbox_pred"]
    expected = {
        "cls_score": [0.959171, 0.0731094, 0.18773, 0.0021322, 10.8854],
        "bbox_pred": [0.928613, 0.190335, 0.312174, 0.0009113, 8.41273],
    }
    for output, numbers in expected.items():
        assert list(values[output]) == ["Cosine", "MSE", "L1", "KL", "SQNR"]
        assert list(values[output].values()) == pytest.approx(numbers)


def test_outputs_disagree_per_metric():
    report = read_badcase_txt(BADCASE)
    assert report.outputs_disagree() is False          # L1: both 137
    assert report.outputs_disagree("MSE") is True      # 137 vs 92
    assert report.outputs_disagree("KL") is True       # 58 vs 137
    assert report.outputs_disagree("l1") is False      # case-insensitive
    assert report.outputs_disagree("nope") is False
    assert report.sample_used_by_run("MSE") == 92
    assert report.sample_used_by_run("kl") == 58
    assert report.sample_used_by_run("nope") is None


def test_custom_metric_with_shifted_headers(tmp_path):
    report = read_badcase_txt(write(tmp_path, CUSTOM), display="run1/badcase.txt")
    assert report.display == "run1/badcase.txt"
    assert report.metrics == ["Cosine", "MSE", "L1", "KL", "SQNR", "custom"]
    assert report.index_by_output == {
        "0": {"Cosine": 12, "MSE": 12, "L1": 7, "KL": 3, "SQNR": 12, "custom": 5},
        "1": {"Cosine": 12, "MSE": 4, "L1": 12, "KL": 12, "SQNR": 12, "custom": 5},
    }
    assert report.value_by_output["0"]["Cosine"] == pytest.approx(0.981234)
    assert report.value_by_output["0"]["custom"] == pytest.approx(0.5)
    assert math.isinf(report.value_by_output["1"]["SQNR"])
    assert report.worst_index["custom"] == 5
    assert report.sample_used_by_run() == 12
    assert report.outputs_disagree("L1") is True


def test_single_tensor_output_has_empty_name(tmp_path):
    text = BADCASE.read_text(encoding="utf-8")
    text = text.replace("cls_score     137       137    137   58    137\n", "")
    text = text.replace("cls_score     0.959171  0.0731094  0.18773   0.0021322  10.8854\n", "")
    text = text.replace("bbox_pred", "         ")
    report = read_badcase_txt(write(tmp_path, text + "\n"))
    assert list(report.index_by_output) == [""]
    assert report.index_by_output[""]["MSE"] == 92
    assert report.outputs_disagree("MSE") is False


def fixture_bytes() -> bytes:
    return BADCASE.read_bytes()


@pytest.mark.parametrize("label, content, fragment", [
    ("empty", b"", "empty file"),
    ("NUL bytes", b"The bad case\x00input index", "binary data"),
    ("non-UTF-8", b"The bad case input index of each output:\n\xe9\xff\n", "not UTF-8"),
    ("sensitivity table", (FORMATS / "horizon_quant_analysis" / "output_bbox_pred_L1_sensitive_ops.txt")
     .read_bytes(), "expected the heading"),
    ("heading only", b"The bad case input index of each output:\n", "dash rule"),
])
def test_a_file_without_a_readable_table_raises_input_error_naming_the_file(tmp_path, label, content, fragment):
    with pytest.raises(InputError) as info:
        read_badcase_txt(write(tmp_path, content))
    assert info.value.file == "badcase.txt"
    assert fragment in info.value.message


# Excerpts, cut and hand-edited copies: what is there is read, the rest named (line and why).
@pytest.mark.parametrize("label, content, fragments, outputs", [
    ("wrong first heading", fixture_bytes().replace(b"of each output:", b"per output:"),
     ["text that is no section of badcase.txt ('The bad case input index per output:'), lines 1-6, not read",
      "no section 'The bad case input index of each output:'"], 0),
    ("wrong header", fixture_bytes().replace(b"Name/Index", b"Output    "),
     ["expected the header 'Name/Index  Cosine  MSE  L1  KL  SQNR'"] * 2, 0),
    ("truncated after table 1", fixture_bytes()[:fixture_bytes().index(b"The metric results")],
     ["no section 'The metric results of each badcase:'",
      "no section 'The bad case input index of the worst output:'"], 2),
    ("truncated in table 2", fixture_bytes()[:fixture_bytes().index(b"bbox_pred     0.92")],
     ["no section 'The bad case input index of the worst output:'", "list different outputs"], 2),
    ("truncated in table 3", fixture_bytes()[:fixture_bytes().index(b"KL        58")], ["lacks KL, SQNR"], 2),
    ("truncated mid-row", fixture_bytes()[:-3], ["expected a data index (integer) for SQNR, found nothing",
                                                 "lacks SQNR"], 2),
    ("heading without table", fixture_bytes()[:fixture_bytes().index(b"metric    dataloader")], ["dash rule"], 2),
    ("index not an integer", fixture_bytes().replace(b"137       92", b"1.5       92"),
     ["expected a data index (integer) for Cosine, found '1.5'", "list different outputs"], 1),
    ("trailing text", fixture_bytes() + b"\n\nsomething else", ["('something else'), lines 22-22, not read"], 2),
])
def test_what_can_be_read_is_read_and_the_rest_named(tmp_path, label, content, fragments, outputs):
    report = read_badcase_txt(write(tmp_path, content))
    reasons = [item.reason for item in report.skipped.kept]
    assert len(reasons) == len(fragments), reasons
    for fragment in fragments:
        assert any(fragment in reason for reason in reasons), (fragment, reasons)
    assert len(report.index_by_output) == outputs


def test_wrong_heading_reports_its_line(tmp_path):
    text = fixture_bytes().replace(b"The metric results of each badcase:", b"Metric results:")
    report = read_badcase_txt(write(tmp_path, text))
    assert report.skipped.kept[0].line == 7 and "'Metric results:'" in report.skipped.kept[0].reason
    assert report.sample_used_by_run() == 137 and report.outputs_disagree("MSE")


def test_missing_file_raises_input_error(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_badcase_txt(tmp_path / "badcase.txt")
