"""Read YAML rule files into the rule model, checking them against the rule schema
and the fact vocabulary. Every error names the file, the line, the rule id and the field.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from j6doctor.engine.errors import RuleBaseError, RuleBaseErrors
from j6doctor.engine.decision_table import check_hit_policy
from j6doctor.engine.decision_table import expand as expand_tables
from j6doctor.engine.schema_errors import messages, shown
from j6doctor.engine.rule_files import read_rule_file, rule_files_in
from j6doctor.engine.rule_model import (MATCH_ALIAS, PLACEHOLDER, READ_ALIAS, TEXT_FILLED_FIELDS, Condition, Conclusion,
                                        Example, Ref, Rule, RuleFile, Test, TextSpec)
from j6doctor.engine.tag_patterns import PatternError, TagPattern, parse
from j6doctor.engine.text_rules import unread_class
from j6doctor.engine.strict_yaml import LocatedDocument, YamlInputError, exponent_number, load_yaml
from j6doctor.engine.errors import VocabularyError
from j6doctor.engine.vocabulary import PACK_VOCABULARY, FactType, FieldSpec, Vocabulary

if TYPE_CHECKING:  # jsonschema is imported when rule files are checked, not when a cached rule base is used
    import jsonschema

@lru_cache(maxsize=1)
def rule_file_schema() -> dict[str, Any]:
    """The JSON Schema of a rule file (shipped with the package)."""
    text = (Path(__file__).resolve().parent / "rule_schema.json").read_text(encoding="utf-8")
    return json.loads(text)


def _suggest(word: str, choices: Iterable[str]) -> str:
    import difflib

    close = difflib.get_close_matches(str(word), list(choices), n=1)
    return f"did you mean {close[0]!r}?" if close else ""


class _FileChecker:
    """Turns one located YAML document into rules, collecting every error."""

    def __init__(self, path: str, doc: LocatedDocument, vocab: Vocabulary, folder: str = "",
                 known_tables: dict[str, dict] | None = None):
        self.known_tables = known_tables if known_tables is not None else {}  # by id, from earlier files
        self.path = path
        self.folder = folder
        self.doc = doc
        self.vocab = vocab
        self.errors: list[RuleBaseError] = []
        self.text: TextSpec | None = None  # the text rule being built (its reads and groups)
        self.conditions: list[Condition] = []  # ... the conditions of the rule being built

    def error(self, message: str, path: tuple, rule_id: str | None = None,
              field: str | None = None, hint: str | None = None) -> None:
        self.errors.append(RuleBaseError(
            message, file=self.path, line=self.doc.line_of(path), rule_id=rule_id,
            field=field, hint=hint or None,
        ))

    # -------------------------------------------------------------- schema pass
    def check_schema(self) -> bool:
        import jsonschema

        validator = jsonschema.Draft202012Validator(rule_file_schema())
        found = False
        for err in sorted(validator.iter_errors(self.doc.data), key=lambda e: list(map(str, e.absolute_path))):
            found = True
            specific = _rule_file_message(err)
            for path, message in [specific] if specific else messages(err):
                rule_id = self.rule_id_at(path)
                self.error(message, path, rule_id, _field_shown(path, rule_id), _schema_hint(err))
        return not found

    def rule_id_at(self, path: tuple) -> str | None:
        """The id of the rule (or table row) a key path is in."""
        data = self.doc.data
        if len(path) >= 2 and path[0] == "rules":
            return _id_of(data.get("rules"), path[1])
        if len(path) >= 4 and path[0] == "tables" and path[2] == "rows":
            table = (data.get("tables") or [None])[path[1]] if isinstance(data.get("tables"), list) else None
            return _id_of(table.get("rows") if isinstance(table, dict) else None, path[3])
        return None

    # -------------------------------------------------------------- model pass
    def build(self) -> RuleFile | None:
        data = self.doc.data
        if not isinstance(data, dict):
            self.error("a rule file must be a mapping with a 'rules' list", ())
            return None
        if not self.check_schema():  # rules and tables as written
            return None
        tables: list[dict] = []
        if "tables" in data:  # decision tables: expanded into rules, each with its row's line
            data, tables = self.expand_tables(data)
            if data is None or not self.check_schema():  # the rules the rows make
                return None
        file_seed = data.get("seed", "")
        file_knowledge = data.get("knowledge", "")
        self.file_read = data.get("read")
        self.file_unless = data.get("unless", [])
        rules = []
        for index, raw in enumerate(data["rules"]):
            rule = self.build_rule(index, raw, file_seed, file_knowledge)
            if rule is not None:
                rules.append(rule)
        self.check_tables(tables, {rule.id: rule for rule in rules})
        return RuleFile(self.path, data.get("title", ""), file_seed, rules)

    def expand_tables(self, data: dict) -> tuple[dict | None, list[dict]]:
        """The file with its tables' rows as rules after its own (None: a table is broken)."""
        expanded = expand_tables(self.doc, len(data.get("rules") or []), self.known_tables)
        for path, message in expanded.errors:
            self.error(message, path)
        if expanded.errors:
            return None, []
        data = {**{k: v for k, v in data.items() if k != "tables"},
                "rules": [*(data.get("rules") or []), *expanded.rules]}
        self.doc = LocatedDocument(data, {**self.doc.lines, **expanded.lines})
        return data, expanded.tables

    def check_tables(self, tables: list[dict], by_id: dict[str, Rule]) -> None:
        """Each table's hit policy, from what its rows conclude; a table without errors is
        known to the files loaded after this one (they may extend it)."""
        for table in tables:
            for row in table["rows"]:
                rule = by_id.get(row.id)
                if row.id in table["new"] and rule is not None:
                    rule.table = table["id"]
                    table["outputs"][row.id] = tuple(sorted(
                        (c.type, f, str(c.fields.get(f))) for c in rule.then for f in self.vocab.types[c.type].exclusive))
            for path, message in check_hit_policy(table, lambda row, t=table: t["outputs"].get(row.id, ())):
                self.error(message, path, hint="make the rows exclusive (a column both fill differently, "
                                               "or a `contradicts` / `one` declaration), or give them one conclusion")
            if not self.errors:
                self.known_tables[table["id"]] = table

    def build_rule(self, index: int, raw: dict, file_seed: str, file_knowledge: str) -> Rule | None:
        rid = raw["id"]
        base = ("rules", index)
        seed = raw.get("seed", file_seed)
        if not seed:
            self.error("every rule names the seed section it comes from", base + ("id",), rid,
                       "seed", "add `seed:` to the rule or to the file")
        aliases: dict[str, str] = {}
        when: list[Condition] = []
        text = None
        if "match" in raw or "unread" in raw:
            text = self.build_text_spec(rid, base, raw)
            aliases[MATCH_ALIAS] = MATCH_ALIAS
            aliases[READ_ALIAS] = READ_ALIAS
        self.text = text
        self.conditions = when
        for ci, raw_cond in enumerate(raw.get("when") or ()):
            # Refs may only name aliases bound earlier, so the first positive condition
            # never joins (durable-rules ignores joins on a rule's first pattern).
            cond = self.build_condition(rid, base + ("when", ci), raw_cond, aliases)
            if cond is not None:
                when.append(cond)
                if cond.alias:
                    aliases[cond.alias] = cond.type
        then: list[Conclusion] = []
        for ti, raw_concl in enumerate(raw["then"]):
            concl = self.build_conclusion(rid, base + ("then", ti), raw_concl, aliases)
            if concl is not None:
                then.append(concl)
        examples = [
            Example(
                name=str(ex.get("name", f"example {ei + 1}")),
                case=ex["case"],
                fires=bool(ex.get("fires", True)),
                expect=dict(ex.get("expect") or {}),
                line=self.doc.line_of(base + ("examples", ei)),
                facts=self.build_example_facts(rid, base + ("examples", ei, "facts"), ex.get("facts") or []),
            )
            for ei, ex in enumerate(raw.get("examples") or [])
        ]
        return Rule(
            id=rid, title=raw["title"], seed=seed, file=self.path,
            line=self.doc.line_of(base), when=tuple(when), then=tuple(then),
            priority=int(raw.get("priority", 0)),
            knowledge=raw.get("knowledge", file_knowledge), examples=examples,
            file_title=str(self.doc.data.get("title", "")), folder=self.folder, text=text,
        )

    def build_example_facts(self, rid: str, path: tuple, raw: list) -> list[tuple[str, dict[str, Any]]]:
        """An example's given input facts, each checked against the vocabulary like a probe's."""
        facts = []
        for k, item in enumerate(raw):
            ((type_name, fields),) = item.items()
            where = path + (k, type_name)
            ftype = self.vocab.types.get(type_name)
            if ftype is None or ftype.origin != "input":
                known = ", ".join(sorted(t for t, spec in self.vocab.types.items() if spec.origin == "input"))
                self.error(f"{type_name!r} is no input fact type", where, rid, hint=f"input fact types: {known}")
                continue
            if not isinstance(fields, dict):
                self.error(f"{type_name}: expected a mapping of fields", where, rid)
                continue
            try:
                facts.append((type_name, self.vocab.complete(type_name, fields)))
            except VocabularyError as exc:
                self.error(str(exc), where, rid)
        return facts

    def build_text_spec(self, rid: str, base: tuple, raw: dict) -> TextSpec | None:
        """`read:` / `match:` / `unless:` / `unread:` of a text rule; every pattern must parse
        and name classes the lexicon has. Without `read:` (on the rule or the file) a text
        rule reads every free-text field the text context lists as prose."""
        reads_raw = raw.get("read", self.file_read) or list(self.vocab.text.context.prose)
        if not reads_raw:
            self.error("a text rule needs `read:` (on the rule or the file): the text fields it reads",
                       base + ("match",), rid, "read", "e.g. read: [symptom.text, deployment_notes.text]")
            return None
        explicit = "read" in raw or bool(self.file_read)
        reads = [read for ri, item in enumerate(reads_raw)
                 if (read := self.text_read(rid, (base + ("read", ri) if "read" in raw else ("read", ri))
                                            if explicit else base + ("id",), item))]
        groups: dict[str, str] = {}
        match = self.text_patterns(rid, base, raw, "match", None, groups)
        unless = self.text_patterns(rid, base, raw, "unless", self.file_unless, None)
        unread = tuple(str(c) for c in raw.get("unread") or ())
        listed: set[str] = set()
        for ci, item in enumerate(unread):
            cls, only = unread_class(item)
            term = self.vocab.text.terms.get(cls)
            if cls in listed:  # (its values are one field of the conclusion: list them in one entry)
                self.error(f"unread: {cls} is listed twice", base + ("unread", ci), rid, "unread",
                           f"one entry per class: {cls}=value1|value2")
            listed.add(cls)
            if term is None:
                self.error(f"unread: no term class {cls!r}", base + ("unread", ci), rid, "unread",
                           _suggest(cls, self.vocab.text.terms) or "term classes are in facts/text_terms.yaml")
            elif only and not only <= set(term.value_names()):
                self.error(f"unread: {item!r}: {cls} has no value {sorted(only - set(term.value_names()))[0]!r}",
                           base + ("unread", ci), rid, "unread", f"values: {', '.join(term.value_names())}")
            groups[cls] = cls
        context = raw.get("context", "")
        readings = self.vocab.text.context.readings
        if context and context not in readings:
            self.error(f"context {context!r} is not a reading of the text context", base + ("context",), rid,
                       "context", _suggest(context, readings) or f"readings: {', '.join(readings)}")
        return TextSpec(tuple(reads), match, unless, context, groups, raw.get("matches", "first") == "all", unread,
                        raw.get("unless_in") == "sentence")

    def text_read(self, rid: str, where: tuple, item: str) -> tuple[str, str] | None:
        """One `read:` entry, <input type>.<text field>; None (said) when it is no such field."""
        type_name, _, fname = item.partition(".")
        ftype = self.vocab.types.get(type_name)
        if ftype is None or ftype.origin != "input":
            self.error(f"{item!r}: a text rule reads input fact types", where, rid, "read",
                       _suggest(type_name, [n for n, t in self.vocab.types.items() if t.origin == "input"]))
            return None
        spec = ftype.fields.get(fname)
        if spec is None or spec.type != "str":
            self.error(f"{item!r}: {type_name!r} has no text field {fname!r}", where, rid, "read",
                       "text fields: " + ", ".join(n for n, f in ftype.fields.items() if f.type == "str"))
            return None
        return type_name, fname

    def text_patterns(self, rid: str, base: tuple, raw: dict, key: str, default: Any,
                      groups: dict[str, str] | None) -> tuple[TagPattern, ...]:
        """The rule's (or the file's default) `match:` / `unless:` patterns, parsed; `groups`
        collects the classes the match patterns capture (None: they capture nothing)."""
        parsed = []
        for pi, source in enumerate(raw.get(key, default) or []):
            where = base + (key, pi) if key in raw else (key, pi)
            try:
                pattern = self.vocab.text.resolved(parse(source))
            except PatternError as exc:
                self.error(f"not a valid text pattern: {exc}", where, rid, key,
                           "see docs/AUTHORING.md, \"Read the user's own words\"")
                continue
            if groups is not None:
                captured = pattern.groups
                terms = self.vocab.text.terms
                # one name may capture several classes of one enum (or of none): its value means one thing
                clash = [g for g, c in captured.items() if terms[groups.get(g, c)].enum != terms[c].enum]
                if clash:
                    self.error(f"{{{clash[0]}}} captures term classes of different enums across the patterns",
                               where, rid, key, "name them apart: {class as name}")
                for name, cls in captured.items():
                    groups.setdefault(name, cls)
            parsed.append(pattern)
        return tuple(parsed)

    def build_condition(self, rid: str, path: tuple, raw: dict,
                        aliases: dict[str, str]) -> Condition | None:
        negated = "not" in raw
        alias = raw.get("as")
        if negated:
            if len(raw) != 1:
                self.error("a `not:` condition takes no other key", path, rid, "when",
                           "write `- not: {<type>: {...}}` alone")
                return None
            if alias:
                self.error("a negated condition binds no fact, so it cannot have `as`", path, rid, "as")
            (type_name, raw_tests), = raw["not"].items()
            tests_path = path + ("not", type_name)
        else:
            keys = [k for k in raw if k != "as"]
            if len(keys) != 1:
                self.error("a condition names exactly one fact type", path, rid, "when",
                           "write `- <type>: {<field>: <value>}`")
                return None
            type_name = keys[0]
            raw_tests = raw[type_name]
            tests_path = path + (type_name,)
            if alias in aliases:
                self.error(f"alias {alias!r} is bound twice", path + ("as",), rid, "as")
        ftype = self.vocab.types.get(type_name)
        if ftype is None:
            self.error(f"unknown fact type {type_name!r}", tests_path, rid, "when",
                       _suggest(type_name, self.vocab.types))
            return None
        tests: list[Test] = []
        for fname, raw_test in (raw_tests or {}).items():
            fpath = tests_path + (fname,)
            spec = ftype.fields.get(fname)
            if spec is None:
                self.error(f"fact type {type_name!r} has no field {fname!r}", fpath, rid,
                           f"{type_name}.{fname}",
                           _suggest(fname, ftype.fields) or f"fields: {', '.join(ftype.fields)}")
                continue
            test = self.build_test(rid, fpath, type_name, spec, raw_test, aliases)
            if test is not None:
                tests.append(test)
        return Condition(type_name, tuple(tests), negated, alias, self.doc.line_of(path))

    def build_test(self, rid: str, path: tuple, type_name: str, spec: FieldSpec, raw: Any,
                   aliases: dict[str, str]) -> Test | None:
        """One field test; the schema has checked its shape (one known operator)."""
        where = f"{type_name}.{spec.name}"
        if isinstance(raw, dict) and "ref" not in raw:
            (op, operand), = raw.items()
        else:
            op, operand = "eq", raw
        if isinstance(operand, dict):
            return self.join_test(rid, path, spec, op, operand["ref"], aliases, where)
        if op == "contains":
            if spec.type != "str":
                self.error(f"operator contains needs a text field; {where} is {spec.type}", path, rid, where)
                return None
            return Test(spec.name, op, operand)
        return self.literal_test(rid, path, spec, op, operand, where)

    def join_test(self, rid: str, path: tuple, spec: FieldSpec, op: str, text: str, aliases: dict[str, str],
                  where: str) -> Test | None:
        """A comparison with a field of a fact bound before (`{ref: alias.field}`)."""
        ref = self.build_ref(rid, path, text, aliases, where)
        if ref is None:
            return None
        other = self.vocab.types[aliases[ref.alias]].fields[ref.field]
        if _kind(other) != _kind(spec):
            self.error(f"compares {spec.type} {where} with {other.type} {ref}", path, rid, where)
            return None
        if op in ("lt", "le", "gt", "ge") and spec.type not in ("int", "number"):
            self.error(f"operator {op} needs a numeric field", path, rid, where)
            return None
        return Test(spec.name, op, ref)

    def literal_test(self, rid: str, path: tuple, spec: FieldSpec, op: str, operand: Any, where: str) -> Test | None:
        """A comparison with literal values, each a value the field can take."""
        if spec.type in ("int", "number"):  # `1e-05` is text to YAML 1.1, a number to the author
            operand = ([exponent_number(v) for v in operand] if op in ("in", "not_in")
                       else exponent_number(operand))
        if op in ("lt", "le", "gt", "ge") and operand is None:
            self.error(f"operator {op} needs a number, not null", path, rid, where,
                       "to test that the field is empty write `eq: null`")
            return None
        for value in operand if op in ("in", "not_in") else [operand]:
            problem = self.vocab.check_value(spec, value)
            if problem and value is not None:
                hint = _suggest(value, self.vocab.enums[spec.enum].values) if spec.type == "enum" else ""
                self.error(problem, path, rid, where, hint)
                return None
        if op in ("lt", "le", "gt", "ge") and spec.type not in ("int", "number"):
            self.error(f"operator {op} needs a numeric field", path, rid, where)
            return None
        return Test(spec.name, op, list(operand) if op in ("in", "not_in") else operand)

    def build_ref(self, rid: str, path: tuple, text: str, aliases: dict[str, str],
                  where: str) -> Ref | None:
        alias, _, fname = text.partition(".")
        if alias == MATCH_ALIAS and aliases.get(alias) == MATCH_ALIAS:
            return Ref(alias, fname)  # a named group of the text rule's patterns
        if alias == READ_ALIAS and aliases.get(alias) == READ_ALIAS:
            lacking = [t for t, _ in (self.text.reads if self.text else ()) if fname not in self.vocab.types[t].fields]
            if lacking:
                self.error(f"{lacking[0]!r}, a type this rule reads, has no field {fname!r}", path, rid, where,
                           "${read.FIELD} names a field every type under `read:` has")
                return None
            return Ref(alias, fname)
        if alias not in aliases:
            self.error(f"unknown alias {alias!r} in ref {text!r}", path, rid, where,
                       "bind it with `as:` on an earlier condition" + (
                           f" (bound: {', '.join(aliases)})" if aliases else ""))
            return None
        ftype = self.vocab.types[aliases[alias]]
        if fname not in ftype.fields:
            self.error(f"{aliases[alias]!r} (alias {alias}) has no field {fname!r}", path, rid,
                       where, _suggest(fname, ftype.fields))
            return None
        return Ref(alias, fname)

    def build_conclusion(self, rid: str, path: tuple, raw: dict,
                         aliases: dict[str, str]) -> Conclusion | None:
        (type_name, raw_fields), = raw.items()
        cpath = path + (type_name,)
        ftype = self.derived_type(rid, cpath, type_name)
        if ftype is None:
            return None
        fields: dict[str, Any] = {}
        for fname, value in (raw_fields or {}).items():
            built = self.conclusion_field(rid, cpath + (fname,), ftype, fname, value, aliases)
            if built is not _REFUSED:
                fields[fname] = built
        if len(fields) < len(raw_fields or {}):
            return None
        filled = TEXT_FILLED_FIELDS if MATCH_ALIAS in aliases else ()  # a text rule's match fills these
        missing = [n for n, spec in ftype.fields.items() if spec.required and n not in fields and n not in filled]
        if missing:
            self.error(f"{type_name!r} needs field {missing[0]!r}", cpath, rid, f"{type_name}.{missing[0]}")
            return None
        return Conclusion(type_name, fields, self.doc.line_of(path))

    def derived_type(self, rid: str, cpath: tuple, type_name: str) -> FactType | None:
        """The fact type a conclusion derives: known, and not an input type."""
        ftype = self.vocab.types.get(type_name)
        if ftype is None:
            self.error(f"unknown fact type {type_name!r}", cpath, rid, "then", _suggest(type_name, self.vocab.types))
            return None
        if ftype.origin != "derived":
            self.error(f"{type_name!r} is an input fact type; rules may only derive derived types", cpath, rid, "then")
            return None
        return ftype

    def conclusion_field(self, rid: str, fpath: tuple, ftype: FactType, fname: str, value: Any,
                         aliases: dict[str, str]) -> Any:
        """One field of a conclusion: a literal, a text with placeholders, or a copy
        ({ref: alias.field}) of a bound fact's field; _REFUSED when it is wrong (said)."""
        where = f"{ftype.name}.{fname}"
        spec = ftype.fields.get(fname)
        if spec is None:
            self.error(f"fact type {ftype.name!r} has no field {fname!r}", fpath, rid, where,
                       _suggest(fname, ftype.fields) or f"fields: {', '.join(ftype.fields)}")
            return _REFUSED
        if isinstance(value, dict):
            return self.copied_field(rid, fpath, spec, value["ref"], aliases, where)
        return self.written_field(rid, fpath, spec, value, aliases, where)

    def copied_field(self, rid: str, fpath: tuple, spec: FieldSpec, text: str, aliases: dict[str, str],
                     where: str) -> Ref | object:
        ref = self.build_ref(rid, fpath, text, aliases, where)
        if ref is None:
            return _REFUSED
        if ref.alias == MATCH_ALIAS:
            self.error(f"{where}: write the match as text, \"${{match.{ref.field}}}\"", fpath, rid, where)
            return _REFUSED
        return ref if self.copy_ok(rid, fpath, spec, ref, aliases, where) else _REFUSED

    def copy_ok(self, rid: str, fpath: tuple, spec: FieldSpec, ref: Ref, aliases: dict[str, str], where: str) -> bool:
        """A field that takes a bound field's value as it is: of a kind it can hold, and filled
        whenever the field is required."""
        if ref.alias == READ_ALIAS and self.text:
            sources = [self.vocab.types[t].fields[ref.field] for t, _ in self.text.reads]
        else:
            sources = [self.vocab.types[aliases[ref.alias]].fields[ref.field]]
        other = next((o for o in sources if not self.copyable(o, spec)), sources[0])
        if not self.copyable(other, spec):
            self.error(f"{where} ({spec.type}{' ' + spec.enum if spec.enum else ''}) cannot take {ref} "
                       f"({other.type}{' ' + other.enum if other.enum else ''})", fpath, rid, where)
            return False
        return self.required_filled(rid, fpath, spec, ref, aliases, where)

    def written_field(self, rid: str, fpath: tuple, spec: FieldSpec, value: Any, aliases: dict[str, str],
                      where: str) -> Any:
        """A literal, or a text whose `${alias.field}` placeholders name bound fields."""
        if spec.type in ("int", "number"):
            value = exponent_number(value)
        if isinstance(value, str) and not self.placeholders_ok(rid, fpath, spec, value, aliases, where):
            return _REFUSED
        problem = self.vocab.check_value(spec, value)
        if problem and not (isinstance(value, str) and PLACEHOLDER.search(value)):
            hint = _suggest(value, self.vocab.enums[spec.enum].values) if spec.type == "enum" else ""
            self.error(problem, fpath, rid, where, hint)
            return _REFUSED
        return value

    def placeholders_ok(self, rid: str, fpath: tuple, spec: FieldSpec, value: str, aliases: dict[str, str],
                        where: str) -> bool:
        ok = True
        for alias, pfield, shown in PLACEHOLDER.findall(value):
            ref = self.build_ref(rid, fpath, f"{alias}.{pfield}", aliases, where)
            if ref is None or not self.filter_ok(rid, fpath, ref, shown[1:], aliases, where):
                ok = False
        stray = re.search(r"\$\{[^}]*\}?", PLACEHOLDER.sub("", value))
        if stray:
            self.error(f"{stray.group(0)!r} is no placeholder; write ${{alias.field}}, "
                       "${alias.field|label}, ${alias.field|lower} or ${alias.field|<enum attribute>}",
                       fpath, rid, where, "bind the fact with `as: alias` in `when`")
            ok = False
        whole = PLACEHOLDER.fullmatch(value)
        if ok and whole and spec.type != "str" and whole.group(1) != MATCH_ALIAS:
            # a typed field that is one placeholder takes the value as it is (placeholders.fill)
            ref = Ref(whole.group(1), whole.group(2))
            if whole.group(3) is None:
                ok = self.copy_ok(rid, fpath, spec, ref, aliases, where)
            elif whole.group(3) == "|label":  # an empty field has no label either
                ok = self.required_filled(rid, fpath, spec, ref, aliases, where)
        return ok

    def required_filled(self, rid: str, fpath: tuple, spec: FieldSpec, ref: Ref, aliases: dict[str, str],
                        where: str) -> bool:
        """A required field may copy only a field the rule's conditions make sure is filled:
        copying an empty one would fail each time the rule fires."""
        if not spec.required or not self.may_be_empty(ref, aliases):
            return True
        self.error(f"a required field, but it copies {ref}, which can be empty (neither required nor defaulted in "
                   f"{aliases.get(ref.alias, ref.alias)!r}, and no condition tests that it is filled): the rule "
                   "would fail whenever it fires on such a fact", fpath, rid, where,
                   f"test it in the condition that binds {ref.alias} (e.g. `{ref.field}: {{ne: null}}`), "
                   f"or give {where} a value of its own")
        return False

    def may_be_empty(self, ref: Ref, aliases: dict[str, str]) -> bool:
        """Whether the field a ref names can be empty when the rule fires."""
        if ref.alias == MATCH_ALIAS:
            return False  # a text rule's match: its groups are checked by text_rules
        if ref.alias == READ_ALIAS:
            reads = self.text.reads if self.text else ()
            return any(_nullable(self.vocab.types[t].fields[ref.field]) and (t, ref.field) not in reads
                       for t, _ in reads)
        if not _nullable(self.vocab.types[aliases[ref.alias]].fields[ref.field]):
            return False
        bound = next((c for c in self.conditions if c.alias == ref.alias), None)
        compared = any(t.is_join and t.value.alias == ref.alias and t.value.field == ref.field
                       for c in self.conditions for t in c.tests)  # the engines require both sides filled
        return not compared and not (bound and any(t.field == ref.field and _fills(t) for t in bound.tests))

    def filter_ok(self, rid: str, path: tuple, ref: Ref, shown: str, aliases: dict[str, str], where: str) -> bool:
        """`|label` and `|lower` go with any field; `|<attribute>` with an enum value that has it
        (a field of an enum type, or a text rule's group capturing a term class of an enum)."""
        if shown in ("", "label", "lower"):
            return True
        if ref.alias == MATCH_ALIAS:
            term = self.vocab.text.terms.get((self.text.groups if self.text else {}).get(ref.field, ""))
            enum = term.enum if term else None
        elif ref.alias == READ_ALIAS:
            enum = self.vocab.types[self.text.reads[0][0]].fields[ref.field].enum if self.text else None
        else:
            enum = self.vocab.types[aliases[ref.alias]].fields[ref.field].enum
        spec = self.vocab.enums.get(enum or "")
        if spec is None or not any(shown in attrs for attrs in spec.attributes.values()):
            self.error(f"|{shown}: {ref} is no enum value with the attribute {shown!r}", path, rid, where,
                       "filters: |label, |lower, or an attribute of the value's enum")
            return False
        return True

    def copyable(self, source: FieldSpec, target: FieldSpec) -> bool:
        """A conclusion field may copy a bound field of the same kind; an enum may go into a
        text field, or into an enum whose values include all of its own."""
        if target.type == "str" and source.type in ("str", "enum"):
            return True
        if _kind(source) != _kind(target) or (target.type == "int" and source.type == "number"):
            return False  # a number such as 0.5 is no whole number
        return target.type != "enum" or self.vocab.enum_within(source.enum, target.enum)


_REFUSED = object()  # a conclusion field that is wrong (the error is recorded)


def _nullable(spec: FieldSpec) -> bool:
    """A field a fact may leave empty: neither required nor defaulted."""
    return not spec.required and spec.default is None


def _fills(test: Test) -> bool:
    """A test that holds only on a filled field (the engines' semantics, compiler.py)."""
    if test.is_join or test.op in ("lt", "le", "gt", "ge", "contains"):
        return True
    if test.op in ("eq", "in"):
        return None not in (test.value if test.op == "in" else [test.value])
    return None in (test.value if test.op == "not_in" else [test.value])  # ne null, not_in [null, ...]


def _kind(spec: FieldSpec) -> str:
    return "number" if spec.type in ("int", "number") else spec.type


def _id_of(items: Any, index: Any) -> str | None:
    """The `id` of items[index], if the items are a list of mappings that far."""
    if isinstance(items, list) and isinstance(index, int) and index < len(items) and isinstance(items[index], dict):
        found = items[index].get("id")
        return str(found) if found is not None else None
    return None


def _field_shown(path: tuple, rule_id: str | None) -> str | None:
    """The key path shown after `rule <id>:`: within the rule (or table row) when one is named."""
    if rule_id is not None:
        path = path[4:] if path[:1] == ("tables",) else path[2:]
    return ".".join(str(p) for p in path) or None


def _rule_file_message(err: "jsonschema.ValidationError") -> tuple[tuple, str] | None:
    """(key path, message) of what only a rule file's schema needs said; None: the shared
    translation says it."""
    path = tuple(err.absolute_path)
    if err.validator == "additionalProperties" and isinstance(err.instance, dict) and "extends" in err.instance:
        extra = sorted(set(map(str, err.instance)) - set(err.schema.get("properties") or {}))
        return path + (extra[0],), (f"a table that extends {shown(err.instance['extends'])} adds rows (and "
                                    f"examples) only; {extra[0]!r} comes from the table it extends")
    message = _rule_message(err)
    return (path, message) if message else None


def _rule_message(err: "jsonschema.ValidationError") -> str | None:
    if err.validator == "oneOf" and isinstance(err.instance, dict) and ("then" in err.instance or "id" in err.instance):
        if "when" in err.instance and "match" in err.instance:
            return "a rule has either `when:` (conditions on facts) or `match:` (a text rule), not both"
        return "a rule needs `when:` (conditions on facts) or `match:` (a text rule that reads free text)"
    if err.validator == "anyOf" and not err.absolute_path:
        return "a rule file has `rules:` (a list of rules) or `tables:` (decision tables), or both"
    if err.validator == "anyOf" and isinstance(err.instance, dict):
        limit = _size_limit(err)
        if limit is not None:
            return limit[0]
        pattern = next((sub for sub in err.context or () if sub.validator == "pattern"), None)
        if pattern is not None:
            return f"`{pattern.relative_path[-1]}`: {_not_matching(pattern)}"
        return f"not a valid test: {shown(err.instance, 200)}"  # cut short: a 5,000-value list is no message
    if err.validator == "pattern":
        return _not_matching(err)
    return None


def _not_matching(err: "jsonschema.ValidationError") -> str:
    """A text the schema's pattern refuses, with what the schema says is expected."""
    value = str(err.instance)
    why = " (it ends in a line break)" if value.endswith("\n") else ""
    expected = err.schema.get("description") or f"text matching {err.validator_value}"
    return f"{shown(value, 80)} is not {expected}{why}"


def _size_limit(err: "jsonschema.ValidationError") -> tuple[str, str] | None:
    """A test over the schema's size limits (`not_in` values, `contains` letters): say which
    limit and by how much, not "not a valid test" with the whole value."""
    for sub in err.context or ():
        if sub.validator in ("maxItems", "maxLength") and sub.relative_path:
            op = sub.relative_path[-1]
            if sub.validator == "maxItems":
                return ((f"`{op}` takes at most {sub.validator_value} values; this one has {len(sub.instance)} "
                         "(each is one inequality test the engine chains)"),
                        ("test a coarser field (compute a category upstream), or list the values that "
                         "are allowed with `in:` instead"))
            return (f"`{op}` takes at most {sub.validator_value} characters; this one has {len(sub.instance)}",
                    "test for a shorter, distinctive word")
    return None


def _schema_hint(err: "jsonschema.ValidationError") -> str | None:
    if err.validator == "anyOf":
        limit = _size_limit(err)
        if limit is not None:
            return limit[1]
        return ("a test is a value, {ref: alias.field}, or one of {eq|ne|lt|le|gt|ge: value}, "
                "{in|not_in: [values]}, {contains: word}")
    if err.validator in ("maxProperties", "minProperties") and err.schema.get("maxProperties") == 2:
        return "write `- <type>: {<field>: <value>}` (optionally with `as: <alias>`) or `- not: {<type>: {...}}`"
    if err.validator == "required" and list(err.absolute_path)[:1] == ["tables"]:
        if "rows" in err.absolute_path:
            return "a row is a mapping with an id and its cells"
        return ("a table has id, columns, then and rows (docs/AUTHORING.md §2d); one that adds rows to "
                "a table of a file loaded before has extends and rows")
    if err.validator == "required":
        return "every rule has id, title, then, and `when:` or (a text rule) `match:`"
    return None


def load_rule_file(path: Path, vocab: Vocabulary, display: str | None = None,
                   known_tables: dict[str, dict] | None = None) -> RuleFile:
    """Read and check one rule file; raise RuleBaseErrors listing every problem. `known_tables`:
    the decision tables of the files loaded before (a table may add rows to one of them)."""
    name = display or str(path)
    try:
        raw = read_rule_file(path, name)
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RuleBaseErrors([RuleBaseError(f"not UTF-8 text (byte {exc.start}); expected a YAML rule file",
                                            file=name, line=raw.count(b"\n", 0, exc.start) + 1)]) from None
    except OSError as exc:
        raise RuleBaseErrors([RuleBaseError(f"cannot read: {exc.strerror}; expected a readable YAML rule file",
                                            file=name)]) from None
    try:
        doc = load_yaml(text)
    except YamlInputError as exc:
        raise RuleBaseErrors([RuleBaseError(exc.message, file=name, line=exc.line,
                                            rule_id=_rule_around(text, exc.line))]) from None
    checker = _FileChecker(name, doc, vocab, str(path.resolve().parent), known_tables)
    rule_file = checker.build()
    if checker.errors or rule_file is None:
        raise RuleBaseErrors(checker.errors or [RuleBaseError("empty rule file; expected a mapping with a `rules:` list",
                                                              file=name)])
    return rule_file


_ID_LINE = re.compile(r"^(\s*)-\s*id:\s*['\"]?([^'\"\s#]+)")
_ITEM_LINE = re.compile(r"^(\s*)-\s")


def _rule_around(text: str, line: int | None) -> str | None:
    """The id of the rule whose entry holds `line` (a YAML error has a line, not a rule):
    the last `- id:` line at or before it, read as text, unless a list item at its indent
    (an entry that does not start with its id) began after it."""
    if not line:
        return None
    found, indent = None, None
    for current in text.splitlines()[:line]:
        match = _ID_LINE.match(current)
        if match:
            found, indent = match.group(2), match.group(1)
            continue
        item = _ITEM_LINE.match(current)
        if item and item.group(1) == indent:
            found = None
    return found


def load_rule_dirs(directories: list[Path], vocab: Vocabulary,
                   display_root: dict[Path, str] | None = None) -> tuple[list[Rule], list[RuleBaseError]]:
    """Load every rule file of the folders in order. A later folder's rule with an id
    already loaded replaces it (a rule pack override); a repeated id within one folder
    is an error. Returns the rules and the errors found."""
    by_id: dict[str, Rule] = {}
    order: list[str] = []
    errors: list[RuleBaseError] = []
    tables: dict[str, dict] = {}  # decision tables by id, for the files that add rows to them
    for directory in directories:
        try:
            files = rule_files_in(directory) if directory.is_dir() else [directory]
        except OSError as exc:  # a folder that cannot be listed
            errors.append(RuleBaseError(f"cannot read this folder: {exc.strerror}", file=str(directory)))
            continue
        if directory.is_dir() and not files and not (directory / PACK_VOCABULARY).is_file():
            errors.append(RuleBaseError("no *.yaml or *.yml rule files in this folder; give the folder that holds the "
                                        "pack's rule files", file=str(directory)))
        seen_here: dict[str, Rule] = {}
        for path in files:
            shown = (display_root or {}).get(directory)
            display = f"{shown}/{path.name}" if shown else str(path)
            try:
                rule_file = load_rule_file(path, vocab, display, tables)
            except RuleBaseErrors as exc:
                errors.extend(exc.errors)
                continue
            for rule in rule_file.rules:
                if rule.id in seen_here:
                    first = seen_here[rule.id]
                    errors.append(RuleBaseError(
                        f"duplicate rule id (first defined at {first.file}:{first.line})",
                        file=rule.file, line=rule.line, rule_id=rule.id, field="id",
                        hint="rule ids must be unique; to replace a bundled rule, put the new one in a separate --rules folder",
                    ))
                    continue
                seen_here[rule.id] = rule
                if rule.id in by_id:
                    rule.overrides = f"{by_id[rule.id].file}:{by_id[rule.id].line}"
                else:
                    order.append(rule.id)
                by_id[rule.id] = rule
    return [by_id[i] for i in order], errors
