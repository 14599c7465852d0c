"""Which engine runs: the default where durable-rules imports and where it does not, the
`--engine` option, the config key and the environment variable, the engine named in every
report, CLIPS' own bound, and clear messages for an engine that cannot run here.

Real CLI subprocesses and real engine runs. Where durable-rules "cannot be imported", the
subprocess gets a `durable` package that fails to import exactly as durable-rules 2.0.28's
C extension does on Python 3.13 (a third-party module standing in for its broken build, not
a part of j6doctor)."""

from __future__ import annotations

import json
import os

import pytest

from conftest import EXAMPLES
from j6doctor.engine import RuleBase, RuleBaseErrors
from j6doctor.engine.backends import DURABLE_EXTRA, available, durable_installable

CASE = EXAMPLES / "convert_j6m.yaml"
HAS_DURABLE = available("durable")
durable_only = pytest.mark.skipif(not HAS_DURABLE, reason="durable-rules is not installed on this Python")


def _engine(proc) -> str:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["rulebase"]["engine"]


def _broken_durable(tmp_path) -> dict:
    """A `durable` package that fails like durable-rules' C extension on Python 3.13."""
    fake = tmp_path / "fake_site"
    (fake / "durable").mkdir(parents=True)
    failing = ("raise ImportError('/site-packages/durable_rules_engine.cpython-313-x86_64-linux-gnu.so: "
               "undefined symbol: PyEval_CallObject')\n")
    # Both modules the backend imports, so that the same failure shows on a Python where
    # durable-rules is installed and on one where it is not (3.13).
    (fake / "durable" / "__init__.py").write_text(failing, encoding="utf-8")
    (fake / "durable_rules_engine.py").write_text(failing, encoding="utf-8")
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(fake), os.environ.get("PYTHONPATH", "")])),
            "J6DOCTOR_CROSS_CHECK": "0", "J6DOCTOR_ENGINE": ""}


def test_default_engine_is_durable_where_it_imports(cli):
    proc = cli("diagnose", str(CASE), "--format", "json", "--no-env")
    assert _engine(proc) == ("durable" if HAS_DURABLE else "clips")


def test_without_durable_rules_clips_runs_and_durable_is_refused_clearly(cli, tmp_path):
    env = _broken_durable(tmp_path)
    proc = cli("diagnose", str(CASE), "--format", "json", "--no-env", env=env)
    assert _engine(proc) == "clips"
    assert json.loads(proc.stdout)["stage"] == "convert"
    # one line says which engine runs and how to get the default one, where it could install
    notes = [line for line in proc.stderr.splitlines() if "rule engine is CLIPS" in line]
    assert notes == ([f"j6doctor: note: the rule engine is CLIPS; durable-rules (the default engine) is not "
                      f"installed here: {DURABLE_EXTRA} adds it (needs a C compiler and the Python headers)"]
                     if durable_installable() else [])
    chosen = cli("diagnose", str(CASE), "--engine", "clips", "--format", "json", "--no-env", env=env)
    assert _engine(chosen) == "clips" and chosen.stderr == ""
    refused = cli("diagnose", str(CASE), "--engine", "durable", "--no-env", env=env)
    assert refused.returncode == 2
    assert "durable-rules engine cannot be loaded here" in refused.stderr
    assert "PyEval_CallObject" in refused.stderr and "--engine clips" in refused.stderr
    assert "Traceback" not in refused.stderr


@pytest.mark.parametrize("engine,shown", [("clips", "CLIPS 6.4"), pytest.param("durable", "durable-rules 2.0.28",
                                                                                marks=durable_only)])
def test_engine_option_and_report_line(cli, engine, shown):
    md = cli("diagnose", str(CASE), "--engine", engine.upper(), "--no-env")
    assert md.returncode == 0, md.stderr
    assert f"规则引擎：{shown}" in md.stdout
    html = cli("diagnose", str(CASE), "--engine", engine, "--no-env", "--format", "html")
    assert f"规则引擎：{shown}" in html.stdout
    assert _engine(cli("diagnose", str(CASE), "--engine", engine, "--no-env", "--format", "json")) == engine


def test_config_key_and_precedence(cli, tmp_path):
    (tmp_path / "j6doctor.toml").write_text('engine = "clips"\n', encoding="utf-8")
    case = tmp_path / "case.yaml"
    case.write_text(CASE.read_text(encoding="utf-8"), encoding="utf-8")
    assert _engine(cli("diagnose", str(case), "--format", "json", "--no-env")) == "clips"
    if HAS_DURABLE:
        assert _engine(cli("diagnose", str(case), "--format", "json", "--no-env", "--engine", "durable")) == "durable"
    (tmp_path / "j6doctor.toml").write_text('engine = "drools"\n', encoding="utf-8")
    bad = cli("diagnose", str(case), "--no-env")
    assert bad.returncode == 2
    assert "j6doctor.toml" in bad.stderr and "engine: expected one of durable, clips, got 'drools'" in bad.stderr


def test_environment_variable_picks_the_engine_and_a_bad_one_is_named(cli):
    assert _engine(cli("diagnose", str(CASE), "--format", "json", "--no-env", env={"J6DOCTOR_ENGINE": "clips"})) \
        == "clips"
    bad = cli("diagnose", str(CASE), "--no-env", env={"J6DOCTOR_ENGINE": "jess"})
    assert bad.returncode == 2 and "unknown engine 'jess'; expected one of: durable, clips" in bad.stderr


def test_rules_test_runs_on_clips(cli):
    proc = cli("rules", "test", "--engine", "clips")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert " 0 failed" in proc.stdout


def _listing_pack(tmp_path, rules: int, values: int):
    folder = tmp_path / "pack"
    folder.mkdir(exist_ok=True)
    text = ["seed: t", "rules:"]
    for r in range(rules):
        listed = ", ".join(f"m{r}_{k}" for k in range(values))
        text += [f"  - id: site.r{r}", f"    title: r{r}", "    when:",
                 f"      - result: {{metric: {{in: [{listed}]}}}}", "        as: x",
                 "    then:", "      - warning: {text: \"listed ${x.metric}\"}"]
    (folder / "pack.yaml").write_text("\n".join(text) + "\n", encoding="utf-8")
    return folder


def test_clips_bound_is_checked_at_load_and_names_the_largest_rules(tmp_path):
    from j6doctor.engine.clips_backend import MAX_LISTED_VALUES
    from j6doctor.facts import vocabulary
    from j6doctor.rules import BUNDLED_RULES_DIR

    folder = _listing_pack(tmp_path, 3, MAX_LISTED_VALUES // 2)
    with pytest.raises(RuleBaseErrors) as info:
        RuleBase.load([BUNDLED_RULES_DIR, folder], vocabulary(), engine="clips")
    text = str(info.value)
    assert "CLIPS engine builds and matches them" in text and "site.r0" in text and "pack.yaml" in text


def test_clips_runs_the_largest_admitted_listing_quickly(tmp_path):
    """Just under the bound: builds and runs in the worker, no durable-rules fan-out limit."""
    from j6doctor.engine import Fact, Source
    from j6doctor.engine.clips_backend import MAX_LISTED_VALUES
    from j6doctor.facts import vocabulary

    folder = _listing_pack(tmp_path, 4, MAX_LISTED_VALUES // 4 - 10)
    vocab = vocabulary()
    rulebase = RuleBase.load([folder], vocab, engine="clips")
    facts = [Fact("c1", "result", vocab.complete("result", {"artifact": "board", "status": "abnormal", "pos": 6,
                                                            "metric": "m3_4000"}), Source("case", key="results"))]
    result = rulebase.run(facts)
    assert [f["text"] for f in result.by_type("warning")] == ["listed m3_4000"]


@durable_only
def test_same_pack_is_refused_by_durable_rules_fixed_tables(tmp_path):
    from j6doctor.facts import vocabulary

    folder = _listing_pack(tmp_path, 2, 600)
    with pytest.raises(RuleBaseErrors, match="durable-rules hangs at 512"):
        RuleBase.load([folder], vocabulary(), engine="durable")
    assert RuleBase.load([folder], vocabulary(), engine="clips").engine == "clips"


def test_lint_checks_durable_tables_even_on_clips_only(cli, tmp_path):
    folder = _listing_pack(tmp_path, 2, 600)
    proc = cli("rules", "lint", str(folder), env=_broken_durable(tmp_path))
    assert proc.returncode == 1
    assert "durable-rules hangs at 512" in proc.stdout
