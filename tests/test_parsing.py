"""A large file is parsed in pieces (Python's parse and libcst's), and the result is what one
parse of the whole file gives: the same libcst tree, the same docstrings, the same errors."""

from __future__ import annotations

import ast
from typing import Any

import libcst as cst
import pytest

from repro_lint import cst_parse, parsing
from repro_lint.config import Config
from repro_lint.file_pass import lint_one
from repro_lint.settings import Settings
from repro_lint.source import SourceError

# Top-level statements of every kind a boundary can fall next to, each one a few hundred
# characters once repeated, so that a small PIECE cuts between many of them.
BLOCKS = [
    '"""Module docstring: only the first statement of the file is one."""\n',
    "import torch\nfrom torch import nn\n",
    "@decorator\n# between the decorator and the definition\ndef f{n}(x, *args, **kw):\n"
    '    """Docstring of f{n}."""\n    return torch.index_add(x, 0, x, x)  # trailing\n',
    "class C{n}(nn.Module):\n    '''Class docstring.'''\n\n    def forward(self, x):\n"
    "        if x:\n            y = 1\n        else:\n            y = 2\n        return y\n"
    "    # a comment the class's block owns\n",
    "TEXT{n} = '''\nnot code, then a blank line\n\nname_at_column_zero = 1\n'''\n",
    "TABLE{n} = [\n    1,\n\n    2,\n]\n",
    "# a comment before a statement\nvalue{n} = call(\n    1,\n)\n",
    "try:\n    import fast\nexcept ImportError:\n    fast = None\nfinally:\n    pass\n",
    "if value{n}:\n    pass\n\nelif other:\n    pass\n",
    '"""a string statement in the middle: no docstring"""\n',
    "with open(name) as handle:\n    data = handle.read()\n",
]


def _text(count: int, separators: tuple[str, ...] = ("\n", "\n\n", "\n\n\n", "")) -> str:
    parts = []
    for n in range(count):
        block = BLOCKS[n % len(BLOCKS)].replace("{n}", str(n))
        parts.append(block + separators[n % len(separators)])
    return "".join(parts)


def _assert_same_as_whole(text: str) -> parsing.Checked:
    checked = parsing.check(text)
    assert isinstance(checked, parsing.Checked)
    whole = ast.parse(text)
    assert sorted(checked.docstrings) == sorted(parsing.docstrings(whole))
    module = cst_parse.parse_module(text, checked.cuts)
    assert module.deep_equals(cst.parse_module(text))
    assert module.code == text
    return checked


@pytest.fixture
def small_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parsing, "PIECE", 512)


@pytest.mark.usefixtures("small_pieces")
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_pieces_give_the_tree_and_docstrings_of_one_parse(newline: str) -> None:
    text = _text(120).replace("\n", newline)
    checked = _assert_same_as_whole(text)
    assert len(checked.cuts) > 10
    # Every piece but the first starts with a statement in the first column, after the empty
    # lines that a whole parse gives to that statement.
    for cut in checked.cuts:
        assert text[cut - 1] == "\n"
        assert text[cut:].lstrip("\r\n")[0] in "@_" or text[cut:].lstrip("\r\n")[0].isalpha()


@pytest.mark.usefixtures("small_pieces")
def test_a_boundary_inside_a_string_is_never_kept() -> None:
    # Lines in the first column after a blank line, inside a string longer than a piece.
    inside = "".join(f"line {n}\n\nname_{n} = {n}\n" for n in range(200))
    text = _text(30) + f'BIG = """\n{inside}"""\n' + _text(30)
    checked = _assert_same_as_whole(text)
    start = text.index('BIG = """')
    end = text.index('"""\n', start + 9)
    assert not [cut for cut in checked.cuts if start < cut <= end]


@pytest.mark.usefixtures("small_pieces")
def test_mixed_indentation_falls_back_to_one_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    # libcst records a block's indentation relative to the module's default: pieces that
    # would see different defaults are parsed as one text.
    spaces = "".join(f"def s{n}():\n    return {n}\n\n" for n in range(60))
    tabs = "".join(f"def t{n}():\n\treturn {n}\n\n" for n in range(60))
    real = cst.parse_module
    whole: list[str] = []

    def spy(source: str) -> cst.Module:
        whole.append(source)
        return real(source)

    monkeypatch.setattr(cst, "parse_module", spy)
    for text in (spaces + tabs, tabs + "x = 1\n" * 300 + spaces):
        checked = _assert_same_as_whole(text)
        assert checked.cuts
        assert whole.count(text) == 2  # the fallback, and the reference in the assertion
    # A piece without any block says nothing about the default: no fallback for it.
    text = tabs + "x = 1\n" * 300 + tabs
    _assert_same_as_whole(text)
    assert whole.count(text) == 1


@pytest.mark.usefixtures("small_pieces")
@pytest.mark.parametrize("broken", ["def broken(:\n    pass\n", "x = (1,\n", "else:\n    pass\n"])
def test_a_syntax_error_is_reported_as_one_parse_reports_it(broken: str) -> None:
    text = _text(60) + broken + _text(60)
    checked = parsing.check(text)
    assert isinstance(checked, SourceError)
    with pytest.raises(SyntaxError) as raised:
        ast.parse(text)
    assert checked.message == f"SyntaxError: {raised.value.msg}"
    assert (checked.row, checked.column) == (raised.value.lineno, raised.value.offset)


def test_a_small_file_is_parsed_whole() -> None:
    text = _text(40)
    assert len(text) <= 2 * parsing.PIECE
    checked = parsing.check(text)
    assert isinstance(checked, parsing.Checked)
    assert checked.cuts == []


def test_the_per_file_pass_parses_a_large_file_in_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither parser ever sees the whole of a large file, and the findings are those of a
    whole parse."""
    text = _text(200)
    settings = Settings.from_config(Config())
    whole = lint_one(text, "big.py", settings)
    monkeypatch.setattr(parsing, "PIECE", 512)
    seen: list[int] = []
    real_cst, real_ast = cst.parse_module, ast.parse

    def cst_parse(source: str) -> cst.Module:
        seen.append(len(source))
        return real_cst(source)

    def ast_parse(source: str) -> ast.Module:
        seen.append(len(source))
        return real_ast(source)

    monkeypatch.setattr(cst, "parse_module", cst_parse)
    monkeypatch.setattr(ast, "parse", ast_parse)
    pieces = lint_one(text, "big.py", settings)
    assert seen and max(seen) < len(text) // 4
    assert pieces.diagnostics
    assert [d.to_json() for d in pieces.diagnostics] == [d.to_json() for d in whole.diagnostics]


# -- an editor's buffer: the last version's pieces are not parsed again -----------------------


def _edits(text: str) -> list[str]:
    """Versions of ``text`` as typing makes them: a comment added, a line inserted at the top
    and in the middle, a statement removed, a syntax error and its repair."""
    lines = text.split("\n")
    middle = len(lines) // 2
    versions = []
    lines[middle] += "  # typed"
    versions.append("\n".join(lines))
    versions.append("\n".join(["import os", *lines]))
    lines.insert(middle + 10, "inserted = 1")
    versions.append("\n".join(lines))
    del lines[middle + 20]
    versions.append("\n".join(lines))
    versions.append("\n".join([*lines[:middle], "def broken(:", *lines[middle:]]))
    versions.append("\n".join(lines))
    return versions


def _counting(monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], list[str]]:
    parsed_cst: list[str] = []
    parsed_ast: list[str] = []
    real_cst, real_ast = cst.parse_module, ast.parse

    def cst_parse(source: str) -> cst.Module:
        parsed_cst.append(source)
        return real_cst(source)

    def ast_parse(source: str, *args: Any, **kwargs: Any) -> ast.Module:
        # pytest reads failing assertions' source with ast.parse (three arguments) too.
        parsed_ast.append(source)
        result: ast.Module = real_ast(source, *args, **kwargs)
        return result

    monkeypatch.setattr(cst, "parse_module", cst_parse)
    monkeypatch.setattr(ast, "parse", ast_parse)
    return parsed_cst, parsed_ast


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_a_buffer_parsed_again_gives_what_one_parse_gives(newline: str) -> None:
    pieces = parsing.Pieces(512)
    for text in [_text(120).replace("\n", newline), *_edits(_text(120).replace("\n", newline))]:
        checked = parsing.check(text, pieces)
        if isinstance(checked, SourceError):
            assert parsing.check(text) == checked
            continue
        whole = ast.parse(text)
        assert sorted(checked.docstrings) == sorted(parsing.docstrings(whole))
        module = cst_parse.parse_module(text, checked.cuts, pieces)
        assert len(checked.cuts) > 10
        assert module.deep_equals(cst.parse_module(text))
        assert module.code == text


def test_only_the_edited_piece_is_parsed_again(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _text(120)
    pieces = parsing.Pieces(512)
    checked = parsing.check(text, pieces)
    assert isinstance(checked, parsing.Checked)
    cst_parse.parse_module(text, checked.cuts, pieces)
    parsed_cst, parsed_ast = _counting(monkeypatch)
    lines = text.split("\n")
    lines[len(lines) // 2] += "  # typed"
    edited = "\n".join(lines)
    checked = parsing.check(edited, pieces)
    assert isinstance(checked, parsing.Checked)
    cst_parse.parse_module(edited, checked.cuts, pieces)
    assert len(parsed_cst) == len(parsed_ast) == 1
    assert "# typed" in parsed_cst[0] and len(parsed_cst[0]) < 4 * 512
    # Without the last version's pieces, every piece is parsed.
    cst_parse.parse_module(edited, checked.cuts, parsing.Pieces(512))
    assert len(parsed_cst) == 2 + len(checked.cuts)


@pytest.mark.parametrize("header", ["", "# -*- coding: utf-8 -*-\n# Copyright\n\n"])
def test_comment_lines_put_before_a_text_leave_its_later_pieces_as_they_were(
    monkeypatch: pytest.MonkeyPatch, header: str
) -> None:
    """Pieces are measured from the first line of code: the same text behind comment lines
    (as ``moved_lines.shift_prefix`` puts them) is cut at the same places, and its parse
    takes every piece but the first from the text's."""
    text = header + _text(120)
    prefix = "#\n" * 256
    pieces = parsing.Pieces(512)
    checked = parsing.check(text, pieces)
    shifted = parsing.check(prefix + text, parsing.Pieces(512))
    assert isinstance(checked, parsing.Checked) and isinstance(shifted, parsing.Checked)
    assert len(checked.cuts) > 10
    assert shifted.cuts == [cut + len(prefix) for cut in checked.cuts]
    # Whole parses (a text without candidate boundaries) are cut at the same places too.
    tree = ast.parse(text)
    assert parsing.piece_starts(prefix + text, ast.parse(prefix + text), 512) == [
        cut + len(prefix) for cut in parsing.piece_starts(text, tree, 512)
    ]
    cst_parse.parse_module(text, checked.cuts, pieces)
    parsed_cst, parsed_ast = _counting(monkeypatch)
    again = parsing.check(prefix + text, pieces)
    assert isinstance(again, parsing.Checked)
    module = cst_parse.parse_module(prefix + text, again.cuts, pieces)
    assert module.code == prefix + text
    assert len(parsed_cst) == len(parsed_ast) == 1
    assert parsed_cst[0].startswith(prefix) and len(parsed_cst[0]) < len(prefix) + 4 * 512


def test_the_first_piece_holds_the_module_docstring_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """A docstring's lines often start in the first column, as statements do: the first
    boundary is looked for after it, so no piece starts within it (which would cost a parse
    of the whole text)."""
    doc = '"""Title.\n\n' + "".join(f"Line {n} of the documentation.\n" for n in range(120))
    text = "# a header\n" + doc + '"""\n' + _text(120)
    _, parsed_ast = _counting(monkeypatch)
    checked = parsing.check(text, parsing.Pieces(512))
    assert isinstance(checked, parsing.Checked)
    assert parsed_ast and text not in parsed_ast
    assert text[: checked.cuts[0]].rstrip("\n").endswith('"""')
    module = cst_parse.parse_module(text, checked.cuts)
    assert module.deep_equals(cst.parse_module(text))


def test_a_repeated_piece_gets_nodes_of_its_own() -> None:
    # Nodes are told apart by identity: one object must not stand at two places of a tree.
    block = "".join(f"def f{n}():\n    return {n}\n\n" for n in range(40))
    text = block + block + block
    pieces = parsing.Pieces(512)
    for _ in range(2):
        checked = parsing.check(text, pieces)
        assert isinstance(checked, parsing.Checked)
        module = cst_parse.parse_module(text, checked.cuts, pieces)
        assert module.deep_equals(cst.parse_module(text))
        statements = [id(statement) for statement in module.body]
        assert len(set(statements)) == len(statements)


def test_the_per_file_pass_of_an_edited_buffer_equals_a_fresh_one() -> None:
    settings = Settings.from_config(Config())
    pieces = parsing.Pieces(512)
    for text in [_text(200), *_edits(_text(200))]:
        again = lint_one(text, "buffer.py", settings, pieces=pieces)
        fresh = lint_one(text, "buffer.py", settings)
        assert again == fresh
        assert again.diagnostics


def test_the_parse_skips_node_validation_and_puts_it_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The tree is the one a validating parse gives; validation is off only while parsing.
    validate = cst.Name._validate
    calls: list[str] = []

    def counting(node: cst.Name) -> None:
        calls.append(node.value)
        validate(node)

    monkeypatch.setattr(cst.Name, "_validate", counting)
    text = _text(5) + "if not x:\n    y = lambda a, *b, c=1: (a, b, c)\n"
    reference = cst.parse_module(text)
    assert "lambda" not in calls and "y" in calls  # (a validating parse calls the hook)
    calls.clear()
    module = cst_parse.parse_module(text)
    assert calls == []
    assert module.deep_equals(reference)
    assert module.code == text
    with pytest.raises(cst.ParserSyntaxError):
        cst_parse.parse_module("def broken(:\n")
    # Nodes built outside a parse (a fix's) are still validated, after a failed parse too.
    assert cst.Name("z").value == "z"
    assert calls == ["z"]
    with pytest.raises(cst.CSTValidationError):
        cst.Name("")
