"""Jinja templates of the reports."""

from pathlib import Path

TEMPLATES_DIR = Path(__file__).resolve().parent
