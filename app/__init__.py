"""j6doctor: which stage of the horizon_plugin_pytorch J6 deployment chain loses accuracy, and why.

The Python API (docs/usage.md, "From Python"): `j6doctor.diagnose(...)` returns a `Verdict`;
`j6doctor.Case.open(path).record(...)` writes an evaluation's result into a case file; every
refusal is a `J6DoctorError`. They are imported when first used, so that the command line
starts without them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Case", "J6DoctorError", "Verdict", "__version__", "diagnose"]

_EXPORTS = {"diagnose": "j6doctor.api", "Verdict": "j6doctor.api", "Case": "j6doctor.case_recorder",
            "J6DoctorError": "j6doctor.api_errors"}

if TYPE_CHECKING:
    from j6doctor.api import Verdict, diagnose
    from j6doctor.api_errors import J6DoctorError
    from j6doctor.case_recorder import Case


def __getattr__(name: str) -> Any:  # PEP 562: the API's modules load on first use
    if name in _EXPORTS:
        import importlib

        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'j6doctor' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
