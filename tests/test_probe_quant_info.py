"""hb_mapper `*_quant_info.json` (REAL_FORMATS.md R5) against the fixtures in
tests/fixtures/formats/real/quant_info (invented names and numbers):

* clsnet_224_quant_info.json: indent 4, LF, final newline; the preprocess node is at
  "0.541412" while the next nodes are ≈ 1; an empty cosine, a "1.000045", empty thresholds;
* detnet_quant_info.crlf.json: indent 2, CRLF, no final newline; healthy.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from conftest import judged
from j6doctor.probes import conversion_log, quant_info
from j6doctor.probes.artifacts import identify
from j6doctor.probes.conversion_log import read_conversion_log
from j6doctor.probes.input_error import InputError
from j6doctor.probes.quant_info import parse_quant_info, read_quant_info

FORMATS = Path(__file__).parent / "fixtures" / "formats"
REAL = FORMATS / "real"
COLLAPSE = REAL / "quant_info" / "clsnet_224_quant_info.json"
HEALTHY = REAL / "quant_info" / "detnet_quant_info.crlf.json"
COLLAPSE_LOG = REAL / "conversion_log" / "hb_mapper_makertbin.first_node_collapse.log"


def write(tmp_path: Path, content: str | bytes, name: str = "model_quant_info.json") -> Path:
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


def text_of(path: Path) -> str:
    return path.read_bytes().decode("utf-8")


def test_fixture_layouts():
    assert COLLAPSE.read_bytes().endswith(b"}\n") and b"\r" not in COLLAPSE.read_bytes()
    raw = HEALTHY.read_bytes()
    assert raw.endswith(b"}") and raw.count(b"\r\n") == raw.count(b"\n") > 50


def test_collapse_nodes_in_file_order_with_lines():
    info = read_quant_info(COLLAPSE)
    assert info.display == COLLAPSE.name
    assert [(n.name, n.line) for n in info.nodes] == [
        ("HZ_PREPROCESS_FOR_images", 2), ("/backbone/stem/conv/Conv", 17),
        ("/backbone/stage1/conv1/Conv", 41), ("/backbone/stage1/Split_requant", 56),
        ("/backbone/stage1/conv2/Conv", 67), ("/head/fc/Gemm", 82), ("/head/Softmax", 97)]


def test_collapse_node_fields():
    info = read_quant_info(COLLAPSE)
    first = info.nodes[0]
    assert (first.type, first.inputs, first.outputs, first.thresholds, first.cosine) == (
        "HzSQuantizedPreprocess", ("images",), ("images_hz_pre",), ((127.0,),), 0.541412)
    conv = info.node("/backbone/stem/conv/Conv")
    assert conv.inputs == ("images_hz_pre", "stem.weight", "stem.bias")
    assert conv.thresholds == ((1.0,), (0.412, 0.377, 0.598, 0.261), ())
    requant = info.node("/backbone/stage1/Split_requant")
    assert requant.thresholds == () and requant.cosine is None          # "cosine_similarity": ""
    assert info.node("/head/Softmax").cosine == 1.000045
    assert info.node("nope") is None


def test_collapse_summary(rulebase):
    summary = read_quant_info(COLLAPSE).summary()
    first = summary.first_node
    assert judged(rulebase, COLLAPSE, "first_node_collapsed", "path") == {COLLAPSE.name}
    assert (first.node.name, first.cosine) == ("HZ_PREPROCESS_FOR_images", 0.541412)
    assert [n.line for n in first.following] == [17, 41, 67]          # the empty cosine is skipped
    assert first.following_min == 0.998907
    origin = summary.breaks[0]
    assert origin.node.line == 2 and origin.before is None
    assert origin.drop == pytest.approx(1 - 0.541412)
    assert judged(rulebase, COLLAPSE, "node_origin", "node") == {"HZ_PREPROCESS_FOR_images"}
    assert summary.worst.name == "HZ_PREPROCESS_FOR_images"


def test_collapse_agrees_with_the_log_of_the_same_run():
    """The same invented run seen in both files: the same first-node reading."""
    log = read_conversion_log(COLLAPSE_LOG).first_node()
    info = read_quant_info(COLLAPSE).first_node()
    assert (log.node.name, log.cosine, log.following_min) == (info.node.name, info.cosine, info.following_min)


def test_healthy_crlf_without_final_newline(rulebase):
    info = read_quant_info(HEALTHY)
    assert [n.line for n in info.nodes] == [2, 17, 32, 47, 62]
    summary = info.summary()
    assert summary.breaks == []
    assert judged(rulebase, HEALTHY, "node_origin", "node") == set()
    assert summary.first_node.cosine == 0.999812
    assert judged(rulebase, HEALTHY, "first_node_collapsed", "path") == set()
    assert summary.worst.name == "/head/cls/Conv"
    assert info.breaks(healthy=0.998)[0].node.name == "/backbone/layer1/Conv"
    assert len(info.first_node(following=2).following) == 2


def test_crlf_and_lf_read_the_same():
    assert parse_quant_info(text_of(HEALTHY), "a.json") == \
        parse_quant_info(text_of(HEALTHY).replace("\r\n", "\n"), "a.json")


def test_compact_json_is_all_on_line_1():
    data = json.loads(text_of(COLLAPSE))
    info = parse_quant_info(json.dumps(data), "q.json")
    assert [n.name for n in info.nodes] == list(data)
    assert {n.line for n in info.nodes} == {1}


def test_summary_logic_lives_in_conversion_log():
    assert quant_info.cosine_breaks is conversion_log.cosine_breaks
    assert quant_info.first_node is conversion_log.first_node
    assert quant_info.worst_cosine is conversion_log.worst_cosine


@pytest.mark.parametrize("raw, expected", [
    ('"0.5"', 0.5), ('" 0.25 "', 0.25), ('"1.000045"', 1.000045), ("0.75", 0.75),
    ("null", None), ('""', None), ('"--"', None), ('"None"', None),
])
def test_cosine_forms(raw, expected):
    text = '{"n": {"type": "Conv", "inputs": [], "outputs": [], "thresholds": [], ' \
           f'"cosine_similarity": {raw}}}}}'
    assert parse_quant_info(text, "q.json").nodes[0].cosine == expected


def test_nan_cosine_is_the_worst_and_a_fall():
    text = text_of(HEALTHY).replace('"0.997402"', '"nan"')
    info = parse_quant_info(text, "q.json")
    assert math.isnan(info.worst_node().cosine)
    fall = info.breaks()[0]
    assert fall.node.line == 32 and fall.before.line == 17 and fall.drop == math.inf


def test_byte_order_mark_and_unicode_names(tmp_path):
    text = "\ufeff" + '{\n  "/a/\\u5377\\u79ef": {"type": "Conv", "cosine_similarity": "0.5"},\n' \
                     '  "/b/relu": {"type": "Relu", "thresholds": [[1]]}\n}'
    info = read_quant_info(write(tmp_path, text.encode("utf-8")))
    assert [(n.name, n.line, n.cosine) for n in info.nodes] == [
        ("/a/\u5377\u79ef", 2, 0.5), ("/b/relu", 3, None)]
    assert info.nodes[1].thresholds == ((1.0,),)


# --- discovery by content ------------------------------------------------------------------

NEUTRAL = "pasted_from_ticket.txt"  # a name that hints at no kind
OWN = REAL / "quant_info"


@pytest.mark.parametrize("head, expected", [
    ('{"a": {"type": "Conv", "inputs": ["x"], "outputs": ["y"], "thresholds": [[1.0,', True),
    ('\ufeff\n{"a": {"cosine_similarity": "0.9"', True),
    ('{"march": "nash-e", "optimize_level": "O2"}', False),                 # compile config
    ('[{"thresholds": []}]', False),
    (text_of(COLLAPSE_LOG)[:4096], False),
    ("", False),
])
def test_identify_on_pasted_text(head, expected):
    kind, by = identify(NEUTRAL, head.encode("utf-8"))
    if expected:
        assert (kind, by) == ("quant_info", "content")
    else:
        assert kind != "quant_info"


# --- bad input ----------------------------------------------------------------------------

def replace_once(path: Path, old: str, new: str) -> str:
    text = text_of(path)
    assert text.count(old) >= 1, old
    return text.replace(old, new, 1)


BAD = [
    ("truncated", text_of(COLLAPSE)[:text_of(COLLAPSE).index('"/head/Softmax"') + 30],
     "invalid JSON (Unterminated string", 98),
    ("missing comma", replace_once(COLLAPSE, '"0.999731"\n    },', '"0.999731"\n    }'),
     "invalid JSON (Expecting ',' delimiter", 41),
    ("a list", '[\n  {"type": "Conv"}\n]', "the JSON is a list; expected an hb_mapper *_quant_info.json", 1),
    ("a string", '\n\n"quant info"', "the JSON is the string 'quant info'", 3),
    ("no nodes", "{ }\n", "the JSON object has no nodes", 1),
    ("node value not an object", replace_once(COLLAPSE, '"/head/Softmax": {', '"/head/Softmax": [{')
     .replace('"1.000045"\n    }', '"1.000045"\n    }]'),
     "node '/head/Softmax' is a list; expected an object with type, inputs, outputs, thresholds "
     "and cosine_similarity", 97),
    ("no type", replace_once(COLLAPSE, '"type": "HzSQuantizedConv",\n        "inputs": [\n'
                                       '            "images_hz_pre"', '"inputs": [\n            "images_hz_pre"'),
     "node '/backbone/stem/conv/Conv' has no type", 17),
    ("type not a string", replace_once(COLLAPSE, '"type": "Softmax"', '"type": 7'),
     "node '/head/Softmax' has type a number", 98),
    ("neither thresholds nor cosine", '{"a": {"type": "Conv"},\n "b": {"type": "Relu", "inputs": []}}',
     "node 'a' has neither thresholds nor cosine_similarity", 1),
    ("cosine not a number", replace_once(COLLAPSE, '"0.999412"', '"0.99x412"'),
     "cosine_similarity of node '/backbone/stage1/conv1/Conv' is '0.99x412'; expected a number in a "
     "string, like \"0.999812\"", 54),
    ("cosine a list", replace_once(COLLAPSE, '"0.998412"', '["0.998412"]'),
     "cosine_similarity of node '/head/fc/Gemm' is a list", 95),
    ("cosine a boolean", replace_once(COLLAPSE, '"0.998412"', 'true'),
     "cosine_similarity of node '/head/fc/Gemm' is the boolean true", 95),
    ("thresholds not a list of lists", replace_once(COLLAPSE, "[\n            [\n                127.0\n"
                                                              "            ]\n        ]", "[127.0]"),
     "thresholds of node 'HZ_PREPROCESS_FOR_images' holds the number 127.0; expected a list of "
     "lists of numbers", 10),
    ("threshold a string", replace_once(COLLAPSE, "0.377", '"0.377"'),
     "thresholds of node '/backbone/stem/conv/Conv' holds the string '0.377'", 27),
    ("thresholds an object", replace_once(COLLAPSE, '"thresholds": [],', '"thresholds": {},'),
     "thresholds of node '/backbone/stage1/Split_requant' is an object", 64),
    ("inputs not names", replace_once(COLLAPSE, '"stem.weight"', "3"),
     "inputs of node '/backbone/stem/conv/Conv' is a list; expected a list of tensor names", 19),
    ("outputs a string", replace_once(HEALTHY, '"outputs": [\r\n      "logits"\r\n    ]', '"outputs": "logits"'),
     "outputs of node '/head/cls/Conv' is the string 'logits'", 67),
    ("duplicate node", replace_once(HEALTHY, '"/backbone/layer2/Conv"', '"/backbone/layer1/Conv"'),
     "node '/backbone/layer1/Conv' is listed again; the first one is read", 47),
    ("extra data", text_of(HEALTHY) + "\r\n{}", "invalid JSON (Extra data", 78),
]


@pytest.mark.parametrize("label, content, fragment, line", BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_refused_or_its_node_skipped_with_line(tmp_path, label, content, fragment, line):
    """A file that is no JSON object of nodes is refused; a node that cannot be read is
    skipped and named, and the other nodes are read."""
    path = write(tmp_path, content)
    try:
        info = read_quant_info(path, display="out/model_quant_info.json")
    except InputError as error:
        assert label in REFUSED
        assert error.file == "out/model_quant_info.json"
        assert fragment in error.message
        assert error.line == line
        assert str(error).startswith(f"out/model_quant_info.json:{line}: ")
        return
    assert label not in REFUSED
    (item,) = info.skipped.kept
    assert fragment in item.reason and item.line == line
    whole = read_quant_info(HEALTHY if label in ("outputs a string", "duplicate node") else COLLAPSE)
    assert len(info.nodes) == len(whole.nodes) - 1
    (missing,) = {n.name for n in whole.nodes} - {n.name for n in info.nodes} or {"(the one listed again)"}
    assert missing in item.reason or label == "duplicate node"


REFUSED = {"truncated", "missing comma", "a list", "a string", "no nodes", "neither thresholds nor cosine",
           "extra data"}


def test_a_file_whose_only_node_is_unreadable_is_refused(tmp_path):
    with pytest.raises(InputError) as info:
        read_quant_info(write(tmp_path, '{\n  "conv": {"type": 3, "cosine_similarity": "0.9"}\n}'))
    assert info.value.line == 2 and "no readable node: node 'conv' has type a number" in info.value.message


@pytest.mark.parametrize("content, fragment", [
    (b"", "empty file"),
    (b"\n \n", "empty file"),
    (b'{"a": \x00}', "binary data"),
    (b'{"a\xff": {}}', "not UTF-8"),
    (b"[" * 200_000 + b"]" * 200_000, "unreadable JSON (RecursionError)"),
    (b'{"a": {"type": "x", "thresholds": [[' + b"9" * 5000 + b"]]}}", "unreadable JSON (ValueError)"),
    (b'{"a": {"type": "x", "thresholds": [[' + b"9" * 400 + b"]]}}", "integer too large for a float"),
])
def test_unreadable_files(tmp_path, content, fragment):
    with pytest.raises(InputError) as info:
        read_quant_info(write(tmp_path, content))
    assert info.value.file == "model_quant_info.json" and fragment in info.value.message


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_quant_info(tmp_path / "model_quant_info.json")


def test_module_exports():
    for name in quant_info.__all__:
        assert hasattr(quant_info, name), name
