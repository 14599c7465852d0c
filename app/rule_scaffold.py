"""`j6doctor rules new`: a new rule file in a pack, with one rule whose example does not fire
it yet — `rules test` fails until the author has written the conditions and an example case
that shows them (the test comes first, as in Semgrep's and OPA's rule workflows)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from j6doctor.atomic_write import write_atomic
from j6doctor.engine import rule_file_schema

TEMPLATE = """\
title: {title}
seed: "TODO: the section of the specification (seed) this rule comes from"

rules:
  - id: {rule_id}
    title: {title}
    # Conditions on facts (j6doctor rules schema lists the types, fields and values;
    # docs/AUTHORING.md shows `not:`, `as:` and references between conditions).
    when:
      - result: {{artifact: quantized_bc, status: abnormal}}
    then:
      - finding: {{topic: {topic}, text: "TODO: what the report should say"}}
    examples:
      # Fill in a case that must fire the rule; add one with `fires: false` for each `not:`
      # guard, where only that guard keeps the rule from firing.
      - name: TODO a case that fires the rule
        case: {{}}
"""


def new_rule_file(pack: Path, rule_id: str, title: str | None = None) -> Path:
    """Write `<pack>/<rule_id>.yaml`; raise ValueError saying what is wrong (a bad id, a
    file that exists: it is never overwritten)."""
    if not re.match(rule_file_schema()["$defs"]["identifier"]["pattern"], rule_id):  # what the loader accepts
        raise ValueError(f"{rule_id!r}: a rule id starts with a letter and holds letters, digits, '_', '.', '-'")
    if pack.exists() and not pack.is_dir():
        raise ValueError(f"{pack}: not a folder; give the rule pack folder")
    path = pack / f"{rule_id.replace('.', '_')}.yaml"
    if path.exists():
        raise ValueError(f"{path}: exists; choose another id (or edit that file)")
    pack.mkdir(parents=True, exist_ok=True)
    text = TEMPLATE.format(rule_id=rule_id, title=json.dumps(title or f"TODO: what {rule_id} recognises",
                                                              ensure_ascii=False),
                           topic=json.dumps(rule_id.split(".")[0]))
    write_atomic(path, text)
    return path
