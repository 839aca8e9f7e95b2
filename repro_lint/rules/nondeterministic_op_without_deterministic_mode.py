"""RPL402: an op that is deterministic only in deterministic mode, in a program that never
turns deterministic mode on."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import libcst as cst

from repro_lint.arguments import argument, literal_bool, literal_int, literal_str
from repro_lint.catalog import NEEDS_DETERMINISTIC_MODE
from repro_lint.diagnostics import Diagnostic, Edit, Fix, FixSafety
from repro_lint.fixes import touches
from repro_lint.names import Names
from repro_lint.randomness import LIGHTNING_TRAINERS
from repro_lint.rule import (
    FileContext,
    InsertAfter,
    InsertBefore,
    Invalid,
    NodeEdit,
    SettledRule,
    Valid,
)
from repro_lint.rules.nondeterministic_op import (
    CATALOG_TRIGGERS,
    IN_FUNCTION,
    PREAMBLE,
    CatalogRule,
    Site,
    catalog_examples,
    catalog_sections,
    corrections,
    describe,
    entries_reported_as,
    settle_across_files,
)
from repro_lint.torch_versions import TorchVersion

if TYPE_CHECKING:
    from repro_lint.program import EntryPoint, Placement, Program, Unit

ENABLE = "torch.use_deterministic_algorithms"
# Library helpers that call ``torch.use_deterministic_algorithms(True)`` themselves.
_ENABLING_HELPERS = frozenset(
    {"transformers.enable_full_determinism", "transformers.trainer_utils.enable_full_determinism"}
)


def enables(node: cst.Call, names: Names) -> bool:
    """Whether this call may turn deterministic mode on; a value that is not a literal
    ``False`` counts (``use_deterministic_algorithms(args.deterministic)`` may)."""
    name = names.qualified_name(node.func)
    if name in (ENABLE, "torch.set_deterministic"):
        arg = argument(node, "mode", 0) or argument(node, "d", 0)
        return arg is not None and literal_bool(arg.value) is not False
    if name == "torch.set_deterministic_debug_mode":
        arg = argument(node, "debug_mode", 0)
        return arg is not None and not (
            literal_int(arg.value) == 0 or literal_str(arg.value) == "default"
        )
    if name in LIGHTNING_TRAINERS:
        # ``Trainer(deterministic=True | "warn")`` calls use_deterministic_algorithms.
        arg = argument(node, "deterministic")
        return (
            arg is not None
            and literal_bool(arg.value) is not False
            and not (type(arg.value) is cst.Name and arg.value.value == "None")
        )
    return name in _ENABLING_HELPERS


TAIL = "is nondeterministic unless deterministic mode is on"
_NOTE_START, _NOTE_END = " (no fix: ", " switches deterministic mode off again)"


def _running(
    program: Program, unit: Unit, entries: list[EntryPoint], diagnostics: list[Diagnostic]
) -> list[EntryPoint]:
    """The entry points whose programs may run the findings' code: not those that reach it
    only behind options defaulting off that they leave off."""
    notes = unit.summary.get("notes", {}).get(IN_FUNCTION, ())
    where = {(int(row), int(column)): str(key) for row, column, key in notes}
    keys = {where.get((d.location.row, d.location.column)) for d in diagnostics}
    if None in keys:
        return entries
    return [e for e in entries if not all(program.left_off(e, unit, str(k)) for k in keys)]


def override_note(where: str) -> str:
    """What a finding says when the program turns deterministic mode off after the point
    where the fix would turn it on."""
    return f"{_NOTE_START}{where}{_NOTE_END}"


def _without_note(message: str) -> str:
    if message.endswith(_NOTE_END):
        return message.rpartition(_NOTE_START)[0]
    return message


def switches_off(node: cst.Call, names: Names) -> bool:
    """Whether this call turns deterministic mode off: ``use_deterministic_algorithms(False)``
    or the debug mode set to 0 / "default"."""
    name = names.qualified_name(node.func)
    if name in (ENABLE, "torch.set_deterministic"):
        arg = argument(node, "mode", 0) or argument(node, "d", 0)
        return arg is not None and literal_bool(arg.value) is False
    if name == "torch.set_deterministic_debug_mode":
        arg = argument(node, "debug_mode", 0)
        return arg is not None and (
            literal_int(arg.value) == 0 or literal_str(arg.value) == "default"
        )
    return False


def _is_main_guard(statement: cst.CSTNode) -> bool:
    """``if __name__ == "__main__":`` (either operand order)."""
    if type(statement) is not cst.If or type(statement.test) is not cst.Comparison:
        return False
    test = statement.test
    if len(test.comparisons) != 1 or type(test.comparisons[0].operator) is not cst.Equal:
        return False
    operands = (test.left, test.comparisons[0].comparator)
    names = [o for o in operands if type(o) is cst.Name and o.value == "__name__"]
    strings = [o for o in operands if literal_str(o) == "__main__"]
    return len(names) == 1 and len(strings) == 1


def _is_import_line(statement: cst.CSTNode) -> bool:
    return type(statement) is cst.SimpleStatementLine and all(
        isinstance(small, cst.Import | cst.ImportFrom) for small in statement.body
    )


def _is_docstring(statement: cst.CSTNode) -> bool:
    return (
        type(statement) is cst.SimpleStatementLine
        and len(statement.body) == 1
        and type(statement.body[0]) is cst.Expr
        and isinstance(statement.body[0].value, cst.SimpleString | cst.ConcatenatedString)
    )


class NondeterministicOpWithoutDeterministicMode(CatalogRule, SettledRule):
    """
    ## What it does
    Flags an explicit call of a PyTorch op that is nondeterministic by default but has a
    deterministic implementation that `torch.use_deterministic_algorithms(True)` selects, in
    a program that never turns deterministic mode on: `index_add_`, `scatter_add_`,
    `scatter_reduce` with `sum`/`mean`, `index_put_`, `index_copy_`, the backward of
    `gather`, `index_select` and `repeat_interleave` on CUDA, `index_put_(accumulate=True)`
    on CPU, and, depending on the torch release, bilinear/trilinear interpolation, replication
    padding, `cumsum` and 3-D max pooling with indices.

    Writes and adds through an index that holds no value twice by construction cannot
    collide and are not reported: indices from `topk`, `sort` and `argsort` used along the
    dimension they were computed over (where the number of dimensions is unknown, indices
    computed along the last dimension, the default, are taken to be written back along it:
    `topk(logits, k)` then `scatter_(1, indices, values)`), `randperm`, `arange` and
    `unique` (passed as they are or moved to another device). Backward-only hazards (`gather`, `index_select`,
    `repeat_interleave`, interpolation, padding) are judged as in RPL401: only where a
    backward pass can reach them, a function's parameter by the function's callers, in
    other modules too.

    A file that calls `torch.use_deterministic_algorithms(...)` with anything but `False`
    (or `torch.set_deterministic_debug_mode`, Lightning's `Trainer(deterministic=...)`,
    `transformers.enable_full_determinism`) is left alone.

    ## Why is this bad?
    By default these ops add up with atomic operations whose order changes from run to run
    (on CUDA, and for `index_put_`/`put_` with `accumulate=True` also on a multi-threaded
    CPU), so the same seeded program gives different numbers each run. Deterministic mode
    switches them to a deterministic kernel at some cost in speed; without it no seed helps.

    ## Fix safety
    Safe: inserts `torch.use_deterministic_algorithms(True, warn_only=True)` into each
    program that reaches the call and never turns the mode on, where its other
    deterministic settings go (RPL202): just before its first seed in the entry point's
    file (one block with the seeding and `cudnn.deterministic`), at the start of the
    spawned worker functions that train, else at the top of its `if __name__ ==
    "__main__":` block or after the script's imports; when the call is in another module
    than the entry point, the fix edits the entry point's file. A model file's smoke test,
    a launcher that hands the work to a cluster job (submitit) and a program that measures
    speed (a profiler run, a benchmark timer) get none: the other programs that reach the
    call do. Neither does a program that reaches the call only through code behind an
    option defaulting to `False` that it never turns on (`self.cope = CoPE(...) if use_cope
    else None`; see RPL202 for when an option counts as on): the finding stands for the
    library's other users, without a fix when no program of the run turns the option on.
    Library code
    that no entry point of the run reaches (every call inside a function, no `__main__`
    block) gets no fix: switching a global mode on when a library is imported would change
    every program that uses it; the place for it is the program's entry point. With
    `warn_only=True`, ops without a deterministic kernel warn instead of raising, so the
    program still runs. Once those warnings are dealt with, switch to
    `torch.use_deterministic_algorithms(True)` (`warn_only=False`): that variant is unsafe,
    because it raises on any op without a deterministic kernel, and is not offered as a fix.

    ## Options
    `target-torch` decides which ops deterministic mode fixes (see the table).

    ## Known limitations
    Whether the program turns deterministic mode on is decided from the entry points of the
    run that reach the file (whole-project analysis). A file no entry point of the run
    reaches (a library module checked alone, as pre-commit does with a changed file) is
    judged on its own: its fix goes into the file when the calls run at module level or
    under its `__main__` block, and there is none when every call is inside a function of a
    module without one. The device is not known statically, so ops that are
    nondeterministic only on CUDA are reported in CPU-only code too, but for a notebook
    whose program never selects a CUDA device (as for RPL401).

    ## References
    - `torch.use_deterministic_algorithms` documentation
    - PyTorch notes on randomness: "Avoiding nondeterministic algorithms"
    """

    CODE = "RPL402"
    MESSAGE = "This op is nondeterministic unless deterministic mode is on"
    FIX_TITLE = "Insert `torch.use_deterministic_algorithms(True, warn_only=True)`"
    FIX_SAFETY = FixSafety.SAFE
    TRIGGERS = CATALOG_TRIGGERS
    TRIGGER_WORDS = True
    _NEW = {"target-torch": "2.13"}
    INVALID = (
        Invalid(
            "import torch\n\n"
            "counts = torch.zeros(10, device='cuda')\n"
            "counts.index_add_(0, labels, torch.ones(len(labels), device='cuda'))\n",
            fixed="import torch\n\n"
            "torch.use_deterministic_algorithms(True, warn_only=True)\n\n"
            "counts = torch.zeros(10, device='cuda')\n"
            "counts.index_add_(0, labels, torch.ones(len(labels), device='cuda'))\n",
        ),
        Invalid(
            '"""Train."""\nimport torch\nfrom torch import nn\n\n\n'
            "def main():\n"
            "    up = nn.Upsample(scale_factor=2, mode='bilinear')\n"
            "    print(up)\n\n\n"
            'if __name__ == "__main__":\n'
            "    main()\n",
            fixed='"""Train."""\nimport torch\nfrom torch import nn\n\n\n'
            "def main():\n"
            "    up = nn.Upsample(scale_factor=2, mode='bilinear')\n"
            "    print(up)\n\n\n"
            'if __name__ == "__main__":\n'
            "    torch.use_deterministic_algorithms(True, warn_only=True)\n"
            "    main()\n",
            config=_NEW,
        ),
        Invalid(
            "from torch import nn\nimport torch.nn.functional as F\n\n"
            "padded = F.pad(images, (1, 1, 1, 1), mode='replicate')\n",
            fixed="import torch\nfrom torch import nn\nimport torch.nn.functional as F\n\n"
            "torch.use_deterministic_algorithms(True, warn_only=True)\n\n"
            "padded = F.pad(images, (1, 1, 1, 1), mode='replicate')\n",
            config=_NEW,
            note="torch is imported for the fix",
        ),
        Invalid(
            "import torch.nn.functional as F\n\n\n"
            "def pool(x: 'torch.Tensor'):\n"
            "    return F.pad(x, (1, 1, 1, 1), mode='replicate')\n",
            config=_NEW,
            note="library code no entry point reaches: reported without a fix",
        ),
        Invalid(
            "import torch as T\n\nif __name__ == '__main__': T.zeros(3).scatter_add_(0, i, v)\n",
            fixed="import torch as T\n\nif __name__ == '__main__':\n"
            "    T.use_deterministic_algorithms(True, warn_only=True)\n"
            "    T.zeros(3).scatter_add_(0, i, v)\n",
            note="a one-line main block becomes an indented block",
        ),
        Invalid(
            "import torch\ntorch.use_deterministic_algorithms(False)\n"
            "y = torch.zeros(3).index_copy_(0, i, v)\n",
            note="switching the mode off does not count",
        ),
        Invalid(
            "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n"
            "class GroupRouter(nn.Module):\n"
            "    def __init__(self, experts, dim):\n"
            "        super().__init__()\n"
            "        self.weight = nn.Parameter(torch.empty(experts, dim))\n\n"
            "    @torch.no_grad()\n"
            "    def choose(self, scores):\n"
            "        return torch.topk(scores, k=2, dim=-1)[1]\n\n"
            "    def forward(self, x):\n"
            "        scores = F.linear(x, self.weight).sigmoid()\n"
            "        return scores.gather(1, self.choose(scores))\n",
            note="scores come from a parameter: the gather is differentiated",
        ),
        Invalid(
            "import torch\nfrom scipy.optimize import linear_sum_assignment\n\n"
            "def best_permutation(pair_losses):\n"
            "    pwl = pair_losses.transpose(-1, -2)\n"
            "    rows = torch.tensor([linear_sum_assignment(pwl)[1] for pwl in pwl.detach().cpu()])\n"
            "    return torch.gather(pwl, 2, rows.to(pwl.device)[..., None])\n",
            note="the comprehension's variable is its own: the outer one still requires grad",
        ),
        Invalid(
            "import torch\n\ntorch.use_deterministic_algorithms(False)\n\n"
            "counts = torch.zeros(10, device='cuda')\n"
            "counts.index_add_(0, labels, torch.ones(len(labels), device='cuda'))\n",
            note="the script switches the mode off after where the fix would go: no fix, "
            "the message says where",
        ),
        Invalid(
            "import torch\n\n\n"
            "def restore_defaults():\n"
            "    torch.use_deterministic_algorithms(False)\n\n\n"
            "def main():\n"
            "    counts = torch.zeros(10, device='cuda').index_add_(0, labels, ones)\n"
            "    restore_defaults()\n\n\n"
            'if __name__ == "__main__":\n'
            "    main()\n",
            note="a function the program calls switches it off again: no fix",
        ),
        Invalid(
            "import torch\n\ntorch.set_deterministic_debug_mode('default')\n\n\n"
            "def main():\n"
            "    return torch.zeros(3).scatter_add_(0, i, v)\n\n\n"
            'if __name__ == "__main__":\n'
            "    main()\n",
            fixed="import torch\n\ntorch.set_deterministic_debug_mode('default')\n\n\n"
            "def main():\n"
            "    return torch.zeros(3).scatter_add_(0, i, v)\n\n\n"
            'if __name__ == "__main__":\n'
            "    torch.use_deterministic_algorithms(True, warn_only=True)\n"
            "    main()\n",
            note="switched off before the main block: the fix comes after it",
        ),
        Invalid(
            "import torch\n\n"
            "def keep_best(scores: torch.Tensor, k: int) -> torch.Tensor:\n"
            "    best, order = scores.topk(k, dim=1)\n"
            "    return torch.zeros_like(scores).scatter_(0, order, best)\n",
            note="indices distinct along dim 1, written along dim 0: they may collide",
        ),
        *catalog_examples(NEEDS_DETERMINISTIC_MODE),
    )
    VALID = (
        Valid(
            "import torch\n\n"
            "def sample(logits: torch.Tensor, top_k: int) -> torch.Tensor:\n"
            "    values, indices = torch.topk(logits, top_k)\n"
            "    logits = torch.full_like(logits, float('-inf')).scatter_(-1, indices, values)\n"
            "    return torch.multinomial(torch.softmax(logits, dim=-1), 1)\n\n"
            "def shuffled_sum(x: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:\n"
            "    order = torch.randperm(x.size(0), device=x.device)\n"
            "    return x.index_add(0, order, rows)\n",
            note="top-k indices and a permutation hold no value twice: no writes collide",
        ),
        Valid(
            "import torch\n\n"
            "def top_p(logits: torch.Tensor, p: float) -> torch.Tensor:\n"
            "    ordered, order = torch.sort(logits, descending=True)\n"
            "    drop = ordered.softmax(dim=-1).cumsum(dim=-1) > p\n"
            "    return logits.masked_fill(drop.scatter(1, order, drop), float('-inf'))\n",
            note="sorted along the last dimension and written back along dimension 1, of a "
            "tensor whose rank is unknown: taken to be the same dimension",
        ),
        Valid(
            "import torch\ntorch.use_deterministic_algorithms(True)\n"
            "counts = torch.zeros(10, device='cuda').index_add_(0, labels, ones)\n"
        ),
        Valid(
            "import torch\n\ndef main(args):\n"
            "    torch.use_deterministic_algorithms(args.deterministic, warn_only=True)\n"
            "    return torch.zeros(3).scatter_add_(0, i, v)\n",
            note="a non-literal value may turn it on",
        ),
        'import torch\ntorch.set_deterministic_debug_mode("warn")\ny = torch.zeros(3).index_add_(0, i, v)\n',
        "import lightning as L\nimport torch\ntrainer = L.Trainer(deterministic=True)\n"
        "y = torch.zeros(3).index_add_(0, i, v)\n",
        "from pytorch_lightning import Trainer\nimport torch\nTrainer(deterministic='warn')\n"
        "y = torch.zeros(3).index_add_(0, i, v)\n",
        "import torch\nfrom transformers import enable_full_determinism\n"
        "enable_full_determinism(0)\ny = torch.zeros(3).index_add_(0, i, v)\n",
        Valid(
            PREAMBLE + "y = torch.zeros(4, device='cuda').put_(idx, x)\n",
            note="put_ without accumulate raises in deterministic mode: RPL401, not RPL402",
        ),
        Valid(
            PREAMBLE + "y = F.interpolate(x, scale_factor=2, mode='bilinear')\n",
            config={"target-torch": "2.0"},
            note="before 2.1 bilinear raises (RPL401)",
        ),
        Valid(
            PREAMBLE + "c = x.cumsum(dim=1)\nv = torch.kthvalue(x, 2, dim=1)\n",
            config={"target-torch": "2.5"},
            note="cumsum raised before 2.6 (RPL401); kthvalue too",
        ),
        Valid(PREAMBLE + "v = torch.kthvalue(x, 2, dim=1)\n", config=_NEW, note="fixed in 2.10"),
        Valid(
            PREAMBLE + "c = torch.cumsum(torch.arange(10, device='cuda'), 0)\n"
            "d = x.cumsum(1, dtype=torch.long)\n",
            config=_NEW,
            note="integer scans are exact",
        ),
        Valid(
            "import numpy as np\nimport pandas as pd\nimport torch\n\n"
            "idx = np.array([0, 1])\nout = np.zeros(3)\n"
            "np.add.at(out, idx, 1)\nc = out.cumsum()\nout.put([0], [2])\n"
            "frame = pd.read_csv('losses.csv')\nrunning = frame['loss'].cumsum()\n",
            note="numpy and pandas look-alikes",
        ),
        Valid(
            PREAMBLE + "p = torch.ones(3, device='cuda').scatter_reduce_(0, idx, src, 'prod')\n"
            "m = torch.zeros(3, device='cuda').scatter_reduce_(0, idx, src, 'amax')\n",
            note="prod raises in deterministic mode (RPL401); amax is deterministic",
        ),
        Valid(
            PREAMBLE + "y = torch.zeros(3, device='cuda').scatter_(0, idx, 2.0)\n",
            note="a scalar value is deterministic",
        ),
        Valid(
            PREAMBLE + "z = x[idx]\nx[idx] = 1.0\nconv = nn.Conv2d(3, 3, 3)\n",
            note="indexing and convolutions are covered by RPL202",
        ),
        Valid(
            "import torch\nfrom functools import partial\n\n"
            "def grid(h, w, device):\n"
            "    rows = torch.arange(h, device=device).repeat_interleave(w)\n"
            "    arange = partial(torch.arange, device=device)\n"
            "    ids = torch.repeat_interleave(arange(4), torch.tensor([h, w, h, w]))\n"
            "    return rows, ids\n",
            note="integer index tensors cannot require grad",
        ),
        Valid(
            "import torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
            "class MaskedReconstruction(nn.Module):\n"
            "    def __init__(self, encoder, patch_size):\n        super().__init__()\n"
            "        self.encoder = encoder\n        self.patch_size = patch_size\n\n"
            "    def forward(self, x, mask):\n        x_rec = self.encoder(x, mask)\n"
            "        mask = mask.repeat_interleave(self.patch_size, 1).unsqueeze(1)\n"
            "        loss = F.l1_loss(x, x_rec, reduction='none')\n"
            "        return (loss * mask).sum() / (mask.sum() + 1e-5)\n",
            note="a mask passed to forward is data: its repeat_interleave has no backward",
        ),
        Valid(
            "import torch\n\ndef random_masking(x, keep):\n"
            "    n, length, _ = x.shape\n"
            "    restore = torch.argsort(torch.argsort(torch.rand(n, length), dim=1), dim=1)\n"
            "    mask = torch.ones([n, length], device=x.device)\n"
            "    mask[:, :keep] = 0\n"
            "    return torch.gather(mask, dim=1, index=restore)\n",
            note="a mask built by torch.ones does not require grad",
        ),
        Valid(
            "import torch\nfrom torch import nn\n\n"
            "class Block(nn.Module):\n"
            "    def __init__(self, size):\n"
            "        super().__init__()\n"
            "        self.register_buffer('tril', torch.ones(size, size).tril().bool())\n\n"
            "    def forward(self, x, heads):\n"
            "        mask = self.window(x.size(1))\n"
            "        return mask.repeat_interleave(heads, dim=0)\n\n"
            "    def window(self, t):\n"
            "        return self.tril[:t, :t]\n",
            note="a method of the class returns a slice of a registered buffer",
        ),
        Valid(
            "import torch\nfrom torch import nn\n\n"
            "def select_rows(table, dim, idx):\n"
            "    return torch.index_select(table, dim, idx)\n\n"
            "class Decoder(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.register_buffer('cos', torch.zeros(64, 8), persistent=False)\n\n"
            "    def forward(self, x, positions):\n"
            "        return x * select_rows(self.cos, 0, positions)\n",
            note="the file's only call site passes a registered buffer",
        ),
        Valid(
            "import torch\nfrom torch import nn\n\n"
            "class Captioner(nn.Module):\n"
            "    @torch.no_grad()\n"
            "    def generate(self, memory, beams):\n"
            "        tokens = self.start(memory).repeat_interleave(beams, dim=0)\n"
            "        return self.search(memory, beams)\n\n"
            "    def search(self, memory, beams):\n"
            "        return torch.repeat_interleave(memory, beams, dim=0)\n",
            note="a method called only from a no-grad method",
        ),
        Valid(
            "import torch\n\ndef offsets(labels):\n"
            "    _, counts = torch.unique(labels, return_counts=True)\n"
            "    return counts.cumsum(0)\n",
            config=_NEW,
            note="counts from unique are integers: an exact scan",
        ),
    )

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self._pending: list[Site] = []
        self._file_enables = False
        # Calls that switch deterministic mode off: their row, and whether they run at module
        # level (rather than in a function that may be called at any time).
        self._switched_off: list[tuple[int, bool]] = []

    def visit_Call(self, node: cst.Call) -> None:
        super().visit_Call(node)
        if not self._file_enables:
            self._file_enables = enables(node, self.names)
        if switches_off(node, self.names):
            module_level = not any(
                isinstance(s, cst.FunctionDef | cst.ClassDef) for s in self.context.statement_stack
            )
            self._switched_off.append((self.context.cursor.row, module_level))

    def on_finding(self, site: Site) -> None:
        if site.finding.behaviour in NEEDS_DETERMINISTIC_MODE:
            self._pending.append(site)

    def finish_module(self, module: cst.Module) -> None:
        # Per file first (a file that turns the mode on is fine); ``settle`` then asks the
        # programs that reach the file.
        if not self._pending or self._file_enables:
            return
        # Library code (every call inside a function, no ``__main__`` block) is no place to
        # switch a global mode on: the fix belongs to the programs' entry points, which
        # ``settle`` finds when the whole project is analysed.
        module_level = any(site.module_level for site in self._pending)
        library = not module_level and not any(_is_main_guard(s) for s in module.body)
        fix = [] if library else self._fix(module)
        override = self._override(module) if fix else None
        note = override_note(f"line {override}") if override is not None else ""
        for site in self._pending:
            message = describe(site.finding, TAIL) + note
            self.report(site.node, message, fix=[] if note else fix, anchor=site.anchor)

    def _override(self, module: cst.Module) -> int | None:
        """The row of a call that switches deterministic mode off after the fix's insertion
        point (in a function: it may run after it), if there is one."""
        insertion = self._insertion_statement(module)
        start = self.context.cursor.starts.get(insertion) if insertion is not None else None
        for row, module_level in self._switched_off:
            if not (module_level and start is not None and row < start[0]):
                return row
        return None

    @staticmethod
    def _insertion_statement(module: cst.Module) -> cst.CSTNode | None:
        """The statement the fix inserts before (or after, for the last import)."""
        body = list(module.body)
        main = next((s for s in body if _is_main_guard(s)), None)
        if main is not None:
            return main
        start = 1 if body and _is_docstring(body[0]) else 0
        end = start
        while end < len(body) and _is_import_line(body[end]):
            end += 1
        return body[end] if end < len(body) else None

    def _fix(self, module: cst.Module) -> list[NodeEdit]:
        body = list(module.body)
        main = next((s for s in body if _is_main_guard(s)), None)
        if type(main) is cst.If and type(main.body) is cst.IndentedBlock:
            return self._insert(InsertBefore, main.body.body[0], before=main.body.body[0])
        if main is not None:
            # ``if __name__ == "__main__": main()`` has no line of its own to insert into.
            return self._insert(InsertBefore, main, before=main)
        start = 1 if body and _is_docstring(body[0]) else 0
        end = start
        while end < len(body) and _is_import_line(body[end]):
            end += 1
        if end > start:
            following = body[end] if end < len(body) else None
            return self._insert(InsertAfter, body[end - 1], before=following)
        if start < len(body):
            return self._insert(InsertBefore, body[start], before=body[start])
        return []

    def _insert(
        self,
        edit: type[InsertBefore] | type[InsertAfter],
        statement: cst.CSTNode,
        before: cst.CSTNode | None,
    ) -> list[NodeEdit]:
        spelling, imports = self.reference(ENABLE, "torch", before=before)
        return [*imports, edit(statement, f"{spelling}(True, warn_only=True)")]

    @classmethod
    def settle(
        cls, program: Program, filename: str, diagnostics: list[Diagnostic]
    ) -> list[Diagnostic]:
        """Judge the findings by the programs that reach the file: none of them if every
        entry point turns deterministic mode on; otherwise the fix goes to the entry points
        that do not (it may edit another file). A file no entry point of the run reaches is
        judged on its own, as the per-file pass did."""
        diagnostics = settle_across_files(program, filename, diagnostics)
        unit = program.linted_unit(filename)
        entries = program.reaching(filename)
        if unit is None or not entries or not diagnostics:
            return diagnostics
        if program.on_cpu(filename):
            return []
        entries = _running(program, unit, entries, diagnostics)
        if not entries:
            # Only behind options the programs leave off (``gates``): the finding stands for
            # the code's other users, but no program here gets a global mode for it.
            return [dataclasses.replace(d, fix=None) for d in diagnostics]
        needing = [e for e in entries if not e.enables_deterministic_algorithms()]
        if not needing:
            return []
        edits: list[Edit] = []
        note = ""
        fixes = program.derived(_EntryFixes)
        for entry in needing:
            if not program.settles(entry):
                # No place for it there (a smoke test, a job launcher, a speed measurement):
                # the other programs get the fix.
                continue
            override, made = fixes.at(cls, entry)
            if override is not None:
                # The program switches the mode off again after the insertion point: a fix
                # there would be undone, so the override is reported instead.
                note = override_note(override)
                edits = []
                break
            if made is None:
                edits = []
                break
            for made_edit in made:
                owner = made_edit.filename or entry.unit.filename
                edit = dataclasses.replace(made_edit, filename=owner if owner != filename else None)
                if edit not in edits:
                    edits.append(edit)
        where = ", ".join(sorted({e.filename or filename for e in edits}))
        fix = Fix(FixSafety.SAFE, f"{cls.FIX_TITLE} in {where}", tuple(edits)) if edits else None
        return [
            dataclasses.replace(d, message=_without_note(d.message) + note, fix=fix)
            for d in diagnostics
        ]

    @classmethod
    def _entry_fix(
        cls, program: Program, entry: EntryPoint
    ) -> tuple[str | None, tuple[Edit, ...] | None]:
        """Where the entry's program switches the mode off again after the place a fix would
        insert it (``file:row``), if it does; otherwise the edits that turn it on there
        (None when there is no safe place)."""
        places = cls._places(program, entry)
        override = cls._program_override(program, entry, places)
        if override is not None:
            return override, None
        return None, cls._entry_edits(program, entry, places) if entry.unit.linted else None

    @staticmethod
    def _places(program: Program, entry: EntryPoint) -> list[Placement]:
        """Where the entry's program gets deterministic mode: with its other deterministic
        settings (just before its seeding, or where its work runs: see
        ``Program.settings_placements``), else at the start of the entry point."""
        return program.settings_placements(entry) or [program.entry_placement(entry)]

    @staticmethod
    def _program_override(
        program: Program, entry: EntryPoint, places: list[Placement]
    ) -> str | None:
        """Where the entry's program switches deterministic mode off after the place a fix
        would insert it (``file:row``), if it does."""
        chain = entry.disables_deterministic_algorithms()
        if not chain:
            return None
        first = chain[0]
        start = min(
            (p.at.row for p in places if p.unit is entry.unit),
            default=program.entry_start(entry)[0].row,
        )
        if len(chain) == 1 and first[0] == entry.unit.index and first[2] < start:
            # Module-level code before the insertion point: the fix comes after it.
            return None
        unit_index, _, row, _ = chain[-1]
        return f"{program.units[unit_index].filename}:{row}"

    @staticmethod
    def _entry_edits(
        program: Program, entry: EntryPoint, places: list[Placement]
    ) -> tuple[Edit, ...] | None:
        if not places:
            return None
        edits: list[Edit] = []
        for place in places:
            spelled = program.spell(place.unit, ENABLE, place.at.row)
            if spelled is None:
                return None
            text, module = spelled
            made = program.insert(
                place,
                [f"{text}(True, warn_only=True)"],
                [module] if module else [],
                finding=entry.unit,
            )
            if not made or touches(made, program.protected_rows(place.unit)):
                return None
            edits.extend(made)
        return tuple(edits)

    @classmethod
    def doc_sections(cls, target: TorchVersion | None = None) -> dict[str, str]:
        entries = entries_reported_as(NEEDS_DETERMINISTIC_MODE)
        return {
            **catalog_sections(NEEDS_DETERMINISTIC_MODE, target),
            "Catalog corrections": corrections(entries),
        }


@dataclasses.dataclass
class _EntryFixes:
    """Per entry point, what the fix does in its program (``_entry_fix``): the same for
    every file the entry reaches, so made once per program, not once per file settled."""

    program: Program
    made: dict[
        tuple[type[NondeterministicOpWithoutDeterministicMode], int],
        tuple[str | None, tuple[Edit, ...] | None],
    ] = dataclasses.field(default_factory=dict)

    def at(
        self, rule: type[NondeterministicOpWithoutDeterministicMode], entry: EntryPoint
    ) -> tuple[str | None, tuple[Edit, ...] | None]:
        key = (rule, entry.unit.index)
        if key not in self.made:
            self.made[key] = rule._entry_fix(self.program, entry)
        return self.made[key]
