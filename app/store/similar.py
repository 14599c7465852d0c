"""The normalised facts by which cases are compared: stage chain, platform family, flow,
findings, the error origin's op type, what the user's words said, mistakes and the missing
items. Similar cases are listed beside a verdict, never used to make it."""

from __future__ import annotations

from typing import Any, Iterable

MIN_SIMILARITY = 0.35  # below this share of common features a case is not "similar"


def signature(verdict: dict[str, Any], facts: Iterable[dict[str, Any]]) -> list[str]:
    """Sorted features of one diagnosis (its JSON verdict and input facts as stored)."""
    out = {f"stage:{verdict['stage']}"}
    if verdict.get("chain_stage"):
        out.add(f"chain:{verdict['chain_stage']['stage']}")
    if verdict.get("flow"):
        out.add(f"flow:{verdict['flow']['flow']}")
    out |= {f"candidate:{c['stage']}" for c in verdict.get("candidates", [])}
    out |= {f"finding:{f['topic']}" for f in verdict.get("findings", [])}
    out |= {f"said:{t['topic']}:{t['kind']}" for t in verdict.get("text_facts", [])}
    out |= {f"mistake:{m['id']}" for m in verdict.get("mistakes", [])}
    out |= {f"missing:{m}" for m in verdict.get("missing", [])}
    for fact in facts:
        fields = fact["fields"]
        if fact["type"] == "platform":
            out.add(f"family:{fields['family']}")
            out.add(f"series:{fields['series']}")
        elif fact["type"] == "result":
            out.add(f"result:{fields['artifact']}:{fields['status']}")
        elif fact["type"] == "failure":
            out.add(f"failure:{fields['artifact']}:{fields['kind']}")
        elif fact["type"] == "compare_origin":
            out.add(f"origin_op:{op_type(fields['op_type'])}")
    return sorted(out)


def op_type(text: str) -> str:
    """The op type of a compare row without module path or suffix: `Conv2d`, `add`."""
    return text.split("[")[0].strip().split(".")[-1] if text else ""


def similarity(a: Iterable[str], b: Iterable[str]) -> float:
    """Shared features over all features of the two (Jaccard)."""
    left, right = set(a), set(b)
    union = left | right
    return len(left & right) / len(union) if union else 0.0
