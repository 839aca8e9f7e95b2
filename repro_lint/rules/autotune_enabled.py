"""RPL205: inductor autotuning, which picks kernels by timing them in each run."""

from __future__ import annotations

import libcst as cst

from repro_lint.arguments import (
    argument,
    dict_literal_items,
    literal_bool,
    literal_str,
    setattr_arguments,
)
from repro_lint.rule import FileContext, Invalid, Rule, Valid

INDUCTOR_CONFIG = "torch._inductor.config"
AUTOTUNE_MODES = frozenset({"max-autotune", "max-autotune-no-cudagraphs"})
AUTOTUNE_OPTIONS = frozenset(
    {"max_autotune", "max_autotune_gemm", "max_autotune_pointwise", "coordinate_descent_tuning"}
)
AUTOTUNE_ENV = frozenset(
    {
        "TORCHINDUCTOR_MAX_AUTOTUNE",
        "TORCHINDUCTOR_MAX_AUTOTUNE_GEMM",
        "TORCHINDUCTOR_MAX_AUTOTUNE_POINTWISE",
        "TORCHINDUCTOR_COORDINATE_DESCENT_TUNING",
    }
)


class AutotuneEnabled(Rule):
    """
    ## What it does
    Flags compiler autotuning: `torch.compile(mode="max-autotune")` (also
    `"max-autotune-no-cudagraphs"`, and as a decorator), `torch.compile(options={"max_autotune":
    True})`, `torch._inductor.config.max_autotune = True` and its `_gemm`/`_pointwise`/
    `coordinate_descent_tuning` siblings (assigned, through `setattr` or
    `torch._inductor.config.patch(...)`), and the `TORCHINDUCTOR_MAX_AUTOTUNE*` /
    `TORCHINDUCTOR_COORDINATE_DESCENT_TUNING` environment variables set in the program.

    ## Why is this bad?
    Autotuning benchmarks candidate kernels (GEMM templates, block sizes, reduction splits)
    on the device and keeps the fastest. The winner depends on timing noise and on the
    autotune cache, and different kernels sum in different orders, so the compiled model can
    produce different numbers from one run to the next, with every seed fixed.

    ## Fix safety
    No automatic fix: choose `mode="default"` or `"reduce-overhead"`, or keep autotuning and
    set `torch._inductor.config.deterministic = True` (recent torch releases), which skips
    on-device benchmarking wherever it could change numerics.

    ## Options
    None. The rule is silent in a file that sets `torch._inductor.config.deterministic = True`.
    """

    CODE = "RPL205"
    MESSAGE = "Autotuning picks kernels by timing them: the choice can differ between runs"
    TRIGGERS = ("autotune", "coordinate_descent", "AUTOTUNE", "COORDINATE_DESCENT")
    INVALID = (
        Invalid("import torch\nmodel = torch.compile(model, mode='max-autotune')\n"),
        Invalid(
            "import torch\n\n@torch.compile(mode='max-autotune-no-cudagraphs')\n"
            "def step(x):\n    return x\n"
        ),
        Invalid('import torch\nf = torch.compile(f, options={"max_autotune": True})\n'),
        Invalid("import torch._inductor.config as cfg\ncfg.max_autotune_gemm = True\n"),
        Invalid("import torch\ntorch._inductor.config.coordinate_descent_tuning = True\n"),
        Invalid(
            "from torch._inductor import config\nwith config.patch(max_autotune=True):\n    pass\n"
        ),
        Invalid('import torch\nsetattr(torch._inductor.config, "max_autotune", True)\n'),
        Invalid('import os\nos.environ["TORCHINDUCTOR_MAX_AUTOTUNE"] = "1"\n'),
    )
    VALID = (
        "import torch\nmodel = torch.compile(model)\n",
        "import torch\nmodel = torch.compile(model, mode='reduce-overhead')\n",
        Valid("import torch\nmodel = torch.compile(model, mode=args.mode)\n", note="not a literal"),
        "import torch\ntorch._inductor.config.max_autotune = False\n",
        Valid(
            "import torch\ntorch._inductor.config.deterministic = True\n"
            "model = torch.compile(model, mode='max-autotune')\n",
            note="inductor's deterministic mode skips benchmarking that changes numerics",
        ),
        Valid("import mylib\nmylib.compile(model, mode='max-autotune')\n", note="not torch"),
        'import os\nos.environ["TORCHINDUCTOR_MAX_AUTOTUNE"] = "0"\n',
    )

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self._found: list[tuple[cst.CSTNode, tuple[cst.CSTNode, ...]]] = []
        self._deterministic = False

    def _option(self, key: str, value: cst.BaseExpression, node: cst.CSTNode) -> None:
        if key == "deterministic" and literal_bool(value) is True:
            self._deterministic = True
        elif key in AUTOTUNE_OPTIONS and literal_bool(value) is True:
            self._found.append((node, self.anchor()))

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            name = self.qualified_name(target.target)
            if name is not None and name.startswith(INDUCTOR_CONFIG + "."):
                self._option(name.rsplit(".", 1)[1], node.value, node)
            elif (
                type(target.target) is cst.Subscript
                and self.qualified_name(target.target.value) == "os.environ"
                and len(target.target.slice) == 1
                and type(target.target.slice[0].slice) is cst.Index
            ):
                key = literal_str(target.target.slice[0].slice.value)
                if key in AUTOTUNE_ENV and literal_str(node.value) == "1":
                    self._found.append((node, self.anchor()))

    def visit_Call(self, node: cst.Call) -> None:
        name = self.qualified_name(node.func)
        if name == "torch.compile":
            mode = argument(node, "mode")
            if mode is not None and literal_str(mode.value) in AUTOTUNE_MODES:
                self._found.append((mode, self.anchor()))
            options = argument(node, "options")
            items = dict_literal_items(options.value) if options is not None else None
            for key, value in (items or {}).items():
                self._option(key, value, options or node)
        elif name == f"{INDUCTOR_CONFIG}.patch":
            first = argument(node, None, 0)
            items = dict_literal_items(first.value) if first is not None else None
            for key, value in (items or {}).items():
                self._option(key, value, node)
            for arg in node.args:
                if arg.keyword is not None:
                    self._option(arg.keyword.value, arg.value, arg)
        elif name == "builtins.setattr":
            found = setattr_arguments(node)
            if found is not None and self.qualified_name(found.holder) == INDUCTOR_CONFIG:
                self._option(found.name, found.value, node)

    def leave_Module(self, original_node: cst.Module) -> None:
        if self._deterministic:
            return
        for node, anchor in self._found:
            self.report(node, anchor=anchor)
