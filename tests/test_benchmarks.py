"""benchmarks/bench_all.py runs end to end: its cheapest mode (--smoke: tiny sizes, one pair
per measurement) prints every section's table, the ratios are numbers and every target has a
result. Timings are not asserted: they belong to the machine, not to the code."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "benchmarks" / "bench_all.py"


def _bench_module(monkeypatch):
    spec = importlib.util.spec_from_file_location("bench_all_under_test", BENCH)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # its dataclasses look their module up
    monkeypatch.setattr(sys, "path", list(sys.path))  # it adds benchmarks/ and tests/ to the path
    spec.loader.exec_module(module)
    return module


def _tables(stdout: str) -> dict[str, list[list[str]]]:
    """Plain-text tables: a title, a line of '=', a header line, a line of dashes, then rows
    (cells separated by two or more spaces) until a line that is not a row."""
    lines = stdout.splitlines()
    tables: dict[str, list[list[str]]] = {}
    for k, line in enumerate(lines):
        if k + 3 < len(lines) and lines[k + 1] == "=" * len(line) and line and set(lines[k + 3]) <= {"-", " "}:
            widths = [len(part) for part in lines[k + 3].split("  ")]
            rows = []
            for row in lines[k + 2:]:
                if row is lines[k + 3] or set(row) <= {"-", " "}:
                    continue
                if not row.strip() or len(row) > sum(widths) + 2 * (len(widths) - 1):
                    break
                cells, at = [], 0
                for width in widths:
                    cells.append(row[at:at + width].strip())
                    at += width + 2
                rows.append(cells)
            tables[line] = rows  # rows[0] is the header line
    return tables


def _find(tables: dict[str, list[list[str]]], prefix: str) -> list[list[str]]:
    found = [rows for title, rows in tables.items() if title.startswith(prefix)]
    assert found, f"no table titled {prefix!r}: {list(tables)}"
    return found[0]


def _column(rows: list[list[str]], name: str) -> list[str]:
    k = rows[0].index(name)
    return [row[k] for row in rows[1:]]


def _number(text: str) -> float:
    return float(text.replace(",", "").rstrip("×").split()[0])


@pytest.fixture(scope="module")
def smoke_run() -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BENCH), "--smoke", "--kinds", "metrics"], cwd=REPO,
                          capture_output=True, text=True, timeout=600)


def test_smoke_run_prints_every_section(smoke_run):
    assert smoke_run.returncode == 0, smoke_run.stderr[-3000:]
    tables = _tables(smoke_run.stdout)
    first = smoke_run.stdout.splitlines()[:2]
    assert "CPUs" in first[0] and "Python" in first[0] and "engine:" in first[0]  # the machine line
    assert "PYTHONDONTWRITEBYTECODE removed" in first[1]  # says it measures an installed-like state
    for prefix in ("1. Cold start", "1b. Where one cold", "2. diagnose --workdir", "3. Rule engine",
                   "4. Triage", "5. Memory", "6. Largest accepted input", "Targets"):
        _find(tables, prefix)

    cold = _find(tables, "1. Cold start")
    ratios = [r for r in _column(cold, "× floor (CPU)") if r]
    assert len(ratios) == 2 and all(_number(r) > 0 for r in ratios)
    assert [r for r in _column(cold, "result") if r] and all(r in ("PASS", "FAIL") for r in _column(cold, "result") if r)

    stages = _find(tables, "1b. Where one cold")
    names = _column(stages, "stage (in the order it first runs)")
    assert "import j6doctor.cli" in names and any(n.startswith("diagnose") for n in names)
    assert not any("pandas" in n for n in names)  # only stages the product runs; no made-up imports
    for value in _column(stages, "ms"):
        assert _number(value) >= 0

    workdir = _find(tables, "2. diagnose --workdir")
    assert sorted(_column(workdir, "file")) == ["csv", "txt"]
    for column in ("× floor (CPU)", "× floor (wall)", "× peak"):
        assert all(_number(v) > 0 for v in _column(workdir, column))

    engine = _find(tables, "3. Rule engine")
    assert [e for e in _column(engine, "engine") if e]  # one row per installed engine
    assert all(_number(v) >= 0 for v in _column(engine, "run ms"))

    triage = _find(tables, "4. Triage")
    assert _column(triage, "result")[0] in ("PASS", "FAIL", "n/a")

    targets = _find(tables, "Targets")
    assert targets[1:], "no target was checked"
    assert all(row[-1] in ("PASS", "FAIL", "n/a") for row in targets[1:])


def test_tables_render_as_markdown_and_the_docs_page_is_written(tmp_path, monkeypatch):
    bench = _bench_module(monkeypatch)
    table = bench.Table("T", ["name", "value"])
    table.add("a|b", "1.00")
    text = table.render(markdown=True)
    assert "| name | value |" in text and "| a\\|b | 1.00 |" in text

    page = tmp_path / "benchmarks.md"
    monkeypatch.setattr(bench, "DOCS_PAGE", page)
    bench.update_docs("# Benchmarks\n\nnew table")
    assert page.read_text(encoding="utf-8") == "# Benchmarks\n\nnew table\n"


def test_update_docs_needs_a_full_run():
    done = subprocess.run([sys.executable, str(BENCH), "--update-docs", "--sections", "1"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and re.search(r"--update-docs", done.stderr)
