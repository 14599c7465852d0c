"""Cross-checking the two engine backends: the same facts must give the same run.

Both backends compile the same rule model; a difference between their runs is a bug in one
translation. `J6DOCTOR_CROSS_CHECK=1` makes every run of a rule base also run on the other
installed engine and fail with the first difference (the test suite sets it).
"""

from __future__ import annotations

import json
import os
from typing import Any

CROSS_CHECK_VARIABLE = "J6DOCTOR_CROSS_CHECK"


def cross_check_enabled() -> bool:
    return os.environ.get(CROSS_CHECK_VARIABLE, "") == "1"


def _run_text(result: Any) -> list[str]:
    """One line per derived fact and per firing: what must be identical."""
    lines = [json.dumps(f.as_dict(), sort_keys=True, ensure_ascii=False, default=str)
             for f in result.facts if f.derivation is not None]
    lines += [json.dumps(f.as_dict(), sort_keys=True) for f in result.firings]
    lines.append(f"truncated={result.truncated}")
    return lines


def first_difference(a: Any, b: Any) -> str | None:
    """None when runs `a` and `b` derived the same facts by the same firings, in the same
    order; else the first line where they differ."""
    left, right = _run_text(a), _run_text(b)
    if left == right:
        return None
    for index, (x, y) in enumerate(zip(left, right)):
        if x != y:
            return f"entry {index}: {a.engine}: {x[:600]} | {b.engine}: {y[:600]}"
    longer, name = (left, a.engine) if len(left) > len(right) else (right, b.engine)
    return f"only {name} has entry {min(len(left), len(right))}: {longer[min(len(left), len(right))][:600]}"
