"""Text tests that decide how much of a file is looked at: a rule's triggers (which rules a
file needs, and whether it is parsed at all) answer as one regex over all of them would; a
trigger that only a comment names parses nothing, and comments are found where Python's
tokenizer finds them; and the loader facts' rank prefilter answers as its case-blind regex
would."""

from __future__ import annotations

import ast
import io
import re
import sys
import tokenize
import types
from pathlib import Path
from typing import Any

import pytest

from repro_lint import file_pass, loaders
from repro_lint.config import Config
from repro_lint.diagnostics import FileResult
from repro_lint.engine import lint_text
from repro_lint.file_pass import triggered
from repro_lint.rule import Rule
from repro_lint.settings import Settings
from repro_lint.summary_format import DEFERRED


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


# -- comments -----------------------------------------------------------------------------------

# Where a scan for strings and comments could go wrong: a hash or a quote inside a string of
# each kind, escapes (in raw strings too), strings continued over lines, f-strings, noqa.
_TRICKY = [
    "x = 1  # a comment\n",
    "x = '#not a comment'  # but this is\n",
    'x = "a # b" + "c"  # d\n',
    "x = '''\n# inside\n'''  # after\n",
    'x = """it\'s "quoted" # still inside"""\n# outside\n',
    "x = 'it\\'s # inside'  # out\n",
    'x = r"\\"# inside"  # out\n',
    "x = rb'\\\\'  # after two backslashes\n",
    "x = 'a\\\nb # inside'  # continued\n",
    "x = f'{y!r:>{w}} # inside'  # out\n",
    "x = f\"{d['k']} # in\"  # out\n",
    "x = ''  # empty\ny = ''''''  # empty triple\n",
    "x = '''a''' '# b'  # c\n",
    'x = """a\\"""" # b"""  # c\n',
    "def f():\n    '''doc # not'''\n    return 1  # save\n",
    "x = 1  # noqa: RPL201\ny = 2  # NOQA\nz = 3  # plain\n",
    "x = [\n    1,  # one\n    2,  # two\n]\n",
    "x = 1 \\\n    + 2  # joined\n",
    "# only a comment",
    "x = 'a'\r\ny = 2  # crlf\r\n",
    "s = '\u00e9t\u00e9'  # \u00e9 comment after non-ASCII\n",
]


def _tokenized_comments(text: str) -> list[tuple[int, int]]:
    return [
        token.start
        for token in tokenize.generate_tokens(io.StringIO(text).readline)
        if token.type == tokenize.COMMENT and "noqa" not in token.string.lower()
    ]


@pytest.fixture(params=["scan", "tokenize"])
def comments_by(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each way ``_comments`` finds comments: the scan (Python up to 3.11) and ``tokenize``
    (from 3.12), the latter here taken on whichever Python runs the tests."""
    if request.param == "tokenize":
        monkeypatch.setattr(file_pass, "sys", types.SimpleNamespace(version_info=(3, 12)))
    return str(request.param)


@pytest.mark.parametrize("text", _TRICKY)
def test_comments_are_found_where_pythons_tokenizer_finds_them(text: str, comments_by: str) -> None:
    ast.parse(text)  # the gate asks only about texts that parse
    assert file_pass._comments(text) == _tokenized_comments(text)


# f-strings that hold their own quotes (Python 3.12 on, PEP 701), where a scan for strings would
# go wrong, and where their comments are: (row, column), as written here by hand.
_OWN_QUOTES = [
    ('x = f"{d["k"]} # in"  # out\n', [(1, 22)]),
    ('y = f"{"#"}"  # after\n', [(1, 14)]),
    ('z = f"{\n    a  # inside the field\n}"  # end\n', [(2, 7), (3, 4)]),
    ("w = f'{'a' + f'{'#'}'}' # nested\n", [(1, 24)]),
]


@pytest.mark.skipif(sys.version_info < (3, 12), reason="f-strings hold their quotes from 3.12")
@pytest.mark.parametrize(("text", "comments"), _OWN_QUOTES)
def test_comments_are_found_in_f_strings_that_hold_their_own_quotes(
    text: str, comments: list[tuple[int, int]]
) -> None:
    ast.parse(text)
    assert file_pass._comments(text) == comments


def test_the_tokenizer_failing_leaves_the_comments_unknown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(file_pass, "sys", types.SimpleNamespace(version_info=(3, 12)))
    assert file_pass._comments("x = 1  # a\ny = " + "'" * 3 + "never closed\n") == []
    assert file_pass._comments("x = (1,  # a\n") == []


def test_comments_are_found_in_our_own_sources_as_the_tokenizer_finds_them(
    comments_by: str,
) -> None:
    root = Path(file_pass.__file__).parent.parent
    paths = sorted(
        [*root.joinpath("repro_lint").rglob("*.py"), *root.joinpath("tests").rglob("*.py")]
    )
    assert len(paths) > 100
    for path in paths:
        text = path.read_text(encoding="utf-8")
        try:
            ast.parse(text)
        except SyntaxError:
            continue  # a fixture that does not parse: the gate never asks about one
        assert file_pass._comments(text) == _tokenized_comments(text), path


def test_a_lone_carriage_return_leaves_the_comments_unknown(comments_by: str) -> None:
    assert file_pass._comments("x = 1  # a\ry = 2  # b\n") == []


class _Parses:
    """``tree_pass.lint_parsed`` that notes which files reach it."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from repro_lint import tree_pass

        self.names: list[str] = []
        real = tree_pass.lint_parsed

        def noted(text: str, filename: str, *args: Any, **kwargs: Any) -> FileResult:
            self.names.append(filename)
            return real(text, filename, *args, **kwargs)

        monkeypatch.setattr(tree_pass, "lint_parsed", noted)


def test_a_file_whose_triggers_sit_only_in_comments_is_not_parsed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parses = _Parses(monkeypatch)
    settings = Settings.from_config(Config())
    commented = (
        "import torch\n\n"
        "# save the model later; this would be faster, but varies:\n"
        "# torch.backends.cudnn.benchmark = True\n"
        "x = torch.zeros(3)  # pad, gather and scatter are not called here\n"
    )
    result = file_pass.lint_one(commented, "commented.py", settings)
    assert parses.names == []
    assert result.diagnostics == ()
    assert result.summary == dict(DEFERRED)
    code = commented.replace("# torch.backends", "torch.backends")
    found = file_pass.lint_one(code, "code.py", settings)
    assert parses.names == ["code.py"]
    assert [d.code for d in found.diagnostics] == ["RPL201"]


def test_a_noqa_comment_still_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    parses = _Parses(monkeypatch)
    settings = Settings.from_config(Config(extend_select=("RPL901",)))
    text = "import torch\nx = torch.zeros(3)  # noqa: RPL201\n"
    result = file_pass.lint_one(text, "stale.py", settings)
    assert parses.names == ["stale.py"]
    assert [d.code for d in result.diagnostics] == ["RPL901"]


def test_a_hash_in_a_string_is_not_a_comment(monkeypatch: pytest.MonkeyPatch) -> None:
    parses = _Parses(monkeypatch)
    settings = Settings.from_config(Config())
    text = (
        "import os\nimport torch\n"
        "x = '#'; torch.backends.cudnn.benchmark = True  # the line goes on after a hash\n"
    )
    result = file_pass.lint_one(text, "hash.py", settings)
    assert parses.names == ["hash.py"]
    assert [d.code for d in result.diagnostics] == ["RPL201"]


@pytest.mark.parametrize("rule", Settings.from_config(Config()).rules, ids=lambda rule: rule.CODE)
def test_every_example_gets_the_same_findings_with_its_triggers_in_comments(
    rule: type[Rule], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each rule's examples, with a comment naming every rule's triggers before each line:
    the findings are those of the same text with the comment gate off."""
    settings = Settings.from_config(Config(extend_select=("RPL901", "RPL207")))
    words = " ".join(word for other in settings.rules for word in other.TRIGGERS)
    examples = [
        example if isinstance(example, str) else example.code
        for example in (*rule.VALID, *rule.INVALID)
    ]
    gated = []
    for code in examples:
        text = "".join(f"# {words}\n{line}" for line in code.splitlines(keepends=True))
        gated.append(lint_text(text, "example.py", settings).diagnostics)
    monkeypatch.setattr(file_pass, "comments_gated", lambda *args: None)
    for code, found in zip(examples, gated, strict=True):
        text = "".join(f"# {words}\n{line}" for line in code.splitlines(keepends=True))
        assert lint_text(text, "example.py", settings).diagnostics == found
