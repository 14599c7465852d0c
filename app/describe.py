"""Facts in words (Chinese), for the report. One function per input fact type."""

from __future__ import annotations

from .engine import Fact
from .facts import label


def _number(value) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def describe_result(fact: Fact) -> str:
    parts = [label("evidence", fact["evidence"])]
    if fact["metric"] or fact["value"] is not None:
        metric = fact["metric"] or "指标"
        parts.append(f"{metric} = {_number(fact['value'])}" if fact["value"] is not None else metric)
    return f"{label('artifact', fact['artifact'])}：{label('status', fact['status'])}（{'；'.join(parts)}）"


def describe(fact: Fact) -> str:
    f = fact.fields
    if fact.type == "result":
        return describe_result(fact)
    if fact.type == "symptom":
        return f"异常现象：{f['text']}"
    if fact.type == "platform":
        given = "" if f["given"] == f["family"] else f"（用户写作 {f['given']}）"
        return f"平台：{label('platform', f['family'])}{given}"
    if fact.type == "version":
        return f"{f['package']} {f['version']}"
    if fact.type == "badcase":
        state = "稳定可复现" if f["reproducible"] else "不能稳定复现"
        return f"badcase：{state}" + (f"（{f['path']}）" if f["path"] else "")
    if fact.type == "deployment_notes":
        return f"部署适配说明：{f['text']}"
    if fact.type == "checklist_item":
        text = f"部署侧排查清单「{label('check_item', f['item'])}」：{label('check_status', f['status'])}"
        return text + (f"（{f['note']}）" if f["note"] else "")
    if fact.type == "tried_fix":
        return f"已尝试：{f['text']}"
    if fact.type == "artifact_path":
        return f"产物路径 {f['path']}" + ("" if f["exists"] else "（不存在）")
    fields = "，".join(f"{k}={v}" for k, v in f.items())
    return f"{fact.type}（{fields}）"
