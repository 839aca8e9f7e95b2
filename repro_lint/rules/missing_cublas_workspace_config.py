"""RPL204: deterministic mode on a torch that still needs ``CUBLAS_WORKSPACE_CONFIG``."""

from __future__ import annotations

import libcst as cst

from repro_lint.arguments import (
    argument,
    literal_bool,
    literal_int,
    literal_str,
    mentions_string,
)
from repro_lint.diagnostics import FixSafety
from repro_lint.rule import FileContext, InsertAfter, InsertBefore, Invalid, NodeEdit, Rule, Valid
from repro_lint.torch_versions import TorchVersion

VARIABLE = "CUBLAS_WORKSPACE_CONFIG"
# pytorch/pytorch#161749 (merged October 2025, after the 2.9 branch cut) removed the check;
# torch 2.13.0 no longer has it. Earlier releases raise at the first cuBLAS call.
CHECK_REMOVED_IN = TorchVersion(2, 10)
_ENV_SETTERS = frozenset({"os.environ.setdefault", "os.putenv", "os.environ.update"})


class MissingCublasWorkspaceConfig(Rule):
    """
    ## What it does
    Flags `torch.use_deterministic_algorithms(True)` (and
    `torch.set_deterministic_debug_mode(1 | 2 | "warn" | "error")`) in a file that never sets
    the `CUBLAS_WORKSPACE_CONFIG` environment variable, when the target torch version still
    checks for it (before 2.10).

    ## Why is this bad?
    On CUDA >= 10.2, cuBLAS picks its workspace per stream in a way that is not reproducible
    unless `CUBLAS_WORKSPACE_CONFIG=:4096:8` (or `:16:8`) is set before CUDA starts. torch
    before 2.10 therefore raises a `RuntimeError` at the first matrix multiply on the GPU when
    deterministic mode is on and the variable is missing, or, with `warn_only=True`, warns and
    stays nondeterministic. torch 2.10 removed the check (pytorch/pytorch#161749): it now
    allocates cuBLAS workspaces per handle and stream, which is enough for determinism, so
    the rule is silent for targets >= 2.10.

    ## Fix safety
    Safe: `os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")` is inserted just
    before the statement that enables deterministic mode (after the imports when that
    statement sits among them), and keeps any value the launcher already set; it costs
    about 24 MiB of GPU memory per stream. The variable only has to be
    set before the first cuBLAS call, which comes after a program's setup, so the imports
    stay together. (Enabling deterministic mode after the first matrix multiply on the GPU
    is too late for the variable: move both up.)

    ## Options
    `target-torch` (or the version inferred from the project's dependencies) decides whether
    the rule applies.

    ## Known limitations
    Only the same file is searched for the variable; setting it in a shell launcher or another
    module is not seen: suppress with `# noqa: RPL204` there.

    ## References
    - NVIDIA cuBLAS documentation, "Results reproducibility"
    - pytorch/pytorch#161749
    """

    CODE = "RPL204"
    MESSAGE = "Deterministic mode needs `CUBLAS_WORKSPACE_CONFIG` set before CUDA starts"
    FIX_TITLE = 'Set `os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")` first'
    FIX_SAFETY = FixSafety.SAFE
    TRIGGERS = ("deterministic",)
    _OLD = {"target-torch": "2.1"}
    INVALID = (
        Invalid(
            "import torch\n\ntorch.use_deterministic_algorithms(True)\n",
            fixed="import os\n\nimport torch\n\n"
            'os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")\n'
            "torch.use_deterministic_algorithms(True)\n",
            config=_OLD,
        ),
        Invalid(
            '"""Train."""\nimport argparse\nimport torch\nimport os\n\n'
            "torch.use_deterministic_algorithms(True, warn_only=True)\n",
            fixed='"""Train."""\nimport argparse\nimport torch\nimport os\n\n'
            'os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")\n'
            "torch.use_deterministic_algorithms(True, warn_only=True)\n",
            config=_OLD,
            note="the existing `os` import is reused; the imports are left as they are",
        ),
        Invalid(
            "import os\nimport torch\n\ndef main():\n    torch.use_deterministic_algorithms(True)\n",
            fixed="import os\nimport torch\n\ndef main():\n"
            '    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")\n'
            "    torch.use_deterministic_algorithms(True)\n",
            config=_OLD,
            note="set where deterministic mode is enabled: before the first cuBLAS call",
        ),
        Invalid(
            "import torch\n\n\ndef setup(seed):\n    torch.manual_seed(seed)\n"
            "    torch.use_deterministic_algorithms(True)\n\n\ndef again():\n"
            "    torch.use_deterministic_algorithms(True)\n",
            fixed="import os\n\nimport torch\n\n\ndef setup(seed):\n    torch.manual_seed(seed)\n"
            '    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")\n'
            "    torch.use_deterministic_algorithms(True)\n\n\ndef again():\n"
            "    torch.use_deterministic_algorithms(True)\n",
            config=_OLD,
            note="set once, before the first call that enables deterministic mode",
        ),
        Invalid(
            "from ultralytics import YOLO\nimport torch\n"
            "torch.use_deterministic_algorithms(True, warn_only=True)\nimport warnings\n"
            "warnings.filterwarnings('ignore')\nimport os\n"
            'os.environ["TORCH_CPP_LOG_LEVEL"] = "ERROR"\n\nmodel = YOLO("yolov8s.yaml")\n',
            fixed="from ultralytics import YOLO\nimport torch\n"
            "torch.use_deterministic_algorithms(True, warn_only=True)\nimport warnings\n"
            "warnings.filterwarnings('ignore')\nimport os\n\n"
            'os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")\n'
            'os.environ["TORCH_CPP_LOG_LEVEL"] = "ERROR"\n\nmodel = YOLO("yolov8s.yaml")\n',
            config=_OLD,
            note="switched on among the imports: the variable goes after them, with the "
            "file's own `os`, a blank line after the import block (isort)",
        ),
        Invalid("import torch\ntorch.set_deterministic_debug_mode('error')\n", config=_OLD),
        Invalid(
            "import torchvision\nimport torch\ntorch.use_deterministic_algorithms(mode=True)\n",
            config={"target-torch": "1.13"},
        ),
    )
    VALID = (
        Valid(
            "import torch\ntorch.use_deterministic_algorithms(True)\n",
            config={"target-torch": "2.10"},
            note="the check is gone since 2.10",
        ),
        Valid(
            'import os\nos.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"\nimport torch\n'
            "torch.use_deterministic_algorithms(True)\n",
            config=_OLD,
        ),
        Valid(
            'import os\nimport torch\nos.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":16:8")\n'
            "torch.use_deterministic_algorithms(True)\n",
            config=_OLD,
        ),
        Valid("import torch\ntorch.use_deterministic_algorithms(False)\n", config=_OLD),
        Valid(
            "import torch\ntorch.use_deterministic_algorithms(flag)\n",
            config=_OLD,
            note="not a literal",
        ),
        Valid(
            "import lightning as L\nL.Trainer(deterministic=True)\n",
            config=_OLD,
            note="Lightning sets CUBLAS_WORKSPACE_CONFIG itself",
        ),
    )

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self._enabling: list[tuple[cst.Call, tuple[cst.CSTNode, ...]]] = []
        self._configured = False

    def visit_Call(self, node: cst.Call) -> None:
        name = self.qualified_name(node.func)
        if name in ("torch.use_deterministic_algorithms", "torch.set_deterministic"):
            arg = argument(node, "mode", 0) or argument(node, "d", 0)
            if arg is not None and literal_bool(arg.value) is True:
                self._enabling.append((node, self.anchor()))
        elif name == "torch.set_deterministic_debug_mode":
            arg = argument(node, "debug_mode", 0)
            if arg is not None and (
                literal_int(arg.value) in (1, 2) or literal_str(arg.value) in ("warn", "error")
            ):
                self._enabling.append((node, self.anchor()))
        elif name in _ENV_SETTERS and mentions_string(node, VARIABLE):
            self._configured = True

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            # os.environ["CUBLAS_WORKSPACE_CONFIG"] = ...
            if (
                type(target.target) is cst.Subscript
                and self.qualified_name(target.target.value) == "os.environ"
                and mentions_string(target.target, VARIABLE)
            ):
                self._configured = True

    def leave_Module(self, original_node: cst.Module) -> None:
        if self._configured or self.context.target_torch >= CHECK_REMOVED_IN:
            return
        for index, (call, anchor) in enumerate(self._enabling):
            # One setting is enough: it goes before the first call that enables the mode.
            fix = self._fix(anchor) if index == 0 else []
            self.report(call, fix=fix, anchor=anchor)

    def _fix(self, anchor: tuple[cst.CSTNode, ...]) -> list[NodeEdit]:
        if not anchor:
            return []
        statement = anchor[-1]
        last_import = _last_import_after(self.context.module, statement)
        if last_import is not None:
            # Deterministic mode is switched on among the imports: the variable goes after
            # them (it only has to be set before the first cuBLAS call), not between two
            # imports (ruff E402/I001).
            body: list[cst.CSTNode] = list(self.context.module.body)
            following = body.index(last_import) + 1
            before = body[following] if following < len(body) else None
            os_name, edits = self.reference("os", "os", before=before)
            code = f'{os_name}.environ.setdefault("{VARIABLE}", ":4096:8")'
            return [*edits, InsertAfter(last_import, code)]
        os_name, edits = self.reference("os", "os", before=statement)
        code = f'{os_name}.environ.setdefault("{VARIABLE}", ":4096:8")'
        return [*edits, InsertBefore(statement, code)]


def _last_import_after(module: cst.Module, statement: cst.CSTNode) -> cst.CSTNode | None:
    """The last import among the simple module-level statements that follow ``statement``
    (a module-level one), if any."""
    body: list[cst.CSTNode] = list(module.body)
    if statement not in body:
        return None
    found = None
    for following in body[body.index(statement) + 1 :]:
        if type(following) is not cst.SimpleStatementLine:
            break
        if all(isinstance(small, cst.Import | cst.ImportFrom) for small in following.body):
            found = following
    return found
