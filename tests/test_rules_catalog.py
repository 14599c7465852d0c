"""`j6doctor rules list`, `rules show ID` and `rules test -k PATTERN` (app/rule_catalog.py):
the rules as their author reads them, checked against the loaded rule base itself."""

from __future__ import annotations

import json

PACK = """\
seed: 站点规则
rules:
  - id: site.convert_note
    title: 站点对 convert 的补充说明
    when:
      - verdict: {stage: convert}
        as: v
      - not: {platform: {series: X3}}
    then: [{finding: {topic: site, text: "site note on ${v.stage}"}}]
    examples:
      - name: convert 案例
        case: {results: {qat_bc: normal, quantized_bc: abnormal}}
"""


def _pack(tmp_path):
    folder = tmp_path / "pack"
    folder.mkdir()
    (folder / "site.yaml").write_text(PACK, encoding="utf-8")
    return folder


def test_list_names_every_rule_of_the_rule_base_with_its_place(cli, rulebase):
    proc = cli("rules", "list", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    entries = json.loads(proc.stdout)
    rules = rulebase.with_examples().rules  # (a diagnosis's rule base leaves the examples out)
    assert [e["id"] for e in entries] == [r.id for r in rules]
    by_id = {r.id: r for r in rules}
    for entry in entries:
        rule = by_id[entry["id"]]
        assert (entry["title"], entry["seed"], entry["file"], entry["line"], entry["examples"]) == (
            rule.title, rule.seed, rule.file, rule.line, len(rule.examples))
        assert entry["kind"] == ("text" if rule.text is not None else "fact")
    text = cli("rules", "list").stdout.splitlines()
    assert text[-1] == f"{len(rulebase.rules)} rule(s)"
    first = rulebase.rules[0]
    assert text[0].startswith(first.id) and f"{first.file}:{first.line}" in text[0] and first.title in text[0]


def test_list_with_a_pack_and_a_pattern(cli, tmp_path, rulebase):
    folder = _pack(tmp_path)
    proc = cli("rules", "list", str(folder), "-k", "site.")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-1] == "1 rule(s)" and lines[0].startswith("site.convert_note")
    assert "pack/site.yaml:3" in lines[0] and "[站点规则]" in lines[0]
    globbed = json.loads(cli("rules", "list", "-k", "chain.*", "--format", "json").stdout)
    assert [e["id"] for e in globbed] == [r.id for r in rulebase.rules if r.id.startswith("chain.")]


def test_show_gives_conditions_conclusions_examples_and_the_rules_around_it(cli, tmp_path, rulebase):
    folder = _pack(tmp_path)
    proc = cli("rules", "show", "site.convert_note", str(folder))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("site.convert_note: 站点对 convert 的补充说明\n")
    assert "    verdict{stage=convert}  as v  (line 6)" in out
    assert "    not platform{series=X3}  (line 8)" in out
    assert "    finding{topic=site, text=site note on ${v.stage}}  (line 9)" in out
    assert "    fires: convert 案例  (line 11)" in out
    producers = sorted(r.id for r in rulebase.rules if r.produces() & {"verdict", "platform"})
    fed_by = next(line for line in out.splitlines() if line.startswith("  fed by: "))
    assert fed_by == "  fed by: " + ", ".join(producers)

    shown = json.loads(cli("rules", "show", "chain.first_abnormal", "--format", "json").stdout)
    rule = next(r for r in rulebase.rules if r.id == "chain.first_abnormal")
    assert [c["condition"] for c in shown["when"]] == [("not " if c.negated else "") + c.describe() for c in rule.when]
    assert shown["read_by"] == sorted(r.id for r in rulebase.rules if r.id != rule.id
                                      and "first_abnormal" in r.consumes() | r.negates())
    assert shown["read_by"] and shown["fed_by"]


def test_show_of_an_unknown_id_suggests_the_closest(cli):
    proc = cli("rules", "show", "chain.first_abnormel")
    assert proc.returncode == 2 and proc.stdout == ""
    assert "no rule with id 'chain.first_abnormel'; did you mean chain.first_abnormal" in proc.stderr


def test_rules_test_k_runs_only_the_matching_rules(cli, tmp_path):
    folder = _pack(tmp_path)
    proc = cli("rules", "test", str(folder), "-k", "site.")
    assert proc.returncode == 0, proc.stdout[-2000:]
    table = proc.stdout.split("fired by any  decided", 1)[1].strip().splitlines()
    assert table[0].split()[0] == "site.convert_note" and len(table) == 2
    assert table[-1].startswith("1 passed, 0 failed; 1/1 rules fired by their examples; conditions decided")
    none = cli("rules", "test", "-k", "no.such.rule")
    assert none.returncode == 2 and "-k no.such.rule: no rule id matches" in none.stderr


COVERED_PACK = """\
title: t
seed: s
rules:
  - id: site.board_note
    title: 板端异常而清单未检查
    when:
      - result: {artifact: board, status: abnormal}
      - not:
          checklist_item: {}
    then:
      - finding: {topic: site, text: 先做部署侧清单}
    examples:
      - name: 板端异常
        case: {results: {board: abnormal}}
      - name: 清单已检查（only the guard blocks)
        fires: false
        case: {results: {board: abnormal}, deployment: {checklist: {layout: ok}}}
"""


def test_rules_test_of_a_pack_reports_its_rules_their_conditions_and_formats(cli, tmp_path):
    from conftest import write_file

    write_file(tmp_path / "pack", "site.yaml", COVERED_PACK)
    proc = cli("rules", "test", "pack", "--coverage")
    assert proc.returncode == 0, proc.stdout
    table = proc.stdout.split("fired by any  decided", 1)[1].strip().splitlines()
    assert table[0].split() == ["site.board_note", "2", "1", "1", "1/2"]  # only the pack's rule
    assert "  pack/site.yaml:7: site.board_note: result{artifact=board, status=abnormal}" in proc.stdout
    assert "not checklist_item{}" not in proc.stdout.split("no example decides", 1)[1]  # the guard is decided
    assert proc.stdout.rstrip().endswith("conditions decided by an example: 1/2 (50.0%)")
    assert cli("rules", "test", "pack", "--min-coverage", "60").returncode == 1
    assert cli("rules", "test", "pack", "--min-coverage", "50").returncode == 0

    import json

    data = json.loads(cli("rules", "test", "pack", "--format", "json").stdout)
    assert data["condition_coverage"] == {"decided": 1, "conditions": 2, "percent": 50.0}
    assert [r["rule"] for r in data["rules"]] == ["site.board_note"] and data["failed"] == 0
    assert data["rules"][0]["undecided"] == [{"line": 7, "condition": "result{artifact=board, status=abnormal}"}]

    import xml.etree.ElementTree as ET

    proc = cli("rules", "test", "pack", "--format", "junit", "-o", "report.xml")
    root = ET.parse(tmp_path / "report.xml").getroot()
    cases = root.findall("./testsuite/testcase")
    assert root.find("testsuite").get("name") == "pack/site.yaml"
    assert [(c.get("classname"), c.get("line")) for c in cases] == [("site.board_note", "13"), ("site.board_note", "15")]
    assert root.find("testsuite").get("failures") == "0"
    everything = cli("rules", "test", "pack", "--all", "-k", "map.convert")
    assert "map.convert " in everything.stdout and "site.board_note" not in everything.stdout


def test_rules_new_scaffolds_a_rule_whose_test_fails_until_written(cli, tmp_path):
    made = cli("rules", "new", "pack", "site.board_first", "--title", "板端先查清单")
    assert made.returncode == 0 and "wrote pack/site_board_first.yaml" in made.stdout
    assert cli("rules", "lint", "pack").returncode == 0
    tested = cli("rules", "test", "pack")
    assert tested.returncode == 1
    assert "FAIL pack/site_board_first.yaml:16 site.board_first: TODO a case that fires the rule" in tested.stdout
    assert "blocked at line 10: result{artifact=quantized_bc, status=abnormal} — no fact matches" in tested.stdout
    path = tmp_path / "pack" / "site_board_first.yaml"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("case: {}", "case: {results: {quantized_bc: abnormal}}"), encoding="utf-8")
    assert cli("rules", "test", "pack").returncode == 0  # written: it passes
    again = cli("rules", "new", "pack", "site.board_first")
    assert again.returncode == 2 and "exists; choose another id" in again.stderr
    assert path.read_text(encoding="utf-8") != text  # not overwritten
    bad = cli("rules", "new", "pack", "9bad id")
    assert bad.returncode == 2 and "a rule id starts with a letter" in bad.stderr
