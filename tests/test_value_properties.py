"""Property tests over the values the tool meets (issue 11, item 4): every finite float and
every string reaches the engine and the reports safely, through the real code — case file
reader, probes, rule loader, compiler, durable-rules in its worker process, reports.

1. Numbers, differential: a rule `result: {value: {OP: T}}` fires iff Python's `v OP T`
   holds, for any finite v and T (subnormals, -0.0, 1e-320, 5e-324, 1e+308, values Python
   prints in exponent form), each written in every form a person writes it (`1e-05`, which
   YAML 1.1 reads as text, `0.00001`, `1E-05`, `1e-5`, an integer), in YAML and JSON case
   files; the fact's value reads back exactly. Two results of one metric and any tolerance:
   the drop arrives exactly, or (overflow) is left out with a note naming the case key.
2. Text: any text (CJK, emoji, control characters, U+2028, text of a few MiB, lone
   surrogates in JSON `\\ud800` escapes) in symptom / deployment notes / tried / versions /
   result notes gives a normal diagnosis, Markdown / JSON / HTML reports that encode as
   UTF-8, JSON that parses, and the text (lone surrogates replaced, with a note) in the JSON
   facts; a text rule capturing that text into a derived fact never raises.
3. Table cells: compare_per_layer_out.csv tables with Cosine / Atol cells in any printed
   form, plus nan / inf / -inf / 1e400, read without exception; finite cells arrive exactly
   (chart points and facts); each non-finite cell becomes a warning naming file and row.
4. Determinism: the same input gives the same report bytes, in this process and in two
   processes with different hash seeds.

Bugs these tests found are pinned with @example and a comment "Found here": fixed ones
(integers beyond int64 in engine_json.py, overflowing metric drops in evidence.py) and open
ones, whose tests fail until the code outside this file is fixed (a lone surrogate in a
mapping key, the HTML charts on huge values, nan / inf cells without a warning naming the row).

J6DOCTOR_FUZZ_EXAMPLES=2000 runs a longer, random (not derandomized) hunt.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import tempfile
from decimal import Decimal
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, Phase, example, given, note, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir
from j6doctor.diagnosis import diagnose, diagnose_file, load_rulebase
from j6doctor.engine import RuleBase
from j6doctor.evidence import EvidenceOptions
from j6doctor.facts import vocabulary
from j6doctor.probes.case_file import read_case
from j6doctor.report import render_html, render_json, render_markdown
from j6doctor.charts import series_of

REPO = Path(__file__).resolve().parents[1]
COMPARE_CSV = REPO / "tests" / "fixtures" / "formats" / "horizon_quant_analysis" / "compare_per_layer_out.csv"
VOCAB = vocabulary()
NO_ENV = EvidenceOptions(use_environment=False)

_EXAMPLES = os.environ.get("J6DOCTOR_FUZZ_EXAMPLES")
if not os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
    # Hypothesis caches under ./.hypothesis even without an example database: keep the
    # work tree clean.
    set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "j6doctor-hypothesis")


def _settings(examples: int, scale: bool = True) -> settings:
    return settings(
        max_examples=int(_EXAMPLES) if _EXAMPLES and scale else examples,
        deadline=None,
        database=None,                  # no .hypothesis folder in the repository
        derandomize=not _EXAMPLES,      # the suite: the same examples on every run
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                               HealthCheck.filter_too_much, HealthCheck.function_scoped_fixture],
    )


class Quiet:
    """A value with a short repr: hypothesis prints the arguments of a failing example."""

    def __init__(self, value):
        self.value = value

    def __repr__(self) -> str:
        return f"<{type(self.value).__name__}>"


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("values")


@pytest.fixture(scope="module")
def quiet_rulebase(rulebase):
    return Quiet(rulebase)


def _bundled() -> RuleBase:
    return load_rulebase()  # cached by diagnose.py


# =========================================================================================
# Numbers
# =========================================================================================

FINITE = st.floats(allow_nan=False, allow_infinity=False)  # subnormals and -0.0 included
TRICKY = [
    0.0, -0.0, 5e-324, -5e-324, 1e-320, 2.2250738585072014e-308, 2.225073858507201e-308, 1e-300,
    1e-16, 1e-05, 5e-05, -5e-05, 0.0001, 0.1, 0.3, 1 / 3, 0.99, 1.0, 0.9999999999999999,
    1.0000000000000002, 41.2, -36.0, 123456789.123, 1e15, 1e16, 1e16 + 2, 2.0 ** 53, 2.0 ** 53 + 2,
    2.0 ** 63, -2.0 ** 63, 2.0 ** 64, 1e22, 1e23, 1e300, 1e+308, 1.7976931348623157e308,
    -1.7976931348623157e308,
]


def _around(x: float) -> list[float]:
    """x and its finite neighbours."""
    return [y for y in (math.nextafter(x, -math.inf), x, math.nextafter(x, math.inf)) if math.isfinite(y)]


def _near(values: list[float]) -> st.SearchStrategy[float]:
    return st.sampled_from(sorted({y for x in values for y in _around(x)}))


NUMBERS = st.one_of(FINITE, st.sampled_from(TRICKY), _near(TRICKY))


def number_forms(x: float) -> dict[str, str]:
    """Texts a person writes for x, each of which means exactly x: Python's repr (`1e-05`,
    read by YAML 1.1 as text), positional (`0.00001`), upper-case exponent (`1E-05`), an
    exponent without a point (`1e-5`), and the integer for integral values."""
    sign, digits, exponent = Decimal(repr(x)).as_tuple()
    positional = format(Decimal(repr(x)), "f")
    forms = {
        "repr": repr(x),
        "positional": positional if "." in positional else positional + ".0",
        "upper": repr(x).upper(),
        "exponent": f"{'-' if sign else ''}{''.join(map(str, digits))}e{exponent}",
    }
    if x.is_integer():
        forms["integer"] = str(int(x))
    return forms


def _same(read, x: float, form: str) -> bool:
    """The value read back is exactly x (the sign of zero included, except in integer form)."""
    if form == "integer":
        return isinstance(read, int) and read == x
    return isinstance(read, float) and read == x and math.copysign(1.0, read) == math.copysign(1.0, x)


OPS = {"lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b,
       "ge": lambda a, b: a >= b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
       "is": lambda a, b: a == b}  # `is`: the plain form `value: T`


def _threshold_rule(rule_id: str, op: str, threshold: str) -> str:
    test = threshold if op == "is" else f"{{{op}: {threshold}}}"
    return (f"  - id: {rule_id}\n"
            f"    title: value {op} {threshold}\n"
            f"    when:\n"
            f"      - result: {{value: {test}}}\n"
            f"    then:\n"
            f"      - warning: {{text: \"{rule_id} fired\"}}\n")


def _write_pack(folder: Path, rules: list[str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "values.yaml").write_text("title: value thresholds\nseed: 0. values\nrules:\n" + "".join(rules),
                                        encoding="utf-8")
    return folder


def _case_yaml(value_text: str) -> str:
    return f"symptom: x\nresults:\n  quantized_bc: {{status: abnormal, value: {value_text}}}\n"


def _result_value(diagnosis):
    values = [f["value"] for f in diagnosis.facts if f.type == "result"]
    assert len(values) == 1, values
    return values[0]


def _check_number_case(path: Path, rulebase: RuleBase, v: float, form: str, thresholds: dict[str, float]) -> None:
    """Diagnose the case at `path`; the value reads back exactly (facts and JSON) and each
    rule `<prefix>.<op>` of `thresholds` fired iff Python's comparison holds."""
    diagnosis = diagnose(read_case(path), rulebase, NO_ENV)
    read = _result_value(diagnosis)
    assert _same(read, v, form), f"{path.name}: value {read!r} read back for {v!r} ({form})"
    verdict = json.loads(render_json(diagnosis))
    (in_json,) = [t["fields"]["value"] for t in verdict["trace"] if t["type"] == "result"]
    assert in_json == v and (form == "integer" or repr(in_json) == repr(v)), (in_json, v)
    fired = diagnosis.run.fired_rules()
    wrong = []
    for rule_id, threshold in thresholds.items():
        op = rule_id.rsplit(".", 1)[1]
        expected = OPS[op](v, threshold)
        if (rule_id in fired) != expected:
            wrong.append(f"{rule_id}: {v!r} {op} {threshold!r} is {expected}, rule "
                         f"{'fired' if rule_id in fired else 'did not fire'}")
    assert not wrong, f"{path.name} (value written {form}):\n" + "\n".join(wrong)


@_settings(120)
@given(v=NUMBERS, data=st.data())
@example(v=1e-05, data=None)
@example(v=-0.0, data=None)
@example(v=5e-324, data=None)
@example(v=1e-320, data=None)
@example(v=1e+308, data=None)
@example(v=1e+16, data=None)
# Found here: an integer beyond int64 (`value: 9223372036854775808`, a threshold
# `100000000000000000000`) was clamped by durable-rules' integer parser, so `lt: 1e+308` fired
# on 1e308 written as an integer. Fixed in engine/engine_json.py.
@example(v=2.0 ** 63, data=None)
def test_threshold_rule_fires_iff_python_comparison_holds(v, data, work):
    """A pack of rules `result: {value: {OP: T}}` (T in one written form) against a case
    value v in every written form, YAML and JSON: fires iff `v OP T`."""
    if data is None:  # an explicit example: T = v, its neighbours and a few fixed thresholds
        thresholds = [*_around(v), -v, 0.0, 1e-05, 1e+16]
        t_forms = ["repr", "exponent", "positional", "upper", "integer"]
    else:
        t = data.draw(st.one_of(NUMBERS, st.sampled_from([*_around(v), -v])), label="T")
        thresholds = [t]
        t_forms = [data.draw(st.sampled_from(sorted(number_forms(t))), label="T form")]
    for t_form in t_forms:
        rules, expected = [], {}
        for k, t in enumerate(thresholds):
            form = t_form if t_form in number_forms(t) else "repr"
            for op in OPS:
                rules.append(_threshold_rule(f"vp{k}.{op}", op, number_forms(t)[form]))
                expected[f"vp{k}.{op}"] = t
        pack = _write_pack(work / "pack", rules)
        note(f"rule file:\n{(pack / 'values.yaml').read_text()}")
        rulebase = RuleBase.load([pack], VOCAB, {pack: "pack"})
        for form, text in number_forms(v).items():
            case = work / "case.yaml"
            case.write_text(_case_yaml(text), encoding="utf-8")
            _check_number_case(case, rulebase, v, form, expected)
        case = work / "case.json"
        case.write_text(json.dumps({"symptom": "x", "results": {"quantized_bc": {"status": "abnormal", "value": v}}}),
                        encoding="utf-8")
        _check_number_case(case, rulebase, v, "repr", expected)


# With the bundled rules: a fixed pack of tricky thresholds (each written in another form),
# loaded once the way `--rules DIR` loads it (11 thresholds: more range tests on `result`
# than that are over the engine limit the compiler checks).
BUNDLED_THRESHOLDS = [0.0, -0.0, 5e-324, 1e-320, 1e-05, 1 / 3, -36.0, 1e+16, 2.0 ** 53 + 2, 2.0 ** 63,
                      1.7976931348623157e308]
_FORM_CYCLE = ["repr", "exponent", "positional", "upper"]


@pytest.fixture(scope="module")
def threshold_pack(work):
    rules, expected = [], {}
    for k, t in enumerate(BUNDLED_THRESHOLDS):
        text = number_forms(t)[_FORM_CYCLE[k % len(_FORM_CYCLE)]]
        for op in OPS:
            rules.append(_threshold_rule(f"vb{k}.{op}", op, text))
            expected[f"vb{k}.{op}"] = t
    pack = _write_pack(work / "bundled_pack", rules)
    return Quiet((load_rulebase([pack]), expected))


@_settings(60)
@given(v=st.one_of(NUMBERS, _near(BUNDLED_THRESHOLDS)),
       form=st.sampled_from(["repr", "exponent", "positional", "upper", "integer", "json"]))
@example(v=1e-05, form="repr")
@example(v=1e+16, form="repr")
@example(v=-0.0, form="repr")
@example(v=5e-324, form="exponent")
def test_pack_thresholds_with_bundled_rules(v, form, threshold_pack, work):
    rulebase, expected = threshold_pack.value
    forms = number_forms(v)
    case = work / ("bundled.json" if form == "json" else "bundled.yaml")
    if form == "json":
        case.write_text(json.dumps({"symptom": "x", "results": {"quantized_bc": {"status": "abnormal", "value": v}}}),
                        encoding="utf-8")
        form = "repr"
    else:
        form = form if form in forms else "repr"
        case.write_text(_case_yaml(forms[form]), encoding="utf-8")
    _check_number_case(case, rulebase, v, form, expected)


POSITIVE = st.one_of(st.floats(min_value=5e-324, allow_infinity=False), st.sampled_from([5e-324, 1e-05, 0.01, 1e+300]))


@_settings(80)
@given(baseline=NUMBERS, value=NUMBERS, tolerance=POSITIVE, relative=st.booleans(), higher=st.booleans(),
       forms=st.tuples(*[st.sampled_from(["repr", "exponent", "positional", "upper"])] * 3))
# Found here: a drop or allowed drop that overflows (1.7e308 - -1.7e308, or tolerance 1e300 x
# baseline 1e300) left the required metric_drop.drop / .threshold empty: "j6doctor: error:
# metric_drop.drop: a value is required", exit 1. Fixed in app/evidence.py (FactList._finite
# leaves such a fact out, with a note naming the case key).
@example(baseline=1.7e+308, value=-1.7e+308, tolerance=0.01, relative=True, higher=True,
         forms=("repr", "repr", "repr"))
@example(baseline=1e+300, value=1.0, tolerance=1e+300, relative=True, higher=True, forms=("repr", "repr", "repr"))
def test_metric_drop_of_any_values(baseline, value, tolerance, relative, higher, forms, work):
    """Two results of one metric (qat.bc normal, quantized.bc abnormal) and any tolerance:
    the drop and the allowed drop arrive exactly when finite; when they overflow, the drop
    is left out with a note naming the case key; the reports render."""
    case = work / "drop.yaml"
    case.write_text(
        f"metrics: {{tolerance: {number_forms(tolerance)[forms[2]]}, relative: {str(relative).lower()}, "
        f"higher_is_better: {str(higher).lower()}}}\n"
        "results:\n"
        f"  qat_bc: {{status: normal, evidence: dataset_eval, metric: mAP, value: {number_forms(baseline)[forms[0]]}}}\n"
        f"  quantized_bc: {{status: abnormal, evidence: dataset_eval, metric: mAP, "
        f"value: {number_forms(value)[forms[1]]}}}\n", encoding="utf-8")
    note(case.read_text())
    diagnosis = diagnose(read_case(case), _bundled(), NO_ENV)
    for render in (render_markdown, render_json, render_html):
        render(diagnosis).encode("utf-8")
    for fact in diagnosis.facts:
        for name, spec in VOCAB.types[fact.type].fields.items():
            if spec.type == "number" and isinstance(fact.fields.get(name), float):
                assert math.isfinite(fact.fields[name]), (fact.type, name, fact.fields[name])
    drop = (baseline - value) if higher else (value - baseline)
    threshold = tolerance * abs(baseline) if relative else tolerance
    drops = [f for f in diagnosis.facts if f.type == "metric_drop"]
    if math.isfinite(drop) and math.isfinite(threshold):
        (fact,) = drops
        assert (fact["drop"], fact["threshold"], fact["within"]) == (drop, threshold, drop <= threshold)
        assert (fact["baseline"], fact["value"]) == (baseline, value)
    else:
        assert not drops
        notes = [f["text"] for f in diagnosis.facts if f.type == "intake_note"]
        assert any("drop.yaml" in n and "results.quantized_bc" in n and "不计入" in n for n in notes), notes


# =========================================================================================
# Text
# =========================================================================================

SPECIAL = ["\u2028", "\u2029", "\x85", "\x00", "\x1b", "\x7f", "\ufeff", "\u200b", "\r", "\n", "\r\n", "\t",
           "\x0b", "\x0c", "😀", "👩‍👩‍👧", "中文描述", "。", "；", ";", "!", "，", "但", "${a.b}", "${match.tail}",
           "{{ x }}", "{% if %}", "<script>alert(1)</script>", "&amp;", "|", "`", "*", "#", "---", "- ",
           ": ", '"', "'", "\\", "\\ud800", "%s", "\u0301", "\U0010ffff", "\ufffd", "\ufffe", "nash-e", "vpmark"]
_PIECE = st.one_of(
    st.text(max_size=12),
    st.sampled_from(SPECIAL),
    st.text(st.characters(categories=["Lo", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Mn"]), max_size=8),
)
TEXT = st.lists(_PIECE, max_size=8).map("".join)
_LONE = st.characters(categories=["Cs"])
# At least one surrogate; adjacent high + low ones are a pair that JSON decodes as one character.
SURROGATE_TEXT = st.tuples(TEXT, _LONE, st.lists(st.one_of(_PIECE, _LONE), max_size=6).map("".join)).map("".join)
_SURROGATE = re.compile("[\ud800-\udfff]")

TEXT_PACK = """\
title: value properties — a text rule over any text
seed: 0. 先排除明显用户侧问题
read: [symptom.text, deployment_notes.text, tried_fix.text, result_note.text]
rules:
  - id: vp.text_capture
    title: the text after a marker (or a march name), captured into a derived fact
    match:
      - '{vp_tail as tail}'
      - '{march_name as tail}'
    then:
      - text_fact: {topic: model_march, kind: hint, value: "${match.tail|lower}"}
"""
# the words after the marker, as a term class of the pack's own vocabulary
TEXT_PACK_VOCABULARY = """\
text_terms:
  vp_tail:
    meaning: the marker vpmark and the word it starts (a term stays within its sentence)
    patterns:
      - {regex: 'vpmark[^。;!?\\s]{0,3000}', extend: false}
"""


@pytest.fixture(scope="module")
def text_rulebase(work):
    pack = work / "text_pack"
    pack.mkdir(exist_ok=True)
    (pack / "text.yaml").write_text(TEXT_PACK, encoding="utf-8")
    (pack / "vocabulary.yaml").write_text(TEXT_PACK_VOCABULARY, encoding="utf-8")
    return Quiet(load_rulebase([pack]))


def _write_case(folder: Path, data: dict, channel: str) -> Path:
    """The case as a JSON file (`json`: \\u escapes, `json-utf8`: raw UTF-8) or a YAML file
    (`yaml`: escapes, `yaml-utf8`: raw characters where YAML allows them)."""
    if channel.startswith("json"):
        path = folder / "text_case.json"
        text = json.dumps(data, ensure_ascii=channel == "json" or _has_surrogate(data))
    else:
        path = folder / "text_case.yaml"
        text = yaml.safe_dump(data, allow_unicode=channel == "yaml-utf8", width=1 << 30)
    path.write_text(text, encoding="utf-8")
    return path


def _has_surrogate(value) -> bool:
    if isinstance(value, str):
        return bool(_SURROGATE.search(value))
    if isinstance(value, dict):
        return any(_has_surrogate(k) or _has_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_surrogate(v) for v in value)
    return False


def _as_written(path: Path) -> dict:
    """What the case file says, read by the standard parsers (json; PyYAML's own loader):
    what the tool must find in it. (Our data, read back: an escaped surrogate pair is one
    character again, and PyYAML's dumper writes a lone U+0085 that its loader reads as a
    space.)"""
    text = path.read_text(encoding="utf-8")
    return json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)


def _clean(text: str) -> str:
    """A lone surrogate is replaced by U+FFFD."""
    return _SURROGATE.sub("\ufffd", text)


def _text_case(symptom: str, notes: str, tried: list[str], version_key: str, version: str,
               result_note: str) -> dict:
    return {
        "symptom": symptom,
        "platform": "J6M",
        "versions": {"OE": version, version_key: version},
        "results": {"quantized_bc": {"status": "normal", "evidence": "dataset_eval"},
                    "board": {"status": "abnormal", "evidence": "multi_frame_visual", "note": result_note}},
        "deployment": {"notes": notes},
        "tried": tried,
    }


def _check_text_diagnosis(path: Path, rulebase: RuleBase) -> dict:
    """Diagnose, render the three reports (each must encode as UTF-8), and check that every
    text of the file arrived in the JSON facts (lone surrogates replaced by U+FFFD, with a
    note)."""
    data = _as_written(path)
    diagnosis = diagnose_file(path, rulebase)
    reports = {"md": render_markdown(diagnosis), "json": render_json(diagnosis), "html": render_html(diagnosis)}
    for report in reports.values():
        report.encode("utf-8")  # what the CLI writes: no lone surrogate may reach it
    verdict = json.loads(reports["json"])
    facts: dict[str, list[dict]] = {}
    for entry in verdict["trace"]:
        facts.setdefault(entry["type"], []).append(entry["fields"])

    def texts(type_name: str, field: str = "text") -> list[str]:
        return [f[field] for f in facts.get(type_name, [])]

    expect = [("symptom", data["symptom"]), ("deployment_notes", data["deployment"]["notes"]),
              ("result_note", data["results"]["board"]["note"])]
    expect += [("tried_fix", t) for t in data["tried"]]
    for type_name, raw in expect:
        wanted = _clean(raw).strip()
        if wanted:
            assert wanted in texts(type_name), f"{type_name}: {wanted[:200]!r} not in the JSON facts"
        else:
            assert wanted not in texts(type_name)
    versions = {(f["given"], f["version"]) for f in facts.get("version", [])}
    for key, value in data["versions"].items():
        assert (_clean(str(key)), _clean(value).strip()) in versions, (key, value, versions)
    if _has_surrogate(data):
        notes = texts("intake_note")
        assert any("\ufffd" in n and "代理项" in n for n in notes), notes
    # the text rule fired wherever its marker starts a word (and wrote the word into a fact)
    if any(re.search("(?<![a-z0-9_])vpmark", _clean(raw), re.IGNORECASE) for _, raw in expect):
        assert any(t.get("rule") == "vp.text_capture" for t in verdict["trace"])
    return verdict


@_settings(100)
@given(symptom=TEXT, notes=TEXT, tried=st.lists(TEXT, max_size=3), version_key=TEXT, version=TEXT,
       result_note=TEXT, channel=st.sampled_from(["json", "json-utf8", "yaml", "yaml-utf8"]))
@example(symptom="板端\u2028vpmark 喂 NHWC\x00", notes="\ufeff😀", tried=["\x85"], version_key="",
         version="3.1\u2029", result_note="nash-e", channel="yaml-utf8")
# PyYAML's dumper writes a lone U+0085 (NEL) that YAML reads as a space: the tool must read
# what the file says, as PyYAML's own loader does.
@example(symptom="", notes="", tried=[], version_key="\x85", version="", result_note="", channel="yaml-utf8")
def test_any_text_reaches_the_reports(symptom, notes, tried, version_key, version, result_note, channel,
                                      text_rulebase, work):
    data = _text_case(symptom, notes, tried, version_key, version, result_note)
    path = _write_case(work, data, channel)
    note(path.read_text(encoding="utf-8")[:2000])
    _check_text_diagnosis(path, text_rulebase.value)


@_settings(60)
@given(symptom=SURROGATE_TEXT, notes=SURROGATE_TEXT, tried=st.lists(SURROGATE_TEXT, max_size=2),
       version_key=TEXT, version=SURROGATE_TEXT, result_note=TEXT)
@example(symptom="\ud800", notes="vpmark\udfff", tried=["\udc00x"], version_key="\ud83d", version="1",
         result_note="")
def test_lone_surrogates_in_json_are_replaced_with_a_note(symptom, notes, tried, version_key, version,
                                                          result_note, text_rulebase, work):
    data = _text_case(symptom, notes, tried, version_key, version, result_note)
    path = _write_case(work, data, "json")
    assert "\\ud" in path.read_text(encoding="ascii").lower()
    _check_text_diagnosis(path, text_rulebase.value)


@_settings(40)
@given(key=SURROGATE_TEXT, value=SURROGATE_TEXT, place=st.sampled_from(["versions", "input_parameters"]))
# Found here (fixed): probes/case_file.py _valid_text notes the value's replacement under the
# key path *as written*, so the lone surrogate of the key reaches the intake_note's key and
# text, the warnings and every report: `diagnose` exits 1 (UnicodeEncodeError) in all formats.
@example(key="\ud83d", value="\ude00", place="versions")
def test_lone_surrogates_in_a_key_and_its_value(key, value, place, work):
    path = _write_case(work, {"symptom": "x", place: {key: value}}, "json")
    ((key, value),) = _as_written(path)[place].items()
    diagnosis = diagnose_file(path, _bundled())
    reports = [render_markdown(diagnosis), render_json(diagnosis), render_html(diagnosis)]
    for report in reports:
        report.encode("utf-8")
    verdict = json.loads(reports[1])
    notes = [t["fields"] for t in verdict["trace"] if t["type"] == "intake_note"]
    assert any("代理项" in n["text"] for n in notes), notes
    if place == "versions":
        versions = {(t["fields"]["given"], t["fields"]["version"]) for t in verdict["trace"] if t["type"] == "version"}
        assert (_clean(key), _clean(value).strip()) in versions, versions


@settings(_settings(3, scale=False), phases=[Phase.explicit, Phase.generate])  # shrinking MiB texts takes minutes
@given(chunk=TEXT.filter(lambda t: t.strip()), size=st.sampled_from([1_100_000, 2_200_000]),
       channel=st.sampled_from(["json-utf8", "yaml-utf8"]))
def test_texts_of_a_few_mib(chunk, size, channel, text_rulebase, work):
    """Texts longer than the engine's 1 MiB cut (the drawn text 50 times, then mostly ASCII
    filler), in a case file under the 4 MiB limit of case files."""
    head = (chunk + " vpmark ") * 50
    filler = "board output differs from the x86 simulation on every frame; 板端。"
    symptom = (head + filler * (size // len(filler) + 1))[:size]
    data = _text_case(symptom, "x" * 1000, ["tried " + chunk], "OE", "3.0.31", chunk)
    path = _write_case(work, data, channel)
    assert len(symptom) > 1 << 20 and path.stat().st_size < 4 * 1024 * 1024  # MAX_CASE_BYTES
    verdict = _check_text_diagnosis(path, text_rulebase.value)
    assert any(f["rule"] == "vp.text_capture" for f in verdict["trace"] if "rule" in f)


# =========================================================================================
# Table cells
# =========================================================================================

_CSV_LINES = COMPARE_CSV.read_text(encoding="utf-8").splitlines()
_HEADER = [c.strip() for c in _CSV_LINES[0].split(",")]
_COSINE, _ATOL = _HEADER.index("Cosine"), _HEADER.index("Atol")
_NON_FINITE = ["nan", "inf", "-inf", "1e400", "-1e400", "NaN", "Infinity"]


@st.composite
def cell(draw) -> str:
    if draw(st.integers(0, 4)) == 0:
        return draw(st.sampled_from(_NON_FINITE))
    x = draw(st.one_of(st.floats(0, 1), NUMBERS))
    return number_forms(x)[draw(st.sampled_from([f for f in number_forms(x) if f != "integer"]))]


def _compare_rows(cells: list[tuple[str, str]]) -> str:
    rows = [[c.strip() for c in line.split(",")] for line in _CSV_LINES[1:]]
    out = [_CSV_LINES[0]]
    for k, (cosine, atol) in enumerate(cells):
        row = list(rows[k % len(rows)])
        row[0] = f"layer{k}"
        row[_COSINE], row[_ATOL] = cosine, atol
        out.append(", ".join(row))
    return "\n".join(out) + "\n"


def _diagnose_table(cells: list[tuple[str, str]], rulebase: RuleBase, work: Path, html: bool = False):
    folder = work / "compare"
    folder.mkdir(exist_ok=True)
    (folder / "compare_per_layer_out.csv").write_text(_compare_rows(cells), encoding="utf-8")
    note(_compare_rows(cells))
    diagnosis = diagnose(None, rulebase, EvidenceOptions(workdirs=[folder], use_environment=False))
    for render in (render_markdown, render_json, *([render_html] if html else [])):
        render(diagnosis).encode("utf-8")
    problems = [f for f in diagnosis.facts if f.type == "probe_problem"]
    assert not problems, [f.fields for f in problems]
    return diagnosis


TABLES = st.lists(st.tuples(cell(), cell()), min_size=1, max_size=12)


@_settings(80)
@given(cells=TABLES)
@example(cells=[("0.9999", "0.001"), ("nan", "0.002"), ("0.5", "inf"), ("1e-05", "1e400")])
@example(cells=[("5e-324", "1e-320"), ("-0.0", "1.7976931348623157e+308"), ("1e-5", "1E+16")])
def test_compare_table_cells_arrive_exactly(cells, quiet_rulebase, work):
    """Any cell reads without exception; finite cells arrive exactly (chart points, facts);
    no non-finite number reaches a fact."""
    diagnosis = _diagnose_table(cells, quiet_rulebase.value, work)
    # the chart points carry every metric row's Cosine and Atol as read
    (chart,) = [series_of(r) for r in diagnosis.readings if r.kind == "compare"]
    points = {index: (cosine, atol) for index, _, cosine, atol in chart["points"]}
    for k, texts in enumerate(cells):
        for got, text in zip(points[k], texts):
            want = float(text)
            assert got == want or (math.isnan(want) and math.isnan(got)), (k, text, got)
            if math.isfinite(want):
                assert repr(got) == repr(want), (k, text, got)
    for fact in diagnosis.facts:
        for name, spec in VOCAB.types[fact.type].fields.items():
            value = fact.fields.get(name)
            if spec.type == "number" and isinstance(value, float):
                assert math.isfinite(value), (fact.type, name, value)
    # the facts carry the values of the rows they name
    by_name = {f"layer{k}": tuple(float(t) for t in texts) for k, texts in enumerate(cells)}
    for fact in diagnosis.facts:
        if fact.type == "compare_origin":
            cosine, atol = by_name[fact["mod_name"]]
            assert fact["cosine"] == (cosine if math.isfinite(cosine) else None), fact.fields
            assert fact["atol"] == (atol if math.isfinite(atol) else None), fact.fields
        elif fact.type == "compare_summary" and fact["worst_mod_name"]:
            cosine = by_name[fact["worst_mod_name"]][0]
            assert fact["worst_cosine"] == (cosine if math.isfinite(cosine) else None), fact.fields
            finite = [c for c, _ in by_name.values() if math.isfinite(c)]
            if len(finite) == len(cells):
                assert cosine == min(finite)


@_settings(60)
@given(cells=TABLES)
# Found here (fixed): the HTML report's charts (app/charts.py) fail on huge finite values —
# `diagnose --format html` exits 1 with an internal error.
@example(cells=[("0.5", "1e308")])   # Atol panel (log): 10 ** 308.5 -> OverflowError
@example(cells=[("1e16", "0.001")])  # Cosine panel: 1e16 +- 0.5 == 1e16 -> ZeroDivisionError
def test_compare_table_html_report(cells, quiet_rulebase, work):
    """The HTML report (per-layer charts) renders for any table."""
    _diagnose_table(cells, quiet_rulebase.value, work, html=True)


@_settings(80)
@given(cells=TABLES)
# Found here (fixed): a nan / inf cell gives a warning only when it lands in a fact field, and
# the compare_summary one says "summary", not the row.
@example(cells=[("0.5", "0.001"), ("0.9", "inf")])  # Atol inf on line 3: no warning at all
@example(cells=[("0.9999", "0.001"), ("0.5", "0.002"), ("1.0", "1e400")])  # 1e400: silently inf
@example(cells=[("0.5", "0.001"), ("nan", "0.001")])  # "compare_per_layer_out.csv summary ...: worst_cosine 是 nan"
def test_compare_table_non_finite_cells_warn_naming_file_and_row(cells, quiet_rulebase, work):
    """Each nan / inf / 1e400 cell: a warning (intake_note) naming the file and the row (its
    line in the file, or `row N`)."""
    diagnosis = _diagnose_table(cells, quiet_rulebase.value, work)
    notes = [f["text"] for f in diagnosis.facts if f.type == "intake_note"]
    missing = []
    for k, texts in enumerate(cells):
        line = k + 2
        named = any("compare_per_layer_out.csv" in n and re.search(rf"(:{line}(?!\d)|row {k}(?!\d))", n)
                    for n in notes)
        for column, text in zip(("Cosine", "Atol"), texts):
            if not math.isfinite(float(text)) and not named:
                missing.append(f"line {line} (row {k}) {column} = {text}")
    assert not missing, "non-finite cells without a warning naming file and row:\n" + "\n".join(
        missing) + "\nnotes:\n" + "\n".join(notes)


# =========================================================================================
# Determinism
# =========================================================================================

def _reports(path: Path, rulebase: RuleBase) -> dict[str, bytes | str]:
    """Each format's bytes; a render that raises gives its exception's text (the HTML chart
    failures on huge values are test_compare_table_html_report's subject: here both runs
    must only agree)."""
    out: dict[str, bytes | str] = {}
    for fmt, render in (("md", render_markdown), ("json", render_json), ("html", render_html)):
        diagnosis = diagnose(read_case(path), rulebase, NO_ENV)
        try:
            out[fmt] = render(diagnosis).encode("utf-8")
        except (OverflowError, ZeroDivisionError) as exc:
            out[fmt] = f"{type(exc).__name__}: {exc}"
    return out


@_settings(20)
@given(v=NUMBERS, symptom=TEXT, notes=SURROGATE_TEXT, cells=st.lists(st.tuples(cell(), cell()), min_size=1,
                                                                     max_size=6))
def test_same_input_same_report_bytes(v, symptom, notes, cells, text_rulebase, work):
    folder = work / "determinism"
    (folder / "artifacts").mkdir(parents=True, exist_ok=True)
    (folder / "artifacts" / "compare_per_layer_out.csv").write_text(_compare_rows(cells), encoding="utf-8")
    data = _text_case(symptom, notes, ["vpmark " + symptom], "hbdk4", "4.4.2", notes)
    data["results"]["quantized_bc"]["value"] = v
    data["artifacts"] = ["artifacts/"]
    path = _write_case(folder, data, "json")
    first = _reports(path, text_rulebase.value)
    second = _reports(path, text_rulebase.value)
    assert first == second


def test_same_input_same_report_bytes_across_processes(tmp_path):
    """Two processes with different hash seeds: the same bytes."""
    (tmp_path / "artifacts").mkdir()
    (tmp_path / "artifacts" / "compare_per_layer_out.csv").write_text(
        _compare_rows([("0.9999", "1e-05"), ("nan", "0.002"), ("5e-324", "inf"), ("0.5", "1e+16")]), encoding="utf-8")
    data = _text_case("板端\u2028掉点 vpmark nash-e 😀\x1b", "NV12\ud800 输入", ["ConsistencyStrategy level 0", "\x85"],
                      "hbdk4", "4.4.2", "1e-05")
    data["results"]["quantized_bc"]["value"] = 1e-05
    data["results"]["qat_bc"] = {"status": "normal", "evidence": "dataset_eval", "metric": "mAP", "value": 5e-324}
    data["artifacts"] = ["artifacts/"]
    (tmp_path / "case.json").write_text(json.dumps(data), encoding="ascii")
    env = {k: v for k, v in os.environ.items() if k != "J6DOCTOR_DEBUG"}
    for fmt in ("json", "html"):  # Markdown: in-process above
        outputs = []
        for seed in ("1", "2"):
            result = subprocess.run([sys.executable, "-m", "j6doctor", "diagnose", "case.json", "--no-env",
                                     "--format", fmt], cwd=tmp_path, env={**env, "PYTHONHASHSEED": seed},
                                    capture_output=True, timeout=120, check=False)
            assert result.returncode == 0, result.stderr.decode("utf-8", "replace")[-2000:]
            outputs.append(result.stdout)
        assert outputs[0] == outputs[1], fmt
