#!/usr/bin/env python3
"""Benchmark: `j6doctor diagnose --workdir` on generated QuantAnalysis output folders,
against the floor of reading the same compare_per_layer_out.csv with pandas.

Both are timed as whole processes (interpreter start-up included), best of --repeat runs,
so the ratio says how much j6doctor adds on top of merely loading the table.

    python benchmarks/bench_workdir.py                 # 20,000 rows
    python benchmarks/bench_workdir.py --rows 1000 10000 100000
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from synthetic import write_workdir  # noqa: E402  (test data generator, shared with the tests)


def best_of(command: list[str], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        best = min(best, time.perf_counter() - started)
    return best


def doctor_command(folder: Path) -> list[str]:
    """`j6doctor diagnose --workdir FOLDER` as a fresh process (JSON, no environment probe)."""
    return [sys.executable, "-m", "j6doctor", "diagnose", "--workdir", str(folder),
            "--no-env", "--format", "json"]


def floor_command(csv: Path) -> list[str]:
    """The floor: a fresh interpreter that imports pandas and reads the same compare table."""
    return [sys.executable, "-c", f"import pandas; pandas.read_csv({str(csv)!r}, skipinitialspace=True)"]


def workdir_vs_floor(folder: Path, repeat: int) -> tuple[float, float]:
    """Best-of-`repeat` seconds of j6doctor on `folder` and of the pandas floor on its csv."""
    doctor = best_of(doctor_command(folder), repeat)
    floor = best_of(floor_command(folder / "compare_per_layer_out.csv"), repeat)
    return doctor, floor


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, nargs="+", default=[20_000])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"{'rows':>8}  {'j6doctor s':>10}  {'pandas floor s':>14}  {'ratio':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        for rows in args.rows:
            folder = write_workdir(Path(tmp) / f"qa_{rows}", rows)
            doctor, floor = workdir_vs_floor(folder, args.repeat)
            print(f"{rows:>8}  {doctor:>10.3f}  {floor:>14.3f}  {doctor / floor:>6.2f}")


if __name__ == "__main__":
    main()
