"""What makes two diagnoses alike: the features (feature:value) the fact vocabulary's
`similar_by` declares on each fact type (stage chain, platform family, flow, findings, the
error origin's op type, what the user's words said, mistakes, missing items ...), compared
by the share they have in common. Similar cases are listed beside a verdict, never used to
make it."""

from __future__ import annotations

from typing import Any, Iterable

MIN_SIMILARITY = 0.35  # below this share of common features a case is not "similar"


def signature(facts: Iterable[Any]) -> list[str]:
    """The sorted features of one run's facts (input and derived: engine Facts, with `type`
    and `fields`); a feature whose field is empty is left out."""
    from j6doctor.facts import vocabulary

    types = vocabulary().types
    out: set[str] = set()
    for fact in facts:
        spec = types.get(fact.type)
        for feature, names in (spec.similar_by if spec is not None else ()):
            values = [fact.fields.get(name) for name in names]
            if all(v not in (None, "") for v in values):
                out.add(":".join([feature, *map(str, values)]))
    return sorted(out)


def feature_value(features: Iterable[str], feature: str) -> str:
    """The value of a one-field feature (`family` → J6M), "" when the run has none."""
    prefix = feature + ":"
    return next((f[len(prefix):] for f in features if f.startswith(prefix)), "")


def similarity(a: Iterable[str], b: Iterable[str]) -> float:
    """Shared features over all features of the two (Jaccard)."""
    left, right = set(a), set(b)
    union = left | right
    return len(left & right) / len(union) if union else 0.0
