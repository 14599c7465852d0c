"""Scores written next to the model they belong to: "the fp32 model (test acc 90.5%) … the
quantized .trt model drops to 75.75%", "float: 0.647 | calib: 0.615 | quant: 0.61", "on CPU I
get 86% … using the NCS2 it drops to 72%". Read from the one reading of a text
(engine/text_reader.py: the term classes `mention` and `score` of facts/text_terms.yaml); this
module knows how people write a model's score, nothing about what a drop means for a
diagnosis (rules/18_intake.yaml judges that).

A score belongs to the nearest model named before it in the same sentence, close by and with
no other score between them; a model's first score is its score. Two models named together
and then two scores joined the same way take them in order ("浮点模型和量化模型的精度分别是
76.1% 和 60.2%", "float vs quantized: 36.0% vs 0.0%"). Integers without a percent
sign are no scores (30 FPS, 1000 images), nor are numbers of zero or less ("-1.00"), nor a
number named an error, a loss, a time, a size or a version just before it ("欧氏误差约为
1.728", "hbrt 3.15"), nor one right after a software's name ("TensorFlow 2.9"), nor one told of
a single image ("I have a picture that the score of the onnx model is 0.98"). A model
named alone on a line (a heading) followed by a table of scores gets the table's mean, where
two or more such tables have the same shape (the per-class APs of each model). Scores told
in an error that falls as the model gets better (EPE, AbsRel: the `measure` lower_better) get
worse as they rise (lower_is_better)."""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from typing import NamedTuple

from j6doctor.facts import vocabulary
from j6doctor.probes.pasted_text import a_models_score, version_ends

WINDOW = 48  # characters (of the compact text) between a model's name and its score
NAMED_WITHIN = 12  # characters before a number where a word says it is no score ("误差约为 1.728")


class Score(NamedTuple):
    mention: str       # the mention value (facts/vocabulary.yaml enum mention)
    value: float
    percent: bool      # written with a percent sign
    start: int         # the span of the name and the score in the user's text
    end: int
    quote: str
    by_file: bool = False  # the model named by its file ("qat.pt", "quantized_model.onnx")
    calibration: bool = False  # the model named by its calibration ("calibration 之后", "the calibrated model")


def scores(text: str) -> list[Score]:
    """The score of each model the text gives one for, in the order they are written."""
    from j6doctor.engine.text_reader import read_cached

    if not text.strip():
        return []
    reading = read_cached(text, vocabulary().text.index)
    mentions = reading.by_class.get("mention", [])
    starts = [reading.tags[i][0] for i in mentions]
    found: dict[str, Score] = {}
    in_tables, table_scores = _scores_in_pipe_tables(text, reading, mentions)
    versions = version_ends(text)  # a package's version is no score: "horizon_nn 1.1"
    pairs = {**_arrow_pairs(reading, mentions, starts, versions), **_respective_pairs(reading, mentions, starts, versions),
             **_drop_from_pairs(reading, mentions, starts, versions), **_scores_then_models(reading, mentions, starts, versions)}
    one_image = _one_image_sentences(reading)
    paired = {m: t for m, t in pairs.items() if t not in in_tables and not _published(reading, reading.tags[t][0])
              and reading.tag_clause[t] not in one_image}
    for mention_index, score_index in paired.items():
        _keep(found, text, reading, mention_index, score_index)
    paired_scores = set(paired.values()) | in_tables
    listed_otherwise = _listed_after_no_score(reading)
    previous_score_end = -1
    for index in reading.by_class.get("score", []):
        start, end, _, words = reading.tags[index]
        if index in paired_scores:
            previous_score_end = end
            continue
        if index in listed_otherwise:
            continue  # "cos 0.9997 / 0.9995 / 0.9998": each is a similarity like the first
        value = _number(str(words))[0]
        if value is None or value <= 0 or end in versions or reading.tag_clause[index] in one_image:
            continue  # no score: it stands between no model and its score; one image's number is none either
        owner = _owner_of(reading, mentions, starts, (start, end), previous_score_end)
        if owner is not None and (_named_otherwise(reading, reading.tags[owner][1], start)
                                  or _a_share(reading, owner, start)):
            continue  # an error, a time, a size, a version; a share of that model's score
        if _a_version(reading, index):
            continue  # "TensorFlow 2.9": no score, and it stands between no model and its score
        if _published(reading, start):
            continue  # "the paper reported an mIoU of 0.7081 (fp32)": no score the user measured
        previous_score_end = end
        if owner is not None:
            _keep(found, text, reading, owner, index)
            other = _sharing(reading, mentions, starts, owner, start)
            if other is not None:
                _keep(found, text, reading, other, index)
    for score in table_scores:  # (a model's first score is its score)
        if score.mention not in found or score.start < found[score.mention].start:
            found[score.mention] = score
    for score in _scores_under_headings(text, reading, mentions):
        found.setdefault(score.mention, score)
    return sorted(found.values(), key=lambda score: score.start)


def lower_is_better(text: str) -> bool:
    """Whether the text tells its scores in an error that falls as the model gets better ("EPE：
    qat.pt 1.82，qat.bc 2.61", "AbsRel 0.098"): such a measure (`measure` lower_better) is named in
    a sentence that holds a score or the one right before it (a heading), and none of those names
    one that rises ("mAP")."""
    from j6doctor.engine.text_reader import read_cached

    if not text.strip():
        return False
    reading = read_cached(text, vocabulary().text.index)
    # (a score's sentence, and the one before it: the heading "AbsRel on 650 frames:" above the scores)
    sentences = {reading.tag_clause[i] - back for i in reading.by_class.get("score", []) for back in (0, 1)}
    told = {reading.tags[i][3] for i in reading.by_class.get("measure", []) if reading.tag_clause[i] in sentences}
    return "lower_better" in told and "higher_better" not in told


def _one_image_sentences(reading) -> set[int]:
    """The sentences that speak of one image ("I have a picture that the score of the onnx model
    is 0.98 ...", "单张图"): a number there is that image's, no model's score on a dataset. (Not
    "one" alone: "一张 3090", "a single image's latency".)"""
    return {reading.tag_clause[i] for i in reading.by_class.get("one_frame", [])
            if reading.tags[i][3] in ("image", "single")}


def _keep(found: dict[str, Score], text: str, reading, mention_index: int, score_index: int) -> None:
    """A model's score, unless it has one already (its first score is its score), but for a
    score of the model named by its file, or by its QAT training, after one named by its
    calibration or in words: "calibration 模型 90.6%，QAT 训完 qat.pt 是 85.1%", "after calibration
    74.9, after QAT 70.2" (in a QAT flow both stand at that place; the trained model is qat.pt)."""
    m_start, m_end, _, mention = reading.tags[mention_index]
    s_start, s_end, _, words = reading.tags[score_index]
    value, percent = _number(str(words))
    by_file = bool(_FILE_NAME.search(reading.compact.text, m_start, m_end))
    calibration = bool(_CALIBRATION.search(reading.compact.text, m_start, m_end))
    earlier = found.get(str(mention))
    if value is not None and (earlier is None or (by_file and not earlier.by_file)
                              or _trained_after_calibrated(reading, earlier, calibration, value, percent, s_start)):
        a, b = reading.span_in_text(min(m_start, s_start), max(m_end, s_end))  # (the name may follow: "0.56 for the fp32 model")
        found[str(mention)] = Score(str(mention), value, percent, a, b, " ".join(text[a:b].split())[:160], by_file,
                                    calibration)


_FILE_NAME = re.compile(r"\w\.(?:pt|pth|bc|hbm|bin|onnx|tflite|rknn|engine)\b")
_CALIBRATION = re.compile(r"calib|校准|标定")
# a score hoped for is none measured ("希望 qat 之后能到 0.45", "the target after QAT is 75.8")
_HOPED = re.compile(r"希望|期望|目标|想要|target is|target of|hope|expect|goal")


def _trained_after_calibrated(reading, earlier: Score, calibration: bool, value: float, percent: bool,
                              score_start: int) -> bool:
    """Whether a score replaces the one of the calibrated model before it as the QAT-trained
    model's: named without its calibration, written the way the earlier one is (both a
    percentage, both a fraction below 1, or both a number from 1 up: the same measure), and not
    hoped for in its sentence."""
    return earlier.calibration and not calibration and earlier.percent == percent \
        and (earlier.value < 1) == (value < 1) \
        and not _HOPED.search(reading.compact.text, reading.clause_of(score_start).start, score_start)


# Models named together, then as many scores in the same order: "fp32 vs int8: 76.1% vs 70.2%",
# "浮点模型和量化模型的精度分别是 76.1% 和 60.2%", "between onnx with trt, 36.0% vs 0.0%",
# "qat.pt / qat.export.pt / qat.bc = 62.3 / 62.1 / 55.0 mIoU"
_JOINED = re.compile(r"\s?(?:vs\.?|versus|和|与|跟|/|、|and|with|,)\s?(?:the\s)?")


def _joined_run(compact: str, tags: list, members: list[int], at: int, step: int) -> list[int]:
    """The tags of `members` joined in a row (_JOINED between each two) from members[at], going
    forward (step 1) or back (step -1), in text order."""
    run = [members[at]]
    nxt = at + step
    while 0 <= nxt < len(members):
        a, b = (run[-1], members[nxt]) if step > 0 else (members[nxt], run[0])
        if not _JOINED.fullmatch(compact[tags[a][1]:tags[b][0]]):
            break
        run = run + [members[nxt]] if step > 0 else [members[nxt]] + run
        nxt += step
    return run


def _score_runs(reading) -> list[list[int]]:
    """The score tags as runs of those joined in a row ("62.3 / 62.1 / 55.0"; a lone score is a
    run of one), worked out once per reading (the pairs and the similarities listed ask)."""
    runs = reading.derived.get(("score runs",))
    if runs is None:
        tags, compact = reading.tags, reading.compact.text
        score_tags = reading.by_class.get("score", [])
        runs, at = [], 0
        while at < len(score_tags):
            runs.append(_joined_run(compact, tags, score_tags, at, 1))
            at += len(runs[-1])
        reading.derived[("score runs",)] = runs
    return runs


def _respective_pairs(reading, mentions: list[int], starts: list[int], versions: set[int]) -> dict[int, int]:
    """mention tag → score tag where models named together are followed, in the same sentence,
    by as many scores together in the same order (a zero is a score there: "36.0% vs 0.0%");
    more models than scores, or fewer, tell nothing of which is whose."""
    tags, compact = reading.tags, reading.compact.text
    out: dict[int, int] = {}
    for run in _score_runs(reading):
        first = tags[run[0]]
        last = bisect_right(starts, first[0]) - 1
        if len(run) < 2 or last < 0 or not first[0] - WINDOW <= tags[mentions[last]][1] <= first[0]:
            continue
        named = _joined_run(compact, tags, mentions, last, -1)
        if len(named) == len(run) and _told_respectively(reading, named, run, versions) \
                and not any(m in out for m in named):
            out.update(zip(named, run))
    return out


def _told_respectively(reading, named: list[int], run: list[int], versions: set[int]) -> bool:
    """Whether models named together and the scores after them pair up: distinct models, one
    sentence, numbers that are scores (not sizes, times, losses or versions: "大小分别是 98.5 和 25.1")."""
    tags = reading.tags
    if len({tags[m][3] for m in named}) < len(named) or len({reading.clause_index(tags[t][0]) for t in named + run}) > 1:
        return False
    if any(tags[t][1] in versions or _a_version(reading, t) for t in run) or _named_otherwise(reading, tags[named[-1]][1], tags[run[0]][0]):
        return False
    values = [_number(str(tags[t][3]))[0] for t in run]
    return not any(v is None or v < 0 for v in values)


# A list of scores, then the models they belong to in order: "41.9、41.7、37.3、37.2，分别是 qat.pt、
# qat.bc、quantized.bc、板端 hbm 的 mAP"
# (the compact text holds "，" as ",": text_normalise.py)
_LIST_SEP = re.compile(r"\s?(?:、|,|/|和|与|and)\s?(?:the |my |our |an? )?|\s")
_RESPECTIVELY = re.compile(r"\s?,?\s?(?:分别对应的是|分别对应|分别是|分别为|依次是|依次为|respectively for|for)\s?"
                           r"(?P<article>(?:the |my |our |an? )?)")


def _scores_then_models(reading, mentions: list[int], starts: list[int], versions: set[int]) -> dict[int, int]:
    """mention tag → score tag where two or more scores joined in a list are followed by "分别是"
    and as many models joined the same way, in the same sentence."""
    tags, compact = reading.tags, reading.compact.text
    score_tags = [t for t in reading.by_class.get("score", []) if tags[t][1] not in versions]
    out: dict[int, int] = {}
    at = 0
    while at < len(score_tags):
        run = [score_tags[at]]
        while at + len(run) < len(score_tags) and _LIST_SEP.fullmatch(compact[tags[run[-1]][1]:tags[score_tags[at + len(run)]][0]]):
            run.append(score_tags[at + len(run)])
        at += len(run)
        lead = _RESPECTIVELY.match(compact, tags[run[-1]][1])
        if len(run) < 2 or lead is None:
            continue
        first = bisect_left(starts, lead.start("article"))
        named = mentions[first:first + len(run) + 1]
        if len(named) < len(run) or tags[named[0]][0] not in (lead.start("article"), lead.end()) or any(
                not _LIST_SEP.fullmatch(compact[tags[a][1]:tags[b][0]]) for a, b in zip(named, named[1:len(run)])):
            continue
        if len(named) > len(run) and _LIST_SEP.fullmatch(compact[tags[named[-2]][1]:tags[named[-1]][0]]):
            continue  # more models than scores: which is whose is not told
        named = named[:len(run)]
        if reading.tags_in("not_score", max(0, tags[run[0]][0] - NAMED_WITHIN), tags[named[-1]][1] + NAMED_WITHIN):
            continue  # times, sizes, similarities listed ("分别是 float 和 int8 模型的 cosine")
        if len({tags[m][3] for m in named}) < len(named) or any(m in out for m in named):
            continue
        out.update(zip(named, run))
    return out


FROM_TO_GAP = 12  # characters between a drop's two scores ("降到了", " to ", " -> ")


def _drop_from_pairs(reading, mentions: list[int], mention_starts: list[int], versions: set[int]) -> dict[int, int]:
    """mention tag → score tag for a drop told from one score to another: "用 quantized_model.onnx
    评测，top1 从浮点的 76.2% 降到了 61.5%", "its accuracy drops from the float model's 76% to 40%": the
    first score is the model after "from", the second the model named before it; with no model after
    "from" ("PTQ 转换后的模型 mAP 从 0.5 降到 0.2") the model named before it takes the second score
    (where it fell to), the first one is no model's."""
    tags = reading.tags
    out: dict[int, int] = {}
    for word in reading.by_class.get("from_word", []):
        word_end = tags[word][1]
        at = bisect_left(mention_starts, word_end)
        if at == 0:
            continue  # no model named before "from"
        before = mentions[at - 1]
        after = mentions[at] if at < len(mentions) and mention_starts[at] - word_end <= 1 else None
        pair = _two_scores(reading, tags[after][1] if after is not None else word_end, 4 if after is not None else 1)
        if pair is None or before in out or after in out:
            continue
        s1, s2 = pair
        if after is None and bisect_left(mention_starts, tags[s2][0]) > at:
            continue  # a model named after the first score ("from 0.62 (onnx) to 0.31 (rknn int8)"): its own
        if (after is not None and tags[before][3] == tags[after][3]) or tags[word][0] - tags[before][1] > WINDOW \
                or len({reading.clause_index(tags[t][0]) for t in (before, s1, s2)}) != 1 \
                or tags[s1][1] in versions or tags[s2][1] in versions:
            continue
        if after is not None:
            out[after] = s1
        else:
            first = _joined_before(reading, mentions, at - 1)
            if first is not None and first not in out and _one_fall_of_two(reading, tags[before][1], tags[s1][0]):
                out[first] = s1  # "qat.pt 和 pre_export 之后的 qat.export.pt … top1 从 78.4 掉到 74.9"
        out[before] = s2
    return out


ARROWS = ("->", "→", "=>")


def _arrow_pairs(reading, mentions: list[int], mention_starts: list[int], versions: set[int]) -> dict[int, int]:
    """mention tag → score tag for a change told with an arrow after a model: "qat.bc 的 mAP
    41.2 -> 36.0", "pre_export 之后 ADE 1.02 -> 1.31": the model is where the change led, the
    second score (the first is the one it came from, no model's)."""
    tags = reading.tags
    out: dict[int, int] = {}
    score_tags = reading.by_class.get("score", [])
    for word in reading.by_class.get("convert_to", []):
        start, end, _, _ = tags[word]
        after = bisect_left(reading.class_starts.get("score", []), end)
        at = bisect_left(mention_starts, start)
        if reading.compact.text[start:end] not in ARROWS or not 0 < after < len(score_tags) or at == 0:
            continue
        s1, s2, before = score_tags[after - 1], score_tags[after], mentions[at - 1]
        if before not in out and _led_to(reading, before, s1, word, s2, versions):
            out[before] = s2
    return out


# a step named after the change: the model before the arrow is where it started ("float mAP 41.2 ->
# 36.0 after PTQ", "qat.pt 0.412 -> 0.318 after export")
_STEP_AFTER = re.compile(r"\s?(?:after|之后|以后|后)")


def _led_to(reading, model: int, s1: int, arrow: int, s2: int, versions: set[int]) -> bool:
    """Whether "model … s1 -> s2" tells where the model's change led: the two scores around the
    arrow, the model right before them in the same sentence, downstream of the QAT model (a
    change from the float or QAT model leads to another model), not the model compared with
    ("vs qat.pt (41.0 -> 38.2)"), and no step named after the change."""
    tags = reading.tags
    place, start_place = chain_place(str(tags[model][3])), chain_place("qat_pt")
    if place is None or start_place is None or place <= start_place or _compared_with(reading, model):
        return False
    if _STEP_AFTER.match(reading.compact.text, tags[s2][1]):
        return False
    return 0 <= tags[arrow][0] - tags[s1][1] <= 1 and tags[s2][0] - tags[arrow][1] <= 1 \
        and tags[s1][0] >= tags[model][1] and tags[arrow][0] - tags[model][1] <= WINDOW \
        and tags[s1][1] not in versions and tags[s2][1] not in versions \
        and len({reading.clause_index(tags[t][0]) for t in (model, s1, s2)}) == 1


COMPARED_WITHIN = 14  # characters before a model where "vs" / "than" makes it the other side


def _compared_with(reading, mention: int) -> bool:
    """Whether the model is named right after "vs", "than", "compared with": the other side."""
    start = reading.tags[mention][0]
    return any(reading.tags_in(cls, max(0, start - COMPARED_WITHIN), start) for cls in ("versus", "than_word"))


SAME_NAMING_GAP = 3  # characters between two names of one model ("之后的 ")
JOINED_GAP = 24  # characters between two models named together ("qat.pt 和 pre_export 之后的 qat.export.pt")
_JOIN_WORD = re.compile(r"\s?(?:(?:和|与|跟|及)\s?|(?:and|vs\.?|versus)\s)")


def _joined_before(reading, mentions: list[int], index: int) -> int | None:
    """The model named together with mentions[index] right before it ("A 和 B", "A and the B"),
    where A stands before B on the chain: a drop told "from X to Y" of the two goes from A to B
    (models at one place, "板端和 x86 仿真 … 从 0.5 掉到 0.3", may both have fallen)."""
    tags, compact = reading.tags, reading.compact.text
    # (the model named twice over is named once: "pre_export 之后的 qat.export.pt")
    while index >= 1 and tags[mentions[index - 1]][3] == tags[mentions[index]][3] \
            and tags[mentions[index]][0] - tags[mentions[index - 1]][1] <= SAME_NAMING_GAP:
        index -= 1
    if index < 1:
        return None
    first, second = mentions[index - 1], mentions[index]
    gap = compact[tags[first][1]:tags[second][0]]
    if len(gap) > JOINED_GAP or not _JOIN_WORD.match(gap) or any(c in gap for c in ",;:()"):
        return None
    return first if _upstream(str(tags[first][3]), str(tags[second][3])) else None


def _one_fall_of_two(reading, start: int, end: int) -> bool:
    """Whether the words between two models named together and the first number of a fall
    ([start, end)) let it go from the first model to the second: not "both fell", and no word
    that makes the numbers an error, a loss, a time or a similarity ("输出误差从 0.012 涨到 0.35",
    "cos … 从 0.9998 掉到 0.951"; the not_score terms but the words of the fall itself, value fall)."""
    if reading.tags_in("both", start, end):  # (the two fell alike: "onnx 和 rknn 模型精度都从 0.62 降到了 0.31")
        return False
    return all(reading.tags[t][3] == "fall" for t in reading.tags_in("not_score", start, end))


def chain_place(mention: str) -> int | None:
    """The chain place of the model a mention names (facts/vocabulary.yaml: mention denotes an
    artifact, the artifact its chain place); None for a mention that names none by itself."""
    enums = vocabulary().enums
    artifact = enums["mention"].attr(mention, "denotes")
    return None if artifact is None else enums["artifact"].attr(artifact, "chain")


def _upstream(first: str, second: str) -> bool:
    """Whether the model the mention `first` names stands before the one `second` names on the chain."""
    places = [chain_place(m) for m in (first, second)]
    return None not in places and places[0] < places[1]


def _two_scores(reading, position: int, within: int) -> tuple[int, int] | None:
    """The first score starting at most `within` characters after `position` and the score right
    after it (at most FROM_TO_GAP characters on: "降到了", " to "), else None."""
    tags = reading.tags
    score_tags = reading.by_class.get("score", [])
    first = bisect_left(reading.class_starts.get("score", []), position)
    if first + 1 >= len(score_tags):
        return None
    s1, s2 = score_tags[first], score_tags[first + 1]
    if tags[s1][0] - position > within or tags[s2][0] - tags[s1][1] > FROM_TO_GAP:
        return None
    return s1, s2


def _a_version(reading, score_tag: int) -> bool:
    """Whether a number without a percent sign stands right after a software's name (one below
    1 only after a name that names no model: "ModelOpt 0.15" is a version, "onnx 0.645" a score)."""
    start, _, _, words = reading.tags[score_tag]
    value, percent = _number(str(words))
    return not percent and value is not None and _software_version(reading, start, value)


# A heading line is a model's name and markup only: "float onnx:", "## quantized_model.onnx".
_HEADING_MARKUP = re.compile(r"[\s#*:：\-_|>`=]*")
_LINE_END = re.compile("\n")


def _scores_under_headings(text: str, reading, mentions: list[int]) -> list[Score]:
    """Models named alone on a line, each followed by a table of scores ("float onnx:" then
    rows of per-class APs): a model's score is the mean of its table. Read only where two or
    more such tables have the same number of scores, so that their means compare."""
    if len(mentions) < 2 or not reading.by_class.get("score"):
        return []  # two tables at least, each under its model's name
    line_starts = [0] + [match.end() for match in _LINE_END.finditer(text)]

    def line_of(compact_start: int, compact_end: int) -> tuple[int, int, int]:
        a, b = reading.span_in_text(compact_start, compact_end)
        return bisect_right(line_starts, a) - 1, a, b

    named: dict[int, list[tuple[str, int, int]]] = {}
    for index in mentions:
        line, a, b = line_of(reading.tags[index][0], reading.tags[index][1])
        named.setdefault(line, []).append((str(reading.tags[index][3]), a, b))
    scored: dict[int, list[tuple[float, bool, int]]] = {}
    for index in reading.by_class.get("score", []):
        line, a, b = line_of(reading.tags[index][0], reading.tags[index][1])
        value, percent = _number(str(reading.tags[index][3]))
        if value is not None and value >= 0:
            scored.setdefault(line, []).append((value, percent, b))
    tables: list[tuple[str, list[tuple[float, bool, int]], int, int]] = []
    for line, names in sorted(named.items()):
        if len(names) != 1 or line in scored:
            continue
        mention, a, b = names[0]
        end_of_line = line_starts[line + 1] - 1 if line + 1 < len(line_starts) else len(text)
        if not _HEADING_MARKUP.fullmatch(text[line_starts[line]:a] + text[b:end_of_line]):
            continue
        rows, below = [], line + 1
        while below in scored and below not in named:
            rows.extend(scored[below])
            below += 1
        if rows:
            tables.append((mention, rows, a, rows[-1][2]))
    sizes = [len(rows) for _, rows, _, _ in tables]
    found = []
    for mention, rows, start, end in tables:
        if sizes.count(len(rows)) < 2:
            continue
        mean = sum(value for value, _, _ in rows) / len(rows)
        quote = " ".join(text[start:end].split())[:160]
        found.append(Score(mention, mean, all(percent for _, percent, _ in rows), start, end, quote))
    return found


# The rule under a pipe table's header: "|---|:---:|", "--- | ---"
_PIPE_RULE = re.compile(r"\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)+\|?\s*")


def _cells(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The cell spans of one pipe-table line text[start:end] (outer pipes are no cells)."""
    bounds = [start - 1] + [i for i in range(start, end) if text[i] == "|"] + [end]
    cells = [(a + 1, b) for a, b in zip(bounds, bounds[1:])]
    if cells and not text[cells[0][0]:cells[0][1]].strip():
        cells = cells[1:]
    if cells and not text[cells[-1][0]:cells[-1][1]].strip():
        cells = cells[:-1]
    return cells


def _line_spans(text: str) -> list[tuple[int, int]]:
    """The span of each line of the text, its line break left out."""
    spans, at = [], 0
    for line in text.split("\n"):
        spans.append((at, at + len(line)))
        at += len(line) + 1
    return spans


def _pipe_tables(text: str) -> list[list[tuple[int, int]]]:
    """Each pipe table as its lines' spans: the header, then the data rows (the rule left out)."""
    lines = _line_spans(text)
    tables, i = [], 0
    while i + 1 < len(lines):
        head, rule = lines[i], lines[i + 1]
        if "|" in text[head[0]:head[1]] and _PIPE_RULE.fullmatch(text[rule[0]:rule[1]]):
            rows, j = [head], i + 2
            while j < len(lines) and "|" in text[lines[j][0]:lines[j][1]]:
                rows.append(lines[j])
                j += 1
            tables.append(rows)
            i = j
        else:
            i += 1
    return tables


class _TableTags:
    """The tags of some classes as spans of the user's text, sorted, to find those inside a cell."""

    def __init__(self, reading, classes: tuple[str, ...]):
        indexes = sorted(i for cls in classes for i in reading.by_class.get(cls, []))
        self.reading = reading
        self.spans = [reading.span_in_text(*reading.tags[i][:2]) for i in indexes]
        self.starts = [a for a, _ in self.spans]
        self.indexes = indexes

    def inside(self, cell: tuple[int, int], cls: str) -> list[int]:
        at = bisect_left(self.starts, cell[0])
        out = []
        while at < len(self.starts) and self.starts[at] < cell[1]:
            index = self.indexes[at]
            if self.spans[at][1] <= cell[1] and self.reading.tags[index][2] == cls:
                out.append(index)
            at += 1
        return out


def _scores_in_pipe_tables(text: str, reading, mentions: list[int]) -> tuple[set[int], list[Score]]:
    """Scores in pipe tables: models named in the header cells, each taking its cell of the
    first row labelled with a measure or a summary ("|Accuracy|Frozen Graph|Quantized Graph|"
    then "|Top1|0.642|0.014|"; "mean" under per-class rows); else models named in the first
    column, each taking its cell of the first column headed by a measure ("| model | mAP |").
    A label that says its numbers are no scores (a size, a time, a loss, an error, a version)
    is no measure. Also returns every score tag inside a table: no sentence owns those. Tables
    aligned with spaces are read the same way where they give scores (their rows may be a
    sentence's too: "qat.pt    0.5213", one model per line)."""
    if not reading.by_class.get("score"):
        return set(), []
    tags = _TableTags(reading, ("mention", "score", "measure", "not_score", "summary_row", "column_model"))
    held: set[int] = set()
    found: list[Score] = []
    for rows in _pipe_tables(text) if "|" in text else ():
        cells = [_cells(text, *row) for row in rows]
        held.update(i for row in cells for cell in row for i in tags.inside(cell, "score"))
        found += _by_column(text, tags, cells) or _by_row(text, tags, cells)
    for cells in _aligned_tables(text):
        if any(tags.inside(cell, "score") for cell in cells[0]):
            continue  # (a first row with scores is no header: "  qat.pt   det mAP 0.472  lane F1 0.903")
        made = _by_column(text, tags, cells) or _by_row(text, tags, cells)
        if made:
            held.update(i for row in cells for cell in row for i in tags.inside(cell, "score"))
            found += made
    return held, found


def _aligned_cells(text: str, start: int, end: int, gap: re.Pattern) -> list[tuple[int, int]]:
    """The cells of the line text[start:end], cut at the column gaps `gap` finds."""
    line = text[start:end]
    lo, hi = len(line) - len(line.lstrip()), len(line.rstrip())
    bounds = [(start + lo, start + lo)] + [(start + m.start(), start + m.end())
                                           for m in gap.finditer(line, lo, hi)] + [(start + hi, start + hi)]
    return [(a[1], b[0]) for a, b in zip(bounds, bounds[1:])]


def _aligned_tables(text: str) -> list[list[list[tuple[int, int]]]]:
    """Each run of three lines or more with the same number of cells (two or more) when cut at
    gaps of spaces, as its rows' cells; a header one cell short has no label over the first
    column ("        float   calib   qat")."""
    from j6doctor.engine.text_reader import COLUMN_GAP

    if "  " not in text and "\t" not in text:
        return []
    rows = [_aligned_cells(text, a, b, COLUMN_GAP) if text[a:b].strip() else [] for a, b in _line_spans(text)]
    tables, i = [], 0
    while i < len(rows):
        j = i + 1
        width = len(rows[i])
        while j < len(rows) and width >= 2 and len(rows[j]) == width:
            j += 1
        header = rows[i - 1] if i > 0 and width >= 3 and len(rows[i - 1]) == width - 1 else None
        if header is not None and j - i >= 2:
            tables.append([[(header[0][0], header[0][0])] + header] + rows[i:j])
        elif j - i >= 3:
            tables.append(rows[i:j])
        i = j
    return tables


def _one_model(tags: _TableTags, cell: tuple[int, int]) -> str | None:
    """The one model a cell names; models named in an aside explain it ("int8 engine (trtexec
    --int8 from QDQ onnx)"); a header's short name for a model where it names none otherwise
    ("calib", "qat(ep12)": column_model)."""
    named = tags.inside(cell, "mention") or tags.inside(cell, "column_model")
    names = {str(tags.reading.tags[i][3]) for i in named if tags.reading.aside[i] < 0} or \
        {str(tags.reading.tags[i][3]) for i in named}
    return names.pop() if len(names) == 1 else None


def _a_measure(tags: _TableTags, cell: tuple[int, int]) -> bool:
    """A cell that names a measure and nothing that says its numbers are no scores (a detection's
    class does not: "| Car AP |")."""
    return bool(tags.inside(cell, "measure")) and \
        not any(tags.reading.tags[i][3] != "object_class" for i in tags.inside(cell, "not_score"))


# A cell that holds a bare zero (an integer is otherwise no score: 30 FPS, 1000 images)
_ZERO_CELL = re.compile(r"\s*0(?:\.0*)?\s*%?\s*")


def _table_score(text: str, tags: _TableTags, mention: str, name_cell: tuple[int, int], cell: tuple[int, int],
                 label_cell: tuple[int, int]) -> Score | None:
    found = tags.inside(cell, "score")
    value, percent = _number(str(tags.reading.tags[found[0]][3])) if found else (None, False)
    if value is None and _ZERO_CELL.fullmatch(text[cell[0]:cell[1]]):
        value, percent = 0.0, False  # a model that scores nothing under a measure: "| 0 |"
    if value is None or value < 0:
        return None
    words = [" ".join(text[a:b].split()) for a, b in (name_cell, label_cell, cell)]
    return Score(mention, value, percent, name_cell[0], cell[1], " | ".join(w for w in words if w)[:160])


def _by_column(text: str, tags: _TableTags, cells: list[list[tuple[int, int]]]) -> list[Score]:
    header = cells[0]
    # (a model named over two columns is the later one's: "float  calib  qat", the QAT-trained model)
    last = {m: j for j, cell in enumerate(header) if (m := _one_model(tags, cell))}
    named = {j: m for m, j in sorted(last.items(), key=lambda item: item[1])}
    if len(named) < 2 or 0 in named:  # (the first column labels the rows)
        return []
    for row in cells[1:]:
        if len(row) == len(header) and (_a_measure(tags, row[0]) or tags.inside(row[0], "summary_row")):
            made = [_table_score(text, tags, m, header[j], row[j], row[0]) for j, m in named.items()]
            if all(score is not None for score in made) and _a_reference_first(made):  # (a score
                return made  # under every model named)
    return []


def _by_row(text: str, tags: _TableTags, cells: list[list[tuple[int, int]]]) -> list[Score]:
    """The first column headed by a measure that gives two models or more a score."""
    header = cells[0]
    for column in (j for j, cell in enumerate(header) if j > 0 and _a_measure(tags, cell)):
        made: dict[str, Score] = {}
        for row in cells[1:]:
            mention = _one_model(tags, row[0]) if len(row) == len(header) else None
            if mention and mention not in made:
                score = _table_score(text, tags, mention, row[0], row[column], header[column])
                if score is not None:
                    made[mention] = score
        if len(made) >= 2 and _a_reference_first(list(made.values())):
            return list(made.values())
    return []


def _a_reference_first(scores: list[Score]) -> bool:
    """Whether the table's first score can be the one the others are compared with: a model
    that scores zero is no reference ("| quantized onnx | 0 |" above the float model)."""
    return scores[0].value > 0


def _named_otherwise(reading, owner_end: int, score_start: int) -> bool:
    """Whether a word between the model's name and the number, just before the number, says
    it is no score (an error, a time, a size, a version: "欧氏误差约为 1.728", "hbrt 3.15"),
    with no measure and no other number after that word ("板端速度正常，精度 0.41" and
    "hbm 在 oe 3.0.22 上 0.62" are scores)."""
    named = reading.tags_in("not_score", max(owner_end, score_start - NAMED_WITHIN), score_start)
    if not named:
        return False
    after = reading.tags[named[-1]][1]
    return not reading.tags_in("measure", after, score_start) and \
        not any(c.isdigit() for c in reading.compact.text[after:score_start])


def _listed_after_no_score(reading) -> set[int]:
    """The score tags listed right after one that a word says is no score ("cos 0.9997 / 0.9995
    / 0.9998", "耗时 12.1、11.8、12.4 ms"): the rest of the list is the same kind of number."""
    out: set[int] = set()
    for run in _score_runs(reading):
        if len(run) > 1 and _named_otherwise(reading, 0, reading.tags[run[0]][0]):
            out.update(run[1:])
    return out


# what stands before a model whose score's share follows: "量化模型 75.9%，是浮点模型的 99.9%"
_SHARE_LEAD = re.compile(r"(?:是|为|达到了?|相当于|只有|仅为?|占)\s?$")


def _a_share(reading, owner: int, score_start: int) -> bool:
    """Whether the number is a share of the model's score, not its score ("是浮点模型的 99.9%")."""
    start, end = reading.tags[owner][:2]
    text = reading.compact.text
    return text[end:score_start].strip() == "的" and _SHARE_LEAD.search(text[max(0, start - 4):start]) is not None


# between a software's name and its version: "TensorFlow 2.9", "torch==1.13", "v" ("trt v8.6")
# (not a colon: "pytorch: 0.647" is a label and a score)
_VERSION_LEAD = re.compile(r"[\s=v]{1,3}")
SOFTWARE_NAME_WITHIN = 24  # characters before a number where a software's name is looked for


def _software_version(reading, score_start: int, value: float) -> bool:
    """Whether a software's name stands right before the number ("TensorFlow 2.9", "torch==1.13"):
    the number is its version. One below 1 or from 10 up is a version only after a name that is
    no model's ("onnx 0.645", "fake-quant torch 37.3" are scores; "CUDA 11.8" is a version)."""
    named = reading.tags_in("software", max(0, score_start - SOFTWARE_NAME_WITHIN), score_start)
    if not named:
        return False
    start, end = reading.tags[named[-1]][:2]
    if reading.compact.text[start - 1:start] == ".":  # a file's extension ("quantized_model.onnx 61.9")
        return False
    if a_models_score(reading, start, end, value):
        return False
    return _VERSION_LEAD.fullmatch(reading.compact.text[end:score_start]) is not None


def _owner_of(reading, mentions: list[int], starts: list[int], span: tuple[int, int], after: int) -> int | None:
    """The model a score belongs to: one named right after it with "for" / "with" / "using" /
    in parentheses, else the last one named before it, else one named right after it."""
    start, end = span
    owner = _named_after(reading, mentions, starts, end)
    if owner is None:
        owner = _owner(reading, mentions, starts, start, after)
    if owner is None:
        owner = _named_right_after(reading, mentions, starts, end)
    # (a model named after the score owns it in the score's sentence only: not the next row's)
    return owner if owner is None or reading.tag_clause[owner] == reading.clause_index(start) else None


# A score followed by the model it is for: "compared with 0.56 for the fp32 model", "from 0.65 (fp32) to 0.30 (int8)",
# "mAP 0.52 with the fp32 model and 0.12 with the int8 model", "47.1 mAP in FP32 PyTorch"
# (not "of": "75.9%, which is 99.9% of the float model" is a share of that model's score)
_FOR_MODEL = re.compile(r"\s?(?:for |with |using |in |\()(?P<article>(?:the |my |our |an? )?)")


def _named_after(reading, mentions: list[int], starts: list[int], score_end: int) -> int | None:
    """The model named right after a score (its measure may stand between) with "for", "with",
    "using", "in" or in parentheses (its name may hold the article)."""
    text = reading.compact.text
    found = _FOR_MODEL.match(text, _after_measure(reading, score_end))
    if found is None:
        return None
    for place in (found.start("article"), found.end()):
        owner = _starting_at(mentions, starts, place)
        if owner is not None:
            # (a model in parentheses with a number of its own is another model's score told
            # aside: "quantized.bc 0.098（qat.bc 0.097）")
            return None if found.group().strip() == "(" and _score_in_aside(reading, owner) else owner
    return None


def _score_in_aside(reading, name: int) -> bool:
    """Whether a score stands after the model's name (tag `name`) in the aside it stands in
    ("（qat.bc 0.097）"; not "(fp32 on x86)", whose digit is no score)."""
    opened = reading.aside[name]
    return opened >= 0 and bool(reading.tags_in("score", reading.tags[name][1], reading.aside_ends[opened]))


def _named_right_after(reading, mentions: list[int], starts: list[int], score_end: int) -> int | None:
    """The model named right after a score (its measure may stand between) where no model
    named before owns it: "I get 0.31 mAP on the board, compared with 0.52 for the float model"."""
    text = reading.compact.text
    place = _after_measure(reading, score_end)
    return _starting_at(mentions, starts, place + (text[place:place + 1] == " "))


def _after_measure(reading, score_end: int) -> int:
    """Where what follows a score starts, past its measure if one follows it ("47.1 mAP in ...")."""
    text = reading.compact.text
    place = score_end + (text[score_end:score_end + 1] == " ")
    measure = _starting_at(reading.by_class.get("measure", []), reading.class_starts.get("measure", []), place)
    return reading.tags[measure][1] if measure is not None else score_end


def _starting_at(tags: list[int], starts: list[int], place: int) -> int | None:
    """The tag (of one class: its indexes and their starts, in order) that starts at `place`."""
    at = bisect_left(starts, place)
    return tags[at] if at < len(starts) and starts[at] == place else None


def _owner(reading, mentions: list[int], starts: list[int], score_start: int, after: int) -> int | None:
    """The last model named before a score, in its sentence, after the previous score (`after`)
    and ending at most WINDOW characters before it (a long name counts from its end: "for post
    training quantized model we observed accuracy of 35-40%")."""
    at = bisect_right(starts, score_start) - 1
    while at >= 0 and (reading.tags[mentions[at]][1] > score_start  # (a name the score stands in)
                       or _in_aside_before(reading, mentions[at], score_start)):
        at -= 1
    if at < 0 or starts[at] < after or _apart(reading, reading.tags[mentions[at]][1], score_start) > WINDOW:
        return None
    if reading.clause_index(starts[at]) != reading.clause_index(score_start):
        return None
    if at > 0 and starts[at - 1] >= after and _BUILT_FROM.search(reading.compact.text, max(0, starts[at] - 32), starts[at]) \
            and reading.clause_index(starts[at - 1]) == reading.clause_index(score_start):
        return mentions[at - 1]  # the model a model was built from is not what gave the score
    return mentions[at]


def _apart(reading, name_end: int, score_start: int) -> int:
    """Characters between a model's name and its score, an aside between them not counted
    ("hbm on the board through our own app (nv12 camera input, ...), 1000 frames: 29.8")."""
    between = score_start - name_end
    for opened, closed in reading.aside_ends.items():
        if name_end <= opened and closed <= score_start:
            between -= closed - opened
    return between


def _in_aside_before(reading, tag: int, position: int) -> bool:
    """Whether the tag stands in an aside that closes before `position`: "qat.export.pt（qat.pt
    走完导出前那步改写得到的）评出来只剩 34.9" gives the score to the model the aside explains."""
    opened = reading.aside[tag]
    return opened >= 0 and reading.aside_ends[opened] <= position


# two models joined, then one score said of both: "qat.bc 的 mAP 和 qat.pt 一致都是 44.0"
_JOINER = re.compile(r"和|与|跟|\band\b|&")
# (said right before the score: "一致都是 44.0", "both get 76.1%"; not "都测了，int8 精度 60.2")
_BOTH = re.compile(r"(?:都是|都为|均为|均是|都在|都|both(?: get| got| have| reach| reached| at| are| score| scored)?)\s?$")


def _sharing(reading, mentions: list[int], starts: list[int], owner: int, score_start: int) -> int | None:
    """The model named and joined right before the owner when the score is said of both ("A 和 B
    一致都是 44.0", "A and B both get 76.1%"), else None."""
    at = bisect_left(starts, reading.tags[owner][0])  # (the owner's place among the mentions: no scan of them all)
    while mentions[at] != owner:  # (an empty carried term may start where it does)
        at += 1
    if at == 0:
        return None
    other, text = mentions[at - 1], reading.compact.text
    first_end, owner_start, owner_end = reading.tags[other][1], reading.tags[owner][0], reading.tags[owner][1]
    if reading.tags[other][3] == reading.tags[owner][3] or owner_start - first_end > 12 \
            or reading.clause_index(starts[at - 1]) != reading.clause_index(score_start):
        return None
    if not _JOINER.search(text, first_end, owner_start) or not _BOTH.search(text, max(owner_end, score_start - 12), score_start):
        return None
    return other


def _published(reading, score_start: int) -> bool:
    """Whether the sentence says, before the number, that someone else published it, with no
    other number between but those of one list with it ("the original paper reported an mIoU
    of 0.7081", "论文里的精度是 76%", "the paper reports 76.1% and 70.2% for ...")."""
    start = reading.clause_of(score_start).start
    said = [t for t in reading.tags_in("other_reference", start, score_start) if reading.tags[t][3] in ("published", "mentioned")]
    if not said:
        return False
    tag = reading.tags[said[-1]]
    if tag[3] == "mentioned" and reading.tags_in("mention", tag[1], score_start):
        return False  # the paper named, then the user's own model with its score ("按论文里的预处理，float 模型 0.75")
    between = reading.tags_in("score", tag[1], score_start)
    ends = [reading.tags[t][1] for t in between]
    starts = [reading.tags[t][0] for t in between[1:]] + [score_start]
    return all(_JOINED.fullmatch(reading.compact.text[end:begin]) for end, begin in zip(ends, starts))


# "The INT8 engine built from the QDQ ONNX gives mAP 0.21": the score is the engine's
_BUILT_FROM = re.compile(r"(?:built|converted|exported|compiled)(?: with [\w.-]+)? from "
                         r"(?:the |my |our |that |this |an? )?$")


_RANGE = re.compile(r"\s?%?\s?[-~]\s?")


def _number(words: str) -> tuple[float | None, bool]:
    """The value of a score as written: "90.5%", "0.647", a range by its middle ("35-40%")."""
    percent = words.rstrip().endswith("%")
    try:
        ends = [float(end) for end in _RANGE.split(words.rstrip("% ").strip())]
    except ValueError:
        return None, percent
    return sum(ends) / len(ends), percent
