"""Text tests that decide how much of a file is looked at: a rule's triggers (which rules a
file needs, and whether it is parsed at all) answer as one regex over all of them would, and
the loader facts' rank prefilter as its case-blind regex would."""

from __future__ import annotations

import re

import pytest

from repro_lint import file_pass, loaders
from repro_lint.config import Config
from repro_lint.file_pass import triggered
from repro_lint.rule import Rule
from repro_lint.settings import Settings


def expected(triggers: tuple[str, ...], whole: bool, text: str) -> bool:
    if whole:
        return any(re.search(rf"\b{re.escape(word)}\b", text) for word in triggers)
    return any(word in text for word in triggers)


def texts_around(word: str) -> list[str]:
    return [
        word,
        f"x = {word}(1)\n",
        f"x{word}\n",
        f"{word}_y\n",
        f"# {word}\n",
        f"'{word}'",
        f"a.{word}.b",
        word[:-1],
        "nothing here\n",
    ]


def rule_with(triggers: tuple[str, ...], whole: bool) -> type[Rule]:
    """A stand-in rule: the two attributes ``triggered`` reads."""
    made: type[Rule] = type("Triggered", (), {"TRIGGERS": triggers, "TRIGGER_WORDS": whole})
    return made


@pytest.mark.parametrize("rule", Settings.from_config(Config()).rules, ids=lambda rule: rule.CODE)
def test_every_rule_answers_as_one_regex_of_its_triggers(rule: type[Rule]) -> None:
    triggers = tuple(rule.TRIGGERS)
    if not triggers:
        assert triggered(rule, "")
        return
    for word in triggers:
        for text in texts_around(word):
            assert triggered(rule, text) == expected(triggers, rule.TRIGGER_WORDS, text), text


@pytest.mark.parametrize("count", [1, 3, file_pass._FEW_TRIGGERS, file_pass._FEW_TRIGGERS + 5])
@pytest.mark.parametrize("whole", [False, True])
def test_few_and_many_triggers_as_words_or_substrings(count: int, whole: bool) -> None:
    triggers = tuple(f"put{index}" if index else "put" for index in range(count))
    rule = rule_with(triggers, whole)
    for text in ["input", "put", "output = put(x)", "put_", "putput", "x.put3", "puts", "p"]:
        assert triggered(rule, text) == expected(triggers, whole, text), text


def test_rules_with_the_same_many_triggers_share_a_search_but_never_an_answer() -> None:
    triggers = tuple(f"kernel{index}" for index in range(file_pass._FEW_TRIGGERS + 3))
    first, second = rule_with(triggers, True), rule_with(triggers, True)
    mentions = "y = kernel7(x)\n"
    silent = "y = kernel77(x)\n"
    for _ in range(3):
        for text in (mentions, silent, "".join(["y = kernel7", "(x)\n"]), silent[:]):
            want = expected(triggers, True, text)
            assert triggered(first, text) == want
            assert triggered(second, text) == want


@pytest.mark.parametrize(
    "text",
    [
        "rank = 0",
        "LOCAL_RANK",
        "accelerator.Process_Index",
        "ran\u212a",
        "proce\u017f\u017f_index",
        "no such word",
        "# r\u00e4nk",
        "prank",
        "",
        "process index",
    ],
)
def test_a_module_that_may_involve_the_rank_is_told_by_its_text_as_by_a_case_blind_regex(
    text: str,
) -> None:
    """The loader facts skip rank checks in a module whose text never says rank (ASCII text
    is lowered and searched; other text through the case-blind regex, which folds the
    Kelvin sign and the long s as well)."""
    assert loaders._says_rank(text) == (loaders._RANK_TEXT.search(text) is not None)
