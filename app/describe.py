"""Facts in words (Chinese), for the report. One function per input fact type."""

from __future__ import annotations

from j6doctor.engine import Fact
from j6doctor.facts import attr, label


def _number(value) -> str:
    """A number as read: a float keeps its decimal (41.0 beside 41.2), an int has none."""
    return str(value)


def artifact_label(artifact: str, ptq: bool = False) -> str:
    """An artifact as its flow calls it (PTQ: 校准模型, 定点模型 ...)."""
    if ptq:
        return str(attr("artifact", artifact, "ptq_label", label("artifact", artifact)))
    return label("artifact", artifact)


def describe_result(fact: Fact, ptq: bool = False) -> str:
    parts = [label("evidence", fact["evidence"])]
    if fact["metric"] or fact["value"] is not None:
        metric = fact["metric"] or "指标"
        parts.append(f"{metric} = {_number(fact['value'])}" if fact["value"] is not None else metric)
    if fact.get("by") not in (None, "unspecified"):
        parts.append(f"由{label('producer', fact['by'])}得到" + (f"：{fact['by_given']}" if fact["by_given"] else ""))
    return f"{artifact_label(fact['artifact'], ptq or fact.get('naming') == 'ptq')}：{label('status', fact['status'])}（{'；'.join(parts)}）"


def _local(fact: Fact) -> str:
    return "（本机环境）" if fact.source is not None and fact.source.kind == "environment" else ""


def describe(fact: Fact, ptq: bool = False) -> str:
    """A fact in words; `ptq` names the artifacts as a PTQ user does."""
    words = _BY_TYPE.get(fact.type)
    if words is not None:
        return words(fact, ptq)
    fields = "，".join(f"{k}={v}" for k, v in fact.fields.items())
    return f"{fact.type}（{fields}）"


def _platform(fact: Fact, ptq: bool) -> str:
    f = fact.fields
    given = "" if f["given"] == f["family"] else f"（用户写作 {f['given']}）"
    return f"平台：{label('platform', f['family'])}{given}{_local(fact)}"


def _version(fact: Fact, ptq: bool) -> str:
    f = fact.fields
    name = f["given"] if f["package"] == "other" or not f["given"] else f["package"]
    aka = f"（写作 {f['given']}）" if f["given"] and f["given"] != name and f["given"] != f["package"] else ""
    return f"{name} {f['version']}{aka}{_local(fact)}"


def _failure(fact: Fact, ptq: bool) -> str:
    f = fact.fields
    text = f"{artifact_label(f['artifact'], ptq)}：{label('failure_kind', f['kind'])}"
    return text + (f"（{f['message']}）" if f["message"] else "")


def _comparison(fact: Fact, ptq: bool) -> str:
    f = fact.fields
    return (f"同一输入上 {artifact_label(f['a'], ptq)} 与 {artifact_label(f['b'], ptq)} "
            f"输出{label('relation', f['relation'])}")


def _control(fact: Fact, ptq: bool) -> str:
    f = fact.fields
    return f"对照「{f['variant']}」在 {artifact_label(f['artifact'], ptq)} 步骤{label('status', f['status'])}"


def _input_param(fact: Fact, ptq: bool) -> str:
    f = fact.fields
    return f"{f['name']} = {f['value']}" + (f"（输入 {f['input']}）" if f["input"] else "")


def _layer_cosines(fact: Fact, ptq: bool) -> str:
    f = fact.fields
    text = f"{f['tool']}（{f['path']}，{f['rows']} 个节点）"
    if f["worst_node"]:
        text += f"：最差 {f['worst_node']}（cosine {_number(f['worst_cosine'])}）"
    return text


def _cosine_fall(f: dict) -> str:
    """How the cosine left the healthy state at a break (a tool's node or a compare row)."""
    if f["cosine_nonfinite"]:
        return "变为 nan / inf"
    return f"降低 {_number(f['cosine_fall'])}" if f["cosine_fall"] is not None else "无变化"


def _cosine_break(fact: Fact, ptq: bool) -> str:
    f = fact.fields
    return f"{f['tool']}（{f['path']}）：节点 {f['node']} 离开健康状态，cosine {_cosine_fall(f)}"


def _compare_break(fact: Fact, ptq: bool) -> str:
    f = fact.fields
    return f"compare_per_layer（{f['path']}）：第 {f['row']} 行 {f['mod_name']} 离开健康状态，Cosine {_cosine_fall(f)}"


def _verifier_output(fact: Fact, ptq: bool) -> str:
    f = fact.fields
    state = "一致" if f["consistent"] else f"不一致（{f['mismatched']}/{f['total']} 个元素不同）"
    return f"hb_verifier（{f['path']}）：输出 {f['output']} {state}"


def _model_info(fact: Fact, ptq: bool) -> str:
    f = fact.fields
    return f"{f['tool']}（{f['path']}）" + (f"：march {f['march']}" if f["march"] else "")


def _badcase(fact: Fact, ptq: bool) -> str:
    f = fact.fields
    state = "稳定可复现" if f["reproducible"] else "不能稳定复现"
    return f"badcase：{state}" + (f"（{f['path']}）" if f["path"] else "")


def _checklist_item(fact: Fact, ptq: bool) -> str:
    f = fact.fields
    text = f"部署侧排查清单「{label('check_item', f['item'])}」：{label('check_status', f['status'])}"
    return text + (f"（{f['note']}）" if f["note"] else "")


def _artifact_path(fact: Fact, ptq: bool) -> str:
    return f"产物路径 {fact['path']}" + ("" if fact["exists"] else "（不存在）")


_BY_TYPE = {
    "result": describe_result,
    "symptom": lambda fact, ptq: f"异常现象：{fact['text']}",
    "platform": _platform,
    "version": _version,
    "failure": _failure,
    "comparison": _comparison,
    "control": _control,
    "input_param": _input_param,
    "suspect": lambda fact, ptq: f"怀疑：{fact['text']}",
    "layer_cosines": _layer_cosines,
    "cosine_break": _cosine_break,
    "compare_break": _compare_break,
    "verifier_output": _verifier_output,
    "artifact_march": lambda fact, ptq: f"{fact['path']} 记录的 {fact['what']}：{fact['march']}",
    "model_info": _model_info,
    "badcase": _badcase,
    "deployment_notes": lambda fact, ptq: f"部署适配说明：{fact['text']}",
    "checklist_item": _checklist_item,
    "tried_fix": lambda fact, ptq: f"已尝试：{fact['text']}",
    "artifact_path": _artifact_path,
}
