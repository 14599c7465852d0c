"""What a new user walking through the README runs into: -q / -v anywhere, stage completion,
`ask` given a folder or -, `rules lint -k`, `rules test` of one rule file, the help texts
(exit codes generated from app/exit_codes.py), did-you-mean on stage names and rule ids,
`ask`'s prompts with piped answers, and the versioned explain JSON."""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys

import pytest

from conftest import SITE_RULE, write_case, write_file
from j6doctor import __version__, exit_codes
from j6doctor.cli import build_parser, main
from j6doctor.commands.options import complete_stages
from j6doctor.facts import enum_values

CASE = "results:\n  qat_bc: {status: normal, evidence: dataset_eval}\n  quantized_bc: {status: abnormal, evidence: dataset_eval}\n"
BASELINE = "results:\n  board: {status: abnormal}\n"  # the chain at 基线确认: concludes undetermined

GOOD_RULE = SITE_RULE

RULE_WITHOUT_EXAMPLE = """\
seed: site
rules:
  - id: {id}
    title: 没有例子的规则 {id}
    when:
      - chain_open: {{}}
    then:
      - finding: {{topic: site, text: {id}}}
"""


def run(tmp_path, *args, stdin: str | None = None):
    env = {k: v for k, v in os.environ.items() if k != "J6DOCTOR_DEBUG"}
    return subprocess.run([sys.executable, "-m", "j6doctor", *args], cwd=tmp_path, input=stdin, env=env,
                          capture_output=True, text=True, timeout=120)


def _parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """Every parser of the command line, top level first, with its command path."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, (*path, name))


# ------------------------------------------------------------------ 1. -q / -v anywhere
def test_every_command_lists_quiet_and_verbose_in_its_help():
    seen = []
    for path, parser in _parsers(build_parser()):
        text = parser.format_help()
        assert "-q, --quiet" in text and "-v, --verbose" in text, path
        seen.append(path)
    assert ("rules", "lint") in seen and ("cases", "list") in seen and ("diagnose",) in seen


@pytest.mark.parametrize("argv, expected", [
    (["-q", "diagnose", "case.yaml"], -1),
    (["diagnose", "case.yaml", "-q"], -1),
    (["-v", "diagnose", "case.yaml"], 1),
    (["-v", "diagnose", "case.yaml", "-q"], -1),  # the subcommand's (given last) wins
    (["-q", "diagnose", "case.yaml", "-v"], 1),
    (["diagnose", "case.yaml"], None),
    (["rules", "lint", "my_pack", "-q"], -1),
    (["rules", "-q", "lint", "my_pack"], -1),
    (["-q", "rules", "lint", "my_pack"], -1),
    (["-v", "rules", "-q", "lint"], -1),
    (["cases", "list", "--store", "x.db", "-v"], 1),
])
def test_verbosity_is_parsed_at_any_level(argv, expected):
    args = vars(build_parser().parse_args(argv))
    assert args.get("verbosity") == expected


def test_quiet_and_verbose_together_at_one_level_is_a_usage_error(tmp_path):
    proc = run(tmp_path, "diagnose", "case.yaml", "-q", "-v")
    assert proc.returncode == 2 and "not allowed with" in proc.stderr


@pytest.mark.slow  # the command line in subprocesses
def test_quiet_and_verbose_work_before_and_after_the_command(tmp_path):
    write_case(tmp_path, BASELINE)
    # the --fail-on note is what -q silences
    assert "--fail-on" in run(tmp_path, "diagnose", "case.yaml", "--no-env", "--fail-on", "undetermined").stderr
    for argv in (["-q", "diagnose", "case.yaml"], ["diagnose", "case.yaml", "-q"],
                 ["-v", "diagnose", "case.yaml", "-q"]):
        proc = run(tmp_path, *argv, "--no-env", "--fail-on", "undetermined")
        assert proc.returncode == 1 and proc.stderr == "", (argv, proc.stderr)
        assert proc.stdout.startswith("# j6doctor 诊断报告")
    for argv in (["-v", "diagnose", "case.yaml"], ["-q", "diagnose", "case.yaml", "-v"]):
        proc = run(tmp_path, *argv, "--no-env")
        assert proc.returncode == 0 and "j6doctor: 配置 " in proc.stderr and "规则引擎" in proc.stderr, argv


@pytest.mark.slow  # the command line in subprocesses
def test_rules_commands_take_quiet_and_verbose_anywhere(tmp_path):
    write_file(tmp_path / "my_pack", "site.yaml", GOOD_RULE)
    for argv in (["rules", "lint", "my_pack/", "-q"], ["-q", "rules", "lint", "my_pack/"],
                 ["rules", "-q", "lint", "my_pack/"]):
        proc = run(tmp_path, *argv)
        assert proc.returncode == 0 and "0 error(s)" in proc.stdout, (argv, proc.stderr)
    # `rules test -v` lists every example (not only failures), wherever -v is given
    quiet = run(tmp_path, "rules", "test", "my_pack")
    assert quiet.returncode == 0 and "PASS " not in quiet.stdout
    for argv in (["rules", "test", "my_pack", "-v"], ["-v", "rules", "test", "my_pack"]):
        proc = run(tmp_path, *argv)
        assert proc.returncode == 0 and "PASS my_pack/site.yaml" in proc.stdout, argv
    assert "List every example" in run(tmp_path, "rules", "test", "--help").stdout


# ------------------------------------------------------------------ 2. stage completion
def test_stage_completer_lists_the_vocabulary_stages():
    stages = list(enum_values("stage"))
    assert complete_stages("") == stages
    assert complete_stages("ex") == ["export"]
    assert complete_stages("convert,co") == ["convert,compile"]
    assert "convert,convert" not in complete_stages("convert,")  # a stage listed already is not offered


@pytest.mark.slow  # the command line in subprocesses
def test_stage_options_complete_stages_not_file_names(tmp_path):
    """What bash runs on <TAB> after `eval "$(register-python-argcomplete j6doctor)"`."""
    write_case(tmp_path, CASE)
    write_file(tmp_path, "export_notes.txt", "not a stage\n")
    out = tmp_path / "candidates"
    stages = set(enum_values("stage"))
    for line, expected in [("j6doctor diagnose case.yaml --fail-on ", stages),
                           ("j6doctor triage case.yaml --fail-on ", stages),
                           ("j6doctor explain case.yaml --why-not ", stages),
                           ("j6doctor explain case.yaml --why-not ex", {"export"}),
                           ("j6doctor diagnose --fail-on convert,co", {"convert,compile"}),
                           ("j6doctor cases resolve 1 --stage b", {"board", "baseline"})]:
        env = {**os.environ, "_ARGCOMPLETE": "1", "_ARGCOMPLETE_IFS": "\n", "COMP_LINE": line,
               "COMP_POINT": str(len(line)), "_ARGCOMPLETE_SUPPRESS_SPACE": "1"}
        proc = subprocess.run(["bash", "-c", f'"{sys.executable}" -m j6doctor 8>"{out}"'], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        got = {c.strip() for c in out.read_text().split("\n") if c.strip()}
        assert got == expected, (line, got)


# ------------------------------------------------------------------ 3. ask given a folder or -
def test_ask_given_a_folder_names_the_case_file_inside(tmp_path):
    write_case(tmp_path / "cases" if (tmp_path / "cases").mkdir() is None else tmp_path, CASE)
    proc = run(tmp_path, "ask", "cases/", stdin="")
    assert proc.returncode == 2 and "usage:" not in proc.stderr
    assert "cases: is a folder; ask writes the answers into a case file: give cases/case.yaml" in proc.stderr
    (tmp_path / "empty").mkdir()
    proc = run(tmp_path, "ask", "empty", stdin="")
    assert proc.returncode == 2 and "usage:" not in proc.stderr
    assert "j6doctor ask empty/case.yaml --workdir empty" in proc.stderr
    assert not (tmp_path / "empty" / "case.yaml").exists()


def test_ask_refuses_stdin_as_the_case_and_says_why(tmp_path):
    proc = run(tmp_path, "ask", "-", stdin=CASE)
    assert proc.returncode == 2 and "usage:" not in proc.stderr
    assert "ask writes the answers into the case file, so CASE cannot be standard input" in proc.stderr
    assert not (tmp_path / "-").exists()


# ------------------------------------------------------------------ 4. rules lint -k, rules test of one file
@pytest.mark.slow  # the command line in subprocesses
def test_rules_lint_k_shows_only_the_matching_rules_messages(tmp_path):
    write_file(tmp_path / "pack", "a.yaml", RULE_WITHOUT_EXAMPLE.format(id="site.alpha"))
    write_file(tmp_path / "pack", "b.yaml", RULE_WITHOUT_EXAMPLE.format(id="site.beta"))
    full = run(tmp_path, "rules", "lint", "pack")
    assert "rule site.alpha" in full.stdout and "rule site.beta" in full.stdout
    assert "0 error(s), 2 warning(s)" in full.stdout
    only = run(tmp_path, "rules", "lint", "pack", "-k", "site.alpha")
    assert only.returncode == 0, only.stderr
    assert "rule site.alpha" in only.stdout and "site.beta" not in only.stdout
    assert "0 error(s), 1 warning(s)" in only.stdout
    assert run(tmp_path, "rules", "lint", "pack", "-k", "site.a*", "--strict").returncode == 1
    assert run(tmp_path, "rules", "lint", "-k", "map.convert").returncode == 0  # the example in docs/usage.md
    none = run(tmp_path, "rules", "lint", "pack", "-k", "no.such.rule")
    assert none.returncode == 2 and "-k no.such.rule: no rule id matches" in none.stderr


@pytest.mark.slow  # the command line in subprocesses
def test_rules_test_takes_a_single_rule_file(tmp_path):
    write_file(tmp_path / "pack", "good.yaml", GOOD_RULE)
    write_file(tmp_path / "pack", "bad.yaml", RULE_WITHOUT_EXAMPLE.format(id="site.bare"))
    assert run(tmp_path, "rules", "test", "pack").returncode == 1  # site.bare has no example
    one = run(tmp_path, "rules", "test", "pack/good.yaml", "--format", "json")
    assert one.returncode == 0, one.stderr + one.stdout
    data = json.loads(one.stdout)
    assert [r["rule"] for r in data["rules"]] == ["site.note"]
    assert data["examples"][0]["file"] == "pack/good.yaml" and data["failed"] == 0
    bare = run(tmp_path, "rules", "test", "pack/bad.yaml")
    assert bare.returncode == 1 and "site.bare" in bare.stdout and "site.note" not in bare.stdout
    missing = run(tmp_path, "rules", "test", "pack/nope.yaml")
    assert missing.returncode == 2 and "usage:" not in missing.stderr
    assert "no such rule pack folder or rule file" in missing.stderr
    write_file(tmp_path, "notes.txt", "x\n")
    other = run(tmp_path, "rules", "test", "notes.txt")
    assert other.returncode == 2 and "not a rule pack folder or a rule file (*.yaml, *.yml)" in other.stderr


# ------------------------------------------------------------------ 5. help texts
def test_top_level_help_lists_every_rules_command_and_the_exit_codes(tmp_path):
    proc = run(tmp_path, "--help")
    assert proc.returncode == 0
    rules_line = next(line for line in proc.stdout.splitlines() if line.strip().startswith("rules "))
    for name in ("new", "lint", "test", "list", "show", "schema"):
        assert name in rules_line, rules_line
    assert "exit status:" in proc.stdout
    epilog = proc.stdout.split("exit status:", 1)[1]
    codes = {value for name, value in vars(exit_codes).items() if name.startswith("EXIT_")}
    listed = {int(line.split()[0]) for line in epilog.splitlines() if line.strip()}
    assert listed == codes
    assert "--fail-on" in epilog and "rediagnose" in epilog  # the module's own words


def test_the_exit_codes_in_the_help_come_from_the_module(monkeypatch):
    monkeypatch.setattr(exit_codes, "EXIT_TESTING", 77, raising=False)
    text = build_parser().format_help()
    assert "  77   testing" in text  # a code without a comment is named after its constant


def test_diagnose_help_says_case_may_be_omitted_with_workdir_or_metrics():
    help_text = " ".join(dict(_parsers(build_parser()))[("diagnose",)].format_help().split())
    assert "May be omitted when --workdir or --metrics is given." in help_text
    assert "frames]); CASE may then be omitted." in help_text


# ------------------------------------------------------------------ 6. did-you-mean
def test_misspelt_stages_get_the_closest_stage(tmp_path):
    write_case(tmp_path, CASE)
    proc = run(tmp_path, "explain", "case.yaml", "--no-env", "--why-not", "exprot")
    assert proc.returncode == 2 and "unknown stage 'exprot' (did you mean 'export'?)" in proc.stderr
    proc = run(tmp_path, "diagnose", "case.yaml", "--no-env", "--fail-on", "convrt")
    assert proc.returncode == 2 and "unknown stage 'convrt' (did you mean 'convert'?)" in proc.stderr
    far = run(tmp_path, "diagnose", "case.yaml", "--no-env", "--fail-on", "zzzz")
    assert far.returncode == 2 and "did you mean" not in far.stderr and "allowed: " in far.stderr


def test_rules_show_suggests_only_close_ids(tmp_path):
    far = run(tmp_path, "rules", "show", "nope")
    assert far.returncode == 2 and "did you mean" not in far.stderr
    assert "`j6doctor rules list` lists every rule id" in far.stderr
    close = run(tmp_path, "rules", "show", "map.convrt")
    assert close.returncode == 2 and "did you mean map.convert" in close.stderr


# ------------------------------------------------------------------ 7. ask prompts with piped answers
@pytest.mark.slow  # the command line in subprocesses
def test_piped_answers_put_each_prompt_on_its_own_line(tmp_path):
    proc = run(tmp_path, "ask", "case.yaml", "--no-env", stdin="\n" * 12)
    assert proc.returncode == 0, proc.stderr
    prompts = [line for line in proc.stderr.splitlines() if "留空跳过）：" in line]
    assert len(prompts) >= 2
    assert all(line.count("留空跳过）：") == 1 and line.endswith("留空跳过）：") for line in prompts), prompts


class _Terminal(io.TextIOWrapper):
    def isatty(self) -> bool:
        return True


def test_a_terminal_keeps_the_answer_on_the_prompt_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "stdin", _Terminal(io.BytesIO(b"\n" * 12), encoding="utf-8"))
    main(["ask", "case.yaml", "--no-env"])
    err = capsys.readouterr().err
    assert "留空跳过）：已验证异常的产物" in err  # the typed newline (echoed by the terminal) ends the line


# ------------------------------------------------------------------ 8. explain JSON versioned
@pytest.mark.slow  # the command line in subprocesses
def test_explain_json_carries_schema_version_and_tool(tmp_path):
    write_case(tmp_path, CASE)
    proc = run(tmp_path, "explain", "case.yaml", "--no-env", "--format", "json", "--why-not", "board")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert list(data)[:2] == ["schema_version", "tool"]
    assert data["schema_version"].count(".") == 1 and data["tool"] == {"name": "j6doctor", "version": __version__}
    assert data["stage"] == "convert" and "why_not" in data
