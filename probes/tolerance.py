"""How much worse than its baseline an evaluation result may be before it counts as a drop:
the tolerance of the metrics file, the case's `metrics` key or --tolerance."""

from __future__ import annotations

from typing import Any, Mapping, NamedTuple


class Tolerance(NamedTuple):
    """A drop is worse than the baseline by more than `value` (a fraction of the baseline when
    `relative`), in the direction `higher_is_better` says."""

    value: float = 0.01
    relative: bool = True
    higher_is_better: bool = True

    def describe(self) -> str:
        kind = f"相对基线 {self.value:.4g}（{self.value * 100:.4g}%）" if self.relative else f"绝对值 {self.value:.4g}"
        return kind + ("，指标越大越好" if self.higher_is_better else "，指标越小越好")

    def drop(self, baseline: float, value: float) -> tuple[float, float]:
        """How much `value` is worse than `baseline`, and the drop this tolerance allows."""
        drop = (baseline - value) if self.higher_is_better else (value - baseline)
        threshold = self.value * abs(baseline) if self.relative else self.value
        return drop, threshold


def case_tolerance(spec: Mapping[str, Any]) -> Tolerance:
    """The tolerance a case's `metrics:` mapping sets (tolerance, relative, higher_is_better),
    the defaults for what it leaves out."""
    return Tolerance(value=float(spec.get("tolerance", 0.01)), relative=bool(spec.get("relative", True)),
                     higher_is_better=bool(spec.get("higher_is_better", True)))
