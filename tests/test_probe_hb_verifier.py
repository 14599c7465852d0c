"""hb_verifier output (REAL_FORMATS.md §R3) against invented fixtures in the real layout.

Fixtures (tests/fixtures/formats/real/hb_verifier/): the per-layer cosine table alone, the
consistency table alone (all True, and mixed), both tables inside a longer log with a
command line and an unrelated table, a table with `...` rows, CRLF line endings, trailing
spaces without a final newline; bad/ holds truncated and garbled variants.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from conftest import assert_refused, judged

from j6doctor.probes.artifacts import identify
from j6doctor.probes.hb_verifier import (
    COSINE_HEALTHY, ComparedModel, ConsistencyRow, CosineRow, parse_hb_verifier,
    read_hb_verifier,
)
from j6doctor.probes.input_error import InputError

FORMATS = Path(__file__).resolve().parent / "fixtures" / "formats"
HBV = FORMATS / "real" / "hb_verifier"
BAD = HBV / "bad"


def test_cosine_table_alone(rulebase):
    report = read_hb_verifier(HBV / "cosine_table.txt")
    assert report.display == "cosine_table.txt"
    assert len(report.layers) == 11
    assert report.layers[0] == CosineRow("Conv_0", "101", 0.999981, line=4, table=0)
    assert report.layers[-1] == CosineRow("Gemm_10", "logits", 0.962415, line=14, table=0)
    assert [row.line for row in report.layers] == list(range(4, 15))
    assert report.outputs == () and report.models == () and report.elided_lines == ()
    assert report.all_outputs_consistent() is None

    assert report.breaks()[0][0].node_name == "Conv_7"      # 0.999981 -> 0.941207
    assert report.breaks()[0][1] == pytest.approx(0.058774)
    assert judged(rulebase, HBV / "cosine_table.txt", "node_origin", "node") == {"Conv_7"}
    assert report.first_below().node_name == "Conv_7"
    assert report.worst_layer().node_name == "Relu_8"       # 0.938114


def test_consistency_table_all_true():
    report = read_hb_verifier(HBV / "consistency_all_true.txt")
    assert report.layers == ()
    assert report.outputs == (
        ConsistencyRow("cls_logits", True, 0, 80000, 0.0, 0.0, line=4),
        ConsistencyRow("bbox_deltas", True, 0, 16000, 0.0, 0.0, line=5),
    )
    assert report.all_outputs_consistent() is True
    assert report.inconsistent_outputs() == ()
    assert report.breaks() == [] and report.worst_layer() is None


def test_consistency_table_with_a_mismatch():
    report = read_hb_verifier(HBV / "consistency_mixed.txt")
    bad = report.outputs[1]
    assert bad == ConsistencyRow("bbox_deltas", False, 37, 1000, 0.125, 0.031, line=5)
    assert bad.mismatched_ratio == pytest.approx(0.037)
    assert report.all_outputs_consistent() is False
    assert report.inconsistent_outputs() == (bad,)


def test_log_with_both_tables_and_the_command_line(rulebase):
    report = read_hb_verifier(HBV / "verifier_run.log", display="run/verifier_run.log")
    assert report.display == "run/verifier_run.log"
    assert report.models == (ComparedModel("model_quantized.bc", "bc", 1),
                             ComparedModel("tinydet.hbm", "hbm", 1))
    # The input-info table of the log (lines 6-10) is not ours and is left alone.
    assert [row.node_name for row in report.layers] == [
        "Conv_0", "Relu_1", "Conv_2", "Sub_3", "Mul_4", "Conv_5", "Conv_6"]
    assert report.layers[0].line == 17
    sub, last = report.layers[3], report.layers[6]
    assert math.isnan(sub.cosine) and sub.line == 20
    assert last.cosine == pytest.approx(1e-05) and last.tensor_name == "bbox_deltas"
    assert report.breaks()[0] == (sub, math.inf)         # nan after healthy rows: broken
    assert judged(rulebase, HBV / "verifier_run.log", "node_origin", "node") == {"Sub_3"}
    assert report.worst_layer() is sub                   # nan counts as the lowest
    assert [(row.output_name, row.consistent, row.line) for row in report.outputs] == [
        ("cls_logits", True, 30), ("bbox_deltas", False, 31)]
    bad = report.outputs[1]
    assert (bad.mismatched, bad.total, bad.max_abs_diff) == (15872, 16000, 3.5)
    assert math.isinf(bad.max_rel_diff)
    assert report.all_outputs_consistent() is False


def test_elided_rows_are_skipped(rulebase):
    report = read_hb_verifier(HBV / "cosine_elided.txt")
    assert [(row.node_name, row.line) for row in report.layers] == [
        ("Conv_0", 4), ("Relu_1", 5), ("Conv_31", 7), ("Gemm_57", 9)]
    assert report.elided_lines == (6, 8)
    # 0.999981 -> 0.982113 falls by 0.0179: below the healthy level, not a sudden fall
    # by rules/54's 0.02.
    ((row, fall),) = report.breaks()
    assert row.node_name == "Gemm_57" and fall == pytest.approx(0.017868)
    assert judged(rulebase, HBV / "cosine_elided.txt", "node_origin", "node") == set()
    assert report.first_below().node_name == "Gemm_57"


def test_crlf_line_endings():
    report = read_hb_verifier(HBV / "cosine_crlf.txt")
    plain = read_hb_verifier(HBV / "cosine_table.txt")
    assert report.layers == plain.layers[:4]
    assert report.layers[2].node_name == "MaxPool_2" and report.layers[2].cosine == 0.99997


def test_trailing_spaces_and_no_final_newline():
    report = read_hb_verifier(HBV / "consistency_no_final_newline.txt")
    assert report.outputs == read_hb_verifier(HBV / "consistency_mixed.txt").outputs


def test_a_fall_is_measured_from_the_best_earlier_row(tmp_path, rulebase):
    rows = [("Conv_0", "0.9999"), ("Add_1", "0.9992"), ("Conv_2", "0.9998"),
            ("Relu_3", "0.9791"), ("Conv_4", "0.90")]
    report = parse_hb_verifier(grid(rows), "pasted")
    # Relu_3 is 0.0208 below the best (0.9999) but only 0.0207 below Conv_2.
    assert [(r.node_name, round(f, 4)) for r, f in report.breaks()] == [("Relu_3", 0.0208), ("Conv_4", 0.0999)]
    path = tmp_path / "hb_verifier.log"
    path.write_text(grid(rows), encoding="utf-8")
    assert judged(rulebase, path, "node_origin", "node") == {"Relu_3"}
    assert COSINE_HEALTHY == 0.99


def test_no_drop_without_a_healthy_row_first():
    report = parse_hb_verifier(grid([("Conv_0", "0.95"), ("Conv_1", "0.70")]), "pasted")
    assert report.breaks() == []
    assert report.first_below().node_name == "Conv_0"
    assert report.worst_layer().node_name == "Conv_1"


def test_blank_cosine_and_bare_ellipsis_line_in_an_indented_paste():
    table = grid([("Conv_0", "0.9999"), ("Reshape_1", ""), ("Conv_2", "None")])
    lines = table.splitlines()
    lines.insert(5, "...")
    text = "Here is what I got:\n\n" + "\n".join("    " + line for line in lines) + "\n"
    report = parse_hb_verifier(text, "issue.md")
    assert [(row.node_name, row.cosine, row.line) for row in report.layers] == [
        ("Conv_0", 0.9999, 6), ("Reshape_1", None, 7), ("Conv_2", None, 9)]
    assert report.elided_lines == (8,)


@pytest.mark.parametrize("name, line, fragment", [
    ("header_without_border.txt", 1, "header row of the per-layer cosine table without the "
                                     "+---+ border line above it"),
    ("no_table.txt", None, "no hb_verifier table found; expected hb_verifier output"),
])
def test_files_without_a_readable_table_raise_input_error_with_line(name, line, fragment):
    assert_refused(read_hb_verifier, BAD / name, name, line, fragment)


@pytest.mark.parametrize("name, nodes, skipped", [
    ("truncated_mid_row.txt", ["Conv_0", "Relu_1", "MaxPool_2"],
     [(7, "row cut off where the file ends"), (7, "ends without its closing +---+ border")]),
    ("truncated_no_closing_border.txt", ["Conv_0", "Relu_1", "MaxPool_2", "Conv_3"],
     [(7, "ends without its closing +---+ border")]),
    # a cell padded one space too far (hand-edited): read by its '|'
    ("misaligned_row.txt", ["Conv_0", "Relu_1", "MaxPool_2", "Conv_3", "Relu_4"], []),
    ("cosine_not_a_number.txt", ["Conv_0", "Relu_1", "Conv_3", "Relu_4"],
     [(6, "expected a cosine similarity (a number, nan or inf) in ConsineSimilarity, found '0.99x97'")]),
])
def test_cut_and_hand_edited_tables_keep_their_readable_rows(name, nodes, skipped):
    report = read_hb_verifier(BAD / name)
    assert [row.node_name for row in report.layers] == nodes
    assert [(item.line, fragment in item.reason) for item, (_, fragment) in zip(report.skipped.kept, skipped)] \
        == [(line, True) for line, _ in skipped], report.skipped
    assert len(report.skipped) == len(skipped)


def test_a_garbled_consistency_row_is_skipped():
    report = read_hb_verifier(BAD / "mismatched_garbled.txt")
    assert [row.output_name for row in report.outputs] == ["cls_logits"]
    (item,) = report.skipped.kept
    assert item.line == 5 and "found '37 of 1000'" in item.reason


@pytest.mark.parametrize("old, new, fragment", [
    ("| False ", "| Maybe ", "expected True or False in Consistency, found 'Maybe'"),
    ("37/1000 (3.70%)", "37/10 (370.00%)", "'37/10 (370.00%)': more mismatched elements than "
                                           "elements"),
    ("0.125 ", "abc   ", "expected a number (or nan / inf) in Max Abs Diff, found 'abc'"),
])
def test_garbled_consistency_cells(old, new, fragment):
    text = (HBV / "consistency_mixed.txt").read_text(encoding="utf-8")
    assert old in text
    report = parse_hb_verifier(text.replace(old, new), "pasted")
    assert [row.output_name for row in report.outputs] == ["cls_logits"]
    (item,) = report.skipped.kept
    assert item.line == 5 and fragment in item.reason
    with pytest.raises(InputError) as info:   # the only row garbled: nothing to read
        parse_hb_verifier("\n".join(line for line in text.replace(old, new).splitlines()
                                    if "cls_logits" not in line), "pasted")
    assert (info.value.file, info.value.line) == ("pasted", 4)
    assert fragment in info.value.message


def test_missing_column_is_named_at_the_header():
    text = (HBV / "consistency_mixed.txt").read_text(encoding="utf-8")
    with pytest.raises(InputError, match=r"^pasted:2: no readable row of an hb_verifier table: the per-output "
                                         r"consistency table lacks the column\(s\) Max Rel Diff"):
        parse_hb_verifier(text.replace("| Max Rel Diff |", "| Max Rel Dif  |"), "pasted")
    both = text.replace("| Max Rel Diff |", "| Max Rel Dif  |") + "\n" + grid([("Conv_0", "0.99")])
    report = parse_hb_verifier(both, "pasted")
    assert [row.node_name for row in report.layers] == ["Conv_0"] and report.outputs == ()
    assert report.skipped.kept[0].line == 2 and "the table is not read" in report.skipped.kept[0].reason


def test_table_of_only_elided_rows_is_rejected():
    lines = (HBV / "cosine_elided.txt").read_text(encoding="utf-8").splitlines()
    text = "\n".join(lines[:3] + [lines[5], lines[-1]])
    with pytest.raises(InputError, match=r"^pasted:2: no readable row of an hb_verifier table: the per-layer "
                                         r"cosine table has no rows but elided ones"):
        parse_hb_verifier(text, "pasted")


def test_cosine_outside_minus_one_to_one_is_a_shifted_column():
    with pytest.raises(InputError, match=r"pasted:4: .*expected a cosine similarity between -1 "
                                         r"and 1 .*found '103'"):
        parse_hb_verifier(grid([("Conv_0", "103")]), "pasted")
    report = parse_hb_verifier(grid([("Conv_0", "103"), ("Relu_1", "0.98")]), "pasted")
    assert [row.node_name for row in report.layers] == ["Relu_1"] and report.skipped.kept[0].line == 4


def test_unreadable_files_raise_input_error(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_hb_verifier(tmp_path / "verifier.log")
    empty = tmp_path / "verifier.log"
    empty.write_bytes(b"\n  \n")
    with pytest.raises(InputError, match="empty file"):
        read_hb_verifier(empty)


# --- discovery by content (artifacts.identify) -------------------------------------------

NEUTRAL = "pasted_from_ticket.txt"  # a name that hints at no kind


# bad/ included: a broken table is still hb_verifier output, so the user gets its read error.
@pytest.mark.parametrize("text", [
    "| NodeName | TensorName | ConsineSimilarity |",      # the tool's spelling
    "| NodeName | TensorName | CosineSimilarity |",
    "| OutputName | Consistency | Mismatched Elements |",
    "$ hb_verifier --model=a.onnx,b.bc -i x.npy",
    "$ hb_verifier -m a.onnx,b.bc\r\nno table printed\r\n",
])
def test_a_header_or_a_command_line_is_enough(text):
    assert identify(NEUTRAL, text.encode("utf-8")) == ("hb_verifier", "content")


def test_a_sentence_that_only_mentions_hb_verifier_is_not_recognised():
    assert identify(NEUTRAL, b"hb_verifier is the tool to use next\n") == (None, "")


def test_model_kinds_from_the_command_line():
    text = ('cmd: hb_verifier --model "out/calibrated model.onnx" --model=out/m.bin -s x\n'
            + grid([("Conv_0", "0.9999")]))
    assert parse_hb_verifier(text, "log").models == (
        ComparedModel("out/calibrated model.onnx", "onnx", 1),
        ComparedModel("out/m.bin", "bin", 1))


def grid(rows: list[tuple[str, str]]) -> str:
    """A per-layer cosine table in the R3 layout, tensor names made up from the row index."""
    cells = [("NodeName", "TensorName", "ConsineSimilarity")]
    cells += [(node, str(100 + k), cosine) for k, (node, cosine) in enumerate(rows)]
    widths = [max(len(row[i]) for row in cells) for i in range(3)]
    border = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    lines = ["|" + "|".join(f" {c:<{w}} " for c, w in zip(row, widths)) + "|" for row in cells]
    return "\n".join([border, lines[0], border, *lines[1:], border]) + "\n"
