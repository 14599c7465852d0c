"""Probes: each reads one kind of input (case file, artifact files, environment) and
turns it into a few summarising input facts with their sources. A probe knows its file
format and nothing about rules."""

from j6doctor.probes.input_error import InputError

__all__ = ["InputError"]
