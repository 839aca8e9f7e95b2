"""RPL102: a random generator object created without a seed."""

from __future__ import annotations

import libcst as cst

from repro_lint.arguments import argument, has_double_star
from repro_lint.diagnostics import FixSafety
from repro_lint.names import dotted_name
from repro_lint.randomness import NUMPY_GENERATORS, TORCH_GENERATOR
from repro_lint.rule import FileContext, Invalid, NodeEdit, Replace, Rule, Valid

# Calls on a torch.Generator that give it a known state.
_SEEDING_METHODS = frozenset({"manual_seed", "set_state"})


def _target_text(node: cst.BaseExpression) -> str | None:
    """``g`` or ``self.g``: a name a generator can be kept under."""
    try:
        return dotted_name(node)
    except TypeError:
        return None


class UnseededGenerator(Rule):
    """
    ## What it does
    Flags generator objects created without a seed: `np.random.default_rng()`,
    `np.random.RandomState()`, `np.random.SeedSequence()`, bit generators such as
    `np.random.PCG64()` (also inside `np.random.Generator(...)`), `random.Random()` (or
    with an explicit `None`), and a `torch.Generator()` that is used (passed to a call)
    without ever being given a state with `manual_seed` or `set_state`.

    ## Why is this bad?
    An unseeded generator object takes its state from OS entropy, independently of every
    global seed the program sets: a dataset or augmentation that owns one produces
    different samples in every run even when `torch.manual_seed`, `np.random.seed` and
    `random.seed` are all called.

    ## Fix safety
    Safe: the configured seed is passed to the constructor (`default_rng(<seed>)`), or a
    torch generator is created as `torch.Generator(...).manual_seed(<seed>)`, which returns
    the generator.

    ## Options
    `seed` (default 0) is the value inserted.

    ## Known limitations
    A seed that is not a literal (`default_rng(args.seed)`) is trusted, even though it may be
    `None` at run time. Only generators kept under a plain name or attribute in the same file
    are followed for `manual_seed` calls.

    ## References
    - NumPy: "Random Generator", `default_rng`, "Seeding and entropy"
    - `torch.Generator`
    """

    CODE = "RPL102"
    MESSAGE = "A random generator object is created without a seed"
    FIX_TITLE = "Pass the configured seed"
    FIX_SAFETY = FixSafety.SAFE
    TRIGGERS = ("Generator", "default_rng", "RandomState", "SeedSequence", "Random", "PCG64",
                "MT19937", "Philox", "SFC64")  # fmt: skip
    INVALID = (
        Invalid(
            "import numpy as np\nrng = np.random.default_rng()\n",
            fixed="import numpy as np\nrng = np.random.default_rng(0)\n",
        ),
        Invalid(
            "import numpy as np\n\n\nclass Data:\n    def __init__(self):\n"
            "        self.rng = np.random.default_rng()\n",
            fixed="import numpy as np\n\n\nclass Data:\n    def __init__(self):\n"
            "        self.rng = np.random.default_rng(1234)\n",
            config={"seed": 1234},
            note="a dataset owning its own generator",
        ),
        Invalid(
            "from numpy.random import RandomState\nstate = RandomState(None)\n",
            fixed="from numpy.random import RandomState\nstate = RandomState(0)\n",
        ),
        Invalid(
            "import numpy as np\ng = np.random.Generator(np.random.PCG64())\n",
            fixed="import numpy as np\ng = np.random.Generator(np.random.PCG64(0))\n",
        ),
        Invalid(
            "import random\nrng = random.Random()\n",
            fixed="import random\nrng = random.Random(0)\n",
        ),
        Invalid(
            "import numpy as np\nrng = np.random.default_rng(seed=None)\n",
            fixed="import numpy as np\nrng = np.random.default_rng(seed=0)\n",
        ),
        Invalid(
            "import torch\ng = torch.Generator()\nloader = DataLoader(ds, shuffle=True, generator=g)\n",
            fixed="import torch\ng = torch.Generator().manual_seed(0)\n"
            "loader = DataLoader(ds, shuffle=True, generator=g)\n",
        ),
        Invalid(
            "import torch\nx = torch.randn(3, generator=torch.Generator(device='cpu'))\n",
            fixed="import torch\nx = torch.randn(3, generator=torch.Generator(device='cpu').manual_seed(0))\n",
        ),
    )
    VALID = (
        "import numpy as np\nrng = np.random.default_rng(0)\n",
        Valid("import numpy as np\nrng = np.random.default_rng(args.seed)\n", note="opt-in"),
        "import random\nrng = random.Random(42)\n",
        Valid(
            "import torch\ng = torch.Generator()\ng.manual_seed(0)\nx = torch.rand(2, generator=g)\n",
            note="seeded after creation",
        ),
        "import torch\ng = torch.Generator().manual_seed(1)\nx = torch.rand(2, generator=g)\n",
        Valid(
            "import torch\n\n\nclass A:\n    def __init__(self):\n"
            "        self.g = torch.Generator()\n        self.g.manual_seed(3)\n"
            "        self.x = torch.rand(2, generator=self.g)\n",
        ),
        Valid("import torch\ng = torch.Generator()\n", note="never used"),
        Valid(
            "import random\nsecure = random.SystemRandom()\n",
            note="an OS entropy source on purpose, not a forgotten seed",
        ),
        Valid(
            "from mylib import default_rng, Generator\nrng = default_rng()\ng = Generator()\n"
            "x = f(generator=g)\n",
            note="look-alikes from another library",
        ),
        Valid(
            "import numpy as np\nrng = np.random.default_rng(**options)\n",
            note="the seed may be in the mapping",
        ),
    )

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self._torch_kept: dict[str, cst.Call] = {}
        self._torch_seeded: set[str] = set()
        self._torch_used: set[str] = set()
        self._torch_inline: list[cst.Call] = []
        self._receivers: set[int] = set()

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.qualified_name(node.func)
        spec = NUMPY_GENERATORS.get(qualified or "")
        if spec is not None:
            self._numpy(node, *spec)
            return
        func = node.func
        if type(func) is cst.Attribute and func.attr.value in _SEEDING_METHODS:
            receiver = func.value
            if type(receiver) is cst.Call:
                self._receivers.add(id(receiver))
            else:
                text = _target_text(receiver)
                if text is not None:
                    self._torch_seeded.add(text)

    def visit_Arg(self, node: cst.Arg) -> None:
        value = node.value
        if type(value) is cst.Call and self.qualified_name(value.func) == TORCH_GENERATOR:
            self._torch_inline.append(value)
            return
        text = _target_text(value)
        if text is not None:
            self._torch_used.add(text)

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        if not (type(value) is cst.Call and self.qualified_name(value.func) == TORCH_GENERATOR):
            return
        for target in node.targets:
            text = _target_text(target.target)
            if text is not None:
                self._torch_kept.setdefault(text, value)

    def leave_Module(self, original_node: cst.Module) -> None:
        for text, call in self._torch_kept.items():
            if text in self._torch_used and text not in self._torch_seeded:
                self._report_torch(call)
        for call in self._torch_inline:
            if id(call) not in self._receivers:
                self._report_torch(call)

    def _report_torch(self, call: cst.Call) -> None:
        code = self.context.module.code_for_node(call)
        seeded = cst.parse_expression(f"{code}.manual_seed({self.context.config.seed})")
        self.report(call, fix=[Replace(call, seeded)])

    def _numpy(self, node: cst.Call, keyword: str, position: int) -> None:
        arg = argument(node, keyword, position)
        seed = cst.Integer(str(self.context.config.seed))
        fix: list[NodeEdit]
        if arg is None:
            if has_double_star(node) or any(a.star for a in node.args):
                return
            fix = [Replace(node, node.with_changes(args=[cst.Arg(seed), *node.args]))]
        elif type(arg.value) is cst.Name and arg.value.value == "None":
            fix = [Replace(arg.value, seed)]
        else:
            return
        self.report(node, fix=fix)
