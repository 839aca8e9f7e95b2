"""names.py resolves expressions through imports and aliases, and agrees with libcst's
QualifiedNameProvider wherever that gives one answer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, QualifiedNameProvider

from repro_lint.names import Names

CASES = [
    ("import torch as T\nT.backends.cudnn.benchmark", "torch.backends.cudnn.benchmark"),
    ("import torch.backends.cudnn as cudnn\ncudnn.benchmark", "torch.backends.cudnn.benchmark"),
    ("from torch.backends import cudnn as cb\ncb.benchmark", "torch.backends.cudnn.benchmark"),
    (
        "from torch import backends\nbackends.cudnn.deterministic",
        "torch.backends.cudnn.deterministic",
    ),
    ("import torch.utils.data as tud\ntud.DataLoader", "torch.utils.data.DataLoader"),
    ("from torch.utils.data import DataLoader as DL\nDL", "torch.utils.data.DataLoader"),
    (
        "import torch.backends.cudnn\ntorch.backends.cudnn.benchmark",
        "torch.backends.cudnn.benchmark",
    ),
    ("import numpy as np\nnp.random.default_rng", "numpy.random.default_rng"),
    ("import torch\nf = torch.manual_seed\nf", "torch.manual_seed"),
    (
        "import torch\ncudnn = torch.backends.cudnn\ncudnn.benchmark",
        "torch.backends.cudnn.benchmark",
    ),
    ("def main():\n    import torch\n    torch.manual_seed\n", "torch.manual_seed"),
    ("try:\n    import torch\nexcept ImportError:\n    torch = None\ntorch.nn", "torch.nn"),
    ("setattr", "builtins.setattr"),
    ("match x:\n    case 1:\n        import numpy as np\nnp.random.seed", "numpy.random.seed"),
    ("if TYPE_CHECKING: import torch as T\nT.nn", "torch.nn"),
]


def _last_expression(source: str) -> tuple[cst.Module, cst.BaseExpression]:
    module = cst.parse_module(source)
    found: list[cst.BaseExpression] = []

    class Finder(cst.CSTVisitor):
        def visit_Expr(self, node: cst.Expr) -> None:
            found.append(node.value)

    module.visit(Finder())
    return module, found[-1]


@pytest.mark.parametrize(("source", "expected"), CASES)
def test_resolves_through_imports_and_aliases(source: str, expected: str) -> None:
    module, expression = _last_expression(source)
    assert Names(module, "train").qualified_name(expression) == expected


@pytest.mark.parametrize(("source", "expected"), CASES[:8])
def test_agrees_with_libcst_qualified_name_provider(source: str, expected: str) -> None:
    module, expression = _last_expression(source)
    # unsafe_skip_copy keeps node identity, so both resolvers look at the same node.
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    value = wrapper.resolve(QualifiedNameProvider)[expression]
    # Recent libcst computes this provider lazily: the value is a callable.
    theirs = {q.name for q in (value() if callable(value) else value)}
    assert theirs == {expected}
    assert Names(module, "train").qualified_name(expression) == expected


@pytest.mark.parametrize(
    ("module_name", "is_package", "source", "expected"),
    [
        ("pkg.train", False, "from . import data\ndata.Loader", "pkg.data.Loader"),
        ("pkg.train", False, "from .data import Loader\nLoader", "pkg.data.Loader"),
        ("pkg.sub.train", False, "from ..data import Loader\nLoader", "pkg.data.Loader"),
        ("pkg", True, "from .data import Loader\nLoader", "pkg.data.Loader"),
        ("seeding", False, "def seed_all():\n    pass\nseed_all", "seeding.seed_all"),
    ],
)
def test_relative_imports_and_local_definitions(
    module_name: str, is_package: bool, source: str, expected: str
) -> None:
    module, expression = _last_expression(source)
    assert Names(module, module_name, is_package).qualified_name(expression) == expected


@pytest.mark.parametrize(
    "source",
    [
        "x.benchmark",  # not imported
        "import torch\ntorch.Generator().manual_seed",  # through a call
        "import torch\nf = torch.manual_seed\nf = print\nf",  # ambiguous alias
        "setattr = 3\nsetattr",  # shadowed builtin
        "import pandas as pd\ndf = pd.DataFrame()\ndf.median",  # a value, not a name
    ],
)
def test_does_not_guess(source: str) -> None:
    module, expression = _last_expression(source)
    assert Names(module, "train").qualified_name(expression) is None


def _asked_in_scope(source: str, ask: Callable[[Names, cst.CSTNode], Any]) -> list[Any]:
    """``ask(names, expression)`` for the last expression of ``source``, asked while the
    engine's traversal stands at it (inside its function)."""
    from repro_lint.config import Config
    from repro_lint.rule import FileContext
    from repro_lint.settings import Settings
    from repro_lint.traversal import Dispatcher

    module, expression = _last_expression(source)
    names = Names(module, "train")
    seen: list[Any] = []
    settings = Settings.from_config(Config())
    context = FileContext(module, names, settings.config, settings.target.version, None, "m")

    class Recorder(Dispatcher):
        def on_visit(self, node: cst.CSTNode) -> bool:
            result = super().on_visit(node)
            if node is expression:
                seen.append(ask(names, node))
            return result

    module.visit(Recorder([], context, None))
    return seen


@pytest.mark.parametrize(
    ("source", "shadowed"),
    [
        ("import torch\ndef f(torch):\n    torch.manual_seed\n", True),
        ("from torch.backends import cudnn\ndef f(*, cudnn=None):\n    cudnn.benchmark\n", True),
        ("from torch.backends import cudnn\ndef f(cudnn):\n    cudnn.benchmark\n", True),
        ("import numpy as np\ndef f():\n    np = load()\n    np.random.seed\n", True),
        ("import numpy as np\ndef f():\n    for np in xs:\n        np.random.seed\n", True),
        ("import numpy as np\ndef f():\n    global np\n    np = 1\n    np.random.seed\n", False),
        ("import numpy as np\ndef f(x):\n    np.random.seed\n", False),
        ("def f(setattr):\n    setattr\n", True),
    ],
)
def test_function_locals_hide_imports(source: str, shadowed: bool) -> None:
    seen = _asked_in_scope(source, Names.qualified_name)
    assert (seen == [None]) is shadowed


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "import torch.nn.functional as F\ndef f(log):\n"
            "    fn = F.cross_entropy if log else F.nll_loss\n    fn\n",
            (
                ("torch.nn.functional.cross_entropy", "F.cross_entropy"),
                ("torch.nn.functional.nll_loss", "F.nll_loss"),
            ),
        ),
        # One choice is the function's own value, or the name is bound twice: no answer.
        ("import torch\ndef f(m, log):\n    fn = torch.exp if log else m.exp\n    fn\n", None),
        (
            "import torch\ndef f(log):\n    fn = torch.exp if log else torch.log\n"
            "    fn = print\n    fn\n",
            None,
        ),
        # At module level a choice is not followed.
        ("import torch\nfn = torch.exp if log else torch.log\nfn\n", None),
    ],
)
def test_a_name_bound_once_to_one_of_two_has_both_as_alternatives(
    source: str, expected: tuple[tuple[str, str], ...] | None
) -> None:
    seen = _asked_in_scope(
        source, lambda names, node: (names.qualified_name(node), names.alternatives(node))
    )
    assert seen == [(None, expected)]


def test_expression_for_prefers_the_shortest_module_level_spelling() -> None:
    module = cst.parse_module(
        "import torch\nfrom torch.backends import cudnn\ndef f():\n    import os as o\n"
    )
    names = Names(module, "train")
    assert names.expression_for("torch.backends.cudnn.benchmark")[0] == "cudnn.benchmark"
    assert names.expression_for("torch.manual_seed")[0] == "torch.manual_seed"
    text, binding = names.expression_for("os.environ")
    assert (text, binding) == ("os.environ", None)  # the function-local import does not count


def test_answers_are_remembered_per_scope_only() -> None:
    """``qualified_name`` remembers its answers by node while the scope stays: entering or
    leaving a function (where a parameter hides an import) asks again, and what collecting
    the module's names asked before everything was bound is not kept."""
    module = cst.parse_module(
        "import numpy as np\nb = a.rand\na = np.random\n\ndef f(np):\n    return np\n"
    )
    names = Names(module)
    body: Any = module.body
    value = body[1].body[0].value
    assert names.qualified_name(value) == "numpy.random.rand"
    function = body[3]
    used = function.body.body[0].body[0].value
    assert names.qualified_name(used) == "numpy"
    names.enter_function(function)
    assert names.qualified_name(used) is None
    names.leave_function()
    assert names.qualified_name(used) == "numpy"


@pytest.mark.parametrize(
    ("source", "at_module", "in_function"),
    [
        # The class is bound after the import: its base is the import, a function body
        # (run later) sees the class.
        ("from torch.utils.data import Dataset\nclass Dataset(Dataset):\n    pass\n",
         "torch.utils.data.Dataset", "train.Dataset"),
        ("import foo as helper\ndef helper():\n    pass\n", "foo", "train.helper"),
        # Bound before the import: the import wins everywhere.
        ("class Dataset:\n    pass\nfrom torch.utils.data import Dataset\n",
         "torch.utils.data.Dataset", "torch.utils.data.Dataset"),
    ],
    ids=["class-after-import", "def-after-import", "class-before-import"],
)  # fmt: skip
def test_a_later_definition_rebinds_an_import_for_function_bodies(
    source: str, at_module: str, in_function: str
) -> None:
    name = "Dataset" if "Dataset" in source else "helper"
    module = cst.parse_module(source + f"def use():\n    {name}\n")
    names = Names(module, "train")
    body: Any = module.body
    use = body[-1]
    read = use.body.body[0].body[0].value
    assert names.qualified_name(read) == at_module
    names.enter_function(use)
    assert names.qualified_name(read) == in_function
    names.leave_function()
