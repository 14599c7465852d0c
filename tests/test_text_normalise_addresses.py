"""The expression that finds whitespace runs and web addresses (engine/text_normalise.py,
_changed_or_address) is written with each alternative opening with one character, for speed:
it finds what its plain form (spaces, then addresses in a row; else a run) finds."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from j6doctor.engine.text_normalise import _RUNS, _changed_or_address

PLAIN = re.compile(r" *(?:(?:https?://|www\.)(?a:[\w.~:/?#@!$&*+=%-])+ *)+|" + _RUNS)
PIECES = [" ", "  ", "h", "w", "www.", "http://", "https://", "a", "中", ".", "/", "é", "x"]


@settings(derandomize=True, database=None, deadline=None, max_examples=3000)
@given(st.lists(st.sampled_from(PIECES), max_size=14))
def test_the_runs_and_addresses_are_those_of_the_plain_expression(pieces):
    text = "".join(pieces)
    assert [m.span() for m in _changed_or_address().finditer(text)] == [m.span() for m in PLAIN.finditer(text)]
