"""Files of each kind j6doctor reads, just under that reader's size limit: the generators of
section 6 of bench_all.py (peak memory of `diagnose --workdir` on the largest accepted input
of each kind; target: under 1 GiB).

    python benchmarks/bench_all.py --sections 6                      # all kinds (about a minute)
    python benchmarks/bench_all.py --sections 6 --kinds badcase_txt,fx_graph

Rows are in the layouts of shared/formats, repeated with new names. A file over a limit is
refused before it is read (tests/test_input_bounds.py checks that); this makes the worst
accepted case.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Callable

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
sys.path.insert(0, str(REPO / "tests"))
from synthetic import big_rows, csv_text, psql, simple  # noqa: E402  (test data generator)

FORMATS = REPO / "tests" / "fixtures" / "formats"
MARGIN = 64 * 1024  # generated files stay this far under a limit


def _fill(limit: int, head: str, row: Callable[[int], str], tail: str = "") -> str:
    """head + as many rows as fit under limit - MARGIN + tail."""
    parts, size, i = [head], len(head.encode()) + len(tail.encode()), 0
    while True:
        line = row(i) + "\n"
        size += len(line.encode())
        if size > limit - MARGIN:
            break
        parts.append(line)
        i += 1
    parts.append(tail)
    return "".join(parts)


def _rows_until(limit: int, per_row: int) -> int:
    return max(1, (limit - MARGIN) // per_row)


# ---------------------------------------------------------------- generators, one per kind

def compare_csv(limit: int) -> str:
    sample = csv_text(big_rows(3000))
    n = int(_rows_until(limit, len(sample) // 3001) * 0.95)  # names get longer with n
    return csv_text(big_rows(n, origin_at=n - 50))


def compare_txt(limit: int) -> str:
    sample = psql(big_rows(3000))
    n = int(_rows_until(limit, len(sample) // 3003) * 0.95)  # names get longer with n
    return psql(big_rows(n, origin_at=n - 50)) + "\n"


def sensitivity(limit: int) -> str:
    headers = ["op_name", "sensitive_type", "op_type", "Cosine", "quant_dtype", "flops"]
    row = ["backbone.layer0000000.conv", "activation",
           "<class 'horizon_plugin_pytorch.nn.qat.conv2d.Conv2d'>", 0.967311, "qint8", "4718592(14.23%)"]
    sample = simple(headers, [row] * 100, [False, False, False, True, False, False])
    n = _rows_until(limit, len(sample) // 102)
    rows = [[f"backbone.layer{i:07d}.conv", *row[1:3], 0.9 + (i % 1000) / 10000, *row[4:]] for i in range(n)]
    return simple(headers, rows, [False, False, False, True, False, False]) + "\n"


def badcase(limit: int) -> str:
    metrics = ["Cosine", "MSE", "L1", "KL", "SQNR"]
    per_output = 2 * 60
    n = _rows_until(limit, per_output)
    index = simple(["Name/Index", *metrics], [[f"out_{i:07d}", 137, 92, 137, 58, 137] for i in range(n)],
                   [False] + [True] * 5)
    values = simple(["Name/Index", *metrics],
                    [[f"out_{i:07d}", 0.959171, 0.0731094, 0.18773, 0.0021322, 10.8854] for i in range(n)],
                    [False] + [True] * 5)
    worst = simple(["metric", "dataloader index"], [[m, 137] for m in metrics], [False, True])
    return (f"The bad case input index of each output:\n{index}\n\n"
            f"The metric results of each badcase:\n{values}\n\n"
            f"The bad case input index of the worst output:\n{worst}\n")


def fx_graph(limit: int) -> str:
    headers = ["opcode", "name", "target", "args", "kwargs"]
    first = [["placeholder", "input_0", "input_0", "()", "{}"]]

    def rows(n: int) -> list[list[str]]:
        out = list(first)
        for i in range(n):
            prev = "input_0" if i == 0 else f"layer{i - 1:07d}_conv"
            out.append(["call_module", f"layer{i:07d}_conv", f"backbone.layer{i:07d}.conv", f"({prev},)", "{}"])
        out.append(["output", "output", "output", f"((layer{n - 1:07d}_conv,),)", "{}"])
        return out
    sample = simple(headers, rows(100), [False] * 5)
    n = _rows_until(limit, len(sample) // 102)
    return "Graph:\n" + simple(headers, rows(n), [False] * 5) + "\n"


def layer_advisor(limit: int) -> str:
    def rows(n: int) -> list[dict]:
        return [{"mod_name": f"backbone.layer{i:07d}.relu", "op_type": "torch.nn.modules.activation.ReLU",
                 "abnormal_info": "Data range 285.2091064453125 maybe too large for int8 quantization.",
                 "advice": "Please try qint16 quantization."} for i in range(n)]
    n = _rows_until(limit, len(psql(rows(100), index=False)) // 103)
    return psql(rows(n), index=False) + "\n"


def _repeat_fixture(path: Path) -> Callable[[int], str]:
    """The whole fixture again and again (a log that keeps being appended to)."""
    def make(limit: int) -> str:
        text = path.read_text(encoding="utf-8")
        text = text if text.endswith("\n") else text + "\n"
        return text * max(1, (limit - MARGIN) // len(text.encode()))
    return make


def _grow_row(path: Path, marker: str) -> Callable[[int], str]:
    """The fixture with its first line containing `marker` (a table row) repeated, each
    copy's first name replaced by a unique one of the same width, so the table stays aligned."""
    def make(limit: int) -> str:
        text = path.read_text(encoding="utf-8")
        text = text if text.endswith("\n") else text + "\n"
        lines = text.split("\n")
        at = next(i for i, line in enumerate(lines) if marker in line)
        row = lines[at]
        name = re.search(r"[A-Za-z_][\w.]*", row)
        assert name is not None
        width = name.end() - name.start()
        copies = max(1, (limit - MARGIN - len(text.encode())) // (len(row.encode()) + 1))

        def copy(i: int) -> str:
            unique = f"n{i}"[:width].ljust(width) if width > len(str(i)) else name.group(0)
            return row[:name.start()] + unique + row[name.end():]
        return "\n".join(lines[:at] + [copy(i) for i in range(copies)] + lines[at + 1:])
    return make


def hrt_model_info(limit: int) -> str:
    text = (FORMATS / "real" / "hrt_model_info" / "rgb_single_input.txt").read_text(encoding="utf-8")
    head, _, block = text.partition("output[0]:")
    block = "output[{}]:" + block.rstrip("\n") + "\n\n"
    n = _rows_until(limit - len(head), len(block) + 4)
    return head + "".join(block.format(i) for i in range(n))


def quant_info(limit: int) -> str:
    def entry(i: int) -> str:
        node = {"type": "HzSQuantizedConv", "inputs": [f"x{i}", f"w{i}"], "outputs": [f"conv{i}_output_0"],
                "thresholds": [[round(0.5 + (i * 7 + c) % 97 / 10, 6)] for c in range(256)],
                "cosine_similarity": f"{0.99 + (i % 100) / 10000:.6f}"}
        return "    " + json.dumps(f"/backbone/layer{i}/conv/Conv") + ": " + json.dumps(node, indent=4).replace("\n", "\n    ")
    size = len(entry(0)) + 2
    n = _rows_until(limit, size + 8)
    return "{\n" + ",\n".join(entry(i) for i in range(n)) + "\n}\n"


def metrics(limit: int) -> str:
    return _fill(limit, "artifact,metric,value,dataset\n",
                 lambda i: f"{('qat_pt', 'qat_bc', 'quantized_bc', 'hbm')[i % 4]},mAP,{0.5 - (i % 4) / 1000},val{i // 4}")


def script(limit: int) -> str:
    head = ("import torch\nfrom horizon_plugin_pytorch.quantization import prepare, set_fake_quantize\n"
            "from horizon_plugin_pytorch.quantization.hbdk4 import export\n\n")
    return _fill(limit, head, lambda i: f"value_{i} = torch.zeros({i % 7 + 1})  # step {i}")


GENERATORS: dict[str, tuple[str, Callable[[int], str], str]] = {
    # kind -> (file name, generator, module.constant of the limit)
    "compare_per_layer_csv": ("compare_per_layer_out.csv", compare_csv, "compare_per_layer.MAX_TEXT_BYTES"),
    "compare_per_layer_txt": ("compare_per_layer_out.txt", compare_txt, "compare_per_layer.MAX_TEXT_BYTES"),
    "sensitivity_txt": ("output_out_Cosine_sensitive_ops.txt", sensitivity, "sensitivity.MAX_TEXT_BYTES"),
    "badcase_txt": ("badcase.txt", badcase, "badcase.MAX_TEXT_BYTES"),
    "fx_graph": ("fx_graph.txt", fx_graph, "text_file.MAX_TEXT_BYTES"),
    "abnormal_layer_advisor": ("abnormal_layer_advisor.txt", layer_advisor, "layer_advisor.MAX_TEXT_BYTES"),
    "model_check_result": ("model_check_result.txt",
                           _grow_row(FORMATS / "prepare" / "model_check_result.txt", "| head.reg_out"),
                           "model_check.MAX_TEXT_BYTES"),
    "hb_verifier": ("hb_verifier.log", _repeat_fixture(FORMATS / "real" / "hb_verifier" / "verifier_run.log"),
                    "hb_verifier.MAX_TEXT_BYTES"),
    "conversion_log": ("hb_mapper_makertbin.log",
                       _repeat_fixture(FORMATS / "real" / "conversion_log" / "hb_mapper_makertbin.healthy.log"),
                       "conversion_log.MAX_TEXT_BYTES"),
    "plugin_log": ("horizon_plugin_pytorch.log",
                   _repeat_fixture(FORMATS / "real" / "plugin_log" / "warnings_traceback_py311.log"),
                   "text_file.MAX_TEXT_BYTES"),
    "quant_info": ("model_quant_info.json", quant_info, "quant_info.MAX_TEXT_BYTES"),
    "hb_model_info": ("hb_model_info.log", _grow_row(FORMATS / "real" / "hb_model_info" / "rgb_single_input.txt",
                                                     "logits  output"), "hb_model_info.MAX_TEXT_BYTES"),
    "hrt_model_info": ("hrt_model_exec_model_info.log", hrt_model_info, "hrt_model_info.MAX_TEXT_BYTES"),
    "metrics": ("metrics.csv", metrics, "metrics_file.MAX_BYTES"),
    "script": ("train_qat.py", script, "user_scripts.MAX_SCRIPT_BYTES"),
}


def limit_of(spec: str) -> int:
    import importlib
    module, constant = spec.split(".")
    return getattr(importlib.import_module(f"j6doctor.probes.{module}"), constant)
