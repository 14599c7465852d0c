"""compare_per_layer_out.{csv,txt} reader and error-origin summary against the synthetic
fixtures of shared/formats (FORMATS.md §2, §3, §13) and tables generated here."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from conftest import compare_judgement, origin_reading, write_file
from j6doctor.probes import InputError
from synthetic import CONV, IDENT, QCONV, VB_HEADER, big_rows, csv_text, psql, vb_row
from j6doctor.probes.compare_per_layer import (
    COSINE_HEALTHY, CompareRow, CompareTable, is_function_op, read_compare_per_layer,
    summarize,
)

FORMATS = Path(__file__).resolve().parent / "fixtures" / "formats"
QA = FORMATS / "horizon_quant_analysis"
VARIANTS = FORMATS / "variants"
EXPECTED = json.loads((FORMATS / "EXPECTED.json").read_text(encoding="utf-8"))
TXT_TOL = 1e-7          # the txt prints floats with 7 decimals (floatfmt=".7f")

FLOAT_FIELDS = ("qscale", "cosine", "l1", "atol", "max_qscale_diff", "base_min", "analy_min",
                "base_max", "analy_max", "base_mean", "analy_mean", "same_in_qatbc_qdiff",
                "same_in_intbc_qdiff")
TEXT_FIELDS = ("index", "mod_name", "base_op_type", "analy_op_type", "shape", "dtype", "advice")


def table_of(tmp_path: Path, rows: list[dict], suffix: str = ".csv") -> CompareTable:
    content = csv_text(rows) if suffix == ".csv" else psql(rows)
    return read_compare_per_layer(write_file(tmp_path, "compare_per_layer_out" + suffix, content))


def by_name(table: CompareTable, name: str) -> CompareRow:
    return next(r for r in table.rows if r.mod_name == name)


def assert_same_rows(a: CompareTable, b: CompareTable, tol: float = TXT_TOL) -> None:
    assert len(a.rows) == len(b.rows)
    for ra, rb in zip(a.rows, b.rows):
        for field in TEXT_FIELDS:
            assert getattr(ra, field) == getattr(rb, field), (ra.index, field)
        for field in FLOAT_FIELDS:
            va, vb = getattr(ra, field), getattr(rb, field)
            assert (va is None) == (vb is None), (ra.index, field)
            if va is not None:
                assert va == pytest.approx(vb, abs=tol, nan_ok=True), (ra.index, field)


# --- the reference fixture ---------------------------------------------------------------

@pytest.fixture(scope="module", params=["txt", "csv"])
def reference(request) -> CompareTable:
    return read_compare_per_layer(QA / f"compare_per_layer_out.{request.param}")


def test_reference_shape_and_header(reference):
    truth = EXPECTED["compare_per_layer_out"]
    assert len(reference.rows) == truth["rows"] == 36
    assert reference.columns == truth["header"] == VB_HEADER
    assert reference.layout == "vB"
    assert reference.ragged_rows == 0
    assert [r.index for r in reference.rows] == list(range(36))


def test_display_defaults_to_file_name_and_can_be_set():
    assert read_compare_per_layer(QA / "compare_per_layer_out.csv").display == \
        "compare_per_layer_out.csv"
    table = read_compare_per_layer(QA / "compare_per_layer_out.txt", display="qa/cmp.txt")
    assert table.display == "qa/cmp.txt"


def test_reference_cleared_fused_prefix_rows(reference):
    truth = EXPECTED["compare_per_layer_out"]["cleared_fused_prefix_rows"]
    cleared = [r for r in reference.rows if not r.has_metrics]
    assert [r.mod_name for r in cleared] == truth
    for r in cleared:
        # metrics and shape blank; dtype, qscale and the six statistics kept (§2)
        assert (r.shape, r.cosine, r.l1, r.atol, r.max_qscale_diff) == (None,) * 5
        assert r.dtype in ("qint8", "qint16") and r.qscale is not None
        assert None not in (r.base_min, r.analy_min, r.base_max, r.analy_max, r.base_mean,
                            r.analy_mean)
    for r in reference.rows:
        if r.has_metrics:
            assert r.cosine is not None and r.l1 is not None and r.atol is not None
            assert r.shape is not None


def test_reference_rows_without_qscale(reference):
    truth = EXPECTED["compare_per_layer_out"]["rows_without_qscale"]
    no_qscale = [r for r in reference.rows if r.qscale is None]
    assert [r.mod_name for r in no_qscale] == truth
    assert all(r.max_qscale_diff is None and r.dtype == "torch.float32" for r in no_qscale)


def test_reference_cells(reference):
    quant = reference.rows[0]
    assert quant.line == (2 if reference.display.endswith(".csv") else 4)
    assert quant.mod_name == "quant"
    assert quant.base_op_type == "horizon_plugin_pytorch.quantization.stubs.QuantStub"
    assert quant.analy_op_type == "horizon_plugin_pytorch.nn.qat.stubs.QuantStub"
    assert quant.shape == "torch.Size([1, 3, 128, 128])"    # '*' in the csv → ','
    assert quant.dtype == "qint8"
    assert quant.qscale == 0.0078125
    assert quant.advice is None and quant.same_in_qatbc_qdiff is None
    assert reference.rows[30].dtype == "qint16"


def test_reference_summary(reference):
    truth = EXPECTED["compare_per_layer_out"]
    summary = summarize(reference)
    assert summary.rows == 36
    assert summary.metric_rows == 36 - len(truth["cleared_fused_prefix_rows"])
    assert summary.analysis_type == "fake_quant"
    assert summary.degraded_rows == 12 and [b.row.index for b in summary.breaks] == [15]
    assert summary.first_cosine_below.mod_name == truth["first_cosine_below_0.99"]
    assert summary.first_cosine_below.cosine < COSINE_HEALTHY
    assert summary.function_call_rows == truth["function_call_rows"] == ["neck"]
    assert summary.worst.mod_name == "backbone.layer3.relu2"


def test_reference_error_origin(reference, rulebase):
    truth = EXPECTED["error_origin"]
    tol = 0 if reference.display.endswith(".csv") else TXT_TOL
    origin = summarize(reference).breaks[0]
    judged, shapes, triggers = compare_judgement(rulebase, QA / reference.display)
    assert (judged["row"], shapes) == (origin.row.index, {"single_drop"})
    assert triggers == {"cosine_drop", "atol_surge", "qscale_diff"}   # a clamp breaks all three
    assert judged["fused_group"] == " → ".join(truth["fused_group"])
    assert origin.fused_group == tuple(truth["fused_group"])
    assert origin.row.mod_name == truth["compare_row_with_metrics"]
    assert origin.row.index == truth["compare_row_index"] == 15
    assert origin.row.cosine == pytest.approx(truth["cosine"], abs=tol)
    assert origin.row.atol == pytest.approx(truth["atol"], abs=tol)
    assert origin.row.max_qscale_diff == pytest.approx(truth["max_qscale_diff"], abs=tol)
    assert origin.upstream.mod_name == truth["upstream_row"]
    assert origin.upstream.cosine == pytest.approx(truth["upstream_cosine"], abs=tol)
    assert origin.upstream.atol == pytest.approx(truth["upstream_atol"], abs=tol)
    assert origin.cosine_fall == pytest.approx(truth["upstream_cosine"] - truth["cosine"], abs=2 * tol + 1e-12)
    assert truth["kind"].startswith("truncation/clamp")
    assert origin.ranges.high_narrowing > 0.10 and origin.ranges.high_limit_steps <= 1.5
    assert origin_reading(rulebase, QA / reference.display) == {"clamp"}
    # the conv row of the group is the sensitivity op name (§13.5)
    assert origin.fused_group[0] == truth["sensitivity_op_name"]


def test_txt_and_csv_give_identical_rows():
    txt = read_compare_per_layer(QA / "compare_per_layer_out.txt")
    csv = read_compare_per_layer(QA / "compare_per_layer_out.csv")
    assert txt.columns == csv.columns
    assert_same_rows(txt, csv)
    assert [r.line for r in txt.rows] == [i + 4 for i in range(36)]
    assert [r.line for r in csv.rows] == [i + 2 for i in range(36)]


# --- variants ---------------------------------------------------------------------------

def test_hbir_ragged_csv():
    truth = EXPECTED["variants"]["compare_per_layer_out.hbir_ragged.csv"]
    path = VARIANTS / "compare_per_layer_out.hbir_ragged.csv"
    raw_counts = [len(line.split(", ")) for line in path.read_text().splitlines()]
    assert raw_counts == [truth["header_fields"], *truth["row_fields"]]   # fixture sanity
    table = read_compare_per_layer(path)
    assert len(table.columns) == truth["header_fields"] == 16
    assert table.columns == VB_HEADER
    assert len(table.rows) == len(truth["row_fields"])
    assert table.ragged_rows == sum(1 for n in truth["row_fields"] if n != 16) == 5
    for row, fields in zip(table.rows, truth["row_fields"]):
        if fields == 16:
            assert (row.same_in_qatbc_qdiff, row.same_in_intbc_qdiff) == (None, None)
    stem = by_name(table, "backbone.stem.conv")
    assert (stem.same_in_qatbc_qdiff, stem.same_in_intbc_qdiff) == (0.0, 1.0)
    neck = by_name(table, "neck")
    assert (neck.same_in_qatbc_qdiff, neck.same_in_intbc_qdiff) == (1.0, 3.0)
    assert neck.analy_min == 0.0 and neck.analy_mean == pytest.approx(0.37688109278678894)
    cls = by_name(table, "head.cls_out")       # 18 fields with "None, None"
    assert (cls.same_in_qatbc_qdiff, cls.same_in_intbc_qdiff, cls.qscale) == (None, None, None)
    summary = summarize(table)
    assert summary.analysis_type == "hbir"
    assert summary.degraded_rows == 0 and summary.breaks == []
    assert summary.first_cosine_below is None


def test_hbir_ragged_txt_matches_csv():
    txt = read_compare_per_layer(VARIANTS / "compare_per_layer_out.hbir_ragged.txt")
    csv = read_compare_per_layer(VARIANTS / "compare_per_layer_out.hbir_ragged.csv")
    assert txt.columns == VB_HEADER + ["same_in_qatbc_qdiff", "same_in_intbc_qdiff"]
    assert txt.ragged_rows == 0
    assert_same_rows(txt, csv)
    assert summarize(txt).analysis_type == "hbir"


def test_wide23_txt(rulebase):
    truth = EXPECTED["variants"]["compare_per_layer_out.wide23.txt"]
    table = read_compare_per_layer(VARIANTS / "compare_per_layer_out.wide23.txt")
    assert table.layout == "wide23"
    assert len(table.columns) == truth["columns"] == 23
    assert len(table.rows) == truth["rows"] == 7
    assert table.columns[-1] == "max_qscale_diff" and "SQNR" in table.columns
    relu2 = by_name(table, "backbone.layer3.relu2")
    assert relu2.max_qscale_diff == pytest.approx(5922.9256378, abs=TXT_TOL)
    assert relu2.atol == pytest.approx(139.6110535, abs=TXT_TOL)   # Atol, not max_atol_diff
    assert relu2.l1 == pytest.approx(0.0412873, abs=TXT_TOL)
    assert table.rows[-1].max_qscale_diff is None                  # dequant_reg, fp32
    origin = summarize(table).breaks[0]
    assert origin.row.mod_name == "backbone.layer3.relu2"
    assert origin.upstream.mod_name == "backbone.layer3.relu1"
    judged, _, _ = compare_judgement(rulebase, VARIANTS / "compare_per_layer_out.wide23.txt")
    assert judged["mod_name"] == "backbone.layer3.relu2"
    assert origin_reading(rulebase, VARIANTS / "compare_per_layer_out.wide23.txt") == {"clamp"}


def v33_rows() -> list[dict]:
    rows = []
    for name, cos, atol, amax, advice in [
        ("quant", 0.99999, 0.004, 6.0, None),
        ("backbone.conv", 0.9999, 0.03, 6.0, None),
        ("backbone.relu", 0.81, 90.0, 127 * 0.05, "use int16 or a fixed scale"),
        ("head", 0.84, 80.0, 6.0, None),
    ]:
        r = vb_row(name, cos, atol, base_max=100.0 if advice else 6.0, analy_max=amax)
        rows.append({
            "mod_name": r["mod_name"], "base_op_type": r["base_op_type"],
            "analy_op_type": r["analy_op_type"], "shape": r["shape"], "dtype": "qint8",
            "qscale": r["qscale"], "L1": r["L1"], "COSINE": r["Cosine"], "ATOL": r["Atol"],
            "max_qscale_diff": r["max_qscale_diff"],
            **{k: r[k] for k in VB_HEADER[10:]}, "advice": advice,
        })
    return rows


@pytest.mark.parametrize("suffix", [".csv", ".txt"])
def test_v33_layout(tmp_path, suffix, rulebase):
    table = table_of(tmp_path, v33_rows(), suffix)
    assert table.layout == "v3.3"
    assert table.columns[4:9] == ["dtype", "qscale", "L1", "COSINE", "ATOL"]
    assert table.columns[-1] == "advice"
    relu = by_name(table, "backbone.relu")
    assert relu.cosine == pytest.approx(0.81) and relu.atol == pytest.approx(90.0)
    assert relu.l1 == pytest.approx(9.0) and relu.dtype == "qint8"
    assert relu.advice == "use int16 or a fixed scale"
    assert table.rows[0].advice is None
    judged, _, _ = compare_judgement(rulebase, tmp_path / table.display)
    assert judged["mod_name"] == "backbone.relu" and origin_reading(rulebase, tmp_path / table.display) == {"clamp"}


# --- patterns ---------------------------------------------------------------------------

def test_gradual_decay_has_no_origin(tmp_path, rulebase):
    cosines = [0.9999, 0.9998, 0.9996, 0.998, 0.995, 0.991, 0.986, 0.98, 0.972, 0.963]
    rows = [vb_row(f"layer{i}", c, 0.02 + 0.005 * i) for i, c in enumerate(cosines)]
    for suffix in (".csv", ".txt"):
        table = table_of(tmp_path, rows, suffix)
        summary = summarize(table)
        assert [b.row.mod_name for b in summary.breaks] == ["layer6"]
        assert summary.breaks[0].cosine_fall == pytest.approx(0.005)
        assert compare_judgement(rulebase, tmp_path / table.display) == (None, {"gradual"}, set())
        assert summary.decline_start.mod_name == "layer0" and summary.decline_rows == 7
        assert summary.first_cosine_below.mod_name == "layer6"
        assert summary.worst.mod_name == "layer9"


def test_gradual_start_is_the_top_of_the_falling_run(tmp_path, rulebase):
    cosines = [0.9999, 0.9995, 0.9999, 0.997, 0.993, 0.988, 0.981]
    rows = [vb_row(f"l{i}", c, 0.03) for i, c in enumerate(cosines)]
    table = table_of(tmp_path, rows)
    summary = summarize(table)
    assert compare_judgement(rulebase, tmp_path / table.display)[1] == {"gradual"}
    assert summary.decline_start.mod_name == "l2" and summary.decline_rows == 4


def test_healthy_table(tmp_path, rulebase):
    rows = [vb_row(f"layer{i}", 0.9999 - 0.0001 * i, 0.02 + 0.002 * i) for i in range(8)]
    table = table_of(tmp_path, rows)
    summary = summarize(table)
    assert compare_judgement(rulebase, tmp_path / table.display) == (None, {"healthy"}, set())
    assert summary.breaks == [] and summary.decline_start is None and summary.degraded_rows == 0
    assert summary.first_cosine_below is None
    assert summary.worst.mod_name == "layer7"
    assert summary.analysis_type == "unknown"        # float vs float op types


def test_no_metrics(tmp_path, rulebase):
    rows = [vb_row("a.conv", None, None, base_op=CONV, analy_op=QCONV)]
    table = table_of(tmp_path, rows)
    summary = summarize(table)
    assert compare_judgement(rulebase, tmp_path / table.display) == (None, {"no_metrics"}, set())
    assert summary.metric_rows == 0 and summary.worst is None and summary.breaks == []
    assert summary.analysis_type == "fake_quant"


def test_atol_surge_and_qscale_diff_triggers(tmp_path, rulebase):
    # fp32 output (no qscale): only the Atol jump shows the break
    rows = [vb_row("a", 0.9999, 0.02, qscale=None), vb_row("b", 0.9999, 0.03, qscale=None),
            vb_row("c", 0.995, 0.6, qscale=None, dtype="torch.float32")]
    table = table_of(tmp_path, rows)
    origin = summarize(table).breaks[0]
    assert origin.atol_ratio == pytest.approx(20.0) and origin.upstream.mod_name == "b"
    judged, _, triggers = compare_judgement(rulebase, tmp_path / table.display)
    assert (judged["mod_name"], triggers) == ("c", {"atol_surge"})
    # healthy Cosine, but the error is 40 quantisation steps
    rows = [vb_row("a", 0.9999, 0.025), vb_row("b", 0.9999, 0.03),
            vb_row("c", 0.995, 0.2, qscale=0.005)]
    table = table_of(tmp_path, rows)
    origin = summarize(table).breaks[0]
    assert origin.row.max_qscale_diff == pytest.approx(40.0) and origin.qscale_ratio > 4
    judged, _, triggers = compare_judgement(rulebase, tmp_path / table.display)
    assert (judged["mod_name"], triggers) == ("c", {"qscale_diff"})
    assert origin.ranges.deviation == 0.0
    assert origin_reading(rulebase, tmp_path / table.display) == {"rounding"}   # ranges agree, error large


def test_wider_range_alone_is_not_an_origin(tmp_path, rulebase):
    # Atol 10x larger but qscale 10x larger too: same error in steps, healthy Cosine
    rows = [vb_row("a", 0.9999, 0.02, qscale=0.04), vb_row("b", 0.9999, 0.25, qscale=0.5)]
    table = table_of(tmp_path, rows)
    assert summarize(table).breaks[0].atol_ratio == pytest.approx(12.5)   # located, measured...
    assert compare_judgement(rulebase, tmp_path / table.display) == (None, {"healthy"}, set())  # ...not sudden


def test_degraded_rows_after_the_origin_do_not_make_a_second_origin(tmp_path, rulebase):
    cosines = [0.9999, 0.9998, 0.85, 0.82, 0.79, 0.80, 0.70]
    rows = [vb_row(f"l{i}", c, 0.02 if c > 0.99 else 5.0) for i, c in enumerate(cosines)]
    table = table_of(tmp_path, rows)
    summary = summarize(table)
    assert [b.row.mod_name for b in summary.breaks] == ["l2"]
    judged, shapes, _ = compare_judgement(rulebase, tmp_path / table.display)
    assert (judged["mod_name"], shapes) == ("l2", {"single_drop"})
    assert summary.worst.mod_name == "l6"


def test_fused_group_of_two_and_of_one(tmp_path):
    rows = [vb_row("q", 0.9999, 0.02), vb_row("x.conv", None, None, base_op=CONV),
            vb_row("x.bn", 0.90, 3.0)]
    assert summarize(table_of(tmp_path, rows)).breaks[0].fused_group == ("x.conv", "x.bn")
    rows = [vb_row("q", 0.9999, 0.02), vb_row("x.bn", 0.90, 3.0)]
    assert summarize(table_of(tmp_path, rows)).breaks[0].fused_group == ("x.bn",)


def test_first_metric_row_broken_is_the_origin(tmp_path, rulebase):
    rows = [vb_row("quant", 0.95, 0.3), vb_row("conv", 0.94, 0.3)]
    table = table_of(tmp_path, rows)
    origin = summarize(table).breaks[0]
    assert origin.row.mod_name == "quant" and origin.upstream is None
    judged, _, triggers = compare_judgement(rulebase, tmp_path / table.display)
    assert judged["mod_name"] == "quant" and "first_row" in triggers


@pytest.mark.parametrize("suffix", [".csv", ".txt"])
def test_nan_and_inf_cells(tmp_path, suffix, rulebase):
    rows = [vb_row("a", 0.9999, 0.02), vb_row("b", 0.9998, 0.03),
            vb_row("c", math.nan, math.inf), vb_row("d", 0.98, 0.5)]
    rows[3]["base_model_min"] = -math.inf
    table = table_of(tmp_path, rows, suffix)
    c = by_name(table, "c")
    assert math.isnan(c.cosine) and c.atol == math.inf and c.max_qscale_diff == math.inf
    assert by_name(table, "d").base_min == -math.inf
    summary = summarize(table)
    assert summary.breaks[0].row.mod_name == "c" and summary.breaks[0].cosine_nonfinite
    judged, _, triggers = compare_judgement(rulebase, tmp_path / table.display)
    assert judged["mod_name"] == "c" and "cosine_drop" in triggers
    assert origin_reading(rulebase, tmp_path / table.display) == {"rounding"}
    assert summary.worst.mod_name == "c"           # nan Cosine ranks worst
    assert summary.first_cosine_below.mod_name == "c"


def test_function_call_ops():
    for op in ("torch.nn.functional.interpolate", "torch.Tensor.add", "torch.cat",
               "horizon_plugin_pytorch.nn.grid_sample.warp", "<built-in function add>",
               "torch.nn.functional.interpolate[hbir.resize2d]"):
        assert is_function_op(op), op
    for op in (CONV, IDENT, "horizon_plugin_pytorch.nn.qat.functional_modules.FloatFunctional.add",
               "torch.ao.quantization.stubs.DeQuantStub", ""):
        assert not is_function_op(op), op


# --- csv details ------------------------------------------------------------------------

def test_empty_csv_is_valid(tmp_path):
    table = read_compare_per_layer(write_file(tmp_path, "compare_per_layer_out.csv", b""))
    assert table.rows == [] and table.columns == [] and table.ragged_rows == 0
    summary = summarize(table)
    assert summary.rows == 0 and summary.metric_rows == 0 and summary.breaks == []


def test_header_only_csv_is_valid(tmp_path):
    table = read_compare_per_layer(write_file(tmp_path, "c.csv", ", ".join(VB_HEADER) + "\n"))
    assert table.rows == [] and table.columns == VB_HEADER


def test_csv_without_trailing_newline_and_with_crlf(tmp_path):
    text = (QA / "compare_per_layer_out.csv").read_text()
    reference = read_compare_per_layer(QA / "compare_per_layer_out.csv")
    for variant in (text.rstrip("\n"), text.replace("\n", "\r\n")):
        table = read_compare_per_layer(write_file(tmp_path, "c.csv", variant))
        assert_same_rows(table, reference, tol=0)


def test_csv_blank_cells_and_empty_mod_name(tmp_path):
    row = vb_row("", 0.9999, 0.02, base_op="torch.cat", analy_op="torch.cat")
    row["qscale"] = row["max_qscale_diff"] = None
    text = csv_text([row]).replace(", None, ", ", , ", 1)
    assert ", , " in text
    table = read_compare_per_layer(write_file(tmp_path, "c.csv", text))
    # a function call at the top level has no module name: named by its op and row number
    assert table.rows[0].mod_name == "cat (row 0)" and table.rows[0].shape == "torch.Size([1, 8, 4, 4])"
    assert table.row(0).mod_name == "cat (row 0)" and table.names == ["cat (row 0)"]
    assert table.rows[0].qscale is None and table.rows[0].max_qscale_diff is None
    assert summarize(table).function_call_rows == ["cat (row 0)"]


def test_csv_header_with_same_in_and_shorter_rows(tmp_path):
    # the reverse raggedness: the first row carried same_in_*, a later one did not (§3)
    header = ", ".join(VB_HEADER + ["same_in_qatbc_qdiff", "same_in_intbc_qdiff"])
    first = csv_text([vb_row("a", 0.9999, 0.02)]).splitlines()[1] + ", 0.0, 1.0"
    second = csv_text([vb_row("b", 0.9999, 0.02)]).splitlines()[1]
    table = read_compare_per_layer(write_file(tmp_path, "c.csv", f"{header}\n{first}\n{second}\n"))
    assert table.ragged_rows == 1
    assert (table.rows[0].same_in_qatbc_qdiff, table.rows[0].same_in_intbc_qdiff) == (0.0, 1.0)
    assert table.rows[1].same_in_intbc_qdiff is None
    assert summarize(table).analysis_type == "hbir"


# --- scale ------------------------------------------------------------------------------

@pytest.mark.parametrize("suffix", [".csv", ".txt"])
def test_twenty_thousand_rows(tmp_path, suffix, rulebase):
    rows = big_rows()
    table = table_of(tmp_path, rows, suffix)
    assert len(table.rows) == 20_000
    assert table.rows[-1].index == 19_999
    summary = summarize(table)
    assert summary.breaks[0].row.index == 15_001
    assert summary.breaks[0].fused_group == ("m5000.conv", "m5000.relu1")
    judged, shapes, _ = compare_judgement(rulebase, tmp_path / table.display)
    assert (judged["row"], shapes) == (15_001, {"single_drop"})
    assert origin_reading(rulebase, tmp_path / table.display) == {"clamp"}


# --- broken inputs ----------------------------------------------------------------------

def truncated_txt() -> str:
    text = (QA / "compare_per_layer_out.txt").read_text()
    lines = text.split("\n")
    return "\n".join(lines[:10]) + "\n" + lines[10][:60]


def metric_abc(suffix: str) -> str:
    rows = [vb_row("a", 0.9999, 0.02), vb_row("b", 0.9999, 0.02)]
    rows[1]["Cosine"] = "abc"
    return csv_text(rows) if suffix == ".csv" else psql(rows)


def short_csv_row() -> str:
    lines = (QA / "compare_per_layer_out.csv").read_text().splitlines()
    lines[5] = ", ".join(lines[5].split(", ")[:12])
    return "\n".join(lines) + "\n"


def sensitivity_as_csv() -> str:
    return "op_name, sensitive_type, op_type, L1, quant_dtype, flops\n" \
           "backbone.layer3.conv2, activation, Conv2d, 0.28, qint8, 4718592\n"


def too_many_fields() -> str:
    header, first, second = csv_text([vb_row("a", 1.0, 0.0), vb_row("b", 1.0, 0.0)]).splitlines()
    return f"{header}\n{first}, 1, 2, 3\n{second}\n"


TXT_LINES = (QA / "compare_per_layer_out.txt").read_text().split("\n")

REFUSED = [
    ("empty txt", "compare_per_layer_out.txt", "", None, "empty file"),
    ("blank txt", "compare_per_layer_out.txt", "\n\n  \n", None, "empty file"),
    ("sensitivity table as txt", "compare_per_layer_out.txt",
     (QA / "output_bbox_pred_L1_sensitive_ops.txt").read_text(), 1, "psql table border"),
    ("other psql table", "compare_per_layer_out.txt",
     (QA / "abnormal_layer_advisor.txt").read_text(), 2, "missing base_op_type"),
    ("sensitivity header as csv", "compare_per_layer_out.csv", sensitivity_as_csv(), 1,
     "expected the columns mod_name"),
    ("NUL bytes txt", "compare_per_layer_out.txt", b"+--+\n\x00\x01\x02\xff\xfe", 2, "NUL"),
    ("NUL bytes csv", "compare_per_layer_out.csv", b"\x00" * 64, 1, "NUL"),
    ("non-UTF-8 csv", "compare_per_layer_out.csv",
     (", ".join(VB_HEADER) + "\nquant, \xe9\n").encode("latin-1"), 2, "UTF-8"),
    ("non-UTF-8 txt", "compare_per_layer_out.txt", b"\xff\xfe+---+\n", 1, "UTF-8"),
    ("csv whose only row is cut", "compare_per_layer_out.csv",
     ", ".join(VB_HEADER) + "\nbackbone.stem.conv, torch.nn.modules.conv.Conv2d\n", 2,
     "no readable row: expected 16 comma-separated fields"),
]


@pytest.mark.parametrize("name,file,content,line,fragment", REFUSED, ids=[b[0] for b in REFUSED])
def test_a_file_without_a_readable_table_is_refused(tmp_path, name, file, content, line, fragment):
    path = write_file(tmp_path, file, content)
    with pytest.raises(InputError) as caught:
        read_compare_per_layer(path, display=f"run1/{file}")
    error = caught.value
    rendered = str(error)
    assert f"run1/{file}" in rendered
    assert error.file == f"run1/{file}"
    assert error.line == line
    assert fragment in rendered
    assert "expected" in rendered


# Excerpted, cut and hand-edited tables: the odd rows are skipped and named, the others read.
SKIPPED = [
    ("txt cut mid-row", "compare_per_layer_out.txt", truncated_txt(), [(11, "row cut off"), (11, "closing")], 7),
    ("txt without closing border", "compare_per_layer_out.txt",
     "\n".join(TXT_LINES[:-1]), [(39, "ends without its closing +---+ border")], 36),
    ("csv row with too few fields", "compare_per_layer_out.csv", short_csv_row(),
     [(6, "got 12 fields (a cut, joined or hand-edited row?)")], 35),
    ("csv row with too many fields", "compare_per_layer_out.csv",
     too_many_fields(), [(2, "got 19 fields")], 1),
    ("metric 'abc' in csv", "compare_per_layer_out.csv", metric_abc(".csv"),
     [(3, "column 'Cosine': expected a number")], 2),
    ("metric 'abc' in txt", "compare_per_layer_out.txt", metric_abc(".txt"),
     [(5, "column 'Cosine': expected a number")], 2),
]


@pytest.mark.parametrize("name,file,content,skipped,rows", SKIPPED, ids=[b[0] for b in SKIPPED])
def test_odd_rows_are_skipped_and_named(tmp_path, name, file, content, skipped, rows):
    table = read_compare_per_layer(write_file(tmp_path, file, content), display=f"run1/{file}")
    assert [(s.line, fragment in s.reason) for s, (_, fragment) in zip(table.skipped.kept, skipped)] == \
        [(line, True) for line, _ in skipped], table.skipped
    assert len(table.skipped) == len(skipped)
    assert len(table) == rows


def test_a_blank_line_inside_a_csv_is_passed_over(tmp_path):
    text = csv_text([vb_row("a", 1.0, 0.0)]) + "\n" + csv_text([vb_row("b", 1.0, 0.0)]).split("\n")[1]
    table = read_compare_per_layer(write_file(tmp_path, "c.csv", text))
    assert [(r.mod_name, r.line) for r in table.rows] == [("a", 2), ("b", 4)]
    assert not table.skipped


def test_a_txt_copied_without_its_closing_border_keeps_its_rows(tmp_path):
    whole = read_compare_per_layer(QA / "compare_per_layer_out.txt")
    cut = read_compare_per_layer(write_file(tmp_path, "c.txt", "\n".join(TXT_LINES[:-1])))
    assert [r.mod_name for r in cut.rows] == [r.mod_name for r in whole.rows]
    assert summarize(cut).breaks[0].row.mod_name == summarize(whole).breaks[0].row.mod_name


def test_a_bad_number_cell_is_read_as_blank(tmp_path):
    table = read_compare_per_layer(write_file(tmp_path, "c.csv", metric_abc(".csv")))
    assert table.rows[1].cosine is None and table.rows[1].l1 is not None
    assert "the cell is read as blank" in table.skipped.kept[0].reason


def test_missing_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="nothere.csv"):
        read_compare_per_layer(tmp_path / "nothere.csv")


def test_txt_multiline_cell_is_merged(tmp_path):
    lines = psql(v33_rows()).split("\n")
    bounds = [i for i, ch in enumerate(lines[0]) if ch == "+"]
    # a continuation line (blank index cell) carrying more text of the last cell (advice)
    blank = ["" for _ in bounds[1:]]
    blank[-1] = "and more"
    widths = [b - a - 2 for a, b in zip(bounds, bounds[1:])]
    cont = "|" + "|".join(f" {c.ljust(w)} " for c, w in zip(blank, widths)) + "|"
    lines.insert(6, cont)                   # right after data row 2 (line 6)
    table = read_compare_per_layer(write_file(tmp_path, "c.txt", "\n".join(lines)))
    assert len(table.rows) == 4
    assert table.rows[2].advice == "use int16 or a fixed scale\nand more"
    assert table.rows[3].line == 8


# --- a function call at the top level: no mod_name ------------------------------------------

def _interpolate_table(tmp_path: Path) -> Path:
    """A table whose sudden break is an interpolate called at the top level of the model (a
    function call outside any module: its mod_name is empty, docs/file_formats.md §0.4)."""
    rows = [vb_row(f"backbone.layer{k}.relu", 0.9999, 0.02) for k in range(4)]
    rows.append(vb_row("", 0.62, 0.9, base_op="torch.nn.functional.interpolate",
                       analy_op="torch.nn.functional.interpolate"))
    rows.append(vb_row("head.relu", 0.61, 0.95))
    return write_file(tmp_path, "compare_per_layer_out.csv", csv_text(rows))


def test_a_row_without_mod_name_is_named_by_its_op_and_row(tmp_path, rulebase):
    from j6doctor.diagnosis import diagnose_data

    path = _interpolate_table(tmp_path)
    table = read_compare_per_layer(path)
    assert table.rows[4].mod_name == "interpolate (row 4)" and table.names[4] == "interpolate (row 4)"
    summary = summarize(table)
    assert summary.breaks[0].row.mod_name == "interpolate (row 4)"
    assert summary.function_call_rows == ["interpolate (row 4)"]
    d = diagnose_data({"artifacts": [path.name]}, rulebase, base=path.parent)
    (brk,) = [f for f in d.run.by_type("compare_break")]
    assert brk["mod_name"] == "interpolate (row 4)" and brk["upstream"] == "backbone.layer3.relu"
    (facts,) = [f for f in d.facts if f.type == "compare_summary"]
    assert facts["worst_mod_name"] == "head.relu"
    # the report's lines name the layer (they read "舍入： 的 baseline" with an empty name)
    report = json.dumps(d.verdict_json, ensure_ascii=False)
    assert "舍入：interpolate (row 4) 的 baseline 与 analysis 范围一致但误差大" in report
    assert "误差起点是 interpolate (row 4)" in report


def test_many_odd_rows_give_a_few_warnings_and_a_count(tmp_path, rulebase):
    from j6doctor.diagnosis import diagnose_data
    from j6doctor.probes.probe_output import MAX_SKIP_NOTES

    lines = csv_text([vb_row(f"m{k}.relu", 0.9999, 0.02) for k in range(40)]).splitlines()
    for k in range(5, 5 + MAX_SKIP_NOTES + 5):   # fifteen rows cut short
        lines[k] = lines[k][:40]
    write_file(tmp_path, "compare_per_layer_out.csv", "\n".join(lines) + "\n")
    d = diagnose_data({"artifacts": ["compare_per_layer_out.csv"]}, rulebase, base=tmp_path)
    notes = [w for w in d.verdict_json["warnings"] if "compare_per_layer_out.csv" in w]
    per_line = [w for w in notes if "已跳过这部分" in w]
    assert [w.split("：", 1)[0] for w in per_line] == [f"compare_per_layer_out.csv:{k + 1}"
                                                       for k in range(5, 5 + MAX_SKIP_NOTES)]
    assert any("另有 5 处无法读取的内容已跳过" in w for w in notes)
    (summary,) = [f for f in d.facts if f.type == "compare_summary"]
    assert summary["rows"] == 40 - MAX_SKIP_NOTES - 5
