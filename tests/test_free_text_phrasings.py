"""Free text as users write it in forum posts and tickets (rules/15_free_text.yaml).

Every row is a real diagnosis (bundled rules, real engine, no mocks) of a case whose
quantized.bc is normal and whose board result is abnormal, with one sentence in `symptom`,
`deployment.notes` or `tried`. A row names the text facts it must produce, as kind:topic:

- a statement of a mismatch ("模型要 YUV444，我们送的是 RGB") is `stated`: a confirmed
  user-side mismatch, the verdict is 用户侧适配 (user_side);
- a question or a suspicion ("怀疑 layout 不一致", "Is it possible that ...") is a `hint`:
  the chain's stage stays, and the user is asked to check the item;
- a negation ("没有发现 march 不一致", "march mismatch has been excluded") produces nothing.

Facts of other rules that a sentence may also fire (the colour format the board is fed,
the march a model was compiled for, blaming the compiler, PTQ words) are not compared.
"""

from __future__ import annotations

import pytest

from conftest import FULL_INFO, ok

IGNORED_TOPICS = {"model_march", "ptq_flow", "qat_flow", "blame_deployment",
                  "quantization_named", "deployment_named", "drop_said", "conversion_named",
                  "score_judged"}  # (what the report names, for the flow)
NO_ITEM_TOPICS = {"single_frame"}  # stated, but no check item: the verdict is not user_side

# (field, text, expected "kind:topic" facts; "" = none)
PHRASINGS = [
    # ------------------------------------------------------------------ negations: nothing
    ("deployment", "没有发现 march 不一致", ""),
    ("deployment", "不存在归一化做两次的问题", ""),
    ("deployment", "march mismatch has been excluded", ""),
    ("symptom", "已确认 layout 一致", ""),
    ("symptom", "已排除 layout 不一致", ""),
    ("symptom", "没有发现 layout 不一致的情况", ""),
    ("symptom", "检查过了，layout 没有不一致", ""),
    ("deployment", "不是 layout 的问题，两边都是 NCHW", ""),
    ("deployment", "layout is NOT the problem, we checked NCHW on both sides", ""),
    ("deployment", "We verified that the color format matches (NV12 on both).", ""),
    ("symptom", "there is no layout mismatch", ""),
    ("symptom", "we have excluded a layout mismatch", ""),
    ("symptom", "It's not a march issue", ""),
    ("symptom", "the runtime version is not the cause", ""),
    ("symptom", "march 不可能不一致，都是 nash-m", ""),
    ("symptom", "不太可能是 layout 的问题", ""),
    ("symptom", "I don't think the layout is wrong", ""),
    ("symptom", "我不认为 layout 有问题", ""),
    ("symptom", "归一化不存在重复的问题", ""),
    ("symptom", "The mean/std values are identical to training", ""),
    ("symptom", "we found no difference in mean/std between training and the board", ""),
    ("symptom", "cache flush is not the issue, we call hbUCPMemFlush after every write", ""),
    ("symptom", "the anchors were double-checked against the training config", ""),
    ("symptom", "anchors 与训练时一致，已核对", ""),
    ("symptom", "不只一张图，整个验证集都掉点", ""),
    ("symptom", "not only on a single image, the whole val set drops", ""),
    ("tried", "已确认 stride 对齐一致", ""),
    ("deployment", "编译时没有删除或插入任何节点", ""),
    ("deployment", "we did not remove the dequantize node", ""),
    # ------------------------------------------------------------------ questions and suspicions: hints
    ("deployment", "怀疑 layout 不一致", "hint:layout"),
    ("deployment", "是否 layout 不一致？", "hint:layout"),
    ("deployment", "maybe the layout is wrong", "hint:layout"),
    ("deployment", "layout 会不会不一致", "hint:layout"),
    ("deployment", "NHWC 和 NCHW 是否搞反了", "hint:layout"),
    ("symptom", "可能是 layout 的问题", "hint:layout"),
    ("symptom", "不是很确定是不是 layout 的问题", "hint:layout"),
    ("symptom", "请问 layout 不一致会有什么影响", "hint:layout"),
    ("symptom", "Is it possible that the mean/std is applied twice?", "hint:normalization"),
    ("symptom", "归一化是不是做了两次", "hint:normalization"),
    ("symptom", "mean/std 可能和训练时不一致", "hint:normalization"),
    ("symptom", "会不会是 march 不一致导致的？", "hint:march"),
    ("symptom", "Is the march wrong?", "hint:march"),
    ("symptom", "是不是平台选错了", "hint:march"),
    ("deployment", "是不是 RGB 和 BGR 搞反了", "hint:colour_format"),
    ("deployment", "I suspect the colour format is wrong", "hint:colour_format"),
    ("deployment", "颜色通道顺序会不会不对", "hint:colour_format"),
    ("symptom", "怀疑板端 runtime 版本比编译用的旧", "hint:runtime_version"),
    ("symptom", "is the runtime version on the board compatible with the hbm?", "hint:runtime_version"),
    ("symptom", "Could the anchors be different from training?", "hint:post_processing"),
    ("symptom", "后处理的类别数是不是没传对", "hint:post_processing"),
    ("symptom", "Not sure whether the anchors match", "hint:post_processing"),
    ("symptom", "不知道是不是没有 flush cache", "hint:cache_flush"),
    ("symptom", "是否需要做 cache flush", "hint:cache_flush"),
    ("deployment", "maybe the board app ignores the buffer stride", "hint:stride_padding"),
    ("deployment", "需要考虑对齐吗", "hint:stride_padding"),
    ("deployment", "maybe we forgot to dequantize the output", "hint:io_nodes"),
    ("symptom", "输入 scale 会不会不一致", "hint:input_scale"),
    ("symptom", "perhaps the float onnx differs from pytorch", "hint:reference"),
    # ------------------------------------------------------------------ statements: stated
    ("symptom", "The march used at prepare differs from the board", "stated:march"),
    ("symptom", "prepare 时用的 march 和板端不一致", "stated:march"),
    ("symptom", "compiled with the wrong march", "stated:march"),
    ("symptom", "平台选错了，应该是 nash-m", "stated:march"),
    ("symptom", "turned out to be the march", "stated:march"),
    ("symptom", "已确认 layout 一致，但 march 和板端不一致", "stated:march"),
    ("deployment", "模型要 YUV444，我们送的是 RGB", "stated:colour_format"),
    ("deployment", "we feed RGB but the model was compiled for NV12", "stated:colour_format"),
    ("deployment", "the model expects NV12 but we feed it BGR", "stated:colour_format"),
    ("deployment", "模型输入是 NV12，板端给的是 RGB 图", "stated:colour_format"),
    ("deployment", "BGR/RGB 通道顺序搞反了", "stated:colour_format"),
    ("deployment", "The input to the model is BGR, but it was trained with RGB", "stated:colour_format"),
    ("deployment", "板端喂 NHWC，模型要 NCHW", "stated:layout"),
    ("deployment", "模型要 NCHW，板端送的是 NHWC", "stated:layout"),
    ("deployment", "we feed NHWC while the model expects NCHW", "stated:layout"),
    ("symptom", "检查发现 layout 不一致", "stated:layout"),
    ("symptom", "已经确认是 layout 不一致导致的", "stated:layout"),
    ("symptom", "排查了一下，是 layout 的问题", "stated:layout"),
    ("symptom", "怀疑是预处理的问题，板端喂 NHWC，模型要 NCHW", "stated:layout"),
    ("symptom", "归一化做了两次", "stated:normalization"),
    ("symptom", "板端程序里又做了一次归一化", "stated:normalization"),
    ("symptom", "mean/std was applied twice: once in the app and once in the model", "stated:normalization"),
    ("symptom", "mean / std 和训练时不一样", "stated:normalization"),
    ("symptom", "anchors 和训练时不一样", "stated:post_processing"),
    ("symptom", "class count not passed to the post-processing library", "stated:post_processing"),
    ("symptom", "the strides in the decoder are wrong", "stated:post_processing"),
    ("symptom", "问题出在后处理的 anchors", "stated:post_processing"),
    ("symptom", "num_classes is wrong in the post-process config", "stated:post_processing"),
    ("symptom", "板端 runtime 版本比编译用的 hbdk 旧", "stated:runtime_version"),
    ("symptom", "the runtime on the board is older than the toolchain used to build the model", "stated:runtime_version"),
    ("symptom", "编译用的 OE 比板端的运行库新", "stated:runtime_version"),
    ("symptom", "the hbdk used for compiling is newer than the board runtime", "stated:runtime_version"),
    ("symptom", "板端 libdnn 版本和编译用的 OE 版本不匹配", "stated:runtime_version"),
    ("deployment", "buffer stride is ignored by the board app", "stated:stride_padding"),
    ("deployment", "板端没有考虑 stride 对齐", "stated:stride_padding"),
    ("deployment", "没有处理 padding", "stated:stride_padding"),
    ("deployment", "the root cause was the buffer stride", "stated:stride_padding"),
    ("symptom", "we do not flush the cache", "stated:cache_flush"),
    ("symptom", "没有 flush cache", "stated:cache_flush"),
    ("symptom", "cache 没刷，板端结果每次都不一样", "stated:cache_flush"),
    ("symptom", "the input buffer is never flushed before inference", "stated:cache_flush"),
    ("tried", "忘记刷新缓存", "stated:cache_flush"),
    ("symptom", "板端输入 scale 和 QAT 标定时不一致", "stated:input_scale"),
    ("symptom", "input scale doesn't match the calibration", "stated:input_scale"),
    ("symptom", "float onnx 和 pytorch 的输出不一致", "stated:reference"),
    ("deployment", "删除了输出的反量化节点，但板端没有做反量化", "stated:io_nodes hint:io_nodes"),
    ("symptom", "only tested on a single image", "stated:single_frame"),
    ("symptom", "只测了一张图", "stated:single_frame"),
    ("symptom", "on one image only", "stated:single_frame"),
    # ------------------------------------------------------------------ no mismatch at all
    ("deployment", "RGB 转成 NV12 后输入模型，模型 input_type_rt 是 NV12", ""),
    ("deployment", "we convert the RGB image to NV12 before feeding the model", ""),
    ("deployment", "模型要 NV12，我们送的也是 NV12", ""),
    ("symptom", "同一个模型在不同平台的精度不一样", ""),
    ("symptom", "板端精度比 x86 仿真低 3 个点", ""),
    ("symptom", "the board mean IoU is 3 points lower, maybe a quantization issue", ""),
    ("symptom", "每一张图都不一致", ""),
]


def _case(field: str, text: str) -> dict:
    case = {**FULL_INFO, "results": {"quantized_bc": ok("normal"), "board": ok("abnormal")}}
    if field == "deployment":
        case["deployment"] = {"notes": text}
    elif field == "tried":
        case["tried"] = [text]
    else:
        case["symptom"] = text
    return case


def _facts(d) -> set[str]:
    """The mismatch topics read (text_fact); results, controls and the like read from the same
    words are rules/16_reported_text.yaml's, tested there."""
    from j6doctor.facts import enum_values

    topics = set(enum_values("text_topic")) - IGNORED_TOPICS
    return {f"{t['kind']}:{t['topic']}" for t in d.verdict_json["text_facts"] if t["topic"] in topics}


def test_the_table_is_big_and_covers_both_languages_and_every_kind():
    assert len(PHRASINGS) >= 40
    expected = [set(e.split()) for _, _, e in PHRASINGS]
    assert sum(1 for e in expected if not e) >= 20
    assert sum(1 for e in expected if any(x.startswith("hint:") for x in e)) >= 20
    assert sum(1 for e in expected if any(x.startswith("stated:") for x in e)) >= 20
    han = [t for _, t, _ in PHRASINGS if any("\u4e00" <= c <= "\u9fff" for c in t)]
    assert 20 <= len(han) <= len(PHRASINGS) - 20


@pytest.mark.parametrize("field,text,expected", PHRASINGS, ids=[f"{i:03d}:{p[1][:28]}" for i, p in enumerate(PHRASINGS)])
def test_free_text_phrasing(diagnose, field, text, expected):
    d = diagnose(_case(field, text))
    want = set(expected.split())
    assert _facts(d) == want, d.verdict_json["text_facts"]
    stated_items = [t for t in d.verdict_json["text_facts"] if t["kind"] == "stated" and t["item"] != "none"]
    if any(w.startswith("stated:") and w.split(":")[1] not in NO_ITEM_TOPICS for w in want):
        assert d.verdict_json["stage"] == "user_side"
        for t in stated_items:  # the quote is the user's own words, in the field they were written in
            assert t["quote"] and t["quote"] in text and t["key"].split(".")[0] == field
    else:
        assert not stated_items
        assert d.verdict_json["stage"] == "compile"  # the chain's stage: nothing is confirmed from the text
        assert not [f for f in d.run.by_type("user_mismatch") if f["note"].startswith("从描述中识别")]


HINTS = [(f, t, e) for f, t, e in PHRASINGS if e.startswith("hint:") and e != "hint:io_nodes"]


@pytest.mark.parametrize("field,text,expected", HINTS[::4], ids=[p[1][:28] for p in HINTS[::4]])
def test_a_hint_is_asked_as_a_question(diagnose, field, text, expected):
    d = diagnose(_case(field, text))
    (hint,) = [t for t in d.verdict_json["text_facts"] if t["kind"] == "hint" and t["topic"] == expected.split(":")[1]]
    questions = [s["text"] for s in d.verdict_json["next_steps"] if f"「{hint['quote']}」" in s["text"]]
    assert questions and "只是怀疑或提问" in questions[0]


def test_a_question_after_the_statement_asks_nothing_more(diagnose):
    d = diagnose(_case("deployment", "起初怀疑 layout 不一致。后来查到板端喂 NHWC，模型要 NCHW"))
    assert _facts(d) == {"hint:layout", "stated:layout"}
    assert d.verdict_json["stage"] == "user_side"
    assert not [s for s in d.verdict_json["next_steps"] if "只是怀疑或提问" in s["text"]]


# ---------------------------------------------------------------------------- the triggers live once

def _free_text_rules() -> dict:
    from pathlib import Path

    import yaml

    path = Path(__file__).resolve().parents[1] / "rules" / "15_free_text.yaml"
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def test_no_text_rule_restates_a_context_trigger(rulebase):
    """Negation, suspicion and hypothesis triggers are data in facts/text_context.yaml; a text
    rule names the reading it takes (`context:`) and its patterns name term classes only, so
    no rule can copy a trigger into its own `unless` or `match`."""
    from j6doctor.engine.tag_patterns import classes_of

    doc = _free_text_rules()
    assert "unless" not in doc
    context = rulebase.vocab.text.context
    questions = [r for r in doc["rules"] if r["id"].endswith("_question") and "match" in r]
    assert len(questions) >= 10 and all(r["context"] == "uncertain" for r in questions)
    terms = rulebase.vocab.text.terms
    for rule in rulebase.rules:
        if rule.text is None:
            continue
        assert (rule.text.context or context.default) in context.readings, rule.id
        for pattern in rule.text.match + rule.text.unless:
            assert classes_of(pattern) <= set(terms), (rule.id, pattern.source)


# (text, the clauses it is cut into)
CLAUSE_CUTS = [
    # a sentence wrapped after a model or file name goes on: its subject stays with its status
    ("生成的 onnx\n无法检测到目标，而原版的 yolov8n.onnx 可以", ["生成的 onnx\n无法检测到目标，而原版的 yolov8n.onnx 可以"]),
    ("the exported model\nloses 10 points on the board", ["the exported model\nloses 10 points on the board"]),
    # a line that ends in Chinese, or a list item, or a yaml key, is a statement of its own
    ("量化模型精度正常\n板端掉点严重", ["量化模型精度正常", "板端掉点严重"]),
    ("现象如下：\n- 板端没有检测框\n- x86 仿真正常", ["现象如下：", "- 板端没有检测框", "- x86 仿真正常"]),
    ("配置：\ninput_type_rt: nv12\n板端送的是 RGB", ["配置：", "input_type_rt: nv12", "板端送的是 RGB"]),
    ("板端结果不对。\n已确认 march 一致", ["板端结果不对", "已确认 march 一致"]),
    # after a Latin word, a line that opens with a sentence's first word is one of its own
    ("上板报 Incompatible Platform\n看了下是 march 写错了", ["上板报 Incompatible Platform", "看了下是 march 写错了"]),
    ("模型转成了 hbm\n然后板端跑出来全是框", ["模型转成了 hbm", "然后板端跑出来全是框"]),
    # an indented line is a row of its own
    ("on val:\n  qat.pt  mAP 0.472\n  qat.bc  mAP 0.470", ["on val:", "qat.pt  mAP 0.472", "qat.bc  mAP 0.470"]),
]


@pytest.mark.parametrize("text,expected", CLAUSE_CUTS, ids=[t[:16] for t, _ in CLAUSE_CUTS])
def test_clauses_follow_wrapped_lines_and_stop_at_statements(rulebase, text, expected):
    from j6doctor.engine.text_reader import read

    reading = read(text, rulebase.vocab.text.index)
    assert [reading.words(c.start, c.end) for c in reading.clauses] == expected
