"""RPL203: deterministic algorithms or cuDNN determinism switched off explicitly."""

from __future__ import annotations

import libcst as cst

from repro_lint.arguments import argument, literal_bool, literal_int, literal_str, setattr_arguments
from repro_lint.diagnostics import FixSafety
from repro_lint.randomness import CUDNN, LIGHTNING_TRAINERS
from repro_lint.rule import FileContext, Invalid, NodeEdit, Replace, Rule, Valid
from repro_lint.summary import has_main_block

_TRUE = cst.Name("True")
_WARN_ONLY = cst.ensure_type(cst.parse_expression("f(warn_only=True)"), cst.Call).args[0]


class DeterministicModeDisabled(Rule):
    """
    ## What it does
    Flags code that switches determinism off: `torch.use_deterministic_algorithms(False)`,
    `torch.backends.cudnn.deterministic = False` (also through `setattr`),
    `torch.set_deterministic_debug_mode(0)` / `("default")`, Lightning's
    `Trainer(deterministic=False)`, and `torch.backends.cudnn.flags(enabled=True, ...)`
    blocks that leave `deterministic` off.

    ## Why is this bad?
    Each of these undoes deterministic settings made elsewhere: ops that have a deterministic
    kernel go back to the fast, run-to-run varying one (atomic adds on CUDA), and ops without
    one stop raising, so nondeterminism returns silently. Two traps are easy to miss:
    `torch.backends.cudnn.flags()` sets *every* flag for its block, and its `deterministic`
    defaults to `False`; and Lightning's `Trainer(deterministic=False)` calls
    `torch.use_deterministic_algorithms(False)`, overriding what the script set before.

    ## Fix safety
    Unsafe: the value was written explicitly, perhaps for speed. The fix switches it on:
    `use_deterministic_algorithms(False)` becomes `use_deterministic_algorithms(True,
    warn_only=True)`, so ops without a deterministic kernel warn instead of raising. A
    library module (no `__main__` block) that switches determinism off inside a function
    does so for a caller that asks for it (`deterministic=False`): it is reported there
    without a fix, since switching it on would take that choice away.

    ## Options
    None. Values that are not literals are not reported.

    ## Known limitations
    Switching determinism off around one known op and back on afterwards is reported too;
    suppress that line with `# noqa: RPL203` if it is deliberate.
    """

    CODE = "RPL203"
    MESSAGE = "Deterministic mode is switched off here; results can vary between runs"
    FIX_TITLE = "Switch deterministic mode on"
    FIX_SAFETY = FixSafety.UNSAFE
    TRIGGERS = ("deterministic", "flags")
    INVALID = (
        Invalid(
            "import torch\ntorch.use_deterministic_algorithms(False)\n",
            fixed="import torch\ntorch.use_deterministic_algorithms(True, warn_only=True)\n",
            note="switched on warn-only: ops without a deterministic kernel keep running",
        ),
        Invalid(
            "from ultralytics import YOLO\nimport torch\ntorch.use_deterministic_algorithms(False)\n"
            "import warnings\n\nmodel = YOLO('yolov8s.yaml')\nmodel.train(data='data.yaml')\n",
            fixed="from ultralytics import YOLO\nimport torch\n"
            "torch.use_deterministic_algorithms(True, warn_only=True)\n"
            "import warnings\n\nmodel = YOLO('yolov8s.yaml')\nmodel.train(data='data.yaml')\n",
            note="a training script's own switch",
        ),
        Invalid(
            "import os\nimport torch\n\n\ndef init_seeds(seed=0, deterministic=False):\n"
            "    torch.manual_seed(seed)\n    if deterministic:\n"
            "        torch.use_deterministic_algorithms(True, warn_only=True)\n"
            "    else:\n        unset_deterministic()\n\n\ndef unset_deterministic():\n"
            "    torch.use_deterministic_algorithms(False)\n"
            "    torch.backends.cudnn.deterministic = False\n"
            '    os.environ.pop("CUBLAS_WORKSPACE_CONFIG", None)\n',
            note="a library switches it off for a caller that asks (deterministic=False): "
            "reported, but not switched on there (no fix)",
        ),
        Invalid("import torch as T\nT.use_deterministic_algorithms(mode=False)\n"),
        Invalid(
            "from torch.backends import cudnn\ncudnn.deterministic = False\n",
            fixed="from torch.backends import cudnn\ncudnn.deterministic = True\n",
        ),
        Invalid('import torch\nsetattr(torch.backends.cudnn, "deterministic", False)\n'),
        Invalid("import torch\ntorch.set_deterministic_debug_mode(0)\n"),
        Invalid('import torch\ntorch.set_deterministic_debug_mode("default")\n'),
        Invalid(
            "import lightning.pytorch as pl\npl.Trainer(deterministic=False)\n",
            fixed="import lightning.pytorch as pl\npl.Trainer(deterministic=True)\n",
        ),
        Invalid("import torch\nwith torch.backends.cudnn.flags(enabled=True):\n    pass\n"),
        Invalid(
            "import torch\nwith torch.backends.cudnn.flags(enabled=True, deterministic=False):\n"
            "    pass\n",
            fixed="import torch\nwith torch.backends.cudnn.flags(enabled=True, deterministic=True):\n"
            "    pass\n",
        ),
    )
    VALID = (
        "import torch\ntorch.use_deterministic_algorithms(True)\n",
        "import torch\ntorch.use_deterministic_algorithms(True, warn_only=True)\n",
        Valid(
            "import torch\ntorch.use_deterministic_algorithms(args.deterministic)\n",
            note="not a literal",
        ),
        "import torch\ntorch.backends.cudnn.deterministic = True\n",
        'import torch\ntorch.set_deterministic_debug_mode("warn")\n',
        "import lightning as L\nL.Trainer(deterministic=True)\n",
        Valid("import lightning as L\nL.Trainer()\n", note="the default leaves it alone"),
        Valid(
            "import torch\nwith torch.backends.cudnn.flags(enabled=False):\n    pass\n",
            note="cuDNN is off inside the block",
        ),
        "import torch\nwith torch.backends.cudnn.flags(enabled=True, deterministic=True):\n    pass\n",
        Valid("import numpy as np\nnp.use_deterministic_algorithms(False)\n", note="not torch"),
        "import torch\n\nclass Cfg:\n    deterministic = False\n",
    )

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        # A library module (no ``__main__`` block) that switches determinism off inside a
        # function does so for its callers, on their request (``deterministic=False``):
        # switching it on there would take that choice away.
        self._library = not has_main_block(context.module)

    def _fixable(self) -> bool:
        in_function = any(type(s) is cst.FunctionDef for s in self.context.statement_stack)
        return not (self._library and in_function)

    def _flag(
        self,
        value: cst.BaseExpression,
        node: cst.CSTNode,
        fixable: bool = True,
        call: cst.Call | None = None,
    ) -> None:
        if literal_bool(value) is not False:
            return
        fix: list[NodeEdit] = []
        if fixable and self._fixable():
            fix = [Replace(value, _TRUE)]
            if call is not None and argument(call, "warn_only") is None:
                # Warn-only: ops without a deterministic kernel warn instead of raising, so
                # a program that switched the mode off keeps running.
                warn = _WARN_ONLY
                switched = _with_true(call, value)
                fix = [Replace(call, switched.with_changes(args=[*switched.args, warn]))]
        self.report(node, fix=fix)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if self.qualified_name(target.target) == f"{CUDNN}.deterministic":
                self._flag(node.value, node, fixable=len(node.targets) == 1)
                return

    def visit_Call(self, node: cst.Call) -> None:
        name = self.qualified_name(node.func)
        if name in ("torch.use_deterministic_algorithms", "torch.set_deterministic"):
            arg = argument(node, "mode", 0) or argument(node, "d", 0)
            if arg is not None:
                self._flag(arg.value, node, call=node if name.endswith("algorithms") else None)
        elif name == "torch.set_deterministic_debug_mode":
            arg = argument(node, "debug_mode", 0)
            if arg is not None and (
                literal_int(arg.value) == 0 or literal_str(arg.value) == "default"
            ):
                self.report(node)
        elif name == "builtins.setattr":
            found = setattr_arguments(node)
            if (
                found is not None
                and found.name == "deterministic"
                and self.qualified_name(found.holder) == CUDNN
            ):
                self._flag(found.value, node)
        elif name == f"{CUDNN}.flags":
            self._check_flags(node)
        elif name in LIGHTNING_TRAINERS:
            arg = argument(node, "deterministic")
            if arg is not None:
                self._flag(arg.value, arg)

    def _check_flags(self, node: cst.Call) -> None:
        # flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, ...)
        enabled = argument(node, "enabled", 0)
        if enabled is None or literal_bool(enabled.value) is not True:
            return
        deterministic = argument(node, "deterministic", 3)
        if deterministic is None:
            self.report(
                node,
                "`cudnn.flags()` turns `cudnn.deterministic` off inside its block by default",
            )
        else:
            self._flag(deterministic.value, deterministic)


def _with_true(call: cst.Call, value: cst.BaseExpression) -> cst.Call:
    """``call`` with the argument ``value`` replaced by ``True``."""
    return call.with_changes(
        args=[arg.with_changes(value=_TRUE) if arg.value is value else arg for arg in call.args]
    )
