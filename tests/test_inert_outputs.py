"""What a user wrote never becomes markup or a formula in an output, and an environment that
cannot encode Chinese does not break a report (issue 32). In process, real renders."""

from __future__ import annotations

import csv
import io
import os
import re
import subprocess
import sys

import pytest

from conftest import EXAMPLES, write_case
from j6doctor.diagnosis import diagnose_file
from j6doctor.engine.strict_yaml import YamlInputError, load_yaml
from j6doctor.report import render_html, render_markdown
from j6doctor.triage import render_csv


def test_summary_csv_cells_never_start_a_formula():
    row = {"n": 1, "path": "=HYPERLINK(\"http://x\")|case.yaml", "kind": "case", "status": "error", "stage": None,
           "stage_label": None, "candidates": [], "missing": [], "first_finding": "+cmd", "error": "@SUM(A1)",
           "reports": {}}
    cells = list(csv.reader(io.StringIO(render_csv([row], ("md",)).lstrip("\ufeff"))))[1]
    assert cells[1] == "'=HYPERLINK(\"http://x\")|case.yaml" and cells[8] == "'+cmd" and cells[9] == "'@SUM(A1)"
    assert all(not c.startswith(("=", "+", "-", "@")) for c in cells)


def test_html_tags_in_the_users_words_are_text_in_markdown_and_html(tmp_path, rulebase):
    path = write_case(tmp_path, 'symptom: "<script>alert(1)</script> <img src=x onerror=y> quantized.bc 掉点，cosine < 0.9"\n')
    d = diagnose_file(path, rulebase)
    md = render_markdown(d)
    assert not re.search(r"(?<!\\)<(script|img|/script)", md)
    assert "\\<script>alert(1)\\</script> \\<img src=x onerror=y>" in md
    assert "cosine < 0.9" in md  # no tag: left as written
    assert "<script>alert" not in render_html(d)


def test_the_bundled_reports_have_no_escaped_angle_bracket_of_their_own(rulebase):
    """Only what opens a tag is escaped: the reports' own text is unchanged."""
    assert "\\<" not in render_markdown(diagnose_file(EXAMPLES / "convert_j6m.yaml", rulebase))


def test_an_integer_too_long_to_read_is_named_with_its_line():
    with pytest.raises(YamlInputError) as info:
        load_yaml("symptom: x\nresults:\n  qat_bc: {status: normal, value: " + "9" * 5000 + "}\n")
    assert info.value.line == 3 and "a number of 5000 digits" in info.value.message


@pytest.mark.slow
def test_an_ascii_only_output_stream_gets_the_report_in_utf8(tmp_path):
    write_case(tmp_path, "symptom: quantized.bc 掉点\n")
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    proc = subprocess.run([sys.executable, "-m", "j6doctor", "diagnose", "case.yaml", "--no-env"], cwd=tmp_path,
                          env=env, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode("utf-8").startswith("# j6doctor 诊断报告")
