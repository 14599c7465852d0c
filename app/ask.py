"""`j6doctor ask`: ask, in the terminal, for each missing info-gate item that would change the
judgement (in the gate's order, with the reason), write the answers into the case file
without losing what was there (comments and order included), then diagnose.

Only items the diagnosis lists as missing are asked, and only keys the case does not have
yet are written; an empty answer skips a question, end of input stops asking.
"""

from __future__ import annotations

import io
import json
import unicodedata
from pathlib import Path
from typing import Any, BinaryIO, Callable

from ruamel.yaml import YAML
from ruamel.yaml.scalarstring import DoubleQuotedScalarString

from .atomic_write import write_atomic
from .facts import label, resolve
from .probes.case_file import normalize_platform, platform_forms, resolve_package

GATE_PACKAGES = ("horizon-plugin-pytorch", "horizon-plugin-profiler", "hbdk4-compiler")
VERSION_EXAMPLES = {"hbdk4-compiler": "4.4.2", "hbdk3": "3.49.15", "openexplorer": "3.0.31", "hb-mapper": "1.24.3"}
# What a PTQ user's conversion yaml says about the model's input (input_parameters).
INPUT_PARAMETERS = ("input_type_rt", "input_type_train", "input_layout_train", "norm_type", "mean_value", "scale_value")
EVIDENCE = ("dataset_eval", "badcase", "multi_frame_visual", "single_frame")
MAX_TRIES = 3


class EndOfAnswers(Exception):
    """The user closed the input: stop asking, keep what was answered."""


MAX_ANSWER_BYTES = 64 * 1024  # one answer line; the rest of a longer line is dropped


def read_answer(stream: BinaryIO, encoding: str, say: Callable[[str], None],
                reprompt: Callable[[], None] = lambda: None) -> str:
    """One answer line from the terminal's bytes. A line that is not text in the terminal's
    encoding (a GBK terminal writing into a UTF-8 session, a pasted binary) is asked again,
    never written into the case file; control characters other than tab are dropped; an
    over-long line is cut with a warning. Raises EndOfAnswers at end of input."""
    for _ in range(MAX_TRIES):
        raw = stream.readline(MAX_ANSWER_BYTES + 1)
        if not raw:
            raise EndOfAnswers()
        cut = len(raw) > MAX_ANSWER_BYTES and not raw.endswith(b"\n")
        if cut:
            while (rest := stream.readline(MAX_ANSWER_BYTES)) and not rest.endswith(b"\n"):
                pass  # drop the rest of the line
            raw = raw[:MAX_ANSWER_BYTES]
            say(f"（回答超过 {MAX_ANSWER_BYTES // 1024} KiB，只保留前面部分）")
        text = _decode(raw.rstrip(b"\r\n"), encoding, cut)
        if text is None:
            say(f"（这一行不是 {encoding} 编码的文本，请重新输入）")
            reprompt()
            continue
        return "".join(ch for ch in text if ch == "\t" or unicodedata.category(ch) not in ("Cc", "Cs"))
    say("（多次无法读取，跳过这一问）")
    return ""


def _decode(raw: bytes, encoding: str, cut: bool) -> str | None:
    """Strict decoding; a line cut at the byte limit may end inside a character."""
    for drop in range(4 if cut else 1):
        try:
            return raw[:len(raw) - drop].decode(encoding)
        except UnicodeDecodeError:
            continue
        except LookupError:
            return None
    return None


Ask = Callable[[str], str]


def _ask_valid(ask: Ask, question: str, parse: Callable[[str], Any], hint: str) -> Any:
    """Ask until the answer parses (None for an empty answer); give up after MAX_TRIES."""
    for _ in range(MAX_TRIES):
        answer = ask(question).strip()
        if not answer:
            return None
        value = parse(answer)
        if value is not None:
            return value
        question = f"  无法识别 {answer!r}；{hint}\n{question}"
    return None


def _artifacts(text: str) -> list[str] | None:
    out = []
    for part in text.replace("，", ",").replace("、", ",").split(","):
        name = resolve("artifact", part.strip())
        if name is None or name == "float":
            return None
        out.append(name)
    return out


def _choice(options: tuple[str, ...]) -> Callable[[str], str | None]:
    return lambda text: text if text in options else None


def _yes_no(text: str) -> bool | None:
    lowered = text.lower()
    if lowered in ("y", "yes", "是", "有", "true"):
        return True
    if lowered in ("n", "no", "否", "没有", "无", "false"):
        return False
    return None


def ask_missing(data: dict[str, Any], verdict: dict[str, Any], ask: Ask, say: Callable[[str], None]) -> dict[str, Any]:
    """Answers for the missing gate items, as case keys to merge. Raises nothing on end of
    input: returns what was answered so far."""
    updates: dict[str, Any] = {}
    try:
        for item in verdict["missing_detail"]:
            say(f"\n[{item['label']}] {item['why']}")
            getattr(_Questions, item["id"])(data, verdict, ask, updates)
    except EndOfAnswers:
        say("\n（输入结束，保存已回答的内容）")
    return {key: value for key, value in updates.items() if value not in ({}, None, "")}


class _Questions:
    """One static method per gate item id (facts/vocabulary.yaml gate_item)."""

    @staticmethod
    def symptom(data, verdict, ask, updates) -> None:
        text = ask("当前异常现象（哪个指标、在什么数据上、掉了多少）：").strip()
        if text:
            updates["symptom"] = text

    @staticmethod
    def stage_results(data, verdict, ask, updates) -> None:
        known = data.get("results") or {}
        results: dict[str, Any] = updates.setdefault("results", {})  # filled as answers come
        wanted = [e["artifact"] for e in verdict["evaluate_next"] if e["artifact"] not in known]
        for artifact in wanted:  # the fewest inputs first: the artifact the gap needs
            status = _ask_valid(ask, f"{label('artifact', artifact)} 的评测结论 [normal/abnormal]：",
                                _choice(("normal", "abnormal")), "请填 normal 或 abnormal")
            if status:
                results[artifact] = {"status": status, "evidence": "dataset_eval"}
        if not wanted:
            for status, word in (("normal", "正常"), ("abnormal", "异常")):
                names = _ask_valid(ask, f"已验证{word}的产物（逗号分隔：qat_pt, qat_export_pt, qat_bc, "
                                        "quantized_bc, hbm, hbm_x86, board；留空跳过）：", _artifacts,
                                   "产物 id 见提示")
                for artifact in names or []:
                    if artifact not in known:
                        results[artifact] = {"status": status, "evidence": "dataset_eval"}
        if results:
            evidence = _ask_valid(ask, f"这些结论的证据类型 [{'/'.join(EVIDENCE)}]（默认 dataset_eval）：",
                                  _choice(EVIDENCE), f"请填 {' / '.join(EVIDENCE)} 之一")
            for entry in results.values():
                entry["evidence"] = evidence or "dataset_eval"

    @staticmethod
    def badcase(data, verdict, ask, updates) -> None:
        if "badcase" in data:
            return
        reproducible = _ask_valid(ask, "是否有稳定可复现的 badcase 或可复现的实验数据集？[y/n]：", _yes_no, "请填 y 或 n")
        if reproducible is None:
            return
        entry: dict[str, Any] = {"reproducible": reproducible}
        if reproducible:
            path = ask("badcase 文件路径（可留空）：").strip()
            if path:
                entry["path"] = path
        updates["badcase"] = entry

    @staticmethod
    def platform(data, verdict, ask, updates) -> None:
        value = _ask_valid(ask, f"平台 / march（{platform_forms()}）：",
                           lambda text: text if normalize_platform(text) else None, "例如 J6M、nash-m 或 RDK X5")
        if value:
            updates["platform"] = value

    @staticmethod
    def versions(data, verdict, ask, updates) -> None:
        known = {resolve_package(str(k), str(v)) for k, v in (data.get("versions") or {}).items()}
        item = next((m for m in verdict["missing_detail"] if m["id"] == "versions"), {})
        versions = updates.setdefault("versions", {})
        for package in item.get("ask") or GATE_PACKAGES:
            if package in known:
                continue
            text = ask(f"{label('package', package)} 版本（如 {VERSION_EXAMPLES.get(package, '3.1.2')}；留空跳过）：").strip()
            if text:
                versions[package] = text

    @staticmethod
    def deploy_adaptation(data, verdict, ask, updates) -> None:
        item = next((m for m in verdict["missing_detail"] if m["id"] == "deploy_adaptation"), {})
        if "input_parameters" in (item.get("ask") or []):
            params = updates.setdefault("input_parameters", {})
            for name in INPUT_PARAMETERS:
                if name not in (data.get("input_parameters") or {}):
                    text = ask(f"转换配置 yaml 的 {name}（留空跳过）：").strip()
                    if text:
                        params[name] = text
            return
        text = ask("部署适配说明（输入格式、layout、前后处理、插入 / 删除的节点等）：").strip()
        if text:
            updates["deployment"] = {"notes": text}


def merge(data: Any, updates: dict[str, Any]) -> None:
    """Add the answers to the loaded document in place; never overwrite what is there."""
    for key, value in updates.items():
        if key not in data:
            data[key] = value
        elif isinstance(value, dict) and isinstance(data[key], dict):
            for sub, sub_value in value.items():
                if sub not in data[key]:
                    data[key][sub] = sub_value


def _quoted(value: Any) -> Any:
    """Answers are text: quote them, or YAML would read a version like 4.4 as a number."""
    if isinstance(value, dict):
        return {k: _quoted(v) for k, v in value.items()}
    if isinstance(value, str):
        return DoubleQuotedScalarString(value)
    return value


def write_case(path: Path, updates: dict[str, Any]) -> None:
    """Merge the answers into the case file, keeping its comments and order (YAML
    round-trip), atomically; a new file is created when there was none."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    if path.suffix.lower() == ".json":
        data = json.loads(text) if text.strip() else {}
        merge(data, updates)
        out = json.dumps(data, ensure_ascii=False, indent=2) + "\n"
    else:
        updates = _quoted(updates)
        yaml = YAML(typ="rt")
        yaml.preserve_quotes = True
        yaml.allow_unicode = True
        data = yaml.load(text) if text.strip() else None
        buffer = io.StringIO()
        if data is None:
            # empty or comment-only file: keep its text and append the answers after it
            yaml.dump(updates, buffer)
            out = (text.rstrip("\n") + "\n" if text.strip() else "") + buffer.getvalue()
        else:
            merge(data, updates)
            yaml.dump(data, buffer)
            out = buffer.getvalue()
    write_atomic(path, out)
