"""--format html: a self-contained page with the report's sections, per-layer and
sensitivity charts (error origin marked) and the evidence chain; rendered in headless
Chromium in CI."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from conftest import FULL_INFO, ok
from png_pixels import count_near, read_png
from synthetic import write_workdir
from j6doctor.diagnosis import diagnose_data
from j6doctor.evidence import EvidenceOptions
from j6doctor.report import render_html
from j6doctor.rules import BUNDLED_RULES_DIR

CONVERT = {**FULL_INFO, "results": {"qat_bc": ok("normal"), "quantized_bc": ok("abnormal")}}
SECTIONS = ["结论摘要", "已确认事实", "执行过的检查", "关键发现", "下一步建议", "需要保留的产物", "附录：证据链"]
RED, BLUE = (0xE5, 0x3E, 0x3E), (0x2B, 0x6C, 0xB0)


@pytest.fixture
def qa_case(tmp_path):
    shutil.copytree(BUNDLED_RULES_DIR / "fixtures" / "horizon_quant_analysis", tmp_path / "qa")
    return tmp_path


def html_of(data, base, rulebase):
    d = diagnose_data(data, rulebase, base=base, options=EvidenceOptions(use_environment=False))
    return render_html(d)


def test_sections_charts_and_chain(qa_case, rulebase):
    html = html_of({**CONVERT, "artifacts": ["qa"]}, qa_case, rulebase)
    assert re.findall(r"<h2 id=\"\w+\">([^<]+)</h2>", html) == SECTIONS
    assert html.count('class="chart compare-chart"') == 2  # COSINE and ATOL panels
    assert html.count('class="chart sensitivity-chart"') == 2
    assert html.count('<line class="origin"') == 2 and "误差起点 backbone.layer3.relu2" in html
    points = re.search(r'<polyline class="series"[^>]*points="([^"]+)"', html).group(1).split()
    assert len(points) == 17  # the metric-bearing rows of the fixture
    assert html.count('<rect class="bar"') == 15 + 15
    assert "规则 map.convert" in html and "<script" not in html


def test_self_contained_and_escaped(qa_case, rulebase):
    html = html_of({**CONVERT, "symptom": "<script>alert('x')</script> & <b>掉点</b>", "artifacts": ["qa"]},
                   qa_case, rulebase)
    assert "<script" not in html.lower()
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &lt;b&gt;掉点&lt;/b&gt;" in html
    assert not re.search(r"(src|href)=\"(https?:)?//", html)
    assert "<link" not in html and "@import" not in html


def test_large_tables_are_thinned_keeping_the_origin(tmp_path, rulebase):
    work = write_workdir(tmp_path / "qa", 30_000)
    html = html_of({**CONVERT, "artifacts": ["qa"]}, tmp_path, rulebase)
    points = re.search(r'<polyline class="series"[^>]*points="([^"]+)"', html).group(1).split()
    assert 500 <= len(points) <= 620
    assert "误差起点 m" in html
    assert work.exists()


def test_same_bytes_every_time(qa_case, rulebase):
    data = {**CONVERT, "artifacts": ["qa"]}
    assert html_of(data, qa_case, rulebase) == html_of(data, qa_case, rulebase)


def test_cli_html(cli, qa_case):
    case = qa_case / "case.yaml"
    case.write_text("results: {qat_bc: normal, quantized_bc: abnormal}\nartifacts: [qa]\n", encoding="utf-8")
    out = qa_case / "report.html"
    proc = cli("diagnose", str(case), "--no-env", "--format", "html", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    if os.environ.get("CI"):
        pytest.fail("headless Chromium is required in CI (.ci/run installs the Debian package chromium)")
    pytest.skip("no Chromium on this machine (apt-get install chromium)")


@pytest.mark.browser
def test_renders_in_headless_chromium(qa_case, rulebase, tmp_path):
    browser = _chromium()
    page = tmp_path / "report.html"
    page.write_text(html_of({**CONVERT, "artifacts": ["qa"]}, qa_case, rulebase), encoding="utf-8")
    shot = tmp_path / "shot.png"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}", "--hide-scrollbars", "--window-size=1000,4800"]
    dom = subprocess.run([browser, *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0 and 'class="chart compare-chart"' in dom.stdout and "结论摘要" in dom.stdout
    subprocess.run([browser, *flags, f"--screenshot={shot}", page.as_uri()], capture_output=True, timeout=120, check=True)
    width, height, channels, rows = read_png(shot.read_bytes())
    assert (width, height) == (1000, 4800)  # tall enough for the charts below the checks run
    assert count_near(rows, channels, RED, 30) > 500  # the dashed origin line and the top sensitivity bar
    assert count_near(rows, channels, BLUE, 30) > 1000  # the per-layer series and bars
    white = count_near(rows, channels, (255, 255, 255), 4)
    assert white < width * height * 0.97  # the page is not blank


# --- what a reader sees: glyphs, widths, labels ---------------------------------------------

def _browser_run(browser, tmp_path, page, *extra):
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}", *extra]
    return subprocess.run([browser, *flags, page.as_uri()], capture_output=True, timeout=120)


def _ink_box(rows, channels, width):
    """The bounding box (x0, y0, x1, y1) of dark pixels."""
    xs, ys = [], []
    for y, row in enumerate(rows):
        for x in range(width):
            if row[x * channels] < 100 and row[x * channels + 1] < 100 and row[x * channels + 2] < 100:
                xs.append(x)
                ys.append(y)
    return (min(xs), min(ys), max(xs), max(ys)) if xs else None


@pytest.mark.browser
def test_chinese_glyphs_are_drawn_not_tofu(tmp_path):
    """With the report's font list, 一 is drawn as one flat stroke; a missing CJK font draws
    a tall box (tofu) in its place."""
    browser = _chromium()
    css = re.search(r'body \{ font-family: ([^;]+);', (BUNDLED_RULES_DIR.parent / "templates" / "report.html.j2")
                    .read_text(encoding="utf-8")).group(1)
    page = tmp_path / "glyph.html"
    page.write_text(f"<!DOCTYPE html><html><head><style>body {{ margin: 0; background: #fff }} "
                    f"span {{ font-family: {css}; font-size: 160px; line-height: 1; color: #000 }}</style></head>"
                    "<body><span>一</span></body></html>", encoding="utf-8")
    shot = tmp_path / "glyph.png"
    _browser_run(browser, tmp_path, page, "--window-size=300,300", f"--screenshot={shot}", "--hide-scrollbars")
    width, height, channels, rows = read_png(shot.read_bytes())
    box = _ink_box(rows, channels, width)
    assert box is not None, "nothing drawn"
    x0, y0, x1, y1 = box
    assert (x1 - x0) > 80 and (y1 - y0) < 0.3 * (x1 - x0), (
        f"一 drawn {x1 - x0}×{y1 - y0} px: a box, not the glyph — no CJK font (the CI installs fonts-wqy-microhei)")


@pytest.mark.browser
@pytest.mark.parametrize("viewport", [1280, 800])
def test_no_horizontal_overflow(qa_case, rulebase, tmp_path, viewport):
    """Long absolute paths and wide charts stay inside the page: measured in the browser."""
    browser = _chromium()
    deep = qa_case / ("very_long_folder_name_of_a_real_project_" * 4) / "qa"
    shutil.copytree(qa_case / "qa", deep)
    html = html_of({**CONVERT, "artifacts": [str(deep)]}, qa_case, rulebase)
    probe = ('<script>window.addEventListener("load", () => { const e = document.documentElement;'
             ' document.body.setAttribute("data-widths", e.scrollWidth + "/" + e.clientWidth + "/" +'
             ' document.querySelector("h1").getBoundingClientRect().left); });</script>')
    page = tmp_path / "report.html"
    page.write_text(html.replace("</body>", probe + "</body>"), encoding="utf-8")
    dom = _browser_run(browser, tmp_path, page, f"--window-size={viewport},900", "--dump-dom",
                       "--virtual-time-budget=2000")
    scroll, client, left = re.search(r'data-widths="(\d+)/(\d+)/([\d.]+)"', dom.stdout.decode()).groups()
    assert int(scroll) <= int(client), f"horizontal overflow at {viewport} px: {scroll} > {client}"
    assert float(left) >= 8, "the text touches the left edge"


def test_sensitivity_bars_grow_with_sensitivity_for_cosine(rulebase, tmp_path):
    """A Cosine table: the most sensitive op (lowest cosine) has the longest bar, the value
    label sits after the bar in a dark colour, and each bar names its op in a <title>."""
    from j6doctor.charts import layout_sensitivity, series_of
    from j6doctor.probes.probe_output import Reading
    from j6doctor.probes.sensitivity import read_sensitivity_txt, summarize_sensitivity

    qa = BUNDLED_RULES_DIR / "fixtures" / "horizon_quant_analysis"
    path = next(qa.glob("*_Cosine_sensitive_ops.txt"))
    table = read_sensitivity_txt(path)
    chart = layout_sensitivity(series_of(Reading("sensitivity", path.name, (table, summarize_sensitivity(table)))))
    lengths = [float(b["length"]) for b in chart["bars_drawn"]]
    assert lengths[0] == max(lengths) and lengths[0] > 5 * lengths[-1]
    assert chart["measure"] == "1 − Cosine"
    first = chart["bars_drawn"][0]
    assert float(first["value_x"]) > chart["label_w"] + float(first["length"])


def test_page_has_titles_anchors_and_decade_ticks(qa_case, rulebase):
    html = html_of({**CONVERT, "artifacts": ["qa"]}, qa_case, rulebase)
    assert re.search(r'<circle class="mark"[^>]*><title>行 \d+ backbone\.layer3\.relu2：0\.873', html)
    assert re.search(r'<rect class="bar"[^>]*><title>backbone\.layer3\.conv2 \(activation\)', html)
    assert 'fill="#fff">' not in html  # no white text on the light chart background
    links = re.findall(r'<a class="rule" href="#([^"]+)">', html)
    assert "rule-map.convert" in links and all(f'id="{anchor}"' in html for anchor in links)
    atol_ticks = re.findall(r'text-anchor="end" fill="#4a5568">([^<]+)</text>',
                            html.split("ATOL（对数坐标）</text>")[1].split("</svg>")[0])
    ticks = [t for t in atol_ticks if not t.startswith("行")]  # the row-axis labels share the style
    assert ticks == ["0.01", "0.1", "1", "10", "100"], ticks  # powers of ten on the log axis
