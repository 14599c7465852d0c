"""Synthetic Horizon debugging artifacts of any size, in the exact layouts of
shared/formats/FORMATS.md, for the tests and the benchmark (benchmarks/bench_all.py).
Own minimal re-implementation of tabulate's psql / simple layouts; no third-party code."""

from __future__ import annotations

from pathlib import Path

VB_HEADER = ["mod_name", "base_op_type", "analy_op_type", "shape", "quant_dtype", "qscale",
             "Cosine", "L1", "Atol", "max_qscale_diff", "base_model_min", "analy_model_min",
             "base_model_max", "analy_model_max", "base_model_mean", "analy_model_mean"]
CONV = "torch.nn.modules.conv.Conv2d"
QCONV = "horizon_plugin_pytorch.nn.qat.conv2d.Conv2d"
RELU = "torch.nn.modules.activation.ReLU"
IDENT = "torch.nn.modules.linear.Identity"


def cell_text(value: object) -> str:
    if value is None:
        return ""                       # tabulate renders None blank
    if isinstance(value, float):
        return f"{value:.7f}"           # floatfmt=".7f"
    return str(value)


def psql(dict_rows: list[dict], index: bool = True) -> str:
    """psql table like tabulate(headers="keys", tablefmt="psql", showindex=True); numbers
    right-aligned, text left-aligned, no trailing newline."""
    headers = list(dict_rows[0])
    numeric = [all(isinstance(r[h], (int, float)) or r[h] is None for r in dict_rows)
               for h in headers]
    body = [[cell_text(r[h]) for h in headers] for r in dict_rows]
    if index:
        headers, numeric = ["", *headers], [True, *numeric]
        body = [[str(i), *row] for i, row in enumerate(body)]
    widths = [max(len(h), *(len(row[k]) for row in body)) for k, h in enumerate(headers)]

    def line(cells: list[str], header: bool = False) -> str:
        parts = [(c.rjust(w) if numeric[k] and not header else c.ljust(w))
                 for k, (c, w) in enumerate(zip(cells, widths))]
        return "|" + "|".join(f" {p} " for p in parts) + "|"

    border = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    rule = "|" + "+".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([border, line(headers, header=True), rule,
                      *(line(row) for row in body), border])


def csv_text(dict_rows: list[dict]) -> str:
    """The hand-written csv: first row's keys, ', ' separator, str(value), '*' in shapes."""
    out = [", ".join(dict_rows[0])]
    for r in dict_rows:
        out.append(", ".join(str(v).replace(",", "*") if k == "shape" else str(v)
                             for k, v in r.items()))
    return "\n".join(out) + "\n"


def vb_row(name: str, cosine: float | None, atol: float | None, qscale: float | None = 0.05,
           base_max: float = 6.0, analy_max: float = 6.0, base_op: str = RELU,
           analy_op: str = IDENT, dtype: str = "qint8") -> dict:
    metrics = cosine is not None or atol is not None
    mqd = None if atol is None or qscale is None else atol / qscale
    return {
        "mod_name": name, "base_op_type": base_op, "analy_op_type": analy_op,
        "shape": "torch.Size([1, 8, 4, 4])" if metrics else None, "quant_dtype": dtype,
        "qscale": qscale, "Cosine": cosine, "L1": None if atol is None else atol / 10,
        "Atol": atol, "max_qscale_diff": mqd, "base_model_min": 0.0, "analy_model_min": 0.0,
        "base_model_max": base_max, "analy_model_max": analy_max, "base_model_mean": 0.5,
        "analy_model_mean": 0.5,
    }


def big_rows(n: int = 20_000, origin_at: int = 15_001) -> list[dict]:
    """n compare rows in fused pairs/triples, healthy until `origin_at`, then clamped."""
    rows = []
    for i in range(n):
        if i % 3 == 0:
            rows.append(vb_row(f"m{i // 3}.conv", None, None, base_op=CONV, analy_op=QCONV))
        elif i < origin_at:
            rows.append(vb_row(f"m{i // 3}.relu{i % 3}", 0.9999, 0.02 + (i % 7) * 0.001))
        else:
            rows.append(vb_row(f"m{i // 3}.relu{i % 3}", 0.85 if i == origin_at else 0.84,
                               120.0, base_max=150.0, analy_max=127 * 0.05))
    return rows




def simple(headers: list[str], rows: list[list], numeric: list[bool]) -> str:
    """tabulate's "simple" layout: two spaces between columns, a dash rule, no trailing newline."""
    body = [[_g(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[k]) for r in body)) for k, h in enumerate(headers)]

    def line(cells: list[str], header: bool = False) -> str:
        return "  ".join((c.rjust(w) if numeric[k] and not header else c.ljust(w))
                         for k, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return "\n".join([line(headers, True), "  ".join("-" * w for w in widths),
                      *(line(r) for r in body)])


def _g(value: object) -> str:
    return format(value, "g") if isinstance(value, float) else str(value)


def write_workdir(folder: Path, n_rows: int, origin_at: int | None = None) -> Path:
    """A QuantAnalysis out_dir with compare_per_layer_out.{csv,txt} of n_rows rows and a
    sensitivity table whose top op is the origin's conv."""
    folder.mkdir(parents=True, exist_ok=True)
    origin_at = origin_at if origin_at is not None else (3 * (n_rows * 3 // 4 // 3) + 1)
    rows = big_rows(n_rows, origin_at)
    (folder / "compare_per_layer_out.csv").write_text(csv_text(rows), encoding="utf-8")
    (folder / "compare_per_layer_out.txt").write_text(psql(rows), encoding="utf-8")
    top = f"m{origin_at // 3}.conv"
    sens = [[top, "activation", f"<class '{QCONV}'>", 0.288411, "qint8", "0(0%)"]]
    sens += [[f"m{i}.conv", "activation", f"<class '{QCONV}'>", 0.001 / (i + 1), "qint8", "0(0%)"]
             for i in range(min(200, n_rows // 3))]
    (folder / "output_0_L1_sensitive_ops.txt").write_text(
        simple(["op_name", "sensitive_type", "op_type", "L1", "quant_dtype", "flops"], sens,
               [False, False, False, True, False, False]), encoding="utf-8")
    return folder


def library_copies(export_lines: list[str], copies: int):
    """`copies` lines of a case-library export (`j6doctor cases export`), cycling through the
    given ones: each copy is a distinct case (its files renamed `<stem>_<n>`, as the same
    report sent again under another name), so a store keeps every one of them."""
    import json

    def names_a_file(line: str) -> bool:
        return any((f.get("source") or {}).get("file") for f in json.loads(json.loads(line)["case"]["facts_json"]))

    export_lines = [line for line in export_lines if names_a_file(line)]  # others cannot be made distinct
    for n in range(copies):
        item = json.loads(export_lines[n % len(export_lines)])
        case = item["case"]
        facts = json.loads(case["facts_json"])
        for fact in facts:
            source = fact.get("source")
            if source and source.get("file"):
                stem, dot, suffix = source["file"].rpartition(".")
                source["file"] = f"{stem}_{n:05d}.{suffix}" if dot else f"{suffix}_{n:05d}"
        case["facts_json"] = json.dumps(facts, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        case["title"] = f"{case['title']} #{n}"
        yield json.dumps(item, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n"
