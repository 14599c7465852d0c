"""durable-rules' number parser, and where j6doctor works around it (engine/durable_backend.py
`_EngineTextRuleset`): at its own ruleset objects, with durable-rules itself left as it is.

The upstream behaviour (durable-rules 2.0.28): the C engine reads numbers in positional
notation only, and durable/engine.py hands it rulesets and facts written by the json module,
which writes small and large floats with an exponent. When an upgrade makes the first test
fail, the workaround can go."""

from __future__ import annotations

import json

import pytest

from conftest import durable_only

pytestmark = durable_only

RULE = '{"r": {"all": [{"m": {"$lt": {"v": %s}}}]}}'


def test_upstream_the_c_engine_reads_numbers_in_positional_notation_only():
    import durable_rules_engine

    assert json.dumps(1e-05) == "1e-05" and json.dumps(1e16) == "1e+16"  # what durable/engine.py writes
    durable_rules_engine.create_ruleset("positional_threshold", RULE % "0.00001")
    with pytest.raises(durable_rules_engine.error, match="error code: 204"):
        durable_rules_engine.create_ruleset("exponent_threshold", RULE % "1e-05")
    handle = durable_rules_engine.create_ruleset("numbers_in_facts", RULE % "1")
    durable_rules_engine.assert_fact(handle, '{"id": "a", "sid": "1", "v": 0.00001}')
    durable_rules_engine.assert_fact(handle, '{"id": "b", "sid": "1", "v": 10000000000000000}')
    for text in ("1e-05", "1e+16"):
        with pytest.raises(durable_rules_engine.error, match="error code: 204"):
            durable_rules_engine.assert_fact(handle, f'{{"id": "c", "sid": "1", "v": {text}}}')


def test_upstream_the_stock_ruleset_is_refused_a_threshold_json_writes_with_an_exponent():
    from durable.engine import Host, Ruleset

    class Actions(Host):
        def _run(self):  # no background threads
            pass

        def get_action(self, name):
            return lambda c: None

    with pytest.raises(Exception, match="error code: 204"):
        Ruleset("stock", Actions(), {"r": {"all": [{"m": {"$lt": {"v": 1e-05}}}], "run": "noted"}})


def test_our_rulesets_take_those_numbers_and_durable_rules_is_left_unchanged():
    import durable.engine

    from j6doctor.engine import durable_backend

    assert durable.engine.json is json  # the workaround is ours, not a change to durable-rules
    host = durable_backend._SyncHost()
    matched = []
    host._handlers["noted"] = lambda c: matched.append(c.m.id)
    host.add_ruleset("ours", {"r": {"all": [{"m": {"$lt": {"v": 1e-05}}}], "run": "noted"}})
    for fact_id, value in (("small", 9.5e-06), ("equal", 1e-05), ("huge", 1e16)):
        try:
            host.assert_fact("ours", {"id": fact_id, "sid": "1", "v": value})
        except durable.engine.MessageNotHandledException:
            pass  # a fact no rule matches
    assert matched == ["small"]
