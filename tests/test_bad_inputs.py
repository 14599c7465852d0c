"""Bad inputs for every loader and probe: no traceback, no hang, and a message that names
the file (and the line, where there is one) for every input that cannot be read.

Three layers:

1. a corpus generated from the valid samples (tests/fixtures/formats, rules/fixtures,
   examples/cases, the bundled rules) plus the hand-written files under
   tests/fixtures/bad/: truncations, ragged rows, nan/inf, huge lines, non-UTF-8 bytes,
   empty / blank / binary files, a folder in place of the file, YAML alias bombs and
   duplicate keys, deep nesting, malicious and oversized pickles, rule files over the
   engine limits;
2. hypothesis property tests: byte and line mutations of each valid sample either parse or
   raise the reader's own error naming the file; never any other exception;
3. the CLI end to end: exit 0 (broken artifact → a warning naming it) or 2 (bad case file,
   named on stderr), never 1, never a traceback, always within the timeout.

Every reader call runs under a SIGALRM deadline (the readers are Python code, so the alarm
interrupts them); the alarm raises a BaseException so that no `except Exception` in a
probe can swallow it.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import pickle
import random
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir

from conftest import HAS_DURABLE
from j6doctor.engine import RuleBase, RuleBaseErrors
from j6doctor.engine.strict_yaml import YamlInputError, load_yaml
from j6doctor.facts import vocabulary
from j6doctor.probes import InputError
from j6doctor.probes.badcase import read_badcase_txt
from j6doctor.probes.case_file import read_case
from j6doctor.probes.compare_per_layer import read_compare_per_layer, summarize
from j6doctor.probes.fx_graph import read_fx_graph
from j6doctor.probes.layer_advisor import read_layer_advisor
from j6doctor.probes.metrics_file import judge, read_metrics
from j6doctor.probes.tolerance import Tolerance
from j6doctor.probes.model_check import read_model_check
from j6doctor.probes.pt_file import read_pt, sensitivity_rows_from_pt
from j6doctor.probes.sensitivity import read_sensitivity_txt, summarize_sensitivity
from j6doctor.probes.user_scripts import check_script

REPO = Path(__file__).resolve().parents[1]
FORMATS = REPO / "tests" / "fixtures" / "formats"
RULE_FIXTURES = REPO / "rules" / "fixtures"
BAD = REPO / "tests" / "fixtures" / "bad"
CASES = REPO / "examples" / "cases"
HQA = FORMATS / "horizon_quant_analysis"

# Generous: every reader answers in milliseconds on these inputs (a 5 MB line in < 1 s).
CALL_SECONDS = 20
CLI_SECONDS = 60
HUGE_LINE = 5 * 1024 * 1024

VOCAB = vocabulary()


# =========================================================================================
# Hang guard
# =========================================================================================

class Hang(BaseException):
    """Raised by the alarm; a BaseException so that a probe's `except Exception` cannot
    turn a hang into an ordinary error."""


WALL_FACTOR = 12  # a run blocked without using the CPU still ends, far later


@contextlib.contextmanager
def deadline(seconds: float, what: str):
    """`seconds` of this process's CPU time (ITIMER_PROF: a loaded machine, e.g. CI running
    several suites at once, does not make a quick refusal look like a hang), and a wall-clock
    bound WALL_FACTOR times longer for a run that blocks without computing."""
    def fire(signum, frame):
        kind = "CPU" if signum == signal.SIGPROF else "wall-clock"
        raise Hang(f"{what} did not finish within {seconds if kind == 'CPU' else seconds * WALL_FACTOR} s "
                   f"of {kind} time (hang)")

    previous = {sig: signal.signal(sig, fire) for sig in (signal.SIGPROF, signal.SIGALRM)}
    signal.setitimer(signal.ITIMER_PROF, seconds)
    signal.setitimer(signal.ITIMER_REAL, seconds * WALL_FACTOR)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


# =========================================================================================
# Readers
# =========================================================================================

@dataclass(frozen=True)
class Sample:
    name: str
    data: bytes


@dataclass(frozen=True)
class Reader:
    name: str
    filename: str                       # the name the input is written under
    samples: tuple[Path | Sample, ...]  # valid inputs of this format
    run: Callable[[Path], Any]          # read (and summarise) one file
    error: type[BaseException] = InputError
    wrap: Callable[[bytes], bytes] | None = None   # payload -> file bytes (.pt archives)
    unwrap: Callable[[Path], bytes] | None = None  # sample file -> payload

    def payload(self, sample: Path | Sample) -> bytes:
        if isinstance(sample, Sample):
            return sample.data
        return self.unwrap(sample) if self.unwrap else sample.read_bytes()

    def file_bytes(self, payload: bytes) -> bytes:
        return self.wrap(payload) if self.wrap else payload


def _compare(path: Path):
    table = read_compare_per_layer(path)
    summarize(table)
    return table


def _sensitivity(path: Path):
    table = read_sensitivity_txt(path)
    summarize_sensitivity(table)
    return table


def _metrics(path: Path):
    rows = read_metrics(path)
    judge(rows, Tolerance())
    return rows


def _pt(path: Path):
    return sensitivity_rows_from_pt(read_pt(path))


def _rules(path: Path):
    return RuleBase.load([path.parent], VOCAB)


def _yaml(path: Path):
    return load_yaml(path.read_bytes().decode("utf-8", "replace"))


def zip_pt(payload: bytes) -> bytes:
    """A torch zip archive around a data.pkl."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("archive/data.pkl", payload)
        archive.writestr("archive/version", b"3\n")
    return buffer.getvalue()


def data_pkl(path: Path) -> bytes:
    with zipfile.ZipFile(path) as archive:
        return archive.read(next(n for n in archive.namelist() if n.endswith("data.pkl")))


_METRIC_ROWS = [{"artifact": "qat_pt", "metric": "mAP", "value": 41.2, "dataset": "val2017", "frames": 5000},
                {"artifact": "qat_bc", "metric": "mAP", "value": 41.0, "dataset": "val2017", "frames": 5000},
                {"artifact": "quantized_bc", "metric": "mAP", "value": 36.0, "dataset": "val2017", "frames": 1}]
# The rows of rules/fixtures/metrics/metrics.csv as YAML and JSON.
_METRICS_YAML = Sample("metrics.yaml", "".join(
    f"- {{artifact: {r['artifact']}, metric: {r['metric']}, value: {r['value']}, dataset: {r['dataset']}, "
    f"frames: {r['frames']}}}\n" for r in _METRIC_ROWS).encode())
_METRICS_JSON = Sample("metrics.json", json.dumps({"results": _METRIC_ROWS}, indent=1).encode())

READERS = [
    Reader("case_yaml", "case.yaml", (CASES / "convert_j6m.yaml", CASES / "board_integration.yaml",
                                     CASES / "user_side_layout.yaml"), read_case),
    Reader("case_json", "case.json", (CASES / "convert_j6m.json",), read_case),
    Reader("compare_csv", "compare_per_layer_out.csv",
           (HQA / "compare_per_layer_out.csv", FORMATS / "variants" / "compare_per_layer_out.hbir_ragged.csv",
            RULE_FIXTURES / "rounding" / "compare_per_layer_out.csv"), _compare),
    Reader("compare_txt", "compare_per_layer_out.txt",
           (HQA / "compare_per_layer_out.txt", FORMATS / "variants" / "compare_per_layer_out.wide23.txt",
            FORMATS / "variants" / "compare_per_layer_out.hbir_ragged.txt"), _compare),
    Reader("sensitivity", "output_bbox_pred_L1_sensitive_ops.txt",
           (HQA / "output_bbox_pred_L1_sensitive_ops.txt", HQA / "output_cls_score_Cosine_sensitive_ops.txt",
            RULE_FIXTURES / "accumulation" / "output_0_L1_sensitive_ops.txt"), _sensitivity),
    Reader("badcase", "badcase.txt", (HQA / "badcase.txt", RULE_FIXTURES / "badcase_disagree" / "badcase.txt"),
           read_badcase_txt),
    Reader("model_check", "model_check_result.txt",
           (FORMATS / "prepare" / "model_check_result.txt",
            FORMATS / "variants" / "model_check_result.old_embedded_graph.txt"), read_model_check),
    Reader("fx_graph", "fx_graph.txt", (FORMATS / "prepare" / "fx_graph.txt",
                                        RULE_FIXTURES / "deploy_branch" / "fx_graph.txt"), read_fx_graph),
    Reader("layer_advisor", "abnormal_layer_advisor.txt", (HQA / "abnormal_layer_advisor.txt",),
           read_layer_advisor),
    Reader("metrics_csv", "metrics.csv", (RULE_FIXTURES / "metrics" / "metrics.csv",), _metrics),
    Reader("metrics_yaml", "metrics.yaml", (_METRICS_YAML,), _metrics),
    Reader("metrics_json", "metrics.json", (_METRICS_JSON,), _metrics),
    Reader("script", "train.py", (RULE_FIXTURES / "scripts" / "correct_flow.py",
                                  RULE_FIXTURES / "scripts" / "strategy_on_checkpoint.py"), check_script),
    Reader("pt_zip", "all_badcase_info.pt", tuple(sorted((RULE_FIXTURES / "pt").glob("*.pt"))), _pt,
           wrap=zip_pt, unwrap=data_pkl),
    Reader("pt_legacy", "badcase.pt", tuple(sorted((RULE_FIXTURES / "pt").glob("*.pt"))), _pt,
           unwrap=data_pkl),
    Reader("rule_file", "r.yaml", (REPO / "rules" / "10_evidence.yaml", REPO / "rules" / "70_mistakes.yaml"),
           _rules, error=RuleBaseErrors),
    Reader("strict_yaml", "doc.yaml", (REPO / "rules" / "40_verdict.yaml", CASES / "compile_x86_and_board.yaml"),
           _yaml, error=YamlInputError),
]
BY_NAME = {r.name: r for r in READERS}
TEXT_READERS = [r for r in READERS if not r.name.startswith("pt_")]


def test_every_sample_is_valid(tmp_path):
    """The mutations start from inputs the readers accept."""
    for reader in READERS:
        assert reader.samples, reader.name
        for sample in reader.samples:
            folder = sample.name if isinstance(sample, Sample) else sample.parent.name
            path = place(tmp_path / reader.name / folder, reader, reader.payload(sample))
            with deadline(CALL_SECONDS, f"{reader.name} on {sample}"):
                reader.run(path)


# =========================================================================================
# Checking one input
# =========================================================================================

def place(folder: Path, reader: Reader, payload: bytes | None, as_folder: bool = False) -> Path:
    """Write the input as `reader.filename` into a fresh folder (alone: rule folders are
    loaded whole); a folder of that name instead when `as_folder`."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    path = folder / reader.filename
    if as_folder:
        path.mkdir()
        (path / "inside.txt").write_text("a folder, not a file\n")
    elif payload is not None:
        path.write_bytes(reader.file_bytes(payload))
    return path


class SkippedPart(Exception):
    """A file read with a part skipped (the reader's `skipped`): the input is named as
    surely as by an error, at the first part skipped (its line and why)."""

    def __init__(self, file: str, line: int | None, reason: str):
        super().__init__(f"{file}:{line}: {reason}" if line else f"{file}: {reason}")
        self.file, self.line, self.message = file, line, reason


def outcome(reader: Reader, path: Path, what: str) -> BaseException | None:
    """Run the reader; return its own error (checked to name the file), or a SkippedPart when
    it read the file but skipped a part of it (real files are read tolerantly), None when
    the input was accepted whole. Anything else -- another exception, a hang -- fails the test."""
    try:
        with deadline(CALL_SECONDS, f"{reader.name} on {what}"):
            result = reader.run(path)
    except Hang as exc:
        raise AssertionError(str(exc)) from None
    except reader.error as exc:
        check_names_file(reader, path, exc, what)
        return exc
    except Exception as exc:  # noqa: BLE001 -- the point of the test
        raise AssertionError(f"{reader.name} on {what}: {type(exc).__name__}: {exc!s:.300} "
                             f"(expected {reader.error.__name__} or a result)") from exc
    skipped = getattr(result, "skipped", None)
    if skipped:
        assert skipped.kept, f"{what}: skipped parts counted but none kept"
        first = skipped.kept[0]
        assert first.reason.strip() and (first.line is None or first.line >= 1), f"{what}: {first}"
        return SkippedPart(path.name, first.line, first.reason)
    return None


def check_names_file(reader: Reader, path: Path, exc: BaseException, what: str) -> None:
    if isinstance(exc, InputError):
        assert exc.file in (path.name, str(path)), f"{what}: InputError names {exc.file!r}, not the file"
        assert exc.message.strip(), f"{what}: empty message"
        assert exc.render().startswith(exc.file), f"{what}: {exc.render()!r}"
        if exc.line is not None:
            assert exc.line >= 1, f"{what}: line {exc.line}"
    elif isinstance(exc, RuleBaseErrors):
        assert exc.errors, f"{what}: RuleBaseErrors without errors"
        for error in exc.errors:
            # a folder in place of the rule file: the rule folder has no rule file, and says so
            named = error.file and (path.name in error.file or error.file == str(path.parent))
            assert named, f"{what}: {error.render()!r} does not name the file"
            assert error.render().startswith(error.file), f"{what}: {error.render()!r}"
            assert error.message.strip(), f"{what}: empty message"
    elif isinstance(exc, YamlInputError):
        assert exc.message.startswith(("not valid YAML", "duplicate key", "YAML aliases", "a mapping key",
                                       "nested more than")), f"{what}: {exc.message!r}"


def expect_error(reader: Reader, path: Path, what: str, line: int | None = None,
                 fragment: str | None = None) -> BaseException:
    exc = outcome(reader, path, what)
    assert exc is not None, f"{reader.name} accepted {what}"
    if line is not None:
        found = exc.line if not isinstance(exc, RuleBaseErrors) else exc.errors[0].line
        assert found == line, f"{what}: line {found}, expected {line}: {exc}"
    if fragment is not None:
        assert fragment in str(exc), f"{what}: {fragment!r} not in {exc}"
    return exc


# =========================================================================================
# 1. Corpus
# =========================================================================================

WRITTEN_BY_PEOPLE = {"case_yaml", "case_json", "metrics_csv", "metrics_yaml", "metrics_json"}


@dataclass(frozen=True)
class Entry:
    id: str
    reader: str
    # None: the path is a folder; a callable: built when checked (the 5 MB inputs would
    # otherwise hold a few hundred MB for the whole session)
    payload: bytes | Callable[[], bytes] | None
    expect: str = "either"         # "error" | "ok" | "either"
    line: int | None = None        # expected line of the error
    fragment: str | None = None    # expected in the rendered error

    def data(self) -> bytes | None:
        return self.payload() if callable(self.payload) else self.payload


_NUMBER = re.compile(rb"(?<![\w.])-?\d+\.\d+(?:e[-+]?\d+)?(?![\w.])|(?<![\w.])-?\d+e[-+]?\d+(?![\w.])")


def _line_starts(data: bytes) -> list[int]:
    return [0] + [m.end() for m in re.finditer(rb"\n", data)]


def _truncations(data: bytes) -> list[int]:
    n = len(data)
    offsets = {n * k // 16 for k in range(16)} | {n - 1, n - 2, 1}
    for start in _line_starts(data)[1:6]:   # at and around the first line ends
        offsets |= {start - 1, start, start + 1}
    return sorted(o for o in offsets if 0 < o < n)


def _generated_corpus() -> list[Entry]:
    entries: list[Entry] = []
    for reader in READERS:
        name = reader.name
        sample = reader.payload(reader.samples[0])
        mid = sample.index(b"\n", len(sample) // 2) + 1 if b"\n" in sample[len(sample) // 2:] else len(sample) // 2
        mid_line = sample.count(b"\n", 0, mid) + 1
        for offset in _truncations(sample):
            entries.append(Entry(f"{name}-truncated-{offset}", name, sample[:offset]))
        if name.startswith("pt_"):
            continue  # the pickle corpus is below
        text_error = name not in ("compare_csv", "script", "strict_yaml", "case_yaml")
        decoded = "either" if name == "strict_yaml" else "error"  # load_yaml takes text: bytes are not its job
        entries += [
            Entry(f"{name}-empty", name, b"", "error" if text_error else "either"),
            Entry(f"{name}-whitespace", name, b"  \n\t\n   \n\n", "error" if text_error else "either"),
            Entry(f"{name}-nul", name, sample[:mid] + b"\x00" + sample[mid:], "error", line=mid_line),
            Entry(f"{name}-only-nul", name, b"\x00" * 64, "error", line=1),
            Entry(f"{name}-non-utf8", name, sample[:mid] + b"\xff\xfe bad \xc3(\n" + sample[mid:],
                  decoded, line=mid_line if name != "strict_yaml" else None),
            Entry(f"{name}-latin1", name, "ä, ö: ü\n".encode("latin-1") + sample, decoded,
                  line=1 if name != "strict_yaml" else None),
            # files people write (cases, evaluation tables) may be UTF-16 (text_file.decode_written_text)
            Entry(f"{name}-utf16", name, sample.decode("utf-8").encode("utf-16"),
                  "ok" if name in WRITTEN_BY_PEOPLE else "error"),
            Entry(f"{name}-bom", name, b"\xef\xbb\xbf" + sample),
            Entry(f"{name}-crlf", name, sample.replace(b"\n", b"\r\n")),
            Entry(f"{name}-cr-only", name, sample.replace(b"\n", b"\r")),
            Entry(f"{name}-huge-line", name, lambda: b"x" * HUGE_LINE + b"\n"),
            Entry(f"{name}-huge-line-inside", name,
                  lambda sample=sample, mid=mid: sample[:mid] + b"7" * HUGE_LINE + b"\n" + sample[mid:]),
            Entry(f"{name}-huge-cell", name,
                  lambda sample=sample, mid=mid: sample[:mid - 1] + b"9" * HUGE_LINE + sample[mid - 1:]),
            *([] if name == "strict_yaml" else [Entry(f"{name}-folder", name, None, "error")]),
            Entry(f"{name}-binary", name, random.Random(name).randbytes(4096)),
            Entry(f"{name}-lines-doubled", name, b"\n".join(line + line for line in sample.split(b"\n"))),
            Entry(f"{name}-lines-reversed", name, b"\n".join(reversed(sample.split(b"\n")))),
            Entry(f"{name}-no-final-newline", name, sample.rstrip(b"\n")),
            Entry(f"{name}-control-chars", name, sample[:mid] + bytes(range(1, 32)) + b"\n" + sample[mid:]),
        ]
        for word in (b"nan", b"inf", b"-inf", b"NaN", b"1e999", b"-0.0"):
            entries.append(Entry(f"{name}-numbers-{word.decode()}", name, _NUMBER.sub(word, sample)))
        # one number at a time would be too many; every third one
        matches = list(_NUMBER.finditer(sample))
        for k, match in enumerate(matches[:60:3]):
            entries.append(Entry(f"{name}-number{k}-nan", name,
                                 sample[:match.start()] + b"nan" + sample[match.end():]))
    return entries


def _ragged_corpus() -> list[Entry]:
    """Rows with too few / too many fields (csv) or cells (psql / simple tables)."""
    entries = []
    for reader_name in ("compare_csv", "metrics_csv"):
        sample = BY_NAME[reader_name].payload(BY_NAME[reader_name].samples[0])
        lines = sample.split(b"\n")
        fewer = lines[:3] + [lines[3].rsplit(b",", 1)[0]] + lines[4:]
        more = lines[:3] + [lines[3] + b",extra"] + lines[4:]
        lonely = lines[:3] + [lines[3].split(b",", 1)[0]] + lines[4:]
        # metrics rows may leave out the optional trailing dataset / frames fields
        fewer_expect = ("either", None) if reader_name == "metrics_csv" else ("error", 4)
        entries += [
            Entry(f"{reader_name}-row-too-few-fields", reader_name, b"\n".join(fewer), *fewer_expect),
            Entry(f"{reader_name}-row-too-many-fields", reader_name, b"\n".join(more), "error", line=4),
            Entry(f"{reader_name}-row-one-field", reader_name, b"\n".join(lonely), "error", line=4),
            Entry(f"{reader_name}-header-only", reader_name, lines[0] + b"\n"),
            Entry(f"{reader_name}-unclosed-quote", reader_name,
                  b"\n".join(lines[:3] + [b'"' + lines[3]] + lines[4:])),
        ]
    for reader_name in ("compare_txt", "sensitivity", "badcase", "model_check", "fx_graph", "layer_advisor"):
        sample = BY_NAME[reader_name].payload(BY_NAME[reader_name].samples[0])
        lines = sample.split(b"\n")
        # the longest line is a table row: cut it, lengthen it, split one of its cells
        k = max(range(len(lines)), key=lambda i: len(lines[i]))
        for label, row in (("cut", lines[k][: len(lines[k]) // 2]),
                           ("longer", lines[k] + b"  | extra |"),
                           ("extra-bar", lines[k].replace(b"  ", b" |", 1)),
                           ("tab", lines[k].replace(b" ", b"\t"))):
            entries.append(Entry(f"{reader_name}-row-{label}", reader_name,
                                 b"\n".join(lines[:k] + [row] + lines[k + 1:])))
    return entries


def _yaml_corpus() -> list[Entry]:
    """Alias bombs, duplicate keys, deep nesting, foreign tags, YAML-only types."""
    laughs = (b"a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
              + b"".join(b"%c: &%c [%s]\n" % (ord("a") + i, ord("a") + i,
                                               b", ".join([b"*%c" % (ord("a") + i - 1)] * 9))
                         for i in range(1, 9)))
    entries = []
    for name in ("case_yaml", "rule_file", "metrics_yaml", "strict_yaml"):
        entries += [
            # LibYAML resolves an alias to the anchored node, so the error points at the anchor
            Entry(f"{name}-billion-laughs", name, laughs, "error", line=1, fragment="alias"),
            Entry(f"{name}-alias", name, b"x: &x {status: normal}\nsymptom: *x\n", "error", line=2),
            Entry(f"{name}-merge-key", name, b"base: &b {a: 1}\nrules:\n  <<: *b\n", "error"),
            Entry(f"{name}-duplicate-key", name, b"symptom: a\nplatform: J6M\nsymptom: b\n", "error", line=3,
                  fragment="duplicate key"),
            Entry(f"{name}-duplicate-value-keys", name, b"1: a\n1.0: b\n", "error"),
            Entry(f"{name}-deep-list", name, b"rules: " + b"[" * 5000 + b"]" * 5000 + b"\n", "error"),
            Entry(f"{name}-deep-list-990", name, b"rules: " + b"[" * 990 + b"]" * 990 + b"\n", "error"),
            Entry(f"{name}-deep-map", name, b"rules: " + b"{a: " * 600 + b"1" + b"}" * 600 + b"\n", "error"),
            Entry(f"{name}-deep-block", name, b"".join(b"  " * i + b"k%d:\n" % i for i in range(300)), "error"),
            Entry(f"{name}-python-tag", name, b"symptom: !!python/object/apply:os.system ['echo pwned']\n",
                  "error", line=1),
            Entry(f"{name}-custom-tag", name, b"symptom: !Ref x\n", "error", line=1),
            Entry(f"{name}-two-documents", name, b"symptom: a\n---\nsymptom: b\n", "error", line=2),
            Entry(f"{name}-complex-key", name, b"? [a, b]\n: 1\n", "error", line=1),
            Entry(f"{name}-yaml-types", name, b"symptom: 2024-01-01\nplatform: !!binary aGVsbG8=\n"
                  b"tried: !!set {a, b}\n1: x\nnull: y\n2024-01-02: z\n"),
            Entry(f"{name}-bad-indent", name, b"symptom: a\n  platform: J6M\n", "error", line=2),
            Entry(f"{name}-tab-indent", name, b"results:\n\tqat_pt: normal\n", "error", line=2),
            Entry(f"{name}-unclosed-quote", name, b"symptom: \"abc\nplatform: J6M\n", "error"),
            Entry(f"{name}-huge-scalar", name, lambda: b"symptom: " + b"x" * HUGE_LINE + b"\n"),
            Entry(f"{name}-many-keys", name, b"".join(b"k%d: %d\n" % (i, i) for i in range(50_000))),
        ]
    for name, suffix in (("case_json", ".json"), ("metrics_json", ".json")):
        entries += [
            Entry(f"{name}-deep", name, b"[" * 100_000 + b"]" * 100_000, "error"),
            Entry(f"{name}-deep-990", name, b'{"symptom": ' + b"[" * 990 + b"]" * 990 + b"}", "error"),
            Entry(f"{name}-duplicate-key", name, b'{"symptom": "a", "symptom": "b"}'),
            Entry(f"{name}-nan", name, b'{"results": [{"artifact": "qat_pt", "metric": "m", "value": NaN}],'
                  b' "symptom": NaN}', "error"),
            Entry(f"{name}-infinity", name, b'[{"artifact": "qat_pt", "metric": "m", "value": 1, "frames": Infinity}]',
                  "error"),
            Entry(f"{name}-1e999", name, b'{"results": {"qat_pt": {"status": "normal", "value": 1e999}}}', "error"),
            Entry(f"{name}-big-int", name, b'{"results": {"qat_pt": {"status": "normal", "value": 1'
                  + b"0" * 5000 + b'}}}'),
            Entry(f"{name}-trailing-garbage", name, b'{"symptom": "a"} {"b": 1}', "error", line=1),
            Entry(f"{name}-lone-surrogate", name, b'{"symptom": "\\ud800"}'),
        ]
    return entries


def _case_corpus() -> list[Entry]:
    """Case files that are valid YAML but not valid cases (exit 2 in the CLI)."""
    bad = {
        "nan-value": b"results:\n  qat_pt: {status: normal, value: .nan}\n",
        "inf-value": b"results:\n  qat_pt: {status: normal, value: -.inf}\n",
        "inf-tolerance": b"metrics: {file: m.csv, tolerance: .inf}\n",
        "date-symptom": b"symptom: 2024-01-01\n",
        "date-status": b"results:\n  qat_pt: {status: 2024-01-01}\n",
        "binary-platform": b"platform: !!binary aGVsbG8=\n",
        "set-symptom": b"symptom: !!set {a, b}\n",
        "mixed-keys": b"1: a\nb: c\nnull: d\n2024-01-01: e\n",
        "list-top": b"- symptom\n- platform\n",
        "scalar-top": b"just text\n",
        "long-artifact-name": b"artifacts: [" + b"x" * 300 + b"]\n",
        "long-metrics-name": b"metrics: " + b"y" * 300 + b".csv\n",
        "nul-in-path": b'artifacts: ["a\\0b"]\n',
        "levels-inf": b"consistency_strategy: {levels: [.inf]}\n",
        "frames-zero": b"results:\n  qat_bc: {status: normal, frames: 0}\n",
        "deep-symptom": b"symptom: " + b"[" * 90 + b"]" * 90 + b"\n",
    }
    return [Entry(f"case_yaml-{k}", "case_yaml", v, "error") for k, v in bad.items()]


def _metrics_corpus() -> list[Entry]:
    entries = []
    for label, text in {
        "frames-inf": b"- {artifact: qat_pt, metric: m, value: 1, frames: .inf}\n",
        "frames-nan": b"- {artifact: qat_pt, metric: m, value: 1, frames: .nan}\n",
        "value-nan": b"- {artifact: qat_pt, metric: m, value: .nan}\n",
        "value-date": b"- {artifact: qat_pt, metric: m, value: 2024-01-01}\n",
        "mixed-keys": b"- {1: a, b: c, null: d, artifact: qat_pt, metric: m, value: 1}\n",
        "row-not-mapping": b"- 5\n",
        "results-scalar": b"results: 5\n",
    }.items():
        entries.append(Entry(f"metrics_yaml-{label}", "metrics_yaml", text, "error", line=1 if label != "results-scalar" else None))
    for label, text in {
        "huge-field": b"artifact,metric,value\nqat_pt,m," + b"1" * 200_000 + b"\n",
        "lone-cr": b"artifact,metric,value\r\nqat_pt,m,1\rqat_bc,m,2\n",
        "value-inf": b"artifact,metric,value\nqat_pt,m,inf\n",
        "frames-float": b"artifact,metric,value,frames\nqat_pt,m,1,1e999\n",
        "no-header": b"qat_pt,m,1\n",
    }.items():
        entries.append(Entry(f"metrics_csv-{label}", "metrics_csv", text, "error"))
    return entries


# --- pickles ----------------------------------------------------------------------------------

class _Reduce:
    def __init__(self, func, *args):
        self.func, self.args = func, args

    def __reduce__(self):
        return self.func, self.args


def _marker(tmp: Path) -> Path:
    return tmp / "PWNED"


def evil_payloads(marker: Path) -> dict[str, bytes]:
    """Pickles whose REDUCE would run code, write a file or start a process."""
    import builtins

    calls = {
        "os.system": _Reduce(os.system, f"touch {marker}"),
        "builtins.exec": _Reduce(builtins.exec, f"open({str(marker)!r}, 'w').write('x')"),
        "builtins.eval": _Reduce(builtins.eval, f"__import__('os').system('touch {marker}')"),
        "subprocess.Popen": _Reduce(subprocess.Popen, ["touch", str(marker)]),
        "builtins.open-w": _Reduce(builtins.open, str(marker), "w"),
    }
    out = {}
    for label, obj in calls.items():
        for protocol in (0, 2, 4):
            out[f"{label}-p{protocol}"] = pickle.dumps(["row", obj], protocol=protocol)
    # hand-written: getattr(os, 'system')('touch ...') via two REDUCEs, and a BUILD that would
    # set a refused stub's __setstate__ to os.system
    out["getattr-chain"] = (b"\x80\x02cbuiltins\ngetattr\ncos\nsystem\nX\x06\x00\x00\x00systemX"
                            + struct.pack("<I", len(f"touch {marker}")) + f"touch {marker}".encode()
                            + b"\x86R\x85R.")
    out["build-setstate"] = (b"\x80\x02cos\nsystem\n)\x81N}X\x0c\x00\x00\x00__setstate__cos\nsystem\ns\x86b"
                             b"X" + struct.pack("<I", len(f"touch {marker}")) + f"touch {marker}".encode() + b"b.")
    return out


def _shared_tuples(levels: int) -> bytes:
    """T0 = (); T(k) = (T(k-1), T(k-1)) through the memo: 2**levels elements, a few bytes each."""
    out = b")q\x000"
    for _ in range(levels):
        out += b"h\x00h\x00\x86q\x000"
    return out + b"h\x00"


PICKLE_BOMBS = {
    # hash() of a dict key with 2**40 elements: hours of C code, out of reach of any alarm
    "hash-bomb-dict-key": b"\x80\x02}" + _shared_tuples(40) + b"K\x01s.",
    "hash-bomb-set": b"\x80\x04\x8f(" + _shared_tuples(40) + b"\x90.",
    "hash-bomb-frozenset": b"\x80\x04(" + _shared_tuples(40) + b"\x91.",
    "hash-bomb-set-call": b"\x80\x02c__builtin__\nset\n" + _shared_tuples(40) + b"\x85\x85R.",
    # str() / repr() of it: an exponentially long text
    "repr-bomb-str": b"\x80\x02cbuiltins\nstr\n" + _shared_tuples(40) + b"\x85R.",
    "repr-bomb-newobj-str": b"\x80\x02cbuiltins\nstr\n" + _shared_tuples(40) + b"\x85\x81.",
    "repr-bomb-persistent-id": b"\x80\x02" + _shared_tuples(40) + b"Q.",
    "repr-bomb-storage-key": b"\x80\x02X\x07\x00\x00\x00storageN" + _shared_tuples(40) + b"\x87Q.",
    # a million nested tuples as a dict key: tuple.__hash__ recursion overflows the C stack
    "deep-tuple-key": b"\x80\x02}K\x01" + b"\x85" * 1_000_000 + b"K\x01s.",
    "deep-tuple-value": b"\x80\x02}K\x01K\x01" + b"\x85" * 1_000_000 + b"s.",
    "deep-marks": b"\x80\x02" + b"(" * 200_000 + b"t" * 200_000 + b".",
    # lengths far beyond the data: no allocation of that size
    "binbytes8-2**62": b"\x80\x04\x8e" + struct.pack("<Q", 2**62) + b"abc.",
    "binunicode8-2**40": b"\x80\x04\x8d" + struct.pack("<Q", 2**40) + b"abc.",
    "bytearray8-8GB": b"\x80\x05\x96" + struct.pack("<Q", 2**33) + b"abc.",
    "frame-2**40": b"\x80\x04\x95" + struct.pack("<Q", 2**40) + b"abc.",
    "bytes-2**31": b"\x80\x02c__builtin__\nbytearray\nJ\xff\xff\xff\x7f\x85R.",
    "long4-huge": b"\x80\x02\x8b" + struct.pack("<i", 2**31 - 1) + b"\x00" * 8 + b".",
    "int-str-100k-digits": b"\x80\x02cbuiltins\nint\nX" + struct.pack("<I", 100_000) + b"9" * 100_000 + b"\x85R.",
    # BUILD that would change the reader's own functions for every later file
    "build-on-function": b"\x80\x02ctorch._utils\n_rebuild_parameter\nN}X\x0c\x00\x00\x00__defaults__K\x07"
                         b"\x85s\x86b.",
    "build-on-class": b"\x80\x02c__builtin__\nobject\nN}X\x07\x00\x00\x00__doc__K\x07s\x86b.",
    "memo-missing": b"\x80\x02h\x05.",
    "stack-underflow": b"\x80\x02R.",
    "unknown-opcode": b"\x80\x02\xee.",
    "ext-code": b"\x80\x02\x82\x01.",
    "proto-99": b"\x80\x63K\x01.",
    "no-stop": b"\x80\x02K\x01",
}


def zip_bomb_declared() -> bytes:
    """A zip whose data.pkl claims 4 GB (headers patched): refused before reading."""
    data = bytearray(zip_pt(pickle.dumps([1, 2, 3], protocol=2)))
    for signature, offset in ((b"PK\x01\x02", 24), (b"PK\x03\x04", 22)):
        at = data.find(signature)
        while at >= 0:
            struct.pack_into("<I", data, at + offset, 0xFFFFFFF0)
            at = data.find(signature, at + 4)
    return bytes(data)


def zip_bomb_real() -> bytes:
    """50 MB of zeros deflated to 50 KB as data.pkl (under the size limit: read, then refused
    as a pickle)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("archive/data.pkl", b"\x80\x02" + b"\x00" * (50 * 1024 * 1024))
    return buffer.getvalue()


def _pickle_corpus() -> list[Entry]:
    entries = []
    for label, payload in PICKLE_BOMBS.items():
        for reader in ("pt_zip", "pt_legacy"):
            entries.append(Entry(f"{reader}-{label}", reader, payload,
                                 "either" if label in ("deep-marks", "deep-tuple-value", "repr-bomb-persistent-id",
                                               "repr-bomb-storage-key")
                                 else "error"))
    return entries


def corpus() -> list[Entry]:
    return (_generated_corpus() + _ragged_corpus() + _yaml_corpus() + _case_corpus() + _metrics_corpus()
            + _pickle_corpus())


CORPUS = corpus()


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("corpus")


def _check_entry(entry: Entry, folder: Path) -> BaseException | None:
    reader = BY_NAME[entry.reader]
    path = place(folder, reader, entry.data(), as_folder=entry.payload is None)
    exc = outcome(reader, path, entry.id)
    if entry.expect == "error":
        assert exc is not None, f"{entry.id}: accepted"
    elif entry.expect == "ok":
        assert exc is None, f"{entry.id}: {exc}"
    if exc is not None and entry.line is not None:
        found = exc.errors[0].line if isinstance(exc, RuleBaseErrors) else getattr(exc, "line", None)
        assert found == entry.line, f"{entry.id}: error at line {found}, expected {entry.line}: {exc}"
    if exc is not None and entry.fragment is not None:
        assert entry.fragment in str(exc), f"{entry.id}: {entry.fragment!r} not in {exc}"
    return exc


@pytest.mark.parametrize("reader", [r.name for r in READERS])
def test_corpus(reader, corpus_dir):
    """Every corpus input of one reader: accepted, or its error naming the file."""
    entries = [e for e in CORPUS if e.reader == reader]
    assert entries
    for entry in entries:
        _check_entry(entry, corpus_dir / reader)


def _message_says_what_was_expected(exc: BaseException) -> bool:
    text = str(exc).lower()
    return any(word in text for word in ("expected", "allowed", "must", "not valid", "is required", "lacks",
                                        "limit", "neither", "too large", "not a ", "no *.yaml or *.yml rule files", "give a "))


@pytest.mark.parametrize("reader", [r.name for r in TEXT_READERS])
def test_unreadable_files_say_what_was_expected(reader, corpus_dir):
    """Empty, blank, binary and non-UTF-8 files, and a folder: the message says what the file
    should have been."""
    for kind in ("empty", "whitespace", "only-nul", "non-utf8", "utf16", "folder"):
        entry = next((e for e in CORPUS if e.id == f"{reader}-{kind}"), None)
        if entry is None:
            continue
        exc = _check_entry(entry, corpus_dir / reader)
        if exc is not None:
            assert _message_says_what_was_expected(exc), f"{entry.id}: {exc}"


def test_missing_files_are_named(tmp_path):
    for reader in READERS:
        path = tmp_path / reader.name / reader.filename
        path.parent.mkdir()
        if reader.name in ("rule_file", "strict_yaml"):
            continue  # a folder without rule files / no file at all: covered by the engine tests
        exc = outcome(reader, path, f"missing {reader.filename}")
        if reader.name == "layer_advisor":
            assert exc is None  # written only when there are findings: absence is no error
        else:
            assert isinstance(exc, InputError) and "no such file" in exc.message, (reader.name, exc)


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_pipes_and_devices_are_refused_not_read(tmp_path, kind):
    """A named pipe would block the read forever, /dev/zero would never end: refused from
    the file type, before reading."""
    for reader in READERS:
        if reader.name == "strict_yaml":
            continue  # takes text, not a file
        path = tmp_path / reader.name / reader.filename
        path.parent.mkdir()
        if kind == "fifo":
            os.mkfifo(path)
        else:
            path.symlink_to("/dev/zero")
        exc = outcome(reader, path, f"{kind} {reader.filename}")
        assert exc is not None, f"{reader.name} read a {kind}"
        if isinstance(exc, InputError):
            assert "not a regular file" in exc.message, exc


# --- hand-written files under tests/fixtures/bad ------------------------------------------------

def _bad_fixture_reader(path: Path) -> Reader:
    prefix = path.name.split("__", 1)[0]
    return {"case": BY_NAME["case_yaml"] if path.suffix != ".json" else BY_NAME["case_json"],
            "rules": BY_NAME["rule_file"], "compare": BY_NAME["compare_csv"] if path.suffix == ".csv"
            else BY_NAME["compare_txt"], "metrics": {".csv": BY_NAME["metrics_csv"], ".json": BY_NAME["metrics_json"]}
            .get(path.suffix, BY_NAME["metrics_yaml"]), "sensitivity": BY_NAME["sensitivity"],
            "badcase": BY_NAME["badcase"], "model_check": BY_NAME["model_check"],
            "fx_graph": BY_NAME["fx_graph"], "advisor": BY_NAME["layer_advisor"],
            "script": BY_NAME["script"]}[prefix]


BAD_FILES = sorted(p for p in BAD.iterdir() if p.is_file() and "__" in p.name)
# The line the error must point at, for formats without comments (YAML and Python files say
# it in their first line).
BAD_FILE_LINES = {
    "compare__ragged_row.csv": 4,
    "compare__text_in_number_column.csv": 3,
    "sensitivity__cut_mid_row.txt": 10,
    "model_check__cut_heading.txt": 41,
    "fx_graph__no_output_node.txt": 25,
    "advisor__no_closing_border.txt": 5,
}


@pytest.mark.parametrize("path", BAD_FILES, ids=[p.name for p in BAD_FILES])
def test_hand_written_bad_files(path, tmp_path):
    """Each file under tests/fixtures/bad is refused with its file named; the first line of
    the file says which line the error must point at (`# line: N`), when it has one."""
    reader = _bad_fixture_reader(path)
    target = place(tmp_path, reader, path.read_bytes())
    exc = expect_error(reader, target, path.name)
    head = path.read_bytes().split(b"\n", 1)[0]
    wanted = re.search(rb"^# line: (\d+)", head)
    line = int(wanted.group(1)) if wanted else BAD_FILE_LINES.get(path.name)
    if line is not None:
        found = exc.errors[0].line if isinstance(exc, RuleBaseErrors) else exc.line
        assert found == line, f"{path.name}: line {found}, expected {line}: {exc}"


# --- pickles ------------------------------------------------------------------------------------

@pytest.mark.parametrize("layout", ["zip", "legacy"])
def test_malicious_pickles_never_execute(tmp_path, layout):
    """REDUCE of os.system / exec / eval / Popen / open-for-writing, in both .pt layouts and
    pickle protocols 0-4: refused (or unreadable), and the side effect never happens."""
    marker = _marker(tmp_path)
    for label, payload in evil_payloads(marker).items():
        path = tmp_path / f"{label}.pt"
        path.write_bytes(zip_pt(payload) if layout == "zip" else payload)
        reader = BY_NAME["pt_zip"]
        with deadline(CALL_SECONDS, label):
            try:
                content = read_pt(path)
            except InputError as exc:
                check_names_file(reader, path, exc, label)
            else:
                assert not content.readable and content.value is None, label
                assert content.refused, label
                assert "refused as unsafe" in content.note and "nothing was executed" in content.note
        assert not marker.exists(), f"{label} ({layout}) ran its payload"


def test_reader_functions_cannot_be_modified_by_a_pickle(tmp_path):
    """BUILD on an allowed function would change how every later file is read."""
    from j6doctor.probes import pt_file

    before = pt_file._rebuild_parameter.__defaults__
    path = tmp_path / "b.pt"
    path.write_bytes(zip_pt(PICKLE_BOMBS["build-on-function"]))
    with pytest.raises(InputError, match="BUILD on a class or function"):
        read_pt(path)
    assert pt_file._rebuild_parameter.__defaults__ == before


@pytest.mark.parametrize("label", ["hash-bomb-dict-key", "hash-bomb-set", "hash-bomb-frozenset",
                                   "hash-bomb-set-call", "repr-bomb-str", "repr-bomb-newobj-str",
                                   "deep-tuple-key"])
def test_pickle_bombs_are_refused_quickly(tmp_path, label):
    """Exponential hashing and repr through shared memo references, and a tuple key nested a
    million deep (which crashed the process): refused in well under a second."""
    path = tmp_path / "bomb.pt"
    path.write_bytes(zip_pt(PICKLE_BOMBS[label]))
    with deadline(5, label), pytest.raises(InputError) as info:
        read_pt(path)
    assert info.value.file == "bomb.pt"
    assert "not a readable pickle" in info.value.message


def test_persistent_id_bomb_is_not_printed(tmp_path):
    path = tmp_path / "p.pt"
    path.write_bytes(zip_pt(PICKLE_BOMBS["repr-bomb-persistent-id"]))
    with deadline(5, "persistent id"):
        content = read_pt(path)
    assert content.value.key == "<tuple>"


def test_zip_bomb_like_pt_is_refused(tmp_path):
    path = tmp_path / "bomb.pt"
    path.write_bytes(zip_bomb_declared())
    with deadline(5, "declared size"), pytest.raises(InputError) as info:
        read_pt(path)
    assert "too large" in info.value.message or "corrupt zip" in info.value.message
    path.write_bytes(zip_bomb_real())
    with deadline(CALL_SECONDS, "deflated zeros"), pytest.raises(InputError) as info:
        read_pt(path)
    assert info.value.file == "bomb.pt"


# --- rule files over the engine limits ------------------------------------------------------------

def _rule_file(rules: list[str]) -> str:
    return "seed: test\nrules:\n" + "".join(f"  - {r}\n" for r in rules)


def _rule(rid: str, conditions: list[str]) -> str:
    return (f"{{id: {rid}, title: t, when: [{', '.join(conditions)}], "
            f"then: [{{finding: {{topic: limits, text: {rid}}}}}]}}")


ENGINE_LIMIT_FILES = {
    # 40 rules x 16 conditions, each testing a distinct value of one field: 640 alpha
    # branches under one node (durable-rules hangs at 512)
    "distinct-values": (_rule_file([_rule(f"r{i}", [f"{{compare_summary: {{rows: {i * 16 + j}}}}}"
                                                      for j in range(16)]) for i in range(40)]),
                        "different tests on the same condition prefix"),
    "ladder-of-thresholds": (_rule_file([_rule(f"r{i}", [f"{{compare_summary: {{rows: {{gt: {i}}}}}}}"])
                                         for i in range(70)]), "range / inequality / join tests"),
    "17-conditions": (_rule_file([_rule("r", [f"{{compare_summary: {{rows: {j}}}}}" for j in range(17)])]),
                      "when"),
}
# durable-rules' fixed tables, not limits of the rule language: CLIPS accepts these files.
DURABLE_TABLES = {"distinct-values", "ladder-of-thresholds"}
# Accepted: the compiler splits a rule base into rulesets of 200 rules, each under the limit.
PARTITIONED_RULE_FILE = _rule_file([_rule(f"r{i}", [f"{{compare_summary: {{rows: {i}}}}}"]) for i in range(600)])


@pytest.mark.parametrize("label", list(ENGINE_LIMIT_FILES))
def test_rule_files_over_the_engine_limits_are_refused_quickly(tmp_path, label):
    text, fragment = ENGINE_LIMIT_FILES[label]
    (tmp_path / "limits.yaml").write_text(text)
    engine = None
    if label in DURABLE_TABLES:
        if not HAS_DURABLE:  # CLIPS has no such tables: the file loads, quickly
            with deadline(CALL_SECONDS, label):
                assert RuleBase.load([tmp_path], VOCAB).engine == "clips"
            return
        engine = "durable"
    with deadline(CALL_SECONDS, label), pytest.raises(RuleBaseErrors) as info:
        RuleBase.load([tmp_path], VOCAB, engine=engine)
    assert any(fragment in e.render() for e in info.value.errors), str(info.value)
    for error in info.value.errors:
        assert error.file and "limits.yaml" in error.file and error.line, error.render()


# =========================================================================================
# 2. Property tests
# =========================================================================================

TOKENS = [
    b"nan", b"inf", b"-inf", b"NaN", b"1e999", b"-0", b"0", b"99999999999999999999999", b"\x00", b"\xff",
    b"\xc3", "中".encode(), "中".encode()[:2], b"\t", b"\r", b"\r\n", b"\n", b"\n\n", b" ", b"  ", b",", b", ",
    b"|", b"+", b"-", b"---", b"+---+", b"'", b'"', b"\\", b"{", b"}", b"[", b"]", b":", b": ", b"- ", b"#",
    b"&a ", b"*a", b"!!python/object:os.system ", b"? ", b"None", b"null", b"True", b"()", b"Graph:",
    b"op_name", b"mod_name", b"Name/Index", b"Cosine", b"\xef\xbb\xbf", b"\x0c", "\u2028".encode(),
]
PICKLE_TOKENS = [
    b"R", b"b", b"s", b"u", b"a", b"e", b"t", b"(", b")", b"]", b"}", b"0", b"1", b"2", b".", b"\x85",
    b"\x86", b"\x87", b"\x81", b"\x92", b"\x93", b"\x94", b"h\x00", b"q\x00", b"j\x00\x00\x00\x00",
    b"cos\nsystem\n", b"cbuiltins\nstr\n", b"c__builtin__\nset\n", b"ctorch._utils\n_rebuild_tensor_v2\n",
    b"K\x01", b"J\xff\xff\xff\x7f", b"\x8a\x08" + b"\xff" * 8, b"X\xff\xff\xff\x7f", b"\x8e" + b"\xff" * 8,
    b"\x95" + b"\xff" * 8, b"Q", b"P1\n", b"\x80\x05", b"\x00",
]


@st.composite
def mutated(draw, reader: Reader) -> tuple[bytes, str]:
    sample_path = draw(st.sampled_from(reader.samples))
    data = bytearray(reader.payload(sample_path))
    tokens = PICKLE_TOKENS if reader.wrap or reader.name.startswith("pt_") else TOKENS
    steps = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["truncate", "flip", "insert", "delete", "token", "line", "numbers"]))
        n = len(data)
        at = draw(st.integers(0, max(n, 1))) if n else 0
        if kind == "truncate":
            data = data[:at]
        elif kind == "flip" and n:
            data[min(at, n - 1)] = draw(st.integers(0, 255))
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del data[at:at + draw(st.integers(1, 64))]
        elif kind == "token":
            data[at:at] = draw(st.sampled_from(tokens))
        elif kind == "line":
            lines = bytes(data).split(b"\n")
            k = draw(st.integers(0, len(lines) - 1))
            op = draw(st.sampled_from(["drop", "dup", "swap", "blank", "half", "spaces"]))
            if op == "drop":
                del lines[k]
            elif op == "dup":
                lines.insert(k, lines[k])
            elif op == "swap" and k + 1 < len(lines):
                lines[k], lines[k + 1] = lines[k + 1], lines[k]
            elif op == "blank":
                lines[k] = b""
            elif op == "half":
                lines[k] = lines[k][: len(lines[k]) // 2]
            elif op == "spaces":
                lines[k] = lines[k].replace(b" ", b"   ")
            data = bytearray(b"\n".join(lines))
            kind = f"line-{op}@{k}"
        elif kind == "numbers":
            word = draw(st.sampled_from([b"nan", b"inf", b"-inf", b"1e999", b"-1", b"0"]))
            data = bytearray(_NUMBER.sub(word, bytes(data), count=draw(st.integers(0, 50))))
            kind = f"numbers->{word.decode()}"
        steps.append(f"{kind}@{at}")
    return bytes(data), f"{sample_path.name} " + ", ".join(steps)


@pytest.fixture(scope="module")
def fuzz_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


# J6DOCTOR_FUZZ_EXAMPLES=5000 for a longer, random (not derandomized) hunt.
_FUZZ_EXAMPLES = os.environ.get("J6DOCTOR_FUZZ_EXAMPLES")
if not os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
    # Hypothesis caches under ./.hypothesis even without an example database: keep the
    # work tree clean.
    set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "j6doctor-hypothesis")
PROPERTY_SETTINGS = settings(
    max_examples=int(_FUZZ_EXAMPLES or 80),
    deadline=None,
    database=None,                     # no .hypothesis folder in the repository
    derandomize=not _FUZZ_EXAMPLES,    # the suite: the same examples on every run
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


@pytest.mark.parametrize("reader", READERS, ids=[r.name for r in READERS])
@PROPERTY_SETTINGS
@given(data=st.data())
def test_mutated_samples_parse_or_name_the_file(reader, data, fuzz_dir):
    payload, description = data.draw(mutated(reader), label="mutation")
    path = place(fuzz_dir / reader.name, reader, payload)
    outcome(reader, path, f"{reader.name}: {description}")


# =========================================================================================
# 3. CLI
# =========================================================================================

def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("J6DOCTOR_DEBUG", None)
    try:
        return subprocess.run([sys.executable, "-m", "j6doctor", *args], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=CLI_SECONDS)
    except subprocess.TimeoutExpired:
        pytest.fail(f"j6doctor {' '.join(args)} did not finish within {CLI_SECONDS} s (hang)")


CLI_CASES = {
    "billion-laughs.yaml": next(e for e in CORPUS if e.id == "case_yaml-billion-laughs").payload,
    "duplicate-keys.yaml": b"symptom: a\nsymptom: b\n",
    "nan-value.yaml": b"results:\n  quantized_bc: {status: abnormal, value: .nan}\n",
    "inf-tolerance.yaml": b"metrics: {file: metrics.csv, tolerance: .inf}\n",
    "date-symptom.yaml": b"symptom: 2024-01-01\n",
    "mixed-keys.yaml": b"1: a\nb: c\n",
    "long-artifact-name.yaml": b"artifacts: [" + b"x" * 300 + b"]\n",
    "deep.json": b'{"symptom": ' + b"[" * 5000 + b"]" * 5000 + b"}",
    "binary.yaml": random.Random(1).randbytes(2048).replace(b"\x00", b"\x01"),
    "non-utf8.yaml": b"symptom: \xff\xfe\n",
    "truncated.json": CASES.joinpath("convert_j6m.json").read_bytes()[:200],
    "python-tag.yaml": b"symptom: !!python/object/apply:os.system ['echo pwned']\n",
}


@pytest.mark.parametrize("name", list(CLI_CASES))
def test_cli_bad_case_file_exits_2_naming_it(tmp_path, name):
    (tmp_path / name).write_bytes(CLI_CASES[name])
    result = run_cli("diagnose", name, "--no-env", cwd=tmp_path)
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert name in result.stderr, result.stderr[-2000:]
    assert "pwned" not in result.stdout


@pytest.mark.parametrize("kind", ["folder", "fifo", "dev-zero"])
def test_cli_case_file_that_is_not_a_file(tmp_path, kind):
    path = tmp_path / "case.yaml"
    {"folder": path.mkdir, "fifo": lambda: os.mkfifo(path), "dev-zero": lambda: path.symlink_to("/dev/zero")}[kind]()
    result = run_cli("diagnose", "case.yaml", "--no-env", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and "case.yaml" in result.stderr


def _broken_workdir(folder: Path) -> dict[str, str]:
    """A work folder whose every artifact is broken in its own way; returns file -> what."""
    files = {
        "compare_per_layer_out.csv": (HQA / "compare_per_layer_out.csv").read_bytes()[:3000].rsplit(b",", 3)[0]
        + b"\nrow,with,too,few\n",
        "output_bbox_pred_L1_sensitive_ops.txt": b"\x00\x01binary",
        "badcase.txt": (HQA / "badcase.txt").read_bytes()[:300],
        "model_check_result.txt": b"\xff\xfe" + (FORMATS / "prepare" / "model_check_result.txt").read_bytes()[:500],
        "fx_graph.txt": b"Graph:\n" + b"x" * HUGE_LINE + b"\n",
        "abnormal_layer_advisor.txt": b"",
        "badcase.pt": zip_pt(PICKLE_BOMBS["hash-bomb-dict-key"]),
        "all_badcase_info.pt": PICKLE_BOMBS["deep-tuple-key"],
        "output_cls_score_Cosine_sensitive_ops.pt": zip_bomb_declared(),
        "train.py": b"def f(:\n    pass\n",
        "metrics.csv": b"artifact,metric,value\nqat_pt,m,1,2,3\n",
    }
    for name, data in files.items():
        (folder / name).write_bytes(data)
    evil = folder / "evil"
    evil.mkdir()
    marker = folder / "PWNED"
    (evil / "qat.pt").write_bytes(zip_pt(evil_payloads(marker)["os.system-p2"]))
    (evil / "qat_export.pt").write_bytes(evil_payloads(marker)["builtins.exec-p4"])
    return {name: name for name in files}


def test_cli_workdir_of_broken_artifacts_warns_and_goes_on(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    broken = _broken_workdir(work)
    result = run_cli("diagnose", "--workdir", "work", "--no-env", "--format", "json", cwd=tmp_path)
    assert result.returncode == 0, (result.returncode, result.stderr[-2000:])
    assert "Traceback" not in result.stderr
    verdict = json.loads(result.stdout)
    warnings = "\n".join(verdict["warnings"])
    for name in broken:
        assert name in warnings, f"{name} not named in the warnings:\n{warnings}"
    assert not (work / "PWNED").exists()


def test_cli_case_with_broken_artifacts_and_markdown(tmp_path):
    """A valid case pointing at broken artifacts: exit 0, the Markdown report names them."""
    work = tmp_path / "work"
    work.mkdir()
    broken = _broken_workdir(work)
    (tmp_path / "case.yaml").write_text("symptom: x\nartifacts: [work/]\n")  # metrics.csv found in work/
    result = run_cli("diagnose", "case.yaml", "--no-env", cwd=tmp_path)
    assert result.returncode == 0, (result.returncode, result.stderr[-2000:])
    assert "Traceback" not in result.stderr
    for name in broken:
        assert name in result.stdout, name
    # named by the case, the same broken metrics file is an input error of the run
    (tmp_path / "case.yaml").write_text("symptom: x\nartifacts: [work/]\nmetrics: work/metrics.csv\n")
    named = run_cli("diagnose", "case.yaml", "--no-env", cwd=tmp_path)
    assert named.returncode == 2 and "work/metrics.csv:2: " in named.stderr
    assert "由 case.yaml:3 metrics.file 指定" in named.stderr and "Traceback" not in named.stderr


@pytest.mark.parametrize("label", ["distinct-values", "billion-laughs", "duplicate-keys"])
def test_cli_broken_rule_pack_exits_2_naming_the_file(tmp_path, label):
    pack = tmp_path / "pack"
    pack.mkdir()
    text = {"distinct-values": ENGINE_LIMIT_FILES["distinct-values"][0].encode(),
            "billion-laughs": (BAD / "rules__billion_laughs.yaml").read_bytes(),
            "duplicate-keys": (BAD / "rules__duplicate_keys.yaml").read_bytes()}[label]
    (pack / "extra.yaml").write_bytes(text)
    (tmp_path / "case.yaml").write_text("symptom: x\n")
    if label == "distinct-values" and not HAS_DURABLE:  # durable-rules' tables: CLIPS runs the pack
        result = run_cli("diagnose", "case.yaml", "--rules", "pack", "--no-env", cwd=tmp_path)
        assert result.returncode == 0, result.stderr[-2000:]
        return
    engine = ("--engine", "durable") if label == "distinct-values" else ()
    result = run_cli("diagnose", "case.yaml", "--rules", "pack", "--no-env", *engine, cwd=tmp_path)
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    assert "Traceback" not in result.stderr
    assert re.search(r"pack/extra\.yaml:\d+", result.stderr), result.stderr[-2000:]


def test_cli_large_partitioned_rule_pack_runs(tmp_path):
    """600 rules on distinct values of one field: split into rulesets under the engine
    limits, so the diagnosis runs (and fires one of them) instead of hanging."""
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "many.yaml").write_text(PARTITIONED_RULE_FILE)
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(HQA / "compare_per_layer_out.csv", work)
    result = run_cli("diagnose", "--workdir", "work", "--rules", "pack", "--no-env", "--format", "json",
                     cwd=tmp_path)
    assert result.returncode == 0, (result.returncode, result.stderr[-2000:])
    assert "Traceback" not in result.stderr
    rows = len((HQA / "compare_per_layer_out.csv").read_text().strip().splitlines()) - 1
    fired = [t["rule"] for t in json.loads(result.stdout)["trace"] if t.get("rule_file") == "pack/many.yaml"]
    assert fired == [f"r{rows}"]


def test_cli_workdir_that_cannot_be_a_folder(tmp_path):
    """A --workdir name longer than the file system allows: exit 2 naming it, not a crash."""
    name = "w" * 300
    result = run_cli("diagnose", "--workdir", name, "--no-env", cwd=tmp_path)
    assert result.returncode == 2, (result.returncode, result.stderr[-500:])
    assert "Traceback" not in result.stderr and name in result.stderr
