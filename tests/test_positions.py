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
    'class A:\n\tdef f(self):\n\t\tif x:\n\t\t\ty = """a\nb"""\n\t\telse:\n'
    "\t\t\t# c\n\t\t\tz = (1,\n  2)\n",
    "def f():\n    @dec\n    # between\n    def g():\n        x = 1 + \\\n            2\n"
    "        return f'{x}'\n    try:\n        pass\n    except E:\n          pass\n",
    "if a:\n  if b:\n      with c as d:\n          e()\n  elif f:\n   g = [\n1]\n",
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


@pytest.mark.parametrize("source", [*SOURCES, *(p.read_text(encoding="utf-8") for p in EXAMPLES)])
def test_statement_positions_match_the_full_provider(source: str) -> None:
    """Nodes positioned through their innermost statement, whose row and indentation the
    engine's traversal counted, land where libcst's whole-module provider puts them."""
    from repro_lint.config import Config
    from repro_lint.names import Names
    from repro_lint.rule import FileContext
    from repro_lint.settings import Settings
    from repro_lint.traversal import Dispatcher

    module = cst.parse_module(source)
    settings = Settings.from_config(Config())
    context = FileContext(
        module, Names(module, "m"), settings.config, settings.target.version, None, "m"
    )
    inside: list[tuple[cst.CSTNode, cst.CSTNode]] = []

    class Record(Dispatcher):
        def on_visit(self, node: cst.CSTNode) -> bool:
            result = super().on_visit(node)
            if context.statement_stack:
                inside.append((node, context.statement_stack[-1]))
            return result

    Record([], context, None).run(module)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    full = wrapper.resolve(PositionProvider)
    inclusive = wrapper.resolve(WhitespaceInclusivePositionProvider)
    positions = Positions(module, context.cursor.starts)
    for node, statement in inside:
        positions.within(node, statement)
    for node, _ in inside:
        assert positions.syntactic(node) == full[node], type(node).__name__
        assert positions.inclusive(node) == inclusive[node], type(node).__name__


def test_positions_are_computed_once_per_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """A file with a finding in each of many functions is positioned by one generation pass
    over the statements that hold findings (each generated once), shared by every finding
    and by the summary; libcst's metadata machinery is never used."""
    import libcst.metadata

    from repro_lint import positions as positions_module
    from repro_lint.config import Config
    from repro_lint.engine import lint_text
    from repro_lint.settings import Settings

    made: list[Positions] = []
    generated: list[cst.CSTNode] = []
    real_init = positions_module.Positions.__init__
    real_codegen = positions_module._Recorder.__init__

    def remember(self: Positions, *args: object, **kwargs: object) -> None:
        real_init(self, *args, **kwargs)  # type: ignore[arg-type]
        made.append(self)

    def count(self: object, module: cst.Module, line: int, indent: str) -> None:
        real_codegen(self, module, line, indent)  # type: ignore[arg-type]
        generated.append(module)

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("libcst's MetadataWrapper was used")

    monkeypatch.setattr(positions_module.Positions, "__init__", remember)
    monkeypatch.setattr(positions_module._Recorder, "__init__", count)
    monkeypatch.setattr(libcst.metadata.MetadataWrapper, "__init__", refuse)
    functions = 300
    source = "import torch\n\n" + "".join(
        f"def f{i}(x: torch.Tensor, idx, src):\n    y = x * 2\n    return x.index_add_(0, idx, src)\n\n"
        for i in range(functions)
    )
    settings = Settings.from_config(Config(select=("RPL401", "RPL402")))
    result = lint_text(source, "many.py", settings)
    assert len(result.diagnostics) == functions
    assert [d.location.row for d in result.diagnostics] == [5 + 4 * i for i in range(functions)]
    assert len(made) == 1
    assert made[0].passes == 1
    # One generation per statement holding a finding (the `return` lines), nothing more.
    assert len(generated) == functions


def test_a_loader_in_a_method_is_positioned_by_its_own_statement(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The summary positions each DataLoader call by generating the statement that holds it,
    not the class around it: in a large class, each loader once cost a generation of the
    whole class."""
    from repro_lint import positions as positions_module
    from repro_lint.config import Config
    from repro_lint.engine import lint_text
    from repro_lint.settings import Settings

    starts: list[int] = []
    real_codegen = positions_module._Recorder.__init__

    def count(self: object, module: cst.Module, line: int, indent: str) -> None:
        real_codegen(self, module, line, indent)  # type: ignore[arg-type]
        starts.append(line)

    monkeypatch.setattr(positions_module._Recorder, "__init__", count)
    methods = 5
    source = "from torch.utils.data import DataLoader\n\n\nclass Trainer:\n" + "".join(
        f"    def loader{i}(self, ds):\n        x = 1\n"
        "        return DataLoader(ds, shuffle=True, num_workers=2)\n\n"
        for i in range(methods)
    )
    result = lint_text(source, "trainer.py", Settings.from_config(Config()))
    rows = [7 + 4 * i for i in range(methods)]
    loaders = result.summary["data"]["loaders"]
    assert [loader["at"] for loader in loaders] == [[row, 16, row, 59] for row in rows]
    assert sorted(set(starts)) == rows
