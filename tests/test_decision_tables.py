"""Decision tables (engine/decision_table.py): the stage table is checked row by row from its
own cells, a pack adds or replaces a row by filling cells, and a table that breaks its hit
policy or its own columns is refused with the file, the line and the rows."""

from __future__ import annotations

import subprocess
import sys

from pathlib import Path

import pytest
import yaml

from conftest import FULL_INFO, ok, write_file
from j6doctor.engine import RuleBase, RuleBaseErrors
from j6doctor.facts import vocabulary
from j6doctor.rules import BUNDLED_RULES_DIR

STAGE_FILE = BUNDLED_RULES_DIR / "30_stage_mapping.yaml"


def _stage_table() -> dict:
    data = yaml.safe_load(STAGE_FILE.read_text(encoding="utf-8"))
    return next(t for t in data["tables"] if t["id"] == "stage_mapping")


def _as_list(value) -> list:
    return value if isinstance(value, list) else [value]


def _cases_of(row: dict) -> list[dict]:
    """Cases that put the facts of the row's cells in place: one per value of a `first` cell
    that names several artifacts (any of them)."""
    base = dict(FULL_INFO)
    if row.get("flow"):
        base["flow"] = row["flow"]
    if row.get("short_chain") is True and not row.get("flow"):
        base["flow"] = "ptq"  # a PTQ chain is a short chain
    if row.get("short_chain") is True and row.get("flow") == "qat":
        base["platform"] = "X5"  # QAT on X5 has no qat.bc
    results = {a: ok("normal") for a in _as_list(row.get("normal", []))}
    if row.get("reference") is True:  # the float reference evaluated normal
        results["float"] = ok("normal")
    if row.get("reference") is False:  # no reference: a drop in the symptom would name one
        base["symptom"] = "quantized.bc 在验证集上结果异常"
    if row.get("no_abnormal"):
        results.setdefault("qat_pt", ok("normal"))
        return [{**base, "results": results}]
    return [{**base, "results": {**results, first: ok("abnormal")}} for first in _as_list(row["first"])]


ROWS = [r for r in _stage_table()["rows"] if r.get("cleared") is not True]  # cleared: see the row's example


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_each_stage_table_row_concludes_its_stage_from_its_own_cells(diagnose, row):
    for case in _cases_of(row):
        d = diagnose(case)
        assert row["id"] in d.run.fired_rules(), (row["id"], case)
        assert {f["stage"] for f in d.run.by_type("chain_stage")} == {row["stage"]}, case
        if row.get("next_step"):
            assert row["next_step"] in [s["text"] for s in d.verdict_json["next_steps"]], case


def test_the_stage_table_rows_keep_their_lines_and_table():
    rulebase = RuleBase.load([BUNDLED_RULES_DIR], vocabulary(), {BUNDLED_RULES_DIR: "rules"})
    lines = STAGE_FILE.read_text(encoding="utf-8").splitlines()
    for row in _stage_table()["rows"]:
        rule = rulebase.rule(row["id"])
        assert rule.table == "stage_mapping"
        assert lines[rule.line - 1].lstrip().startswith(f"- {{id: {row['id']},"), rule.line
        assert all(c.line for c in rule.when)


PACK_ROW = """\
title: 本站的映射表补充
seed: 先判断问题落在哪一段（现象-阶段映射表）
tables:
  - extends: stage_mapping
    rows:
      {rows}
    examples:
      {examples}
"""


def _pack(tmp_path: Path, rows: str, examples: str = "{}") -> Path:
    write_file(tmp_path / "pack", "site.yaml", PACK_ROW.format(rows=rows, examples=examples))
    return tmp_path / "pack"


def _load(pack: Path) -> RuleBase:
    return RuleBase.load([BUNDLED_RULES_DIR, pack], vocabulary(), {BUNDLED_RULES_DIR: "rules", pack: "pack"})


def test_a_pack_adds_a_row_by_filling_cells(tmp_path):
    from j6doctor.diagnosis import diagnose as run
    from j6doctor.probes.case_file import case_from_data

    pack = _pack(tmp_path, '- {id: site.board_dump, normal: [quantized_bc, hbm_x86], first: board, cleared: false,\n'
                           '         stage: board, next_step: "本站：先用 hb_verifier 比较板端实际输入的 dump"}',
                 "site.board_dump: [{name: x86 正常、板端异常, case: {results: {quantized_bc: normal, "
                 "hbm_x86: normal, board: abnormal}}, expect: {stage: board}}]")
    rulebase = _load(pack)
    rule = rulebase.rule("site.board_dump")
    assert (rule.file, rule.line, rule.table) == ("pack/site.yaml", 6, "stage_mapping")
    assert [c.describe() for c in rule.when][-1] == "chain_open{}"  # the table's shared condition
    d = run(case_from_data({**FULL_INFO, "results": {"quantized_bc": ok("normal"), "hbm_x86": ok("normal"),
                                                     "board": ok("abnormal")}}), rulebase)
    assert {"site.board_dump", "map.board"} <= d.run.fired_rules() and d.verdict_json["stage"] == "board"
    steps = [s["text"] for s in d.verdict_json["next_steps"]]
    assert "本站：先用 hb_verifier 比较板端实际输入的 dump" in steps


def test_a_pack_row_with_a_bundled_id_replaces_that_row(tmp_path):
    pack = _pack(tmp_path, "- {id: map.qat_training, flow: qat, first: qat_pt, stage: undetermined}")
    rule = _load(pack).rule("map.qat_training")
    assert rule.file == "pack/site.yaml" and rule.overrides.startswith("rules/30_stage_mapping.yaml:")


def test_a_row_that_can_match_with_another_and_concludes_differently_is_refused(tmp_path):
    pack = _pack(tmp_path, "- {id: site.other_convert, normal: qat_bc, first: quantized_bc, stage: export}")
    with pytest.raises(RuleBaseErrors) as caught:
        _load(pack)
    text = str(caught.value)
    assert "pack/site.yaml:6: table 'stage_mapping' (hit: any): rows map.convert (line " in text
    assert "and site.other_convert (line 6) can match the same facts and conclude differently" in text
    assert "hint: make the rows exclusive" in text


TABLE = """\
title: t
seed: s
tables:
  - id: demo
    hit: {hit}
    columns:
      first:  {{when: {{first_abnormal: {{artifact: $}}}}, one: true}}
      normal: {{when: {{confirmed: {{artifact: $, status: normal}}}}}}
    then:
      - chain_stage: {{stage: $stage}}
    rows:
{rows}
"""


@pytest.mark.parametrize("hit, rows, fragment, line", [
    ("unique", "      - {id: a, first: qat_bc, stage: export}\n      - {id: b, first: qat_bc, normal: qat_pt, stage: export}",
     "table 'demo' (hit: unique): rows a (line 12) and b (line 13) can match the same facts", 13),
    ("any", "      - {id: a, first: qat_bc, colour: red, stage: export}",
     "row a: 'colour' is not a column of table 'demo'; columns: first, normal, stage", 12),
    ("maybe", "      - {id: a, first: qat_bc, stage: export}", 'hit: "maybe" is not allowed; allowed: unique, any, collect',
     5),
    ("any", "      - {id: a, first: qat_bc, stage: export}\n      - {id: a, first: qat_pt, stage: export}",
     "row id 'a' repeats in table 'demo'", 13),
])
def test_a_broken_table_names_its_line(tmp_path, hit, rows, fragment, line):
    write_file(tmp_path, "t.yaml", TABLE.format(hit=hit, rows=rows))
    with pytest.raises(RuleBaseErrors) as caught:
        RuleBase.load([tmp_path], vocabulary(), {tmp_path: "p"})
    assert fragment in str(caught.value) and f"p/t.yaml:{line}" in str(caught.value), str(caught.value)


# What engine/rule_schema.json states about a table is checked by the schema alone (not again
# in decision_table.py): each message still names the file, the line, the key and what is expected.
SCHEMA_STATED = {
    "unknown key": (TABLE.format(hit="any", rows="      - {id: a, first: qat_bc, stage: export}").replace(
        "    hit: any\n", "    hit: any\n    colour: red\n"), 6,
        "tables.0.colour: unknown key 'colour' under tables.0 (did you mean 'columns'?); allowed: id, title"),
    "list is each / any / whole": (TABLE.format(hit="any", rows="      - {id: a, first: qat_bc, stage: export}").replace(
        "one: true}", "one: true, list: some}"), 7,
        'columns.first.list: "some" is not allowed; allowed: each, any, whole'),
    "a row without an id": (TABLE.format(hit="any", rows="      - {first: qat_bc, stage: export}"), 12,
                            "rows.0: 'id' is required\n  hint: a row is a mapping with an id and its cells"),
    "no rows": (TABLE.format(hit="any", rows="").replace("    rows:\n", ""), 4,
                "'rows' is required\n  hint: a table has id, columns, then and rows"),
    "a row id with a line break": (TABLE.format(hit="any", rows='      - {id: "a\\n", first: qat_bc, stage: export}'),
                                   12, "rule 'a\\n': id: \"a\\n\" is not a rule id: a letter, then letters"),
    "an extension that redefines": ("tables:\n  - extends: stage_mapping\n    title: mine\n    rows: []\n", 3,
                                    "a table that extends \"stage_mapping\" adds rows (and examples) only; "
                                    "'title' comes from the table it extends"),
}


@pytest.mark.parametrize("label", list(SCHEMA_STATED))
def test_what_the_schema_states_of_a_table_is_refused_with_its_line(tmp_path, label):
    text, line, fragment = SCHEMA_STATED[label]
    write_file(tmp_path, "t.yaml", text)
    with pytest.raises(RuleBaseErrors) as caught:
        RuleBase.load([BUNDLED_RULES_DIR, tmp_path], vocabulary(), {BUNDLED_RULES_DIR: "rules", tmp_path: "p"})
    assert str(caught.value).startswith(f"p/t.yaml:{line}: "), str(caught.value)
    assert fragment in str(caught.value), str(caught.value)


def test_rows_that_differ_in_a_one_column_are_exclusive_under_unique(tmp_path):
    rows = "      - {id: a, first: qat_bc, stage: export}\n      - {id: b, first: quantized_bc, stage: convert}"
    write_file(tmp_path, "t.yaml", TABLE.format(hit="unique", rows=rows))
    rules = RuleBase.load([tmp_path], vocabulary(), {tmp_path: "p"}).rules
    assert [(r.id, r.line, r.table) for r in rules] == [("a", 12, "demo"), ("b", 13, "demo")]


def test_extends_needs_a_table_loaded_before(tmp_path):
    pack = _pack(tmp_path, "- {id: x, first: qat_bc, stage: export}")
    with pytest.raises(RuleBaseErrors) as caught:
        RuleBase.load([pack], vocabulary(), {pack: "pack"})
    assert "extends 'stage_mapping': no such table in the rule files loaded before this one" in str(caught.value)


def test_the_authoring_guides_pack_row_works_as_written(tmp_path):
    guide = (Path(__file__).resolve().parents[1] / "docs" / "AUTHORING.md").read_text(encoding="utf-8")
    block = guide.split("# my_pack/site_rows.yaml\n", 1)[1].split("```", 1)[0]
    write_file(tmp_path / "my_pack", "site_rows.yaml", block)
    rule = RuleBase.load([BUNDLED_RULES_DIR, tmp_path / "my_pack"], vocabulary()).rule("site.board_dump")
    assert rule.table == "stage_mapping" and rule.line == 6
    # as the guide says, the row needs nothing else: the pack lints clean and its example passes
    for command in (("rules", "lint", "--strict", "my_pack"), ("rules", "test", "my_pack")):
        done = subprocess.run([sys.executable, "-m", "j6doctor", *command], cwd=tmp_path, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed, 0 failed" in done.stdout


def test_the_info_gate_table_reads_as_its_rows_say():
    rulebase = RuleBase.load([BUNDLED_RULES_DIR], vocabulary(), {BUNDLED_RULES_DIR: "rules"})
    rule = rulebase.rule("gate.symptom")
    assert rule.table == "info_gate"
    assert [("not " if c.negated else "") + c.describe() for c in rule.when] == [
        "chain_stage{stage∉[qat_training, undetermined, baseline]}",  # list: whole, under not_in
        "not symptom{}",
        "not result{status=abnormal, evidence≠unspecified}",
        "not result{status=abnormal, metric≠}",
        "not failed{}",
    ]
    assert [(c.type, c.fields["item"]) for c in rule.then] == [("missing", "symptom")]
    gate = yaml.safe_load((BUNDLED_RULES_DIR / "60_info_gate.yaml").read_text(encoding="utf-8"))["tables"][0]
    items = {row["item"] for row in gate["rows"]}
    assert items == set(vocabulary().enums["gate_item"].values)  # every gate item has a row, no other
