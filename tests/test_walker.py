"""The read-only walker sees the same nodes in the same order as a libcst visitor."""

from __future__ import annotations

import re
from pathlib import Path

import libcst as cst
import pytest

import repro_lint
from repro_lint import names
from repro_lint.walker import COMPOUND_STATEMENTS, children, walk

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [
    *sorted((ROOT / "examples").glob("*.py")),
    *sorted((ROOT / "repro_lint").glob("*.py")),
    *sorted((ROOT / "tests").glob("test_*.py"))[:10],
]
SNIPPETS = [
    'x = f"{a!r:>{width}} {b=}"\n',
    "from . import (a,\n    b)\nfrom x import *\n",
    "async def f():\n    async with a as b, c:\n        async for i in y:\n            await z\n",
    "match p:\n    case [1, *rest] if rest:\n        pass\n    case {'k': v, **kw}:\n        pass\n",
    "try:\n    pass\nexcept* E as e:\n    pass\nelse:\n    pass\nfinally:\n    pass\n",
    "@d(1)\n@e\nclass C[T](B, metaclass=M):\n    x: int = 1\n    def f[U](self, /, a, *, b=2, **k) -> U: ...\n",
    "lambda *a, **k: (yield from g)\nx = [i for i in y if i] + {k: v for k, v in z}\n",
]


def _visitor_order(module: cst.Module) -> list[cst.CSTNode]:
    seen: list[cst.CSTNode] = []

    class Record(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            seen.append(node)
            return True

        def on_leave(self, original_node: cst.CSTNode) -> None:
            seen.append(original_node)

    module.visit(Record())
    return seen


@pytest.mark.parametrize(
    "source",
    [*(p.read_text(encoding="utf-8") for p in SOURCES), *SNIPPETS],
    ids=[*(p.name for p in SOURCES), *(f"snippet{i}" for i in range(len(SNIPPETS)))],
)
def test_walk_order_matches_libcst(source: str) -> None:
    module = cst.parse_module(source)
    seen: list[cst.CSTNode] = []

    def enter(node: cst.CSTNode) -> bool:
        seen.append(node)
        return True

    walk(module, enter, seen.append)
    expected = _visitor_order(module)
    assert len(seen) == len(expected)
    # The visitor rebuilds nodes it visits, so compare by type and code, in order.
    assert [type(n).__name__ for n in seen] == [type(n).__name__ for n in expected]
    empty = cst.Module([])
    assert [empty.code_for_node(n) for n in seen if isinstance(n, cst.BaseExpression)] == [
        empty.code_for_node(n) for n in expected if isinstance(n, cst.BaseExpression)
    ]


@pytest.mark.parametrize(
    "source",
    [*(p.read_text(encoding="utf-8") for p in SOURCES[:8]), *SNIPPETS],
    ids=[*(p.name for p in SOURCES[:8]), *(f"snippet{i}" for i in range(len(SNIPPETS)))],
)
def test_children_are_libcsts_children(source: str) -> None:
    nodes: list[cst.CSTNode] = []

    def enter(node: cst.CSTNode) -> bool:
        nodes.append(node)
        return True

    walk(cst.parse_module(source), enter, lambda node: None)
    for node in nodes:
        assert [id(child) for child in children(node)] == [id(c) for c in node.children]


def test_enter_false_skips_children() -> None:
    module = cst.parse_module("def f():\n    return g(1)\n")
    names: list[str] = []

    def enter(node: cst.CSTNode) -> bool:
        if isinstance(node, cst.Name):
            names.append(node.value)
        return not isinstance(node, cst.IndentedBlock)

    walk(module, enter, lambda node: None)
    assert names == ["f"]


def test_node_classes_compared_by_type_have_no_subclasses() -> None:
    """The analysis tests a node's class with ``type(node) is cst.X`` (and sets of classes)
    where isinstance, which goes through abc, is too slow: right only while no class
    derives from X. Every class so compared in the package is checked here."""
    package = Path(repro_lint.__file__).parent
    compared = re.compile(
        r"type\([\w.]+\) (?:is|is not|in|not in) (?:cst\.(\w+)|(_?[A-Z][A-Z_]+)\b)"
    )
    shared = (package / "walker.py").read_text(encoding="utf-8")
    found: set[str] = set()
    tables: set[str] = set()
    for path in package.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for single, table in compared.findall(text):
            if single:
                found.add(single)
            else:
                # A set of classes named by a module constant (its own, or walker's shared
                # one): the classes it lists.
                pattern = rf"^{table} = frozenset\(\s*\{{(.*?)\}}"
                definition = re.search(pattern, text, re.M | re.S) or re.search(
                    pattern, shared, re.M | re.S
                )
                assert definition is not None, (path.name, table)
                tables.add(table)
                found.update(re.findall(r"cst\.(\w+)", definition.group(1)))
    assert {"Name", "Attribute", "Call", "Integer"} <= found
    assert {"COMPOUND_STATEMENTS", "NESTED_SCOPES", "_HOLDS_STATEMENTS"} <= tables
    for name in sorted(found):
        kind = getattr(cst, name)
        assert issubclass(kind, cst.CSTNode)
        assert not kind.__subclasses__(), name


def test_the_compound_statement_table_is_every_compound_statement() -> None:
    """``type(node) in COMPOUND_STATEMENTS`` stands for isinstance of BaseCompoundStatement: a
    compound statement that a later libcst adds must be added to the table."""
    exported = {
        kind
        for kind in vars(cst).values()
        if isinstance(kind, type)
        and issubclass(kind, cst.BaseCompoundStatement)
        and kind is not cst.BaseCompoundStatement
    }
    assert exported == COMPOUND_STATEMENTS
    assert exported > names._SCOPES


def test_whitespace_counted_in_place_gives_the_rows_stepping_into_it_gives() -> None:
    """The traversal counts whitespace and newlines in place unless a hook wants them: the
    statements' rows are the same either way, and a hook that wants them still gets each."""
    from repro_lint.config import Config
    from repro_lint.names import Names
    from repro_lint.rule import FileContext
    from repro_lint.torch_versions import TorchVersion
    from repro_lint.traversal import Dispatcher

    source = (
        "import torch\nx = 1 + \\\n    2\ny = (\n    3,  # c\n)\n"
        's = """a\nb"""\nif x:\n    z = [\n        1, \\\n        2]\nw = 4\n'
    )

    class Wants:
        def __init__(self) -> None:
            self.seen = 0

        def visit_SimpleWhitespace(self, node: cst.SimpleWhitespace) -> None:
            self.seen += 1

        def visit_Newline(self, node: cst.Newline) -> None:
            self.seen += 1

    def rows(visitors: list[object]) -> list[tuple[int, str]]:
        module = cst.parse_module(source)
        names = Names(module, "m", False)
        context = FileContext(module, names, Config(root=Path(".")), TorchVersion(2, 4), None, "m")
        Dispatcher(visitors, context, None).run(module)
        return sorted(context.cursor.starts.values())

    wants = Wants()
    assert rows([]) == rows([wants])
    assert [row for row, _ in rows([])] == [1, 2, 4, 7, 9, 10, 13]
    module = cst.parse_module(source)
    expected = sum(
        1 for node in _visitor_order(module) if type(node) in (cst.SimpleWhitespace, cst.Newline)
    )
    assert wants.seen * 2 == expected  # (_visitor_order records each node twice: in and out)
