"""Sensitivity tables (FORMATS.md §6, §13.4) against the synthetic fixtures and EXPECTED.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import judged, sensitivity_shape, write_file
from j6doctor.probes.input_error import InputError
from j6doctor.probes.sensitivity import (
    SensitivityName,
    parse_sensitivity_name,
    read_sensitivity_txt,
    summarize_sensitivity,
)

FORMATS = Path(__file__).parent / "fixtures" / "formats"
QA = FORMATS / "horizon_quant_analysis"
EXPECTED = json.loads((FORMATS / "EXPECTED.json").read_text(encoding="utf-8"))["sensitivity"]
L1_FILE = "output_bbox_pred_L1_sensitive_ops.txt"
COS_FILE = "output_cls_score_Cosine_sensitive_ops.txt"


# --- file names ------------------------------------------------------------------------

@pytest.mark.parametrize("filename, expected", [
    (L1_FILE, SensitivityName("bbox_pred", "L1", None, None)),
    (COS_FILE, SensitivityName("cls_score", "Cosine", None, None)),
    ("output__L1_sensitive_ops.txt", SensitivityName("", "L1", None, None)),
    ("output_pred_boxes_Cosine_sensitive_ops.txt", SensitivityName("pred_boxes", "Cosine", None, None)),
    ("output_0_case_2_ATOL_sensitive_ops.txt", SensitivityName("0", "ATOL", 2, None)),
    ("output_0-0_dataindex_1_sensitive_ops.pt", SensitivityName("0-0", None, None, 1)),
    ("sensitive_ops.txt", SensitivityName("", None, None, None)),
    ("sensitive_ops.pt", SensitivityName("", None, None, None)),
    ("output_0-1_MSE_sensitive_ops.pt", SensitivityName("0-1", "MSE", None, None)),
    ("output_manual_set_input_0_KL_sensitive_ops.txt", SensitivityName("manual_set_input_0", "KL", None, None)),
    ("output_1_COSINE_sensitive_ops.txt", SensitivityName("1", "COSINE", None, None)),
    ("output_x_sqnr_sensitive_ops.txt", SensitivityName("x", "sqnr", None, None)),
    ("some/dir/output_a_b_L1_sensitive_ops.txt", SensitivityName("a_b", "L1", None, None)),
])
def test_parse_sensitivity_name(filename, expected):
    assert parse_sensitivity_name(filename) == expected


@pytest.mark.parametrize("filename", [
    "badcase.txt", "compare_per_layer_out.txt", "output_a_L1_topk_error.txt",
    "output_a_L1_sensitive_ops.csv", "x_sensitive_ops.txt",
])
def test_parse_sensitivity_name_rejects_other_files(filename):
    assert parse_sensitivity_name(filename) is None


# --- fixtures --------------------------------------------------------------------------

def test_l1_fixture_matches_expected():
    truth = EXPECTED[L1_FILE]
    table = read_sensitivity_txt(QA / L1_FILE)
    assert table.display == L1_FILE
    assert table.name == SensitivityName("bbox_pred", "L1", None, None)
    assert table.metric == "L1"
    assert len(table.rows) == truth["rows"] == 24
    assert table.order == truth["order"] == "descending"
    first = table.rows[0]
    assert (first.rank, first.line, first.op_name) == (0, 3, truth["top"])
    assert first.sensitive_type == "activation"
    assert first.op_type == "<class 'horizon_plugin_pytorch.nn.qat.conv2d.Conv2d'>"
    assert first.value == pytest.approx(0.288411)
    assert (first.quant_dtype, first.flops) == ("qint8", "4718592(14.23%)")
    # backbone.layer3.conv2 appears twice: activation + weight
    twice = [r for r in table.rows if r.op_name == "backbone.layer3.conv2"]
    assert [r.sensitive_type for r in twice] == ["activation", "weight"]
    # g-format values: 5.021e-05 and a plain 0
    by_key = {(r.op_name, r.sensitive_type): r for r in table.rows}
    assert by_key["head.reg_conv1", "activation"].value == pytest.approx(5.021e-05)
    assert by_key["head.reg_conv1", "activation"].quant_dtype == "qint16"
    assert by_key["neck.add", "activation"].op_type.endswith("functional_modules.FloatFunctional'>")
    assert by_key["neck.add", "activation"].flops == "0(0%)"
    assert table.rows[-1].value == 0.0
    assert [r.rank for r in table.rows] == list(range(24))
    assert [r.line for r in table.rows] == list(range(3, 27))


def test_cosine_fixture_matches_expected():
    truth = EXPECTED[COS_FILE]
    table = read_sensitivity_txt(QA / COS_FILE, display="qa/" + COS_FILE)
    assert table.display == "qa/" + COS_FILE
    assert table.metric == "Cosine"
    assert len(table.rows) == truth["rows"]
    assert table.order == truth["order"] == "ascending"
    assert table.rows[0].op_name == truth["top"]
    last = table.rows[-1]
    assert last.value == 1.0
    raw = (QA / COS_FILE).read_text(encoding="utf-8").split("\n")[last.line - 1]
    assert f"  {truth['tail_value_rendered_as']}  " in raw


def test_summary_of_l1_fixture_is_dominant(rulebase):
    summary = summarize_sensitivity(read_sensitivity_txt(QA / L1_FILE))
    assert summary.top.op_name == "backbone.layer3.conv2"
    assert summary.top.sensitive_type == "activation"
    assert summary.runner_up is not None and summary.runner_up.op_name == "neck.lateral.conv"
    assert summary.metric_kind == "error" and summary.top_distance == summary.top.value
    assert summary.next_share == pytest.approx(summary.runner_up.value / summary.top.value)
    assert sensitivity_shape(rulebase, QA / L1_FILE) == {"dominant"}
    assert [r.op_name for r in summary.top_ops] == [
        "backbone.layer3.conv2", "neck.lateral.conv", "neck.add", "backbone.layer4.conv",
        "neck.reduce.conv"]


def test_summary_of_cosine_fixture_is_dominant(rulebase):
    summary = summarize_sensitivity(read_sensitivity_txt(QA / COS_FILE))
    assert summary.top.op_name == "backbone.layer3.conv2"
    assert summary.runner_up.op_name == "neck.lateral.conv"
    assert summary.metric_kind == "similarity"
    assert summary.top_distance == pytest.approx(1 - summary.top.value)
    assert sensitivity_shape(rulebase, QA / COS_FILE) == {"dominant"}
    assert len(summary.top_ops) == 5


# --- hand-made tables --------------------------------------------------------------------

def simple_table(metric: str, rows: list[tuple[str, str, str]], flops: bool = True) -> str:
    """A tabulate-simple table like the writer's (values given as rendered text)."""
    head = ["op_name", "sensitive_type", "op_type", metric, "quant_dtype"] + (["flops"] if flops else [])
    cells = [[op, kind, "<class 'horizon_plugin_pytorch.nn.qat.conv2d.Conv2d'>", value, "qint8"]
             + (["0(0%)"] if flops else []) for op, kind, value in rows]
    widths = [max(len(h) + 2, *(len(r[i]) for r in cells)) for i, h in enumerate(head)]
    numeric = 3

    def render(row: list[str]) -> str:
        parts = [c.rjust(w) if i == numeric else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))]
        return "  ".join(parts).rstrip()

    lines = [render(head), "  ".join("-" * w for w in widths)] + [render(r) for r in cells]
    return "\n".join(lines)


def test_accumulation_pattern(tmp_path, rulebase):
    rows = [("a.conv", "activation", "0.1"), ("b.conv", "activation", "0.09"),
            ("c.conv", "activation", "0.085"), ("d.conv", "activation", "0.08"),
            ("a.conv", "weight", "0.02"), ("e.conv", "activation", "0.001"),
            ("f.conv", "weight", "0.0005"), ("g.conv", "weight", "0.0001")]
    path = write_file(tmp_path, "output_0_MSE_sensitive_ops.txt", simple_table("MSE", rows))
    table = read_sensitivity_txt(path)
    assert table.order == "descending"
    summary = summarize_sensitivity(table)
    assert (summary.next_share, summary.third_share) == (pytest.approx(0.9), pytest.approx(0.85))
    assert sensitivity_shape(rulebase, path) == {"accumulation"}
    assert summary.top.op_name == "a.conv"
    assert summary.runner_up.op_name == "b.conv"


def test_flat_pattern_when_nothing_moves_the_output(tmp_path, rulebase):
    rows = [("a", "activation", "0.9999"), ("b", "activation", "0.99995"), ("c", "weight", "1")]
    path = write_file(tmp_path, "output_x_Cosine_sensitive_ops.txt", simple_table("Cosine", rows))
    summary = summarize_sensitivity(read_sensitivity_txt(path))
    assert summary.top_distance == pytest.approx(0.0001)
    assert sensitivity_shape(rulebase, path) == {"flat"}
    assert judged(rulebase, path, "sensitivity_quiet", "path") == {path.name}


def test_three_close_cosine_ops_are_an_accumulation(tmp_path, rulebase):
    rows = [("a", "activation", "0.5"), ("b", "activation", "0.6"), ("c", "weight", "0.7"),
            ("d", "weight", "0.8")]
    path = write_file(tmp_path, "output_x_Cosine_sensitive_ops.txt", simple_table("Cosine", rows))
    summary = summarize_sensitivity(read_sensitivity_txt(path))
    assert (summary.next_share, summary.third_share) == (pytest.approx(0.8), pytest.approx(0.6))
    assert sensitivity_shape(rulebase, path) == {"accumulation"}  # distances 0.5, 0.4, 0.3


def test_flat_pattern_between_dominant_and_accumulation(tmp_path, rulebase):
    rows = [("a", "activation", "0.5"), ("b", "activation", "0.7"), ("c", "weight", "0.9"),
            ("d", "weight", "0.99")]
    path = write_file(tmp_path, "output_x_Cosine_sensitive_ops.txt", simple_table("Cosine", rows))
    assert sensitivity_shape(rulebase, path) == {"flat"}  # 0.5 vs 0.3: not 3x apart, and only two ops close


def test_sqnr_ascending_and_worst_first(tmp_path, rulebase):
    rows = [("a", "activation", "5.5"), ("b", "activation", "31"), ("c", "weight", "40"),
            ("d", "weight", "inf")]
    path = write_file(tmp_path, "output_y_SQNR_sensitive_ops.txt", simple_table("SQNR", rows))
    table = read_sensitivity_txt(path)
    assert table.order == "ascending"
    summary = summarize_sensitivity(table)
    assert (summary.top.op_name, summary.metric_kind) == ("a", "snr")
    assert summary.top_distance == pytest.approx(10 ** (-5.5 / 20))
    assert sensitivity_shape(rulebase, path) == {"dominant"}


def test_reversed_file_still_reports_the_worst_op(tmp_path):
    # reverse=True writes L1 ascending; the worst op is still the largest value
    rows = [("a", "weight", "0"), ("b", "activation", "0.001"), ("c", "activation", "0.5")]
    table = read_sensitivity_txt(write_file(tmp_path, "output_0_L1_sensitive_ops.txt",
                                       simple_table("L1", rows)))
    assert table.order == "ascending"
    assert summarize_sensitivity(table).top.op_name == "c"


def test_unsorted_order_and_old_table_without_flops(tmp_path):
    rows = [("a", "activation", "0.2"), ("b", "activation", "0.5"), ("c", "weight", "0.1")]
    table = read_sensitivity_txt(write_file(tmp_path, "sensitive_ops.txt",
                                       simple_table("L1", rows, flops=False)))
    assert table.order == "unsorted"
    assert table.name == SensitivityName("", None, None, None)
    assert all(r.flops is None for r in table.rows)
    assert summarize_sensitivity(table).top.op_name == "b"


def test_cells_with_spaces_and_blank_quant_dtype(tmp_path):
    text = simple_table("L1", [("a", "activation", "0.3"), ("b", "weight", "0.1")])
    text = text.replace("qint8", "     ", 1)  # quantized analysis: blank quant_dtype
    table = read_sensitivity_txt(write_file(tmp_path, "output_0_L1_sensitive_ops.txt", text + "\n"))
    assert table.rows[0].quant_dtype is None
    assert table.rows[1].quant_dtype == "qint8"
    assert table.rows[0].op_type == "<class 'horizon_plugin_pytorch.nn.qat.conv2d.Conv2d'>"


PSQL_V33 = """\
+-----------+------------------+---------------+--------+---------------+---------+------------------+
| op_name   | sensitive_type   | op_type       |   ATOL | quant_dtype   | flops   |   clamp_error(%) |
|-----------+------------------+---------------+--------+---------------+---------+------------------|
| a b       | activation       | <class 'x.Y'> |   0.5  | qint8         | 1(0.5%) |              3.2 |
| c         | weight           | <class 'x.Z'> |   0.25 |               | 0(0%)   |              0   |
+-----------+------------------+---------------+--------+---------------+---------+------------------+"""


def test_psql_table_with_extra_column(tmp_path):
    table = read_sensitivity_txt(write_file(tmp_path, "output_0_case_1_ATOL_sensitive_ops.txt", PSQL_V33))
    assert table.name == SensitivityName("0", "ATOL", 1, None)
    assert table.metric == "ATOL"
    assert table.order == "descending"
    assert [(r.op_name, r.sensitive_type, r.op_type, r.value, r.quant_dtype, r.flops)
            for r in table.rows] == [
        ("a b", "activation", "<class 'x.Y'>", 0.5, "qint8", "1(0.5%)"),
        ("c", "weight", "<class 'x.Z'>", 0.25, None, "0(0%)")]
    assert [r.line for r in table.rows] == [4, 5]


def test_psql_table_without_closing_border_keeps_its_rows(tmp_path):
    whole = read_sensitivity_txt(write_file(tmp_path, "output_0_ATOL_sensitive_ops.txt", PSQL_V33))
    text = "\n".join(PSQL_V33.split("\n")[:-1])
    table = read_sensitivity_txt(write_file(tmp_path, "output_0_ATOL_sensitive_ops.txt", text))
    assert table.op_names == whole.op_names and table.values == whole.values
    (item,) = table.skipped.kept
    assert "without its closing +---+ border" in item.reason


# --- broken input ----------------------------------------------------------------------

def fixture_text() -> str:
    return (QA / L1_FILE).read_text(encoding="utf-8")


@pytest.mark.parametrize("label, content, fragment", [
    ("empty", b"", "empty file"),
    ("blank", b"\n  \n", "empty file"),
    ("NUL bytes", b"op_name\x00\x00sensitive", "binary data"),
    ("non-UTF-8", b"op_name  sensitive_type\n\xff\xfe\n", "not UTF-8"),
    ("header only", b"op_name  sensitive_type  op_type  L1  quant_dtype  flops", "dash rule"),
    ("no rows", fixture_text().split("\n", 2)[0].encode() + b"\n" + fixture_text().split("\n")[1].encode(),
     "no readable data rows"),
    ("only row cut", "\n".join(fixture_text().split("\n")[:2] + [fixture_text().split("\n")[2][:30]]).encode(),
     "no readable data rows: expected a number in column 'L1', found nothing"),
    ("wrong header", (QA / "badcase.txt").read_bytes(), "expected the header line"),
    ("header without op_type", fixture_text().replace("op_type", "kind   ", 1).encode(), "header lacks"),
])
def test_broken_input_raises_input_error_naming_the_file(tmp_path, label, content, fragment):
    path = write_file(tmp_path, L1_FILE, content)
    with pytest.raises(InputError) as info:
        read_sensitivity_txt(path)
    assert info.value.file == L1_FILE
    assert fragment in info.value.message
    assert "expected" in info.value.message or "truncated" in info.value.message


@pytest.mark.parametrize("label, content, rows, skipped", [
    ("truncated mid-row", fixture_text()[:fixture_text().index("neck.add") + 60], 2,
     [(5, "expected a number in column 'L1', found nothing (row cut?)")]),
    ("not a number", fixture_text().replace("0.288411", "abc     "), 23, [(3, "expected a number")]),
    ("trailing garbage", fixture_text() + "\n\nTraceback (most recent call last):", 24,
     [(28, "text after the table, lines 28-28, not read")]),
])
def test_cut_and_edited_tables_keep_their_readable_rows(tmp_path, label, content, rows, skipped):
    table = read_sensitivity_txt(write_file(tmp_path, L1_FILE, content))
    assert len(table) == rows
    assert [(item.line, fragment in item.reason) for item, (_, fragment) in zip(table.skipped.kept, skipped)] \
        == [(line, True) for line, _ in skipped], table.skipped
    assert len(table.skipped) == len(skipped)


def test_missing_file_raises_input_error(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_sensitivity_txt(tmp_path / L1_FILE)


def test_trailing_newline_and_crlf_are_accepted(tmp_path):
    text = fixture_text().replace("\n", "\r\n") + "\r\n"
    table = read_sensitivity_txt(write_file(tmp_path, L1_FILE, text))
    assert len(table.rows) == 24 and table.rows[-1].flops == "40960(0.12%)"
