"""The HTML report's charts and links as a reader sees them: round tick values on the log
(ATOL) and linear (COSINE) axes with distinct labels, long op names kept inside the SVG,
the error-origin label clear of the curve, chart titles that do not split Chinese words,
rule ids linked to the fired-rules list, metric values with their decimal. Real renders;
what is visual is measured in headless Chromium."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
from decimal import Decimal
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conftest import EXAMPLE_CASES, EXAMPLES, FULL_INFO, REPO, ok
from j6doctor.charts import _log_axis, _linear_axis, layout_compare, layout_sensitivity, metric_text
from j6doctor.diagnosis import diagnose, diagnose_data
from j6doctor.evidence import EvidenceOptions
from j6doctor.probes.case_file import read_case
from j6doctor.report import render_html
from j6doctor.rules import BUNDLED_RULES_DIR

CONVERT = {**FULL_INFO, "results": {"qat_bc": ok("normal"), "quantized_bc": ok("abnormal")}}
QA = BUNDLED_RULES_DIR / "fixtures" / "horizon_quant_analysis"
VARIANTS = REPO / "tests" / "fixtures" / "formats" / "variants"
LONG_OP = "model.backbone.stages.3.blocks.12.attention.multi_head_projection.backbone.layer3.conv2"
LONG_ORIGIN = "model.backbone.stages.3.blocks.12.attention.multi_head_projection.backbone.layer3.relu2"


def html_of(data, base, rulebase):
    d = diagnose_data(data, rulebase, base=base, options=EvidenceOptions(use_environment=False))
    return render_html(d)


def example_html(name: str, rulebase) -> str:
    return render_html(diagnose(read_case(EXAMPLES / name), rulebase, EvidenceOptions(use_environment=False)))


def _section(html: str, title: str) -> str:
    return html.split(f"{title}</text>")[1].split("</svg>")[0]


def _tick_labels(svg: str) -> list[str]:
    return [t for t in re.findall(r'text-anchor="end" fill="#4a5568">([^<]+)</text>', svg) if not t.startswith("行")]


def _is_round(label: str) -> bool:
    """m × 10^k with m in 1..9."""
    digits = Decimal(label).normalize().as_tuple().digits
    return len(digits) == 1 and digits[0] != 0


# --- 1. ATOL (log) ticks are round ----------------------------------------------------------

def test_atol_ticks_round_when_range_spans_less_than_a_decade(tmp_path, rulebase):
    """The reviewer's case: the variants folder's ATOL spans 0.041–0.091 (under a decade);
    the ticks read 0.05 … 0.09, not 0.0412, 0.0502 …"""
    html = html_of({"artifacts": [str(VARIANTS)]}, tmp_path, rulebase)
    for svg in html.split("ATOL（对数坐标）</text>")[1:]:
        ticks = _tick_labels(svg.split("</svg>")[0])
        assert len(ticks) >= 2 and all(_is_round(t) for t in ticks), ticks
    first = _tick_labels(_section(html, "ATOL（对数坐标）"))
    assert first == ["0.05", "0.06", "0.07", "0.08", "0.09"], first


@pytest.mark.parametrize("low, high, expected", [
    (0.0412, 0.0907, ["0.05", "0.06", "0.07", "0.08", "0.09"]),  # under a decade: 1..9 × 10^k
    (0.03, 0.25, ["0.05", "0.1", "0.2"]),                         # 1-2-5 × 10^k
    (0.05, 0.6, ["0.05", "0.1", "0.2", "0.5"]),                   # a decade but one power of ten
    (0.005, 3.0, ["0.01", "0.1", "1"]),                           # powers of ten
    (1e-7, 1e5, ["1e-07", "0.0001", "0.1", "100", "1e+05"]),    # many: every third power
    (0.04119, 0.04121, ["0.04", "0.05"]),                         # no round value inside: widened
    (7.3e-301, 7.4e-301, ["7e-301", "8e-301"]),                   # exponents past float's 10 ** k
])
def test_log_axis_ticks(low, high, expected):
    axis_low, axis_high, ticks = _log_axis(math.log10(low), math.log10(high))
    assert [text for _, text in ticks] == expected
    assert axis_low <= math.log10(low) + 1e-12 and axis_high >= math.log10(high) - 1e-12
    for value, text in ticks:  # each tick sits where its label says
        assert axis_low - 1e-9 <= value <= axis_high + 1e-9
        assert math.isclose(value, math.log10(float(text)), abs_tol=1e-9)


# --- 2. COSINE (linear) ticks: round, and labels that differ --------------------------------

@pytest.mark.parametrize("low, high", [
    (0.99905, 0.99999), (0.87, 1.0), (0.9999990, 0.9999999), (-0.2, 1.0), (0.5, 0.5000001),
    (1e16 - 5e14, 1e16 + 5e14), (-1.7e308, 1.7e308), (3.0, 41.0), (0.0, 1e-11),
])
def test_linear_axis_ticks_round_and_distinct(low, high):
    axis_low, axis_high, ticks = _linear_axis(low, high)
    labels = [text for _, text in ticks]
    assert len(ticks) >= 2 and len(set(labels)) == len(labels), labels
    assert axis_low <= low and axis_high >= high
    values = [v for v, _ in ticks]
    steps = {Decimal(b) - Decimal(a) for a, b in zip(labels, labels[1:])}
    assert len(steps) == 1, labels  # evenly spaced as written
    step = steps.pop()
    assert _is_round(str(step)) and Decimal(str(step)).normalize().as_tuple().digits[0] in (1, 2, 5), labels
    for value, text in zip(values, labels):
        assert math.isclose(value, float(text), rel_tol=1e-9, abs_tol=float(step) * 1e-6)


def test_cosine_ticks_in_the_report_are_distinct(tmp_path, rulebase):
    """The reviewer's case read 1, 1, 1, 0.999, 0.999."""
    html = html_of({"artifacts": [str(VARIANTS)]}, tmp_path, rulebase)
    for svg in html.split("COSINE</text>")[1:]:
        ticks = _tick_labels(svg.split("</svg>")[0])
        assert len(ticks) >= 2 and len(set(ticks)) == len(ticks), ticks
    assert _tick_labels(_section(html, "COSINE")) == ["0.9990", "0.9995", "1.0000"]


# --- 3 and 6. Long names: sensitivity labels and the origin label ---------------------------

def _simple_table(rows: list[list[str]]) -> str:
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    line = lambda r: "  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([line(rows[0]), "  ".join("-" * w for w in widths)] + [line(r) for r in rows[1:]]) + "\n"


def long_names_case(root: Path) -> Path:
    """The quant-analysis fixture with the most sensitive op and the error origin renamed to
    long dotted names, in a deeply nested folder."""
    folder = root / ("very_long_folder_name_of_a_real_project_" * 4) / "qa"
    shutil.copytree(QA, folder)
    (folder / "compare_per_layer_out.txt").unlink()  # the csv holds the same table
    csv = folder / "compare_per_layer_out.csv"
    csv.write_text(csv.read_text(encoding="utf-8").replace("backbone.layer3.relu2,", LONG_ORIGIN + ","),
                   encoding="utf-8")
    sens = next(folder.glob("*_Cosine_sensitive_ops.txt"))
    lines = sens.read_text(encoding="utf-8").splitlines()
    rows = [re.split(r"\s{2,}", ln.strip()) for ln in lines if ln.strip() and not set(ln.strip()) <= {"-", " "}]
    rows = [[LONG_OP if c == "backbone.layer3.conv2" else c for c in r] for r in rows]
    sens.write_text(_simple_table(rows), encoding="utf-8")
    return folder


def test_long_op_names_are_shortened_keeping_the_tail(tmp_path, rulebase):
    folder = long_names_case(tmp_path)
    html = html_of({**CONVERT, "artifacts": [str(folder)]}, tmp_path, rulebase)
    assert f"误差起点 <span class=\"path\">{LONG_ORIGIN}</span>" in html  # the chart title: in full
    labels = re.findall(r'<text class="op"[^>]*>([^<]+)<title>([^<]+)</title></text>', html)
    shortened = [(shown, full) for shown, full in labels if shown != full]
    assert shortened, labels
    for shown, full in shortened:
        assert shown.startswith("…") and full.endswith(shown[1:])
        assert re.search(r"layer3\.conv2 \((activation|weight)\)$", shown)
    assert re.search(rf'<rect class="bar"[^>]*><title>{re.escape(LONG_OP)} \(activation\)', html)
    origin = re.findall(r'<text class="origin-label"[^>]*>([^<]+)<title>([^<]+)</title>', html)
    assert origin and all(full == f"误差起点 {LONG_ORIGIN}" and shown.endswith("relu2") for shown, full in origin)


def test_origin_label_sits_above_the_plot_and_flips_near_the_right_edge():
    points = [(i, f"layer{i}", 0.99 - i * 0.01, 0.01 * (i + 1)) for i in range(20)]
    series = {"kind": "compare", "title": "逐层对比", "path": "x.csv", "rows": 20, "points": points}
    left = layout_compare({**series, "origin": 2, "origin_name": "layer2"})
    right = layout_compare({**series, "origin": 19, "origin_name": "layer19"})
    for chart in (left, right):
        label = chart["origin_label"]
        assert float(label["y"]) < chart["pad_top"] - 4  # in the margin above the plot
        for panel in (chart["cosine"], chart["atol"]):
            assert all(float(p.split(",")[1]) >= chart["pad_top"] - 0.05 for p in panel["points"].split())
    assert left["origin_label"]["anchor"] == "start" and right["origin_label"]["anchor"] == "end"


def test_sensitivity_labels_fit_their_column():
    bars = [(LONG_OP + " (activation)", 0.5, 0.5), ("中文名称的算子" * 8 + " (weight)", 0.1, 0.9),
            ("a.b (activation)", 0.0, 1.0)]
    chart = layout_sensitivity({"kind": "sensitivity", "path": "s.txt", "metric": "Cosine", "measure": "1 − Cosine",
                                "bars": bars, "top": LONG_OP})
    shown = [b["label"] for b in chart["bars_drawn"]]
    assert shown[2] == "a.b (activation)"
    assert shown[0].startswith("…") and shown[0].endswith("layer3.conv2 (activation)")
    assert shown[1].startswith("…") and shown[1].endswith("(weight)")


# --- 7. metric values keep their decimal ----------------------------------------------------

def test_float_metric_values_keep_a_decimal(rulebase):
    html = example_html("convert_j6m.yaml", rulebase)
    assert "mAP = 41.0）" in html and "mAP = 41）" not in html
    assert "mAP = 41.2）" in html
    assert metric_text(41.0, 4) == "41.0" and metric_text(0.96731, 4) == "0.9673" and metric_text(3, 4) == "3"
    assert metric_text(1e20, 4) == "1e+20" and metric_text(math.inf, 4) == "inf"


# --- 4. rule ids link to the fired-rules list -----------------------------------------------

class _Page(HTMLParser):
    """Ids, local links, and the text outside links (with the id of the enclosing rule entry)."""

    def __init__(self):
        super().__init__()
        self.ids, self.hrefs, self.loose = set(), [], []
        self._stack: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("href", "").startswith("#"):
            self.hrefs.append(attrs["href"][1:])
        if tag not in ("meta", "br", "line", "circle", "rect", "polyline"):
            self._stack.append((tag, attrs))

    def handle_startendtag(self, tag, attrs):  # <line …/>: nothing to enter
        if "id" in dict(attrs):
            self.ids.add(dict(attrs)["id"])

    def handle_endtag(self, tag):
        while self._stack:
            if self._stack.pop()[0] == tag:
                break

    def handle_data(self, data):
        if any(t in ("a", "title", "style") for t, _ in self._stack):
            return
        if len(self._stack) >= 2 and self._stack[-1][0] in ("code", "span") and \
                self._stack[-2][1].get("id", "").startswith("rule-"):
            return  # the fired-rules entry's own id and file:line: the link target itself
        self.loose.append(data)


def _pages(rulebase, tmp_path):
    yield "qa", html_of({**CONVERT, "artifacts": ["qa"]}, _qa(tmp_path), rulebase)
    for case in EXAMPLE_CASES:
        yield case.name, example_html(case.name, rulebase)


def _qa(tmp_path):
    if not (tmp_path / "qa").exists():
        shutil.copytree(QA, tmp_path / "qa")
    return tmp_path


def test_rule_ids_are_links_that_resolve(rulebase, tmp_path):
    rule_ids = {r.id for r in rulebase.rules}
    for name, html in _pages(rulebase, tmp_path):
        page = _Page()
        page.feed(html)
        assert page.hrefs, name
        unresolved = [h for h in page.hrefs if h not in page.ids]
        assert not unresolved, f"{name}: links to no element: {unresolved}"
        text = " ".join(page.loose)
        plain_ids = sorted(i for i in rule_ids if re.search(rf"(?<![\w.-]){re.escape(i)}(?![\w-]|\.\w)", text))
        # only a rule that did not fire (no entry in the list to link to) may be named as text
        assert not [i for i in plain_ids if f"rule-{i}" in page.ids], f"{name}: rule ids as plain text: {plain_ids}"
        assert not re.search(r"rules/[\w./-]+\.yaml:\d+", text), f"{name}: a rule's file:line as plain text"
        checks = html.split('id="checks">')[1].split("</ol>")[0]
        fired = re.findall(r'<a class="rule" href="#rule-([^"]+)">\1</a>', checks)
        assert fired and all(f"rule-{r}" in page.ids for r in fired), name


# --- 5 and 6 in the browser -----------------------------------------------------------------

def _chromium():
    from test_html_report import _chromium as find  # noqa: PLC0415

    return find()


MEASURE = """<script>window.addEventListener("load", () => {
  const out = {scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth,
               titles: [], ops: [], origins: []};
  for (const t of document.querySelectorAll(".chart-title")) {
    const node = t.firstChild, range = document.createRange();
    const head = node.textContent.indexOf("：") + 1;
    range.setStart(node, 0); range.setEnd(node, head);
    const tops = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
    out.titles.push({head: node.textContent.slice(0, head), lines: tops.size, right: t.getBoundingClientRect().right});
  }
  for (const svg of document.querySelectorAll("svg.sensitivity-chart")) {
    const box = svg.getBoundingClientRect(), vb = svg.viewBox.baseVal;
    for (const t of svg.querySelectorAll("text.op")) {
      const b = t.getBBox();
      out.ops.push({x: b.x, right: b.x + b.width, width: vb.width});
    }
  }
  for (const svg of document.querySelectorAll("svg.compare-chart")) {
    const label = svg.querySelector("text.origin-label");
    if (!label) continue;
    const b = label.getBBox(), title = svg.querySelector("text").getBBox();
    const pts = svg.querySelector("polyline.series").points;
    let hits = 0;
    for (let i = 0; i < pts.numberOfItems; i++) {
      const p = pts.getItem(i);
      if (p.x >= b.x && p.x <= b.x + b.width && p.y >= b.y && p.y <= b.y + b.height) hits++;
    }
    const plotTop = Number(svg.querySelectorAll("line")[1].getAttribute("y1"));
    out.origins.push({x: b.x, right: b.x + b.width, bottom: b.y + b.height, top: b.y, width: svg.viewBox.baseVal.width,
                      plotTop, hits, overlapsTitle: !(b.x > title.x + title.width || b.x + b.width < title.x ||
                                                     b.y > title.y + title.height || b.y + b.height < title.y)});
  }
  document.body.setAttribute("data-measure", JSON.stringify(out));
});</script>"""


def _measure(browser, tmp_path, html: str, viewport: int) -> dict:
    page = tmp_path / f"report_{viewport}.html"
    page.write_text(html.replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}", f"--window-size={viewport},900", "--dump-dom",
             "--virtual-time-budget=2000"]
    dom = subprocess.run([browser, *flags, page.as_uri()], capture_output=True, timeout=120)
    found = re.search(r'data-measure="([^"]+)"', dom.stdout.decode())
    assert found, dom.stderr.decode()[-2000:]
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))


@pytest.mark.browser
@pytest.mark.parametrize("viewport", [1280, 800])
def test_long_names_in_the_browser(rulebase, tmp_path, viewport):
    """Chart titles with a long path keep 逐层对比： / 敏感度： on one line and the page does not
    scroll sideways; sensitivity op labels start inside the SVG; the origin label sits above
    the plot, inside the SVG, off the curve and off the panel title."""
    browser = _chromium()
    folder = long_names_case(tmp_path)
    (tmp_path / "case").mkdir()  # the case file elsewhere: the charts name the tables by absolute path
    html = html_of({**CONVERT, "artifacts": [str(folder)]}, tmp_path / "case", rulebase)
    assert '<div class="chart-title">逐层对比：<span class="path">/' in html
    m = _measure(browser, tmp_path, html, viewport)
    assert m["scroll"] <= m["client"], f"horizontal overflow at {viewport} px: {m['scroll']} > {m['client']}"
    assert len(m["titles"]) == 3, m["titles"]
    for title in m["titles"]:
        assert title["lines"] == 1, f"the title words {title['head']!r} are split across lines at {viewport} px"
        assert title["right"] <= m["client"]
    assert len(m["ops"]) == 30
    for op in m["ops"]:
        assert op["x"] >= 0 and op["right"] <= 300, op
    assert len(m["origins"]) == 2
    for o in m["origins"]:
        assert o["x"] >= 0 and o["right"] <= o["width"], o
        assert o["bottom"] <= o["plotTop"] and o["top"] >= 0, o
        assert o["hits"] == 0 and not o["overlapsTitle"], o


def test_rule_linker_links_fired_ids_only():
    from j6doctor.report import _rule_linker

    link = _rule_linker({"map.convert", "map.convert_x", "reading.compare_summary"})
    html = str(link("见 map.convert 与 map.convert_x；reading.compare_summary.extra 不是；<b>& map.board"))
    assert html == ('见 <a class="rule" href="#rule-map.convert">map.convert</a> 与 '
                    '<a class="rule" href="#rule-map.convert_x">map.convert_x</a>；'
                    'reading.compare_summary.extra 不是；&lt;b&gt;&amp; map.board')
