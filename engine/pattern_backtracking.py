"""Which text patterns can backtrack catastrophically: a repeated group whose body repeats too.

Python's regular expressions backtrack. A group that is repeated without bound and holds a
part that is itself repeated without bound (`(x+x+)+y`, `(\\w+\\s?)*:`) can split a run of
text between the inner and the outer repetition in exponentially many ways; when the rest
of the pattern then fails, every way is tried, and one clause of a post takes minutes. Such
a rule is flagged by `rules lint` and named when the engine runs out of time.

The check reads the pattern's text: escapes and character classes are skipped, groups are
tracked with a stack. A group whose body holds a literal that is not repeated (`(?:\\.\\d+)+`
in a version number, `(?:\\s*,\\s*\\d+)*` in a list) is delimited: each repetition must
consume its literal, so a run splits one way only, and it is not flagged. The check flags the
nesting, not every pattern that could be slow (`(a+a)*`, an alternation whose branches overlap,
`(a|a)*`, are not seen).
"""

from __future__ import annotations

from j6doctor.engine.rule_model import Rule

def _unbounded_at(pattern: str, index: int) -> bool:
    """Whether an unbounded repetition starts at `index`: `*`, `+` or `{n,}`."""
    if index >= len(pattern):
        return False
    if pattern[index] in "*+":
        return True
    if pattern[index] == "{":
        close = pattern.find("}", index)
        body = pattern[index + 1:close] if close > 0 else ""
        return body.endswith(",") and body[:-1].isdigit()
    return False


def _class_end(pattern: str, index: int) -> int:
    """The index after the character class that opens at `index` (`[...]`)."""
    i = index + 1
    if i < len(pattern) and pattern[i] == "^":
        i += 1
    if i < len(pattern) and pattern[i] == "]":  # a leading ] is a member
        i += 1
    while i < len(pattern) and pattern[i] != "]":
        i += 2 if pattern[i] == "\\" else 1
    return i + 1


_SPECIAL = set(".^$|?*+{}()[]")
_CLASS_ESCAPES = set("dDwWsSbBAZ")


class _Group:
    """What is known of an open group's body so far."""

    __slots__ = ("repeats", "delimited")

    def __init__(self):
        self.repeats = False  # holds an unbounded repetition
        self.delimited = False  # holds a literal that is not repeated


def _atom_end(pattern: str, i: int) -> tuple[int, bool]:
    """(index after the atom at i, whether it is a literal character) for an escape, a
    character class or a plain character."""
    char = pattern[i]
    if char == "\\":
        escaped = pattern[i + 1:i + 2]
        return i + 2, bool(escaped) and escaped not in _CLASS_ESCAPES and not escaped.isdigit()
    if char == "[":
        return _class_end(pattern, i), False
    return i + 1, char not in _SPECIAL


def _quantified(pattern: str, index: int) -> bool:
    """Whether any repetition (`?`, `*`, `+`, `{...}`) follows at `index`."""
    return index < len(pattern) and pattern[index] in "?*+{"


def _group_body(pattern: str, index: int) -> int:
    """The index where the body of the group opening at `index` starts: after `(`, `(?:`,
    `(?=`, `(?!`, `(?<=`, `(?<!`, `(?P<name>` or `(?flags:`."""
    i = index + 1
    if not pattern.startswith("?", i):
        return i
    if pattern.startswith("?P<", i):
        return pattern.find(">", i) + 1 or len(pattern)
    for prefix in ("?<=", "?<!", "?:", "?=", "?!", "?>"):
        if pattern.startswith(prefix, i):
            return i + len(prefix)
    ends = [e for e in (pattern.find(":", i), pattern.find(")", i)) if e >= 0]
    return min(ends) + (pattern[min(ends)] == ":") if ends else len(pattern)


def nested_repetition(pattern: str) -> bool:
    """Whether the pattern repeats, without bound, an undelimited group that holds an
    unbounded repetition."""
    stack: list[_Group] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "(":
            stack.append(_Group())
            i = _group_body(pattern, i)
        elif char == ")" and stack:
            group = stack.pop()
            i += 1
            risky = group.repeats and not group.delimited
            if risky and _unbounded_at(pattern, i):
                return True
            if stack and (risky or _unbounded_at(pattern, i)):
                stack[-1].repeats = True
        elif char in _SPECIAL and char != "[":  # an operator; a class is an atom
            i += 1
        else:
            i, literal = _atom_end(pattern, i)
            if stack and _unbounded_at(pattern, i):
                stack[-1].repeats = True
            elif stack and literal and not _quantified(pattern, i):
                stack[-1].delimited = True
    return False


def backtracking_rules(rules: list[Rule]) -> list[tuple[Rule, str]]:
    """(rule, pattern) for each text rule with a pattern that nests unbounded repetitions."""
    found = []
    for rule in rules:
        if rule.text is None:
            continue
        for pattern in (*rule.text.match, *rule.text.unless):
            if nested_repetition(pattern):
                found.append((rule, pattern))
                break
    return found
