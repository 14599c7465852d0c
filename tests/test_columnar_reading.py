"""Columnar reading of compare and sensitivity tables (issue 13 item 2): the column-wise
reading and summaries give what a plain row-by-row reading gives, on generated tables with
the awkward cases (blank / None / nan / inf cells, ties, the origin on the last row, wide
characters, ragged and misaligned rows); floats arrive exactly; each artifact file is read
and hashed once; chart series are built only when a report draws them."""

from __future__ import annotations

import hashlib
import math
import random
import struct
from pathlib import Path

import pytest

from conftest import compare_judgement, write_file
from j6doctor.evidence import EvidenceOptions, collect
from j6doctor.probes import InputError
from j6doctor.probes.artifacts import FoundFile, find_artifacts, hashing_reads
from j6doctor.probes import compare_per_layer
from j6doctor.probes.compare_per_layer import (
    MAX_TEXT_BYTES, CompareRow, metric_row_for, read_compare_per_layer, summarize,
)
from j6doctor.probes.sensitivity import read_sensitivity_txt, summarize_sensitivity
from j6doctor.probes.text_file import observing_reads
from synthetic import CONV, IDENT, QCONV, VB_HEADER, big_rows, csv_text, psql, simple, vb_row

FIELDS = ("qscale", "cosine", "l1", "atol", "max_qscale_diff", "base_min", "analy_min", "base_max",
          "analy_max", "base_mean", "analy_mean")
HEADER_OF = dict(zip(FIELDS, VB_HEADER[5:]))


@pytest.fixture(autouse=True, params=["stdlib", "pandas"])
def reader(request, monkeypatch):
    """Each test on both readings: tables up to STDLIB_MAX_BYTES are cut by the csv module and
    read by float(), larger ones by pandas' C reader (forced here by a limit of 0)."""
    if request.param == "pandas":
        monkeypatch.setattr(compare_per_layer, "STDLIB_MAX_BYTES", 0)
    return request.param


def bits(value: float | None):
    return None if value is None else struct.pack("<d", value)


# --- a row-by-row reference: the cells of each line, the rules of FORMATS.md §13 -----------

def reference_rows(text: str, csv: bool) -> list[tuple]:
    """(line, mod_name, base_op_type, analy_op_type, shape, dtype, numbers...) read line by
    line with str.split and float(): what the columnar reading must give."""
    lines = text.replace("\r\n", "\n").split("\n")
    if csv:
        header = [c.strip() for c in lines[0].split(",")]
        body = [(k + 2, line.split(",")) for k, line in enumerate(lines[1:]) if line.strip()]
    else:
        header = [c.strip() for c in lines[1].split("|")[2:-1]]
        body = [(k + 4, line.split("|")[2:-1]) for k, line in enumerate(lines[3:-1])]
    at = {name: header.index(name) for name in VB_HEADER}
    out = []
    for line, cells in body:
        cells = [c.strip() for c in cells]

        def text_of(name, optional=False):
            value = cells[at[name]]
            if optional and value in ("", "None"):
                return None
            return value.replace("*", ",") if csv and name == "shape" else value

        numbers = tuple(None if cells[at[HEADER_OF[f]]] in ("", "None") else float(cells[at[HEADER_OF[f]]])
                        for f in FIELDS)
        out.append((line, text_of("mod_name"), text_of("base_op_type"), text_of("analy_op_type"),
                    text_of("shape", True), text_of("quant_dtype", True)) + numbers)
    return out


def as_tuples(rows: list[CompareRow]) -> list[tuple]:
    return [(r.line, r.mod_name, r.base_op_type, r.analy_op_type, r.shape, r.dtype)
            + tuple(getattr(r, f) for f in FIELDS) for r in rows]


def same_cells(got: list[tuple], want: list[tuple]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g[:6] == w[:6]
        assert [bits(v) for v in g[6:]] == [bits(v) for v in w[6:]], (g, w)


def healthy(r: CompareRow) -> bool:
    c, a, q = r.cosine, r.atol, r.max_qscale_diff
    if c is not None and not (math.isfinite(c) and c >= 0.99):
        return False
    if a is not None and not math.isfinite(a):
        return False
    return q is None or (math.isfinite(q) and q <= 10.0)


def reference_summary(rows: list[CompareRow]) -> dict:
    """The error-origin summary computed one row at a time (FORMATS.md §13.1-13.3)."""
    def below(c):
        return c is not None and not (math.isfinite(c) and c >= 0.99)

    def finite(v):
        return v is not None and math.isfinite(v)

    metric = [r for r in rows if r.cosine is not None or r.atol is not None]
    origin = None
    upstream, max_atol, max_mqd = None, 0.0, 0.0
    for r in metric:
        if upstream is None or healthy(upstream):
            trigger = None
            if upstream is None:
                trigger = ("cosine_drop" if below(r.cosine) else "atol_surge"
                           if r.atol is not None and not math.isfinite(r.atol) else
                           None if healthy(r) else "qscale_diff")
            else:
                c, ref = r.cosine, upstream.cosine if finite(upstream.cosine) else 1.0
                if c is not None and (not math.isfinite(c) or (c < 0.99 and ref - c >= 0.02)):
                    trigger = "cosine_drop"
                elif r.atol is not None and (not math.isfinite(r.atol) or (
                        not (finite(r.max_qscale_diff) and r.max_qscale_diff <= 10)
                        and max_atol > 0 and r.atol >= 10 * max_atol)):
                    trigger = "atol_surge"
                elif r.max_qscale_diff is not None and (not math.isfinite(r.max_qscale_diff)
                                                        or r.max_qscale_diff > max(10.0, 4 * max_mqd)):
                    trigger = "qscale_diff"
            if trigger:
                origin = (r.index, upstream.index if upstream else None, trigger)
                break
        if healthy(r):
            max_atol = max(max_atol, r.atol or 0.0)
            max_mqd = max(max_mqd, r.max_qscale_diff or 0.0)
        upstream = r
    if not metric:
        pattern, gradual = "no_metrics", None
    elif origin:
        pattern, gradual = "single_drop", None
    else:
        bad = next((k for k, r in enumerate(metric) if not healthy(r)), None)
        if bad is None:
            pattern, gradual = "healthy", None
        else:
            k = bad
            while k > 0 and finite(metric[k - 1].cosine) and metric[k].cosine is not None and (
                    not math.isfinite(metric[k].cosine) or metric[k - 1].cosine > metric[k].cosine):
                k -= 1
            pattern, gradual = "gradual", metric[k].index
    scored = [r for r in metric if r.cosine is not None]
    worst = min(scored, key=lambda r: -math.inf if math.isnan(r.cosine) else r.cosine).index if scored else None
    return {"rows": len(rows), "metric_rows": len(metric), "origin": origin, "pattern": pattern,
            "gradual_start": gradual, "worst": worst,
            "first_cosine_below": next((r.index for r in metric if below(r.cosine)), None)}


def summary_of(path, table, rulebase) -> dict:
    """The probe's summary and the rules' judgement of it (rules/54), in reference_summary's
    terms; the origin's triggers are a set (a row may break several ways)."""
    s = summarize(table)
    origin, shapes, triggers = compare_judgement(rulebase, path)
    step = next((b for b in s.breaks if origin is not None and b.row.index == origin["row"]), None)
    assert (origin is None) == (step is None)
    (shape,) = shapes
    return {"rows": s.rows, "metric_rows": s.metric_rows,
            "origin": (step.row.index, step.upstream.index if step.upstream else None, triggers) if step else None,
            "pattern": shape, "gradual_start": s.decline_start.index if shape == "gradual" else None,
            "worst": s.worst.index if s.worst else None,
            "first_cosine_below": s.first_cosine_below.index if s.first_cosine_below else None}


def assert_same_summary(got: dict, want: dict) -> None:
    """The reference names one trigger (the first of cosine, Atol, qscale); the rules give
    every trigger of the origin row, and `first_row` for a broken first row."""
    if got["origin"] is not None and want["origin"] is not None:
        row, upstream, triggers = got["origin"]
        assert want["origin"][2] in triggers or (upstream is None and "first_row" in triggers), (got, want)
        got = {**got, "origin": (row, upstream)}
        want = {**want, "origin": want["origin"][:2]}
    assert got == want


# --- generated tables -----------------------------------------------------------------------

CELLS = [None, math.nan, math.inf, -math.inf, 0.0, -0.0, 5e-324, 1e-7, 0.99, 0.9899999999999999,
         0.97, 1.0, 12.0, 1e308]


def random_rows(rng: random.Random, n: int, nan: bool, wide: bool) -> list[dict]:
    """Fused pairs and triples like a real table, with healthy runs, drops, blank, None,
    inf (and `nan`) cells, repeated Cosine values (ties) and (`wide`) a few wide-character
    names. A nan cell or a wide character leaves the fast reading to the exact one."""
    cells = [c for c in CELLS if nan or not (c is not None and math.isnan(c))]
    rows = []
    for i in range(n):
        name = f"层{i}.卷积" if wide and rng.random() < 0.02 else f"block{i}.op"
        if rng.random() < 0.3:
            rows.append(vb_row(name, None, None, base_op=CONV, analy_op=QCONV))
            continue
        cosine = rng.choice([0.9999, 0.99995, rng.choice(cells), 0.9 + rng.random() / 10])
        atol = rng.choice([0.02, 0.03, rng.choice(cells), rng.random() * 100])
        row = vb_row(name, cosine, atol, qscale=rng.choice([0.05, None, 0.0078125]),
                     base_max=rng.choice([6.0, 150.0]), analy_max=rng.choice([6.0, 127 * 0.05]),
                     base_op=rng.choice([IDENT, "torch.Tensor.add", "torch.nn.functional.relu"]),
                     analy_op=rng.choice([IDENT, QCONV, "torch.cat[hbir.concat]"]))
        if rng.random() < 0.05:
            row["max_qscale_diff"] = rng.choice(cells)
        rows.append(row)
    return rows


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("suffix", [".csv", ".txt"])
def test_columnar_table_and_summary_equal_a_row_by_row_reading(tmp_path, seed, suffix, rulebase):
    rng = random.Random(seed)
    nan, wide = seed % 2 == 1, seed % 3 == 0
    rows = random_rows(rng, rng.choice([1, 7, 150, 900]), nan, wide)
    text = csv_text(rows) if suffix == ".csv" else psql(rows)
    table = read_compare_per_layer(write_file(tmp_path, "compare_per_layer_out" + suffix, text))
    if suffix == ".txt" and not any(ord(ch) > 127 for ch in text):
        assert type(table.raw_text("mod_name")).__name__ == "_ByteCells"  # the aligned-grid reading
    same_cells(as_tuples(table.rows), reference_rows(text, suffix == ".csv"))
    same_cells(as_tuples([table.row(k) for k in range(len(table))]), as_tuples(table.rows))
    assert_same_summary(summary_of(tmp_path / table.display, table, rulebase), reference_summary(table.rows))


@pytest.mark.parametrize("suffix", [".csv", ".txt"])
@pytest.mark.parametrize("case", ["last_row", "first_row", "healthy", "gradual", "ties", "all_nan",
                                  "no_metrics"])
def test_summary_edge_cases(tmp_path, suffix, case, rulebase):
    if case == "last_row":     # the first divergent layer is the very last row
        rows = big_rows(3_000, 2_999)
    elif case == "first_row":
        rows = [vb_row("quant", 0.5, 0.3)] + big_rows(30, 100)[1:]
    elif case == "healthy":
        rows = big_rows(3_000, 10_000)
    elif case == "gradual":
        rows = [vb_row(f"l{i}", 0.9999 - i * 0.0004, 0.02) for i in range(60)]
    elif case == "ties":       # equal worst Cosine on several rows: the first one is the worst
        rows = [vb_row(f"l{i}", 0.95 if i % 7 == 3 else 0.9999, 0.02) for i in range(50)]
    elif case == "all_nan":
        rows = [vb_row(f"l{i}", math.nan, math.nan) for i in range(20)]
    else:
        rows = [vb_row(f"c{i}", None, None, base_op=CONV, analy_op=QCONV) for i in range(20)]
    text = csv_text(rows) if suffix == ".csv" else psql(rows)
    table = read_compare_per_layer(write_file(tmp_path, "compare_per_layer_out" + suffix, text))
    got, want = summary_of(tmp_path / table.display, table, rulebase), reference_summary(table.rows)
    assert_same_summary(got, want)
    if case == "last_row":
        assert got["origin"][0] == 2_999 == len(table) - 1
    if case == "ties":
        assert got["worst"] == 3


def test_the_summary_makes_row_objects_only_for_the_rows_it_names(tmp_path):
    text = csv_text(big_rows(30_000, 20_002))
    table = read_compare_per_layer(write_file(tmp_path, "compare_per_layer_out.csv", text))
    summary = summarize(table)
    assert summary.breaks[0].row.index == 20_002 and summary.breaks[0].fused_group == ("m6667.conv", "m6667.relu1")
    assert metric_row_for(table, "m6667.conv").index == 20_002
    assert "rows" not in table.__dict__  # CompareTable.rows (every row as an object) never built


# --- exact floats ---------------------------------------------------------------------------

TRICKY = ["0.1", "1.700000000000000177635684", "2.2250738585072011e-308", "4.9406564584124654e-324",
          "5e-324", "1e-400", "1e400", "-0.0", "0", "9007199254740993", "0.30000000000000004",
          "123456789012345678901234567890", "1E+16", "1e-5", "-1.5e-10", "3.141592653589793238462643383279",
          "8.98846567431158e307", "  7.25", "inf", "-Infinity"]


@pytest.mark.parametrize("suffix", [".csv", ".txt"])
def test_floats_arrive_as_python_reads_them(tmp_path, suffix):
    rng = random.Random(7)
    texts = TRICKY + [repr(rng.uniform(-1e3, 1e3)) for _ in range(200)] + \
        [f"{rng.random():.{rng.randint(1, 25)}f}" for _ in range(200)] + \
        [f"{rng.random():.17e}".replace("e", "E") for _ in range(50)]
    rows = [vb_row(f"l{k}", 0.9999, 0.02) for k in range(len(texts))]
    for row, value in zip(rows, texts):
        row["base_model_mean"] = value
    text = csv_text(rows) if suffix == ".csv" else psql(rows)
    table = read_compare_per_layer(write_file(tmp_path, "compare_per_layer_out" + suffix, text))
    got = [bits(r.base_mean) for r in table.rows]
    assert got == [bits(float(t)) for t in texts]


def test_a_nan_word_or_an_underscore_number_is_read_like_python_does(tmp_path):
    rows = [vb_row(f"l{k}", 0.9999, 0.02) for k in range(6)]
    for row, value in zip(rows, ["nan", "-nan", "NaN", "1_000.5", "+inf", "None"]):
        row["Cosine"] = value
    table = read_compare_per_layer(write_file(tmp_path, "compare_per_layer_out.csv", csv_text(rows)))
    cosines = [r.cosine for r in table.rows]
    assert all(math.isnan(c) for c in cosines[:3]) and math.copysign(1, cosines[1]) == -1
    assert cosines[3:] == [1000.5, math.inf, None]


# --- layouts, whitespace, bounds and errors ---------------------------------------------------

def test_line_ends_bom_blank_cells_and_trailing_blank_lines(tmp_path):
    rows = big_rows(300, 151)
    text = csv_text(rows)
    reference = as_tuples(read_compare_per_layer(write_file(tmp_path, "a.csv", text)).rows)
    for variant in (text.replace("\n", "\r\n"), "\ufeff" + text, text + "\n \t\n\n", text.rstrip("\n"),
                    text.replace("m1.relu1,", "m1.relu1  ,")):
        same_cells(as_tuples(read_compare_per_layer(write_file(tmp_path, "b.csv", variant)).rows), reference)
    blank = read_compare_per_layer(write_file(tmp_path, "c.csv", text.replace(", None, ", ", , ")))
    same_cells(as_tuples(blank.rows), reference)


def test_ragged_hbir_rows_in_either_direction(tmp_path):
    lines = csv_text(big_rows(60, 31)).split("\n")
    for k in (2, 20, 59):
        lines[k] += ", 1.0, 3.0"
    table = read_compare_per_layer(write_file(tmp_path, "c.csv", "\n".join(lines)))
    assert table.ragged_rows == 3 and summarize(table).analysis_type == "hbir"
    assert [(r.same_in_qatbc_qdiff, r.same_in_intbc_qdiff) for r in table.rows if r.same_in_intbc_qdiff] \
        == [(1.0, 3.0)] * 3
    header = ", ".join(VB_HEADER + ["same_in_qatbc_qdiff", "same_in_intbc_qdiff"])
    body = [line + ", 0.0, 2.0" if k % 2 else line for k, line in enumerate(csv_text(big_rows(40)).split("\n")[1:-1])]
    table = read_compare_per_layer(write_file(tmp_path, "d.csv", header + "\n" + "\n".join(body) + "\n"))
    assert table.ragged_rows == 20 and table.rows[1].same_in_intbc_qdiff == 2.0
    assert table.rows[0].same_in_intbc_qdiff is None


def read_skipping(tmp_path, lines: list[str]) -> tuple[CompareTable, list[tuple[int, str]]]:
    table = read_compare_per_layer(write_file(tmp_path, "compare_per_layer_out.csv", "\n".join(lines)))
    return table, [(item.line, item.reason) for item in table.skipped.kept]


def test_every_row_field_count_is_checked(tmp_path):
    lines = csv_text(big_rows(100, 51)).split("\n")
    whole = read_compare_per_layer(write_file(tmp_path, "whole.csv", "\n".join(lines)))
    names = [r.mod_name for r in whole.rows]
    # a row with too many fields after the first one; the first row itself; a blank line; and
    # two wrong rows whose commas add up to the header's width: each skipped and named, the
    # others read as they are, on their own lines
    too_many = lines[:40] + [lines[40] + ", 7"] + lines[41:]
    table, skipped = read_skipping(tmp_path, too_many)
    assert [line for line, _ in skipped] == [41] and "got 17 fields" in skipped[0][1]
    assert [r.mod_name for r in table.rows] == names[:39] + names[40:] and table.rows[39].line == 42
    first = [lines[0], lines[1] + ", 7, 8, 9"] + lines[2:]
    table, skipped = read_skipping(tmp_path, first)
    assert [line for line, _ in skipped] == [2] and [r.mod_name for r in table.rows] == names[1:]
    blank = lines[:30] + [""] + lines[30:]
    table, skipped = read_skipping(tmp_path, blank)   # a blank line carries nothing: passed over
    assert skipped == [] and [r.mod_name for r in table.rows] == names and table.rows[29].line == 32
    pair = list(lines)
    pair[10] = pair[10] + ", 5"
    pair[12] = ", ".join(pair[12].split(", ")[:-1])
    table, skipped = read_skipping(tmp_path, pair)
    assert [line for line, _ in skipped] == [11, 13] and "got 17 fields" in skipped[0][1]
    assert [r.mod_name for r in table.rows] == names[:9] + names[10:11] + names[12:]


@pytest.mark.parametrize("suffix,line", [(".csv", 5), (".txt", 7)])
def test_text_in_a_number_column_names_the_column_and_line(tmp_path, suffix, line):
    rows = [vb_row(f"l{k}", 0.9999, 0.02) for k in range(8)]
    rows[3]["Atol"] = "12 3"
    text = csv_text(rows) if suffix == ".csv" else psql(rows)
    table = read_compare_per_layer(write_file(tmp_path, "compare_per_layer_out" + suffix, text))
    (item,) = table.skipped.kept
    assert item.line == line and "column 'Atol': expected a number" in item.reason
    assert "'12 3'" in item.reason and "read as blank" in item.reason
    assert table.rows[3].atol is None and table.rows[3].cosine == 0.9999 and len(table) == 8


def test_psql_rows_a_fixed_grid_cannot_read(tmp_path):
    lines = psql(big_rows(90, 46)).split("\n")
    reference = reference_rows("\n".join(lines), csv=False)
    # a cell holding a '|' (the row stays aligned) and a line with trailing spaces
    assert "m2.relu1 " in lines[10]
    odd = list(lines)
    odd[10] = odd[10].replace("m2.relu1 ", "m2|relu1 ", 1)
    odd[20] += "   "
    table = read_compare_per_layer(write_file(tmp_path, "a.txt", "\n".join(odd)))
    want = [t[:1] + ("m2|relu1",) + t[2:] if t[1] == "m2.relu1" else t for t in reference]
    same_cells(as_tuples(table.rows), want)
    # a continuation line (blank row number): its text joins the cell above it
    widths = [len(c) for c in lines[0].split("+")[1:-1]]
    cells = [" " * w for w in widths]
    cells[1] = " .tail".ljust(widths[1])
    merged = read_compare_per_layer(write_file(tmp_path, "b.txt", "\n".join(
        lines[:5] + ["|" + "|".join(cells) + "|"] + lines[5:])))
    assert merged.rows[1].mod_name == reference[1][1] + "\n.tail" and merged.rows[2].line == 7
    # a row that is no table row: skipped and named, the others read
    table = read_compare_per_layer(write_file(tmp_path, "c.txt", "\n".join(lines[:30] + ["| 27 | x |"] + lines[31:])))
    (item,) = table.skipped.kept
    assert item.line == 31 and "row '| 27 | x |' does not line up with the 17 table columns" in item.reason
    assert len(table) == len(reference) - 1 and table.rows[27].line == 32


def display_padded(rows: list[list[str]], numeric: list[bool]) -> list[str]:
    """Cells padded by display width (a CJK character takes two columns), as tabulate pads
    them when wcwidth is installed."""
    import unicodedata

    def width(text: str) -> int:
        return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)

    widths = [max(width(r[k]) for r in rows) for k in range(len(rows[0]))]
    out = []
    for r in rows:
        out.append([(" " * (w - width(c)) + c) if num else (c + " " * (w - width(c)))
                    for c, w, num in zip(r, widths, numeric)])
    return out, widths


def test_wide_characters_in_psql_and_sensitivity_tables(tmp_path):
    names = ["骨干.层1.卷积", "café.relu", "ascii.conv", "头部.融合"]
    rows = [vb_row(name, 0.9999, 0.02) for name in names]
    rows[3]["Cosine"] = 0.5
    # padded by characters (synthetic.psql) and by display width (tabulate with wcwidth)
    char_padded = psql(rows)
    lines = char_padded.split("\n")
    cells = [[c.strip() for c in line.split("|")[1:-1]] for line in lines[3:-1]]
    header = [c.strip() for c in lines[1].split("|")[1:-1]]
    padded, widths = display_padded([header] + cells, [True] + [False] * 5 + [True] * 11)
    border = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    display = [border, "|" + "|".join(f" {c} " for c in padded[0]) + "|",
               "|" + "+".join("-" * (w + 2) for w in widths) + "|",
               *("|" + "|".join(f" {c} " for c in r) + "|" for r in padded[1:]), border]
    for text in (char_padded, "\n".join(display)):
        table = read_compare_per_layer(write_file(tmp_path, "compare_per_layer_out.txt", text))
        assert [r.mod_name for r in table.rows] == names
        assert [r.cosine for r in table.rows] == [0.9999, 0.9999, 0.9999, 0.5]
        assert summarize(table).breaks[0].row.mod_name == "头部.融合"
        assert metric_row_for(table, "头部.融合").index == 3
    sens_rows = [["op_name", "sensitive_type", "op_type", "L1", "quant_dtype", "flops"],
                 ["骨干.卷积", "activation", "<class 'x'>", "0.5", "qint8", "1(1%)"],
                 ["头.卷积 二", "weight", "<class 'y'>", "0.2", "qint8", "0(0%)"],
                 ["ascii.conv", "activation", "<class 'z'>", "0.1", "", "0(0%)"]]
    padded, widths = display_padded(sens_rows, [False, False, False, True, False, False])
    text = "\n".join(["  ".join(padded[0]).rstrip(), "  ".join("-" * w for w in widths),
                      *("  ".join(r).rstrip() for r in padded[1:])])
    table = read_sensitivity_txt(write_file(tmp_path, "output_0_L1_sensitive_ops.txt", text))
    assert [(r.op_name, r.op_type, r.value, r.quant_dtype) for r in table.rows] == [
        ("骨干.卷积", "<class 'x'>", 0.5, "qint8"), ("头.卷积 二", "<class 'y'>", 0.2, "qint8"),
        ("ascii.conv", "<class 'z'>", 0.1, None)]


@pytest.mark.parametrize("suffix", [".csv", ".txt"])
def test_the_size_limit_still_refuses_before_reading(tmp_path, suffix):
    path = tmp_path / ("compare_per_layer_out" + suffix)
    with path.open("wb") as handle:
        handle.truncate(MAX_TEXT_BYTES + 1)
    with pytest.raises(InputError, match=rf"too large \({MAX_TEXT_BYTES + 1} bytes; limit {MAX_TEXT_BYTES}\)"):
        read_compare_per_layer(path)


# --- sensitivity: columnar summary against the row-by-row reference ----------------------------

def reference_sensitivity(rows, metric: str, order: str) -> tuple:
    key = metric.lower()
    if key == "cosine":
        base = lambda v: 1.0 - v  # noqa: E731
    elif key == "sqnr":
        base = lambda v: 10.0 ** min(-v / 20.0, 300.0)  # noqa: E731
    elif key in {"l1", "mse", "kl", "atol", "rtol", "l2", "mae"} or order != "ascending":
        base = lambda v: v  # noqa: E731
    else:
        best = max((r.value for r in rows if not math.isnan(r.value)), default=0.0)
        base = lambda v: best - v  # noqa: E731

    def distance(v):
        return math.inf if math.isnan(v) else max(base(v), 0.0)

    ranked = sorted(rows, key=lambda r: -distance(r.value))
    seen, distinct = set(), []
    for r in ranked:
        if r.op_name not in seen:
            seen.add(r.op_name)
            distinct.append(r)
    return ranked[0].rank, distinct[1].rank if len(distinct) > 1 else None, [r.rank for r in distinct[:5]]


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("metric", ["L1", "Cosine", "SQNR", "FOO"])
def test_sensitivity_summary_equals_the_row_by_row_one(tmp_path, seed, metric):
    rng = random.Random(seed)
    n = rng.choice([1, 2, 5, 40, 400])
    pool = [0.0, 0.5, 0.5, 1.0, math.inf, math.nan, 30.0, 0.999, 0.1, 2.5]
    values = [rng.choice(pool) if rng.random() < 0.4 else rng.random() * 40 for _ in range(n)]
    if rng.random() < 0.5:
        values.sort(reverse=metric in ("L1",))
    names = [f"op{rng.randint(0, max(1, n // 3))}" for _ in range(n)]
    text = simple(["op_name", "sensitive_type", "op_type", metric, "quant_dtype", "flops"],
                  [[name, "activation", f"<class '{QCONV}'>", v, "qint8", "0(0%)"] for name, v in zip(names, values)],
                  [False, False, False, True, False, False])
    table = read_sensitivity_txt(write_file(tmp_path, f"output_0_{metric}_sensitive_ops.txt", text))
    assert [(r.op_name, r.line) for r in table.rows] == [(name, k + 3) for k, name in enumerate(names)]
    assert [bits(r.value) for r in table.rows] == [bits(float(format(v, "g"))) for v in values]
    summary = summarize_sensitivity(table)
    top, runner_up, top_ops = reference_sensitivity(table.rows, table.metric, table.order)
    assert (summary.top.rank, summary.runner_up.rank if summary.runner_up else None,
            [r.rank for r in summary.top_ops]) == (top, runner_up, top_ops)


def test_sensitivity_row_errors_name_the_first_bad_row(tmp_path):
    rows = [[f"op{k}", "activation", "<class 'x'>", 0.5 - k / 100, "qint8", "1(1%)"] for k in range(30)]
    text = simple(["op_name", "sensitive_type", "op_type", "L1", "quant_dtype", "flops"], rows,
                  [False, False, False, True, False, False])
    lines = text.split("\n")
    no_flops = lines[:20] + [lines[20].replace("1(1%)", "     ")] + lines[21:]
    not_number = lines[:25] + [lines[25].replace("0.27", "abc ")] + lines[26:]
    both = lines[:12] + [lines[12].replace("1(1%)", "     ")] + lines[13:16] + [lines[16].replace("0.36", "x   ")] + lines[17:]
    for content, skipped in ((no_flops, [(21, "flops")]), (not_number, [(26, "expected a number")]),
                             (both, [(13, "flops"), (17, "expected a number")])):
        table = read_sensitivity_txt(write_file(tmp_path, "output_0_L1_sensitive_ops.txt", "\n".join(content)))
        assert [(item.line, fragment in item.reason) for item, (_, fragment) in zip(table.skipped.kept, skipped)] \
            == [(line, True) for line, _ in skipped]
        assert len(table) == 30 - len(skipped)
        assert {r.line for r in table.rows}.isdisjoint(line for line, _ in skipped)


# --- read once, hashed once; charts only when drawn -------------------------------------------

def test_each_artifact_file_is_read_once_and_hashed_from_those_bytes(tmp_path):
    folder = tmp_path / "qa"
    write_file(folder, "compare_per_layer_out.csv", csv_text(big_rows(600, 301)))
    write_file(folder, "compare_per_layer_out.txt", psql(big_rows(600, 301)))
    write_file(folder, "output_0_L1_sensitive_ops.txt",
          simple(["op_name", "sensitive_type", "op_type", "L1", "quant_dtype", "flops"],
                 [["m100.conv", "activation", f"<class '{QCONV}'>", 0.3, "qint8", "0(0%)"],
                  ["m3.conv", "weight", f"<class '{QCONV}'>", 0.01, "qint8", "0(0%)"]],
                 [False, False, False, True, False, False]))
    reads: list[Path] = []
    with observing_reads(lambda path, raw: reads.append(Path(path))):
        evidence = collect(None, EvidenceOptions(workdirs=[folder], use_environment=False))
    assert sorted(p.name for p in reads) == ["compare_per_layer_out.csv", "output_0_L1_sensitive_ops.txt"]
    files = [f for f in evidence.facts if f.type == "artifact_file"]
    assert {f["path"]: f["sha256"] for f in files} == {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()}
    # the artifact_file facts come before the facts read from the files, numbered in order
    kinds = [f.type for f in evidence.facts]
    assert kinds.index("artifact_file") < kinds.index("compare_summary")
    assert [f.id for f in evidence.facts] == [f"f{k + 1}" for k in range(len(evidence.facts))]
    summary = next(f for f in evidence.facts if f.type == "sensitivity_summary")
    assert summary["compare_row"] == "m100.relu1"


def test_hashing_reads_gives_a_found_file_the_digest_of_the_bytes_read(tmp_path):
    path = write_file(tmp_path, "compare_per_layer_out.csv", csv_text(big_rows(50)))
    found, _, _ = find_artifacts([tmp_path], tmp_path, hash_now=False)
    (item,) = found
    assert isinstance(item, FoundFile) and item.digest is None
    with hashing_reads(found) as digests:
        read_compare_per_layer(item.path, item.display)
    assert item.digest == hashlib.sha256(path.read_bytes()).hexdigest() == digests.of(path)
    hashed_now, _, _ = find_artifacts([tmp_path], tmp_path)
    assert hashed_now[0].sha256 == item.sha256


def test_chart_series_are_built_from_the_kept_reading(tmp_path):
    from j6doctor.charts import series_of

    folder = tmp_path / "qa"
    write_file(folder, "compare_per_layer_out.csv", csv_text(big_rows(3_000, 2_002)))
    evidence = collect(None, EvidenceOptions(workdirs=[folder], use_environment=False))
    (reading,) = evidence.readings  # the probe's table and summary: no series built yet
    assert reading.kind == "compare" and reading.path == "compare_per_layer_out.csv"
    assert series_of(reading)["origin"] is None  # the origin is the rules' judgement, given by the report
    chart = series_of(reading, {"compare_per_layer_out.csv": 2_002})
    assert chart["kind"] == "compare" and chart["rows"] == 3_000 and chart["origin"] == 2_002
    assert chart["origin_name"] == "m667.relu1"
    summary = next(f for f in evidence.facts if f.type == "compare_summary")
    shown = {point[0]: point for point in chart["points"]}
    assert 600 <= len(shown) <= 602  # thinned to 600 points, the origin and the worst row kept
    assert 2_002 in shown and shown[2_002][1] == "m667.relu1"
    assert summary["worst_cosine"] in {point[2] for point in chart["points"]}
