"""The engine on its own, with a made-up vocabulary: it knows nothing of the J6 domain.
Real durable-rules runs; no mocks."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

from conftest import durable_only
from j6doctor.engine import Fact, RuleBase, RuleBaseErrors, Source, Vocabulary, EngineRunError, VocabularyError

VOCAB = Vocabulary.from_data({
    "enums": {"color": {"values": {"red": {"label": "红"}, "green": {"label": "绿"}, "blue": {}}}},
    "types": {
        "item": {"origin": "input", "fields": {
            "name": {"type": "str", "required": True}, "rank": {"type": "int", "required": True},
            "color": {"type": "enum", "enum": "color", "default": "red"}}},
        "seen": {"origin": "derived", "fields": {"name": {"type": "str", "required": True},
                                                  "rank": {"type": "int", "default": 0}}},
        "first": {"origin": "derived", "fields": {"name": {"type": "str", "required": True}}},
        "note": {"origin": "derived", "fields": {"text": {"type": "str", "required": True},
                                                  "color": {"type": "enum", "enum": "color", "default": "red"}}},
        "pair": {"origin": "derived", "fields": {"low": {"type": "str", "required": True},
                                                  "high": {"type": "str", "required": True}}},
    },
})


def rules_dir(tmp_path, text, name="r.yaml"):
    folder = tmp_path / "rules"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return folder


def items(*specs):
    return [Fact(f"f{i}", "item", VOCAB.complete("item", {"name": n, "rank": r, **extra}), Source("user"))
            for i, (n, r, extra) in enumerate(specs, 1)]


def load(tmp_path, text):
    return RuleBase.load([rules_dir(tmp_path, text)], VOCAB)


CHAIN = """
seed: test
rules:
  - id: see
    title: every item is seen
    when:
      - item: {}
        as: i
    then:
      - seen: {name: {ref: i.name}, rank: {ref: i.rank}}
  - id: first
    title: the seen item with the lowest rank
    when:
      - seen: {}
        as: s
      - not:
          seen: {rank: {lt: {ref: s.rank}}}
    then:
      - first: {name: {ref: s.name}}
  - id: nothing
    title: no blue item
    when:
      - not:
          item: {color: blue}
    then:
      - note: {text: "no blue"}
  - id: pairs
    title: ordered pairs of items
    when:
      - item: {}
        as: a
      - item: {rank: {gt: {ref: a.rank}}, color: {in: [red, green]}}
        as: b
    then:
      - pair: {low: {ref: a.name}, high: "${b.name} (${b.color|label})"}
"""


@pytest.mark.parametrize("order", [[3, 1, 2], [1, 2, 3], [2, 3, 1]])
def test_forward_chaining_negation_and_joins(tmp_path, order):
    rb = load(tmp_path, CHAIN)
    ranks = {"a": 3, "b": 1, "c": 2}
    names = {3: "a", 1: "b", 2: "c"}
    specs = [(names[r], r, {"color": "green" if r == 2 else "red"}) for r in order]
    result = rb.run(items(*specs))
    assert [f["name"] for f in result.by_type("first")] == ["b"]
    assert [f["text"] for f in result.by_type("note")] == ["no blue"]
    pairs = sorted((f["low"], f["high"]) for f in result.by_type("pair"))
    assert pairs == [("b", "a (红)"), ("b", "c (绿)"), ("c", "a (红)")]
    (first,) = result.by_type("first")
    (seen_b,) = [f for f in result.by_type("seen") if f["name"] == "b"]
    assert first.derivation.rule == "first" and first.derivation.premises == (seen_b.id,)
    assert first.derivation.absent == ("seen{rank<s.rank}",)
    assert seen_b.derivation.premises == tuple(f.id for f in result.facts if f.type == "item" and f["name"] == "b")
    assert ranks  # the three items were asserted in the given order


def test_negation_blocked(tmp_path):
    rb = load(tmp_path, CHAIN)
    result = rb.run(items(("x", 1, {"color": "blue"})))
    assert result.by_type("note") == []


def test_runs_are_isolated(tmp_path):
    rb = load(tmp_path, CHAIN)
    first = rb.run(items(("x", 1, {})))
    second = rb.run(items(("y", 5, {})))
    assert [f["name"] for f in first.by_type("first")] == ["x"]
    assert [f["name"] for f in second.by_type("first")] == ["y"]


def test_self_feeding_rule_terminates_with_depth_cap(tmp_path):
    rb = load(tmp_path, """
        seed: test
        rules:
          - id: start
            title: start
            when: [{item: {}, as: i}]
            then: [{seen: {name: {ref: i.name}}}]
          - id: grow
            title: grows forever
            when: [{seen: {}, as: s}]
            then: [{seen: {name: "${s.name}+"}}]
    """)
    started = time.monotonic()
    result = rb.run(items(("x", 1, {})), max_depth=20)
    assert time.monotonic() - started < 10
    assert result.truncated
    assert len(result.by_type("seen")) == 20
    capped = rb.run(items(("x", 1, {})), max_firings=5)
    assert capped.truncated and len(capped.firings) == 5


def test_negation_through_a_cycle_is_refused(tmp_path):
    with pytest.raises(RuleBaseErrors) as info:
        load(tmp_path, """
            seed: test
            rules:
              - id: a
                title: a
                when: [{item: {}}, {not: {first: {}}}]
                then: [{seen: {name: x}}]
              - id: b
                title: b
                when: [{seen: {}}]
                then: [{first: {name: y}}]
        """)
    assert "negation through a cycle" in str(info.value) and "r.yaml" in str(info.value)


def _many_values_rule_file(rules, patterns, op="eq"):
    lines = ["seed: test", "rules:"]
    value = 0
    for r in range(rules):
        lines += [f"  - id: r{r}", f"    title: r{r}", "    when:"]
        for _ in range(patterns):
            test = f"name: v{value}" if op == "eq" else f"rank: {{gt: {value}}}"
            lines.append(f"      - item: {{{test}}}")
            value += 1
        lines += ["    then:", "      - note: {text: hit}"]
    return "\n".join(lines) + "\n"


@durable_only
def test_fan_out_over_engine_limit_is_refused_quickly(tmp_path):
    folder = tmp_path / "big"
    folder.mkdir()
    (folder / "fan.yaml").write_text(_many_values_rule_file(40, 16), encoding="utf-8")
    started = time.monotonic()
    with pytest.raises(RuleBaseErrors) as info:
        RuleBase.load([folder], VOCAB, engine="durable")
    assert time.monotonic() - started < 5
    text = str(info.value)
    assert "fan.yaml" in text and "hangs at 512" in text and "hint:" in text


@durable_only
def test_threshold_ladder_over_engine_limit_is_refused(tmp_path):
    folder = tmp_path / "ladder"
    folder.mkdir()
    (folder / "ladder.yaml").write_text(_many_values_rule_file(70, 1, op="gt"), encoding="utf-8")
    with pytest.raises(RuleBaseErrors) as info:
        RuleBase.load([folder], VOCAB, engine="durable")
    assert "above 64" in str(info.value) and "ladder.yaml" in str(info.value)


def test_many_rules_are_partitioned_and_run(tmp_path):
    """600 rules testing 600 values of one field would hang one durable ruleset (fan-out 512);
    the compiler splits them, so the run completes. Run in a subprocess: a hang must fail, not block."""
    folder = tmp_path / "many"
    folder.mkdir()
    (folder / "many.yaml").write_text(_many_values_rule_file(600, 1), encoding="utf-8")
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        from pathlib import Path
        from test_engine_vocab import VOCAB, items
        from j6doctor.engine import RuleBase
        rb = RuleBase.load([Path({str(folder)!r})], VOCAB)
        parts = len(rb.compiled.partitions())
        result = rb.run(items(("v599", 1, {{}}), ("v3", 2, {{}})))
        print(parts, sorted(result.fired_rules()), len(result.by_type("note")))
    """)
    (tmp_path / "test_engine_vocab.py").write_text(
        "from test_engine import VOCAB, items\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          cwd=str(tmp_path), env={"PYTHONPATH": f"{tmp_path}:{__import__('os').path.dirname(__file__)}",
                                                  "PATH": "/usr/bin:/bin",
                                                  "XDG_CACHE_HOME": __import__('os').environ["XDG_CACHE_HOME"]})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[0] == "3"
    # both rules fired; their identical conclusion is one fact
    assert proc.stdout.split(None, 1)[1].strip() == "['r3', 'r599'] 1"


def test_action_failure_is_raised_not_swallowed(tmp_path):
    rb = load(tmp_path, """
        seed: test
        rules:
          - id: bad
            title: puts a colour's label (红) into an enum field
            when: [{item: {}, as: i}]
            then: [{note: {text: x, color: "${i.color|label}"}}]
    """)
    with pytest.raises(EngineRunError, match="rule bad"):
        rb.run(items(("purple", 1, {})))


def test_a_copy_the_field_cannot_hold_is_refused_at_load(tmp_path):
    """A typed field that is one placeholder takes the value as it is: a name into an enum
    field would fail each time the rule fires, so the rule is refused when it loads."""
    with pytest.raises(RuleBaseErrors, match=r"r.yaml:7: rule bad: note.color: note.color \(enum color\) "
                                             r"cannot take i.name \(str\)"):
        load(tmp_path, """
            seed: test
            rules:
              - id: bad
                title: puts a name into an enum field
                when: [{item: {}, as: i}]
                then: [{note: {text: x, color: "${i.name}"}}]
        """)


def test_vocabulary_checks():
    with pytest.raises(VocabularyError, match="reserved"):
        Vocabulary.from_data({"types": {"t": {"fields": {"id": {"type": "str"}}}}})
    with pytest.raises(VocabularyError, match="unknown attribute"):
        Vocabulary.from_data({"enums": {"e": {"values": {"a": {"label": "x", "RDK S100P)": None}}}}, "types": {}})
    with pytest.raises(VocabularyError, match="not one of"):
        VOCAB.complete("item", {"name": "x", "rank": 1, "color": "pink"})
    with pytest.raises(VocabularyError, match="has no field"):
        VOCAB.complete("item", {"name": "x", "rank": 1, "size": 2})
    with pytest.raises(VocabularyError, match=r"type 't': similar_by.kind: no field 'colour'"):
        Vocabulary.from_data({"types": {"t": {"similar_by": {"kind": ["name", "colour"]},
                                              "fields": {"name": {"type": "str"}}}}})
    with pytest.raises(VocabularyError, match="similar_by.kind: expected a field name"):
        Vocabulary.from_data({"types": {"t": {"similar_by": {"kind": 3}, "fields": {"name": {"type": "str"}}}}})
    spec = Vocabulary.from_data({"types": {"t": {"similar_by": {"kind": "name", "pair": ["name", "rank"]}, "fields": {
        "name": {"type": "str"}, "rank": {"type": "int"}}}}}).types["t"]
    assert spec.similar_by == (("kind", ("name",)), ("pair", ("name", "rank")))


def _join_rules(count: int) -> str:
    lines = ["seed: test", "rules:"]
    for r in range(count):
        lines += [f"  - id: j{r}", f"    title: j{r}", "    when:",
                  "      - item: {color: red}", "        as: a",
                  "      - not:", "          seen: {name: {ref: a.name}}",
                  "    then:", f"      - note: {{text: j{r}}}"]
    return "\n".join(lines) + "\n"


@durable_only
def test_many_join_patterns_on_one_condition_are_refused_at_load(tmp_path):
    """65 conditions with the same tests that each compare with another fact make durable-rules
    fail with error 303 when a fact arrives; the checker refuses them before any run."""
    folder = tmp_path / "joins"
    folder.mkdir()
    (folder / "joins.yaml").write_text(_join_rules(65), encoding="utf-8")
    with pytest.raises(RuleBaseErrors) as info:
        RuleBase.load([folder], VOCAB, engine="durable")
    assert "above 64" in str(info.value) and "joins.yaml" in str(info.value)
    (folder / "joins.yaml").write_text(_join_rules(40), encoding="utf-8")
    rb = RuleBase.load([folder], VOCAB)
    assert len(rb.run(items(("x", 1, {}))).by_type("note")) == 40


@pytest.mark.parametrize("pack", ["fan-out", "ladder", "joins"])
def test_packs_over_durable_tables_load_and_run_on_clips(tmp_path, pack):
    """Limits are per engine: CLIPS has none of durable-rules' fixed tables, so the packs the
    tests above refuse on durable-rules load and run on CLIPS, with the expected firings."""
    folder = tmp_path / pack
    folder.mkdir()
    text = {"fan-out": _many_values_rule_file(40, 16), "ladder": _many_values_rule_file(70, 1, op="gt"),
            "joins": _join_rules(65)}[pack]
    (folder / "p.yaml").write_text(text, encoding="utf-8")
    started = time.monotonic()
    rb = RuleBase.load([folder], VOCAB, engine="clips")
    result = rb.run(items(("v5", 10, {}), ("x", 1, {})))
    assert time.monotonic() - started < 30
    fired = result.fired_rules()
    expected = {"fan-out": set(), "ladder": {f"r{k}" for k in range(10)}, "joins": {f"j{k}" for k in range(65)}}[pack]
    assert fired == expected, sorted(fired)[:10]


# ---- empty (null) fields -----------------------------------------------------------------
# An empty field equals only null, differs from every value, is in no list, and no ordering,
# `contains` or comparison with another fact holds on it; durable-rules itself fails on a
# comparison with null (errors 311 / 312), so the compiler guards every such test.

NULLABLE = Vocabulary.from_data({"enums": {}, "types": {
    "item": {"origin": "input", "fields": {
        "name": {"type": "str", "required": True}, "score": {"type": "number"}, "text": {"type": "str"}}},
    "hit": {"origin": "derived", "fields": {"name": {"type": "str", "required": True}}},
}})

SINGLE = {
    "{score: {ne: 0.5}}": ["empty", "one"],
    "{score: {lt: 0.75}}": ["half"],
    "{score: {ge: 0.5}}": ["half", "one"],
    "{score: {not_in: [0.5, 0.6]}}": ["empty", "one"],
    "{score: {in: [0.5, 0.6]}}": ["half"],
    "{score: {in: [0.5, null]}}": ["empty", "half"],
    "{score: {not_in: [0.5, null]}}": ["one"],
    "{text: {contains: ab}}": ["half"],
    "{score: null}": ["empty"],
    "{score: {ne: null}}": ["half", "one"],
    "{text: {ne: ab}}": ["empty", "half", "one"],
}

JOINED = {
    # (second condition, negated) -> names of the first fact the rule fires for
    ("{score: {lt: {ref: i.score}}}", False): ["one"],
    ("{score: {ref: i.score}, name: {ne: {ref: i.name}}}", False): [],
    ("{score: {gt: {ref: i.score}}}", True): ["one"],
    ("{text: {ne: ab}, name: {ne: {ref: i.name}}}", False): ["empty", "half", "one"],
    ("{score: {in: [0.5, null]}, name: {ne: {ref: i.name}}}", False): ["empty", "half", "one"],
    ("{score: {not_in: [0.5]}, name: {ne: {ref: i.name}}}", False): ["empty", "half", "one"],
}


def _empty_field_facts():
    return [Fact("f1", "item", NULLABLE.complete("item", {"name": "empty"}), Source("user")),
            Fact("f2", "item", NULLABLE.complete("item", {"name": "half", "score": 0.5, "text": "xaby"}),
                 Source("user")),
            Fact("f3", "item", NULLABLE.complete("item", {"name": "one", "score": 1.0, "text": "zz"}),
                 Source("user"))]


def _fired(tmp_path, when: str) -> list[str]:
    text = f"seed: test\nrules:\n  - id: r\n    title: r\n    when:\n{when}    then:\n      - hit: {{name: {{ref: i.name}}}}\n"
    rb = RuleBase.load([rules_dir(tmp_path, text)], NULLABLE)
    return sorted(f["name"] for f in rb.run(_empty_field_facts()).by_type("hit"))


@pytest.mark.parametrize("test", sorted(SINGLE))
def test_tests_on_an_empty_field(tmp_path, test):
    assert _fired(tmp_path, f"      - item: {test}\n        as: i\n") == SINGLE[test]


@pytest.mark.parametrize("second,negated", sorted(JOINED))
def test_comparisons_with_an_empty_field_never_hold_and_never_fail(tmp_path, second, negated):
    cond = f"      - not: {{item: {second}}}\n" if negated else f"      - item: {second}\n"
    assert _fired(tmp_path, "      - item: {}\n        as: i\n" + cond) == JOINED[(second, negated)]


def test_ordering_with_null_is_refused(tmp_path):
    with pytest.raises(RuleBaseErrors, match="operator lt needs a number, not null"):
        RuleBase.load([rules_dir(tmp_path, "seed: t\nrules:\n  - id: r\n    title: r\n    when:\n"
                                 "      - item: {score: {lt: null}}\n    then:\n      - hit: {name: x}\n")], NULLABLE)
