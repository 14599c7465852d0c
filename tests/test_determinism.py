"""Same input, same report, byte for byte - across processes and hash seeds."""

from __future__ import annotations

import pytest

from conftest import EXAMPLES


@pytest.mark.parametrize("fmt", ["md", "json"])
@pytest.mark.parametrize("name", ["convert_j6m.yaml", "user_side_layout.yaml", "contradictory.yaml", "empty.yaml"])
def test_byte_identical_across_runs(cli, name, fmt):
    outputs = set()
    for seed in ("0", "1", "12345"):
        proc = cli("diagnose", str(EXAMPLES / name), "--format", fmt, env={"PYTHONHASHSEED": seed})
        assert proc.returncode == 0, proc.stderr
        outputs.add(proc.stdout)
    assert len(outputs) == 1


def test_same_in_one_process(rulebase):
    from j6doctor.diagnosis import diagnose_file
    from j6doctor.report import render_json, render_markdown
    first = diagnose_file(EXAMPLES / "compile_x86_and_board.yaml", rulebase)
    again = diagnose_file(EXAMPLES / "compile_x86_and_board.yaml", rulebase)
    assert render_markdown(first) == render_markdown(again)
    assert render_json(first) == render_json(again)
