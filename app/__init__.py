"""j6doctor: which stage of the horizon_plugin_pytorch J6 deployment chain loses accuracy, and why."""

__version__ = "0.1.0"

# Before any of j6doctor's record classes is created: their generated code comes compiled
# from the user's cache (dataclass_code.py), written back at exit when something was new.
from j6doctor import dataclass_code as _dataclass_code  # noqa: E402

_dataclass_code.install()
