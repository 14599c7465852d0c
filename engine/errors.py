"""Errors the engine raises. Each carries where the problem is, so the CLI can print
`file:line: rule <id>: field: message` and a hint instead of a traceback."""

from __future__ import annotations


class EngineError(Exception):
    """Base class of every error the engine reports to a user."""


class VocabularyError(EngineError):
    """The fact vocabulary, or a fact checked against it, is invalid."""


class RuleBaseError(EngineError):
    """A rule file or a rule is invalid, or the rule base cannot be run safely."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        rule_id: str | None = None,
        field: str | None = None,
        hint: str | None = None,
    ):
        self.message = message
        self.file = file
        self.line = line
        self.rule_id = rule_id
        self.field = field
        self.hint = hint
        super().__init__(self.render())

    def render(self) -> str:
        where = ""
        if self.file:
            where = self.file + (f":{self.line}" if self.line else "")
        # an id as written may hold a line break (refused as an id): shown escaped, on one line
        shown_id = self.rule_id if self.rule_id is None or self.rule_id.isprintable() else repr(self.rule_id)
        parts = [p for p in (where, f"rule {shown_id}" if self.rule_id else "", self.field or "") if p]
        text = ": ".join(parts + [self.message])
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


class RuleBaseErrors(EngineError):
    """Several rule-base problems found in one pass (reported together)."""

    def __init__(self, errors: list[RuleBaseError]):
        self.errors = errors
        # never a blank message after "the rule base is invalid:"
        super().__init__("\n".join(e.render() for e in errors).strip()
                         or "no problem was named (a defect of j6doctor: please report it)")

    def __reduce__(self):  # rebuilt from its errors (a process pool sends it back pickled)
        return type(self), (self.errors,)


class EngineRunError(EngineError):
    """The rule engine failed while running a diagnosis."""
