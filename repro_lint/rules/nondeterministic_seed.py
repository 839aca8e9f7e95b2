"""RPL103: a seed taken from the clock, the OS or another unseeded source."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from repro_lint.arguments import (
    argument,
    dict_literal_items,
    has_double_star,
    literal_int,
    literal_str,
)
from repro_lint.diagnostics import FixSafety
from repro_lint.options import Options
from repro_lint.randomness import (
    ENTROPY_SEED_FUNCTIONS,
    HELPERS,
    LIGHTNING_SEED,
    NUMPY_GENERATORS,
    SETUP_HELPERS,
    is_seed_name,
    numpy_draw,
    random_draw,
)
from repro_lint.rule import FileContext, Invalid, NodeEdit, Replace, Rule, Valid
from repro_lint.summary import has_main_block
from repro_lint.walker import children

# Seeding call -> (seed parameter, position).
SEED_PARAMETERS: dict[str, tuple[str, int]] = {
    "torch.manual_seed": ("seed", 0),
    "torch.random.manual_seed": ("seed", 0),
    "torch.cuda.manual_seed": ("seed", 0),
    "torch.cuda.manual_seed_all": ("seed", 0),
    "numpy.random.seed": ("seed", 0),
    "random.seed": ("a", 0),
    **{helper: ("seed", 0) for helper in HELPERS if helper not in SETUP_HELPERS},
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
        *ENTROPY_SEED_FUNCTIONS,
    }
)  # fmt: skip
SOURCE_PREFIXES = ("secrets.", "random.SystemRandom")
# torch.seed() reseeds every device: a CUDA reseed right after it is the same hazard.
_CUDA_ENTROPY = frozenset({"torch.cuda.seed", "torch.cuda.seed_all"})
_CPU_ENTROPY = frozenset({"torch.seed", "torch.random.seed"})
# The mmengine config key whose ``seed`` the Runner replaces by a fresh random one when None.
RANDOMNESS = "randomness"
# mmengine's Runner built directly: without ``randomness=`` it takes ``dict(seed=None)``.
RUNNERS = frozenset({"mmengine.runner.Runner", "mmengine.runner.runner.Runner"})
# detectron2's config key for the seed its setup uses: -1 by default, and a negative seed
# makes default_setup call seed_all_rng(None), a fresh seed from os.urandom and the clock.
D2_SEED = "SEED"


@dataclass(frozen=True)
class _Assigned:
    """A value assigned to a name, attribute or subscript (``seed``, ``opt.manualSeed``,
    ``opt["manual_seed"]``), where the rule may report it."""

    node: cst.CSTNode
    value: cst.BaseExpression
    anchor: tuple[cst.CSTNode, ...]
    # Assigned to a parameter of the enclosing function (``if seed is None: seed = ...``):
    # the function's documented way to pick a fresh seed when its caller passes none.
    parameter: bool = False


def _text(node: cst.BaseExpression) -> str | None:
    """A target or argument as the same text wherever it is written: ``opt.manualSeed``,
    ``opt['manual_seed']``; None for anything else."""
    if type(node) is cst.Name:
        return node.value
    if type(node) is cst.Attribute:
        base = _text(node.value)
        return None if base is None else f"{base}.{node.attr.value}"
    if type(node) is cst.Subscript and len(node.slice) == 1:
        index = node.slice[0].slice
        base = _text(node.value)
        key = literal_str(index.value) if type(index) is cst.Index else None
        return None if base is None or key is None else f"{base}[{key!r}]"
    return None


def _last_name(text: str) -> str:
    return text.rsplit(".", 1)[-1].rsplit("[", 1)[-1].strip("'\"]")


class _Sources(cst.CSTVisitor):
    """Finds nondeterministic sources in a seed expression. A fallback (``args.seed or
    int(time.time())``, ``s if s is not None else time.time()``) counts only when the
    primary value is an option that defaults to None: then the default run takes it."""

    def __init__(self, rule: NondeterministicSeed) -> None:
        self.rule = rule
        self.found: list[str] = []

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> bool:
        node.left.visit(self)
        if self.rule.none_by_default(node.left):
            node.right.visit(self)
        return False

    def visit_IfExp(self, node: cst.IfExp) -> bool:
        node.body.visit(self)
        if self.rule.none_by_default(node.test):
            node.orelse.visit(self)
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
        return type(value) is cst.Call and self.rule.qualified_name(value.func) == "builtins.str"


class NondeterministicSeed(Rule):
    """
    ## What it does
    Flags seeds that are different in every run, where the seed is derived: a value
    computed from `time.time()` (and the other clocks), `os.urandom`, `os.getpid()`,
    `uuid`, `secrets`, `datetime.now()`, `hash()` of a string, a framework's fresh random
    seed (`mmengine.dist.sync_random_seed()`), or a draw from a generator the file never
    seeds (`random.randint(...)`). It reports the derivation once, however many seeding
    calls the value feeds: the assignment (`seed = int(time.time())`,
    `args.seed = random.randint(1, 10000)`, also as the fallback when no seed was given),
    or the seeding call when the value is computed in its argument. It also flags seeding
    calls that fall back to OS entropy when given no seed or `None` (`random.seed()`,
    `np.random.seed()`, `seed_everything()`), `torch.seed()`, which seeds from entropy by
    design, and an mmengine `randomness=dict(seed=None)` (the Runner then draws a fresh
    seed), also when the seed is an option that defaults to None, or a `Runner(...)` built
    without `randomness=` (its default) at module level or in a file run as a program (with
    a `__main__` block, or a notebook); likewise detectron2's `default_setup(cfg, ...)`
    in a file that never sets `SEED` (`cfg.SEED = ...`, `merge_from_list(["SEED", ...])`):
    the key defaults to -1, which makes detectron2 seed from `os.urandom` and the clock.

    ## Why is this bad?
    The generators are seeded, so the code looks reproducible, but with a value nobody can
    repeat: each run draws different numbers, and at best a log records which.
    `seed_everything()` without a seed drew a random one before Lightning 2.2; since then
    it silently takes `PL_GLOBAL_SEED` from the environment, else 0.

    ## Fix safety
    Unsafe: the configured seed replaces the entropy at the derivation
    (`seed = int(time.time())` becomes `seed = <seed>`; a fallback taken only when no
    seed was given stays a fallback, so seeds that callers pass are kept, and the variable
    stays in use); a seeding call given no seed gets `<seed>`; a statement `torch.seed()`
    becomes `torch.manual_seed(<seed>)`. Code that deliberately varies the seed between
    runs, to average over seeds, changes meaning. No fix is offered where the entropy is a
    library function's fallback for a seed parameter its caller left out (in a module of a
    package without a `__main__` block: `def seed(self, seed=None): if seed is None: seed
    = ...`): a constant would give every such call the same seed; the caller's seed is the
    fix. Nor for a `torch.seed()` that follows a fixed seed in the same function
    (reseeding from entropy after the reproducible part, on purpose).

    ## Options
    `seed` (default 0) is the value inserted.

    ## Known limitations
    A fallback expression (`args.seed or int(time.time())`) is reported only when the
    primary value is a command-line option of the same file that defaults to None. A
    variable is followed one assignment back in the same function (or at module level).
    A detectron2 `SEED` set only in a YAML config file or another module is not seen.

    ## References
    - Python `random.seed`: "If a is omitted or None, the current system time is used"
    - NumPy `RandomState.seed`; `torch.seed`; mmengine `set_random_seed`
    """

    CODE = "RPL103"
    MESSAGE = "The seed is different in every run"
    FIX_TITLE = "Seed with the configured value"
    FIX_SAFETY = FixSafety.UNSAFE
    TRIGGERS = ("seed", "default_setup", "default_rng", "RandomState", "SeedSequence",
                "Random", "PCG64", "MT19937", "Philox", "SFC64", "Runner")  # fmt: skip
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
            "    seed = 0\n    torch.manual_seed(seed)\n",
            note="reported at the derivation; the fix leaves no unused variable",
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
        Invalid(
            "import argparse\nimport random\nimport numpy as np\nimport torch\n\n"
            "parser = argparse.ArgumentParser()\nparser.add_argument('--manualSeed', type=int)\n"
            "opt = parser.parse_args()\nif opt.manualSeed is None:\n"
            "    opt.manualSeed = random.randint(1, 10000)\nrandom.seed(opt.manualSeed)\n"
            "np.random.seed(opt.manualSeed)\ntorch.manual_seed(opt.manualSeed)\n",
            fixed="import argparse\nimport random\nimport numpy as np\nimport torch\n\n"
            "parser = argparse.ArgumentParser()\nparser.add_argument('--manualSeed', type=int)\n"
            "opt = parser.parse_args()\nif opt.manualSeed is None:\n"
            "    opt.manualSeed = 0\nrandom.seed(opt.manualSeed)\n"
            "np.random.seed(opt.manualSeed)\ntorch.manual_seed(opt.manualSeed)\n",
            note="an option's entropy fallback feeding three seeding calls: one finding, "
            "at the derivation; a seed passed on the command line is kept",
        ),
        Invalid(
            "import random\nfrom mypkg.utils import set_random_seed\n\n\ndef setup(opt):\n"
            "    seed = opt.get('manual_seed')\n    if seed is None:\n"
            "        seed = random.randint(1, 10000)\n    set_random_seed(seed + opt['rank'])\n",
            fixed="import random\nfrom mypkg.utils import set_random_seed\n\n\ndef setup(opt):\n"
            "    seed = opt.get('manual_seed')\n    if seed is None:\n"
            "        seed = 0\n    set_random_seed(seed + opt['rank'])\n",
            note="a seed derived for a project's own seeding helper",
        ),
        Invalid(
            "from typing import Optional\n\nfrom mmengine.dist import sync_random_seed\n\n\n"
            "def set_random_seed(seed: Optional[int] = None) -> int:\n    if seed is None:\n"
            "        seed = sync_random_seed()\n    return seed\n",
            note="a framework's fresh random seed",
        ),
        Invalid(
            "randomness = dict(seed=None, deterministic=False)\n",
            note="an mmengine config: the Runner replaces seed=None by a fresh random seed",
        ),
        Invalid(
            "from mmengine.runner import Runner\n\n"
            "runner = Runner(model=model, work_dir='work', train_dataloader=loader)\n",
            note="no `randomness=`: the Runner's default is seed=None",
        ),
        Invalid(
            "import argparse\n\n\ndef parse_args():\n    parser = argparse.ArgumentParser()\n"
            "    parser.add_argument('--seed', type=int, default=None)\n"
            "    return parser.parse_args()\n\n\ndef merge(cfg, args):\n"
            "    cfg.randomness = dict(seed=args.seed, deterministic=False)\n",
            note="a seed option defaulting to None handed to the Runner's randomness",
        ),
        Invalid(
            "import torch\n\n\ndef finish():\n    torch.seed()\n    torch.cuda.seed_all()\n",
            fixed="import torch\n\n\ndef finish():\n    torch.manual_seed(0)\n"
            "    torch.cuda.manual_seed_all(0)\n",
            note="one finding, on torch.seed(): it reseeds every device, so the CUDA reseed "
            "right after is the same hazard (until the fix makes it one of its own)",
        ),
        Invalid(
            "import torch\n\n\ndef main():\n    torch.manual_seed(42)\n    train()\n"
            "    # Remove manual seed\n    torch.seed()\n",
            note="reseeded from entropy after the fixed seed, on purpose: reported, no fix",
        ),
        Invalid(
            "import argparse\nimport time\nimport torch\n\nparser = argparse.ArgumentParser()\n"
            "parser.add_argument('--seed', type=int)\nargs = parser.parse_args()\n"
            "torch.manual_seed(args.seed or int(time.time()))\n",
            note="the fallback is what a default run takes: the option defaults to None",
        ),
        Invalid(
            "from detectron2.config import get_cfg\nfrom detectron2.engine import default_setup\n"
            "\n\ndef setup(args):\n    cfg = get_cfg()\n    cfg.merge_from_file(args.config_file)\n"
            "    cfg.merge_from_list(args.opts)\n    default_setup(cfg, args)\n    return cfg\n",
            note="detectron2's SEED keeps its default -1: default_setup seeds from entropy",
        ),
    )
    VALID = (
        Valid(
            "from detectron2.config import get_cfg\nfrom detectron2.engine import default_setup\n"
            "\n\ndef setup(args):\n    cfg = get_cfg()\n    cfg.merge_from_file(args.config_file)\n"
            "    cfg.SEED = 42\n    default_setup(cfg, args)\n    return cfg\n",
            note="detectron2's seed is set: default_setup seeds with it",
        ),
        "import torch\ntorch.manual_seed(0)\n",
        "import numpy as np\nnp.random.seed(args.seed)\n",
        Valid(
            "import time\nimport torch\ntorch.manual_seed(args.seed or int(time.time()))\n",
            note="a fallback of a value not known to default to None",
        ),
        Valid(
            "import argparse\nimport time\nimport torch\n\nparser = argparse.ArgumentParser()\n"
            "parser.add_argument('--seed', type=int, default=42)\nargs = parser.parse_args()\n"
            "torch.manual_seed(args.seed or int(time.time()))\n",
            note="the option has a number by default: the fallback is not the default run",
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
        Valid(
            "from mmengine.runner import Runner\n\n"
            "runner = Runner(model=model, randomness=dict(seed=42, deterministic=True))\n",
            note="a fixed seed for the Runner",
        ),
        Valid(
            "from mmengine.runner import Runner\n\n"
            "runner = Runner(model=model, **cfg)\n"
            "other = Runner.from_cfg(cfg)\n",
            note="the settings come from elsewhere (a config this file does not show)",
        ),
        Valid(
            "from mmengine.runner import Runner\n\n\nclass TestHook:\n"
            "    def test_train(self):\n        Runner(model=model, work_dir='w').train()\n",
            note="a unit test's Runner, in a file that is not run as a program",
        ),
        Valid(
            "import time\n\nif __name__ == '__main__':\n    seeded = time.time()\n"
            "    print(seeded)\n",
            note="a look-alike name: nothing seeds with it and its name is not a seed's",
        ),
    )

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        # Per function scope: the last value assigned to each name, attribute or subscript.
        self._values: list[dict[str, _Assigned]] = [{}]
        # Per function scope: torch.seed() has reseeded every device.
        self._reseeded: list[bool] = [False]
        # Per function scope: its parameters, and whether it seeded with a fixed value.
        self._parameters: list[frozenset[str]] = [frozenset()]
        self._seeded: list[bool] = [False]
        # A module of a package with no ``__main__`` block: library code, whose functions
        # document what they do for their callers.
        has_main = has_main_block(context.module)
        self._library = "." in (context.module_name or "") and not has_main
        # A file run as a program (a ``__main__`` block, a notebook): where a Runner it
        # builds trains the program's model, not a unit test's.
        self._program = has_main or (context.path is not None and context.path.suffix == ".ipynb")
        self._statements: set[int] = set()
        self._pending: list[tuple[cst.Call, cst.Arg, cst.BaseExpression]] = []
        self._derived: dict[int, _Assigned] = {}
        self._configs: list[tuple[cst.CSTNode, cst.BaseExpression, tuple[cst.CSTNode, ...]]] = []
        self._options = Options(context.names)
        # detectron2 setups called with a config, and whether the file sets its SEED.
        self._setups: list[tuple[cst.Call, tuple[cst.CSTNode, ...]]] = []
        self._sets_d2_seed = False
        self.seeds_random = False
        self.seeds_numpy = False

    def none_by_default(self, node: cst.BaseExpression) -> bool:
        """Whether ``node`` reads an option that defaults to None (``args.seed``), directly
        or in a test (``args.seed is not None``)."""
        if type(node) is cst.Comparison:
            node = node.left
        option = self._options.option_of(node)
        return option is not None and option.default_is_none

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._values.append({})
        self._reseeded.append(False)
        params = node.params
        self._parameters.append(
            frozenset(
                p.name.value
                for p in (*params.posonly_params, *params.params, *params.kwonly_params)
            )
        )
        self._seeded.append(False)
        self._options.visit_FunctionDef(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._values.pop()
        self._reseeded.pop()
        self._parameters.pop()
        self._seeded.pop()

    def visit_Assign(self, node: cst.Assign) -> None:
        self._options.visit_Assign(node)
        if len(node.targets) != 1:
            return
        text = _text(node.targets[0].target)
        if text is None:
            return
        assigned = _Assigned(
            node, node.value, self.anchor(), self._library and text in self._parameters[-1]
        )
        self._values[-1][text] = assigned
        name = _last_name(text)
        if name == D2_SEED:
            self._sets_d2_seed = True
        if is_seed_name(name):
            # A value assigned to a seed is derived for seeding, whoever takes it.
            self._derived[id(node)] = assigned
        elif name == RANDOMNESS:
            self._configs.append((node, node.value, self.anchor()))

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        # ``cfg.merge_from_list(["SEED", 42])``, ``cfg["SEED"] = 42``.
        if literal_str(node) == D2_SEED:
            self._sets_d2_seed = True

    def visit_Expr(self, node: cst.Expr) -> None:
        # ``torch.seed()`` as a statement: its value is unused, so manual_seed can replace it.
        if type(node.value) is cst.Call:
            self._statements.add(id(node.value))

    def visit_Call(self, node: cst.Call) -> None:
        self._options.visit_Call(node)
        randomness = argument(node, RANDOMNESS)
        if randomness is not None:
            self._configs.append((node, randomness.value, self.anchor()))
        qualified = self.qualified_name(node.func)
        if qualified is None:
            return
        if (
            qualified in RUNNERS
            and randomness is None
            and not any(a.star for a in node.args)
            and (self._program or len(self._values) == 1)
        ):
            self.report(
                node,
                "mmengine's Runner seeds from entropy here: without `randomness=` it takes "
                "`dict(seed=None)` (a fresh random seed every run)",
            )
            return
        if qualified in SETUP_HELPERS:
            self._setups.append((node, self.anchor()))
            return
        if qualified in ENTROPY_SEEDERS:
            if qualified in _CUDA_ENTROPY and self._reseeded[-1]:
                return
            if qualified in ("torch.seed", "torch.random.seed"):
                self._reseeded[-1] = True
            self._entropy_seeder(node, ENTROPY_SEEDERS[qualified], qualified in _CPU_ENTROPY)
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
        text = _text(arg.value)
        if literal_int(arg.value) is not None or text is not None:
            self._seeded[-1] = True
        assigned = self._assigned(text) if text is not None else None
        # Seeding a generator with a value drawn from that same generator does not seed it
        # before the draw (``s = random.randint(...)``; ``random.seed(s)``).
        drawn = assigned is not None and self._draws(assigned.value)
        if qualified == "random.seed" and not drawn:
            self.seeds_random = True
        elif qualified == "numpy.random.seed" and not drawn:
            self.seeds_numpy = True
        if assigned is not None:
            # Judged where the value is derived: one finding however many calls it feeds.
            self._derived[id(assigned.node)] = assigned
            return
        self._pending.append((node, arg, arg.value))

    def _draws(self, value: cst.BaseExpression) -> bool:
        """Whether an expression draws from random's or numpy's global generator."""
        stack: list[cst.CSTNode] = [value]
        while stack:
            node = stack.pop()
            if type(node) is cst.Call:
                qualified = self.qualified_name(node.func)
                if qualified is not None and (random_draw(qualified) or numpy_draw(qualified)):
                    return True
            stack.extend(children(node))
        return False

    def _assigned(self, text: str) -> _Assigned | None:
        """The value last assigned to ``text`` in this function (or at module level)."""
        return self._values[-1].get(text) or self._values[0].get(text)

    def leave_Module(self, original_node: cst.Module) -> None:
        # Judged at the end: ``random.randint`` feeds a good seed if random is seeded anywhere.
        for assigned in self._derived.values():
            if self._entropy(assigned.value):
                # A function's own fresh seed for callers that pass none is its documented
                # behaviour: a constant there would give every such call the same seed.
                fix = [] if assigned.parameter else [Replace(assigned.value, self._seed())]
                self.report(assigned.node, fix=fix, anchor=assigned.anchor)
        for call, arg, value in self._pending:
            if self._entropy(value):
                self.report(call, fix=[Replace(arg.value, self._seed())])
        for node, value, anchor in self._configs:
            items = dict_literal_items(value)
            seed = items.get("seed") if items is not None else None
            if seed is not None and (_is_none(seed) or self.none_by_default(seed)):
                self.report(node, anchor=anchor)

        if not self._sets_d2_seed:
            for call, anchor in self._setups:
                self.report(
                    call,
                    "detectron2 seeds from entropy here: `cfg.SEED` keeps its default -1 "
                    "(a negative seed means a fresh random one)",
                    anchor=anchor,
                )

    def _entropy(self, value: cst.BaseExpression) -> bool:
        sources = _Sources(self)
        value.visit(sources)
        return bool(sources.found)

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

    def _entropy_seeder(self, node: cst.Call, replacement: str, everything: bool) -> None:
        func = node.func
        fix: list[NodeEdit] = []
        if everything and self._seeded[-1]:
            # ``torch.seed()`` after a fixed seed in the same function: reseeding from
            # entropy on purpose, after the reproducible part; a constant would undo that.
            self.report(node, fix=fix)
            return
        if id(node) in self._statements and type(func) is cst.Attribute and not node.args:
            receiver = self.context.module.code_for_node(func.value)
            new = cst.parse_expression(f"{receiver}.{replacement}({self.context.config.seed})")
            fix = [Replace(node, new)]
        self.report(node, fix=fix)


def _is_none(node: cst.BaseExpression) -> bool:
    return type(node) is cst.Name and node.value == "None"
