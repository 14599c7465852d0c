"""j6doctor: which stage of the horizon_plugin_pytorch J6 deployment chain loses accuracy, and why."""

__version__ = "0.1.0"
