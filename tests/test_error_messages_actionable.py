"""Every error a user can meet names the file (with its line or key where the input has
them) and says what to do or what was expected; the exit codes are the documented ones.

Each case runs the command line on one bad input and checks the exit code, that the
message names the file (`file:line:` where there is a line) and the "what to do" part."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pytest

from conftest import EXAMPLES, REPO
from j6doctor import exit_codes

EMPTY = str(EXAMPLES / "empty.yaml")


@dataclass
class Bad:
    args: tuple[str, ...]
    code: int
    says: tuple[str, ...]  # the file (and line / key), then what to do or what was expected
    files: dict[str, str | bytes] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    stdin: str | None = None
    stream: str = "stderr"


BAD = {
    "missing case file": Bad(("diagnose", "missing.yaml"), 2,
                             ("missing.yaml: no such file", "expected a YAML or JSON case file")),
    "a folder as the case": Bad(("diagnose", "work"), 2,
                                ("'work' is a folder", "give the case file (work/case.yaml)", "--workdir work"),
                                {"work/case.yaml": "platform: J6M\n"}),
    "YAML syntax error (a tab)": Bad(("diagnose", "case.yaml"), 2,
                                     ("case.yaml:3: not valid YAML", "indent with spaces, not tabs"),
                                     {"case.yaml": "platform: J6M\nresults:\n\tqat_pt: {status: normal}\n"}),
    "YAML value holding ': '": Bad(("diagnose", "case.yaml"), 2,
                                   ("case.yaml:2: not valid YAML", "quote a value that holds ': '"),
                                   {"case.yaml": "platform: J6M\nsymptom: mAP: 30 -> 20\n"}),
    "wrong key": Bad(("diagnose", "case.yaml"), 2,
                     ("case.yaml:2: unknown key 'platfrom'", "did you mean 'platform'?", "allowed: symptom"),
                     {"case.yaml": "symptom: drop\nplatfrom: J6M\n"}),
    "wrong value": Bad(("diagnose", "case.yaml"), 2,
                       ("case.yaml:4: results.qat_pt.status", "allowed: normal, abnormal, unknown"),
                       {"case.yaml": "platform: J6M\nresults:\n  qat_pt:\n    status: weird\n"}),
    "duplicate JSON key": Bad(("diagnose", "case.json"), 2,
                              ("case.json:3: duplicate key 'platform' (first at line 2)", "keep one of them"),
                              {"case.json": '{\n  "platform": "J6M",\n  "platform": "J6E"\n}\n'}),
    "NaN in a JSON case": Bad(("diagnose", "case.json"), 2,
                              ("case.json:1: NaN is not a valid number", "write a finite number or leave the key out"),
                              {"case.json": '{"results": {"qat_pt": {"status": "normal", "value": NaN}}}\n'}),
    "missing metrics file": Bad(("diagnose", "--metrics", "eval.csv", "--no-env"), 2,
                                ("eval.csv: no such file", "--metrics takes an evaluation results file")),
    # a metrics file the user named is an input of the run: its error is the run's (exit 2)
    "unreadable metrics row": Bad(("diagnose", "--metrics", "eval.csv", "--no-env"), 2,
                                  ("eval.csv:2: more fields than the header", "quote a value that holds a comma",
                                   "由 --metrics 指定"),
                                  {"eval.csv": "artifact,metric,value\nqat_pt,mAP,1,5\n"}),
    "metrics named by the case": Bad(("diagnose", "case.yaml", "--no-env"), 2,
                                     ("eval.csv:2: value 'abc' is not a number", "由 case.yaml:2 metrics.file 指定"),
                                     {"case.yaml": "platform: J6M\nmetrics: {file: eval.csv}\n",
                                      "eval.csv": "artifact,metric,value\nqat_bc,mAP,abc\n"}),
    "missing --rules pack": Bad(("diagnose", EMPTY, "--rules", "no_pack"), 2,
                                ("no_pack: no such rule pack folder", "--rules takes a folder of *.yaml / *.yml rule files")),
    "rule without when or match": Bad(("diagnose", EMPTY, "--rules", "pack"), 2,
                                      ("pack/a.yaml:2: rule pack.x", "a rule needs `when:`", "or `match:`"),
                                      {"pack/a.yaml": "rules:\n  - id: pack.x\n    title: t\n    seed: s\n"
                                                      "    then: [{key_finding: {text: x}}]\n"}),
    "rule file with a duplicate key": Bad(("diagnose", EMPTY, "--rules", "pack"), 2,
                                          ("pack/a.yaml:3: rule pack.x: duplicate key 'id' (first at line 2)", "keep one of them"),
                                          {"pack/a.yaml": "rules:\n  - id: pack.x\n    id: pack.y\n"}),
    "unknown config setting": Bad(("diagnose", "case.yaml"), 2,
                                  ("j6doctor.toml:2: unknown setting 'engin'", "known: environment, engine"),
                                  {"case.yaml": "platform: J6M\n", "j6doctor.toml": "# site defaults\nengin = 'clips'\n"}),
    "config value": Bad(("diagnose", "case.yaml"), 2,
                        ("j6doctor.toml:3: engine: expected one of durable, clips, got 'jess'",),
                        {"case.yaml": "platform: J6M\n", "j6doctor.toml": "environment = false\n\nengine = 'jess'\n"}),
    "config TOML syntax": Bad(("diagnose", "case.yaml"), 2,
                              ("j6doctor.toml:2: not valid TOML", "expected key = value lines"),
                              {"case.yaml": "platform: J6M\n", "j6doctor.toml": "environment = false\nengine =\n"}),
    "pyproject table": Bad(("diagnose", "case.yaml"), 2,
                           ("pyproject.toml:5: unknown setting 'formt'", "known: environment"),
                           {"case.yaml": "platform: J6M\n",
                            "pyproject.toml": "[project]\nname = 'x'\n\n[tool.j6doctor]\nformt = 'json'\n"}),
    "--store in a missing folder": Bad(("diagnose", EMPTY, "--store", "no/cases.db"), 2,
                                       ("no/cases.db: the folder", "create it or give another --store path")),
    "--store bad URL": Bad(("diagnose", EMPTY, "--store", "foo://bar"), 2,
                           ("foo://bar: not a usable database URL", "give a file path (SQLite) or postgresql://")),
    "--store URL with a port that is no number": Bad(("diagnose", EMPTY, "--store", "postgresql://h:abc/db"), 2,
                                                     ("postgresql://h:abc/db: not a usable database URL",
                                                      "give a file path (SQLite) or postgresql://")),
    "--store not a database": Bad(("cases", "list", "--store", "cases.db"), 2,
                                  ("cases.db: exists and is not a SQLite database, not a case library",
                                   "give a new path or a library j6doctor made"),
                                  {"cases.db": "not a database\n"}),
    "cases import bad line": Bad(("cases", "import", "export.jsonl", "--store", "cases.db"), 2,
                                 ("export.jsonl:1: not a case-library line", "expected a line of `j6doctor cases export`"),
                                 {"export.jsonl": '{"format": "other"}\n'}),
    "cases import missing file": Bad(("cases", "import", "export.jsonl", "--store", "cases.db"), 2,
                                     ("export.jsonl: cannot read", "expected a JSON Lines file of `j6doctor cases export`")),
    "cases without a store": Bad(("cases", "list"), 2, ("give the case library with --store PATH|URL",)),
    "next-step on a bad case": Bad(("next-step", "case.yaml"), 2,
                                   ("case.yaml:2: results.qat_bc.evidence", "allowed: dataset_eval"),
                                   {"case.yaml": "results:\n  qat_bc: {status: abnormal, evidence: rumour}\n"}),
    "explain --why-not unknown stage": Bad(("explain", EMPTY, "--why-not", "compiler"), 2,
                                           ("--why-not: unknown stage 'compiler'", "allowed: pre_export")),
    "ask into a missing folder": Bad(("ask", "no/case.yaml", "--no-env"), 2,
                                     ("no/case.yaml: the folder no does not exist", "create it or give another CASE path"),
                                     stdin="qat_pt\n"),
    "triage a missing path": Bad(("triage", "nowhere", "--no-progress"), 2,
                                 ("nowhere: no such file or folder", "give a case file (.yaml, .yml, .json) or a folder")),
    "--workdir missing": Bad(("diagnose", "--workdir", "nowhere", "--no-env"), 2,
                             ("nowhere: no such folder", "--workdir takes a folder of artifacts")),
    "-o in a missing folder": Bad(("diagnose", EMPTY, "-o", "no/report.md"), 2,
                                  ("no/report.md: cannot write", "give -o a file in an existing, writable folder")),
    "unknown J6DOCTOR_ENGINE": Bad(("diagnose", EMPTY), 2,
                                   ("J6DOCTOR_ENGINE=jess: unknown engine 'jess'", "expected one of: durable, clips"),
                                   env={"J6DOCTOR_ENGINE": "jess"}),
    "rules lint of a missing pack": Bad(("rules", "lint", "no_pack"), 2,
                                        ("no_pack: no such rule folder or file", "give a rule pack folder")),
    "inspect a missing path": Bad(("inspect", "nowhere"), 2,
                                  ("nowhere: no such file or folder", "inspect takes artifact files or folders")),
}


@pytest.mark.parametrize("name", list(BAD))
def test_error_names_the_file_and_what_to_do(cli, tmp_path, name):
    import os
    import subprocess
    import sys

    bad = BAD[name]
    for relative, content in bad.files.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    if bad.stdin is None:
        proc = cli(*bad.args, env=bad.env)
    else:
        env = {k: v for k, v in os.environ.items() if k != "J6DOCTOR_DEBUG"} | bad.env
        proc = subprocess.run([sys.executable, "-m", "j6doctor", *bad.args], cwd=tmp_path, env=env, input=bad.stdin,
                              capture_output=True, text=True, timeout=120)
    assert proc.returncode == bad.code, proc.stderr[-2000:]
    text = getattr(proc, bad.stream)
    for fragment in bad.says:
        assert fragment in text, f"{fragment!r} not in:\n{text[-2000:]}"
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    if bad.code == exit_codes.EXIT_INPUT:
        assert "error: " in proc.stderr


def test_exit_codes_are_documented():
    """docs/CONTRACT.md's "Exit codes" table, the one place they are documented, lists every
    code of app/exit_codes.py, Ctrl-C 130 included (tests/test_ask.py checks that Ctrl-C exits 130)."""
    contract = (REPO / "docs" / "CONTRACT.md").read_text(encoding="utf-8")
    table = contract[contract.index("- Exit codes"):].split("\n\n")[1]
    documented = {int(code) for code in re.findall(r"^  \| (\d+) \|", table, re.M)}
    codes = {value for name, value in vars(exit_codes).items() if name.startswith("EXIT_")}
    assert documented == codes
    assert re.search(r"^  \| 1 \| findings: `rules lint`", table, re.M)
    assert re.search(r"^  \| 3 \| an internal error", table, re.M)
    assert re.search(r"^  \| 130 \| Ctrl-C", table, re.M)

