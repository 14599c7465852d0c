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
_PLACEHOLDER = re.compile(r"^\$([A-Za-z_][A-Za-z0-9_]*)$")
HIT_POLICIES = ("unique", "any", "collect")  # collect: every matching row concludes, no check


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
        match = _PLACEHOLDER.match(template)
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
        match = _PLACEHOLDER.match(template)
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
    the tables of the files loaded before (by id), which an `extends:` entry adds rows to."""
    out = Expanded([], {}, [])
    tables = doc.data.get("tables")
    if tables is None:
        return out
    if not isinstance(tables, list):
        out.errors.append((("tables",), "expected a list of tables"))
        return out
    for ti, table in enumerate(tables):
        _expand_table(table, ("tables", ti), doc.line_of, first_index, out, known or {})
    return out


DEFINITION_KEYS = ("title", "seed", "knowledge", "hit", "when", "unless", "columns", "contradicts", "then")


def _expand_table(table: Any, at: Path, line_of: Callable[[Path], int | None], first_index: int, out: Expanded,
                  known_tables: dict[str, dict]) -> None:
    def error(path: Path, message: str) -> None:
        out.errors.append((path, message))

    if not isinstance(table, dict):
        error(at, "a table is a mapping with id, title, columns, then and rows (or extends and rows)")
        return
    base = None
    if "extends" in table:  # more rows for a table defined in a file loaded before
        base = known_tables.get(str(table["extends"]))
        if base is None:
            error(at + ("extends",), f"extends {table['extends']!r}: no such table in the rule files loaded before "
                                     f"this one; tables: {', '.join(sorted(known_tables)) or 'none'}")
            return
        redefined = [k for k in (*DEFINITION_KEYS, "id") if k in table]
        if redefined:
            error(at + (redefined[0],), f"a table that extends {table['extends']!r} adds rows (and examples) only; "
                                        f"{redefined[0]!r} comes from the table it extends")
            return
        table = {**base["spec"], "rows": table.get("rows"), "examples": table.get("examples") or {}}
    for key in ("id", "columns", "then", "rows"):
        if key not in table:
            error(at, f"table {table.get('id', '?')!r}: {key!r} is required")
    allowed = {"id", "extends", "rows", "examples", *DEFINITION_KEYS}
    for key in table:
        if key not in allowed:
            error(at + (key,), f"unknown key {key!r} in a table; allowed: {', '.join(sorted(allowed))}")
    if any(p[:len(at)] == at for p, _ in out.errors):
        return
    tid = str(table["id"])
    own_lines = not base  # an extended table's shared parts are written in another file
    hit = table.get("hit", "any")
    if hit not in HIT_POLICIES:
        error(at + ("hit",), f"hit policy {hit!r}: allowed: {', '.join(HIT_POLICIES)}")
    columns: dict[str, Column] = {}
    raw_columns = table["columns"] if isinstance(table["columns"], dict) else {}
    if not isinstance(table["columns"], dict):
        error(at + ("columns",), "expected a mapping: column name → {when: condition, ...}")
    for name, spec in raw_columns.items():
        where = at + ("columns", name)
        if not isinstance(spec, dict) or not isinstance(spec.get("when"), dict):
            error(where, f"column {name!r}: expected {{when: <condition>}} with optional as, list, one, together")
            continue
        extra = set(spec) - {"when", "as", "list", "one", "together"}
        if extra:
            error(where, f"column {name!r}: unknown key {sorted(extra)[0]!r}; allowed: when, as, list, one, together")
        if spec.get("list", "each") not in ("each", "any", "whole"):
            error(where + ("list",), f"column {name!r}: list is `each` (one condition per value), `any` (one of "
                                     "them) or `whole` (the list as it is, e.g. under not_in)")
        together = spec.get("together") or []
        if not isinstance(together, list) or not all(isinstance(g, list) for g in together):
            error(where + ("together",), f"column {name!r}: together is a list of lists of values")
            together = []
        columns[str(name)] = Column(str(name), spec["when"], spec.get("as"), spec.get("list", "each") == "each",
                                    bool(spec.get("one", False)), [set(map(str, g)) for g in together],
                                    not _has_placeholder(spec["when"]), spec.get("list") == "whole")
    contradicts = table.get("contradicts") or []
    for ci, pair in enumerate(contradicts if isinstance(contradicts, list) else [None]):
        if not (isinstance(pair, list) and len(pair) == 2 and all(p in columns for p in pair)):
            error(at + ("contradicts", ci), f"contradicts: expected pairs of column names, got {pair!r}")
    then = table["then"] if isinstance(table["then"], list) else []
    outputs_used = set().union(*(_placeholders(t) for t in then)) if then else set()
    examples = table.get("examples") or {}
    if not isinstance(examples, dict):
        error(at + ("examples",), "expected a mapping: row id → list of examples")
        examples = {}
    rows_raw = table["rows"] if isinstance(table["rows"], list) else []
    if not isinstance(table["rows"], list):
        error(at + ("rows",), "expected a list of rows")
    rows: list[Row] = []
    seen: set[str] = set()
    for ri, raw in enumerate(rows_raw):
        where = at + ("rows", ri)
        if not isinstance(raw, dict) or "id" not in raw:
            error(where, "a row is a mapping with an id and its cells")
            continue
        rid = str(raw["id"])
        if rid in seen:
            error(where + ("id",), f"row id {rid!r} repeats in table {tid!r}")
        seen.add(rid)
        row = Row(rid, line_of(where), {}, path=where)
        for key, value in raw.items():
            if key in ROW_KEYS:
                continue
            if key in columns:
                if value is not None and value != "-" and value != []:
                    row.cells[key] = value
            elif key in outputs_used:
                row.outputs[key] = value
            else:
                error(where + (key,), f"row {rid}: {key!r} is not a column of table {tid!r}; columns: "
                                      f"{', '.join([*columns, *sorted(outputs_used)])}")
        for name, value in row.cells.items():
            if columns[name].boolean and not isinstance(value, bool):
                error(where + (name,), f"row {rid}: column {name!r} takes true or false (whether "
                                       "its condition holds), or is left empty")
        rows.append(row)
        rule_index = first_index + len(out.rules)
        rule_at: Path = ("rules", rule_index)
        out.lines[rule_at] = row.line or line_of(at) or 1
        out.lines[rule_at + ("id",)] = line_of(where + ("id",)) or out.lines[rule_at]
        when: list[Any] = []
        for name, column in columns.items():  # in column order: the table reads left to right
            if name not in row.cells:
                continue
            cell_line = line_of(where + (name,))
            for condition in _conditions(column, row.cells[name]):
                out.lines[rule_at + ("when", len(when))] = cell_line or out.lines[rule_at]
                when.append(condition)
        for ci, condition in enumerate(raw.get("when") or []):
            out.lines[rule_at + ("when", len(when))] = line_of(where + ("when", ci)) or out.lines[rule_at]
            when.append(condition)
        for ci, condition in enumerate(table.get("when") or []):
            out.lines[rule_at + ("when", len(when))] = (own_lines and line_of(at + ("when", ci))) or out.lines[rule_at]
            when.append(condition)
        for ci, condition in enumerate(table.get("unless") or []):
            out.lines[rule_at + ("when", len(when))] = (own_lines and line_of(at + ("unless", ci))) or out.lines[rule_at]
            when.append(_negated(condition) if isinstance(condition, dict) else condition)
        conclusions: list[Any] = []
        for template in then:
            filled, _ = _fill_outputs(template, row)
            out.lines[rule_at + ("then", len(conclusions))] = out.lines[rule_at]
            conclusions.append(filled)
        for ci, conclusion in enumerate(raw.get("then") or []):
            out.lines[rule_at + ("then", len(conclusions))] = line_of(where + ("then", ci)) or out.lines[rule_at]
            conclusions.append(conclusion)
        rule: dict[str, Any] = {"id": rid, "title": raw.get("title") or f"{table.get('title', tid)}：{rid}",
                                "when": when, "then": conclusions}
        for key in ("seed", "knowledge"):
            if key in raw or key in table:
                rule[key] = raw.get(key, table.get(key))
        row_examples = examples.get(rid)
        if row_examples is not None:
            rule["examples"] = row_examples
            for ei in range(len(row_examples) if isinstance(row_examples, list) else 0):
                out.lines[rule_at + ("examples", ei)] = line_of(at + ("examples", rid, ei)) or out.lines[rule_at]
        out.rules.append(rule)
    for rid in examples:
        if rid not in seen:
            error(at + ("examples", rid), f"examples for {rid!r}, which is not a row of table {tid!r}")
    new_ids = {row.id for row in rows}
    if base:  # the hit policy covers the rows already there: a pack row with a known id replaces it
        rows = [r for r in base["rows"] if r.id not in new_ids] + rows
    out.tables.append({"id": tid, "hit": hit, "columns": columns, "rows": rows,
                       "new": new_ids, "outputs": dict(base["outputs"]) if base else {},
                       "spec": {k: v for k, v in table.items() if k not in ("rows", "examples")},
                       "contradicts": [tuple(p) for p in contradicts if isinstance(p, list) and len(p) == 2]})


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
