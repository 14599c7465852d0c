"""The bundled rule base: YAML files, one per table of the specification."""

from pathlib import Path

BUNDLED_RULES_DIR = Path(__file__).resolve().parent
