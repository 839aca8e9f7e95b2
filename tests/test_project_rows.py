"""Rows in project summaries are counted during the engine's traversal; they must match
libcst's."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from repro_lint.config import Config
from repro_lint.names import Names
from repro_lint.rule import FileContext
from repro_lint.settings import Settings
from repro_lint.summary import SummaryCollector
from repro_lint.traversal import Dispatcher

ROOT = Path(__file__).resolve().parent.parent
TRICKY = '''\
"""Module docstring
over two lines."""
# a comment
import torch, \\
    numpy as np

x = f"""a
{1 +
 2}
b"""


@decorator(
    1,
)
# between
def f(a,
      b):
    return (
        torch.rand(3)
    )


if True: y = torch.randn(
    2)
elif False:
    pass  # noqa: RPL101
s = ("a"
     "b\\
c")
t = b"""x
y""" + r\'\'\'z
\'\'\'
'''


class _Recorder(SummaryCollector):
    """Records where the collector believes statements, calls and comments start."""

    def __init__(self, context: FileContext, text: str) -> None:
        super().__init__(context, text, frozenset())
        self.rows: list[tuple[cst.CSTNode, int]] = []

    def _enter(self, node: cst.CSTNode, leading: object) -> None:
        super()._enter(node, leading)  # type: ignore[arg-type]
        self.rows.append((node, self.statement_row()))

    def visit_Call(self, node: cst.Call) -> None:
        self.rows.append((node, self.node_row(node)))
        super().visit_Call(node)

    def visit_Comment(self, node: cst.Comment) -> None:
        self.rows.append((node, self.row))
        super().visit_Comment(node)


def _mismatches(text: str) -> list[tuple[str, int, int]]:
    module = cst.parse_module(text)
    settings = Settings.from_config(Config())
    context = FileContext(
        module, Names(module, "m"), settings.config, settings.target.version, None, "m"
    )
    recorder = _Recorder(context, text)
    # The engine's dispatcher counts rows and statements; the collector reads them from it.
    Dispatcher([recorder], context, None).run(module)
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    wrong = []
    for node, row in recorder.rows:
        expected = positions[node].start.line
        if isinstance(node, cst.FunctionDef | cst.ClassDef) and node.decorators:
            # The collector's row of a decorated definition is its first decorator's.
            expected = positions[node.decorators[0]].start.line
        if row != expected:
            wrong.append((type(node).__name__, expected, row))
    return wrong


def _corpus() -> list[Path]:
    files = sorted((ROOT / "repro_lint").rglob("*.py")) + sorted((ROOT / "examples").glob("*.py"))
    spec = importlib.util.find_spec("torch")
    if spec is not None and spec.submodule_search_locations:
        torch_dir = Path(next(iter(spec.submodule_search_locations)))
        files += sorted((torch_dir / "nn" / "modules").glob("*.py"))[:25]
        files += sorted((torch_dir / "utils" / "data").glob("*.py"))
    return files


def test_tricky_layout_rows() -> None:
    assert _mismatches(TRICKY) == []


def test_crlf_rows() -> None:
    assert _mismatches(TRICKY.replace("\n", "\r\n")) == []


@pytest.mark.parametrize("path", _corpus(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_corpus_rows(path: Path) -> None:
    assert _mismatches(path.read_text(encoding="utf-8")) == []
