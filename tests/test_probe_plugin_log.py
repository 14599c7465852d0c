"""horizon_plugin_pytorch run logs (REAL_FORMATS.md R8) against the invented fixtures in
fixtures/formats/real/plugin_log: a clean run (Python 3.10), a run with warnings, tables
and a traceback (conda, Python 3.11, two final newlines, trailing spaces), a Windows log
(CRLF, no final newline) and a log whose source paths name two Python versions."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from j6doctor.probes.artifacts import HEAD_BYTES, find_artifacts, identify
from j6doctor.probes.input_error import InputError
from j6doctor.probes.plugin_log import LogMessage, PluginLog, parse_plugin_log, read_plugin_log

FORMATS = Path(__file__).parent / "fixtures" / "formats"
LOGS = FORMATS / "real" / "plugin_log"
CLEAN = LOGS / "clean_run_py310.log"
WARNINGS = LOGS / "warnings_traceback_py311.log"
WINDOWS = LOGS / "windows_crlf.log"
MIXED = LOGS / "mixed_python.log"
GARBLED = LOGS / "garbled"

S10 = "/usr/lib/python3.10/site-packages/horizon_plugin_pytorch"
S11 = "/opt/conda/envs/qat/lib/python3.11/site-packages/horizon_plugin_pytorch"


def write(tmp_path: Path, content: str | bytes, name: str = "run.log") -> Path:
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


def one_line_log(path: str, message: str = "hello", level: str = "INFO") -> str:
    return f"2026-03-01 14:02:11,204 {level} [{path}:12] {message}\n"


def summary(log: PluginLog) -> list[tuple[int, int, str, str]]:
    return [(m.line, m.end_line, m.level, m.text) for m in log.messages]


# ---------------------------------------------------------------- the fixtures

def test_clean_run_messages_and_sources():
    log = read_plugin_log(CLEAN)
    assert log.display == "clean_run_py310.log"
    assert len(log.messages) == 11
    first = log.messages[0]
    assert first == LogMessage(
        line=1, end_line=1, time="2026-03-01 14:02:11,204", level="INFO",
        path=f"{S10}/quantization/prepare.py", module="horizon_plugin_pytorch/quantization/prepare.py",
        source_line=412, python="3.10",
        text="horizon_plugin_pytorch version: 3.0.5+cu126.torch260",
        raw=f"2026-03-01 14:02:11,204 INFO [{S10}/quantization/prepare.py:412] "
            "horizon_plugin_pytorch version: 3.0.5+cu126.torch260")
    assert first.package == "horizon_plugin_pytorch"
    last = log.messages[-1]
    assert (last.line, last.level, last.module, last.source_line, last.text) == (
        11, "DEBUG", "horizon_plugin_pytorch/quantization/fx/graph_module.py", 201, "graph module recompiled")
    assert log.warnings == ()


def test_clean_run_python_versions_and_march():
    log = read_plugin_log(CLEAN)
    assert log.python.version == "3.10"
    assert log.python.site_packages == "/usr/lib/python3.10/site-packages"
    assert log.python.line == 1
    assert log.python_differs is False
    assert [(v.name, v.version, v.line) for v in log.versions] == [
        ("horizon_plugin_pytorch", "3.0.5+cu126.torch260", 1),
        ("horizon_plugin_profiler", "3.0.5", 2),
    ]
    assert log.version("horizon-plugin-pytorch").version == "3.0.5+cu126.torch260"
    assert log.version("HORIZON_PLUGIN_PROFILER").line == 2
    assert log.version("hbdk4_compiler") is None
    assert (log.march.value, log.march.march, log.march.line) == ("nash-m", "nash-m", 3)


def test_clean_run_model_check_summary():
    log = read_plugin_log(CLEAN)
    assert [(c.topic, c.ok, c.text, c.line, c.modules) for c in log.checks] == [
        ("fusion", True, "All fusable modules are fused in model!", 6, ()),
        ("module_calls", True, "All modules in the model run exactly once.", 7, ()),
        ("qconfig", True, "No obvious abnormal qconfig in the model.", 8, ()),
        ("result_file", True, "Check full result in "
                              ".model_check_results/model_check_result_261101_0942_31337.txt", 9, ()),
    ]
    assert log.check("module_calls").ok is True
    assert log.check("high_precision_output") is None
    assert log.result_file.path == ".model_check_results/model_check_result_261101_0942_31337.txt"
    assert log.result_file.line == 9
    assert [(t.names, t.line) for t in log.templates] == [
        (("ModuleNameTemplate", "ConvDtypeTemplate", "MatmulDtypeTemplate"), 4)]
    assert log.templates[0].text.startswith("Apply qconfig templates: ModuleNameTemplate, ")


def test_warnings_are_kept_verbatim_with_their_lines():
    log = read_plugin_log(WARNINGS)
    assert [(m.level, m.line, m.end_line) for m in log.warnings] == [
        ("WARNING", 5, 5), ("WARNING", 7, 7), ("WARNING", 8, 12), ("WARNING", 14, 17),
        ("WARNING", 19, 25), ("ERROR", 28, 34)]
    # Trailing spaces of the line are dropped, the rest is verbatim.
    assert log.warnings[0].text == ("ConvDtypeTemplate: int16 input of backbone.stem is not "
                                    "supported, reverted to qint8")
    assert log.warnings[0].raw.endswith("reverted to qint8")
    assert log.warnings[2].text == ("Modules below are not used:\n"
                                    "name                called times\n"
                                    "----------------  --------------\n"
                                    "neck.extra_conv   0\n"
                                    "head.aux_branch   0")
    assert log.warnings[2].headline == "Modules below are not used:"


def test_multi_line_traceback_continues_the_error_message():
    error = read_plugin_log(WARNINGS).warnings[-1]
    assert error.level == "ERROR"
    assert error.headline == "export failed: unsupported op in head.decode"
    assert error.module == "horizon_plugin_pytorch/quantization/hbdk4/export_hbir.py"
    assert (error.source_line, error.line, error.end_line) == (311, 28, 34)
    lines = error.text.split("\n")
    assert lines[1] == "Traceback (most recent call last):"
    assert lines[2] == f'  File "{S11}/quantization/hbdk4/export_hbir.py", line 305, in export'
    assert lines[-1] == "RuntimeError: topk with a dynamic k is not supported"


def test_warnings_run_facts():
    log = read_plugin_log(WARNINGS)
    assert log.python.version == "3.11"
    assert log.python.site_packages == "/opt/conda/envs/qat/lib/python3.11/site-packages"
    assert log.python_differs is False
    assert [(v.name, v.version, v.line) for v in log.versions] == [
        ("horizon_plugin_pytorch", "3.0.5+cu126.torch260", 1),
        ("hbdk4_compiler", "4.1.5", 2),
        ("torch", "2.6.0+cu126", 3),
    ]
    assert [(m.value, m.march, m.line) for m in log.marches] == [("NASH_E", "nash-e", 4)]
    assert [(t.names, t.line) for t in log.templates] == [(("ConvDtypeTemplate",), 5)]


def test_warnings_run_negative_check_statements_list_their_modules():
    log = read_plugin_log(WARNINGS)
    assert [(c.topic, c.ok, c.line, c.modules) for c in log.checks] == [
        ("fusion", True, 6, ()),
        ("high_precision_output", False, 7, ("head.cls_out",)),
        ("module_calls", False, 8, ("neck.extra_conv", "head.aux_branch")),
        ("module_calls", False, 14, ("neck.act",)),
        ("qconfig", False, 19, ("backbone.stem", "head.reg_out")),
        ("result_file", True, 27, ()),
    ]
    assert log.checks[2].text == "Modules below are not used:"
    assert log.checks[3].text == "Modules below are used multi times:"
    assert log.check("module_calls").line == 14  # the last statement on the topic
    assert log.check("qconfig").ok is False
    assert [(r.path, r.line) for r in log.result_files] == [
        ("/data/det/.model_check_results/model_check_result_260302_0915_777.txt", 27)]


def test_windows_crlf_log_without_final_newline():
    raw = WINDOWS.read_bytes()
    assert b"\r\n" in raw and not raw.endswith(b"\n")
    log = read_plugin_log(WINDOWS)
    assert all("\r" not in m.text and "\r" not in m.raw for m in log.messages)
    assert [(m.line, m.end_line) for m in log.messages] == [(1, 1), (2, 2), (3, 3), (4, 9), (11, 11)]
    assert log.python.version == "3.10"
    assert log.python.site_packages == (
        r"C:\Users\dev\AppData\Local\Programs\Python\Python310\Lib\site-packages")
    assert log.messages[2].module == "horizon_plugin_pytorch/utils/model_checker.py"
    assert log.messages[2].path.endswith(r"\horizon_plugin_pytorch\utils\model_checker.py")
    assert log.version("horizon_plugin_pytorch").version == "3.0.5+cpu.torch260"
    assert log.march.march == "nash-e"
    assert log.check("qconfig").modules == ("head.cls_out",)
    assert log.result_file.path == r"C:\work\det\.model_check_results\model_check_result_260303_2041_4242.txt"
    assert log.result_file.line == 11
    assert [(w.level, w.line) for w in log.warnings] == [("WARNING", 4)]


def test_mixed_python_versions_are_reported_in_order():
    log = read_plugin_log(MIXED)
    assert [(p.version, p.site_packages, p.line) for p in log.python_versions] == [
        ("3.11", "/home/dev/proj/.venv/lib/python3.11/site-packages", 1),
        ("3.10", "/home/dev/.local/lib/python3.10/site-packages", 3),
    ]
    assert log.python.version == "3.11"
    assert log.python_differs is True
    # An editable install from a source tree: the module is found, the Python is not.
    source = log.messages[1]
    assert (source.module, source.python) == ("horizon_plugin_pytorch/nn/qat/conv2d.py", None)
    # Both printed plugin versions are kept; version() answers the first.
    assert [(v.version, v.line) for v in log.versions] == [("3.0.5+cu126.torch260", 1), ("3.0.4", 3)]
    assert log.version("horizon_plugin_pytorch").version == "3.0.5+cu126.torch260"
    assert log.marches == ()
    assert log.templates == ()


def test_mixed_log_check_statements():
    log = read_plugin_log(MIXED)
    assert [(c.topic, c.ok, c.text, c.line, c.modules) for c in log.checks] == [
        # The fusion warning logs each table as a message of its own, without a headline.
        ("fusion", False, "Fusable modules are listed below:", 4, ("neck.lateral.conv", "neck.lateral.bn")),
        # Unknown wording from the check module is kept verbatim.
        ("other", None, "Qconfig of 3 modules was set by hand", 11, ()),
        ("result_file", False, "To check full result info, set `save_results=True`.", 12, ()),
    ]
    assert log.result_files == ()
    assert log.result_file is None
    # A message line with only trailing spaces after the prefix has an empty headline.
    follower = log.messages[4]
    assert (follower.line, follower.end_line, follower.headline) == (5, 9, "")
    assert follower.raw.endswith("model_checker.py:744]")


def test_dataclasses_are_frozen():
    log = read_plugin_log(CLEAN)
    with pytest.raises(dataclasses.FrozenInstanceError):
        log.display = "other"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        log.messages[0].level = "ERROR"  # type: ignore[misc]


def test_parse_text_directly_with_its_display_name():
    text = CLEAN.read_text(encoding="utf-8")
    log = parse_plugin_log(text, "logs/run.log")
    assert log.display == "logs/run.log"
    assert summary(log) == summary(read_plugin_log(CLEAN))


@pytest.mark.parametrize("label, change", [
    ("no final newline", lambda t: t.rstrip("\n")),
    ("two final newlines", lambda t: t + "\n"),
    ("CRLF", lambda t: t.replace("\n", "\r\n")),
    ("trailing spaces", lambda t: t.replace("\n", "   \n")),
    ("BOM", lambda t: "\ufeff" + t),
])
def test_line_endings_and_trailing_spaces_do_not_change_the_result(tmp_path, label, change):
    for fixture in (CLEAN, WARNINGS):
        text = fixture.read_text(encoding="utf-8")
        changed = read_plugin_log(write(tmp_path, change(text)))
        original = read_plugin_log(fixture)
        assert summary(changed) == summary(original), label
        assert changed.checks == original.checks
        assert changed.versions == original.versions


# ---------------------------------------------------------------- Python of the environment

@pytest.mark.parametrize("site, version", [
    ("/usr/lib/python3.10/site-packages", "3.10"),
    ("/usr/local/lib/python3.10/dist-packages", "3.10"),
    ("/usr/lib64/python3.11/site-packages", "3.11"),
    ("/opt/conda/lib/python3.10/site-packages", "3.10"),
    ("/home/u/miniconda3/envs/qat/lib/python3.11/site-packages", "3.11"),
    ("/home/u/proj/.venv/lib/python3.11/site-packages", "3.11"),
    ("/home/u/.local/lib/python3.10/site-packages", "3.10"),
    ("/Library/Frameworks/Python.framework/Versions/3.11/lib/python3.11/site-packages", "3.11"),
    (r"C:\Python310\Lib\site-packages", "3.10"),
    (r"C:\Users\u\AppData\Local\Programs\Python\Python311\Lib\site-packages", "3.11"),
    (r"C:\Users\u\AppData\Local\Packages\PythonSoftwareFoundation.Python.3.11_qbz5n2kfra8p0"
     r"\LocalCache\local-packages\Python311\site-packages", "3.11"),
    (r"C:\Users\u\.pyenv\pyenv-win\versions\3.10.11\Lib\site-packages", "3.10"),
    (r"C:\Users\u\miniconda3\envs\qat\Lib\site-packages", None),
    (r"C:\proj\.venv\Lib\site-packages", None),
    ("/usr/lib/python3/dist-packages", None),
])
def test_python_version_from_site_packages_layouts(site, version):
    sep = "\\" if "\\" in site else "/"
    path = sep.join([site, "horizon_plugin_pytorch", "quantization", "prepare.py"])
    log = parse_plugin_log(one_line_log(path), "run.log")
    message = log.messages[0]
    assert message.python == version
    assert message.module == "horizon_plugin_pytorch/quantization/prepare.py"
    if version is None:
        assert log.python is None and log.python_versions == ()
    else:
        assert (log.python.version, log.python.site_packages, log.python.line) == (version, site, 1)


def test_messages_from_other_packages_are_kept():
    text = (one_line_log(f"{S10}/quantization/prepare.py")
            + one_line_log("/usr/lib/python3.10/site-packages/horizon_plugin_profiler/api.py",
                           "horizon_plugin_profiler version: 3.0.5", "WARNING"))
    log = parse_plugin_log(text, "run.log")
    assert [m.package for m in log.messages] == ["horizon_plugin_pytorch", "horizon_plugin_profiler"]
    assert log.version("horizon_plugin_profiler").line == 2
    assert [w.module for w in log.warnings] == ["horizon_plugin_profiler/api.py"]


def test_march_spellings():
    text = "".join(one_line_log(f"{S10}/march.py", message) for message in (
        "current march: nash-m",
        "compile with march=nash-e",
        "set march to March.NASH_P",
        "the march is not set",                 # no march name: nothing
        "current march: nash-m",                # seen before: not repeated
    ))
    log = parse_plugin_log(text, "run.log")
    assert [(m.value, m.march, m.line) for m in log.marches] == [
        ("nash-m", "nash-m", 1), ("nash-e", "nash-e", 2), ("NASH_P", "nash-p", 3)]


# ---------------------------------------------------------------- discovery by content

NEUTRAL = "pasted_from_ticket.txt"  # a name that hints at no kind
# unknown_level.log breaks only at line 3: it is recognised, so the user gets its read error.
RECOGNISED = [CLEAN, WARNINGS, WINDOWS, MIXED, GARBLED / "unknown_level.log"]


def other_format_files() -> list[Path]:
    """The fixtures of every other format (the files in the folders under formats/) and the
    garbled logs without a readable plugin message line."""
    files = [p for p in FORMATS.rglob("*")
             if p.is_file() and p.parent != FORMATS and LOGS not in p.parents]
    files += [GARBLED / "not_a_log.txt", GARBLED / "other_package.log",
              GARBLED / "truncated_first_line.log", GARBLED / "binary.log"]
    return sorted(files)


@pytest.mark.parametrize("path", other_format_files(), ids=lambda p: p.relative_to(FORMATS).as_posix())
def test_other_files_are_not_identified_as_a_plugin_log(path):
    assert identify(path.name, path.read_bytes()[:HEAD_BYTES])[0] != "plugin_log"


def test_a_log_line_after_the_first_4_kb_is_not_seen(tmp_path):
    text = CLEAN.read_text(encoding="utf-8")
    padded = write(tmp_path, "x" * 5000 + "\n" + text)
    found, problems, summaries = find_artifacts([padded], tmp_path)
    assert found == [] and problems == []
    assert summaries[0].unrecognised == ["run.log"]
    found, _, _ = find_artifacts([write(tmp_path, text)], tmp_path)
    assert [(f.kind, f.by) for f in found] == [("plugin_log", "content")]


# ---------------------------------------------------------------- bad input

@pytest.mark.parametrize("name, line, fragment", [
    ("truncated_first_line.log", 1, "message line cut off or garbled: no complete [<source>.py:<line>]"),
    ("not_a_log.txt", 1, "expected a message line '<YYYY-MM-DD HH:MM:SS,mmm> <LEVEL> "
                         "[<...>/horizon_plugin_pytorch/<module>.py:<N>] <message>', found "
                         "'horizon_plugin_pytorch version: 3.0.5+cu126.torch260'"),
    ("binary.log", 2, "binary data (NUL byte)"),
    ("other_package.log", 1, "no message logged from horizon_plugin_pytorch"),
])
def test_garbled_fixtures_raise_input_error(name, line, fragment):
    with pytest.raises(InputError) as info:
        read_plugin_log(GARBLED / name)
    assert info.value.file == name
    assert info.value.line == line
    assert fragment in info.value.message
    assert str(info.value).startswith(f"{name}:{line}: ")


def clean_lines() -> list[str]:
    return CLEAN.read_text(encoding="utf-8").split("\n")


@pytest.mark.parametrize("label, content, line, fragment", [
    ("empty", b"", None, "empty file"),
    ("blank lines only", b"\n  \n\n", None, "empty file"),
    ("non-UTF-8", CLEAN.read_bytes()[:200] + b"\xe9\xff\n", 2, "not UTF-8"),
    ("no space before the message", clean_lines()[0].replace("412] ", "412]") + "\n", 1,
     "no space between"),
    ("source without .py", clean_lines()[0].replace("prepare.py:412", "prepare:412") + "\n", 1,
     "no complete [<source>.py:<line>]"),
    ("lower-case level", clean_lines()[0].replace(" INFO ", " info ") + "\n", 1, "unknown level 'info'"),
])
def test_broken_input_raises_input_error_with_its_line(tmp_path, label, content, line, fragment):
    with pytest.raises(InputError) as info:
        read_plugin_log(write(tmp_path, content))
    assert info.value.file == "run.log"
    assert info.value.line == line, label
    assert fragment in info.value.message, label


def test_parse_rejects_nul_and_empty_text_too():
    with pytest.raises(InputError, match=r"^x\.log:3: binary data"):
        parse_plugin_log(one_line_log(f"{S10}/a.py") * 2 + "\x00", "x.log")
    with pytest.raises(InputError, match=r"^x\.log: empty file"):
        parse_plugin_log("", "x.log")


def test_missing_file_and_folder_raise_input_error(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_plugin_log(tmp_path / "absent.log")
    with pytest.raises(InputError, match="is a folder"):
        read_plugin_log(tmp_path, display="logs")


# Pasted and excerpted logs: the garbled part is skipped with the lines continuing it, and named.
@pytest.mark.parametrize("label, content, skipped, messages", [
    ("junk before the first message", "some text\nmore text\n" + CLEAN.read_text(encoding="utf-8"),
     (1, "expected a message line", "; lines 1-2 not read"), 11),
    ("last line cut in the prefix", "\n".join(clean_lines()[:4] + [clean_lines()[4][:60]]),
     (5, "message line cut off or garbled: no complete [<source>.py:<line>] after the level", ""), 4),
    ("last line cut in the timestamp", "\n".join(clean_lines()[:4] + ["2026-03-01 14:0"]),
     (5, "incomplete timestamp", ""), 4),
    ("timestamp only", "\n".join(clean_lines()[:2] + ["2026-03-01 14:02:11,204"] + clean_lines()[2:]),
     (3, "no level after the timestamp", ""), 11),
])
def test_a_garbled_part_is_skipped_and_named(tmp_path, label, content, skipped, messages):
    log = read_plugin_log(write(tmp_path, content))
    (item,) = log.skipped.kept
    line, fragment, span = skipped
    assert item.line == line and fragment in item.reason and item.reason.endswith(span or "")
    assert len(log.messages) == messages
    clean = read_plugin_log(CLEAN).messages
    assert [m.headline for m in log.messages] == [m.headline for m in clean[:messages]]


def test_an_unknown_level_skips_that_message_only():
    log = read_plugin_log(GARBLED / "unknown_level.log", display=".horizon_plugin_pytorch_logs/run.log")
    (item,) = log.skipped.kept
    assert item.line == 3 and "unknown level 'WARN' (expected one of DEBUG, INFO, WARNING, ERROR, CRITICAL)" \
        in item.reason
    assert log.march is None or log.march.line != 3   # the garbled message is not read
    assert [m.line for m in log.messages][:2] == [1, 2] and 3 not in [m.line for m in log.messages]


def test_display_name_defaults_to_the_file_name_and_can_be_given():
    with pytest.raises(InputError) as info:
        read_plugin_log(GARBLED / "truncated_first_line.log", display=".horizon_plugin_pytorch_logs/run.log")
    assert info.value.file == ".horizon_plugin_pytorch_logs/run.log"


def test_garbled_table_in_a_warning_keeps_the_statement(tmp_path):
    text = WARNINGS.read_text(encoding="utf-8").replace(
        "| head.reg_out    | <class", "| head.reg_out  <class")
    log = read_plugin_log(write(tmp_path, text))
    assert log.check("qconfig").ok is False
    assert "head.reg_out" not in log.check("qconfig").modules   # its garbled row is not read
    assert len(log.check("qconfig").modules) == len(read_plugin_log(WARNINGS).check("qconfig").modules) - 1
    assert len(log.warnings) == 6
