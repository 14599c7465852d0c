"""Shared fixtures: the real bundled rule base on real durable-rules, and a CLI runner
that starts the installed console entry point in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from j6doctor.diagnose import diagnose_data, load_rulebase

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "cases"
SHARED = REPO.parent / "shared"

FULL_INFO = {
    "symptom": "quantized.bc 在验证集上掉点",
    "platform": "J6M",
    "versions": {"horizon-plugin-pytorch": "3.1.2", "horizon-plugin-profiler": "3.1.2",
                 "hbdk4-compiler": "4.4.2"},
    "badcase": {"reproducible": True},
}


def ok(status: str, evidence: str = "dataset_eval") -> dict:
    return {"status": status, "evidence": evidence}


@pytest.fixture(scope="session")
def rulebase():
    return load_rulebase()


@pytest.fixture(scope="session")
def diagnose(rulebase):
    def run(case: dict):
        return diagnose_data(case, rulebase)
    return run


@pytest.fixture
def cli(tmp_path):
    def run(*args: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
        full_env = dict(os.environ)
        full_env.pop("J6DOCTOR_DEBUG", None)
        full_env.update(env or {})
        return subprocess.run(
            [sys.executable, "-m", "j6doctor", *args], cwd=cwd or tmp_path, env=full_env,
            capture_output=True, text=True, timeout=120,
        )
    return run


def write_case(tmp_path: Path, text: str, name: str = "case.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path
