"""Per-statement positions agree with libcst's whole-module PositionProvider on every node."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import (
    MetadataWrapper,
    PositionProvider,
    WhitespaceInclusivePositionProvider,
)

from repro_lint.positions import Positions

SOURCES = [
    "# header comment\n# noqa: RPL201\nimport torch\n\n\nclass A:\n    x = 1  # c\n\n"
    "    def f(self):\n        return (1 +\n                2)\n# footer\n",
    "import torch\r\ntorch.backends.cudnn.benchmark = True\r\nif x:\r\n    y = 2\r\n",
    '"""doc"""\nfrom __future__ import annotations\n@dec\ndef g():\n    pass\nz = 3',
    "",
    "# only a comment\n",
]
EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples").glob("*.py"))


def _all_nodes(module: cst.Module) -> list[cst.CSTNode]:
    nodes: list[cst.CSTNode] = []

    class Collect(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            nodes.append(node)
            return True

    module.visit(Collect())
    return nodes


@pytest.mark.parametrize("source", [*SOURCES, *(p.read_text(encoding="utf-8") for p in EXAMPLES)])
def test_positions_match_the_full_provider(source: str) -> None:
    module = cst.parse_module(source)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    full = wrapper.resolve(PositionProvider)
    inclusive = wrapper.resolve(WhitespaceInclusivePositionProvider)
    positions = Positions(module)
    for node in _all_nodes(module):
        if node is module:
            continue
        assert positions.syntactic(node) == full[node], type(node).__name__
        assert positions.inclusive(node) == inclusive[node], type(node).__name__
