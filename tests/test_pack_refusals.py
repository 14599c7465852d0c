"""Issue 26, "rule packs that the compiler refuses say nothing": every refusal of a rule pack
names the pack file, the rule id and its line, the limit or the cycle, and what to do, in
`rules lint` and in `diagnose --rules`; and the refusals that used to come late (a conclusion
that copies an empty field into a required one: an internal error when the rule fired) come
when the pack loads. Real packs, real CLI runs, both engines where the limit is common."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import HAS_DURABLE, durable_only, write_file
from j6doctor.engine import RuleBase, RuleBaseError, RuleBaseErrors
from j6doctor.engine.join_growth import MAX_OPEN_CONDITIONS, growth, suspects
from j6doctor.facts import vocabulary
from j6doctor.rules import BUNDLED_RULES_DIR


slow = pytest.mark.slow  # starts `python -m j6doctor` (left out of the inner loop)


def _rule(rid: str, conditions: list[str], then: str = "{finding: {topic: site, text: x}}") -> str:
    return (f"  - id: {rid}\n    title: {rid}\n    when:\n" + "".join(f"      - {c}\n" for c in conditions)
            + f"    then:\n      - {then}\n")


def _pack(tmp_path: Path, *rules: str) -> Path:
    write_file(tmp_path / "pack", "pack.yaml", "seed: site\nrules:\n" + "".join(rules))
    write_file(tmp_path, "case.yaml", "symptom: 量化模型掉点\ntried: [关闭融合, 换 march, 重新校准]\n")
    return tmp_path / "pack"


def _line_of(pack: Path, text: str) -> int:
    lines = (pack / "pack.yaml").read_text(encoding="utf-8").splitlines()
    return next(n for n, line in enumerate(lines, 1) if text in line)


def _run(tmp_path: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if k not in (
        "J6DOCTOR_DEBUG", "J6DOCTOR_ENGINE_PROCESS", "J6DOCTOR_ENGINE_TIMEOUT", "J6DOCTOR_ENGINE_MEMORY_MB")}
    return subprocess.run([sys.executable, "-m", "j6doctor", *args], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env={**full_env, **(env or {})})


def _refused(tmp_path: Path, where: str, fragments: list[str], engine: tuple[str, ...] = ()) -> None:
    """`diagnose --rules pack` exits 2 with the refusal first (file:line: rule id: ...), and
    `rules lint pack` reports it as an error at the same place."""
    proc = _run(tmp_path, "diagnose", "case.yaml", "--rules", "pack", "--no-env", *engine)
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"j6doctor: error: the rule base is invalid:\n{where}: "), proc.stderr[:600]
    for fragment in fragments:
        assert fragment in proc.stderr, proc.stderr[-3000:]
    lint = _run(tmp_path, "rules", "lint", "pack")
    assert lint.returncode == 1 and "Traceback" not in lint.stderr, lint.stdout[-3000:]
    first, _, rest = where.partition(": ")
    assert f"{first}: error: {rest}" in lint.stdout, lint.stdout[-3000:]


# ------------------------------------------------------------------ durable-rules' fixed tables

@slow
@durable_only
def test_an_in_list_of_511_values_names_the_rule_its_count_and_the_limit(tmp_path):
    values = ", ".join(f"v{i}" for i in range(511))
    pack = _pack(tmp_path, _rule("site.big", [f"symptom: {{text: {{in: [{values}]}}}}"]))
    _refused(tmp_path, f"pack/pack.yaml:{_line_of(pack, 'id: site.big')}: rule site.big",
             ["511 different tests on the same condition prefix", "(most of them in site.big (511))",
              "durable-rules hangs at 512 (limit used here: 500)",
              "hint: test a coarser field (compute a category upstream)"], ("--engine", "durable"))


JOIN = "{tried_fix: {text: {ne: {ref: s.text}}}}"


@slow
@durable_only
def test_61_pack_rules_joining_on_one_node_are_blamed_on_the_pack_not_on_a_bundled_rule(tmp_path):
    """61 conditions that compare with another fact end on the node of `tried_fix`: the
    message names the pack rule that crossed the limit and the pack file with how many of
    its rules are involved (it used to name rules/55_artifact_readings.yaml)."""
    pack = _pack(tmp_path, *(_rule(f"site.j{i}", ["{symptom: {}, as: s}", JOIN]) for i in range(61)))
    _refused(tmp_path, f"pack/pack.yaml:{_line_of(pack, 'id: site.j60')}: rule site.j60",
             ["61 range / inequality / join tests can match one fact at once under {\"type\": \"tried_fix\"}",
              "durable-rules fails above 64 (limit used here: 60)", "rules involved: 61 in pack/pack.yaml (site.j0,",
              "hint: replace ladders of thresholds", "an equality test of their own"], ("--engine", "durable"))


@slow
@durable_only
def test_60_rules_joining_on_one_node_load_and_run(tmp_path):
    _pack(tmp_path, *(_rule(f"site.j{i}", ["{symptom: {}, as: s}", JOIN]) for i in range(60)))
    proc = _run(tmp_path, "diagnose", "case.yaml", "--rules", "pack", "--no-env", "--engine", "durable",
                "--format", "json")
    assert proc.returncode == 0, proc.stderr[-2000:]


# ------------------------------------------------------------------ the schema's limits, every engine

@slow
def test_a_contains_word_of_2000_letters_names_the_limit(tmp_path):
    pack = _pack(tmp_path, _rule("site.long", ["symptom: {text: {contains: " + "a" * 2000 + "}}"]))
    _refused(tmp_path, f"pack/pack.yaml:{_line_of(pack, 'contains:')}: rule site.long",
             ["when.0.symptom.text: `contains` takes at most 200 characters; this one has 2000",
              "hint: test for a shorter, distinctive word"])


@pytest.mark.parametrize("label, rule, key, fragment", [
    ("rule id", _rule('"site.trailing\\n"', ["symptom: {}"]), "id:",
     "rule 'site.trailing\\n': id: \"site.trailing\\n\" is not a rule id: a letter, then letters, digits"),
    ("contains word", _rule("site.word", ['symptom: {text: {contains: "layout\\n"}}']), "contains:",
     'rule site.word: when.0.symptom.text: `contains`: "layout\\n" is not a word found in a text field'),
])
def test_a_trailing_line_break_is_refused(tmp_path, label, rule, key, fragment):
    """JSON Schema's `$` lets Python accept a final line break; the schema's patterns end at
    the very end of the text."""
    pack = _pack(tmp_path, rule)
    with pytest.raises(RuleBaseErrors) as caught:
        RuleBase.load([pack], vocabulary(), {pack: "pack"})
    text = str(caught.value)
    assert text.startswith(f"pack/pack.yaml:{_line_of(pack, key)}: "), text
    assert fragment in text and "(it ends in a line break)" in text, text


def test_the_schema_patterns_hold_in_python_and_in_editors():
    """The patterns end in `$(?!\\n)`: the end of the text in Python's `re` (jsonschema) and in
    the ECMA regular expressions of editors (the exported schema), where `\\Z` is a letter."""
    import re

    from j6doctor.engine import rule_file_schema

    text = str(rule_file_schema())
    patterns = re.findall(r"'pattern': '([^']*)'", text)
    assert patterns and all(p.endswith("$(?!\\\\n)") for p in patterns), patterns
    assert "\\\\Z" not in text
    identifier = rule_file_schema()["$defs"]["identifier"]["pattern"]
    assert re.search(identifier, "site.x") and not re.search(identifier, "site.x\n")


# ------------------------------------------------------------------ negation through a cycle

@slow
def test_an_override_that_negates_its_own_output_names_itself(tmp_path):
    pack = _pack(tmp_path, _rule("chain.open", ["not: {chain_open: {}}"], "{chain_open: {}}"))
    _refused(tmp_path, "pack/pack.yaml:3: rule chain.open: when",
             ["negation through a cycle: chain.open (pack/pack.yaml:3) negates 'chain_open', which chain.open "
              "itself concludes", "hint: a rule may only say `not: <type>` of types that do not depend on what it "
              "concludes"])


def test_a_pack_rule_closing_a_cycle_through_bundled_rules_is_blamed_with_the_cycle(tmp_path):
    pack = _pack(tmp_path, _rule("site.loop", ["{verdict: {}}"],
                                 "{conflict: {upstream: qat_bc, downstream: quantized_bc, reason: x}}"))
    with pytest.raises(RuleBaseErrors) as caught:
        RuleBase.load([BUNDLED_RULES_DIR, pack], vocabulary(), {BUNDLED_RULES_DIR: "rules", pack: "pack"})
    (error,) = caught.value.errors
    assert (error.file, error.line, error.rule_id) == ("pack/pack.yaml", 3, "site.loop")
    assert error.message.startswith("negation through a cycle: chain.open (rules/30_stage_mapping.yaml:14) "
                                    "negates 'conflict', which site.loop (pack/pack.yaml:3) concludes; "
                                    "it reads 'verdict', which verdict."), error.message
    assert error.message.endswith("which chain.open itself concludes: whether a rule of the cycle holds would "
                                  "depend on its own conclusion"), error.message


# ------------------------------------------------------------------ conclusions that would fail when they fire

ORDER_FROM = "{next_step: {order: {ref: r.value}, text: 先复核该产物的评测}}"
ORDER_FROM_VERSION = "{next_step: {order: {ref: v.number}, text: 按版本号排序}}"


@slow
def test_copying_a_field_that_can_be_empty_into_a_required_one_is_refused_at_load(tmp_path):
    """It was `a rule action failed: ... next_step.order: a value is required`, exit 1, when
    the rule fired on a result without a value."""
    pack = _pack(tmp_path, _rule("site.order", ["{version: {}, as: v}"], ORDER_FROM_VERSION))
    _refused(tmp_path, f"pack/pack.yaml:{_line_of(pack, 'next_step:')}: rule site.order: next_step.order",
             ["a required field, but it copies v.number, which can be empty (neither required nor defaulted in "
              "'version', and no condition tests that it is filled)",
              "hint: test it in the condition that binds v (e.g. `number: {ne: null}`), or give next_step.order"])


def test_a_number_into_a_whole_number_field_is_refused_at_load(tmp_path):
    pack = _pack(tmp_path, _rule("site.order", ["{result: {value: {ge: 0}}, as: r}"], ORDER_FROM))
    with pytest.raises(RuleBaseErrors, match=r"rule site.order: next_step.order: next_step.order \(int\) cannot "
                                             r"take r.value \(number\)"):
        RuleBase.load([pack], vocabulary(), {pack: "pack"})


@pytest.mark.parametrize("test", ["{ne: null}", "{ge: 0}", "{in: [1, 2]}"])
def test_a_copy_the_conditions_make_sure_is_filled_loads(tmp_path, test):
    pack = _pack(tmp_path, _rule("site.rank", [f"{{version: {{number: {test}}}, as: v}}"], ORDER_FROM_VERSION))
    rule = RuleBase.load([pack], vocabulary(), {pack: "pack"}).rule("site.rank")
    assert rule.then[0].fields["order"].field == "number"


# ------------------------------------------------------------------ joins that grow before they run

def _self_join(count: int, tied: bool = False) -> str:
    conditions = ["{tried_fix: {}, as: t0}"] + [
        ("{tried_fix: {text: {ref: t0.text}}}" if tied else "{tried_fix: {text: {contains: fix}}}")
        for _ in range(count - 1)]
    return _rule("site.fixes", conditions)


@pytest.mark.parametrize("count, tied, warned", [(16, False, True), (MAX_OPEN_CONDITIONS + 1, False, True),
                                                  (MAX_OPEN_CONDITIONS, False, False), (16, True, False)])
@slow
def test_lint_warns_of_a_join_that_grows_combinatorially(tmp_path, count, tied, warned):
    pack = _pack(tmp_path, _self_join(count, tied))
    lint = _run(tmp_path, "rules", "lint", "pack")
    flagged = [line for line in lint.stdout.splitlines() if "its join can grow combinatorially" in line]
    assert bool(flagged) == warned, lint.stdout
    if warned:
        assert flagged[0].startswith("pack/pack.yaml:3: warning: rule site.fixes: its join can grow "
                                     f"combinatorially: {count} conditions on 'tried_fix' that no equality"), flagged
        assert f"over 20 tried_fix facts the engine can hold up to {growth_of(pack).matches():,} partial" in flagged[0]
        assert "hint: tie the conditions on tried_fix to each other with equalities" in lint.stdout


def growth_of(pack: Path):
    return growth(RuleBase.load([pack], vocabulary(), {pack: "pack"}).rule("site.fixes"))


def test_the_bundled_rules_have_no_join_lint_warns_of():
    rules = RuleBase.load([BUNDLED_RULES_DIR], vocabulary(), {BUNDLED_RULES_DIR: "rules"}).rules
    assert max((g.open for g in map(growth, rules) if g), default=0) <= MAX_OPEN_CONDITIONS


def test_the_rule_to_simplify_after_the_memory_cap_is_the_growing_join_even_with_literal_tests(tmp_path):
    """What the worker names when the engine runs out of memory (engine/worker.py: its suspects):
    a pack rule whose 16 conditions each test a literal list still joins 20 facts openly;
    the bundled rules' small joins are not named beside it."""
    values = ", ".join(f'"fix {i}"' for i in range(20))
    pack = _pack(tmp_path, _rule("site.sixteen", [f"{{tried_fix: {{text: {{in: [{values}]}}}}}}"] * 16))
    rules = RuleBase.load([BUNDLED_RULES_DIR, pack], vocabulary(), {BUNDLED_RULES_DIR: "rules", pack: "pack"}).rules
    assert suspects(rules) == "; most likely site.sixteen (pack/pack.yaml:3: 16 conditions on tried_fix joined with each other)"


@slow
def test_a_pack_rule_past_the_memory_cap_is_named_with_its_file_and_line(tmp_path):
    values = ", ".join(f'"fix {i}"' for i in range(20))
    _pack(tmp_path, _rule("site.sixteen", [f"{{tried_fix: {{text: {{in: [{values}]}}}}}}"] * 16))
    write_file(tmp_path, "case.yaml", "symptom: x\ntried: [" + ", ".join(f'"fix {i}"' for i in range(20)) + "]\n")
    proc = _run(tmp_path, "diagnose", "case.yaml", "--rules", "pack", "--no-env",
                env={"J6DOCTOR_ENGINE_MEMORY_MB": "400"})
    assert proc.returncode == 2 and "ran out of its 400 MB" in proc.stderr, proc.stderr[-2000:]
    assert "most likely site.sixteen (pack/pack.yaml:3: 16 conditions on tried_fix" in proc.stderr, proc.stderr


# ------------------------------------------------------------------ the errors themselves

def test_rule_base_errors_survive_a_process_boundary():
    """A process pool sends an exception back pickled: the errors keep file, line, rule and hint."""
    errors = RuleBaseErrors([RuleBaseError("61 tests", file="pack/pack.yaml", line=483, rule_id="site.j60",
                                           field="when", hint="merge them")])
    back = pickle.loads(pickle.dumps(errors))
    assert str(back) == str(errors) == "pack/pack.yaml:483: rule site.j60: when: 61 tests\n  hint: merge them"
    assert [(e.file, e.line, e.rule_id) for e in back.errors] == [("pack/pack.yaml", 483, "site.j60")]


@slow
def test_refusals_come_without_durable_rules_too(tmp_path):
    """Where durable-rules is not installed, the refusals that are the pack's own (schema,
    cycles, copies) are the same: nothing above depends on the engine but its fixed tables."""
    engine = ("--engine", "clips") if HAS_DURABLE else ()
    _pack(tmp_path, _rule("site.order", ["{version: {}, as: v}"], ORDER_FROM_VERSION))
    proc = _run(tmp_path, "diagnose", "case.yaml", "--rules", "pack", "--no-env", *engine)
    assert proc.returncode == 2 and "rule site.order: next_step.order: a required field" in proc.stderr, proc.stderr


# ------------------------------------------------------------------ text patterns: term classes, one line

TEXT_RULE = """\
seed: site
rules:
  - id: site.text
    title: a text rule
    match: [{pattern}]
    then:
      - text_fact: {{topic: layout, kind: stated, item: layout}}
"""


def _lint_text(tmp_path, pattern: str):
    write_file(tmp_path / "pack", "pack.yaml", TEXT_RULE.format(pattern=pattern))
    return _run(tmp_path, "rules", "lint", "pack")


def test_a_regular_expression_as_a_text_pattern_is_refused_with_what_is_expected(tmp_path):
    proc = _lint_text(tmp_path, "'(x+x+)+y'")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr + proc.stdout
    out = proc.stdout + proc.stderr
    assert "pack/pack.yaml:5" in out and "site.text" in out
    assert "unexpected '(x+x+)+y' at character 1: a text pattern is term classes" in out


def test_a_text_pattern_longer_than_a_line_is_refused(tmp_path):
    long = "'{layout} " + "… {layout} " * 14 + "'"
    proc = _lint_text(tmp_path, long)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "pack/pack.yaml:5" in out and "site.text" in out
    assert "at most 120 characters" in out


def test_an_unknown_term_class_or_value_is_refused_naming_the_classes(tmp_path):
    out = _lint_text(tmp_path, "'{layoutt} … {wrongness}'").stdout
    assert "unknown term class {layoutt}" in out and "facts/text_terms.yaml" in out
    out = _lint_text(tmp_path, "'{~layout=nchwx} … {wrongness}'").stdout
    assert "{layout=nchwx}: no such value of layout (values: nchw, nhwc)" in out


def test_two_text_rules_with_the_same_statement_are_warned(tmp_path):
    write_file(tmp_path / "pack", "pack.yaml", TEXT_RULE.format(pattern="'{~topic=layout} {~wrongness}'"))
    write_file(tmp_path / "pack", "twin.yaml", TEXT_RULE.format(pattern="'{~topic=layout}  {~wrongness}'")
               .replace("site.text", "site.twin"))
    out = _run(tmp_path, "rules", "lint", "pack").stdout
    assert "rule site.twin: its pattern '{~topic=layout}  {~wrongness}' is also a pattern of site.text" in out


def test_no_bundled_text_pattern_is_longer_than_a_line(rulebase):
    from j6doctor.engine.tag_patterns import MAX_PATTERN_LENGTH

    sources = [p.source for r in rulebase.rules if r.text for p in r.text.match + r.text.unless]
    assert sources and max(len(s) for s in sources) <= MAX_PATTERN_LENGTH
