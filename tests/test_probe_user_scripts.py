"""User-script probe: API misuse found with `ast` (KNOWLEDGE.md §3, §7, §9, §10), never by
importing the script."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from j6doctor.probes.input_error import InputError
from j6doctor.probes.user_scripts import KINDS, ScriptFinding, ScriptReport, check_script, check_source

HEADER = """\
import torch
from horizon_plugin_pytorch.quantization import FakeQuantState, set_fake_quantize, prepare
from horizon_plugin_pytorch.quantization.hbdk4 import export, pre_export
from horizon_plugin_pytorch.qat_mode import ConsistencyStrategy
from hbdk4.compiler import convert
from horizon_plugin_profiler import QuantAnalysis
"""


def src(body: str, header: bool = True) -> str:
    return (HEADER if header else "") + textwrap.dedent(body).lstrip("\n")


def line_of(source: str, needle: str, nth: int = 1) -> int:
    """1-based line of the nth line containing `needle`."""
    hits = [i for i, line in enumerate(source.split("\n"), 1) if needle in line]
    assert len(hits) >= nth, f"{needle!r} not in source"
    return hits[nth - 1]


def check(source: str) -> ScriptReport:
    return check_source(source, "script.py")


def found(source: str) -> list[tuple[str, int]]:
    return [(f.kind, f.line) for f in check(source).findings]


def only(source: str, kind: str) -> list[ScriptFinding]:
    return [f for f in check(source).findings if f.kind == kind]


# ---------------------------------------------------------------- correct scripts

# The §10 / seed flow end to end: strategy before prepare, retraining, eval + VALIDATION
# before pre_export/export, convert from hbdk4.compiler, the QuantAnalysis flows of every
# stage (auto_find_bad_case -> run -> compare_per_layer -> sensitivity, the split run,
# load_bad_case), bc_editor and the partial pre_export for bisection.
FULL_CORRECT = src('''
    from hbdk4.compiler import compile as hbdk_compile
    from horizon_plugin_profiler.bc_editor.bc_editor import QatBcEditor


    def train_one_epoch(model, loader, optimizer):
        model.train()
        for data, target in loader:
            loss = torch.nn.functional.cross_entropy(model(data), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


    def build_qat_model(float_model, example_inputs, level):
        # must be set before prepare
        ConsistencyStrategy.set_consistency_level(level)
        qat_model = prepare(float_model, example_inputs)
        return qat_model


    def set_validation(model):
        model.eval()
        set_fake_quantize(model, FakeQuantState.VALIDATION)


    def main(float_model, example_inputs, loader, dataloader, march="nash-m"):
        ConsistencyStrategy.set_consistency_level(0)
        qat_pt = prepare(float_model, example_inputs)
        qat_pt.load_state_dict(torch.load("float.pth"))
        optimizer = torch.optim.SGD(qat_pt.parameters(), lr=0.01)
        for epoch in range(10):
            train_one_epoch(qat_pt, loader, optimizer)

        qat_pt.eval()
        set_fake_quantize(qat_pt, FakeQuantState.VALIDATION)
        qat_export_pt = pre_export(qat_pt)
        qat_bc = export(qat_pt, example_inputs)
        quantized_bc = convert(qat_bc, march)
        hbm = hbdk_compile(quantized_bc, "model.hbm", march)

        qa = QuantAnalysis(qat_pt, qat_export_pt, "pre_export", out_dir="./qa_pre_export")
        qa.auto_find_bad_case(dataloader)
        qa.run()
        qa.compare_per_layer()
        qa.sensitivity()

        qa = QuantAnalysis(qat_export_pt, qat_bc, "export", out_dir="./qa_export")
        qa.set_bad_case(pt_badcase)
        qa.run(run_baseline_model=True, run_analysis_model=False)
        qa.set_bad_case(bc_badcase)
        qa.run(run_baseline_model=False, run_analysis_model=True)
        qa.compare_per_layer()
        qa.sensitivity()

        qa = QuantAnalysis(qat_bc, quantized_bc, "convert", out_dir="./qa_convert")
        qa.auto_find_bad_case(dataloader)
        qa.run()
        qa.compare_per_layer()

        qa = QuantAnalysis(qat_export_pt, quantized_bc, "convert", out_dir="./qa_convert_sens")
        qa.load_bad_case()
        qa.sensitivity()

        asm_info = qat_bc.module.get_asm(enable_debug_info=True)
        editor = QatBcEditor(bc_path="qat.bc", config_path="config.json", new_bc_path="qat_modified.bc")
        editor.run()
        quantized_modified_bc = convert(qat_modified_bc, march)

        qat_pt.module_a = pre_export(qat_pt.module_a)


    def retrain_level1(float_model, example_inputs, loader):
        qat_model = build_qat_model(float_model, example_inputs, 1)
        set_validation(qat_model)
        return export(qat_model, example_inputs)


    if __name__ == "__main__":
        main(*load_everything())
''')


def test_full_correct_script_has_no_findings():
    report = check(FULL_CORRECT)
    assert report.display == "script.py"
    assert report.findings == []
    assert {"quant_analysis", "analysis_type:pre_export", "analysis_type:export",
            "analysis_type:convert", "split_run", "single_run", "consistency_strategy",
            "consistency_level:0", "bc_editor", "sensitivity", "compare_per_layer"} <= report.uses
    assert "fake_quant_float" not in report.uses


def test_seed_export_snippet_is_clean():
    s = src('''
        qat_pt.eval()
        set_fake_quantize(qat_pt, FakeQuantState.VALIDATION)
        qat_export_pt = pre_export(qat_pt)
        qat_bc = export(qat_pt, example_inputs)
        quantized_bc = convert(qat_bc, march)
    ''')
    assert found(s) == []


def test_empty_and_comment_only_scripts_are_valid(tmp_path):
    empty = tmp_path / "empty.py"
    empty.write_bytes(b"")
    report = check_script(empty)
    assert report.display == "empty.py" and report.findings == [] and report.uses == set()
    assert check_source("# nothing here\n", "x.py").findings == []


def test_every_kind_is_declared():
    assert len(KINDS) == len(set(KINDS)) == 13


# ---------------------------------------------------------------- convert_wrong_module

def test_convert_imported_from_plugin_hbdk4():
    s = "from horizon_plugin_pytorch.quantization.hbdk4 import export, convert\nquantized_bc = convert(qat_bc, march)\n"
    findings = only(s, "convert_wrong_module")
    assert [(f.line) for f in findings] == [1]
    assert "hbdk4.compiler" in findings[0].detail


def test_convert_called_through_plugin_module_path():
    s = src('''
        import horizon_plugin_pytorch
        import horizon_plugin_pytorch.quantization.hbdk4 as h4
        a = horizon_plugin_pytorch.quantization.hbdk4.convert(qat_bc, "nash-m")
        b = h4.convert(qat_bc, "nash-m")
    ''')
    assert [f.line for f in only(s, "convert_wrong_module")] == [
        line_of(s, "a = horizon"), line_of(s, "b = h4")]


def test_plugin_legacy_convert_only_reported_when_called_like_hbdk4():
    wrong = "from horizon_plugin_pytorch.quantization import convert\nq = convert(qat_bc, march)\n"
    assert found(wrong) == [("convert_wrong_module", 2)]
    legacy = "from horizon_plugin_pytorch.quantization import convert\nq = convert(qat_model, inplace=False)\n"
    assert found(legacy) == []


def test_convert_from_hbdk4_compiler_is_fine():
    s = "from hbdk4.compiler import convert\nimport hbdk4.compiler as hc\nq = convert(qat_bc, march)\nq2 = hc.convert(qat_bc, 'nash-e')\n"
    assert found(s) == []


# ---------------------------------------------------------------- export_wrong_module

def test_export_imported_from_hbdk4_compiler():
    s = "from hbdk4.compiler import (\n    convert,\n    export,\n)\n"
    findings = only(s, "export_wrong_module")
    assert [f.line for f in findings] == [3]
    assert "horizon_plugin_pytorch.quantization.hbdk4" in findings[0].detail


def test_pre_export_from_wrong_module_and_attribute_call():
    s = ("from horizon_plugin_pytorch.quantization import pre_export\n"
         "import hbdk4.compiler as hc\n"
         "bc = hc.export(qat_model, example_inputs)\n")
    assert found(s) == [("export_wrong_module", 1), ("export_wrong_module", 3)]


def test_export_from_plugin_hbdk4_or_other_libraries_is_fine():
    s = ("from horizon_plugin_pytorch.quantization.hbdk4 import export as hb_export, pre_export\n"
         "from torch.onnx import export\n"
         "from torch.export import export as torch_export\n"
         "export(float_model, x, 'model.onnx')\n")
    assert found(s) == []


# ---------------------------------------------------------------- export_without_eval / _validation

def test_export_without_eval():
    s = src('''
        set_fake_quantize(qat_model, FakeQuantState.VALIDATION)
        qat_bc = export(qat_model, example_inputs)
    ''')
    findings = check(s).findings
    assert [(f.kind, f.line) for f in findings] == [("export_without_eval", line_of(s, "qat_bc ="))]
    assert findings[0].detail == "export(qat_model, ...) without qat_model.eval() before it"


def test_export_without_validation():
    s = src('''
        qat_model.eval()
        qat_export_pt = pre_export(qat_model)
    ''')
    findings = check(s).findings
    assert [(f.kind, f.line) for f in findings] == [("export_without_validation", line_of(s, "qat_export_pt ="))]
    assert findings[0].detail == ("pre_export(qat_model, ...) without "
                                  "set_fake_quantize(qat_model, FakeQuantState.VALIDATION) before it")


def test_export_state_checked_per_function_scope():
    s = src('''
        qat_model.eval()
        set_fake_quantize(qat_model, FakeQuantState.VALIDATION)

        def export_it(example_inputs):
            model = torch.load("qat.pt")
            return export(model, example_inputs)
    ''')
    line = line_of(s, "return export")
    assert found(s) == [("export_without_eval", line), ("export_without_validation", line)]


def test_state_set_after_export_does_not_count():
    s = src('''
        qat_bc = export(qat_model, example_inputs)
        qat_model.eval()
        set_fake_quantize(qat_model, FakeQuantState.VALIDATION)
    ''')
    line = line_of(s, "qat_bc =")
    assert found(s) == [("export_without_eval", line), ("export_without_validation", line)]


def test_export_aliases_are_resolved():
    s = ("import horizon_plugin_pytorch.quantization.hbdk4 as h4\n"
         "from horizon_plugin_pytorch.quantization.hbdk4 import pre_export as pe\n"
         "a = h4.export(m, x)\n"
         "b = pe(m)\n")
    kinds = found(s)
    assert ("export_without_eval", 3) in kinds and ("export_without_eval", 4) in kinds
    star = "from horizon_plugin_pytorch.quantization.hbdk4 import *\nqat_model.eval()\nbc = export(qat_model, x)\n"
    assert found(star) == [("export_without_validation", 3)]
    shadowed = "from horizon_plugin_pytorch.quantization.hbdk4 import *\ndef export(m, x):\n    pass\nexport(m, x)\n"
    assert found(shadowed) == []


def test_export_state_conservative_cases_are_silent():
    s = src('''
        import torch.onnx

        def export_for_board(model, example_inputs):
            # the caller sets the state of a parameter
            return export(model, example_inputs)

        def use_global(example_inputs):
            return export(qat_model, example_inputs)       # free variable: set elsewhere

        def prepare_for_export(m):
            m.eval()
            set_fake_quantize(m, FakeQuantState.VALIDATION)

        def main(example_inputs, state):
            qat = torch.load("qat.pt")
            prepare_for_export(qat)                        # local helper sets the state
            bc = export(qat, example_inputs)
            other = torch.load("other.pt").eval()
            set_fake_quantize(other, state)                # computed state: may be VALIDATION
            bc2 = export(other, example_inputs)
            part = pre_export(qat.module_a)                # not a plain name: skipped
            torch.onnx.export(float_model, example_inputs, "m.onnx")

        class Exporter:
            def run(self, example_inputs):
                model = self.model                          # alias: state set elsewhere
                for name, sub in self.parts.items():        # loop variable: alias
                    pre_export(sub)
                twin = copy.deepcopy(model)                 # a copy keeps the state
                return export(model, example_inputs), export(twin, example_inputs)

        fn = lambda m, x: export(m, x)

        qat_model.train(False)
        set_fake_quantize(qat_model, FakeQuantState.VALIDATION)
        qat_export_pt = pre_export(qat_model)
        bc = export(qat_export_pt, example_inputs)         # pre_export result: already checked
    ''')
    assert found(s) == []


def test_parameter_checked_once_the_function_sets_its_state():
    s = src('''
        def export_model(qat_model, example_inputs):
            qat_model.eval()
            return export(qat_model, example_inputs)

        def export_float(qat_model, example_inputs):
            qat_model.eval()
            set_fake_quantize(qat_model, FakeQuantState._FLOAT)
            return export(qat_model, example_inputs)

        def export_ok(qat_model, example_inputs):
            qat_model.eval()
            set_fake_quantize(qat_model, FakeQuantState.VALIDATION)
            return export(qat_model, example_inputs)
    ''')
    assert found(s) == [("export_without_validation", line_of(s, "return export")),
                        ("float_state_export", line_of(s, "return export", 2))]


# ---------------------------------------------------------------- float_state_export

def test_float_state_export_seed_diagnostic_snippet():
    s = src('''
        qat_pt.eval()
        set_fake_quantize(qat_pt, FakeQuantState._FLOAT)
        qat_bc = export(qat_pt, example_inputs)
        qat_export_pt = pre_export(qat_pt)
    ''')
    report = check(s)
    # _FLOAT is reported once per export call; export_without_validation is not added on top.
    assert [(f.kind, f.line) for f in report.findings] == [
        ("float_state_export", line_of(s, "qat_bc =")),
        ("float_state_export", line_of(s, "qat_export_pt ="))]
    assert f"at line {line_of(s, '_FLOAT')}" in report.findings[0].detail
    assert "fake_quant_float" in report.uses


def test_float_state_after_validation_still_reported():
    s = src('''
        qat_pt.eval()
        set_fake_quantize(qat_pt, FakeQuantState.VALIDATION)
        set_fake_quantize(qat_pt, FakeQuantState._FLOAT)
        qat_bc = export(qat_pt, example_inputs)
    ''')
    assert found(s) == [("float_state_export", line_of(s, "qat_bc ="))]


def test_float_state_then_validation_is_fine():
    s = src('''
        qat_pt.eval()
        set_fake_quantize(qat_pt, FakeQuantState._FLOAT)
        check_bc_flow(qat_pt)
        set_fake_quantize(qat_pt, FakeQuantState.VALIDATION)
        qat_bc = export(qat_pt, example_inputs)
    ''')
    report = check(s)
    assert report.findings == [] and "fake_quant_float" in report.uses


# ---------------------------------------------------------------- strategy_after_prepare

def test_strategy_after_prepare():
    s = src('''
        qat_model = prepare(float_model, example_inputs)
        ConsistencyStrategy.set_consistency_level(1)
        train(qat_model)
    ''')
    findings = check(s).findings
    assert [(f.kind, f.line) for f in findings] == [
        ("strategy_after_prepare", line_of(s, "set_consistency_level"))]
    assert f"prepare(...) at line {line_of(s, 'qat_model = prepare')}" in findings[0].detail


def test_strategy_after_prepare_in_function_and_loop():
    s = src('''
        def sweep(float_model, example_inputs):
            for level in (0, 1):
                qat_model = prepare(float_model, example_inputs)   # uses the previous level
                ConsistencyStrategy.set_consistency_level(level)
                fit(qat_model)
    ''')
    assert found(s) == [("strategy_after_prepare", line_of(s, "set_consistency_level"))]


def test_strategy_before_prepare_is_fine():
    s = src('''
        # must be set before prepare
        ConsistencyStrategy.set_consistency_level(1)
        qat_pt = prepare(float_model)
        train(qat_pt)

        def two_models(float_model):
            baseline = prepare(float_model)
            ConsistencyStrategy.set_consistency_level(1)   # before the second prepare
            high = prepare(float_model)
            trainer.fit(high)
    ''')
    assert found(s) == []


# ---------------------------------------------------------------- strategy_level2_first

def test_strategy_level2_first():
    s = src('''
        ConsistencyStrategy.set_consistency_level(2)
        qat_pt = prepare(float_model)
        train(qat_pt)
    ''')
    findings = check(s).findings
    assert [(f.kind, f.line) for f in findings] == [
        ("strategy_level2_first", line_of(s, "set_consistency_level(2)"))]
    assert check(s).uses >= {"consistency_strategy", "consistency_level:2"}


def test_strategy_levels_in_order_or_computed_are_fine():
    ordered = src('''
        ConsistencyStrategy.set_consistency_level(0)
        ConsistencyStrategy.set_consistency_level(1)
        ConsistencyStrategy.set_consistency_level(2)
        qat_pt = prepare(float_model)
        train(qat_pt)
    ''')
    assert found(ordered) == []
    computed = src('''
        ConsistencyStrategy.set_consistency_level(args.level)
        ConsistencyStrategy.set_consistency_level(2)
        qat_pt = prepare(float_model)
        train(qat_pt)
    ''')
    assert found(computed) == []


# ---------------------------------------------------------------- strategy_on_checkpoint

def test_strategy_on_existing_checkpoint():
    s = src('''
        ConsistencyStrategy.set_consistency_level(1)
        qat_pt = prepare(float_model, example_inputs)
        qat_pt.load_state_dict(torch.load("qat_ckpt.pth"))
        evaluate(qat_pt)
    ''')
    findings = check(s).findings
    assert [(f.kind, f.line) for f in findings] == [
        ("strategy_on_checkpoint", line_of(s, "load_state_dict"))]
    assert f"set_consistency_level(1) at line {line_of(s, 'set_consistency_level')}" in findings[0].detail


def test_strategy_with_retraining_or_level0_is_fine():
    retrained = src('''
        ConsistencyStrategy.set_consistency_level(1)
        qat_pt = prepare(float_model, example_inputs)
        qat_pt.load_state_dict(torch.load("float.pth"))
        train_one_epoch(qat_pt, loader)
    ''')
    assert found(retrained) == []
    level0 = src('''
        ConsistencyStrategy.set_consistency_level(0)
        qat_pt = prepare(float_model, example_inputs)
        qat_pt.load_state_dict(torch.load("qat_ckpt.pth"))
    ''')
    assert found(level0) == []
    load_before_level = src('''
        ckpt = torch.load("qat_ckpt.pth")
        ConsistencyStrategy.set_consistency_level(1)
        qat_pt = prepare(float_model, example_inputs)
    ''')
    assert found(load_before_level) == []


# ---------------------------------------------------------------- run_before_badcase

def test_run_before_badcase():
    s = src('''
        qa = QuantAnalysis(qat_bc, quantized_bc, "convert", out_dir="./qa_convert")
        qa.run()
        qa.auto_find_bad_case(dataloader)
        qa.run()
        qa.compare_per_layer()
    ''')
    findings = check(s).findings
    assert [(f.kind, f.line) for f in findings] == [("run_before_badcase", line_of(s, "qa.run()"))]
    assert "qa.run()" in findings[0].detail and "qa.auto_find_bad_case()" in findings[0].detail


def test_rebinding_starts_a_new_quant_analysis():
    s = src('''
        qa = QuantAnalysis(qat_pt, qat_export_pt, "pre_export")
        qa.auto_find_bad_case(dataloader)
        qa.run()
        qa = QuantAnalysis(qat_export_pt, qat_bc, "export")
        qa.run()
    ''')
    assert found(s) == [("run_before_badcase", line_of(s, "qa.run()", 2))]


def test_run_after_badcase_orders_are_fine():
    s = src('''
        qa = QuantAnalysis(qat_pt, qat_export_pt, "pre_export", out_dir="./qa_pre_export")
        qa.auto_find_bad_case(dataloader)
        qa.run()
        qa.compare_per_layer()
        qa.sensitivity()

        qa2 = QuantAnalysis(qat_export_pt, qat_bc, "export")
        qa2.set_bad_case(pt_badcase)
        qa2.run(run_baseline_model=True, run_analysis_model=False)
        qa2.set_bad_case(bc_badcase)
        qa2.run(run_baseline_model=False, run_analysis_model=True)
        qa2.compare_per_layer()

        def replay(qa):
            qa.run()                      # received as a parameter: not followed

        qa3 = QuantAnalysis(qat_bc, quantized_bc, "convert")
        if use_cached:
            qa3.load_bad_case()
        else:
            qa3.auto_find_bad_case(dataloader)
        qa3.run()
    ''')
    report = check(s)
    assert report.findings == []
    assert {"split_run", "single_run", "sensitivity", "compare_per_layer"} <= report.uses


def test_split_run_only():
    s = src('''
        qa = QuantAnalysis(qat_export_pt, qat_bc, "export")
        qa.set_bad_case(pt_badcase)
        qa.run(run_baseline_model=True, run_analysis_model=False)
    ''')
    uses = check(s).uses
    assert "split_run" in uses and "single_run" not in uses


# ---------------------------------------------------------------- analysis_model_type

def test_unknown_analysis_type():
    s = src('''
        qa = QuantAnalysis(qat_bc, quantized_bc, analysis_model_type="hbm_compile")
    ''')
    findings = check(s).findings
    assert [(f.kind, f.line) for f in findings] == [("unknown_analysis_type", line_of(s, "qa ="))]
    for allowed in ("fake_quant", "pre_export", "export", "convert", "quantized", "hbir"):
        assert allowed in findings[0].detail
    assert "analysis_type:hbm_compile" in check(s).uses


def test_deprecated_analysis_type():
    s = src('''
        qa = QuantAnalysis(qat_pt, qat_export_pt, "pt_lut")
    ''')
    findings = check(s).findings
    assert [(f.kind, f.line) for f in findings] == [("deprecated_analysis_type", line_of(s, "qa ="))]
    assert "pre_export" in findings[0].detail


def test_known_analysis_types_are_fine():
    lines = [f'qa{i} = QuantAnalysis(a{i}, b{i}, "{t}")'
             for i, t in enumerate(("fake_quant", "pre_export", "export", "convert", "quantized", "hbir"))]
    s = src("\n".join(lines) + "\nqa9 = QuantAnalysis(a, b, analysis_type)\n")
    report = check(s)
    assert report.findings == []
    assert "analysis_type:quantized" in report.uses and "quant_analysis" in report.uses


# ---------------------------------------------------------------- quant_analysis_on_hbm

def test_quant_analysis_on_hbm():
    s = src('''
        from hbdk4.compiler import Hbm
        qa1 = QuantAnalysis(quantized_bc, hbm_model, "convert")
        qa2 = QuantAnalysis(quantized_bc, "deploy/model.hbm", "convert")
        qa3 = QuantAnalysis(quantized_bc, Hbm("model.hbm"), "convert")
        qa4 = QuantAnalysis(baseline_model=quantized_bc, analysis_model=load_hbm(path), analysis_model_type="convert")
    ''')
    findings = only(s, "quant_analysis_on_hbm")
    assert [f.line for f in findings] == [line_of(s, f"qa{i} =") for i in (1, 2, 3, 4)]
    assert "hbm_model" in findings[0].detail


def test_quant_analysis_on_bc_is_fine():
    s = src('''
        qa = QuantAnalysis(qat_bc, quantized_bc, "convert")
    ''')
    assert found(s) == []


# ---------------------------------------------------------------- export_compare_skips_export_pt

def test_export_compare_skips_export_pt():
    s = src('''
        qa = QuantAnalysis(qat_pt, qat_bc, "export")
    ''')
    findings = check(s).findings
    assert [(f.kind, f.line) for f in findings] == [("export_compare_skips_export_pt", line_of(s, "qa ="))]
    assert "qat_pt" in findings[0].detail and "qat.export.pt" in findings[0].detail


def test_export_compare_with_export_pt_is_fine():
    s = src('''
        qa = QuantAnalysis(qat_export_pt, qat_bc, "export")
        qat_model = pre_export(qat_ready)                  # a pre_export result
        qa2 = QuantAnalysis(qat_model, qat_bc, "export")
        qat_loaded = torch.load("out/qat.export.pt")
        qa3 = QuantAnalysis(qat_loaded, qat_bc, "export")
        qa4 = QuantAnalysis(qat_bc, quantized_bc, "convert")
        qa5 = QuantAnalysis(qat_pt, qat_export_pt, "pre_export")
    ''')
    assert only(s, "export_compare_skips_export_pt") == []


# ---------------------------------------------------------------- report shape

def test_findings_sorted_by_line_and_kind():
    s = src('''
        qat_bc = export(qat_pt, example_inputs)
        qa = QuantAnalysis(qat_pt, hbm_model, "export")
        qa.run()
    ''')
    report = check(s)
    keys = [(f.line, f.kind) for f in report.findings]
    assert keys == sorted(keys)
    assert ("export_without_eval" in {k for _, k in keys}
            and "quant_analysis_on_hbm" in {k for _, k in keys}
            and "run_before_badcase" in {k for _, k in keys})
    assert all(f.kind in KINDS for f in report.findings)


# ---------------------------------------------------------------- bad input

def write(tmp_path: Path, data: bytes, name: str = "script.py") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_syntax_error_gives_the_line(tmp_path):
    path = write(tmp_path, b"import torch\n\ndef f(:\n    pass\n")
    with pytest.raises(InputError) as err:
        check_script(path)
    assert err.value.file == "script.py"
    assert err.value.line == 3
    assert "syntax error" in err.value.message


def test_indentation_error_gives_the_line():
    with pytest.raises(InputError) as err:
        check_source("x = 1\n  y = 2\n", "s.py")
    assert err.value.line == 2


def test_nul_bytes_rejected(tmp_path):
    path = write(tmp_path, b"import torch\nx = 1\x00\n")
    with pytest.raises(InputError) as err:
        check_script(path)
    assert "NUL" in err.value.message and err.value.line == 2
    with pytest.raises(InputError):
        check_source("a = 1\x00", "s.py")


def test_non_utf8_rejected(tmp_path):
    path = write(tmp_path, "# 量化导出脚本\nx = 1\n".encode("gbk"))
    with pytest.raises(InputError) as err:
        check_script(path, display="export.py")
    assert err.value.file == "export.py"
    assert "not UTF-8" in err.value.message and err.value.line == 1


def test_missing_file_and_folder(tmp_path):
    with pytest.raises(InputError):
        check_script(tmp_path / "nope.py")
    with pytest.raises(InputError):
        check_script(tmp_path)


def test_utf8_bom_and_warnings_are_fine(tmp_path, capsys):
    path = write(tmp_path, "\ufeffimport re\npattern = re.compile('\\d+')\n".encode("utf-8"))
    assert check_script(path).findings == []
    assert capsys.readouterr().err == ""


def test_script_is_never_imported_or_executed(tmp_path, monkeypatch):
    marker = tmp_path / "executed.txt"
    script = (f"open({str(marker)!r}, 'w').write('ran')\n"
              "import sys\nsys.exit(3)\n"
              "raise RuntimeError('must not run')\n")
    path = write(tmp_path, script.encode("utf-8"), "side_effect.py")
    monkeypatch.syspath_prepend(str(tmp_path))
    report = check_script(path)
    assert report.findings == []
    assert not marker.exists()
