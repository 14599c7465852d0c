"""Decision tables in rule files: a `tables:` entry is read like the expert's table (one row
per line, one cell per column) and expanded into ordinary rules, each with the file line of
its row, so that everything else (schema, vocabulary check, compiler, lint, explain) sees
plain rules.

    tables:
      - id: stage_mapping
        title: ...
        seed: ...
        hit: any                    # unique | any (see check_hit_policy)
        when: [{chain_open: {}}]    # every row
        unless: [...]               # every row: none of these may hold
        columns:                    # a condition per cell; `$` stands for the cell's value
          flow:   {when: {flow: {flow: $}}, one: true}
          normal: {when: {confirmed: {artifact: $, status: normal}}}           # a list: one per value
          first:  {when: {first_abnormal: {artifact: $}}, list: any}           # a list: {in: [...]}
          gone:   {when: {integration_cleared: {}}, as: c}                     # true / false / absent
        contradicts: [[normal, first]]   # the same value in both columns cannot hold at once
        then:                       # every row; "$name" is the row's cell `name` (left out if empty)
          - chain_stage: {stage: $stage, next_step: $next_step}
        rows:
          - {id: map.convert, normal: qat_bc, first: quantized_bc, stage: convert, next_step: "..."}
        examples:                   # by row id, as a rule's examples
          map.convert: [{name: ..., case: {...}, expect: {...}}]

Generic: it knows conditions, cells and lines, not the domain.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Callable

from j6doctor.engine.strict_yaml import LocatedDocument

Path = tuple[Any, ...]  # a key path in a rule file

ROW_KEYS = ("id", "title", "seed", "knowledge", "when", "then")
_PLACEHOLDER = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")  # "$name", the whole text (fullmatch)


@dataclass
class Column:
    name: str
    template: Any          # the condition, with "$" where the cell's value goes
    alias: str | None
    each: bool             # a list cell: one condition per value (else one `in:` test)
    one: bool              # a run holds at most one value here ...
    together: list[set]    # ... except these values, which may hold together
    boolean: bool          # no "$": the cell says whether the condition holds
    whole: bool = False    # a list cell goes into the condition as it is (e.g. under not_in)


@dataclass
class Row:
    id: str
    line: int | None
    cells: dict[str, Any]  # condition columns with a value
    outputs: dict[str, Any] = field(default_factory=dict)  # the other cells
    path: Path = ()        # where the row is written (in its own file)


@dataclass
class Expanded:
    rules: list[dict]                   # rule mappings, as if written under `rules:`
    lines: dict[Path, int]              # the line of each rule path, for messages and provenance
    errors: list[tuple[Path, str]]      # (path in the file, message)
    tables: list[dict] = field(default_factory=list)  # (id, hit, columns, rows) for the hit policy check


def _has_placeholder(value: Any) -> bool:
    if value == "$":
        return True
    if isinstance(value, dict):
        return any(_has_placeholder(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_placeholder(v) for v in value)
    return False


def _fill(template: Any, value: Any) -> Any:
    if template == "$":
        return value
    if isinstance(template, dict):
        return {k: _fill(v, value) for k, v in template.items()}
    if isinstance(template, list):
        return [_fill(v, value) for v in template]
    return template


def _fill_outputs(template: Any, row: Row) -> tuple[Any, bool]:
    """The conclusion template with "$name" replaced by the row's cells; a field whose cell
    is empty is left out. Returns (value, present)."""
    if isinstance(template, str):
        match = _PLACEHOLDER.fullmatch(template)
        if match:
            name = match.group(1)
            value = row.outputs.get(name, row.cells.get(name))
            return value, value is not None
        return template, True
    if isinstance(template, dict):
        out = {}
        for key, sub in template.items():
            value, present = _fill_outputs(sub, row)
            if present:
                out[key] = value
        return out, True
    if isinstance(template, list):
        return [v for v, present in (_fill_outputs(s, row) for s in template) if present], True
    return template, True


def _placeholders(template: Any) -> set[str]:
    if isinstance(template, str):
        match = _PLACEHOLDER.fullmatch(template)
        return {match.group(1)} if match else set()
    if isinstance(template, dict):
        return set().union(*(_placeholders(v) for v in template.values())) if template else set()
    if isinstance(template, list):
        return set().union(*(_placeholders(v) for v in template)) if template else set()
    return set()


def _negated(condition: dict) -> dict:
    plain = {k: v for k, v in condition.items() if k != "as"}
    return {"not": plain}


def _cell_values(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else [value]


def expand(doc: LocatedDocument, first_index: int, known: dict[str, dict] | None = None) -> Expanded:
    """The rules of the document's `tables`, numbered from `first_index` under `rules`. `known`:
    the tables of the files loaded before (by id), which an `extends:` entry adds rows to.
    The document has passed the rule schema (engine/rule_schema.json): every table is shaped
    as it states (keys, kinds, the hit policy, column specs, rows with ids); what is checked
    here is what the schema cannot say (names that must refer to each other, ids that repeat)."""
    out = Expanded([], {}, [])
    for ti, table in enumerate(doc.data.get("tables") or []):
        _TableExpansion(table, ("tables", ti), doc.line_of, first_index, out, known or {}).run()
    return out


class _TableExpansion:
    """One table of a rule file turned into rules: each row a rule at the row's line."""

    def __init__(self, table: dict, at: Path, line_of: Callable[[Path], int | None], first_index: int,
                 out: Expanded, known_tables: dict[str, dict]):
        self.table, self.at, self.line_of, self.first_index = table, at, line_of, first_index
        self.out, self.known_tables = out, known_tables
        self.base: dict | None = None  # the table this one extends

    def error(self, path: Path, message: str) -> None:
        self.out.errors.append((path, message))

    def run(self) -> None:
        table = self._definition()
        if table is None:
            return
        self.tid = str(table["id"])
        self.own_lines = self.base is None  # an extended table's shared parts are written in another file
        self.spec = table
        self.columns = {str(name): _column(str(name), spec) for name, spec in table["columns"].items()}
        self._check_contradicts(table.get("contradicts") or [])
        self.then: list = table["then"]
        self.outputs_used = set().union(*(_placeholders(t) for t in self.then)) if self.then else set()
        examples = table.get("examples") or {}
        rows: list[Row] = []
        for ri, raw in enumerate(table["rows"]):
            row = self._row(("rows", ri), raw, {r.id for r in rows})
            rows.append(row)
            self.out.rules.append(self._rule(row, raw, examples.get(row.id)))
        seen = {row.id for row in rows}
        for rid in examples:
            if rid not in seen:
                self.error(self.at + ("examples", rid), f"examples for {rid!r}, which is not a row of table {self.tid!r}")
        self._record(table, rows)

    def _definition(self) -> dict | None:
        """The table as written, or (extends) the table it extends with this file's rows."""
        if "extends" not in self.table:
            return self.table
        self.base = self.known_tables.get(str(self.table["extends"]))
        if self.base is None:
            self.error(self.at + ("extends",), f"extends {self.table['extends']!r}: no such table in the rule files "
                                               f"loaded before this one; tables: "
                                               f"{', '.join(sorted(self.known_tables)) or 'none'}")
            return None
        return {**self.base["spec"], "rows": self.table["rows"], "examples": self.table.get("examples") or {}}

    def _check_contradicts(self, contradicts: list) -> None:
        for ci, pair in enumerate(contradicts):
            unknown = [name for name in pair if name not in self.columns]
            if unknown:
                self.error(self.at + ("contradicts", ci), f"contradicts: {unknown[0]!r} is not a column of table "
                                                          f"{self.tid!r}; columns: {', '.join(self.columns)}")

    def _row(self, at: Path, raw: dict, earlier: set[str]) -> Row:
        """A row's cells: the condition columns it fills, and the values its conclusions take."""
        where = self.at + at
        rid = str(raw["id"])
        if rid in earlier:
            self.error(where + ("id",), f"row id {rid!r} repeats in table {self.tid!r}")
        row = Row(rid, self.line_of(where), {}, path=where)
        for key, value in raw.items():
            if key in ROW_KEYS:
                continue
            if key in self.columns:
                if value is not None and value != "-" and value != []:
                    row.cells[key] = value
            elif key in self.outputs_used:
                row.outputs[key] = value
            else:
                self.error(where + (key,), f"row {rid}: {key!r} is not a column of table {self.tid!r}; columns: "
                                           f"{', '.join([*self.columns, *sorted(self.outputs_used)])}")
        for name, value in row.cells.items():
            if self.columns[name].boolean and not isinstance(value, bool):
                self.error(where + (name,), f"row {rid}: column {name!r} takes true or false (whether "
                                            "its condition holds), or is left empty")
        return row

    def _rule(self, row: Row, raw: dict, row_examples: Any) -> dict[str, Any]:
        """The row as a rule mapping, with the line of each of its parts in `out.lines`."""
        rule_at: Path = ("rules", self.first_index + len(self.out.rules))
        line = row.line or self.line_of(self.at) or 1
        self.out.lines[rule_at] = line
        self.out.lines[rule_at + ("id",)] = self.line_of(row.path + ("id",)) or line
        when = self._place(rule_at + ("when",), self._conditions(row, raw), line)
        then = self._place(rule_at + ("then",), self._conclusions(row, raw), line)
        table = self.spec
        rule: dict[str, Any] = {"id": row.id, "title": raw.get("title") or f"{table.get('title', self.tid)}：{row.id}",
                                "when": when, "then": then}
        for key in ("seed", "knowledge"):
            if key in raw or key in table:
                rule[key] = raw.get(key, table.get(key))
        if row_examples is not None:
            rule["examples"] = row_examples
            lines = [self.line_of(self.at + ("examples", row.id, ei)) for ei in range(len(row_examples))]
            self._place(rule_at + ("examples",), [(None, n) for n in lines], line)
        return rule

    def _place(self, at: Path, parts: list[tuple[Any, int | None]], line: int) -> list[Any]:
        """The parts (each with its own line, or None: the row's) under `at`, lines recorded."""
        for index, (_, part_line) in enumerate(parts):
            self.out.lines[at + (index,)] = part_line or line
        return [part for part, _ in parts]

    def _conditions(self, row: Row, raw: dict) -> list[tuple[Any, int | None]]:
        """The cells' conditions in column order (the table reads left to right), then the
        row's own `when`, the table's `when` and its `unless` (negated)."""
        found: list[tuple[Any, int | None]] = []
        for name, column in self.columns.items():
            if name in row.cells:
                cell_line = self.line_of(row.path + (name,))
                found += [(condition, cell_line) for condition in _conditions(column, row.cells[name])]
        found += [(c, self.line_of(row.path + ("when", ci))) for ci, c in enumerate(raw.get("when") or [])]
        found += [(c, self._shared_line("when", ci)) for ci, c in enumerate(self.spec.get("when") or [])]
        found += [(_negated(c), self._shared_line("unless", ci)) for ci, c in enumerate(self.spec.get("unless") or [])]
        return found

    def _conclusions(self, row: Row, raw: dict) -> list[tuple[Any, int | None]]:
        """The table's `then` filled from the row's cells, then the row's own `then`."""
        found: list[tuple[Any, int | None]] = [(_fill_outputs(template, row)[0], None) for template in self.then]
        found += [(c, self.line_of(row.path + ("then", ci))) for ci, c in enumerate(raw.get("then") or [])]
        return found

    def _shared_line(self, key: str, index: int) -> int | None:
        return self.line_of(self.at + (key, index)) if self.own_lines else None

    def _record(self, table: dict, rows: list[Row]) -> None:
        """The table as the hit policy check and later files (extends) need it."""
        new_ids = {row.id for row in rows}
        if self.base:  # the hit policy covers the rows already there: a pack row with a known id replaces it
            rows = [r for r in self.base["rows"] if r.id not in new_ids] + rows
        self.out.tables.append({"id": self.tid, "hit": table.get("hit", "any"), "columns": self.columns, "rows": rows,
                                "new": new_ids, "outputs": dict(self.base["outputs"]) if self.base else {},
                                "spec": {k: v for k, v in table.items() if k not in ("rows", "examples")},
                                "contradicts": [tuple(p) for p in table.get("contradicts") or []]})


def _column(name: str, spec: dict) -> Column:
    listed = spec.get("list", "each")
    return Column(name, spec["when"], spec.get("as"), listed == "each", bool(spec.get("one", False)),
                  [set(map(str, group)) for group in spec.get("together") or []],
                  not _has_placeholder(spec["when"]), listed == "whole")


def _conditions(column: Column, value: Any) -> list[Any]:
    if column.boolean:
        condition = dict(column.template)
        if column.alias:
            condition["as"] = column.alias
        return [condition] if value else [_negated(column.template)]
    if column.whole:
        condition = _fill(column.template, value)
        return [{**condition, "as": column.alias} if column.alias else condition]
    values = _cell_values(value)
    if column.each or len(values) == 1:
        found = []
        for v in values:
            condition = _fill(column.template, v)
            if column.alias and isinstance(condition, dict):
                condition = {**condition, "as": column.alias}
            found.append(condition)
        return found
    condition = _fill(column.template, {"in": values})
    return [{**condition, "as": column.alias} if column.alias else condition]


# ------------------------------------------------------------------ the hit policy

def _disjoint(a: Row, b: Row, table: dict) -> bool:
    """Provably no facts satisfy both rows, from what the table declares: a true / false
    column, a `one` column with values that cannot hold together, or a `contradicts` pair
    holding the same value in the two rows."""
    columns: dict[str, Column] = table["columns"]
    for name, column in columns.items():
        if name not in a.cells or name not in b.cells:
            continue
        va, vb = a.cells[name], b.cells[name]
        if column.boolean:
            if bool(va) != bool(vb):
                return True
        elif column.one and _cannot_meet(column, _held(column, va), _held(column, vb)):
            return True
    for x, y in table["contradicts"]:
        for left, right in ((a, b), (b, a)):
            if x in left.cells and y in right.cells and _same_value(columns[x], left.cells[x], columns[y], right.cells[y]):
                return True
    return False


def _held(column: Column, value: Any) -> tuple[set[str], bool]:
    """(values, all): the values a cell makes hold — all of them (each), or one of them (any)."""
    values = {str(v) for v in _cell_values(value)}
    return values, column.each or len(values) == 1


def _cannot_meet(column: Column, a: tuple[set[str], bool], b: tuple[set[str], bool]) -> bool:
    def may_hold_together(x: str, y: str) -> bool:
        return x == y or any(x in group and y in group for group in column.together)

    return not any(may_hold_together(x, y) for x in a[0] for y in b[0])


def _same_value(cx: Column, vx: Any, cy: Column, vy: Any) -> bool:
    """Both cells make the same value hold (a true boolean cell holds for any value)."""
    if cx.boolean or cy.boolean:
        return (not cx.boolean or bool(vx)) and (not cy.boolean or bool(vy))
    hx, all_x = _held(cx, vx)
    hy, all_y = _held(cy, vy)
    if all_x and all_y:
        return bool(hx & hy)
    if all_x:
        return hy <= hx
    if all_y:
        return hx <= hy
    return len(hx) == 1 and hx == hy


def check_hit_policy(table: dict, outputs_of) -> list[tuple[Path, str]]:
    """Every pair of rows the table cannot prove disjoint: an error under `unique`; under
    `any`, an error when the two rows conclude different values of an exclusive field
    (`outputs_of(row)` gives them). Of a table that extends another, the pairs with a new row."""
    problems: list[tuple[Path, str]] = []
    if table["hit"] == "collect":
        return problems
    rows: list[Row] = table["rows"]
    for a, b in combinations(rows, 2):
        if a.id not in table["new"] and b.id not in table["new"]:
            continue
        if _disjoint(a, b, table):
            continue
        at = (b if b.id in table["new"] else a).path  # reported at the row this file adds
        if table["hit"] == "unique":
            problems.append((at, f"table {table['id']!r} (hit: unique): rows {a.id} "
                             f"(line {a.line}) and {b.id} (line {b.line}) can match the same facts"))
        elif outputs_of(a) != outputs_of(b):
            problems.append((at, f"table {table['id']!r} (hit: any): rows {a.id} "
                             f"(line {a.line}) and {b.id} (line {b.line}) can match the same facts and "
                             f"conclude differently ({outputs_of(a)} / {outputs_of(b)})"))
    return problems
