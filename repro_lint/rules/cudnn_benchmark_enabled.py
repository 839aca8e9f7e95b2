"""RPL201: ``torch.backends.cudnn.benchmark = True`` in any spelling."""

from __future__ import annotations

import re
from typing import cast

import libcst as cst

from repro_lint.arguments import (
    argument,
    dict_literal_items,
    literal_bool,
    literal_str,
    setattr_arguments,
)
from repro_lint.determinism import RUNNERS
from repro_lint.diagnostics import FixSafety
from repro_lint.program_seed import none_guard, root_name, seeding_argument
from repro_lint.randomness import CUDNN, LIGHTNING_TRAINERS
from repro_lint.rule import DropComments, Invalid, NodeEdit, Replace, Rule, Valid
from repro_lint.summary import has_main_block
from repro_lint.walker import COMPOUND_STATEMENTS, walk

_FALSE = cst.Name("False")
# mmengine's environment settings: the config variable and the Runner keyword that hold them.
ENV_CFG = "env_cfg"
ENV_BENCHMARK = "cudnn_benchmark"
# A comment that recommends benchmarking for speed.
_ABOUT_SPEED = re.compile(r"speed|fast|accelerat|perform|benchmark", re.IGNORECASE)


class CudnnBenchmarkEnabled(Rule):
    """
    ## What it does
    Flags turning on cuDNN benchmarking: `torch.backends.cudnn.benchmark = True` through any
    import alias, `setattr(torch.backends.cudnn, "benchmark", True)`,
    `torch.backends.cudnn.flags(benchmark=True)`, Lightning's `Trainer(benchmark=True)`, and
    mmengine's environment setting `env_cfg = dict(cudnn_benchmark=True)` in a config module
    or passed to `Runner(env_cfg=...)`: the runner's `setup_env` turns it into
    `torch.backends.cudnn.benchmark = True`.

    ## Why is this bad?
    With benchmarking on, cuDNN times several convolution algorithms for every new input shape
    and keeps the fastest. Which one wins depends on timing noise, so two runs of the same
    program can use different algorithms and produce different numbers, even with every seed
    fixed. `cudnn.deterministic = True` does not cure this: it narrows the candidates to
    deterministic algorithms, but the winner can still differ between processes
    (pytorch/pytorch#15359). The two flags are independent; `benchmark = True` does not
    switch `deterministic` off, whatever some recipes claim.

    ## Fix safety
    Safe: setting the flag to `False` changes speed, never what the program computes. A
    comment right above the line that recommends it for speed is removed with it. Where the
    program seeds only when given a seed (a seeding call of `args.seed` under
    `if args.seed is not None:`) and that seed is in scope at the flag, the value becomes
    `args.seed is None`: seeded runs do not benchmark, and the runs the user leaves
    unseeded keep the speed-up, as the program chose. In a library function (a module
    without a `__main__` block) whose `if` sets the flag to `False` in one arm and `True`
    in the other (`if deterministic: ... else: cudnn.benchmark = True`), the `True` is the
    callers' choice: it is reported, without a fix.

    ## Options
    None. Values that are not literals (`benchmark = args.benchmark`) are not reported.

    ## References
    - PyTorch notes on randomness: "CUDA convolution benchmarking"
    - pytorch/pytorch#15359
    """

    CODE = "RPL201"
    MESSAGE = "`cudnn.benchmark = True` lets cuDNN pick a different algorithm in each run"
    FIX_TITLE = "Set `torch.backends.cudnn.benchmark = False`"
    FIX_SAFETY = FixSafety.SAFE
    TRIGGERS = ("benchmark",)
    INVALID = (
        Invalid(
            "import torch\ntorch.backends.cudnn.benchmark = True\n",
            fixed="import torch\ntorch.backends.cudnn.benchmark = False\n",
        ),
        Invalid(
            "from torch.backends import cudnn as cb\ncb.benchmark = True  # speed\n",
            fixed="from torch.backends import cudnn as cb\ncb.benchmark = False  # speed\n",
        ),
        Invalid("import torch as T\nT.backends.cudnn.benchmark = True\n"),
        Invalid("import torch.backends.cudnn as cudnn\ncudnn.benchmark = 1\n"),
        Invalid("from torch import backends\nbackends.cudnn.benchmark = True\n"),
        Invalid(
            "import torch\n\ndef setup():\n    torch.backends.cudnn.benchmark = True\n",
            fixed="import torch\n\ndef setup():\n    torch.backends.cudnn.benchmark = False\n",
        ),
        Invalid(
            'import torch\nsetattr(torch.backends.cudnn, "benchmark", True)\n',
            fixed='import torch\nsetattr(torch.backends.cudnn, "benchmark", False)\n',
        ),
        Invalid(
            "import torch\nwith torch.backends.cudnn.flags(enabled=True, benchmark=True):\n"
            "    pass\n",
            fixed="import torch\nwith torch.backends.cudnn.flags(enabled=True, benchmark=False):\n"
            "    pass\n",
        ),
        Invalid(
            "import lightning as L\ntrainer = L.Trainer(max_epochs=3, benchmark=True)\n",
            fixed="import lightning as L\ntrainer = L.Trainer(max_epochs=3, benchmark=False)\n",
        ),
        Invalid("from pytorch_lightning import Trainer\nTrainer(benchmark=True)\n"),
        Invalid("import torch\ncudnn = torch.backends.cudnn\ncudnn.benchmark = True\n"),
        Invalid(
            "_base_ = ['../_base_/default_runtime.py']\n\nenv_cfg = dict(cudnn_benchmark=True)\n",
            fixed="_base_ = ['../_base_/default_runtime.py']\n\n"
            "env_cfg = dict(cudnn_benchmark=False)\n",
            note="an mmengine config module: the Runner sets the cuDNN flag from it",
        ),
        Invalid(
            "_base_ = ['../_base_/default_runtime.py']\n\nmax_keep_ckpts = 3\n"
            "# Single-scale training is recommended to\n"
            "# be turned on, which can speed up training.\n"
            "env_cfg = dict(cudnn_benchmark=True)\n",
            fixed="_base_ = ['../_base_/default_runtime.py']\n\nmax_keep_ckpts = 3\n"
            "env_cfg = dict(cudnn_benchmark=False)\n",
            note="the comment above recommended the speed-up: it goes with the value",
        ),
        Invalid(
            "import random\nimport torch\nimport torch.backends.cudnn as cudnn\n\n\n"
            "def main_worker(gpu, args):\n    cudnn.benchmark = True\n\n\ndef main(args):\n"
            "    if args.seed is not None:\n        random.seed(args.seed)\n"
            "        torch.manual_seed(args.seed)\n        cudnn.deterministic = True\n"
            "    main_worker(args.gpu, args)\n",
            fixed="import random\nimport torch\nimport torch.backends.cudnn as cudnn\n\n\n"
            "def main_worker(gpu, args):\n    cudnn.benchmark = args.seed is None\n\n\n"
            "def main(args):\n"
            "    if args.seed is not None:\n        random.seed(args.seed)\n"
            "        torch.manual_seed(args.seed)\n        cudnn.deterministic = True\n"
            "    main_worker(args.gpu, args)\n",
            note="seeding is the user's choice: a seeded run does not benchmark",
        ),
        Invalid(
            "import torch\n\n\ndef train(args):\n    with open(args.log, 'a') as log:\n"
            "        try:\n            if args.seed is not None:\n"
            "                torch.manual_seed(args.seed)\n        finally:\n"
            "            log.flush()\n    torch.backends.cudnn.benchmark = True\n",
            fixed="import torch\n\n\ndef train(args):\n    with open(args.log, 'a') as log:\n"
            "        try:\n            if args.seed is not None:\n"
            "                torch.manual_seed(args.seed)\n        finally:\n"
            "            log.flush()\n    torch.backends.cudnn.benchmark = args.seed is None\n",
            note="the seed's test inside blocks of the function whose parameter it reads",
        ),
        Invalid(
            "import torch\n\n\ndef setup(config, args):\n"
            "    if args.seed is not None:\n        torch.manual_seed(args.seed)\n\n\n"
            "def train(config):\n    torch.backends.cudnn.benchmark = True\n",
            fixed="import torch\n\n\ndef setup(config, args):\n"
            "    if args.seed is not None:\n        torch.manual_seed(args.seed)\n\n\n"
            "def train(config):\n    torch.backends.cudnn.benchmark = False\n",
            note="the seed option is not in scope where the flag is set",
        ),
        Invalid(
            "import torch\n\nargs = parse_args()\nif args.seed is not None:\n"
            "    torch.manual_seed(args.seed)\ntorch.backends.cudnn.benchmark = True\n",
            fixed="import torch\n\nargs = parse_args()\nif args.seed is not None:\n"
            "    torch.manual_seed(args.seed)\ntorch.backends.cudnn.benchmark = args.seed is None\n",
            note="a script: the flag comes after the seed's own test",
        ),
        Invalid(
            "import torch\n\nif mode == 'seeded':\n    args = parse_args()\n"
            "    if args.seed is not None:\n        torch.manual_seed(args.seed)\n"
            "else:\n    torch.backends.cudnn.benchmark = True\n",
            fixed="import torch\n\nif mode == 'seeded':\n    args = parse_args()\n"
            "    if args.seed is not None:\n        torch.manual_seed(args.seed)\n"
            "else:\n    torch.backends.cudnn.benchmark = False\n",
            note="the seed's test runs in another branch: `args` may be unbound at the flag",
        ),
        Invalid(
            "import torch\n\ntorch.backends.cudnn.benchmark = True\nargs = parse_args()\n"
            "if args.seed is not None:\n    torch.manual_seed(args.seed)\n",
            fixed="import torch\n\ntorch.backends.cudnn.benchmark = False\nargs = parse_args()\n"
            "if args.seed is not None:\n    torch.manual_seed(args.seed)\n",
            note="the flag is set before the options are parsed",
        ),
        Invalid(
            "import torch\n\n# cuDNN\ntorch.backends.cudnn.benchmark = True\n",
            fixed="import torch\n\n# cuDNN\ntorch.backends.cudnn.benchmark = False\n",
            note="a comment that does not argue for speed stays",
        ),
        Invalid(
            "env_cfg = dict(\n    cudnn_benchmark=True,\n"
            "    mp_cfg=dict(mp_start_method='fork'),\n)\n"
        ),
        Invalid(
            "from mmengine.runner import Runner\n"
            "runner = Runner(model, env_cfg={'cudnn_benchmark': True})\n",
            fixed="from mmengine.runner import Runner\n"
            "runner = Runner(model, env_cfg={'cudnn_benchmark': False})\n",
        ),
    )
    VALID = (
        "import torch\ntorch.backends.cudnn.benchmark = False\n",
        Valid(
            "import torch\ntorch.backends.cudnn.benchmark = args.benchmark\n",
            note="not a literal: the value is decided at run time",
        ),
        "import torch\ntorch.backends.cudnn.benchmark = not deterministic\n",
        "import torch\n\nclass A:\n    benchmark = True\n\nA.benchmark = True\n",
        Valid("import torch\nbenchmark = True\n", note="a plain variable"),
        "import torch\ntorch.backends.cudnn.deterministic = True\n",
        "import lightning as L\nL.Trainer(benchmark=False)\n",
        "import lightning as L\nL.Trainer(deterministic=True)\n",
        Valid("import mylib\nmylib.Trainer(benchmark=True)\n", note="not Lightning's Trainer"),
        'import torch\nsetattr(torch.backends.cudnn, "enabled", True)\n',
        "import torch\nwith torch.backends.cudnn.flags(enabled=True, benchmark=False):\n    pass\n",
        "import torch\nprint(torch.backends.cudnn.benchmark)\n",
        Valid("import mmengine\nenv_cfg = dict(cudnn_benchmark=False)\n"),
        Valid(
            "import mmengine\n\n\ndef build(cudnn_benchmark=True):\n"
            "    env_cfg = dict(cudnn_benchmark=cudnn_benchmark)\n",
            note="not a literal, and not a config module's own setting",
        ),
        Valid(
            "import mylib\nmylib.Runner(env_cfg=dict(cudnn_benchmark=True))\n",
            note="not mmengine's Runner",
        ),
    )

    def _flag(self, value_holder: cst.BaseExpression, node: cst.CSTNode) -> None:
        if literal_bool(value_holder) is True:
            self.report(node, fix=[Replace(value_holder, _FALSE), *self._stale_comment()])

    def _stale_comment(self) -> list[NodeEdit]:
        """The comment lines right above the statement, when they argue for the speed the
        fix gives up: they would recommend what the line no longer does."""
        statement = self.context.statement_stack[-1] if self.context.statement_stack else None
        leading = getattr(statement, "leading_lines", ())
        comments = []
        for line in reversed(leading):
            if line.comment is None:
                break
            comments.append(line.comment.value)
        if statement is None or not _ABOUT_SPEED.search(" ".join(comments)):
            return []
        return [DropComments(statement)]

    def _env_cfg(self, value: cst.BaseExpression) -> None:
        """``dict(cudnn_benchmark=True)`` / ``{"cudnn_benchmark": True}``."""
        if dict_literal_items(value) is None:
            return
        if type(value) is cst.Call:
            for arg in value.args:
                if arg.keyword is not None and arg.keyword.value == ENV_BENCHMARK:
                    self._flag(arg.value, arg)
        elif type(value) is cst.Dict:
            for element in value.elements:
                if type(element) is cst.DictElement and (literal_str(element.key) == ENV_BENCHMARK):
                    self._flag(element.value, element)

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(self.context.statement_stack) == 1 and any(
            type(t.target) is cst.Name and t.target.value == ENV_CFG for t in node.targets
        ):
            # A config module's top-level setting (mmengine reads it into Runner.setup_env).
            self._env_cfg(node.value)
        for target in node.targets:
            if self.qualified_name(target.target) == f"{CUDNN}.benchmark":
                if literal_bool(node.value) is True:
                    # ``a = cudnn.benchmark = True``: rewriting the value would change ``a`` too.
                    fix: list[NodeEdit] = []
                    if len(node.targets) == 1 and not self._callers_choice():
                        fix = [Replace(node.value, self._off()), *self._stale_comment()]
                    self.report(node, fix=fix)
                return

    def _callers_choice(self) -> bool:
        """A library function's arm of an ``if`` whose other arm sets the flag to ``False``
        (``if deterministic: ... benchmark = False`` / ``else: ... benchmark = True``): the
        function offers its callers the choice, and switching this arm off takes it away.
        A library module has no ``__main__`` block."""
        stack = self.context.statement_stack
        here = stack[-1] if stack else None
        branch = next((s for s in reversed(stack[:-1]) if type(s) is cst.If), None)
        if here is None or branch is None:
            return False
        if not any(type(s) is cst.FunctionDef for s in stack):
            return False
        if has_main_block(self.context.module):
            return False
        orelse = branch.orelse
        if orelse is None:
            return False
        other_arm = orelse.body if type(orelse) is cst.Else else orelse
        arms = (branch.body, other_arm)
        if not any(_holds(arm, here) for arm in arms):
            return False
        other = next(arm for arm in arms if not _holds(arm, here))
        return any(self._switches_off(statement) for statement in _statements(other))

    def _switches_off(self, statement: cst.CSTNode) -> bool:
        """``<cudnn>.benchmark = False``."""
        if type(statement) is not cst.SimpleStatementLine:
            return False
        for small in statement.body:
            if type(small) is cst.Assign and literal_bool(small.value) is False:
                for target in small.targets:
                    if self.qualified_name(target.target) == f"{CUDNN}.benchmark":
                        return True
        return False

    def _off(self) -> cst.BaseExpression:
        """What the flag is set to instead of True: False, or ``<seed> is None`` where the
        program seeds only when given a seed that is in scope here (``_optional_seeds``)."""
        function = next(
            (s for s in reversed(self.context.statement_stack) if type(s) is cst.FunctionDef),
            None,
        )
        params = set() if function is None else {p.name.value for p in _params(function)}
        here = self.context.statement_stack[-1] if self.context.statement_stack else None
        seeds, order = self._optional_seeds()
        for seed, root, (outer, test) in seeds:
            # The seed's name is bound here: a parameter, or the seed's own test ran before,
            # unconditionally in the same function (a statement of its body, not of a branch).
            same = outer is function and order.get(id(here), -1) > order[id(test)]
            if root in params or same:
                return cst.Comparison(
                    seed,
                    [cst.ComparisonTarget(cst.Is(), cst.Name("None"))],
                )
        return _FALSE

    def _optional_seeds(self) -> tuple[list[_OptionalSeed], dict[int, int]]:
        """The seeds the module passes only when they are set: ``if <seed> is not None:``
        with a seeding call of that seed in its body; each with the first name of the seed
        (``args``), the compound statement the test is directly in (a function, a branch;
        None at module level) and the test.
        With them, the order of the module's statements (by node id). Found once per file,
        when a flag is first met."""
        found = self.context.shared.get(_OPTIONAL_SEEDS)
        if found is not None:
            return found  # type: ignore[no-any-return]
        seeds: list[_OptionalSeed] = []
        order: dict[int, int] = {}
        # The compound statements being walked (None: the module).
        compounds: list[cst.CSTNode | None] = [None]

        def enter(node: cst.CSTNode) -> bool:
            kind = type(node)
            if kind is cst.SimpleStatementLine:
                order[id(node)] = len(order)
                return False  # (its small statements hold no test)
            if kind in COMPOUND_STATEMENTS:
                order[id(node)] = len(order)
                if kind is cst.If:
                    test = cast(cst.If, node)
                    seed = none_guard(test.test)
                    root = None if seed is None else root_name(seed)
                    if seed is not None and root is not None and self._seeds_with(test.body, seed):
                        seeds.append((seed, root, (compounds[-1], test)))
                compounds.append(node)
                return True
            # Only the nodes that hold statements are entered: the walk visits each
            # statement, not each expression and piece of whitespace.
            return type(node) in _HOLDS_STATEMENTS

        def leave(node: cst.CSTNode) -> None:
            if type(node) in COMPOUND_STATEMENTS:
                compounds.pop()

        walk(self.context.module, enter, leave)
        self.context.shared[_OPTIONAL_SEEDS] = seeds, order
        return seeds, order

    def _seeds_with(self, block: cst.BaseSuite, seed: cst.BaseExpression) -> bool:
        """Whether ``block`` calls a seeding function with ``seed``."""
        if type(block) is not cst.IndentedBlock:
            return False
        for line in block.body:
            if type(line) is not cst.SimpleStatementLine:
                continue
            for small in line.body:
                call = small.value if type(small) is cst.Expr else None
                if type(call) is cst.Call:
                    passed = seeding_argument(call, self.qualified_name(call.func))
                    if passed is not None and passed.deep_equals(seed):
                        return True
        return False

    def visit_Call(self, node: cst.Call) -> None:
        name = self.qualified_name(node.func)
        if name == "builtins.setattr":
            found = setattr_arguments(node)
            if (
                found is not None
                and found.name == "benchmark"
                and self.qualified_name(found.holder) == CUDNN
            ):
                self._flag(found.value, node)
        elif name == f"{CUDNN}.flags":
            arg = argument(node, "benchmark", 1)
            if arg is not None:
                self._flag(arg.value, arg)
        elif name in LIGHTNING_TRAINERS:
            arg = argument(node, "benchmark")
            if arg is not None:
                self._flag(arg.value, arg)
        elif name in RUNNERS:
            arg = argument(node, ENV_CFG)
            if arg is not None:
                self._env_cfg(arg.value)


_OPTIONAL_SEEDS = "RPL201 optional seeds"
# The nodes other than compound statements whose children hold statements (blocks,
# branches): what ``_optional_seeds`` enters besides the compound statements.
_HOLDS_STATEMENTS = frozenset(
    {
        cst.Module,
        cst.IndentedBlock,
        cst.Else,
        cst.ExceptHandler,
        cst.ExceptStarHandler,
        cst.Finally,
        cst.MatchCase,
    }
)
# A seed passed only when set: the seed, its first name, the compound statement its test is
# directly in, and the test.
_OptionalSeed = tuple[cst.BaseExpression, str, tuple[cst.CSTNode | None, cst.If]]


def _statements(block: cst.CSTNode) -> tuple[cst.CSTNode, ...]:
    """The statements directly in an ``if`` arm (an ``elif`` is its own ``if``)."""
    if type(block) is cst.If:
        return tuple(block.body.body) if type(block.body) is cst.IndentedBlock else ()
    return tuple(block.body) if type(block) is cst.IndentedBlock else ()


def _holds(block: cst.CSTNode, statement: cst.CSTNode) -> bool:
    """Whether ``statement`` is directly in the ``if`` arm ``block``."""
    return any(s is statement for s in _statements(block))


def _params(function: cst.FunctionDef) -> list[cst.Param]:
    p = function.params
    return [*p.posonly_params, *p.params, *p.kwonly_params]
