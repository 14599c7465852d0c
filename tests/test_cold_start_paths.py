"""What a cold start skips must not change what it does: the engine child forked with its
own pipes (engine/worker.py), facts handed to durable-rules through the json module when that
writes the same text (engine/engine_json.py), a pyproject.toml without j6doctor settings left
unparsed (app/config.py), modules a command does not use left unimported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import EXAMPLES
from j6doctor.config import _may_hold_table, load_config
from j6doctor.engine import engine_json
from j6doctor.engine.worker import _PipeChannel

CASE = EXAMPLES / "convert_j6m.yaml"


def _python(code: str, cache_home, extra_env: dict | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("J6DOCTOR_")}
    env.update(XDG_CACHE_HOME=str(cache_home), **(extra_env or {}))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)


def _cli(args: list[str], cache_home, extra_env: dict | None = None) -> subprocess.CompletedProcess:
    return _python(f"import sys; from j6doctor.cli import main; main({args!r})", cache_home, extra_env)


def test_help_loads_no_record_classes(tmp_path):
    code = ("import sys\nfrom j6doctor.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print('dataclasses' in sys.modules, file=sys.stderr)")
    proc = _python(code, tmp_path / "cache")
    assert proc.returncode == 0 and "diagnose" in proc.stdout
    assert proc.stderr.strip().splitlines()[-1] == "False"


def test_help_lists_every_command_without_importing_one(tmp_path):
    from j6doctor.commands import COMMANDS

    code = ("import sys\nfrom j6doctor.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith('j6doctor.commands.')), file=sys.stderr)")
    proc = _python(code, tmp_path / "cache")
    assert proc.returncode == 0
    listed = [line.split()[0] for line in proc.stdout.split("COMMAND\n", 1)[1].splitlines()
              if line.startswith("    ") and not line.startswith("     ")]
    assert listed == list(COMMANDS)
    # the console and the options are the parser's own; no command module is imported
    assert proc.stderr.strip().splitlines()[-1] == "['j6doctor.commands.console', 'j6doctor.commands.options']"


def test_a_command_runs_with_its_own_parser_only_and_a_typo_lists_every_command(tmp_path):
    from j6doctor.cli import build_parser, command_run

    assert command_run(["-q", "rules", "lint"]) == "rules"
    assert command_run(["--help"]) == "" and command_run(["diagnoze", "x"]) is None
    parser = build_parser("rules")
    assert parser.parse_args(["rules", "lint"]).rules_command == "lint"
    proc = _cli(["diagnoze", "case.yaml"], tmp_path / "cache")
    assert proc.returncode == 2
    assert "invalid choice: 'diagnoze'" in proc.stderr and "'rules'" in proc.stderr


def test_a_cold_run_gives_the_same_report_with_and_without_caches(tmp_path):
    args = ["diagnose", str(CASE), "--format", "json", "--no-env"]
    cold = _cli(args, tmp_path / "cache")
    warm = _cli(args, tmp_path / "cache")
    off = _cli(args, tmp_path / "none", {"J6DOCTOR_CACHE": "0"})
    assert cold.returncode == warm.returncode == off.returncode == 0, (cold.stderr, off.stderr)
    assert cold.stdout == warm.stdout == off.stdout
    assert json.loads(warm.stdout)["stage"]


def test_a_warm_run_imports_only_what_it_uses(tmp_path):
    """No TOML parser without a j6doctor table, no spelling suggestions without a typo, no
    schema validator for a case the schema certainly admits, no rule loader, compiler checks
    or decision tables for a rule base from the cache, no table reader, template engine or
    database layer a JSON report of a case does not need."""
    unused = ("tomllib", "difflib", "jsonschema", "pandas", "numpy", "jinja2", "ruamel", "sqlalchemy")
    own = ("j6doctor.engine.rule_loader", "j6doctor.engine.decision_table", "j6doctor.engine.lint",
           "j6doctor.engine.limits", "j6doctor.probes.compare_per_layer",
           # the explanation's wording: for Markdown and explain, not for a JSON verdict
           "j6doctor.explain_report", "j6doctor.case_words", "j6doctor.engine.explain", "j6doctor.facts.described",
           # the other commands: listed by `--help`, never built for a diagnosis
           "j6doctor.commands.ask", "j6doctor.commands.cases", "j6doctor.commands.rules",
           "j6doctor.commands.triage", "j6doctor.commands.schema", "j6doctor.commands.inspect")
    code = ("import sys\nfrom j6doctor.cli import main\n"
            f"main({['diagnose', str(CASE), '--format', 'json', '--no-env']!r})\n"
            f"print(sorted(m for m in sys.modules if m.split('.')[0] in {unused!r} or m in {own!r}), file=sys.stderr)")
    home = tmp_path / "cache"
    assert _python(code, home).returncode == 0  # fills the caches
    proc = _python(code, home)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "[]"


# ---------------------------------------------------------------- the engine child's pipes

def test_a_pipe_channel_carries_messages_larger_than_the_pipe_buffer():
    read_a, write_a = os.pipe()
    read_b, write_b = os.pipe()
    near, far = _PipeChannel(read_b, write_a), _PipeChannel(read_a, write_b)
    big = {"text": "文" * 3_000_000, "n": list(range(50_000))}

    def echo():
        far.send(far.recv())

    thread = threading.Thread(target=echo)
    thread.start()
    near.send(big)  # several MB: written while the other end reads
    assert near.poll(30)
    assert near.recv() == big
    thread.join(10)
    far.close()
    assert near.poll(5)  # the other end closed: readable, and recv says so
    with pytest.raises(EOFError):
        near.recv()
    near.close()
    with pytest.raises(OSError):
        near.send(1)


def test_a_pipe_channel_times_out_when_nothing_comes():
    read_fd, write_fd = os.pipe()
    channel = _PipeChannel(read_fd, write_fd)
    assert channel.poll(0.05) is False
    channel.close()


# ---------------------------------------------------------------- engine_json fast path

def _slow(value, ensure_ascii=False) -> str:
    parts: list[str] = []
    engine_json._encode(value, parts, ensure_ascii)
    return "".join(parts)


LEAVES = st.one_of(
    st.none(), st.booleans(),
    st.integers(min_value=-(1 << 70), max_value=1 << 70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([1e-4, 9.999e-5, 1e16, 9999999999999998.0, -0.0, 1e-05, 1.5e300]),
    st.text(max_size=20), st.sampled_from(["\ud800x", "量化 \"q\" \\n", "\x00\x1f"]),
)
VALUES = st.recursive(LEAVES, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=5), inner, max_size=4)), max_leaves=12)


@settings(max_examples=400, deadline=None)
@given(VALUES, st.booleans())
def test_facts_encode_as_the_exact_encoder_writes_them(value, ensure_ascii):
    assert engine_json.dumps(value, ensure_ascii) == _slow(value, ensure_ascii)


def test_values_the_json_module_writes_otherwise_take_the_exact_path():
    assert engine_json.dumps({"v": 1e-05}) == '{"v":0.00001}'
    assert engine_json.dumps({"v": 1 << 64}) == '{"v":18446744073709551616.0}'
    assert engine_json.dumps({"v": "\ud800"}) == '{"v":"?"}'  # what the engine can take
    assert engine_json.dumps([(1, 2.5)]) == "[[1,2.5]]"
    with pytest.raises(TypeError):
        engine_json.dumps({"v": {1, 2}})


# ---------------------------------------------------------------- pyproject.toml prefilter

@pytest.mark.parametrize("text", [
    "[tool.j6doctor]\nengine = 'clips'\n",
    "[ tool . \"j6doctor\" ]\nengine = 'clips'\n",
    "tool.j6doctor.engine = 'clips'\n",
    "[tool]\nj6doctor = { engine = 'clips' }\n",
    "tool = { j6doctor = { engine = 'clips' } }\n",
])
def test_every_spelling_of_the_table_is_read(tmp_path, text):
    assert _may_hold_table(text.encode(), ("tool", "j6doctor"))
    # the root-level spellings must come before the first table header
    (tmp_path / "pyproject.toml").write_text(text + "[project]\nname = 'x'\n", encoding="utf-8")
    config = load_config(tmp_path, environ={"HOME": str(tmp_path / "home")})
    assert config.engine == "clips" and config.sources


def test_a_pyproject_without_the_table_is_not_parsed(tmp_path):
    # names j6doctor as a package, and is not even valid TOML: neither matters, it holds no settings
    text = "[project]\nname = \"j6doctor\"\n[tool.setuptools.package-dir]\nj6doctor = \"app\"\nbroken = [\n"
    assert not _may_hold_table(text.encode(), ("tool", "j6doctor"))
    (tmp_path / "pyproject.toml").write_text(text, encoding="utf-8")
    config = load_config(tmp_path, environ={"HOME": str(tmp_path / "home")})
    assert config.engine is None and config.sources == ()


@pytest.mark.parametrize("name", ["compare_per_layer_out.csv", "compare_per_layer_out.txt"])
def test_a_table_of_tens_of_thousands_of_rows_is_read_without_pandas(tmp_path, name):
    """pandas costs a quarter of a second to import: it reads only tables past STDLIB_MAX_BYTES."""
    from synthetic import big_rows, csv_text, psql

    rows = big_rows(20_000)
    text = csv_text(rows) if name.endswith(".csv") else psql(rows)
    work = tmp_path / "qa"
    work.mkdir()
    (work / name).write_text(text, encoding="utf-8")
    code = ("import sys\nfrom j6doctor.cli import main\n"
            f"main({['diagnose', '--workdir', str(work), '--format', 'json', '--no-env']!r})\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pandas')[:1], file=sys.stderr)")
    proc = _python(code, tmp_path / "cache")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["artifacts"][0]["kind"].startswith("compare_per_layer")
    assert proc.stderr.strip().splitlines()[-1] == "[]"
