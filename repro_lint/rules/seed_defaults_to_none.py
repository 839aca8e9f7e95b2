"""RPL108: a seed option that defaults to no seed, with seeding guarded by it."""

from __future__ import annotations

import libcst as cst

from repro_lint.arguments import argument, indented, literal_int, with_keyword
from repro_lint.diagnostics import FixSafety
from repro_lint.options import Option, Options
from repro_lint.randomness import HELPERS, SEEDS, is_seed_name
from repro_lint.rule import FileContext, Invalid, Replace, Rule, Valid
from repro_lint.walker import children


def _is_none(node: cst.BaseExpression) -> bool:
    return type(node) is cst.Name and node.value == "None"


class SeedDefaultsToNone(Rule):
    """
    ## What it does
    Flags a command-line seed option (`argparse`'s `add_argument("--seed", ...)`, a
    `click.option`) whose default is no seed (`None`, or absent, which means `None`; or a
    sentinel such as `-1`) when the program seeds only if the option is given:
    `if args.seed is not None: torch.manual_seed(args.seed)`, `if seed != -1:
    np.random.seed(seed)`. The finding sits on the default.

    ## Why is this bad?
    The program looks seeded, and is when someone passes `--seed`; but a run started the
    usual way, without it, seeds nothing: its weights, data order and augmentations differ
    every time, and nothing records them. Default runs are the ones people compare.

    ## Fix safety
    Unsafe: the default becomes the configured seed (`default=None` -> `default=<seed>`),
    so runs without `--seed` become seeded. This changes the command line's behaviour for
    anyone who relied on unseeded default runs.

    ## Options
    `seed` (default 0) is the value the fix sets as the default.

    ## Known limitations
    The option and its guard must be in the same file; a guard on a variable (`seed !=
    -1`) counts when the variable is named for a seed and compares with the option's
    default. A `None` that a framework turns into a fresh random seed (an mmengine
    `randomness=dict(seed=args.seed)`) is an entropy seed, reported by RPL103 instead.
    Configuration fields (dataclasses, YAML) are not read.

    ## References
    - Python `argparse`: `default` (None when omitted)
    """

    CODE = "RPL108"
    MESSAGE = "The seed option defaults to no seed: default runs are unseeded"
    FIX_TITLE = "Default the seed option to the configured seed"
    FIX_SAFETY = FixSafety.UNSAFE
    TRIGGERS = ("seed",)
    INVALID = (
        Invalid(
            "import argparse\nimport torch\n\nparser = argparse.ArgumentParser()\n"
            "parser.add_argument('--seed', type=int, default=None, help='seed')\n"
            "args = parser.parse_args()\nif args.seed is not None:\n"
            "    torch.manual_seed(args.seed)\n",
            fixed="import argparse\nimport torch\n\nparser = argparse.ArgumentParser()\n"
            "parser.add_argument('--seed', type=int, default=0, help='seed')\n"
            "args = parser.parse_args()\nif args.seed is not None:\n"
            "    torch.manual_seed(args.seed)\n",
        ),
        Invalid(
            "import argparse\nfrom accelerate.utils import set_seed\n\n\ndef parse_args():\n"
            "    parser = argparse.ArgumentParser()\n    parser.add_argument(\n"
            "        '--seed',\n        type=int,\n        help='A seed for reproducible training.',\n"
            "    )\n    return parser.parse_args()\n\n\ndef main():\n    args = parse_args()\n"
            "    if args.seed is not None:\n        set_seed(args.seed)\n",
            fixed="import argparse\nfrom accelerate.utils import set_seed\n\n\ndef parse_args():\n"
            "    parser = argparse.ArgumentParser()\n    parser.add_argument(\n"
            "        '--seed',\n        type=int,\n        help='A seed for reproducible training.',\n"
            "        default=1234,\n    )\n    return parser.parse_args()\n\n\ndef main():\n"
            "    args = parse_args()\n    if args.seed is not None:\n        set_seed(args.seed)\n",
            config={"seed": 1234},
            note="no default at all means None; the layout of the call is kept",
        ),
        Invalid(
            "import argparse\nimport numpy as np\n\n\ndef split(path, seed):\n    seed = int(seed)\n"
            "    if seed != -1:\n        np.random.seed(seed)\n\n\ndef main():\n"
            "    parser = argparse.ArgumentParser()\n"
            "    parser.add_argument('--seed', default=-1, type=int)\n"
            "    args = parser.parse_args()\n    split('data.json', args.seed)\n",
            note="a -1 sentinel guarded by `seed != -1`",
        ),
    )
    VALID = (
        Valid(
            "import argparse\nimport torch\n\nparser = argparse.ArgumentParser()\n"
            "parser.add_argument('--seed', type=int, default=42)\nargs = parser.parse_args()\n"
            "torch.manual_seed(args.seed)\n",
            note="a numeric default",
        ),
        Valid(
            "import argparse\nimport torch\n\nparser = argparse.ArgumentParser()\n"
            "parser.add_argument('--seed', type=int, default=None)\nargs = parser.parse_args()\n"
            "torch.manual_seed(0)\n",
            note="the option is never read: seeding does not depend on it",
        ),
        Valid(
            "import click\nimport torch\n\n\n@click.command()\n@click.option('--seed', type=int)\n"
            "def main(seed):\n    if seed is None:\n        seed = 0\n    torch.manual_seed(seed)\n",
            note="None is replaced by a fixed seed before seeding",
        ),
        Valid(
            "import argparse\nimport mylib\n\nparser = argparse.ArgumentParser()\n"
            "parser.add_argument('--seed', default=None)\nargs = parser.parse_args()\n"
            "if args.seed is not None:\n    mylib.log(args.seed)\n",
            note="the guarded code does not seed",
        ),
        Valid(
            "import argparse\nimport random\n\nparser = argparse.ArgumentParser()\n"
            "parser.add_argument('--manualSeed', type=int)\nopt = parser.parse_args()\n"
            "if opt.manualSeed is None:\n    opt.manualSeed = random.randint(1, 10000)\n"
            "random.seed(opt.manualSeed)\n",
            note="None becomes an entropy seed: RPL103's finding, not an unseeded run",
        ),
    )

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self._options = Options(context.names)
        self._guards: list[tuple[cst.BaseExpression, cst.If]] = []
        # Where each call is: its statement's indentation and the statements around it.
        self._where: dict[int, tuple[str, tuple[cst.CSTNode, ...] | None]] = {}

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._options.visit_FunctionDef(node)

    def visit_Assign(self, node: cst.Assign) -> None:
        self._options.visit_Assign(node)

    def visit_Call(self, node: cst.Call) -> None:
        self._options.visit_Call(node)
        stack = self.context.statement_stack
        if stack:
            indent = self.context.cursor.starts.get(stack[-1], (0, ""))[1]
            self._where[id(node)] = (indent, self.anchor())

    def visit_If(self, node: cst.If) -> None:
        self._guards.append((node.test, node))

    def leave_Module(self, original_node: cst.Module) -> None:
        reported: set[int] = set()
        for test, node in self._guards:
            for option in self._guarded(test):
                if id(option.call) in reported or not self._seeds(node.body):
                    continue
                reported.add(id(option.call))
                self._report(option)

    def _guarded(self, test: cst.BaseExpression) -> list[Option]:
        """Options whose absence (their default) the test rules out: ``x is not None``,
        ``x != -1``, ``x >= 0``, ``x`` (also inside ``and``)."""
        if type(test) is cst.BooleanOperation and type(test.operator) is cst.And:
            return self._guarded(test.left) + self._guarded(test.right)
        if type(test) is cst.Comparison and len(test.comparisons) == 1:
            target = test.comparisons[0]
            operator, value = target.operator, target.comparator
            if isinstance(operator, cst.IsNot | cst.NotEqual) and _is_none(value):
                return [o for o in self._options_of(test.left) if o.default_is_none]
            sentinel = literal_int(value)
            if sentinel is not None and sentinel < 0 and type(operator) is cst.NotEqual:
                return [o for o in self._options_of(test.left) if o.default_int() == sentinel]
            if sentinel is not None and isinstance(
                operator, cst.GreaterThanEqual | cst.GreaterThan
            ):
                # ``seed >= 0`` rules out a default below 0, ``seed > 0`` one of 0 or less.
                bound = sentinel if type(operator) is cst.GreaterThanEqual else sentinel + 1
                return [
                    o
                    for o in self._options_of(test.left)
                    if (default := o.default_int()) is not None and default < bound
                ]
            return []
        return [o for o in self._options_of(test) if o.default_is_none]

    def _options_of(self, node: cst.BaseExpression) -> list[Option]:
        """The seed options an expression reads: ``args.seed``, or a variable named for a
        seed (``seed``), which stands for every seed option of the file."""
        option = self._options.option_of(node)
        if option is not None:
            return [option] if is_seed_name(option.dest) else []
        if type(node) is cst.Call and len(node.args) == 1:
            # ``int(seed)``
            return self._options_of(node.args[0].value)
        if type(node) is cst.Name and is_seed_name(node.value):
            return [o for o in self._options.by_dest.values() if is_seed_name(o.dest)]
        return []

    def _seeds(self, body: cst.BaseSuite) -> bool:
        """Whether a block calls a seeding function: a known one, a configured one, or
        one named for seeding (``set_seed``, ``set_random_seed``)."""
        stack: list[cst.CSTNode] = [body]
        while stack:
            node = stack.pop()
            if type(node) is cst.Call:
                qualified = self.qualified_name(node.func)
                if qualified is not None and (
                    qualified in SEEDS
                    or qualified in HELPERS
                    or qualified in self.context.config.seed_functions
                ):
                    return True
                func = node.func
                name = func.attr.value if type(func) is cst.Attribute else ""
                if type(func) is cst.Name:
                    name = func.value
                if is_seed_name(name):
                    return True
            stack.extend(children(node))
        return False

    def _report(self, option: Option) -> None:
        seed = str(self.context.config.seed)
        default = argument(option.call, "default")
        if default is not None:
            anchor = self._where.get(id(option.call), ("", None))[1]
            self.report(
                default.value, fix=[Replace(default.value, cst.Integer(seed))], anchor=anchor
            )
            return
        indent, anchor = self._where.get(id(option.call), ("", None))
        new = indented(with_keyword(option.call, "default", seed), indent)
        self.report(option.call, fix=[Replace(option.call, new)], anchor=anchor)
