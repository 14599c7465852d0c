"""Every reading of a user's text grows with the text, not with its square (issue 32): the
shapes that made readers backtrack ("OE" then thousands of spaces, one phrase repeated over
64 KB, runs of brackets, version lists, score tables) take at most about 8 times as long for
a text 8 times as long. A quadratic reading would take 64 times; the bound, 24, leaves room
for a busy machine. Measured in CPU time, the best of three runs, on a real diagnosis in
this process, its engine run included (the symptom, a deployment note, and a pasted post as
the case)."""

from __future__ import annotations

import time

import pytest

from j6doctor.diagnosis import diagnose_data, load_rulebase

SHAPES = {
    "a version word then spaces": lambda n: "OE" + " " * n + "x",
    "one Chinese phrase repeated": lambda n: ("板端结果不对，" * n)[:n],
    "brackets": lambda n: ("(" * n),
    "version words": lambda n: ("OE 3.0 " * n)[:n],
    "a score table on one line": lambda n: ("mAP: 0.5 | " * n)[:n],
    "a version list": lambda n: ("v1.2.3, " * n)[:n],
    "percentages": lambda n: ("1%" * n)[:n],
    "a path of many segments": lambda n: ("a/" * n)[:n],
    # many models and many relations, none of the value a pattern looks for ("一致")
    "models that differ": lambda n: ("pc不同" * n)[:n],
    "models said to differ, with commas": lambda n: ("bin差异大，" * n)[:n],
}
SMALL, LARGE = 4_000, 32_000
BOUND = 24


@pytest.fixture(scope="module")
def rulebase():
    return load_rulebase()


@pytest.fixture(autouse=True)
def engine_in_this_process(monkeypatch):
    """The text rules match in the engine's process: run it in this one, so that the CPU
    time measured holds the matching as well as the reading."""
    monkeypatch.setenv("J6DOCTOR_ENGINE_PROCESS", "inline")


def _case(text: str, where: str) -> dict:
    if where == "symptom":
        return {"symptom": text, "platform": "J6M"}
    return {"symptom": "板端掉点", "deployment": {"notes": text}}


def _cpu(rulebase, data: dict) -> float:
    best = float("inf")
    for _ in range(3):
        started = time.process_time()
        diagnose_data(data, display="case.yaml", rulebase=rulebase)
        best = min(best, time.process_time() - started)
    return max(best, 1e-4)


@pytest.mark.parametrize("where", ["symptom", "notes"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_a_text_eight_times_longer_takes_at_most_about_eight_times_as_long(rulebase, shape, where):
    make = SHAPES[shape]
    small = _cpu(rulebase, _case(make(SMALL), where))
    large = _cpu(rulebase, _case(make(LARGE), where))
    assert large / small < BOUND, f"{shape} in {where}: {small * 1000:.1f} ms → {large * 1000:.1f} ms"


@pytest.mark.slow
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_a_pasted_post_eight_times_longer_takes_at_most_about_eight_times_as_long(tmp_path, shape):
    from j6doctor import diagnose

    make = SHAPES[shape]
    times = []
    for size in (SMALL, LARGE):
        post = tmp_path / f"post_{size}.md"
        post.write_text(f"# 板端精度下降\n\nJ6M 上 hbm 结果不对。\n\n{make(size)}\n", encoding="utf-8")
        best = float("inf")
        for _ in range(3):
            started = time.process_time()
            diagnose(post, environment=False)
            best = min(best, time.process_time() - started)
        times.append(max(best, 1e-4))
    assert times[1] / times[0] < BOUND, f"{shape}: {times[0] * 1000:.1f} ms → {times[1] * 1000:.1f} ms"
