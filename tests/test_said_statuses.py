"""What a user says a model gave, good or bad, as forum posts put it (facts/text_terms.yaml,
class `status`; rules/16_reported_text.yaml). A good word denied is a bad result: the
denial stands before the good word, so the longer, earlier phrase is the term ("结果并不正确"
holds "正确", "is not accurate" holds "accurate"). Each row is a real diagnosis of one
sentence: the board's result read from it."""

from __future__ import annotations

import pytest

BOARD_ABNORMAL = [
    "onnx 推理正常，bin 上板后结果不正确",
    "onnx 推理正常，bin 上板后结果并不正确",
    "onnx 推理正常，bin 上板后不能检测到目标",
    "onnx 推理正常，bin 上板后没法正常推理",
    "onnx 推理正常，bin 上板后不能正确识别",
    "onnx 推理正常，bin 上板后结果不太准",
    "onnx 推理正常，bin 上板后检测结果全是错的",
    "onnx 推理正常，bin 上板后结果全错",
    "onnx 推理正常，bin 上板后结果完全错乱",
    "The onnx model is fine, but the board output is not good",
    "The onnx model is fine, but the board result is not accurate",
    "The onnx model is fine, but the board result isn't correct",
    "The onnx model is fine, but on the board it no longer works",
    "hbm 在 x86 仿真上结果正确，上板就错了",
    "onnx 推理正常，bin 上板后精度只有 35",
]

BOARD_NORMAL = [
    "onnx 推理正常，bin 上板后结果正确",
    "onnx 推理正常，bin 上板后能正常检测",
    "The onnx model is fine, and the board result is accurate",
]


def _board_statuses(diagnose, symptom: str) -> set[str]:
    run = diagnose({"symptom": symptom}).run
    return {f["status"] for f in run.facts if f.type == "reported" and f["artifact"] == "board"}


@pytest.mark.parametrize("symptom", BOARD_ABNORMAL)
def test_a_good_word_denied_is_a_bad_result(diagnose, symptom):
    assert _board_statuses(diagnose, symptom) == {"abnormal"}


@pytest.mark.parametrize("symptom", BOARD_NORMAL)
def test_a_good_word_said_is_a_good_result(diagnose, symptom):
    assert _board_statuses(diagnose, symptom) == {"normal"}


def _statuses(diagnose, symptom: str, artifact: str) -> set[str]:
    run = diagnose({"symptom": symptom}).run
    return {f["status"] for f in run.facts if f.type == "reported" and f["artifact"] == artifact}


@pytest.mark.parametrize("symptom", [
    "上板之前把 input_type_rt 写错了，板端结果",          # what was set wrong is no result
    "板端精度只有 1 个点的差距，上板测试",                 # "only one point of gap" is no low score
])
def test_a_mistake_named_or_a_small_gap_is_no_bad_result(diagnose, symptom):
    assert "abnormal" not in _statuses(diagnose, symptom, "board")


def test_a_score_said_to_be_only_so_much_is_a_bad_result(diagnose):
    # (read twice: "只有 35" is a bad result, and 35 is a score below the QAT model's 42.1)
    run = diagnose({"symptom": "qat 模型精度 42.1，导出 qat.bc 之后精度只有 35"}).run
    assert {f["status"] for f in run.facts if f.type == "confirmed" and f["artifact"] == "qat_bc"} == {"abnormal"}
    assert _statuses(diagnose, "导出 qat.bc 之后精度只有 35", "qat_bc") == {"abnormal"}


@pytest.mark.parametrize("symptom, artifact, statuses", [
    # the model at an epoch of its training is the model in training (in a QAT flow the QAT model)
    ("QAT 训练，前50epoch精度正常，到第60epoch 测试精度突然降低", "qat_pt", {"normal", "abnormal"}),
    # a thing taken for another is a bad result; the device it ran on is the board
    ("量化后的模型在 ARM 设备上推理结果把猫识别成拼图", "board", {"abnormal"}),
    # converted to int8 is the quantized model
    ("The fake-quant model is fine, a prepared and converted model to int8 produces unexpected results",
     "quantized_bc", {"abnormal"}),
    # "没有意义" is a bad result
    ("bin 在板子上的输出结果无意义", "board", {"abnormal"}),
    # the model before quantization is the float model; the one a user quantized the quantized one
    ("量化前分别有75%和92%，量化后变成了9.4%和21.6%（测试量化前后的代码相同）", "float", {"normal"}),
    ("量化了一个识别模型，精度下降了几十个点", "quantized_bc", {"abnormal"}),
    ("I faced a problem with model quality after exporting model to onnx", "qat_bc", {"abnormal"}),
    ("quantized.bc 精度正常，上板后差了很多", "board", {"abnormal"}),
    # a QAT model put on the board after it is named is the board's run; one named after the board is its own
    ("QAT 模型上板后精度下降", "board", {"abnormal"}),
    ("J6 上 QAT 模型部署后精度下降", "qat_pt", set()),
    ("J6M 上 QAT 模型 qat.bc 精度正常", "qat_bc", {"normal"}),
    # a question in the A-not-A form is no result
    ("quantized.bc 正常，想确认 hbm 有没有问题", "hbm", set()),
    # the export step named for its product
    ("qat.pt 正常，export 之后掉了 5 个点", "qat_bc", {"abnormal"}),
    # a drop said of both ("都") is each one's
    ("hbm 在板端和 x86 上都掉了 10 个点", "hbm_x86", {"abnormal"}),
    # a result after a fix is no result of the reported run
    ("板端预处理用的 BGR，改过来就好了", "board", set()),
    ("After PTQ with hb_mapper, the calibrated onnx already shows a big drop", "qat_pt", {"abnormal"}),
    ("My QAT model is fine, but after export the hbir model's accuracy drops to zero", "qat_bc", {"abnormal"}),
    # "quantitative model" is how many write "量化模型" in English
    ("using ORT to infer this quantitative model, the accuracy drops by about 4%", "quantized_bc", {"abnormal"}),
])
def test_what_a_model_gave_named_as_users_name_it(diagnose, symptom, artifact, statuses):
    assert _statuses(diagnose, symptom, artifact) == statuses


def test_what_it_takes_to_get_a_result_is_no_result(diagnose):
    # "才能推理结果正确": in order to get correct results, not correct results
    symptom = "请问量化后的模型，在板端推理要注意修改什么，才能推理结果正确？"
    assert _statuses(diagnose, symptom, "quantized_bc") == set()


@pytest.mark.parametrize("symptom, comparison", [
    ("the accuracy of quantized_model.onnx is close to the float model", ("quantized_bc", "float", "equal")),
    ("the output of the board is shifted by one channel compared with the x86 simulation",
     ("board", "hbm_x86", "differs")),
    ("float 模型和 quantized 模型在 PC 上精度一样", ("float", "quantized_bc", "equal")),
    ("there is a big gap between the quantized onnx and the bin on the board", ("quantized_bc", "board", "differs")),
    # a mismatch right before the other model: a comparison, no bad result of that model
    ("however when using quantization the model output does not match the float versions",
     ("quantized_bc", "float", "differs")),
    # "against" names the other side
    ("After convert, quantized.bc loses 4 mAP against qat.bc", ("quantized_bc", "qat_bc", "differs")),
])
def test_two_models_compared_as_users_write_it(diagnose, symptom, comparison):
    run = diagnose({"symptom": symptom}).run
    said = {(f["a"], f["b"], f["relation"]) for f in run.facts if f.type == "said_comparison"}
    assert said == {comparison}
    assert not [f for f in run.facts if f.type == "reported" and f["artifact"] == comparison[1]
                and f["status"] == "abnormal"]


@pytest.mark.parametrize("symptom, comparisons", [
    # the later model "differs" with no other side: it differs from the pair just said to agree
    ("hbm 在 x86 上和 quantized.bc 一致，板端跑同样的输入结果不一样",
     {("hbm_x86", "quantized_bc", "equal"), ("board", "hbm_x86", "differs"), ("board", "quantized_bc", "differs")}),
    ("The hbm on x86 matches quantized.bc, but the board output differs on every image",
     {("hbm_x86", "quantized_bc", "equal"), ("board", "hbm_x86", "differs"), ("board", "quantized_bc", "differs")}),
    # ... not when it names its own other side
    ("x86 仿真和 quantized.bc 一致，板端和 qat.bc 不一致",
     {("hbm_x86", "quantized_bc", "equal"), ("board", "qat_bc", "differs")}),
    # a version that does not match is no comparison of outputs
    ("RKNN Model version: 2.3.2 not match with rknn runtime version: 2.2.0", set()),
])
def test_a_difference_after_an_agreement(diagnose, symptom, comparisons):
    run = diagnose({"symptom": symptom}).run
    assert {(f["a"], f["b"], f["relation"]) for f in run.facts if f.type == "said_comparison"} == comparisons


def test_the_model_named_by_its_quantization_step_takes_its_score(diagnose):
    # "for post training quantize using X" names the quantized model: 80% → 36% is convert
    symptom = ("The float model reaches 80% accuracy, for post training quantize using the toolkit "
               "we observed accuracy of 36%.")
    assert diagnose({"symptom": symptom}).verdict.stage == "convert"


# What a review of the readings above found read wrongly: each stays read as the user meant it.
@pytest.mark.parametrize("symptom, artifact, statuses", [
    ("quantized.bc 正常，板端结果错误", "board", {"abnormal"}),          # "板端结果" stays the board's
    ("quantized.bc 正常，板端输出全错了", "board", {"abnormal"}),
    ("quantized.bc 正常，板端路径放错了一次，重新跑之后结果正确", "board", {"normal"}),  # a mistake the user made
    ("quantized.bc 的结果是对的，只有上板才会出现乱框", "board", {"abnormal"}),      # 才会 is no wish
    ("quantized.bc 正常，板端循环推理，第 100 轮之后结果开始乱", "torch_model", set()),  # a loop, not an epoch
])
def test_readings_a_review_found_wrong_stay_right(diagnose, symptom, artifact, statuses):
    assert _statuses(diagnose, symptom, artifact) == statuses


def test_close_to_zero_is_no_agreement(diagnose):
    run = diagnose({"symptom": "The quantized.bc mAP is close to 0 compared with qat.bc, and the board is also bad"}).run
    assert not [f for f in run.facts if f.type == "said_comparison" and f["relation"] == "equal"]


def test_agreeing_with_a_model_of_unknown_state_clears_nothing(diagnose):
    verdict = diagnose({"symptom": "qat.bc 和 quantized.bc 的结果一样，都是错的，板端也不对"}).verdict
    assert verdict.stage != "compile"


# What a second review found read wrongly (English): each stays read as the user meant it.
@pytest.mark.parametrize("symptom, artifact, statuses", [
    ("I exported the model with torch 2.1 and the int8 engine gives wrong boxes", "torch_model", set()),
    ("I converted my model to tflite with int8 quantization and the accuracy dropped a lot", "quantized_bc", {"abnormal"}),
    ("The float model has only a few misclassifications", "float", set()),
    ("I removed the dequantize node so that the board output is faster, but now the board results are wrong",
     "board", {"abnormal"}),
])
def test_english_readings_a_second_review_found_wrong_stay_right(diagnose, symptom, artifact, statuses):
    assert _statuses(diagnose, symptom, artifact) == statuses


def test_no_big_gap_is_agreement(diagnose):
    run = diagnose({"symptom": "No big gap between qat.bc and quantized.bc, but the hbm on board is wrong."}).run
    said = {(f["a"], f["b"], f["relation"]) for f in run.facts if f.type == "said_comparison"}
    assert said == {("qat_bc", "quantized_bc", "equal")}


@pytest.mark.parametrize("symptom, stage", [
    # a drop said of the quantized model alone is measured against the model before quantization:
    # the float model in a PTQ flow
    ("PTQ 量化后 mAP 从 40 掉到 20", "convert"),
    ("I used PTQ. After post-training quantization the accuracy dropped by 20 points.", "convert"),
    # ... which in a QAT flow may be the QAT model or the float one: no reference is taken
    ("QAT 训练后，量化后 mAP 从 40 掉到 20", "undetermined"),
])
def test_a_drop_after_quantization_names_its_reference(diagnose, symptom, stage):
    assert diagnose({"symptom": symptom}).verdict.stage == stage


@pytest.mark.parametrize("symptom", [
    "PTQ 量化后精度没有下降，但是上板后检测不到目标",
    "PTQ 量化后精度只下降了 0.3%，但是上板后检测框全乱了",
])
def test_a_drop_denied_or_said_small_is_a_good_result(diagnose, symptom):
    d = diagnose({"symptom": symptom})
    assert _statuses(diagnose, symptom, "quantized_bc") == {"normal"}
    assert d.verdict.stage != "convert"


def test_what_the_user_suspects_is_no_mismatch_found(diagnose):
    # the same words stated as a finding are a user-side mismatch; listed under `suspect`
    # they are a suspicion however they are worded (text context field_context)
    words = "the calibration preprocessing (BGR->RGB, 0-1 normalisation) differs from training, normalised twice"
    case = {"flow": "ptq", "results": {"float": {"status": "normal", "evidence": "dataset_eval"},
                                       "quantized_bc": {"status": "abnormal", "evidence": "dataset_eval"}}}
    stated = diagnose({**case, "deployment": {"notes": words}})
    suspected = diagnose({**case, "suspect": [words]})
    assert stated.run.by_type("user_mismatch") and stated.verdict.stage == "user_side"
    assert not suspected.run.by_type("user_mismatch") and suspected.verdict.stage == "convert"


@pytest.mark.parametrize("symptom", [
    "PTQ 量化后 mAP 会不会下降？",                       # a question reports no drop
    "PTQ 量化后模型大小下降了 4 倍",                      # no accuracy
    "PTQ 量化后 loss 下降了",
    "PTQ 量化后精度比论文里报告的低 5 个点",               # another reference
    "I use PTQ. Compared to the official benchmark, after quantization the accuracy dropped by 4 points",
    "I use PTQ. After quantization the accuracy dropped by 0.5%, which is acceptable",
])
def test_a_drop_that_is_no_accuracy_drop_against_the_float_model_is_no_comparison_with_it(diagnose, symptom):
    run = diagnose({"symptom": symptom}).run
    assert not [f for f in run.facts if f.type == "said_comparison" and f["b"] == "before_quantization"]


@pytest.mark.parametrize("symptom, status", [
    ("PTQ 量化后精度仅下降了 30%", "abnormal"),            # "only" thirty points is no small drop
    ("PTQ 量化后精度只下降了 1.5 个点", "normal"),
    ("PTQ 量化后 loss 没有下降", "abnormal"),              # a loss that does not fall says nothing good
])
def test_only_an_accuracy_drop_denied_or_under_two_points_is_a_good_result(diagnose, symptom, status):
    assert status in _statuses(diagnose, symptom, "quantized_bc")
    if status == "abnormal":
        assert "normal" not in _statuses(diagnose, symptom, "quantized_bc")


@pytest.mark.parametrize("symptom", [
    "PTQ: The number of outputs of the quantized model does not match the float model",
    "The hbm model's output shape does not match the onnx model",
    "Does the board output not match the simulator?",
])
def test_a_mismatch_of_structure_or_a_question_compares_no_outputs(diagnose, symptom):
    run = diagnose({"symptom": symptom}).run
    assert not [f for f in run.facts if f.type == "said_comparison"]


def test_a_mismatch_where_the_model_runs_is_that_runs_result(diagnose):
    symptom = "The outputs mismatch on the device while quantized.bc is correct"
    assert _statuses(diagnose, symptom, "board") == {"abnormal"}
    assert diagnose({"symptom": symptom}).verdict.stage == "compile"


@pytest.mark.parametrize("symptom, stage", [
    # a hedge on the cause does not reach back over the mismatch stated before it
    ("The input layout of the board program is NHWC while the model expects NCHW which may cause the drop",
     "user_side"),
    # "问题" is also "a question"
    ("我的问题在于后处理的 anchor 应该怎么设置", "undetermined"),
])
def test_hedges_and_questions_around_a_cause(diagnose, symptom, stage):
    assert diagnose({"symptom": symptom}).verdict.stage == stage


@pytest.mark.parametrize("symptom, stage", [
    # a mismatch right before the reference model compares with it; the reference is not read as bad
    ("The quantized.bc output does not match the qat.pt output", "undetermined"),
    ("The board output does not match the x86 simulation", "board"),
    # a drop denied without its measure right before it
    ("PTQ 量化后没有掉点，但是上板后检测不到目标", "compile"),
    ("PTQ 模型精度在量化后没有明显下降，但是板端结果全错", "compile"),
    # a question about a drop of so much, an expectation, amounts as users write them
    ("PTQ 量化后 mAP 掉了 3 个点，这正常吗", "convert"),
    ("PTQ 量化后 mAP 从 40 掉到 20，比预期的低很多", "convert"),
    ("PTQ 量化后 mAP 掉了 10 多个点", "convert"),
    ("PTQ 量化后精度掉了一半", "convert"),
    ("PTQ 量化后 mAP 由 40 降到 20", "convert"),
    ("I use PTQ; after quantization the accuracy has dropped by 20%", "convert"),
    # predictions that do not match are outputs; the number of outputs is structure
    ("PTQ: The predictions of the quantized model do not match the float model", "convert"),
    ("The simulator output is correct but the board output does not match the simulator", "compile"),
])
def test_drops_and_mismatches_as_users_write_them(diagnose, symptom, stage):
    assert diagnose({"symptom": symptom}).verdict.stage == stage
