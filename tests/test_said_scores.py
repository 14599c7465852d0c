"""Scores written next to the models they belong to (probes/said_scores.py) and what the rules
make of them (rules/18_intake.yaml score.*): read from the one reading of the text, compared
with the nearest scored model upstream on the chain (the float model's score is the reference,
else the first) under the case's tolerance."""

from __future__ import annotations

import pytest

from j6doctor.probes.said_scores import scores


def _read(text: str) -> list[tuple[str, float, bool]]:
    return [(s.mention, s.value, s.percent) for s in scores(text)]


@pytest.mark.parametrize("text, expected", [
    ("the fp32 model gets 90.5% on the test set, on the board it drops to 75.75%",
     [("float", 90.5, True), ("board", 75.75, True)]),
    ("float: mAP 0.647, quantized_model.onnx: mAP 0.61", [("float", 0.647, False), ("quantized_bc", 0.61, False)]),
    ("原始模型 mAP 0.68，板端 mAP 0.45", [("float", 0.68, False), ("board", 0.45, False)]),
    # a score someone else published is no score the user measured
    ("The paper reports 76.1% top-1; our float model gets 75.9% and the int8 model 60.2%",
     [("float", 75.9, True), ("quantized_bc", 60.2, True)]),
    ("I get an mIoU of 0.661 for the int8 model on the device. The original paper reported an mIoU of 0.7081 (fp32 torch).",
     [("board", 0.661, False)]),
    ("论文中的精度是 76%，我们的 float 模型是 75%，量化后 60%", [("float", 75.0, True), ("quantized_bc", 60.0, True)]),
    # ... a list of them too; and a report of the user's own run is no publication
    ("The paper reports 76.1% and 70.2% for the float model and the int8 model", []),
    ("The accuracy reported by the eval script for the int8 model on the board is 0.61, the float model 0.75",
     [("board", 0.61, False), ("float", 0.75, False)]),
    # a measurement is not a model built from another
    ("The x86 simulation matches, but the mAP obtained from the board is 0.31", [("board", 0.31, False)]),
    # "都" that is not said of the score shares nothing
    ("float 模型和 int8 模型都测了，int8 精度 60.2", [("quantized_bc", 60.2, False)]),
    # more models than scores: which is whose is not told
    ("41.9、41.7，分别是 qat.pt、qat.bc、quantized.bc 的 mAP", []),
    ("0.75 and 0.61 for my float model and my int8 model", [("float", 0.75, False), ("quantized_bc", 0.61, False)]),
    # a model named by its file after the same place named in words: the file's score ("calibration 模型" and
    # "qat.pt" stand at one place in a QAT flow)
    ("float top1 91.3%，calibration 模型 90.6%，QAT 训了 10 epoch 后 qat.pt 是 85.1%",
     [("float", 91.3, True), ("qat_pt", 85.1, True)]),
    # a difference is no score
    ("训练阶段每个 epoch 评测 qat.pt，最后 mAP 0.452，和 float 差 0.6", [("qat_pt", 0.452, False)]),
    # a list of scores, then the models they belong to, in order
    ("41.9、41.7、37.3、37.2，分别是 qat.pt、qat.bc、quantized.bc、板端 hbm 的 mAP",
     [("qat_pt", 41.9, False), ("qat_bc", 41.7, False), ("quantized_bc", 37.3, False), ("board", 37.2, False)]),
    ("76.1% and 60.2% for the float model and the int8 model", [("float", 76.1, True), ("quantized_bc", 60.2, True)]),
    # one score said of two models joined before it
    ("qat.bc 的 mAP 和 qat.pt 一致都是 44.0，convert 成 quantized.bc 以后只有 39.6",
     [("qat_bc", 44.0, False), ("qat_pt", 44.0, False), ("quantized_bc", 39.6, False)]),
    ("The float model and the QAT model both get 76.1%, the board 60.2%",
     [("float", 76.1, True), ("qat_pt", 76.1, True), ("board", 60.2, True)]),
    # the model another was built from did not give the score
    ("The INT8 TensorRT engine built from the QDQ ONNX gives mAP 0.21, while the QDQ ONNX in onnxruntime gives 0.45",
     [("hbm", 0.21, False), ("quantized_bc", 0.45, False)]),
    # a model's short label before its score
    ("精度对齐：浮点 0.712，calibrated 0.705，quantized 0.431",
     [("float", 0.712, False), ("qat_pt", 0.705, False), ("quantized_bc", 0.431, False)]),
    ("float: 0.647 | calib: 0.615 | quant: 0.61",
     [("float", 0.647, False), ("qat_pt", 0.615, False), ("quantized_bc", 0.61, False)]),
    # a word for no score counts only right before the number, with no measure after it
    ("float mAP 0.65，板端速度正常，精度 0.41", [("float", 0.65, False), ("board", 0.41, False)]),
    ("float 模型 mAP 0.72，同样输入尺寸大小下板端 0.41", [("float", 0.72, False), ("board", 0.41, False)]),
    # a package's version between a model and its score is neither
    ("qat 模型 mAP 0.75，hbm 用 horizon_nn 1.1 转的 mAP 0.62", [("qat_pt", 0.75, False), ("hbm", 0.62, False)]),
    ("qat 模型 0.75，hbm 在 oe 3.0.22 上 0.62", [("qat_pt", 0.75, False), ("hbm", 0.62, False)]),
    # a full stop after a score ends the sentence; it makes no version of it
    ("The iou of ckpt is 87.98.\nThe iou of float tflite is 87.89.",
     [("torch_model", 87.98, False), ("float", 87.89, False)]),
    # a drop from another model's score: the first score is that model's, the second the one named before
    ("用quantized_model.onnx在PC上评测，top1从浮点的76.2%降到了61.5%",
     [("quantized_bc", 61.5, True), ("float", 76.2, True)]),
    ("the quantized model's accuracy drops from the float model's 76% to 40%",
     [("quantized_bc", 40.0, True), ("float", 76.0, True)]),
    # ... with no model after "from", the model named before it fell to the second score
    ("PTQ转换后的模型在PC上测试mAP从0.5降到0.2，浮点模型0.5", [("quantized_bc", 0.2, False), ("float", 0.5, False)]),
    ("the quantized model accuracy dropped from 90% to 60%", [("quantized_bc", 60.0, True)]),
    # the quantized model labelled by its precision, in a list or a table's header
    ("Results on COCO val2017:\n- FP32: 37.4 mAP\n- INT8 (PTQ): 21.3 mAP", [("float", 37.4, False), ("quantized_bc", 21.3, False)]),
    ("| | float | int8 |\n|---|---|---|\n| top1 | 76.1 | 12.3 |\n| top5 | 92.9 | 30.2 |",
     [("float", 76.1, False), ("quantized_bc", 12.3, False)]),
    # ... not a precision said after another model's name (Axera's compiled model)
    ("| Metric | ONNX float32 | axmodel INT8 |\n|---|---|---|\n| mAP | 0.6027 | 0.4825 |", []),
    # a range is read as its middle
    ("float 模型 80%，量化后的模型 35%~40%", [("float", 80.0, True), ("quantized_bc", 37.5, True)]),
    ("the fp32 model reaches 80%, the quantized model only 35-40%", [("float", 80.0, True), ("quantized_bc", 37.5, True)]),
    ("float 0.42, int8 0.35-0.40", [("float", 0.42, False), ("quantized_bc", 0.375, False)]),
    # how much it fell is no score, where it fell to is
    ("float 模型 80%，量化后下降了 2%", [("float", 80.0, True)]),
    ("the float model gets 80%, on the board the accuracy drops by 0.1-0.2%", [("float", 80.0, True)]),
    ("float 模型 80%，量化后精度下降到 60%", [("float", 80.0, True), ("quantized_bc", 60.0, True)]),
    # a software's version stands between no model and its score; a percentage is no version
    ("Framework: TensorFlow 2.9, on CPU I get 86% accuracy, using the NCS2 it drops to 72%",
     [("host_cpu", 86.0, True), ("board", 72.0, True)]),
    ("PyTorch 80%, TensorRT 61%", [("torch_model", 80.0, True)]),
    # a label with a colon and a number below 1 are scores, not versions
    ("float: 0.647, onnx: 0.645", [("float", 0.647, False), ("onnx_model", 0.645, False)]),
    ("float onnx 0.645, the int8 engine 0.41", [("float", 0.645, False), ("hbm", 0.41, False)]),
    # a model named after the score and its measure with "in"; an engine built with a tool from a model
    ("our model is 47.1 mAP in FP32 PyTorch, but the INT8 engine built with trtexec from the QDQ ONNX only gets 41.8",
     [("torch_model", 47.1, False), ("hbm", 41.8, False)]),
    # a tool's version below 1 is no score ("ModelOpt 0.15"); a model's name before a number is ("onnx: 0.645")
    ("the QDQ ONNX (ModelOpt 0.15 INT8 PTQ) gives 0.452 mAP, the float ONNX 0.459",
     [("quantized_bc", 0.452, False), ("float", 0.459, False)]),
    # a model named in an aside explains the one before it, it takes no score after the aside
    ("qat.pt mAP 37.8，可是 qat.export.pt（qat.pt 走完导出前那步改写得到的）评出来就只剩 34.9",
     [("qat_pt", 37.8, False), ("qat_export_pt", 34.9, False)]),
    # a tool named in an aside that closed before the number has no version there
    ("qat.pt AP 0.812；qat.bc（hbdk4 推理）0.809；quantized.bc 0.741",
     [("qat_pt", 0.812, False), ("qat_bc", 0.809, False), ("quantized_bc", 0.741, False)]),
    # a model in parentheses with a number of its own takes that number, not the one before it
    ("quantized.bc 在 KITTI 子集 AbsRel 0.098（qat.bc 0.097）；hbm x86 仿真 AbsRel 0.163",
     [("quantized_bc", 0.098, False), ("qat_bc", 0.097, False), ("hbm_x86", 0.163, False)]),
    # an aside between a model and its score does not count against their distance
    ("qat.pt val mAP 35.1. hbm on the board through our own deployment app (nv12 camera input, insert_image_convert "
     "+ preprocess nodes), 1000 frames: 29.8.", [("qat_pt", 35.1, False), ("board", 29.8, False)]),
    # rows of an indented table: a row's second number is its own, not the next row's model's
    ("Results:\n  qat.pt           det mAP 0.472  lane F1 0.903\n  qat.bc           det mAP 0.470  lane F1 0.902\n"
     "  quantized.bc     det mAP 0.418  lane F1 0.899", [("qat_pt", 0.472, False), ("qat_bc", 0.47, False),
                                                        ("quantized_bc", 0.418, False)]),
    # Ascend's offline model on an Atlas device; AIMET's simulated quantized model
    ("Float ONNX: 0.774 top-1. After AMCT calibration and ATC, the .om on an Atlas 300I Pro gives 0.482",
     [("float", 0.774, False), ("board", 0.482, False)]),
    ("QuantSim accuracy 48 % vs FP32 71 %", [("qat_pt", 48.0, True), ("float", 71.0, True)]),
    # the QAT model named by its fake quantization, in a table
    ("| 模型 | top1 |\n|---|---|\n| float（torch）| 73.4 |\n| QAT fake-quant（torch）| 72.9 |\n| TRT int8 engine | 65.6 |",
     [("float", 73.4, False), ("qat_pt", 72.9, False), ("hbm", 65.6, False)]),
    # a list item's wrapped line goes on with its sentence; "the same image preprocessing" and
    # "一张 3090" speak of no single image; a digit in an aside is no score of its own
    ("- on val the quantized.bc model gives\n  0.31 mAP, while the float model gives 0.45",
     [("quantized_bc", 0.31, False), ("float", 0.45, False)]),
    ("With the same image preprocessing, the float onnx gets mAP 0.45 and the quantized onnx 0.12.",
     [("float", 0.45, False), ("quantized_bc", 0.12, False)]),
    ("在一张 3090 上训练，float mAP 0.452，quantized.bc 0.401", [("float", 0.452, False), ("quantized_bc", 0.401, False)]),
    ("I get 0.31 mAP on the board, compared with 0.52 (fp32 on x86)", [("board", 0.31, False), ("float", 0.52, False)]),
    # a column headed by an object class's measure
    ("| model | Car AP | Pedestrian AP |\n|---|---|---|\n| float | 78.5 | 60.1 |\n| quantized onnx | 70.2 | 50.3 |",
     [("float", 78.5, False), ("quantized_bc", 70.2, False)]),
    # hb_mapper's files named after the model
    ("- mbv3_original_float_model.onnx: top-1 74.6\n- mbv3_calibrated_model.onnx: top-1 61.9\n"
     "- mbv3_quantized_model.onnx: top-1 61.5", [("float", 74.6, False), ("qat_pt", 61.9, False),
                                               ("quantized_bc", 61.5, False)]),
    # MNN's and ncnn's model files named by their precision
    ("float mbv3.mnn: 74.3\nmbv3_quant.mnn: 51.2", [("float", 74.3, False), ("quantized_bc", 51.2, False)]),
    # a file's extension is no software whose version follows
    ("original_float_model.onnx top1 76.1，quantized_model.onnx 61.9",
     [("float", 76.1, False), ("quantized_bc", 61.9, False)]),
    # a long name counts from its end
    ("For the original fp32 model we have measured an accuracy of 80%, for the int8 quantized model we observed 35%",
     [("float", 80.0, True), ("quantized_bc", 35.0, True)]),
    # a row per model whose key's colon is written full-width: a row's second score is not the next row's
    ("nuScenes val：\nqat.pt：mAP 0.372 / NDS 0.468\nqat.bc：mAP 0.368 / NDS 0.465\nquantized.bc：mAP 0.331 / NDS 0.429",
     [("qat_pt", 0.372, False), ("qat_bc", 0.368, False), ("quantized_bc", 0.331, False)]),
    # in a QAT flow the model QAT trained is qat.pt, not the calibrated model before it
    ("float mAP 45.3，calibration 之后 44.6，QAT 训了 10 个 epoch 反而掉到 39.7",
     [("float", 45.3, False), ("qat_pt", 39.7, False)]),
    ("float 78.3, after calibration 74.9, after QAT training 70.2", [("float", 78.3, False), ("qat_pt", 70.2, False)]),
    # ... but not a training setting or a score hoped for
    ("after calibration top1 71.2, then QAT finetuning at lr 0.01 for 5 epochs", [("qat_pt", 71.2, False)]),
    ("calibration 之后 0.411，希望 qat 之后能到 0.45", [("qat_pt", 0.411, False)]),
    # a key ending in "error" still starts a line of its own (only a Python exception's line joins the one above)
    ("qat.pt mAP 0.452\nqat.bc mAP 0.450\nquantized.bc\nmax_error: 0.35", [("qat_pt", 0.452, False), ("qat_bc", 0.45, False)]),
    # a package's name that ends a model's name: a number from 10 up after it is the model's score
    ("COCO mAP:\nfake-quant torch           37.3\nQDQ ONNX (onnxruntime)     37.1",
     [("qat_pt", 37.3, False), ("quantized_bc", 37.1, False)]),
    # the threshold a measure is taken at is no score
    ("float mAP@0.5 0.62, the int8 model mAP@0.5 0.41", [("float", 0.62, False), ("quantized_bc", 0.41, False)]),
    ("float mAP@0.5:0.95 0.45, qat.bc mAP@.5 0.40", [("float", 0.45, False), ("qat_bc", 0.40, False)]),
    ("float 模型 mAP@0.50:0.95 是 0.372，int8 engine 的 mAP@0.50:0.95 只有 0.301", [("float", 0.372, False), ("hbm", 0.301, False)]),
    ("qat.bc mAP@[0.5:0.95] 0.372, quantized.bc mAP@[0.5:0.95] 0.301", [("qat_bc", 0.372, False), ("quantized_bc", 0.301, False)]),
    # keypoints' PCK is a measure: a table under it compares
    ("val 3200 张，PCK@0.05：\n| 模型 | PCK |\n|---|---|\n| float | 86.9 |\n| qat.pt | 86.1 |\n| qat.export.pt | 81.7 |",
     [("float", 86.9, False), ("qat_pt", 86.1, False), ("qat_export_pt", 81.7, False)]),
])
def test_a_score_belongs_to_the_model_named_before_it(text, expected):
    assert _read(text) == expected


@pytest.mark.parametrize("text, expected", [
    # two models named together, then their scores in the same order
    ("浮点模型和量化模型的精度分别是 76.1% 和 60.2%", [("float", 76.1, True), ("quantized_bc", 60.2, True)]),
    ("The float model and the quantized model get 76.1% and 60.2% respectively",
     [("float", 76.1, True), ("quantized_bc", 60.2, True)]),
    ("onnx 和 bin 的 mAP 分别为 0.62 和 0.41", [("onnx_model", 0.62, False), ("hbm", 0.41, False)]),
    # a zero is a score there: the pair says whose it is
    ("the mAP of the float model vs the quantized model: 36.0% vs 0.0%",
     [("float", 36.0, True), ("quantized_bc", 0.0, True)]),
    # one model, then two numbers: no pair ("从 41.2 掉到 36.0" is one model's fall, to 36.0)
    ("quantized.bc 在验证集上 mAP 从 41.2 掉到 36.0", [("quantized_bc", 36.0, False)]),
    # two models along the chain named together, then a fall from one score to another: from the first to the second
    ("qat.pt 和 pre_export 之后的 qat.export.pt 在 200 张验证图上跑，top1 从 78.4 掉到 74.9",
     [("qat_pt", 78.4, False), ("qat_export_pt", 74.9, False)]),
    ("the float and the int8 model: the accuracy drops from 76.1 to 60.2", [("float", 76.1, False), ("quantized_bc", 60.2, False)]),
    # a similarity's fall is no score's ("cos" between the models and the numbers)
    ("对 qat.pt 和 qat.export.pt 跑了 compare_per_layer，cos 在 attention 里 softmax 那层从 0.9998 掉到 0.951",
     [("qat_export_pt", 0.951, False)]),
    # "都 / both": the two fell alike, the first takes no score
    ("量化后的 onnx 和 rknn 模型精度都从 0.62 降到了 0.31", [("hbm", 0.31, False)]),
    ("The quantized onnx and the TensorRT engine both drop from 0.62 to 0.31", [("hbm", 0.31, False)]),
    # two models at one place may both have fallen: the first takes no score
    ("板端和 x86 仿真的 mAP 从 0.5 掉到 0.3", [("hbm_x86", 0.3, False)]),
    # three models in a row and three scores: in order; two scores for three models tell nothing
    ("qat.bc, quantized.bc and hbm get 76.1%, 70.2% and 60.2%",
     [("qat_bc", 76.1, True), ("quantized_bc", 70.2, True), ("hbm", 60.2, True)]),
    ("qat.pt / qat.export.pt / qat.bc = 62.3 / 62.1 / 55.0 mIoU (ADE val, 2000 imgs)",
     [("qat_pt", 62.3, False), ("qat_export_pt", 62.1, False), ("qat_bc", 55.0, False)]),
    ("qat.bc, quantized.bc and hbm get 76.1% and 70.2%", [("hbm", 76.1, True)]),
])
def test_two_models_named_together_take_their_scores_in_order(text, expected):
    assert _read(text) == expected


@pytest.mark.parametrize("text", [
    "float 和 int8 模型的输出误差从 0.012 涨到 0.35，板端检测框也偏了",   # an error's rise
    "the fp32 and the int8 model: the output MSE went from 0.012 to 0.35",
    "对 qat.pt 和 qat.export.pt 跑了 compare_per_layer，cos 在 softmax 那层从 0.9998 掉到 0.951",  # a similarity's fall
])
def test_a_fall_of_no_score_gives_the_first_of_two_models_nothing(text):
    assert all(mention not in ("float", "qat_pt") for mention, _, _ in _read(text))


def test_sizes_named_for_two_models_are_no_pair_of_scores():
    # (no reference score for the float model: no drop can be read from the sizes)
    assert "float" not in [mention for mention, _, _ in _read("浮点模型和量化模型的大小分别是 98.5 和 25.1")]


@pytest.mark.parametrize("text", [
    "[HBRT] set log level as 0. version = 3.15.54.0",   # a version is no score
    "the board runs at 30 FPS, the PC at 220 FPS",       # integers without a percent sign are no scores
    "the board | -1.00 |",                               # nor is a number below zero
    "mAP 0.647 and then on the board",                   # a score before any model belongs to none
    "the board runs hbrt 3.15.54.0.",                    # a version stays one before a full stop
    "the board bin is 2.3 MiB, 12.5 ms per frame",       # a size and a time are no scores
    "板端角点相对浮点的欧氏误差约为 1.728",                  # nor is a number named an error
    "The board runs OE 3.1.",                            # nor a version before a full stop
    "on the board a 6.65% drop in accuracy",             # nor a percentage that measures a fall
    "on the board a 1-2 % drop is expected",             # ... written as a range
    "板端 5%下降",
    "Framework: TensorFlow 2.9",                         # nor a software's version
    "the onnx model with CUDA 11.8 and the quantized onnx 1.14",  # a package's version after a model's name too
    "the pytorch model, torch==1.13 on the board",
    "板端的 OM 模型比 PyTorch fp16 还慢 12%",              # nor how much slower or faster it runs
    "the board model runs faster by 35%",
    "TensorRT INT8 engine from the QDQ ONNX loses 15% top-1",  # nor how much it lost
    "Calibration: 300 images, tried default / max / kl",      # a count after a label is no score
    "ONNX : person 0.88, bus 0.91",                           # a detection's confidence is no score
    "同一张图片，onnx 置信度 0.98，量化后只有 0.025",
    # a number told of one image is no model's score on a dataset
    "I have a picture that the inference score of onnx model is 0.98, but the score of the IR model is only 0.025",
])
def test_what_is_no_score(text):
    assert _read(text) == []


@pytest.mark.parametrize("text, expected", [
    # a whole number is a score after its measure, or as where a score fell to
    ("量化之后掉点严重，浮点模型mAP 45，量化后只有 20", [("float", 45.0, False), ("quantized_bc", 20.0, False)]),
    ("the float model has mAP 45, the quantized model drops to 20", [("float", 45.0, False), ("quantized_bc", 20.0, False)]),
    # ... not a count
    ("浮点模型精度为75，量化后只有20张图片能检测出来", [("float", 75.0, False)]),
    ("float mAP 45, quantized model for 20 epochs", [("float", 45.0, False)]),
    # ... at the end of a sentence too
    ("float 45.2. On board mAP 35.", [("float", 45.2, False), ("board", 35.0, False)]),
])
def test_a_whole_number_is_a_score_where_it_is_said_to_be_one(text, expected):
    assert _read(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("The int8 model's mAP is 0.21, compared with 0.56 for the fp32 model",
     [("quantized_bc", 0.21, False), ("float", 0.56, False)]),
    ("We get 76.1% for the float model and 60.3% for the quantized model",
     [("float", 76.1, True), ("quantized_bc", 60.3, True)]),
    ("mAP from 0.65 (fp32) to 0.30 (int8)", [("float", 0.65, False), ("quantized_bc", 0.3, False)]),
    # ... or with "with" / "using"
    ("I get mAP 0.52 with the fp32 model and 0.12 with the int8 model",
     [("float", 0.52, False), ("quantized_bc", 0.12, False)]),
    ("top-1 is 71.3% using the float model, 52.0% using the int8 model",
     [("float", 71.3, True), ("quantized_bc", 52.0, True)]),
    # a model named right after a score (its measure between) owns it where none before does
    ("I get 0.31 mAP on the board, compared with 0.52 for the float model",
     [("board", 0.31, False), ("float", 0.52, False)]),
    ("float 0.65 on the board 0.41", [("float", 0.65, False), ("board", 0.41, False)]),
    ("mAP 0.647 on the board", [("board", 0.647, False)]),
])
def test_a_score_followed_by_for_the_model_is_that_models(text, expected):
    assert _read(text) == expected


@pytest.mark.parametrize("symptom", [
    "the quantized model has a mAP of 0.31 while the float model has 0.52",
    "The int8 model's mAP is 0.21, compared with 0.56 for the fp32 model",
])
def test_the_float_models_score_is_the_reference_wherever_it_is_written(diagnose, symptom):
    run = diagnose({"flow": "ptq", "symptom": symptom}).run
    assert [f["mention"] for f in run.facts if f.type == "score_reference"] == ["float"]
    assert [(f["mention"], f["within"]) for f in run.facts if f.type == "score_drop"] == [("quantized_bc", False)]
    assert diagnose({"flow": "ptq", "symptom": symptom}).verdict_json["stage"] == "convert"


@pytest.mark.parametrize("text", [
    "The quantized model top1 is 75.9%, which is 99.9% of the float model",
    "量化模型 top1 75.9%，是浮点模型的 99.9%",
])
def test_a_share_of_a_models_score_is_no_score_of_it(text):
    assert _read(text) == [("quantized_bc", 75.9, True)]


@pytest.mark.parametrize("symptom, pairs", [
    # each model against the nearest scored model upstream of it on the chain
    ("hbm 上板精度 0.30，quantized.bc 0.447，qat.bc 0.449，浮点 0.452",
     [("board", "quantized_bc", False), ("quantized_bc", "qat_bc", True), ("qat_bc", "float", True)]),
    # a name with no place on the chain ("onnx") against the reference, the first score without a float one
    ("Accuracy for the resnet50.onnx model is above 70% but after quantizing it, accuracy becomes 0.10%",
     [("quantized_bc", "onnx_model", False)]),
])
def test_each_score_is_measured_against_the_nearest_one_upstream(diagnose, symptom, pairs):
    run = diagnose({"flow": "ptq", "symptom": symptom}).run
    assert sorted((f["mention"], f["reference"], f["within"]) for f in run.facts if f.type == "score_drop") == sorted(pairs)


def test_a_model_keeps_its_first_score_and_a_score_needs_its_model_close_by():
    assert _read("on the board 71.2%, later on the board 40%") == [("board", 71.2, True)]
    far = "on the board" + " and then we waited for a very long while before we measured it" * 2 + " 71.2%"
    assert _read(far) == []


def test_a_score_stays_in_its_sentence():
    assert _read("the float model is fine.\n\n71.2% after that") == []


@pytest.mark.parametrize("symptom, stage", [
    ("float: mAP 0.647, quantized_model.onnx: mAP 0.61", "convert"),        # beyond 1 %: the quantized model lost it
    ("float: mAP 0.647, quantized_model.onnx: mAP 0.645, on the board mAP 0.41", "compile"),  # within 1 %: normal
])
def test_scores_become_results_through_the_rules(diagnose, symptom, stage):
    verdict = diagnose({"flow": "ptq", "symptom": symptom}).verdict_json
    assert verdict["stage"] == stage
    assert any(f["type"] in ("score_reference", "score_drop") for f in verdict["trace"])


@pytest.mark.parametrize("symptom, stage", [
    # told in an error that rises as the model gets worse: qat.bc lost it
    ("sintel val EPE：qat.pt 1.82，qat.export.pt 1.83，qat.bc（hbir 推理）2.61", "export"),
    ("quantized.bc AbsRel 0.098 (qat.bc 0.097), hbm on the x86 simulator AbsRel 0.163, board 0.161", "compile"),
    # the same numbers told as a score that rises: qat.bc is the best of them
    ("val mAP：qat.pt 1.82，qat.export.pt 1.83，qat.bc 2.61", "undetermined"),
])
def test_scores_told_in_an_error_get_worse_as_they_rise(diagnose, symptom, stage):
    assert diagnose({"symptom": symptom}).verdict_json["stage"] == stage


@pytest.mark.parametrize("text, lower", [
    ("EPE：qat.pt 1.82，qat.bc 2.61", True),
    ("depth AbsRel 0.112 float, 0.187 calibrated", True),
    ("float PPL 14.02, the hbm on the board 17.92", True),
    ("EPE 和 mAP：qat.pt 1.82 / 0.41，qat.bc 2.61 / 0.40", False),   # a rising score told beside it
    ("qat.pt mAP 0.41，qat.bc 0.40", False),
    ("训练时 EPE 很低。qat.pt mAP 0.41，qat.bc 0.40", False),          # the error is in no score's sentence
])
def test_which_texts_tell_their_scores_in_an_error(text, lower):
    from j6doctor.probes.said_scores import lower_is_better

    assert lower_is_better(text) is lower


def test_the_case_tolerance_decides_what_is_within(diagnose):
    loose = diagnose({"flow": "ptq", "symptom": "float: mAP 0.647, quantized_model.onnx: mAP 0.61",
                      "metrics": {"tolerance": 0.1}}).verdict_json
    assert loose["stage"] != "convert"
    drops = [f["fields"] for f in loose["trace"] if f["type"] == "score_drop"]
    assert drops and drops[0]["within"] is True


HEADED_TABLES = """\
验证 float、校准模型、量化模型的指标：

float onnx:
| liquid stain | 0.617 | 0.825 |
| milk stain   | 0.656 | 0.809 |
calibrated_model.onnx:
| liquid stain | 0.583 | 0.817 |
| milk stain   | 0.63  | 0.812 |
## quantized_model.onnx
| liquid stain | 0.58  | 0.823 |
| milk stain   | 0.622 | 0.815 |
"""


def test_a_model_named_alone_above_a_table_gets_the_tables_mean():
    read = [(mention, round(value, 4), percent) for mention, value, percent in _read(HEADED_TABLES)]
    assert read == [("float", 0.7268, False), ("qat_pt", 0.7105, False), ("quantized_bc", 0.71, False)]


@pytest.mark.parametrize("text", [
    # one table only: nothing to compare its mean with
    "float onnx:\n| liquid stain | 0.617 | 0.825 |\n| milk stain | 0.656 | 0.809 |\n",
    # tables of different shapes (another metric set each): their means do not compare
    "float onnx:\n| a | 0.617 | 0.825 |\nquantized_model.onnx:\n| a | 0.58 |\n",
    # a line that says more than the model's name is no heading
    "we compared the float onnx with care:\n| a | 0.617 |\nquantized_model.onnx and more words:\n| a | 0.58 |\n",
])
def test_tables_that_do_not_compare_give_no_score(text):
    assert _read(text) == []


PIPE_BY_COLUMN = """After quantization, there is a high decrease in accuracy of the model:

|Accuracy|Frozen Graph     |Quantized Graph    |
|--------|-----------------|-------------------|
|Top1    |0.642000013589859|0.01399999968707561|
|Top5    |0.851999986171723|0.06199999935925007|
"""

PIPE_BY_ROW = """| model | mAP | FPS |
| --- | :---: | --- |
| float onnx | 0.647 | 12 |
| quantized onnx | 0.31 | 30 |
| bin on the board | 0.30 | 95 |
"""


def test_a_pipe_table_with_models_in_its_header_gives_each_its_cell_of_the_first_row():
    assert _read(PIPE_BY_COLUMN) == [("float", 0.642000013589859, False), ("quantized_bc", 0.01399999968707561, False)]
    assert scores(PIPE_BY_COLUMN)[1].quote == "Quantized Graph | Top1 | 0.01399999968707561"


def test_a_pipe_table_with_models_in_its_first_column_gives_each_the_first_score_of_its_row():
    assert _read(PIPE_BY_ROW) == [("float", 0.647, False), ("quantized_bc", 0.31, False), ("board", 0.30, False)]


def test_a_row_names_the_model_outside_its_aside():
    table = ("| runtime | top-1 |\n| fp32 onnx, onnxruntime | 76.3 |\n| QDQ onnx, onnxruntime | 75.9 |\n"
             "| int8 engine (trtexec --int8 from QDQ onnx) | 61.2 |\n")
    assert _read(table) == [("float", 76.3, False), ("quantized_bc", 75.9, False), ("hbm", 61.2, False)]


@pytest.mark.parametrize("text", [
    # one model only, or no rule under the header: no table of models
    "| model | mAP |\n| --- | --- |\n| float onnx | 0.647 |\n",
    "| float onnx | quantized onnx |\n| 0.647 | 0.31 |\n",
    # the models' cells hold no number in any row
    "| | float onnx | quantized onnx |\n|---|---|---|\n| note | fine | bad |\n",
])
def test_a_pipe_table_without_two_models_and_their_numbers_gives_no_score(text):
    assert scores(text) == []


@pytest.mark.parametrize("symptom, stage", [
    (PIPE_BY_ROW, "convert"),
    ("I quantized the frozen graph with decent_q.\n" + PIPE_BY_COLUMN, "convert"),
])
def test_pipe_table_scores_become_results(diagnose, symptom, stage):
    assert diagnose({"symptom": symptom}).verdict.stage == stage


@pytest.mark.parametrize("text, expected", [
    # the row or column a score comes from is labelled with a measure, never a size, a time, a loss
    ("| | float | quantized.bc |\n|---|---|---|\n|模型大小(MB)|98.2|25.1|\n|mAP|40.0|39.8|",
     [("float", 40.0, False), ("quantized_bc", 39.8, False)]),
    ("| | float | quantized.bc | hbm |\n|---|---|---|---|\n|耗时(s)|12.5|30.1|2.3|\n|mAP|40.1|39.9|39.8|",
     [("float", 40.1, False), ("quantized_bc", 39.9, False), ("hbm", 39.8, False)]),
    ("| model | size (MB) | loss | mAP |\n|---|---|---|---|\n| float onnx | 98.1 | 0.1 | 40.2 |\n"
     "| quantized onnx | 25.3 | 0.9 | 12.0 |", [("float", 40.2, False), ("quantized_bc", 12.0, False)]),
    # a measure row without a score under every model is passed over; AP is a measure
    ("| | float onnx | hbm |\n|---|---|---|\n| 检测结果 | 正常 | 没有框 |\n| mAP | 40.5 | 3.2 |",
     [("float", 40.5, False), ("hbm", 3.2, False)]),
    ("| model | AP | AP50 |\n|---|---|---|\n| float onnx | 37.2 | 55.0 |\n| quantized onnx | 20.1 | 30.0 |",
     [("float", 37.2, False), ("quantized_bc", 20.1, False)]),
    ("| model | result | mAP |\n|---|---|---|\n| float onnx | ok | 40.1 |\n| quantized onnx | bad | 12.0 |",
     [("float", 40.1, False), ("quantized_bc", 12.0, False)]),
    # a model that scores nothing: a bare zero under the measure ("| 0 |"), named as onnx2tf names it
    ("| Model | size | mAP 0.5:0.95 |\n| --- | :---: | :---: |\n| YOLOX-nano ONNX | 416 | 0.256 |\n"
     "| YOLOX-nano TFLite full_integer_quant | 416 | 0 |", [("onnx_model", 0.256, False), ("quantized_bc", 0.0, False)]),
    # ... but never the first score, the one the others are compared with
    ("| model | mAP |\n|---|---|\n| quantized onnx | 0 |\n| float onnx | 40.2 |", []),
    # ... but a bare integer that is not zero is no score (a count)
    ("| model | mAP |\n|---|---|\n| float onnx | 40.2 |\n| quantized onnx | 12 |", []),
    # no measure anywhere: epochs, versions, a per-layer log
    ("| model | epoch 10 | epoch 50 |\n|---|---|---|\n| qat.pt | 10.1 | 39.8 |\n| float | 40.0 | 40.0 |", []),
    ("| model | version |\n|---|---|\n| float onnx | 1.1 |\n| quantized onnx | 3.5 |", []),
    ("| layer | cosine | float | quantized.bc |\n|---|---|---|---|\n| conv1 | 0.99 | 1.5 | 1.25 |\n", []),
])
def test_pipe_table_scores_come_from_a_row_or_column_labelled_with_a_measure(text, expected):
    assert _read(text) == expected


# Tables aligned with spaces, as people paste them from a terminal or a spreadsheet
ALIGNED_PER_CLASS = """2D检测 7类，自己的数据 val 3000 张 AP50(%)：

类别        float   calib   qat(ep12)
car         88.1    86.0    86.9
truck       71.4    66.2    68.0
mean        72.6    66.9    68.7
"""

ALIGNED_NO_LABEL_OVER_ROWS = """nuScenes val:
              float    qat.bc    quantized.bc
mAP           0.412    0.405     0.351
NDS           0.503    0.497     0.442
"""


@pytest.mark.parametrize("text, expected", [
    # per-class rows and a mean: the mean is the model's; a model over two columns (calibrated, then
    # QAT-trained) is the later column's; a header's short names ("calib", "qat(ep12)") name models
    (ALIGNED_PER_CLASS, [("float", 72.6, False), ("qat_pt", 68.7, False)]),
    # a header one cell short (nothing over the labels): the first row labelled with a measure
    (ALIGNED_NO_LABEL_OVER_ROWS, [("float", 0.412, False), ("qat_bc", 0.405, False), ("quantized_bc", 0.351, False)]),
    # tab-separated
    ("\tfloat onnx\tquantized onnx\nTop-1\t76.1\t70.2\nTop-5\t92.9\t89.0\n",
     [("float", 76.1, False), ("quantized_bc", 70.2, False)]),
    # one model per line, two scores each: each line is the model's own sentence (the second score of a
    # row is not the next row's)
    ("mAP / NDS：\nqat.pt          0.5213 / 0.6122\nqat.export.pt   0.5209 / 0.6119\nqat.bc          0.4688 / 0.5741\n",
     [("qat_pt", 0.5213, False), ("qat_export_pt", 0.5209, False), ("qat_bc", 0.4688, False)]),
    # ... each score after its measure's name
    ("nuscenes mini-val:\nqat.pt          NDS 0.412  mAP 0.318\nqat.export.pt   NDS 0.410  mAP 0.317\n"
     "qat.bc          NDS 0.371  mAP 0.279\n", [("qat_pt", 0.412, False), ("qat_export_pt", 0.41, False), ("qat_bc", 0.371, False)]),
])
def test_tables_aligned_with_spaces_give_scores_as_pipe_tables_do(text, expected):
    assert _read(text) == expected


@pytest.mark.parametrize("text", [
    # rows of numbers without two models named over them
    "epoch   loss    lr\n1       0.93    0.01\n2       0.71    0.01\n3       0.66    0.001\n",
    # short names in prose are no models ("calib 数据", "qat 训练")
    "calib 数据 100 张，qat 训练 12 个 epoch，loss 0.42",
])
def test_aligned_text_without_models_over_its_columns_gives_no_score(text):
    assert _read(text) == []


@pytest.mark.parametrize("text, expected", [
    # a change told with an arrow after a model: where it led is the model's score
    ("quantized.bc 的 mAP 41.2 -> 36.0，qat.bc 41.0", [("quantized_bc", 36.0, False), ("qat_bc", 41.0, False)]),
    ("pre_export 之后 ADE 1.02 → 1.31，qat.bc 也是 1.31", [("qat_export_pt", 1.31, False), ("qat_bc", 1.31, False)]),
    # ... not a score that is a version ("hbdk4 4.4.2 -> 4.5.0")
    ("升级 hbdk4 4.4.2 -> 4.5.0 之后 quantized.bc mAP 0.41", [("quantized_bc", 0.41, False)]),
])
def test_an_arrow_after_a_model_gives_it_the_score_it_led_to(text, expected):
    assert _read(text) == expected


def test_an_arrow_after_the_model_compared_with_leads_from_it():
    text = "qat.export.pt already loses ~3 mAP vs qat.pt (41.0 -> 38.2 on our 3k val), qat.bc same as export.pt (38.1)"
    assert ("qat_pt", 41.0, False) in _read(text) and ("qat_pt", 38.2, False) not in _read(text)


@pytest.mark.parametrize("text, expected", [
    # a change from the float or the QAT model leads to another model; a step named after it too
    ("float mAP 41.2 -> 36.0 after PTQ, the board gives 35.8",
     [("float", 41.2, False), ("quantized_bc", 36.0, False), ("board", 35.8, False)]),
    ("qat.pt mAP 0.412 -> 0.318 after export, qat.bc 0.317", [("qat_pt", 0.412, False), ("qat_bc", 0.317, False)]),
])
def test_an_arrow_after_a_starting_model_leads_from_it(text, expected):
    assert _read(text) == expected


def test_numbers_listed_after_a_similarity_are_similarities_too():
    text = ("ptq_model.onnx 和 quantized_model.bc 用 hb_verifier 比了 3 张图，输出 cos 0.9997 / 0.9995 / 0.9998\n"
            "hbm 和 quantized_model.bc 用 hb_verifier 比（x86）：cos 0.77 / 0.74 / 0.80")
    assert _read(text) == []


def test_a_model_and_a_place_do_not_merge_across_a_line_break():
    from j6doctor.engine.text_reader import read
    from j6doctor.facts import vocabulary

    reading = read("the quantized model 0.55 compared to onnx\nBoard program 0.38", vocabulary().text.index)
    assert [str(t[3]) for t in reading.tags if t[2] == "mention"] == ["quantized_bc", "onnx_model", "board"]


def test_a_model_and_where_it_ran_merge_across_an_aside():
    text = "FP32 onnx on PC: top1 71.3\nAIMET QuantizationSimModel (8/8, tf_enhanced, 500 calib images) on PC: 54.1"
    assert _read(text) == [("float", 71.3, False), ("qat_pt", 54.1, False)]


def test_an_aside_holding_a_score_keeps_the_model_apart_from_the_next_place():
    assert _read("quantized.bc (76.1%) 板端 60.2%") == [("quantized_bc", 76.1, True), ("board", 60.2, True)]


def test_two_spaces_after_a_sentences_end_do_not_make_a_table_row():
    text = "We evaluated quantized.bc on PC and it gets\n0.47 mAP.  The hbm on the board gets only 0.31\nwith our own app."
    assert _read(text) == [("quantized_bc", 0.47, False), ("board", 0.31, False)]
