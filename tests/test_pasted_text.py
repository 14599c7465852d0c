"""What a pasted post names outright (probes/pasted_text.py): platforms and printed versions,
read from the first MAX_TEXT_READ characters of a text, as the text rules read it."""

from __future__ import annotations

import pytest

from j6doctor.engine.text_rules import MAX_TEXT_READ
from j6doctor.probes.pasted_text import platforms_named, versions_printed

LOG = "[HBRT] set log level as 0. version = 3.15.54.0\n[UCP]: UCP version = 3.7.4\n"
FILLER = "the boxes on the board are shifted and the scores are low after conversion. "


def test_runtime_versions_and_the_board_are_read_from_a_pasted_log():
    text = "RDK X5 板端输出：\n" + LOG
    assert [(package, version) for package, _, version in versions_printed(text)][:1] == [("hbrt", "3.15.54.0")]
    assert [family for family, _ in platforms_named(text)] == ["X5"]


def test_what_lies_past_the_read_limit_is_not_searched():
    before = FILLER * (MAX_TEXT_READ // len(FILLER) - 10)
    assert versions_printed(before + LOG) and platforms_named(before + "RDK X5")
    after = FILLER * (MAX_TEXT_READ // len(FILLER) + 10)
    assert versions_printed(after + LOG) == [] and platforms_named(after + "RDK X5") == []


def test_a_count_after_a_list_is_no_board():
    assert platforms_named("fixed output order [cls, box] x3, decoded by the runtime") == []
    assert platforms_named("outputs (cls, box) x3") == []
    assert [family for family, _ in platforms_named("deployed on the RDK X3 board")] == ["X3"]


def test_a_board_names_the_platform_and_a_march_beside_it_is_the_compiled_one():
    assert platforms_named("S100P 板子，hb_compile 的 march 用的 nash-e，板端精度掉很多") == [("J6M", "S100P")]
    assert platforms_named("RDK X3 上跑 --march bayes-e 编出来的模型") == [("X3", "RDK X3")]
    # a march alone names the platform; two J6 variants together, the family
    assert platforms_named("nash-e 上板精度掉了") == [("J6E", "nash-e")]
    assert [family for family, _ in platforms_named("J6E 和 J6M 都试了")] == ["J6"]


def test_a_board_named_as_where_code_came_from_is_not_the_platform():
    assert platforms_named("S100 上做 QAT，set_march 还是之前 J5 项目留下来的 March.BAYES") == [("J6E", "S100")]
    assert platforms_named("J6E detection model; the script was ported from our X5 code base") == [("J6E", "J6E")]
    assert [family for family, _ in platforms_named("J6E 和 X5 上都跑过")] == ["J6E", "X5"]


def test_a_board_the_model_is_moved_away_from_is_not_the_platform():
    assert [f for f, _ in platforms_named("We ported our detector from J5 to J6E last month")] == ["J6E"]
    assert [f for f, _ in platforms_named("从 J5 迁移到 J6E 之后精度掉了")] == ["J6E"]
    assert [f for f, _ in platforms_named("moving from RDK X5 -> S100")] == ["J6E"]


@pytest.mark.parametrize("text, expected", [
    # the mark that ends the sentence before is not part of the package's name
    ("J6E 模型量化完精度掉了十几个点\n请问一般从哪里开始查？plugin 3.0.x 的版本，急", [("horizon-plugin-pytorch", "3.0")]),
    ("what should I check first? hbdk4 4.4.2, plugin 3.1.2", [("hbdk4-compiler", "4.4.2"), ("horizon-plugin-pytorch", "3.1.2")]),
])
def test_a_package_named_right_after_a_question_mark(text, expected):
    assert [(package, version) for package, _, version in versions_printed(text)] == expected
