"""RPL303: ``torch.utils.data.random_split`` without ``generator=``."""

from __future__ import annotations

import libcst as cst

from repro_lint.arguments import argument, expression_code, has_double_star, with_keyword
from repro_lint.diagnostics import FixSafety
from repro_lint.loaders import SPLITS, block_indent
from repro_lint.randomness import TORCH_GENERATOR
from repro_lint.rule import Invalid, NodeEdit, Replace, Rule, Valid

# random_split(dataset, lengths, generator=default_generator)
GENERATOR_POSITION = 2


class RandomSplitMissingGenerator(Rule):
    """
    ## What it does
    Flags `torch.utils.data.random_split(...)` (any alias) called without `generator=`, by
    keyword or as its third positional argument.

    ## When it does not fire
    - A generator is passed, or a `**mapping` may hold one.
    - `random_split` from another library (look-alikes are told apart by their import).

    ## Why is this bad?
    Without a generator, `random_split` draws the permutation from the global torch
    generator: which samples end up in the training and which in the validation set then
    depends on everything the program drew before (model initialisation, another split).
    Changing the model changes the split, so results stop being comparable, and validation
    samples can leak into training between runs.

    ## Fix safety
    Safe: `generator=torch.Generator().manual_seed(<seed>)` is added. The rank is never
    mixed in, even in distributed code: every rank must split the data the same way, or the
    validation samples of one rank are the training samples of another.

    ## Options
    `seed` (default 0) is the value inserted.

    ## References
    - PyTorch: `torch.utils.data.random_split`
    - PyTorch: "Reproducibility"
    """

    CODE = "RPL303"
    MESSAGE = "`random_split` without `generator=` splits by the global RNG's state"
    FIX_TITLE = "Pass `generator=torch.Generator().manual_seed(<seed>)`"
    FIX_SAFETY = FixSafety.SAFE
    TRIGGERS = ("random_split",)
    INVALID = (
        Invalid(
            "from torch.utils.data import random_split\ntrain, val = random_split(ds, [80, 20])\n",
            fixed="import torch\nfrom torch.utils.data import random_split\n"
            "train, val = random_split(ds, [80, 20], generator=torch.Generator().manual_seed(0))\n",
        ),
    )
    VALID = (
        Valid(
            "import torch\nfrom torch.utils.data import random_split\n"
            "g = torch.Generator().manual_seed(0)\ntrain, val = random_split(ds, [80, 20], generator=g)\n",
        ),
        Valid(
            "import torch\nfrom torch.utils.data import random_split\n"
            "train, val = random_split(ds, [0.8, 0.2], torch.Generator().manual_seed(0))\n",
            note="the generator passed by position",
        ),
        Valid(
            "from sklearn_like import random_split\ntrain, val = random_split(ds, [80, 20])\n",
            note="another library's `random_split`",
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if self.qualified_name(node.func) not in SPLITS:
            return
        if argument(node, "generator", GENERATOR_POSITION) is not None or has_double_star(node):
            return
        statement = self.context.statement_stack[-1] if self.context.statement_stack else None
        generator, imports = self.reference(TORCH_GENERATOR, "torch", statement)
        seed = self.context.config.seed
        module = self.context.module
        new = with_keyword(node, "generator", f"{generator}().manual_seed({seed})")
        code = expression_code(module, new, block_indent(self.context.statement_stack, module))
        fix: list[NodeEdit] = [*imports, Replace(node, cst.parse_expression(code))]
        self.report(node, fix=fix)
