"""`j6doctor ask`: ask, in the terminal, for each missing info-gate item that would change the
judgement (in the gate's order, with the reason), write the answers into the case file
without losing what was there (comments and order included), then diagnose.

Only items the diagnosis lists as missing are asked, and only keys the case does not have
yet are written; an empty answer skips a question, end of input stops asking.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import unicodedata
from pathlib import Path
from typing import Any, BinaryIO, Callable

from j6doctor.case_writer import write_case
from j6doctor.facts import attr, enum_values, gate_answer_key, label, resolve, using
from j6doctor.probes.case_file import named_value, resolve_package, value_at, value_forms
from j6doctor.verdict_model import MissingItem, Verdict

MAX_TRIES = 3


class EndOfAnswers(Exception):
    """The user closed the input: stop asking, keep what was answered."""


class Interrupted(Exception):
    """Ctrl-C while asking: the answers given so far, to be saved before the program stops."""

    def __init__(self, updates: dict[str, Any]):
        super().__init__("interrupted")
        self.updates = updates


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


class Ask:
    """How a question reaches the user: `ask(prompt)` returns the answer line, `say(text)`
    tells them something without asking."""

    def __init__(self, ask: Callable[[str], str], say: Callable[[str], None]):
        self._ask = ask
        self.say = say

    def __call__(self, prompt: str) -> str:
        return self._ask(prompt)


def _ask_valid(ask: Ask, question: str, parse: Callable[[str], Any], hint: str) -> Any:
    """Ask until the answer parses (None for an empty answer). After MAX_TRIES answers that do
    not parse the question is left unanswered, and the user is told so: nothing is written
    for it (an answer the user did not give is never stored). Only the latest answer's error
    line is shown above the question asked again."""
    prompt = question
    for _ in range(MAX_TRIES):
        answer = ask(prompt).strip()
        if not answer:
            return None
        value = parse(answer)
        if value is not None:
            return value
        prompt = f"  无法识别 {answer!r}；{hint}\n{question}"
    ask.say(f"  （{MAX_TRIES} 次回答都无法识别：这一问不填写，保持未回答）")
    return None


def _artifacts(text: str) -> list[str] | None:
    out = []
    for part in text.replace("，", ",").replace("、", ",").split(","):
        name = resolve("artifact", part.strip())
        if name is None or attr("artifact", name, "chain", -1) < 0:  # not on the chain (the float reference)
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


def ask_missing(data: dict[str, Any], verdict: Verdict, items: list[MissingItem], ask: Ask,
                say: Callable[[str], None]) -> dict[str, Any]:
    """Answers for the missing gate items, as case keys to merge. Each item is asked the way
    its vocabulary entry says (gate_item: answer, question, key, of, fields, fields_key).
    Raises nothing on end of input: returns what was answered so far."""
    updates: dict[str, Any] = {}
    asker = ask if isinstance(ask, Ask) else Ask(ask, say)
    try:
        for item in items:
            say(f"\n[{item.label}] {item.why}")
            kind = attr("gate_item", item.id, "answer", "text")  # a value of the closed enum answer_kind
            _ANSWER_KINDS[kind](_Item(item), data, verdict, asker, updates)
    except EndOfAnswers:
        say("\n（输入结束，保存已回答的内容）")
    except KeyboardInterrupt:
        raise Interrupted(_pruned(updates)) from None
    return _pruned(updates)


MAX_ROUNDS = 3  # answers can reveal new gaps (e.g. deploy_adaptation once the stage is known)


def ask_session(case: Path, diagnose_case: Callable[[bool], Any], ask: Ask, say: Callable[[str], None]) -> Any:
    """Diagnose the case, ask for what is missing, write the answers into the case file and
    diagnose again, until nothing new is missing; the last diagnosis. `diagnose_case(exists)`
    diagnoses the case file, or an empty case when the file does not exist yet (it is created
    with the first answers, never before). Ctrl-C writes the answers given so far, then
    raises KeyboardInterrupt."""
    asked: set[str] = set()
    diagnosis = diagnose_case(case.exists())
    for _ in range(MAX_ROUNDS):
        items = [m for m in diagnosis.verdict.missing_detail if m.id not in asked]
        if not items:
            break
        asked.update(m.id for m in items)
        data = diagnosis.case.data if diagnosis.case is not None else {}
        try:
            with using(diagnosis.rulebase.vocab):  # asked and answered in the rule base's words (a pack's items)
                updates = ask_missing(data, diagnosis.verdict, items, ask, say)
        except Interrupted as stop:
            if stop.updates:
                with _interrupt_deferred():
                    write_case(case, stop.updates)
                say(f"\n已把回答过的内容写入 {case}")
            raise KeyboardInterrupt from None
        if not updates:
            break
        with _interrupt_deferred():
            write_case(case, updates)
        say(f"\n已写入 {case}")
        diagnosis = diagnose_case(True)  # the case changed: diagnose again
    return diagnosis


@contextlib.contextmanager
def _interrupt_deferred():
    """A Ctrl-C (one or several) during the block is held until the block ends: saving the
    answers is never cut short. Only the main thread can set signal handlers; elsewhere, and
    where SIGINT is ignored, the block runs as is."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGINT"):
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is signal.SIG_IGN:
        yield
        return
    held: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if held:
        raise KeyboardInterrupt


def _pruned(value: Any) -> Any:
    if isinstance(value, dict):
        value = {k: _pruned(v) for k, v in value.items()}
        return {k: v for k, v in value.items() if v not in ({}, None, "")}
    return value


class _Item:
    """A missing gate item of the verdict, with its vocabulary attributes."""

    def __init__(self, missing: MissingItem):
        self.id = missing.id
        self.asks = list(missing.ask)  # what the gate rule asks for, when it says

    def attr(self, key: str, default: Any = None) -> Any:
        return attr("gate_item", self.id, key, default)

    @property
    def key(self) -> tuple[str, ...]:
        return gate_answer_key(self.id)

    @property
    def question(self) -> str:
        return str(self.attr("question") or self.attr("label") or self.id)


def _slot(updates: dict[str, Any], key: tuple[str, ...]) -> dict[str, Any]:
    for part in key:
        updates = updates.setdefault(part, {})
    return updates


def _put(updates: dict[str, Any], key: tuple[str, ...], value: Any) -> None:
    _slot(updates, key[:-1])[key[-1]] = value


def _text(item: _Item, data, verdict, ask: Ask, updates) -> None:
    """One free-text answer, written to the item's key (or its sub-keys, when the gate rule
    asks for the item's fields_key)."""
    fields_key = item.attr("fields_key")
    if fields_key and fields_key in item.asks:
        _fields(item, data, verdict, ask, updates)
        return
    if value_at(data, item.key) is not None:
        return
    text = ask(f"{item.question}：").strip()
    if text:
        _put(updates, item.key, text)


def _fields(item: _Item, data, verdict, ask: Ask, updates) -> None:
    """One text answer per sub-key (item `fields`) under item `fields_key`."""
    key = tuple(str(item.attr("fields_key") or ".".join(item.key)).split("."))
    known = value_at(data, key) or {}
    for name in item.attr("fields", ()):
        if name not in known:
            text = ask(f"{item.attr('fields_question') or '.'.join(key)} {name}（留空跳过）：").strip()
            if text:
                _put(updates, (*key, str(name)), text)


def _named(item: _Item, data, verdict, ask: Ask, updates) -> None:
    """An answer that must name a value of the enum `of` (a value, an alias, a board name)."""
    if value_at(data, item.key) is not None:
        return
    enum = str(item.attr("of"))
    forms = value_forms(enum, item.attr("shown") or ())
    example = "、".join(enum_values(enum)[1:3])
    value = _ask_valid(ask, f"{item.question}（{forms}）：",
                       lambda text: text if named_value(enum, text) else None, f"例如 {example}")
    if value:
        _put(updates, item.key, value)


def _results(item: _Item, data, verdict, ask: Ask, updates) -> None:
    """The evaluation status of the artifacts the gap needs (the fewest inputs first), or of
    any artifacts the user has verified; then the kind of evidence behind them."""
    known = value_at(data, item.key) or {}
    results = _slot(updates, item.key)  # filled as answers come: end of input keeps them
    wanted = [e.artifact for e in verdict.evaluate_next if e.artifact not in known]
    for artifact in wanted:
        status = _ask_valid(ask, f"{label('artifact', artifact)} 的评测结论 [normal/abnormal]：",
                            _choice(("normal", "abnormal")), "请填 normal 或 abnormal")
        if status:
            results[artifact] = {"status": status}
    if not wanted:
        chain = ", ".join(v for v in enum_values("artifact") if attr("artifact", v, "chain", -1) >= 0)
        for status, word in (("normal", "正常"), ("abnormal", "异常")):
            names = _ask_valid(ask, f"已验证{word}的产物（逗号分隔：{chain}；留空跳过）：", _artifacts, "产物 id 见提示")
            for artifact in names or []:
                if artifact not in known:
                    results[artifact] = {"status": status}
    if results:
        _ask_evidence(ask, results)


def _ask_evidence(ask: Ask, results: dict[str, Any]) -> None:
    """The kind of evidence behind the statuses just given. There is no default: without an
    answer the results carry no `evidence`, which the report shows as not stated."""
    kinds = tuple(v for v in enum_values("evidence") if v != "unspecified")
    evidence = _ask_valid(ask, f"这些结论的证据类型 [{'/'.join(kinds)}]（留空：不说明）：",
                          _choice(kinds), f"请填 {' / '.join(kinds)} 之一")
    if evidence is None:
        ask.say("  （证据类型未填写：报告会注明这些结论的证据没有说明）")
        return
    for entry in results.values():
        entry["evidence"] = evidence


def _badcase(item: _Item, data, verdict, ask: Ask, updates) -> None:
    """Whether a reproducible badcase exists, and where."""
    if value_at(data, item.key) is not None:
        return
    reproducible = _ask_valid(ask, f"{item.question}[y/n]：", _yes_no, "请填 y 或 n")
    if reproducible is None:
        return
    entry: dict[str, Any] = {"reproducible": reproducible}
    if reproducible:
        path = ask("badcase 文件路径（可留空）：").strip()
        if path:
            entry["path"] = path
    _put(updates, item.key, entry)


def _versions(item: _Item, data, verdict, ask: Ask, updates) -> None:
    """A version for each package the gate rule asks for (else the item's `fields`)."""
    known = {resolve_package(str(k), str(v)) for k, v in (value_at(data, item.key) or {}).items()}
    order = list(item.attr("fields", ()))  # the vocabulary's order, whatever order the gate rules fired in
    asked = sorted(item.asks, key=lambda p: order.index(p) if p in order else len(order)) if item.asks else order
    for package in asked:
        if package in known:
            continue
        example = attr("package", package, "example", "1.0.0")
        text = ask(f"{label('package', package)} 版本（如 {example}；留空跳过）：").strip()
        if text:
            _put(updates, (*item.key, package), text)


# How `ask` asks a gate item, by its vocabulary attribute `answer` (enum answer_kind, closed:
# tests/test_vocabulary_packs.py keeps the two sets equal).
_ANSWER_KINDS = {"text": _text, "fields": _fields, "named": _named, "results": _results,
                 "badcase": _badcase, "versions": _versions}
ANSWER_KINDS = tuple(_ANSWER_KINDS)
