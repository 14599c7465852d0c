"""Case loading per the contract: every error path names the file, the line, the key and
the allowed values, exits 2 with no traceback; aliases are normalised."""

from __future__ import annotations

import json

import pytest

from conftest import write_case
from j6doctor.probes import InputError
from j6doctor.probes.case_file import case_facts, read_case

BAD_CASES = [
    ("unknown top-level key", "symptom: x\nresutls:\n  qat_pt: {status: normal}\n",
     2, ["unknown key 'resutls'", "did you mean 'results'", "allowed: symptom"]),
    ("bad status value", "results:\n  qat_pt: {status: normal}\n  qat_bc: {status: abnromal}\n",
     3, ["results.qat_bc.status", '"abnromal"', "allowed: normal, abnormal, unknown"]),
    ("unknown artifact id", "results:\n  qat_bcc: {status: normal}\n",
     2, ["unknown key 'qat_bcc' under results", "did you mean 'qat_bc'", "quantized_bc"]),
    ("bad evidence value", "results:\n  qat_bc:\n    status: normal\n    evidence: datasett\n",
     4, ["results.qat_bc.evidence", "dataset_eval, badcase, multi_frame_visual, single_frame"]),
    ("unknown key inside a result", "results:\n  qat_bc: {status: normal, evidance: dataset_eval}\n",
     2, ["unknown key 'evidance' under results.qat_bc", "did you mean 'evidence'"]),
    ("wrong type for value", "results:\n  qat_bc: {status: normal, value: high}\n",
     2, ["results.qat_bc.value", "expected a number", "string"]),
    ("version as a list", "versions:\n  hbdk4-compiler: [4, 4]\n",
     2, ["versions.hbdk4-compiler", "expected a string", "list"]),
    ("platform typo", "platform: J6N\n",
     1, ["unknown platform 'J6N'", "did you mean", "J6E J6M J6P J6B J6H", "nash-e"]),
    ("two platforms", "platform: J6E / X5\n", 1, ["names more than one platform"]),
    ("platform not a string", "platform: [J6M]\n", 1, ["platform: expected a string", "list"]),
    ("results not a mapping", "results: [qat_pt]\n", 1, ["results: expected a mapping"]),
    ("badcase without reproducible", "badcase:\n  path: a.pt\n",
     1, ["badcase: 'reproducible' is required"]),
    ("reproducible not a boolean", "badcase: {reproducible: maybe}\n",
     1, ["badcase.reproducible: expected true or false"]),
    ("bad checklist item", "deployment:\n  checklist:\n    layuot: {status: ok}\n",
     3, ["unknown key 'layuot' under deployment.checklist", "did you mean 'layout'"]),
    ("bad checklist status", "deployment:\n  checklist:\n    layout: {status: done}\n",
     3, ["deployment.checklist.layout.status", "allowed: ok, mismatch, unchecked"]),
    ("status missing", "results:\n  qat_bc: {evidence: dataset_eval}\n", 2, ["results.qat_bc: 'status' is required"]),
    ("duplicate key", "results:\n  qat_bc: {status: normal}\n  qat_bc: {status: abnormal}\n",
     3, ["duplicate key 'qat_bc'", "first at line 2"]),
    ("malformed YAML", "results:\n  qat_bc: {status: normal\n  board: x\n", None, ["not valid YAML"]),
    ("YAML alias", "a: &x {status: normal}\nresults:\n  qat_bc: *x\n", 3, ["aliases (*name)"]),
    ("top level is a list", "- qat_pt\n", 1, ["a case file is a mapping"]),
    ("tried not a list", "tried: ConsistencyStrategy\n", 1, ["tried: expected a list"]),
]


@pytest.mark.parametrize("name,text,line,fragments", BAD_CASES, ids=[c[0] for c in BAD_CASES])
def test_bad_case_error_names_file_line_and_allowed_values(tmp_path, name, text, line, fragments):
    path = write_case(tmp_path, text)
    with pytest.raises(InputError) as info:
        read_case(path)
    message = info.value.render()
    assert message.startswith("case.yaml:")
    if line is not None:
        assert info.value.line == line, message
    for fragment in fragments:
        assert fragment in message, message


@pytest.mark.parametrize("name,text,line,fragments", BAD_CASES[:6], ids=[c[0] for c in BAD_CASES[:6]])
def test_cli_exits_2_with_message_and_no_traceback(tmp_path, cli, name, text, line, fragments):
    path = write_case(tmp_path, text)
    proc = cli("diagnose", str(path))
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("j6doctor: error: case.yaml:")
    assert fragments[0] in proc.stderr


def test_all_errors_reported_together(tmp_path):
    path = write_case(tmp_path, "platform: J6N\nresults:\n  qat_bc: {status: bda}\nextra: 1\n")
    with pytest.raises(InputError) as info:
        read_case(path)
    text = info.value.render()
    assert "case.yaml:1: platform" in text and "case.yaml:3:" in text and "case.yaml:4: unknown key 'extra'" in text


@pytest.mark.parametrize("content,message", [
    (b"\xff\xfe\x00r\x00e", "a case file is a mapping"),        # UTF-16 BE text behind a LE mark
    (b"\x00\x01\x02garbage\x00", "binary data"),
    (b"\xff\xfe\x00\xd8", "not UTF-16-LE text after its byte-order mark"),  # a lone surrogate
    (b"symptom: \xe6\x8e\x89\xff\n", "not UTF-8"),
])
def test_binary_and_non_utf8(tmp_path, content, message):
    path = tmp_path / "case.yaml"
    path.write_bytes(content)
    with pytest.raises(InputError, match=message):
        read_case(path)


def test_missing_file_and_wrong_suffix(tmp_path, cli):
    proc = cli("diagnose", str(tmp_path / "nope.yaml"))
    assert proc.returncode == 2 and "no such file" in proc.stderr and "Traceback" not in proc.stderr
    other = write_case(tmp_path, "mod_name,cosine", "case.csv")
    with pytest.raises(InputError, match=r"\.yaml, \.yml or \.json .*\.txt or \.md"):
        read_case(other)
    post = write_case(tmp_path, "symptom: x", "post.txt")  # a post saved as text is read as words
    assert read_case(post).data["symptom"] == "symptom: x"


def test_json_case_with_errors_has_lines(tmp_path):
    text = json.dumps({"results": {"qat_bc": {"status": "normal"}, "quantized_bc": {"status": "bda"}}}, indent=2)
    path = write_case(tmp_path, text, "case.json")
    with pytest.raises(InputError) as info:
        read_case(path)
    assert info.value.line == 7
    assert "results.quantized_bc.status" in info.value.render()


def test_json_duplicate_keys_and_nan_are_refused(tmp_path):
    dup = write_case(tmp_path, '{"platform": "J6M", "platform": "J6E"}', "dup.json")
    with pytest.raises(InputError, match="duplicate key 'platform'"):
        read_case(dup)
    nan = write_case(tmp_path, '{"results": {"qat_bc": {"status": "normal", "value": NaN}}}', "nan.json")
    with pytest.raises(InputError, match="NaN is not a valid number"):
        read_case(nan)
    # the line of the value, not of a string that mentions it
    text = '{\n  "symptom": "NaN and -Infinity in the logs",\n  "results": {\n    "qat_bc": {\n      "value": -Infinity\n    }\n  }\n}\n'
    with pytest.raises(InputError, match="Infinity is not a valid number") as info:
        read_case(write_case(tmp_path, text, "inf.json"))
    assert info.value.line == 5


@pytest.mark.parametrize("given,family", [
    ("J6M", "J6M"), ("j6e", "J6E"), ("nash-m", "J6M"), ("NASH_E", "J6E"), ("March.NASH_P", "J6P"),
    ("RDK S100", "J6E"), ("rdk s100p", "J6M"), ("S100P", "J6M"), ("nash-b-lite", "J6B"), ("nash-h", "J6H"),
])
def test_platform_aliases(tmp_path, given, family):
    facts = case_facts(read_case(write_case(tmp_path, f"platform: {given}\n")))
    (platform,) = [f for f in facts if f.type == "platform"]
    assert platform["family"] == family
    assert platform["given"] == given


def test_facts_carry_key_and_line(tmp_path):
    path = write_case(tmp_path, "symptom: 掉点\nresults:\n  qat_pt: normal\n  qat_bc:\n    status: abnormal\n"
                                "    evidence: dataset_eval\nversions:\n  hbdk4_compiler: \"4.4.2\"\n")
    facts = {f.type + ":" + f.fields.get("artifact", ""): f for f in case_facts(read_case(path))}
    assert facts["symptom:"].source.line == 1
    assert facts["result:qat_pt"].source.key == "results.qat_pt" and facts["result:qat_pt"].source.line == 3
    assert facts["result:qat_bc"].source.line == 4
    assert facts["result:qat_pt"]["evidence"] == "unspecified"
    assert facts["version:"]["package"] == "hbdk4-compiler"


def test_unknown_status_adds_no_evidence(tmp_path):
    facts = case_facts(read_case(write_case(tmp_path, "results:\n  qat_pt: {status: unknown}\n")))
    assert facts == []


def test_empty_file_is_an_empty_case(tmp_path):
    assert case_facts(read_case(write_case(tmp_path, ""))) == []
    assert case_facts(read_case(write_case(tmp_path, "# nothing yet\n"))) == []


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "gbk", "gb18030"])
def test_case_files_chinese_editors_write_are_read(tmp_path, encoding):
    """Windows editors save UTF-16 (with or without a byte-order mark), Chinese ones GBK."""
    text = 'symptom: "板端 mAP 低 6 个点"\nplatform: J6M\nresults:\n  board: {status: abnormal}\n'
    path = tmp_path / "case.yaml"
    path.write_bytes(text.encode(encoding))
    case = read_case(path)
    assert case.data["symptom"] == "板端 mAP 低 6 个点" and case.data["platform"] == "J6M"


def test_latin1_text_is_not_taken_for_gbk(tmp_path):
    path = tmp_path / "case.yaml"
    path.write_bytes("symptom: café déjà\n".encode("latin-1"))
    with pytest.raises(InputError, match="not UTF-8"):
        read_case(path)
