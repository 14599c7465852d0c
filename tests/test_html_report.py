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
from j6doctor.diagnose import diagnose_data
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
             f"--user-data-dir={tmp_path / 'profile'}", "--hide-scrollbars", "--window-size=1000,3200"]
    dom = subprocess.run([browser, *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0 and 'class="chart compare-chart"' in dom.stdout and "结论摘要" in dom.stdout
    subprocess.run([browser, *flags, f"--screenshot={shot}", page.as_uri()], capture_output=True, timeout=120, check=True)
    width, height, channels, rows = read_png(shot.read_bytes())
    assert (width, height) == (1000, 3200)
    assert count_near(rows, channels, RED, 30) > 500  # the dashed origin line and the top sensitivity bar
    assert count_near(rows, channels, BLUE, 30) > 1000  # the per-layer series and bars
    white = count_near(rows, channels, (255, 255, 255), 4)
    assert white < width * height * 0.97  # the page is not blank
