"""RPL207: TF32 or another reduced-precision matmul mode switched on (off by default)."""

from __future__ import annotations

import libcst as cst

from repro_lint import determinism as det
from repro_lint.arguments import argument, literal_bool, literal_str
from repro_lint.diagnostics import FixSafety
from repro_lint.rule import Invalid, Replace, Rule, Valid


class ReducedPrecisionMatmul(Rule):
    """
    ## What it does
    Flags switching fp32 matrix multiplies and convolutions to a reduced-precision mode:
    `torch.backends.cuda.matmul.allow_tf32 = True`, `torch.backends.cudnn.allow_tf32 = True`,
    `torch.set_float32_matmul_precision("high" | "medium")`, the `fp32_precision` settings
    of torch 2.9+ set to `"tf32"` or `"bf16"` (`torch.backends.fp32_precision`,
    `torch.backends.cuda.matmul.fp32_precision`, `torch.backends.cudnn.fp32_precision`,
    `torch.backends.cudnn.conv.fp32_precision`, `torch.backends.cudnn.rnn.fp32_precision`,
    and the `mkldnn` ones), and `allow_fp16_accumulation = True` or the reduced-precision
    reductions of `cuda.matmul` set explicitly.

    Off by default: select it explicitly (`extend-select = ["RPL207"]`) when results must
    agree across machines, not only between runs on one.

    ## Why is this bad?
    TF32 keeps 10 bits of mantissa instead of 23. Whether it is used depends on the GPU:
    Ampere and newer run these matmuls in TF32, older GPUs and the CPU in full fp32. The same
    seeded program therefore gives different numbers on an A100 than on a V100 or a laptop,
    even though each machine is repeatable on its own. Reduced-precision reductions and fp16
    accumulation differ the same way between GPU generations and cuBLAS versions.
    (`cudnn.allow_tf32` is on by default in torch; setting it explicitly states the intent and
    is reported too.)

    ## Fix safety
    Unsafe: the setting is turned back to full precision (`False`, `"highest"`, `"ieee"`).
    Results then agree across GPU generations, but matmuls get slower and every number
    changes slightly.

    ## Options
    None. Values that are not literals (`allow_tf32 = args.tf32`) are not reported.

    ## References
    - PyTorch notes on CUDA semantics: "TensorFloat-32 (TF32) on Ampere (and later) devices"
    - `torch.set_float32_matmul_precision`
    """

    CODE = "RPL207"
    MESSAGE = "TF32 or reduced-precision matmul makes results differ between GPU generations"
    FIX_TITLE = "Keep fp32 matmuls in full precision"
    FIX_SAFETY = FixSafety.UNSAFE
    DEFAULT_ENABLED = False
    TRIGGERS = ("tf32", "precision", "fp16_accumulation")
    INVALID = (
        Invalid(
            "import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\n",
            fixed="import torch\ntorch.backends.cuda.matmul.allow_tf32 = False\n",
        ),
        Invalid(
            "import torch\ntorch.backends.cudnn.allow_tf32 = True  # faster convolutions\n",
            fixed="import torch\ntorch.backends.cudnn.allow_tf32 = False  # faster convolutions\n",
        ),
        Invalid(
            "import torch\n\n\ndef main():\n    torch.set_float32_matmul_precision('high')\n",
            fixed="import torch\n\n\ndef main():\n    torch.set_float32_matmul_precision('highest')\n",
        ),
        Invalid("import torch as th\nth.set_float32_matmul_precision(precision='medium')\n"),
        Invalid(
            'import torch\ntorch.backends.cuda.matmul.fp32_precision = "tf32"\n',
            fixed='import torch\ntorch.backends.cuda.matmul.fp32_precision = "ieee"\n',
        ),
        Invalid('import torch\ntorch.backends.cudnn.conv.fp32_precision = "tf32"\n'),
        Invalid('import torch\ntorch.backends.fp32_precision = "tf32"\n'),
        Invalid("from torch.backends import cuda\ncuda.matmul.allow_fp16_accumulation = True\n"),
    )
    VALID = (
        "import torch\ntorch.backends.cuda.matmul.allow_tf32 = False\n",
        "import torch\ntorch.backends.cudnn.allow_tf32 = False\n",
        "import torch\ntorch.set_float32_matmul_precision('highest')\n",
        'import torch\ntorch.backends.cuda.matmul.fp32_precision = "ieee"\n',
        Valid(
            "import torch\n\n\ndef setup(allow_tf32=False):\n"
            "    torch.backends.cuda.matmul.allow_tf32 = allow_tf32\n",
            note="not a literal: decided by the caller",
        ),
        Valid(
            "import torch\ntorch.set_float32_matmul_precision(args.precision)\n",
            note="not a literal",
        ),
        Valid("import torch\nprint(torch.backends.cuda.matmul.allow_tf32)\n", note="a read"),
    )

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) != 1:
            return
        qualified = self.qualified_name(node.targets[0].target)
        if qualified is None or not qualified.startswith("torch.backends."):
            return
        name = qualified.rsplit(".", 1)[-1]
        value = node.value
        if name in det.REDUCED_PRECISION_FLAGS:
            if literal_bool(value) is True:
                self.report(node, fix=[Replace(value, cst.Name("False"))])
        elif name == "fp32_precision":
            mode = literal_str(value)
            if mode is not None and mode.lower() not in det.FULL_PRECISION_MODES:
                self.report(node, fix=[Replace(value, _string(value, "ieee"))])

    def visit_Call(self, node: cst.Call) -> None:
        if self.qualified_name(node.func) != "torch.set_float32_matmul_precision":
            return
        arg = argument(node, "precision", 0)
        if arg is None:
            return
        mode = literal_str(arg.value)
        if mode is not None and mode.lower() in ("high", "medium"):
            self.report(node, fix=[Replace(arg.value, _string(arg.value, "highest"))])


def _string(original: cst.BaseExpression, value: str) -> cst.SimpleString:
    quote = original.quote if type(original) is cst.SimpleString else '"'
    return cst.SimpleString(f"{quote}{value}{quote}")
