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
    assert [e["id"] for e in entries] == [r.id for r in rulebase.rules]
    by_id = {r.id: r for r in rulebase.rules}
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
    table = proc.stdout.split("fired by any", 1)[1].strip().splitlines()
    assert table[0].split()[0] == "site.convert_note" and len(table) == 2
    assert table[-1] == "1 passed, 0 failed; 1/1 rules fired by their examples"
    none = cli("rules", "test", "-k", "no.such.rule")
    assert none.returncode == 2 and "-k no.such.rule: no rule id matches" in none.stderr
