"""One-sentence reports in the shapes users most often write them, read end to end (bundled
rules, real engine): the symptom alone, and the stage an expert names from it.

Each row is a general shape (a score called too low, a bit width beside the float model, the
float model's score written after the quantized one, a fix that makes the board right ...),
written for this test with invented numbers; what a row does not say stays open.
"""

from __future__ import annotations

import pytest

SENTENCES = [
    # a quantized model said wrong where the report goes no further than quantizing: the float
    # model it was quantized from is the reference (a lone score called low is judged against hopes)
    ("使用量化工具进行离线量化，量化后的模型输出结果全部异常", "convert", {"quantized_bc": "abnormal"}),
    ("I quantized my detector with the quantization tool; the quantized model detects nothing", "convert",
     {"quantized_bc": "abnormal"}),
    # the model left unquantized is wrong on the device too, the float model good: the device build
    ("even the fp16 model gives wrong results on the NPU, while the onnx model works on the PC", "compile", {}),
    ("int8 的 rknn 模型在板端输出全错，不量化的 rknn 模型在板端也一样不对，onnx 模型是对的", "compile", {}),
    ("int8模型在板端不对，fp16模型在板端也不对，float模型是对的", "compile", {"board": "abnormal"}),
    ("把do_quantization设为False重新转rknn，板端输出还是不对；onnx在PC上推理正常", "compile", {"board": "abnormal"}),
    # ... with the float model never checked, the reference comes first
    ("板端结果不对。fp16 模式下也不对", "baseline", {}),
    # "skewed" results are bad ones; TFLite's representative dataset is calibration data (PTQ)
    ("The fp32 model is fine, the int8 model results are skewed", "convert", {"quantized_bc": "abnormal"}),
    ("I quantized it with a representative dataset. The int8 model results are skewed.", "convert",
     {"quantized_bc": "abnormal"}),
    # a loss denied with an adjective between is still denied
    ("After int8 quantization there was no significant accuracy loss", "undetermined", {"quantized_bc": "normal"}),
    # a score below a hundredth is a broken model; the quantized model's run on the host CPU is its result
    ("I quantized Resnet50 with quantize_static. Resnet50 performances bad with S8S8 and per-channel with CPU on "
     "x64, it got 0.0003 top-1 acc", "convert", {}),
    # the device named by the ABI the runtime was built for
    ("量化后结果正常，但是int8模型在armeabi-v7a上结果错误", "compile", {"board": "abnormal"}),
    # bad results in everyday words
    # the tool of one part is not the tool of the next ("x86 上用 hb_model_verifier 跑 … ，板端 …")
    ("x86 上用 hb_model_verifier 跑 bin 结果正确，板端结果错误", "board", {"hbm_x86": "normal", "board": "abnormal"}),
    # "是好的" is a good result (a bare "好的" is an OK)
    ("转成 int8 之后检测效果变差很多，fp32 是好的", "convert", {"quantized_bc": "abnormal"}),
    # NaN said after the model's own name; a zero accuracy "with" which the model is made
    ("The INT8 TensorRT engine outputs are all NaN, the FP16 engine works", "convert", {}),
    ("quantize_static produces a model with 0% accuracy", "convert", {}),
    # the PC named after a model's result is where it ran, not the float model
    ("the quantized model detects nothing on the PC", "convert", {"quantized_bc": "abnormal"}),
    # a drop told first, its model after it
    ("accuracy dropped from 90% to 60% after quantization", "convert", {"quantized_bc": "abnormal"}),
    ("the mAP fell from 0.45 to 0.12 on the board", "baseline", {"board": "abnormal"}),
    # a good result denied for another place is that place's bad result
    ("the int8 model works on the PC but not on the board", "compile", {"board": "abnormal"}),
    ("it works on x86 but not on the device", "board", {"hbm_x86": "normal", "board": "abnormal"}),
    # boxes out of place are a bad result
    ("模型在x86仿真正常，上板后检测框错位", "board", {"hbm_x86": "normal", "board": "abnormal"}),
    ("int8量化后识别率特别差，几乎什么都认不出来", "convert", {"quantized_bc": "abnormal"}),
    ("量化之后模型输出跟没训练过一样，全是随机的", "convert", {"quantized_bc": "abnormal"}),
    ("量化后的模型输出不包含任何检测框", "convert", {"quantized_bc": "abnormal"}),
    # a device not yet used puts none in the picture; an export not yet done leaves the QAT model alone
    ("还没部署，量化后的模型在PC上推理结果就不对了", "convert", {"quantized_bc": "abnormal"}),
    ("I trained with QAT (haven't exported it yet), the results are bad", "qat_training", {"qat_pt": "abnormal"}),
    ("我用QAT训练，数据预处理里做了颜色空间转换，结果很差", "qat_training", {"qat_pt": "abnormal"}),
    ("训练感知量化后模型精度下降了很多", "qat_training", {"qat_pt": "abnormal"}),
    # one output whatever the input is a broken model
    ("使用MNN的离线量化工具进行PTQ之后，模型任何输入的输出都是固定值", "convert", {"quantized_bc": "abnormal"}),
    # ... an unplaced one too, where no model's result is said at all; not where the device is an XPU
    ("Now the model can be quantized with ipex, but the generation results become very poor", "convert",
     {"quantized_bc": "abnormal"}),
    # a QAT report that goes no further than training: an unplaced bad result is the QAT model's
    ("I use a QAT quantizer on my mobilenet v2. The accuracy of the model is low, a 30% reduction compared to "
     "the original model", "qat_training", {"qat_pt": "abnormal"}),
    # the QAT model early in its training
    ("量化训练刚开始前面几轮精度很低，不到10%", "qat_training", {"qat_pt": "abnormal"}),
    # a score called too low after a comma is no good score
    ("量化后的模型准确率为76.7%，太低了", "undetermined", {"quantized_bc": "abnormal"}),
    ("the int8 model's accuracy is 76.7%, which is too low", "undetermined", {"quantized_bc": "abnormal"}),
    ("float accuracy is 90%, the quantized model's is too low", "convert", {"quantized_bc": "abnormal"}),
    # a bit width named beside the float model it is compared with, in either order
    ("int8 vs fp32 cosine 只有0.11", "convert", {"quantized_bc": "abnormal"}),
    ("fp32与int8的cosine只有0.11", "convert", {"quantized_bc": "abnormal"}),
    ("the fp32 and int8 outputs differ a lot", "convert", {"quantized_bc": "abnormal"}),
    ("the int8 model output has cosine similarity of only 0.6 with the fp32 output", "convert",
     {"quantized_bc": "abnormal"}),
    # the float model's score is the reference wherever it is written
    ("the quantized model has a mAP of 0.31 while the float model has 0.52", "convert", {"quantized_bc": "abnormal"}),
    ("The int8 model's mAP is 0.21, compared with 0.56 for the fp32 model", "convert", {"quantized_bc": "abnormal"}),
    # whole numbers as scores, the model named after its drop
    ("量化之后掉点严重，浮点模型mAP 45，量化后只有 20", "convert", {"quantized_bc": "abnormal"}),
    ("mAP drops from 45 to 20 after PTQ", "convert", {"quantized_bc": "abnormal"}),
    ("PTQ后 top1 从 76.1% 降到 60.3%", "convert", {"quantized_bc": "abnormal"}),
    # a precision variant named by "with"
    ("The same model converted with fp16 works fine, with int8 the output is wrong", "convert",
     {"quantized_bc": "abnormal"}),
    # the calibration model by its English name
    ("calibration模型精度正常，但是转成定点模型后精度掉了", "convert", {"quantized_bc": "abnormal"}),
    # bad results in everyday words
    ("The ONNX model works fine, but after converting to .bin and running on the RDK X5 the boxes are all "
     "over the place", "baseline", {"board": "abnormal"}),
    ("on the board nothing is detected", "baseline", {"board": "abnormal"}),
    ("板端输出全是nan", "baseline", {"board": "abnormal"}),
    ("quantized.onnx 在验证集上精度和 float 差不多，但是上板后精度只有一半", "compile", {"board": "abnormal"}),
    # where it ran is no agreement ("on the same board"); a program that works is a control
    ("The Python demo on the board gives correct boxes, but my C++ app on the same board gives wrong boxes",
     "board", {}),
    ("The outputs of quantized.bc and the hbm on the same batch of data do not match; quantized.bc's accuracy "
     "is normal", "compile", {"quantized_bc": "normal"}),
    ("The C++ app gives wrong boxes on the board, while the python script gives the right ones with the same hbm",
     "board", {}),
    ("python demo on the board works perfectly, but our C++ application running the same hbm outputs garbage boxes",
     "board", {}),
    ("On the board nothing is detected, the simulator detects all objects", "compile", {"board": "abnormal"}),
    ("The QAT model is already 8 points below the float model", "qat_training", {"qat_pt": "abnormal"}),
    ("同一个模型，python连板推理没问题，使用RKNPU c++板端部署，结果完全对不上，这是为啥阿？", "board", {}),
    # the same deployed model on the PC is its host run, not the float model
    ("同样的ncnn模型，在pc上结果正常，移动端掉点太多", "board", {"hbm_x86": "normal", "board": "abnormal"}),
    # a model QAT-trained, its metrics zero; the training run itself is no result
    ("基于上述训练模型作量化训练，使用相同数据集，训练过程正常但评估指标全为0", "qat_training", {"qat_pt": "abnormal"}),
    ("fp16测试正常，但是量化成int8后没有预测框", "convert", {"quantized_bc": "abnormal"}),
    # the simulation said to agree with an earlier model is the reference the board fails against
    ("hbm在x86上仿真结果和quantized.bc一致，上板后结果不对", "board", {"hbm_x86": "normal", "board": "abnormal"}),
    ("The hbm gives the same result as quantized.bc in x86 simulation, but on the board the results are wrong",
     "board", {"hbm_x86": "normal", "board": "abnormal"}),
    ("hb_verifier 显示 quantized.bc 和 x86 仿真一致，板端精度很差", "board", {"hbm_x86": "normal"}),
    # ... but not when the pair is said to be wrong too
    ("x86 仿真和 quantized.bc 一致，但是都不对，板端也不对", "undetermined", {"board": "abnormal"}),
    # a result in the next sentence is the model's named just before
    ("I quantized my model with PTQ. Its accuracy dropped from 76% to 40%.", "convert", {"quantized_bc": "abnormal"}),
    ("我用PTQ量化了模型。它的精度从76%掉到了40%。", "convert", {"quantized_bc": "abnormal"}),
    ("I trained the model with QAT for 20 epochs. The validation mAP never goes above 0.05.", "qat_training", {}),
    ("I deployed the model to the RDK X5. The detections are all wrong.", "baseline", {"board": "abnormal"}),
    ("After quantization I evaluated the model on COCO val. The mAP is only 0.12, while the float model gets 0.45",
     "convert", {"quantized_bc": "abnormal"}),
    # a report that names only the quantization step: an unplaced drop is the quantized model's
    ("I am using NNCF to quantize the model. When I tested the mAP, I found that the mAP has decreased by 10%",
     "convert", {"quantized_bc": "abnormal"}),
    ("用 PPQ 做了 int8 量化，测试集上精度下降了 20 个点", "convert", {"quantized_bc": "abnormal"}),
    # ... not when it names a device too: the drop is the device's
    ("I quantized the model and ran it on the NPU. When I tested the mAP, it has decreased by 10%", "baseline",
     {"board": "abnormal"}),
    # "lower than normal" is a bad result, its "normal" none
    ("The quantized model's accuracy on ImageNet is much lower than normal; the float model is fine",
     "convert", {"quantized_bc": "abnormal"}),
    ("量化模型在验证集上的精度比预期低很多，浮点模型正常", "convert", {"quantized_bc": "abnormal"}),
    # a drop just past the tolerance beside one ten times larger is the ordinary loss of quantization
    ("I trained with QAT on J6M. The QAT model reaches 0.71 mAP. After export and convert, the quantized.bc gives "
     "0.70. But the hbm on the board only gives 0.55.", "compile", {"quantized_bc": "normal", "board": "abnormal"}),
    # the vendor's x86 verifier run on the PC is the compiled model's simulation, not the float model
    ("模型在PC上用hb_model_verifier测试没问题，板子上用hrt_model_exec跑出来的输出和PC上不一致。", "board", {}),
    # an amount of falling in plain words: "decreases by almost 20 percent"
    ("I quantize the model with static post training quantization. However, after quantization the accuracy "
     "decreases by almost 20 percent.", "convert", {"quantized_bc": "abnormal"}),
    # an issue template's example is no report
    ("- 标题：简洁、精准描述您的问题，例如“ssd 模型转换报错”", "undetermined", {}),
    # what the application converts to and then feeds is its practice
    ("板端C++程序里把NV12转成了RGB再送进模型，但是模型的input_type_rt是nv12", "user_side", {}),
    # the training's colour against the board's, and the fix that made it right
    ("板端输入用的是BGR，训练时用的是RGB，改成RGB之后结果正常了", "user_side", {}),
    # one picture is no confirmation
    ("On a single image the board output differs slightly from the PC output", "undetermined", {}),
    ("I ran the bin in the x86 simulator and it was fine. On the board, however, the boxes are shifted.", "board", {}),
    ("During QAT the validation mAP never goes above 0.05", "qat_training", {}),
    # a QAT run stuck low is the training's
    ("During QAT training the validation accuracy stays at 10%", "qat_training", {}),
    # boxes over the whole picture are a bad result
    ("The fp32 model works fine, but after int8 quantization the boxes fill the screen.", "convert",
     {"quantized_bc": "abnormal"}),
    ("fp32模型结果正常，int8量化后满屏幕都是框。", "convert", {"quantized_bc": "abnormal"}),
    # the models named by a bit width, by "one" and by the step that made them
    ("FP32 results are correct, but the INT8 results are completely wrong.", "convert", {"quantized_bc": "abnormal"}),
    ("The float model gets 76.1% top-1, the quantized one gets 0.1%.", "convert", {"quantized_bc": "abnormal"}),
    ("The PTQ model loses 8 points compared to the FP32 baseline.", "convert", {"quantized_bc": "abnormal"}),
    ("INT8 PTQ gives 0.1 mAP while FP32 gives 0.5 mAP.", "convert", {"quantized_bc": "abnormal"}),
    # a float and an int8 run set against each other name the quantization
    ("The program can run successfully in FP32 and FP16, but wrong in int8.", "convert", {"quantized_bc": "abnormal"}),
    # the step said to reduce the accuracy
    ("Post-training quantization reduces the accuracy from 78% to 40%.", "convert", {"quantized_bc": "abnormal"}),
    # the build for the device named as the model
    ("The int8 onnx works fine in onnxruntime, but the model compiled for the NPU gives garbage.", "compile",
     {"board": "abnormal"}),
    # a step forgotten in the application is the user's side
    ("The board results were wrong because I forgot to normalize the input in my C++ code; after fixing it "
     "everything matches.", "user_side", {}),
    ("板端结果不对，后来发现是 C++ 程序里忘了做归一化，加上以后结果就对了", "user_side", {}),
    # outputs with nothing in them, or all in one corner
    ("The quantized TFLite model always outputs the same class regardless of input, while the float TFLite model "
     "is correct.", "convert", {"quantized_bc": "abnormal"}),
    ("量化后的分割模型输出全是背景，浮点模型正常", "convert", {"quantized_bc": "abnormal"}),
    ("After int8 quantization the segmentation output is all black; the fp32 model segments correctly.", "convert",
     {"quantized_bc": "abnormal"}),
    ("量化后关键点全部偏到左上角，浮点模型关键点正常", "convert", {"quantized_bc": "abnormal"}),
    # the drop from the float model's score belongs to the model named before it
    ("用quantized_model.onnx在PC上评测，top1从浮点的76.2%降到了61.5%", "convert", {"quantized_bc": "abnormal"}),
    # a training loss going down is no result of the QAT model
    ("QAT训练的时候loss正常下降，但是验证集mAP一直是0。浮点模型mAP是0.35。", "qat_training", {"qat_pt": "abnormal"}),
    ("QAT训练的模型精度比浮点模型低20个点", "qat_training", {}),
    ("The QAT model accuracy on the validation set is much lower than the float model: 45% vs 70%.", "qat_training", {}),
    # the runtime the quantized model was evaluated in is not the float model
    ("Normally the accuracy of the quantized model is a little lower than the float model, but evaluated with "
     "onnxruntime the accuracy is much lower.", "convert", {"quantized_bc": "abnormal"}),
    # "almost nothing" detected; the model a drop starts from, named after its score
    ("After quantizing with quantize_static the quantized model detects almost nothing. The original FP32 ONNX "
     "model works as expected.", "convert", {"quantized_bc": "abnormal"}),
    ("My model's accuracy on the RK3588 drops from 0.62 (onnx) to 0.31 (rknn int8). The quantized model in the "
     "simulator also gives 0.33.", "convert", {"quantized_bc": "abnormal"}),
    # a slight loss of the model another is said to fall far below is no loss there
    ("The model compiled with vai_c_xir runs on the KV260 but the accuracy is 10% lower than the quantized model. "
     "The float model and the quantized model give 78% and 77%.", "compile", {"quantized_bc": "normal"}),
    # ported to the device, whatever its name; the value it should have is no result
    ("把网络移植到s3上后，识别不正确", "baseline", {"board": "abnormal"}),
    ("量化模型在Intel CPU上预测，正确acc应该0.5以上，不符预期", "undetermined", {}),
    # a difference said to be small; nothing gone wrong; one output whatever the input
    ("我在PC上测试过，int8模型跟fp32模型的准确率相差不大", "undetermined", {"quantized_bc": "normal"}),
    ("fp32的模型没有出现问题，int8模型在PC上输出全错", "convert", {"quantized_bc": "abnormal"}),
    ("I exported the quantized model to tflite. No matter what is inputs, the output of tflite is the same.", "convert",
     {"quantized_bc": "abnormal"}),
    # two models named together and said to differ is a comparison, not a result of the second
    ("The QAT model was exported to ONNX with pytorch-quantization; onnx and pytorch inference results are not "
     "the same", "export", {}),
    # model files named by their precision; a good result denied for a model named right after "but not"
    ("The yolov10n_float32.tflite and yolov10n_float16.tflite work, but not yolov10n_int8.tflite. yolo detect val "
     "model=yolov10n_int8.tflite gives mAP 0.", "convert", {"quantized_bc": "abnormal"}),
    ("resnet50_fp32.onnx 的 top1 是 76.1%，resnet50_int8.onnx 只有 12.3%", "convert", {"quantized_bc": "abnormal"}),
    ("I found int8 quantization significantly reduces the detection accuracy; the fp16 model is fine.", "convert", {}),
    # J6 reports: a later model that keeps an earlier model's loss is no good reference; a loss told
    # "compared with" a model; the hbm on x86 agreeing with quantized.bc and the board differing
    ("用horizon_plugin_pytorch做QAT，qat.bc mAP 41.0，quantized.bc mAP 35.2，hbm板端 35.1", "convert",
     {"quantized_bc": "abnormal", "board": "abnormal"}),
    ("After convert, the quantized.bc loses 8 points compared with qat.bc; qat.bc matches qat.pt.", "convert",
     {"quantized_bc": "abnormal"}),
    ("quantized.bc and hbm on x86 give the same outputs on our badcase, but the board output differs.", "board",
     {"board": "abnormal"}),
    # ... but a difference between runs is no result of a model ("the GPU driver differs between the runs")
    ("Only the phone's GPU driver differs between the good and bad runs; the board runs fine on the other "
     "phones.", "undetermined", {}),
    ("PTQ转换后的模型在PC上测试mAP从0.5降到0.2，浮点模型0.5", "convert", {"quantized_bc": "abnormal"}),
    # the way of scaling said to differ; the wrong mean values
    ("板端检测框偏移，我们发现是板端图像预处理时resize方式和训练时不一样导致的", "user_side", {}),
    ("Problem solved: the board program used the wrong mean values.", "user_side", {}),
    # nuScenes' score
    ("quantized.bc的NDS是0.43，编译成hbm之后在板子上跑，NDS只有0.21", "compile", {"board": "abnormal"}),
    # the same picture run again and again, the results differing
    ("板端的结果偶尔会出现错误。同一张图片反复推理，结果不一样。", "board", {}),
    # a segmentation that sees nothing but background is a wrong result
    ("板端的分割结果基本全是背景，x86 仿真是对的", "board", {"board": "abnormal"}),
    # a QAT training that blows up is the QAT model's failure: training side
    ("QAT 训练的时候 loss 变成 nan，浮点训练是正常的", "qat_training", {"qat_pt": "abnormal"}),
    ("after prepare and calibration, within the first 200 QAT iterations the loss goes NaN", "qat_training",
     {"qat_pt": "abnormal"}),
    # the outcome told before the tool that ran it
    ("The hbm gives the right results with hrt_model_exec on the board, but our own application gets wrong boxes.",
     "board", {}),
]


def _stage(diagnosis) -> str:
    """The verdict's stage, or "baseline" where the chain stops at 基线确认 (a board or hbm
    gone wrong before quantized.bc is verified: the verdict is then undetermined), which tells
    such a reading apart from one that read no result at all."""
    verdict = diagnosis.verdict_json
    chain = (verdict.get("chain_stage") or {}).get("stage")
    return "baseline" if verdict["stage"] == "undetermined" and chain == "baseline" else verdict["stage"]


def _results(run) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for fact in run.facts:
        if fact.type == "confirmed":
            out.setdefault(fact["artifact"], set()).add(fact["status"])
    return out


@pytest.mark.parametrize("symptom, stage, results", SENTENCES)
def test_a_common_sentence_reads_as_an_expert_reads_it(diagnose, symptom, stage, results):
    diagnosis = diagnose({"symptom": symptom})
    assert _stage(diagnosis) == stage
    confirmed = _results(diagnosis.run)
    for artifact, status in results.items():
        assert confirmed.get(artifact) == {status}, confirmed


@pytest.mark.parametrize("symptom", [
    "the int8 model's accuracy is 76.7%, which is fine",   # a good score stays good
    "不只一张图，整个验证集都掉点",                          # more than one picture
    "浮点模型精度为75，量化后只有20张图片能检测出来",          # a count is no score
])
def test_what_these_readings_leave_alone(diagnose, symptom):
    facts = diagnose({"symptom": symptom}).run.facts
    assert not any(f.type == "score_drop" for f in facts)
    assert not any(f.type == "text_fact" and f["topic"] == "single_frame" for f in facts)


@pytest.mark.parametrize("symptom, stage", [
    # a slight difference is agreement: the quantized model is close to the float one
    ("fp32 and int8 results differ only slightly, but the board output is totally different", "compile"),
    # two builds of the device's model both wrong name no quantization loss
    ("TensorRT engine: fp16 and int8 both give wrong boxes, the onnx runs fine in onnxruntime", "undetermined"),
    # an input's data type is no quantized model
    ("On the board, with int8 input the output is all zeros, while with float32 input it works", "baseline"),
    # "after PTQ" said of the board's result is the board's
    ("The board result is completely wrong after PTQ.", "baseline"),
    # a cosine of 0.998 is no difference; half the time is no half score; a share is no score
    ("cosine of only 0.998 between quantized.bc and the hbm, is that expected?", "undetermined"),
    ("The board inference takes less than half the time of the simulator, results are identical", "undetermined"),
    ("量化模型 top1 75.9%，是浮点模型的 99.9%", "undetermined"),
    # no NaN denied is no bad result of the simulation
    ("x86 仿真没有出现nan，板端输出是nan", "baseline"),
])
def test_words_near_these_readings_keep_their_own_meaning(diagnose, symptom, stage):
    assert _stage(diagnose({"symptom": symptom})) == stage


@pytest.mark.parametrize("symptom", [
    "板端结果应该和x86仿真一致，但实际差很多",
    "The board output should be the same as the simulator, but it is totally different",
    "Expected Behavior:\nThe quantized BPU model should keep accuracy comparable to the original ONNX model",
])
def test_what_should_happen_is_no_result(diagnose, symptom):
    facts = diagnose({"symptom": symptom}).run.facts
    assert not [f for f in facts if f.type == "said_comparison" and f["relation"] == "equal"]
    assert not [f for f in facts if f.type == "said_result" and f["mention"] in ("float", "onnx_model")]


def test_a_result_carried_from_the_sentence_before_quotes_both(diagnose):
    symptom = "Some context first. I quantized my model with PTQ. Its accuracy dropped from 76% to 40%."
    facts = [f for f in diagnose({"symptom": symptom}).verdict.text_facts if f.rule == "text.result"]
    assert [f.quote for f in facts] == ["I quantized my model with PTQ. Its accuracy dropped from 76% to 40%"]


def test_a_long_sentence_carried_from_is_cut_before_the_statement(diagnose):
    symptom = ("I quantized my detection model with PTQ, using the default configuration of the toolkit with "
               "per-channel weights, symmetric activations and our usual settings for everything else in it. "
               "Its accuracy dropped from 76% to 40%.")
    facts = [f for f in diagnose({"symptom": symptom}).verdict.text_facts if f.rule == "text.result"]
    assert len(facts) == 1
    assert facts[0].quote.startswith("I quantized my detection model with PTQ")
    assert facts[0].quote.endswith("… Its accuracy dropped from 76% to 40%")


@pytest.mark.parametrize("symptom, stage", [
    # a sentence that compares, denies, plans or asks is no subject to carry into the next
    ("I haven't tried the board yet. The accuracy is only 40% now.", "undetermined"),
    ("下一步准备部署到板端。目前精度只有40%。", "undetermined"),
    ("Should I use the x86 simulator to check the hbm? Accuracy is only 30% right now.", "undetermined"),
    ("The x86 simulation will be tested next week. The accuracy dropped from 76% to 40%.", "undetermined"),
    # a size or a time that fell is no accuracy drop
    ("After quantization the model size decreased by 75 percent.", "undetermined"),
    ("PTQ 量化之后，模型大小从 100 降到了 25 MB。", "undetermined"),
    # the pair agrees; the wrong one is another
    ("x86仿真和quantized.bc一致，错的是板端。", "board"),
    # a camera calibration is no quantization
    ("相机重新校准之后，mAP 掉了 20 个点。", "undetermined"),
    # a slight loss after quantized.bc is a loss: the compiled model follows it closely
    ("quantized.bc 76.0%，x86 仿真 74.6%，板端 60%。", "compile"),
    ("QAT 0.710, quantized.bc 0.702, board 0.650.", "compile"),
    # ... not where the trained model went on to a format or runtime, nor where QAT was left out
    ("I ran an int8 QAT tflite model with ArmNN and the results were incorrect", "undetermined"),
    ("QAT 训练完导出 onnx 后精度很差", "undetermined"),
    # ... nor where the export is named inside a script's name
    ("qat_export 之后的 mAP 比 QAT 训练时 eval 的低", "undetermined"),
    ("用8bit量化yolox模型后大目标检测框偏小。尝试了量化建议的方法（不包含使用QAT），还是一样", "convert"),
    # the float model not yet measured, nothing wrong said, a device named as the car, a skewed distribution
    ("量化后的模型精度不对，还没有跟浮点模型对比过，浮点的精度也没测", "undetermined"),
    ("I haven't evaluated the float model yet, but the quantized model's outputs are all wrong.", "undetermined"),
    ("量化后的模型输出没有任何异常，就是推理速度比预期慢很多", "undetermined"),
    ("量化后的模型上车测试，误检特别多", "undetermined"),
    ("The weight distribution is skewed, so I switched to per-channel quantization; now the quantized model "
     "matches the float one.", "undetermined"),
    ("用pytorch-quantization做了QAT，build成engine之后精度只有20%", "baseline"),
    ("PT2E INT8 quantization of shufflenet on XPU collapses to near-random accuracy", "undetermined"),
    # two references, each after its "relative to", compare nothing with each other
    ("表格括号中的值表示相对于ncnn-fp16模型在pc上的掉点情况，以及相对于pt模型的掉点情况", "undetermined"),
    # the float model's own result is the report's to give; a model's size is no result
    ("PTQ 量化后的模型输出全错，浮点模型也不对", "undetermined"),
    ("模型量化后文件大小从 100MB 降到 25MB", "undetermined"),
    ("量化之后 model size 变小了很多，精度也不对", "convert"),
    # the carried quantized model's drop is measured against the model before quantization
    ("I quantized the model with PTQ. After that, its accuracy dropped from 76% to 40%.", "convert"),
    # an int8 model alone may be a device build; the quantization run's own results are no result
    ("The int8 model outputs are all wrong", "undetermined"),
    ("I got the quantized results and I can run roughly correct inference results, but the mAP dropped from "
     "0.41 to 0.378.", "convert"),
    # a conversion done is no step forgotten
    ("板端把 BGR 转成了 RGB 再送进模型，结果还是不对", "baseline"),
])
def test_what_the_carried_subject_and_the_quantization_only_reading_leave_alone(diagnose, symptom, stage):
    assert _stage(diagnose({"symptom": symptom})) == stage


def test_a_rule_that_asks_only_whether_its_words_stand_anywhere_concludes_from_the_first(diagnose):
    # text.deployment_named: several patterns, context any, nothing captured
    symptom = "精度从 76% 掉到了 40%。后来我们用自己的 C++ 程序测试。再后来部署到板端，也一样。"
    facts = [f for f in diagnose({"symptom": symptom}).verdict.text_facts if f.rule == "text.deployment_named"]
    assert [f.quote for f in facts] == ["后来我们用自己的 C++ 程序测试"]


def test_a_rule_that_concludes_once_takes_the_first_match_its_unless_admits(diagnose):
    # text.deployment_named: the device not yet reached is passed over ("还没部署"); the first
    # admitted match, in text order over all its patterns, is the one it concludes from
    symptom = "量化后精度掉了很多。还没部署到板端。后来用 hb_compile 编译了，部署到板端后也一样。"
    facts = [f for f in diagnose({"symptom": symptom}).verdict.text_facts if f.rule == "text.deployment_named"]
    assert [f.quote for f in facts] == ["后来用 hb_compile 编译了，部署到板端后也一样"]
