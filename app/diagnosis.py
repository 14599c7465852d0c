"""The diagnosis pipeline: probes → facts → rule engine → verdict."""

from __future__ import annotations

import gc
from dataclasses import dataclass, field
from functools import cached_property, lru_cache, wraps
from pathlib import Path
from typing import Any, Callable, TypeVar

from j6doctor.engine import Fact, RuleBase, RuleBaseError, RuleBaseErrors, RunResult
from j6doctor.engine.errors import VocabularyError
from j6doctor.engine.backends import resolve as resolve_engine
from j6doctor.evidence import EvidenceOptions, collect
from j6doctor.facts import pack_vocabulary_files, using, with_packs
from j6doctor.probes.case_file import Case, case_from_data, read_case
from j6doctor.rules import BUNDLED_RULES_DIR
from j6doctor.verdict import build_verdict
from j6doctor.verdict_model import Verdict


@dataclass
class Diagnosis:
    """One diagnosis: its inputs, the facts, the rule run and the verdict built from it."""

    case: Case | None
    title: str  # what was diagnosed: the case file's name, or the work folder
    facts: list[Fact]
    run: RunResult
    rulebase: RuleBase
    verdict: Verdict
    command_args: str = ""  # how to name the same inputs on a command line, for hints
    readings: list = field(default_factory=list)  # the probes' tables and summaries, for the report (probe_output.Reading)
    read_paths: list[Path] = field(default_factory=list)  # every file the run read
    similar: list[dict] = field(default_factory=list)  # stored past cases like this one (store/keep.py)

    @cached_property
    def verdict_json(self) -> dict:
        """The public JSON verdict (docs/CONTRACT.md)."""
        return self.verdict.to_json()


def pack_vocabulary(packs: list[Path], display: dict[Path, str]):
    """The bundled vocabulary with the packs' additions (facts.with_packs), and the case keys
    a pack declares checked against those the case reader reads by code (VocabularyError)."""
    vocab = with_packs(packs, display)
    if packs:
        from j6doctor.probes.case_file import case_schema

        with using(vocab):
            try:
                case_schema()
            except VocabularyError as exc:  # a pack's case key that the case reader reads already
                files = [f"{display.get(f.parent, str(f.parent))}/{f.name}" for f in pack_vocabulary_files(packs)]
                raise VocabularyError(f"{files[0] if len(files) == 1 else 'a rule pack vocabulary.yaml'}: {exc}") \
                    from None
    return vocab


@lru_cache(maxsize=8)
def _rulebase(extra: tuple[tuple[Path, str], ...], engine: str) -> RuleBase:
    """`extra`: (folder, shown as) of each pack; a single rule file has "" (it is shown by the
    path given, and has no vocabulary.yaml of its own)."""
    directories = [BUNDLED_RULES_DIR, *(path for path, _ in extra)]
    display = {BUNDLED_RULES_DIR: "rules", **{path: shown for path, shown in extra if shown}}
    try:
        vocab = pack_vocabulary([path for path, shown in extra if shown], display)
    except (OSError, VocabularyError) as exc:
        raise RuleBaseErrors([RuleBaseError(str(exc), hint="a pack's vocabulary.yaml adds enum values, "
                                            "attributes and fact types (docs/AUTHORING.md)")]) from None
    rulebase = RuleBase.load(directories, vocab, display, engine)
    # The rule base lives as long as the process (it is cached here): its objects, and the
    # modules loaded with it, go to the permanent generation, so that the collector does not
    # walk them again on every full collection of every diagnosis (nor copy their pages in
    # the forked engine worker). The gc module's own advice for long-lived objects.
    gc.freeze()
    return rulebase


T = TypeVar("T")


def is_ptq(diagnosis: Diagnosis) -> bool:
    """Whether the case's flow is PTQ (its artifacts are then named as PTQ users name them)."""
    flow = diagnosis.verdict.flow
    return flow is not None and flow.flow == "ptq"


def in_its_words(render: Callable[..., T]) -> Callable[..., T]:
    """A renderer (or reader) of a Diagnosis, run in the vocabulary of the rule base that made
    it (a pack's stages and labels too), whichever rule base was loaded last."""
    @wraps(render)
    def rendered(diagnosis: Diagnosis, *args: Any, **kwargs: Any) -> T:
        with using(diagnosis.rulebase.vocab):
            return render(diagnosis, *args, **kwargs)
    return rendered


def load_rulebase(extra_rule_dirs: list[Path] | tuple[Path, ...] = (), engine: str | None = None) -> RuleBase:
    """The bundled rule base plus rule packs (a later pack overrides rules by id), compiled
    for `engine` (None: the default, see engine/backends.py). Pack files are shown by the
    folder name the user gave, so reports do not depend on cwd. A pack may also be one rule
    file (`rules test FILE`), shown by the path given."""
    extra = tuple((Path(p).resolve(), Path(p).as_posix().rstrip("/")) if Path(p).is_dir() else (Path(p), "")
                  for p in extra_rule_dirs)
    return _rulebase(extra, resolve_engine(engine))


def diagnose(case: Case | None, rulebase: RuleBase | None = None,
             options: EvidenceOptions | None = None) -> Diagnosis:
    rulebase = rulebase or load_rulebase()
    options = options or EvidenceOptions()
    rulebase.warm_up()
    with using(rulebase.vocab):
        return _diagnosis(case, rulebase, options)


def _diagnosis(case: Case | None, rulebase: RuleBase, options: EvidenceOptions) -> Diagnosis:
    evidence = collect(case, options)
    result = rulebase.run(evidence.facts, read_as=evidence.read_as)
    if case is not None:
        title = case.display
    elif options.workdirs:
        title = "工作目录 " + ", ".join(p.name or str(p) for p in options.workdirs)
    elif options.metrics is not None:
        title = f"评测结果 {options.metrics.name}"
    else:
        title = "（无输入）"
    args = [case.display] if case is not None else []
    args += [f"--workdir {p.name or p}" for p in options.workdirs]
    args += [f"--metrics {options.metrics.name}"] if options.metrics is not None else []
    return Diagnosis(case, title, evidence.facts, result, rulebase, build_verdict(result, rulebase),
                     " ".join(args), evidence.readings, evidence.read_paths)


def diagnose_arguments(case: Path | None, workdirs: list[Path] | tuple[Path, ...], rulebase: RuleBase,
                       options: EvidenceOptions, empty_case: Path | None = None, stdin=None) -> Diagnosis:
    """The diagnosis of what a command line names: a case file, or "-" for the bytes of
    `stdin`; or `empty_case`, a case file not written yet (`ask`), diagnosed as empty; and
    work folders. Raises InputError naming what cannot be read."""
    with using(rulebase.vocab):  # the case is read in the rule base's words (a pack's platforms)
        return _diagnose_named(case, workdirs, rulebase, options, empty_case, stdin)


def _diagnose_named(case, workdirs, rulebase: RuleBase, options: EvidenceOptions, empty_case, stdin) -> Diagnosis:
    from j6doctor.probes.artifacts import require_folder
    from j6doctor.probes.case_file import case_from_bytes

    options.workdirs = [require_folder(w) for w in workdirs]
    if case is not None and str(case) == "-":
        loaded = case_from_bytes(stdin.read() if stdin is not None else b"", "<stdin>", Path.cwd())
    elif case is not None:
        loaded = read_case(case)
    elif empty_case is not None:
        loaded = case_from_data({}, str(empty_case), empty_case.parent)
    else:
        loaded = None
    return diagnose(loaded, rulebase, options)


def diagnose_file(path: Path, rulebase: RuleBase | None = None,
                  options: EvidenceOptions | None = None) -> Diagnosis:
    rulebase = rulebase or load_rulebase()
    with using(rulebase.vocab):
        return diagnose(read_case(path), rulebase, options or EvidenceOptions(use_environment=False))


def diagnose_data(data: dict, rulebase: RuleBase | None = None, display: str = "<example>",
                  base: Path | None = None, options: EvidenceOptions | None = None) -> Diagnosis:
    """Diagnose a case given as data (tests, rule examples). The environment is not read:
    the answer must depend on the data alone."""
    rulebase = rulebase or load_rulebase()
    with using(rulebase.vocab):
        return diagnose(case_from_data(data, display, base), rulebase,
                        options or EvidenceOptions(use_environment=False))
