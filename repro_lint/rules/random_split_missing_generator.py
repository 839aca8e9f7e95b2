"""RPL303: ``torch.utils.data.random_split`` without ``generator=``."""

from __future__ import annotations

import libcst as cst

from repro_lint import program_seed as ps
from repro_lint.arguments import argument, expression_code, has_double_star, with_keyword
from repro_lint.diagnostics import FixSafety
from repro_lint.loaders import GENERATORS_SINCE, SPLITS, block_indent, mentions_rank
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
    Safe: `generator=torch.Generator().manual_seed(<seed>)` is added, with the program's own
    seed where the split can reach it: the seed a seeding call passes earlier in the same
    function on every path (conditional, `... if args.seed is not None else None`, where it
    is passed only under `if args.seed is not None:`), the function's seed parameter, the
    one integer the function passes as a seed (`torch.manual_seed(17)  # Reproducibility on
    the dataset splitting`), in a method the one seed the other methods of its class pass
    from the instance (`set_seed(self.args.seed)`), or the one integer the module's
    top-level code passes as a seed; otherwise the configured `seed`. The rank is never
    mixed in, even in distributed code, and a seed that differs per rank is passed over:
    every rank must split the data the same way, or the validation samples of one rank are
    the training samples of another. Before torch 1.6 `random_split` takes no generator: the
    finding comes without a fix.

    ## Options
    `seed` (default 0) is the value inserted where the program passes no seed of its own.

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
        Invalid(
            "import torch\nfrom torch.utils.data import random_split\n\n"
            "torch.manual_seed(17)  # Reproducibility on the dataset splitting\n\n\n"
            "def main(conf, total_set):\n"
            "    train_set, val_set = random_split(total_set, [900, 100])\n",
            fixed="import torch\nfrom torch.utils.data import random_split\n\n"
            "torch.manual_seed(17)  # Reproducibility on the dataset splitting\n\n\n"
            "def main(conf, total_set):\n"
            "    train_set, val_set = random_split(total_set, [900, 100],\n"
            "                                      generator=torch.Generator().manual_seed(17))\n",
            note="the seed the module sets for this very split",
        ),
        Invalid(
            "import torch\nimport torch.distributed as dist\n"
            "from torch.utils.data import random_split\n\n\n"
            "def build(args, dataset):\n    torch.manual_seed(args.seed + dist.get_rank())\n"
            "    return random_split(dataset, [0.9, 0.1])\n",
            fixed="import torch\nimport torch.distributed as dist\n"
            "from torch.utils.data import random_split\n\n\n"
            "def build(args, dataset):\n    torch.manual_seed(args.seed + dist.get_rank())\n"
            "    return random_split(dataset, [0.9, 0.1], generator=torch.Generator().manual_seed(0))\n",
            note="a seed that differs per rank would split every rank differently",
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
        if self.context.target_torch < GENERATORS_SINCE:
            # ``random_split`` takes no generator before torch 1.6: no fix to offer.
            self.report(node, fix=[])
            return
        stack = self.context.statement_stack
        statement = stack[-1] if stack else None
        generator, imports = self.reference(TORCH_GENERATOR, "torch", statement)
        module = self.context.module
        names = self.context.names
        # Every rank must split alike: a seed that differs per rank is not the one to use.
        seed = ps.file_seed(
            stack,
            module,
            self.qualified_name,
            self.context.config.seed_functions,
            ranked=lambda node: mentions_rank(node, names),
        ) or ps.Seed(str(self.context.config.seed))
        new = with_keyword(node, "generator", seed.call(f"{generator}().manual_seed("))
        code = expression_code(module, new, block_indent(self.context.statement_stack, module))
        fix: list[NodeEdit] = [*imports, Replace(node, cst.parse_expression(code))]
        self.report(node, fix=fix)
