"""One JSON line-finder (engine/json_lines.key_lines) for every JSON reader that names a line:
the case and metrics files (through strict_yaml.load_json) and hb_mapper's quant_info. It
walks the text the decoder accepted; the lines must be those a person reads in the file."""

from __future__ import annotations

import json

from j6doctor.engine.json_lines import key_lines
from j6doctor.engine.strict_yaml import YamlInputError, load_json
from j6doctor.probes.quant_info import parse_quant_info

# a case file as `json.dump(..., indent=2)` writes it, with strings that hold JSON's own marks
CASE = """{
  "symptom": "板端 mAP 掉到 0.12，{\\"note\\": [\\"not a key\\"]} 和 \\\\ 都是文字",
  "platform": "J6M",
  "results": {
    "qat_pt": {"status": "normal", "value": 36.2},
    "board": {
      "status": "abnormal",
      "value": 0.12
    }
  },
  "tried": [
    "关闭 fake quant",
    {"x": []},
    []
  ]
}
"""


def test_every_key_and_item_has_the_line_a_reader_sees():
    found = key_lines(CASE)
    assert found.repeated == []
    assert found.lines == {
        (): 1, ("symptom",): 2, ("platform",): 3, ("results",): 4,
        ("results", "qat_pt"): 5, ("results", "qat_pt", "status"): 5, ("results", "qat_pt", "value"): 5,
        ("results", "board"): 6, ("results", "board", "status"): 7, ("results", "board", "value"): 8,
        ("tried",): 11, ("tried", 0): 12, ("tried", 1): 13, ("tried", 1, "x"): 13, ("tried", 2): 14,
    }
    assert load_json(CASE).lines == found.lines


def test_below_max_depth_values_are_skipped_whole():
    assert set(key_lines(CASE, max_depth=1).lines) == {(), ("symptom",), ("platform",), ("results",), ("tried",)}
    assert key_lines(" 7 \n").lines == {(): 1} and key_lines("\n\n[]").lines == {(): 3}


def test_a_key_listed_again_is_named_with_both_lines_and_its_value_is_no_path():
    text = '{\n "a": {"x": 1},\n "b": 2,\n "a": {"y": 3, "x": 4}\n}'
    found = key_lines(text)
    assert found.repeated == [(("a",), 4, 2)]
    assert ("a", "y") not in found.lines and found.lines[("a", "x")] == 2
    try:
        load_json(text)
    except YamlInputError as refused:
        assert (refused.message, refused.line) == ("duplicate key 'a' (first at line 2); keep one of them", 4)
    else:
        raise AssertionError("a duplicate key was read")


def test_quant_info_reads_the_first_of_a_node_listed_twice_and_names_the_second():
    nodes = [("conv1", "0.999812"), ("conv2", "0.998100"), ("conv1", "0.100000"), ("conv3", "x")]
    body = ",\n".join(f'  "{name}": {{\n    "type": "Conv",\n    "inputs": ["a"],\n    "outputs": ["b"],\n'
                      f'    "thresholds": [[1.5]],\n    "cosine_similarity": "{cos}"\n  }}' for name, cos in nodes)
    info = parse_quant_info("{\n" + body + "\n}\n", "model_quant_info.json")
    assert [(n.name, n.line, n.cosine) for n in info.nodes] == [("conv1", 2, 0.999812), ("conv2", 9, 0.9981)]
    assert [(s.line, s.reason) for s in info.skipped.kept] == [
        (16, "node 'conv1' is listed again; the first one is read"),
        (28, "cosine_similarity of node 'conv3' is 'x'; expected a number in a string, like \"0.999812\""),
    ]
    assert json.loads("{\n" + body + "\n}\n")["conv1"]["cosine_similarity"] == "0.100000"  # what json alone keeps
