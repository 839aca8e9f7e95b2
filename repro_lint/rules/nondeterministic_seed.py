"""RPL103: a seed taken from the clock, the OS or another unseeded source."""

from __future__ import annotations

import libcst as cst

from repro_lint.arguments import argument, has_double_star
from repro_lint.diagnostics import FixSafety
from repro_lint.randomness import HELPERS, LIGHTNING_SEED, NUMPY_GENERATORS, numpy_draw, random_draw
from repro_lint.rule import FileContext, Invalid, NodeEdit, Replace, Rule, Valid

# Seeding call -> (seed parameter, position).
SEED_PARAMETERS: dict[str, tuple[str, int]] = {
    "torch.manual_seed": ("seed", 0),
    "torch.random.manual_seed": ("seed", 0),
    "torch.cuda.manual_seed": ("seed", 0),
    "torch.cuda.manual_seed_all": ("seed", 0),
    "numpy.random.seed": ("seed", 0),
    "random.seed": ("a", 0),
    **{helper: ("seed", 0) for helper in HELPERS},
    **NUMPY_GENERATORS,
}
# Called without a seed (or with None) these fall back to OS entropy. Lightning before 2.2
# drew a random seed; since then it reads PL_GLOBAL_SEED and else uses 0, which still makes
# the run depend on the environment.
ENTROPY_WITHOUT_SEED = frozenset(
    {
        "random.seed",
        "numpy.random.seed",
        "detectron2.utils.env.seed_all_rng",
        "mmengine.runner.set_random_seed",
        "mmengine.runner.utils.set_random_seed",
        *LIGHTNING_SEED,
    }
)
# Set a nondeterministic seed whatever they are given -> what to call instead.
ENTROPY_SEEDERS = {
    "torch.seed": "manual_seed",
    "torch.random.seed": "manual_seed",
    "torch.cuda.seed": "manual_seed",
    "torch.cuda.seed_all": "manual_seed_all",
}
SOURCES = frozenset(
    {
        "time.time", "time.time_ns", "time.perf_counter", "time.perf_counter_ns",
        "time.monotonic", "time.monotonic_ns", "time.process_time", "time.process_time_ns",
        "time.thread_time", "time.thread_time_ns", "time.clock_gettime",
        "time.clock_gettime_ns", "os.urandom", "os.getrandom", "os.getpid", "os.getppid",
        "uuid.uuid1", "uuid.uuid4", "datetime.datetime.now", "datetime.datetime.utcnow",
        "datetime.datetime.today", "datetime.date.today", "torch.seed", "torch.random.seed",
    }
)  # fmt: skip
SOURCE_PREFIXES = ("secrets.", "random.SystemRandom")


class _Sources(cst.CSTVisitor):
    """Finds nondeterministic sources in a seed expression (not in ``or``/``if`` fallbacks)."""

    def __init__(self, rule: NondeterministicSeed) -> None:
        self.rule = rule
        self.found: list[str] = []

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> bool:
        # ``args.seed or int(time.time())``: only the left operand is always the seed.
        node.left.visit(self)
        return False

    def visit_IfExp(self, node: cst.IfExp) -> bool:
        # ``s if s is not None else time.time()``: the chosen seed decides.
        node.body.visit(self)
        return False

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.rule.qualified_name(node.func)
        if qualified is None:
            return
        if (
            qualified in SOURCES
            or qualified.startswith(SOURCE_PREFIXES)
            or self._unseeded_draw(qualified)
            or self._string_hash(qualified, node)
        ):
            self.found.append(qualified)

    def _unseeded_draw(self, qualified: str) -> bool:
        if random_draw(qualified):
            return not self.rule.seeds_random
        return numpy_draw(qualified) and not self.rule.seeds_numpy

    def _string_hash(self, qualified: str, call: cst.Call) -> bool:
        """str hashes change with every interpreter (PYTHONHASHSEED); int hashes do not."""
        if qualified != "builtins.hash" or not call.args:
            return False
        value = call.args[0].value
        if isinstance(value, cst.SimpleString | cst.FormattedString | cst.ConcatenatedString):
            return True
        return (
            isinstance(value, cst.Call) and self.rule.qualified_name(value.func) == "builtins.str"
        )


class NondeterministicSeed(Rule):
    """
    ## What it does
    Flags seeds that are different in every run: a seed computed from `time.time()` (and
    the other clocks), `os.urandom`, `os.getpid()`, `uuid`, `secrets`, `datetime.now()`,
    `hash()` of a string, or a draw from a generator the file never seeds
    (`random.randint(...)`), also through a variable assigned just before; seeding calls
    that fall back to OS entropy when given no seed or `None` (`random.seed()`,
    `np.random.seed()`, `seed_everything()`); and `torch.seed()`, which seeds from entropy
    by design. It covers `torch.manual_seed`, `torch.cuda.manual_seed(_all)`,
    `np.random.seed`, `random.seed`, generator constructors and the known seeding helpers.

    ## Why is this bad?
    The generators are seeded, so the code looks reproducible, but with a value nobody can
    repeat: each run draws different numbers and nothing records which.
    `seed_everything()` without a seed drew a random one before Lightning 2.2; since then
    it silently takes `PL_GLOBAL_SEED` from the environment, else 0.

    ## Fix safety
    Unsafe: the configured seed replaces the value (`np.random.seed(int(time.time()))`
    becomes `np.random.seed(<seed>)`; a statement `torch.seed()` becomes
    `torch.manual_seed(<seed>)`). Code that deliberately varies the seed between runs, to
    average over seeds, changes meaning.

    ## Options
    `seed` (default 0) is the value inserted.

    ## Known limitations
    A fallback is not reported (`args.seed or int(time.time())`, or a conditional
    expression): passing the seed repeats the run. A variable is followed one assignment
    back in the same function.

    ## References
    - Python `random.seed`: "If a is omitted or None, the current system time is used"
    - NumPy `RandomState.seed`; `torch.seed`
    """

    CODE = "RPL103"
    MESSAGE = "The seed is different in every run"
    FIX_TITLE = "Seed with the configured value"
    FIX_SAFETY = FixSafety.UNSAFE
    TRIGGERS = ("seed", "default_rng", "RandomState", "SeedSequence", "Random", "PCG64",
                "MT19937", "Philox", "SFC64")  # fmt: skip
    INVALID = (
        Invalid(
            "import time\nimport numpy as np\nnp.random.seed(int(time.time()))\n",
            fixed="import time\nimport numpy as np\nnp.random.seed(0)\n",
        ),
        Invalid(
            "import random\nrandom.seed()\n",
            fixed="import random\nrandom.seed(0)\n",
        ),
        Invalid(
            "import numpy as np\nnp.random.seed(None)\n",
            fixed="import numpy as np\nnp.random.seed(7)\n",
            config={"seed": 7},
        ),
        Invalid(
            "import torch\ntorch.seed()\n",
            fixed="import torch\ntorch.manual_seed(0)\n",
        ),
        Invalid("import torch\ns = torch.seed()\n", note="its value is used: no fix"),
        Invalid(
            "import os\nimport torch\n\n\ndef main():\n"
            "    seed = int.from_bytes(os.urandom(4), 'little')\n    torch.manual_seed(seed)\n",
            fixed="import os\nimport torch\n\n\ndef main():\n"
            "    seed = int.from_bytes(os.urandom(4), 'little')\n    torch.manual_seed(0)\n",
            note="through a variable",
        ),
        Invalid(
            "from datetime import datetime\nimport lightning as L\n"
            "L.seed_everything(int(datetime.now().timestamp()))\n",
        ),
        Invalid(
            "import random\nimport torch\ntorch.manual_seed(random.randint(0, 2**31))\n",
            note="random itself is never seeded",
        ),
        Invalid(
            "from pytorch_lightning import seed_everything\nseed_everything()\n",
            fixed="from pytorch_lightning import seed_everything\nseed_everything(0)\n",
        ),
        Invalid(
            "import torch\ntorch.cuda.manual_seed_all(hash('experiment-1'))\n",
            note="str hashes are salted per interpreter",
        ),
        Invalid("import uuid\nimport numpy as np\nrng = np.random.default_rng(uuid.uuid4().int)\n"),
    )
    VALID = (
        "import torch\ntorch.manual_seed(0)\n",
        "import numpy as np\nnp.random.seed(args.seed)\n",
        Valid(
            "import time\nimport torch\ntorch.manual_seed(args.seed or int(time.time()))\n",
            note="a fallback: passing --seed repeats the run",
        ),
        Valid(
            "import random\nimport torch\nrandom.seed(1)\ntorch.manual_seed(random.randint(0, 100))\n",
            note="derived from a seeded generator",
        ),
        Valid(
            "import time\nimport torch\nstart = time.time()\ntorch.manual_seed(42)\n",
            note="the clock is read, but not for the seed",
        ),
        Valid(
            "import numpy as np\nrng = np.random.default_rng()\n",
            note="an unseeded generator object is RPL102's finding",
        ),
        Valid("import lightning as L\nL.seed_everything(123)\n"),
        Valid(
            "import torch\ntorch.manual_seed(hash(7))\n",
            note="int hashes do not depend on PYTHONHASHSEED",
        ),
        Valid(
            "import mylib\nmylib.seed()\nmylib.manual_seed(mylib.time())\n",
            note="look-alikes from another library",
        ),
        Valid("import random\nrandom.seed(**kwargs)\n"),
    )

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        # Per function scope: the last simple value assigned to each name.
        self._values: list[dict[str, cst.BaseExpression]] = [{}]
        self._statements: set[int] = set()
        self._pending: list[tuple[cst.Call, cst.Arg, cst.BaseExpression]] = []
        self.seeds_random = False
        self.seeds_numpy = False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._values.append({})

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._values.pop()

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            self._values[-1][node.targets[0].target.value] = node.value

    def visit_Expr(self, node: cst.Expr) -> None:
        # ``torch.seed()`` as a statement: its value is unused, so manual_seed can replace it.
        if isinstance(node.value, cst.Call):
            self._statements.add(id(node.value))

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.qualified_name(node.func)
        if qualified is None:
            return
        if qualified in ENTROPY_SEEDERS:
            self._entropy_seeder(node, ENTROPY_SEEDERS[qualified])
            return
        parameter = SEED_PARAMETERS.get(qualified)
        if parameter is None and qualified in self.context.config.seed_functions:
            parameter = ("seed", 0)
        if parameter is None:
            return
        arg = argument(node, *parameter)
        if arg is None or _is_none(arg.value):
            if qualified in ENTROPY_WITHOUT_SEED and not has_double_star(node):
                self._without_seed(node, arg)
            return
        if qualified == "random.seed":
            self.seeds_random = True
        elif qualified == "numpy.random.seed":
            self.seeds_numpy = True
        value = arg.value
        if isinstance(value, cst.Name):
            value = self._assigned(value.value) or value
        self._pending.append((node, arg, value))

    def _assigned(self, name: str) -> cst.BaseExpression | None:
        """The value last assigned to ``name`` in this function (or at module level)."""
        return self._values[-1].get(name) or self._values[0].get(name)

    def leave_Module(self, original_node: cst.Module) -> None:
        # Judged at the end: ``random.randint`` feeds a good seed if random is seeded anywhere.
        for call, arg, value in self._pending:
            sources = _Sources(self)
            value.visit(sources)
            if sources.found:
                self.report(call, fix=[Replace(arg.value, self._seed())])

    def _seed(self) -> cst.Integer:
        return cst.Integer(str(self.context.config.seed))

    def _without_seed(self, node: cst.Call, arg: cst.Arg | None) -> None:
        fix: list[NodeEdit]
        if arg is None:
            if any(a.star for a in node.args):
                return
            fix = [Replace(node, node.with_changes(args=[cst.Arg(self._seed()), *node.args]))]
        else:
            fix = [Replace(arg.value, self._seed())]
        self.report(node, fix=fix)

    def _entropy_seeder(self, node: cst.Call, replacement: str) -> None:
        func = node.func
        fix: list[NodeEdit] = []
        if id(node) in self._statements and isinstance(func, cst.Attribute) and not node.args:
            receiver = self.context.module.code_for_node(func.value)
            new = cst.parse_expression(f"{receiver}.{replacement}({self.context.config.seed})")
            fix = [Replace(node, new)]
        self.report(node, fix=fix)


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"
