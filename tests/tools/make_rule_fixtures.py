#!/usr/bin/env python3
"""Regenerate the small artifact fixtures that the bundled rules' examples use
(rules/fixtures/). Layouts follow shared/formats/FORMATS.md; tables are rendered with
the `tabulate` package exactly as Horizon's tools do, so this script needs it
(`pip install tabulate==0.9.0`; it is not a dependency of j6doctor).

Usage: python tests/tools/make_rule_fixtures.py [--out rules/fixtures]
"""

from __future__ import annotations

import argparse
import io
import pickle
import sys
import types
import zipfile
from pathlib import Path

from tabulate import tabulate

HEADER = ["mod_name", "base_op_type", "analy_op_type", "shape", "quant_dtype", "qscale", "Cosine", "L1",
          "Atol", "max_qscale_diff", "base_model_min", "analy_model_min", "base_model_max",
          "analy_model_max", "base_model_mean", "analy_model_mean"]
CONV, BN, RELU, IDENT = ("torch.nn.modules.conv.Conv2d", "torch.nn.modules.batchnorm.BatchNorm2d",
                         "torch.nn.modules.activation.ReLU", "torch.nn.modules.linear.Identity")
QCONV = "horizon_plugin_pytorch.nn.qat.conv2d.Conv2d"


def compare_csv(path: Path, rows: list[dict]) -> None:
    """compare_per_layer_out.csv as QuantAnalysis writes it: header of the first row's keys
    joined by ', ', str() of every value, None for missing, '*' for commas in shapes."""
    lines = [", ".join(HEADER)]
    for row in rows:
        values = []
        for key in HEADER:
            value = row.get(key)
            text = str(value)
            if key == "shape" and value is not None:
                text = text.replace(",", "*")
            values.append(text)
        lines.append(", ".join(values))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def layer(name: str, qscale: float, cos: float, l1: float, atol: float, bmax: float, amax: float,
          shape: str = "torch.Size([1, 64, 16, 16])") -> list[dict]:
    """A fused conv-bn-relu group: two cleared prefix rows and the metric-bearing relu row."""
    stats = {"base_model_min": 0.0, "analy_model_min": 0.0, "base_model_max": bmax,
             "analy_model_max": amax, "base_model_mean": bmax / 10, "analy_model_mean": amax / 10}
    prefix = {"shape": None, "quant_dtype": "qint8", "qscale": qscale, "Cosine": None, "L1": None,
              "Atol": None, "max_qscale_diff": None, **stats}
    return [
        {"mod_name": f"{name}.conv", "base_op_type": CONV, "analy_op_type": QCONV, **prefix},
        {"mod_name": f"{name}.bn", "base_op_type": BN, "analy_op_type": IDENT, **prefix},
        {"mod_name": f"{name}.relu", "base_op_type": RELU, "analy_op_type": IDENT, "shape": shape,
         "quant_dtype": "qint8", "qscale": qscale, "Cosine": cos, "L1": l1, "Atol": atol,
         "max_qscale_diff": atol / qscale, **stats},
    ]


def sensitivity_txt(path: Path, metric: str, rows: list[tuple[str, str, float]]) -> None:
    table = [[op, kind, f"<class '{QCONV}'>", value, "qint8", "0(0%)"] for op, kind, value in rows]
    text = tabulate(table, headers=["op_name", "sensitive_type", "op_type", metric, "quant_dtype", "flops"])
    path.write_text(text, encoding="utf-8")


def badcase_txt(path: Path, index: list[list], values: list[list], worst: list[list]) -> None:
    headers = ["Name/Index", "Cosine", "MSE", "L1", "KL", "SQNR"]
    parts = [
        "The bad case input index of each output:\n" + tabulate(index, headers=headers, numalign="left"),
        "The metric results of each badcase:\n" + tabulate(values, headers=headers, numalign="left"),
        "The bad case input index of the worst output:\n"
        + tabulate(worst, headers=["metric", "dataloader index"], numalign="left"),
    ]
    path.write_text("\n\n".join(parts), encoding="utf-8")


def fx_graph_txt(path: Path) -> None:
    nodes = [
        ["placeholder", "x", "x", "()", "{}"],
        ["call_module", "quant", "quant", "(x,)", "{}"],
        ["get_attr", "head_deploy", "head.deploy", "()", "{}"],
        ["call_function", "getitem", "<built-in function getitem>", "(quant, head_deploy)", "{}"],
        ["call_method", "size", "size", "(quant, 2)", "{}"],
        ["call_module", "backbone_conv", "backbone.conv", "(quant,)", "{}"],
        ["call_module", "dequant", "dequant", "(backbone_conv,)", "{}"],
        ["output", "output", "output", "(dequant,)", "{}"],
    ]
    text = "Graph:\n" + tabulate(nodes, headers=["opcode", "name", "target", "args", "kwargs"])
    path.write_text(text, encoding="utf-8")


def pickle_with_foreign_class(module: str, class_name: str, build) -> bytes:
    """Pickle `build(cls)` where cls is a stand-in for `module.class_name` (a Horizon class):
    the fake modules exist only while pickling, so the reader must never need them."""
    names = [".".join(module.split(".")[:k]) for k in range(1, module.count(".") + 2)]
    modules = {name: types.ModuleType(name) for name in names}
    cls = type(class_name, (), {"__module__": module})
    setattr(modules[module], class_name, cls)
    for parent, child in zip(names, names[1:]):
        setattr(modules[parent], child.rsplit(".", 1)[1], modules[child])
    sys.modules.update(modules)
    try:
        return pickle.dumps(build(cls), protocol=2)
    finally:
        for name in names:
            del sys.modules[name]


def write_pt(path: Path, archive_name: str, payload: bytes) -> None:
    """A torch-style zip .pt: <archive>/data.pkl and <archive>/version."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in ((f"{archive_name}/data.pkl", payload), (f"{archive_name}/version", b"3\n")):
            archive.writestr(zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0)), data)  # reproducible
    path.write_bytes(buffer.getvalue())


def sensitivity_pt(path: Path) -> None:
    """Sensitivity rows referencing a horizon_plugin_pytorch class: readable only with stubs."""
    payload = pickle_with_foreign_class(
        "horizon_plugin_pytorch.nn.qat.conv2d", "Conv2d",
        lambda cls: [["backbone.layer3.conv2", "activation", cls, 0.288411, None, "0(0%)"]])
    write_pt(path, "output_bbox_pred_L1_sensitive_ops", payload)


def badcase_report_pt(path: Path) -> None:
    """all_badcase_info.pt of profiler v3.3: a BadCaseReport object, unreadable without the profiler."""
    def build(cls):
        report = cls()
        report.worst_index = {"L1": 137}
        return report
    payload = pickle_with_foreign_class("horizon_plugin_profiler.utils.entities", "BadCaseReport", build)
    write_pt(path, "all_badcase_info", payload)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[2] / "rules" / "fixtures")
    out = parser.parse_args().out

    def folder(name: str) -> Path:
        path = out / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    # rounding: ranges agree, error large at layer2
    rows = layer("backbone.layer1", 0.05, 0.99991, 0.009, 0.03, 6.7, 6.7)
    rows += layer("backbone.layer2", 0.06, 0.9412, 0.21, 1.9, 7.6, 7.6)
    rows += layer("backbone.layer3", 0.06, 0.9390, 0.22, 2.0, 7.5, 7.5)
    compare_csv(folder("rounding") / "compare_per_layer_out.csv", rows)

    # gradual: cosine decays a little at every layer, no sudden step
    rows = []
    for i, cos in enumerate([0.9999, 0.9985, 0.9962, 0.9931, 0.9898, 0.9861, 0.9822, 0.9780]):
        rows += layer(f"backbone.block{i}", 0.05, cos, 0.01 * (i + 1), 0.04 * (i + 1), 6.0, 6.0)
    compare_csv(folder("gradual") / "compare_per_layer_out.csv", rows)

    # worst layer downstream of the origin (M06), with sensitivity so M09 does not apply
    rows = layer("backbone.layer1", 0.05, 0.99995, 0.009, 0.03, 6.7, 6.7)
    rows += layer("backbone.layer2", 0.0236, 0.9312, 0.041, 139.6, 142.6, 2.99)
    rows += layer("neck.reduce", 0.03, 0.8105, 0.09, 140.1, 150.0, 3.8)
    target = folder("worst_downstream")
    compare_csv(target / "compare_per_layer_out.csv", rows)
    sensitivity_txt(target / "output_0_L1_sensitive_ops.txt", "L1",
                    [("backbone.layer2.conv", "activation", 0.2884), ("neck.reduce.conv", "activation", 0.0213),
                     ("backbone.layer1.conv", "activation", 0.0021)])

    # sensitivity top op elsewhere than the compare origin
    target = folder("sensitivity_elsewhere")
    compare_csv(target / "compare_per_layer_out.csv", layer("backbone.layer1", 0.05, 0.99995, 0.009, 0.03, 6.7, 6.7)
                + layer("backbone.layer2", 0.0236, 0.8731, 0.041, 139.6, 142.6, 2.99)
                + layer("neck.reduce", 0.03, 0.8705, 0.05, 140.0, 150.0, 3.8))
    sensitivity_txt(target / "output_0_L1_sensitive_ops.txt", "L1",
                    [("neck.reduce.conv", "activation", 0.3012), ("backbone.layer2.conv", "activation", 0.0411),
                     ("backbone.layer1.conv", "activation", 0.0019)])

    # accumulation: several close sensitivity values
    sensitivity_txt(folder("accumulation") / "output_0_L1_sensitive_ops.txt", "L1",
                    [("backbone.layer1.conv", "activation", 0.0412), ("backbone.layer2.conv", "activation", 0.0398),
                     ("backbone.layer3.conv", "activation", 0.0391), ("backbone.layer4.conv", "activation", 0.0385),
                     ("neck.reduce.conv", "activation", 0.0020), ("head.cls_out", "weight", 0.0)])

    badcase_txt(folder("badcase_disagree") / "badcase.txt",
                [["cls_score", 137, 137, 137, 58, 137], ["bbox_pred", 12, 92, 12, 137, 12]],
                [["cls_score", 0.959171, 0.0731094, 0.18773, 0.0021322, 10.8854],
                 ["bbox_pred", 0.928613, 0.190335, 0.312174, 0.0009113, 8.41273]],
                [["Cosine", 137], ["MSE", 92], ["L1", 137], ["KL", 58], ["SQNR", 137]])

    fx_graph_txt(folder("deploy_branch") / "fx_graph.txt")

    (folder("metrics") / "metrics.csv").write_text(
        "artifact,metric,value,dataset,frames\n"
        "qat_pt,mAP,41.2,val2017,5000\n"
        "qat_bc,mAP,41.0,val2017,5000\n"
        "quantized_bc,mAP,36.0,val2017,5000\n", encoding="utf-8")

    (folder("broken") / "compare_per_layer_out.csv").write_text(
        ", ".join(HEADER) + "\nbackbone.stem.conv, torch.nn.modules.conv.Conv2d\n", encoding="utf-8")

    sensitivity_pt(folder("pt") / "output_bbox_pred_L1_sensitive_ops.pt")
    badcase_report_pt(folder("pt") / "all_badcase_info.pt")


if __name__ == "__main__":
    main()
