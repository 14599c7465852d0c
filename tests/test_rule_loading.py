"""Broken rule files: every error names the file, the line, the rule id and, where useful, a fix."""

from __future__ import annotations

import textwrap

import pytest

from j6doctor.engine import RuleBase, RuleBaseErrors
from j6doctor.facts import vocabulary
from j6doctor.rules import BUNDLED_RULES_DIR

GOOD = """\
seed: test
rules:
  - id: ok
    title: fine
    when:
      - result: {artifact: qat_bc, status: normal}
    then:
      - finding: {topic: t, text: fine}
"""

EXAMPLE_FACTS = """\
      - finding: {topic: t, text: fine}
    examples:
      - case: {}
        facts:
          - %s
"""

UNREAD = """\
seed: test
rules:
  - id: left
    title: what no other rule read
    unread: [status=abnormal, status=normal]
    then:
      - text_unread: {terms: x}
"""

BROKEN = [
    ("a class listed twice in unread", UNREAD, 5, ["unread: status is listed twice", "status=value1|value2"]),
    ("unknown fact type", GOOD.replace("- result:", "- resalt:"), 6, ["unknown fact type 'resalt'", "did you mean 'result'"]),
    ("unknown field", GOOD.replace("artifact: qat_bc", "artefact: qat_bc"), 6, ["no field 'artefact'", "did you mean 'artifact'"]),
    ("bad enum value", GOOD.replace("artifact: qat_bc", "artifact: qat_bcc"), 6, ["'qat_bcc' is not one of", "did you mean 'qat_bc'"]),
    ("wrong literal type", GOOD.replace("status: normal", "pos: high"), 6, ["expected an integer"]),
    ("unknown operator", GOOD.replace("status: normal", "pos: {between: 3}"), 6, ["not a valid test", "hint:"]),
    ("unknown rule key", GOOD.replace("    title: fine\n", "    title: fine\n    whne: []\n"), 5, ["unknown key 'whne'", "did you mean 'when'"]),
    ("missing then", GOOD.replace("    then:\n      - finding: {topic: t, text: fine}\n", ""), 3, ["'then' is required"]),
    ("input type in then", GOOD.replace("- finding: {topic: t, text: fine}", "- symptom: {text: x}"), 8, ["input fact type"]),
    ("missing required field", GOOD.replace("{topic: t, text: fine}", "{topic: t}"), 8, ["needs field 'text'"]),
    ("unknown alias", GOOD.replace("text: fine", "text: {ref: x.artifact}"), 8, ["unknown alias 'x'", "bind it with `as:`"]),
    ("ref to a later alias", GOOD.replace("status: normal}", "pos: {ref: a.pos}}\n        as: a"), 6, ["unknown alias 'a'"]),
    ("no seed", GOOD.replace("seed: test\n", ""), 2, ["names the seed section"]),
    ("not YAML", "rules: [\n", 2, ["not valid YAML"]),
    ("placeholder without alias", GOOD.replace("text: fine", 'text: "value ${value}"'), 8,
     ["'${value}' is no placeholder", "${alias.field}"]),
    ("unclosed placeholder", GOOD.replace("text: fine", 'text: "value ${a.value"'), 8, ["'${a.value' is no placeholder"]),
    ("ordering with null", GOOD.replace("status: normal", "value: {lt: null}"), 6, ["operator lt needs a number, not null"]),
    ("not a mapping", "- a\n", 1, ["must be a mapping"]),
    ("example fact of a derived type", GOOD.replace("      - finding: {topic: t, text: fine}\n",
     EXAMPLE_FACTS % "finding: {topic: t, text: x}"), 12, ["'finding' is no input fact type", "input fact types:"]),
    ("example fact with an unknown field", GOOD.replace("      - finding: {topic: t, text: fine}\n",
     EXAMPLE_FACTS % "result: {artifact: qat_bc, status: normal, colour: red}"), 12, ["has no field 'colour'"]),
    ("example fact with a bad value", GOOD.replace("      - finding: {topic: t, text: fine}\n",
     EXAMPLE_FACTS % "result: {artifact: qat_bcc, status: normal}"), 12, ["result.artifact"]),
]


@pytest.mark.parametrize("name,text,line,fragments", BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_rule_file(tmp_path, name, text, line, fragments):
    (tmp_path / "pack.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(RuleBaseErrors) as info:
        RuleBase.load([tmp_path], vocabulary())
    message = str(info.value)
    assert f"pack.yaml:{line}" in message, message
    for fragment in fragments:
        assert fragment in message, message


def test_duplicate_id_in_one_pack(tmp_path):
    body = GOOD + GOOD.split("rules:\n")[1]
    (tmp_path / "pack.yaml").write_text(body, encoding="utf-8")
    with pytest.raises(RuleBaseErrors, match="duplicate rule id"):
        RuleBase.load([tmp_path], vocabulary())


def test_pack_overrides_bundled_rule_by_id(tmp_path):
    text = textwrap.dedent("""\
        seed: 先判断问题落在哪一段
        rules:
          - id: next.convert
            title: site-specific convert steps
            when:
              - verdict: {stage: convert}
            then:
              - next_step: {order: 20, text: "site step"}
    """)
    (tmp_path / "site.yaml").write_text(text, encoding="utf-8")
    rb = RuleBase.load([BUNDLED_RULES_DIR, tmp_path], vocabulary())
    rule = rb.rule("next.convert")
    assert rule.title == "site-specific convert steps" and rule.overrides.endswith("80_next_steps.yaml:" + str(rule.overrides.split(":")[-1]))


def test_rule_files_are_yaml_or_yml_in_any_case_and_subfolders_are_not_rules(tmp_path):
    def pack_rule(rid: str) -> str:
        return (f"seed: t\nrules:\n  - id: {rid}\n    title: {rid}\n    when:\n      - symptom: {{}}\n"
                "    then:\n      - finding: {topic: t, text: x}\n")
    (tmp_path / "a.yaml").write_text(pack_rule("site.a"), encoding="utf-8")
    (tmp_path / "b.yml").write_text(pack_rule("site.b"), encoding="utf-8")
    (tmp_path / "c.YAML").write_text(pack_rule("site.c"), encoding="utf-8")
    (tmp_path / "fixtures").mkdir()
    (tmp_path / "fixtures" / "d.yaml").write_text(pack_rule("site.d"), encoding="utf-8")
    (tmp_path / "README.txt").write_text("not a rule file", encoding="utf-8")
    rb = RuleBase.load([tmp_path], vocabulary())
    assert sorted(r.id for r in rb.rules) == ["site.a", "site.b", "site.c"]


def test_bundled_rules_load_and_have_metadata():
    rb = RuleBase.load([BUNDLED_RULES_DIR], vocabulary()).with_examples()
    assert len(rb.rules) >= 50
    for rule in rb.rules:
        assert rule.title and rule.seed, rule.id
        assert rule.examples, f"{rule.id} has no example case"


def test_exponent_numbers_are_numbers_in_tests(tmp_path):
    """YAML 1.1 reads `1e-05` as text; a rule author means the number (as YAML 1.2 does)."""
    text = GOOD.replace("status: normal}", "value: {lt: 1e-05}}").replace(
        "      - finding", "      - result: {value: {in: [5E+3, 2.5e-7]}}\n    then:\n      - finding", 1)
    text = text.replace("    then:\n      - result", "      - result", 1)
    (tmp_path / "r.yaml").write_text(text, encoding="utf-8")
    rb = RuleBase.load([tmp_path], vocabulary())
    (rule,) = [r for r in rb.compiled.rules if r.id == "ok"]
    assert [t.value for c in rule.when for t in c.tests if t.field == "value"] == [1e-05, [5000.0, 2.5e-07]]


@pytest.mark.parametrize("text, line, rule_id", [
    # a YAML-level refusal (no rule is built) still names the rule whose entry holds the line
    ("seed: &s t\nrules:\n  - id: site.one\n    title: one\n  - id: site.two\n    title: *s\n", 6, "site.two"),
    ("seed: t\nrules:\n  - id: site.one\n    title: one\n    title: again\n", 5, "site.one"),
    # an entry that does not start with its id, or a header line: no rule is guessed
    ("seed: &s t\nrules:\n  - id: site.one\n    title: one\n  - title: *s\n    id: site.two\n", 5, None),
    ("seed: t\nseed: u\nrules: []\n", 2, None),
])
def test_a_yaml_refusal_names_the_rule_around_its_line(tmp_path, text, line, rule_id):
    (tmp_path / "pack.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(RuleBaseErrors) as info:
        RuleBase.load([tmp_path], vocabulary())
    (error,) = info.value.errors
    assert (error.line, error.rule_id) == (line, rule_id)


def test_a_cached_rule_base_holds_no_examples_until_asked(tmp_path, monkeypatch):
    """A diagnosis never reads the rules' examples: the cached rule base leaves them out (less
    to load on every run) and with_examples() brings them back, the same as parsed; using
    them before is an error, never an empty list."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("J6DOCTOR_CACHE", raising=False)
    parsed = {r.id: r.examples for r in RuleBase.load([BUNDLED_RULES_DIR], vocabulary()).with_examples().rules}
    for _ in range(2):  # built (and cached), then from the cache
        rb = RuleBase.load([BUNDLED_RULES_DIR], vocabulary())
        with pytest.raises(RuntimeError, match="with_examples"):
            len(rb.rules[0].examples)
        assert {r.id: r.examples for r in rb.with_examples().rules} == parsed
    for entry in (tmp_path / "cache" / "j6doctor").glob("examples-*.pickle"):
        entry.unlink()  # an examples entry pruned: read from the rule files again
    rb = RuleBase.load([BUNDLED_RULES_DIR], vocabulary())
    assert {r.id: r.examples for r in rb.with_examples().rules} == parsed
