"""RPL206: an assignment to a backend flag that torch does not have."""

from __future__ import annotations

import difflib

import libcst as cst

from repro_lint import determinism as det
from repro_lint.arguments import setattr_arguments
from repro_lint.diagnostics import FixSafety
from repro_lint.rule import Invalid, Replace, Rule, Valid

_CUDNN = "torch.backends.cudnn"
_CUDA = "torch.backends.cuda"
_MATMUL = "torch.backends.cuda.matmul"


def _suggest(name: str, candidates: frozenset[str]) -> str | None:
    found = difflib.get_close_matches(name, sorted(candidates), n=1, cutoff=0.6)
    return found[0] if found else None


def misspelled(qualified: str) -> tuple[str, str, str | None] | None:
    """For an assignment target: (namespace, unknown name, the real name to use instead, if
    one is close), or None when the target is not a backend flag torch lacks."""
    if qualified.startswith(_MATMUL + "."):
        name = qualified[len(_MATMUL) + 1 :]
        if "." in name or name in det.MATMUL_FLAGS:
            return None
        return _MATMUL, name, _suggest(name, det.MATMUL_FLAGS)
    if qualified.startswith(_CUDNN + "."):
        parts = qualified[len(_CUDNN) + 1 :].split(".")
        if len(parts) == 2 and parts[0] in det.CUDNN_SUBMODULES:
            flags, names = det.CUDNN_SUBMODULES[parts[0]]
            if parts[1] in names:
                return None
            return f"{_CUDNN}.{parts[0]}", parts[1], _suggest(parts[1], flags)
        if len(parts) != 1 or parts[0] in det.CUDNN_NAMES:
            return None
        return _CUDNN, parts[0], _suggest(parts[0], det.CUDNN_FLAGS)
    if qualified.startswith(_CUDA + "."):
        parts = qualified[len(_CUDA) + 1 :].split(".")
        if len(parts) != 1 or parts[0] in det.CUDA_NAMES:
            return None
        name = parts[0]
        if name in det.MATMUL_FLAGS:
            # ``torch.backends.cuda.allow_tf32``: the flag lives on ``cuda.matmul``.
            return _CUDA, name, f"matmul.{name}"
        return _CUDA, name, _suggest(name, det.MATMUL_FLAGS)
    return None


class UnknownBackendFlag(Rule):
    """
    ## What it does
    Flags an assignment to an attribute that does not exist on `torch.backends.cudnn`,
    `torch.backends.cudnn.conv`/`.rnn`, `torch.backends.cuda.matmul` or
    `torch.backends.cuda`, through any import alias or `setattr`:
    `cudnn.benchmarks = False`, `cudnn.determinstic = True`,
    `torch.backends.cuda.allow_tf32 = False` (the flag lives on `cuda.matmul`).

    ## Why is this bad?
    `torch.backends.cudnn` and `torch.backends.cuda` accept any attribute: assigning a
    misspelled one creates a new, unused attribute and leaves the real flag as it was. The
    program believes it made cuDNN deterministic (or switched benchmarking off) and runs
    exactly as before, silently. (`torch.backends.cuda.matmul` raises `AttributeError`
    instead, at run time.) The names are checked against torch's own flags, kept in step with
    the installed torch by a test.

    ## Fix safety
    Unsafe: the nearest real flag is assigned instead. That is what the line meant, but it
    changes what the program does: the setting takes effect for the first time.

    ## Options
    None.

    ## Known limitations
    Only assignments are checked: reading or calling a misspelled name fails at run time with
    an `AttributeError` anyway.
    """

    CODE = "RPL206"
    MESSAGE = "This backend flag does not exist: the assignment silently does nothing"
    FIX_TITLE = "Assign the real flag"
    FIX_SAFETY = FixSafety.UNSAFE
    TRIGGERS = ("backends", "cudnn")
    INVALID = (
        Invalid(
            "import torch\ntorch.backends.cudnn.benchmarks = False\n",
            fixed="import torch\ntorch.backends.cudnn.benchmark = False\n",
        ),
        Invalid(
            "import torch.backends.cudnn as cudnn\n\n\ndef set_seed(seed):\n"
            "    cudnn.determinstic = True\n",
            fixed="import torch.backends.cudnn as cudnn\n\n\ndef set_seed(seed):\n"
            "    cudnn.deterministic = True\n",
        ),
        Invalid(
            "from torch.backends import cudnn\ncudnn.deterministric = True  # reproducible\n",
            fixed="from torch.backends import cudnn\ncudnn.deterministic = True  # reproducible\n",
        ),
        Invalid(
            "import torch\ntorch.backends.cuda.allow_tf32 = False\n",
            fixed="import torch\ntorch.backends.cuda.matmul.allow_tf32 = False\n",
            note="the TF32 matmul flag lives on `cuda.matmul`",
        ),
        Invalid(
            "import torch\ntorch.backends.cuda.matmul.allow_tf_32 = False\n",
            fixed="import torch\ntorch.backends.cuda.matmul.allow_tf32 = False\n",
        ),
        Invalid(
            'import torch\nsetattr(torch.backends.cudnn, "bench_mark", False)\n',
            fixed='import torch\nsetattr(torch.backends.cudnn, "benchmark", False)\n',
        ),
        Invalid(
            "import torch\ntorch.backends.cudnn.conv.fp32_precison = 'ieee'\n",
            fixed="import torch\ntorch.backends.cudnn.conv.fp32_precision = 'ieee'\n",
        ),
        Invalid(
            "import torch\ntorch.backends.cudnn.reproducible = True\n",
            note="nothing close enough to suggest: no fix",
        ),
    )
    VALID = (
        "import torch\ntorch.backends.cudnn.benchmark = False\n",
        "import torch\ntorch.backends.cudnn.deterministic = True\n",
        "import torch.backends.cudnn as cudnn\ncudnn.enabled = True\ncudnn.allow_tf32 = False\n",
        "import torch\ntorch.backends.cuda.matmul.allow_tf32 = False\n",
        "import torch\ntorch.backends.cudnn.conv.fp32_precision = 'ieee'\n",
        "import torch\ntorch.backends.cudnn.benchmark_limit = 0\n",
        Valid(
            "import torch\nprint(torch.backends.cudnn.benchmarks)\n",
            note="a read, not an assignment (it raises at run time)",
        ),
        Valid(
            "import mylib\nmylib.backends.cudnn.benchmarks = False\n",
            note="not torch's backends",
        ),
        Valid(
            "import torch\n\n\nclass Config:\n    benchmarks = False\n\n\n"
            "cfg = Config()\ncfg.benchmarks = True\n",
            note="an attribute of a project object",
        ),
    )

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            expression = target.target
            if type(expression) is not cst.Attribute:
                continue
            qualified = self.qualified_name(expression)
            if qualified is None:
                continue
            found = misspelled(qualified)
            if found is None:
                continue
            namespace, name, suggestion = found
            message = f"`{namespace}` has no flag `{name}`: the assignment does nothing"
            fix = []
            if suggestion is not None:
                message += f" (did you mean `{suggestion}`?)"
                fix = [Replace(expression, _renamed(expression, suggestion))]
            self.report(expression, message, fix=fix)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        name = func.attr.value if type(func) is cst.Attribute else None
        if type(func) is cst.Name:
            name = func.value
        if name != "setattr" or self.qualified_name(func) != "builtins.setattr":
            return
        arguments = setattr_arguments(node)
        base = None if arguments is None else self.qualified_name(arguments.holder)
        if arguments is None or base is None:
            return
        found = misspelled(f"{base}.{arguments.name}")
        if found is None:
            return
        namespace, name, suggestion = found
        message = f"`{namespace}` has no flag `{name}`: the assignment does nothing"
        fix = []
        if suggestion is not None and "." not in suggestion:
            message += f" (did you mean `{suggestion}`?)"
            string = arguments.name_node
            quote = string.quote if type(string) is cst.SimpleString else '"'
            fix = [Replace(string, cst.SimpleString(f"{quote}{suggestion}{quote}"))]
        self.report(node, message, fix=fix)


def _renamed(expression: cst.Attribute, suggestion: str) -> cst.Attribute:
    """``x.benchmarks`` -> ``x.benchmark``; ``cuda.allow_tf32`` -> ``cuda.matmul.allow_tf32``."""
    value: cst.BaseExpression = expression.value
    *parents, last = suggestion.split(".")
    for parent in parents:
        value = cst.Attribute(value=value, attr=cst.Name(parent))
    return expression.with_changes(value=value, attr=cst.Name(last))
