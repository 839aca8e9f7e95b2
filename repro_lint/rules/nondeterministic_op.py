"""RPL401: an explicit call of an op that has no deterministic implementation, judged against
the op catalog for the target torch version. Also the call classifier RPL402 shares."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import libcst as cst

from repro_lint.arguments import argument, literal_int, literal_str
from repro_lint.catalog import (
    BY_METHOD,
    ENTRIES,
    HAS_NO_DETERMINISTIC_KERNEL,
    MAYBE,
    MISSING,
    NEEDS_DETERMINISTIC_MODE,
    UNKNOWN,
    Api,
    ApiKind,
    Behaviour,
    Entry,
    Named,
    Scope,
    Value,
    apis_named,
    canonical,
    reported,
)
from repro_lint.names import Names, dotted_name
from repro_lint.rule import FileContext, Invalid, Rule, Valid
from repro_lint.tensors import Tensors
from repro_lint.torch_versions import TorchVersion

# -- classifying calls ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Finding:
    """A call of a catalogued op whose condition holds (or cannot be decided)."""

    entry: Entry
    api: Api
    behaviour: Behaviour
    # How the source names the op: `F.interpolate`, `nn.Upsample`, `Tensor.index_add_`.
    spelling: str
    # The parts of the condition the source does not decide, in words.
    undecided: tuple[str, ...]


class _View:
    """A call as the catalog's conditions see it (``catalog.CallView``)."""

    def __init__(
        self,
        calls: CatalogCalls,
        api: Api,
        call: cst.Call | None,
        receiver: cst.BaseExpression | None = None,
        shift: int = 0,
        forward_call: cst.Call | None = None,
    ) -> None:
        self._calls = calls
        self._api = api
        self._call = call
        self._receiver = receiver
        self._shift = shift
        self._forward_call = forward_call

    def value(self, param: str) -> Value:
        if param == "input" and self._api.kind is ApiKind.METHOD:
            if self._receiver is None:
                return UNKNOWN
            return self._calls.tensors.facts(self._receiver) or UNKNOWN
        if self._forward_call is not None and param in self._api.forward:
            return self._argument(self._forward_call, param, self._api.forward.index(param))
        if self._call is None:
            return UNKNOWN
        params = self._api.params
        position = params.index(param) + self._shift if param in params else None
        return self._argument(self._call, param, position)

    def _argument(self, call: cst.Call, keyword: str, position: int | None) -> Value:
        arg = argument(call, keyword, position)
        if arg is None:
            # ``f(*args)`` / ``f(**kwargs)`` may pass it; otherwise the default applies.
            return MAYBE if any(a.star for a in call.args) else MISSING
        return self._calls.value_of(arg.value)


class CatalogCalls:
    """Finds calls of catalogued ops in one module and judges them for a torch version."""

    def __init__(self, names: Names, target: TorchVersion) -> None:
        self.names = names
        self.target = target
        self.tensors = Tensors(names)

    def value_of(self, expr: cst.BaseExpression) -> Value:
        """An argument as a literal, a tensor's facts, a resolved name, or UNKNOWN."""
        if isinstance(expr, cst.Name) and expr.value in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[expr.value]
        number = literal_int(expr)
        if number is not None:
            return number
        if isinstance(expr, cst.Float):
            return float(expr.value)
        text = literal_str(expr)
        if text is not None:
            return text
        if isinstance(expr, cst.Tuple | cst.List):
            if any(isinstance(e, cst.StarredElement) for e in expr.elements):
                return UNKNOWN
            return tuple(self.value_of(e.value) for e in expr.elements)
        facts = self.tensors.facts(expr)
        if facts is not None:
            return facts
        qualified = self.names.qualified_name(expr)
        return Named(qualified) if qualified is not None else UNKNOWN

    def classify(self, node: cst.Call) -> Finding | None:
        """The finding for this call: one with no deterministic kernel wins over one that
        deterministic mode fixes; a decided condition over an undecided one; then catalog
        order."""
        best: tuple[tuple[int, int], Finding] | None = None
        for entry, api, view, spelling in self._candidates(node):
            if entry.scope is not Scope.CALL:
                continue
            behaviour = entry.behaviour(self.target)
            if behaviour not in HAS_NO_DETERMINISTIC_KERNEL | NEEDS_DETERMINISTIC_MODE:
                continue
            verdict = api.when.evaluate(view)
            if verdict is False:
                continue
            assert behaviour is not None
            rank = (0 if behaviour in HAS_NO_DETERMINISTIC_KERNEL else 1, 0 if verdict else 1)
            if best is None or rank < best[0]:
                undecided = api.when.undecided(view) if verdict is None else ()
                best = (rank, Finding(entry, api, behaviour, spelling, undecided))
        return best[1] if best is not None else None

    def _candidates(self, node: cst.Call) -> Iterable[tuple[Entry, Api, _View, str]]:
        func = node.func
        qualified = self.names.qualified_name(func)
        if qualified is not None:
            spelling = (
                dotted_name(func) if isinstance(func, cst.Name | cst.Attribute) else qualified
            )
            for entry, api in apis_named(qualified):
                if api.kind is ApiKind.METHOD:
                    # ``torch.Tensor.index_add_(t, ...)``: the tensor is the first argument.
                    first = argument(node, None, 0)
                    receiver = first.value if first is not None else None
                    yield entry, api, _View(self, api, node, receiver, shift=1), spelling
                elif not (api.kind is ApiKind.MODULE and api.judged_at_call):
                    yield entry, api, _View(self, api, node), spelling
            return
        if isinstance(func, cst.Attribute) and func.attr.value in BY_METHOD:
            # Never a bare ``.median`` on an unknown receiver: it must be a likely tensor.
            if self.tensors.facts(func.value) is None:
                return
            spelling = f"Tensor.{func.attr.value}"
            for entry, api in BY_METHOD[func.attr.value]:
                yield entry, api, _View(self, api, node, func.value), spelling
            return
        instance = self.tensors.module_instance(func)
        if instance is not None:
            # A call of a built module (``criterion(logits, target)``) whose condition needs
            # the call's arguments.
            spelling = canonical(instance.qualified).rsplit(".", 1)[1]
            for entry, api in apis_named(instance.qualified):
                if api.kind is ApiKind.MODULE and api.judged_at_call:
                    view = _View(self, api, instance.call, forward_call=node)
                    yield entry, api, view, spelling


class CatalogTraversal:
    """Visitor methods that keep the tensor inference up to date and classify every call.

    Shared by RPL401/RPL402 (dispatched by the engine) and ``classify`` (a libcst visitor):
    the method names are the same in both protocols.
    """

    calls: CatalogCalls

    def on_finding(self, node: cst.Call, finding: Finding) -> None:
        raise NotImplementedError

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.calls.tensors.enter_class(node)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.calls.tensors.leave_class()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.calls.tensors.enter_function(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.calls.tensors.leave_function()

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self.calls.tensors.enter_function(node)

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self.calls.tensors.leave_function()

    def visit_For(self, node: cst.For) -> None:
        self.calls.tensors.bind(node.target, None)

    def _comprehension(self, node: cst.BaseComp | cst.DictComp) -> None:
        # Comprehension variables shadow outer names; the element is visited before the
        # ``for`` clauses, so bind them first (precision over recall: they stay unknown).
        clause: cst.CompFor | None = node.for_in
        while clause is not None:
            self.calls.tensors.bind(clause.target, None)
            clause = clause.inner_for_in

    def visit_ListComp(self, node: cst.ListComp) -> None:
        self._comprehension(node)

    def visit_SetComp(self, node: cst.SetComp) -> None:
        self._comprehension(node)

    def visit_GeneratorExp(self, node: cst.GeneratorExp) -> None:
        self._comprehension(node)

    def visit_DictComp(self, node: cst.DictComp) -> None:
        self._comprehension(node)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self.calls.tensors.bind(node.asname.name, None)

    def leave_Assign(self, original_node: cst.Assign) -> None:
        # On leave, so that ``x = x.float()`` reads the previous ``x``.
        for target in original_node.targets:
            self.calls.tensors.bind(target.target, original_node.value)

    def leave_AnnAssign(self, original_node: cst.AnnAssign) -> None:
        if original_node.value is not None:
            self.calls.tensors.bind(original_node.target, original_node.value)
        else:
            self.calls.tensors.declare(original_node.target, original_node.annotation.annotation)

    def leave_NamedExpr(self, original_node: cst.NamedExpr) -> None:
        self.calls.tensors.bind(original_node.target, original_node.value)

    def visit_Call(self, node: cst.Call) -> None:
        finding = self.calls.classify(node)
        if finding is not None:
            self.on_finding(node, finding)


class _Classifier(CatalogTraversal, cst.CSTVisitor):
    def __init__(self, calls: CatalogCalls) -> None:
        super().__init__()
        self.calls = calls
        self.found: dict[cst.Call, Finding] = {}

    # The engine's traversal tells the name resolver about function scopes (parameters hide
    # imports); do the same, so that this finds exactly what the rules report.
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.calls.names.enter_function(node)
        super().visit_FunctionDef(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        super().leave_FunctionDef(original_node)
        self.calls.names.leave_function()

    def on_finding(self, node: cst.Call, finding: Finding) -> None:
        self.found[node] = finding


def classify(module: cst.Module, names: Names, target: TorchVersion) -> dict[cst.Call, Finding]:
    """Every catalogued call of ``module`` and its finding for ``target`` (what RPL401/RPL402
    see, without reporting)."""
    classifier = _Classifier(CatalogCalls(names, target))
    module.visit(classifier)
    return classifier.found


# Every catalogued name resolves through an import of torch, and every likely tensor comes
# from torch or from a LightningModule's forward: a file that names neither has no finding.
# (Op names would make a poor prefilter: "put" is in every "input".)
# Any call of a catalogued op spells the op's own name somewhere in the file (in the call, or
# in the import that brings it in), so those names are the prefilter's trigger words.
CATALOG_TRIGGERS = tuple(sorted({api.short for entry in reported() for api in entry.apis}))


# -- documentation and examples ---------------------------------------------------------------

_SHORT_PREFIXES = (
    ("torch.nn.functional.", "F."),
    ("torch.Tensor.", "Tensor."),
    ("torch.nn.", "nn."),
)


def short_name(qualified: str) -> str:
    for prefix, short in _SHORT_PREFIXES:
        if qualified.startswith(prefix):
            return short + qualified[len(prefix) :]
    return qualified


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _status(entry: Entry, target: TorchVersion) -> str:
    now = entry.behaviour(target)
    if now is None:
        return f"not judged before {entry.since}"
    if len(entry.history) == 1:
        return f"**{now.value}** (from {entry.since})"
    return f"**{now.value}** ({entry.history_text()})"


def catalog_table(entries: Sequence[Entry], target: TorchVersion | None) -> str:
    """A markdown table of catalog entries: op, condition, where, status, alternative."""
    status_heading = f"Status on torch {target}" if target is not None else "Status"
    lines = [
        f"| Op | Condition | Where | {status_heading} | Alternative |",
        "|---|---|---|---|---|",
    ]
    for entry in entries:
        apis = ", ".join(dict.fromkeys(f"`{short_name(api.name)}`" for api in entry.apis))
        where = f"{entry.phase.value}, {entry.device.value}"
        status = _status(entry, target) if target is not None else entry.history_text()
        cells = (apis, entry.condition, where, status, entry.alternative or "")
        lines.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    return "\n".join(lines)


def catalog_sections(
    behaviours: frozenset[Behaviour], target: TorchVersion | None
) -> dict[str, str]:
    """The catalog entries a rule reports: for ``target`` (and those it reports only for
    other releases), or every release when no target is given."""
    entries = entries_reported_as(behaviours)
    if target is None:
        return {"Ops": catalog_table(entries, None)}
    now = [entry for entry in entries if entry.behaviour(target) in behaviours]
    other = [entry for entry in entries if entry not in now]
    return {
        "Ops": catalog_table(now, target),
        "Ops reported for other torch releases": catalog_table(other, target),
    }


def corrections(entries: Sequence[Entry]) -> str:
    """Where the catalog departs from the reference research, one line per correction."""
    by_text: dict[str, list[str]] = {}
    for entry in entries:
        if entry.correction is not None:
            by_text.setdefault(entry.correction, []).append(f"`{entry.id}`")
    return "\n".join(f"- {', '.join(ids)}: {text}" for text, ids in by_text.items())


def entries_reported_as(behaviours: frozenset[Behaviour]) -> tuple[Entry, ...]:
    """Per-call entries that some torch release gives one of ``behaviours`` (leaving out
    entries that another one always shadows)."""
    return tuple(
        entry
        for entry in reported()
        if entry.shadowed_by is None
        and any(period.behaviour in behaviours for period in entry.history)
    )


PREAMBLE = (
    "import torch\n"
    "import torch.nn.functional as F\n"
    "from torch import nn\n"
    "\n"
    "x = torch.randn(2, 3, 8, 8, device='cuda', requires_grad=True)\n"
    "idx = torch.tensor([0, 1, 1, 2], device='cuda')\n"
    "src = torch.ones(4, device='cuda')\n"
)


def catalog_examples(behaviours: frozenset[Behaviour]) -> tuple[Invalid, ...]:
    """One INVALID example per catalog entry and release where it takes ``behaviours``,
    calling the entry's main API (entries another entry always shadows are left out)."""
    examples: list[Invalid] = []
    for entry in reported():
        if entry.shadowed_by is not None or entry.example is None:
            continue
        for period in entry.history:
            if period.behaviour in behaviours:
                examples.append(
                    Invalid(
                        PREAMBLE + entry.example + "\n",
                        config={"target-torch": str(period.since)},
                        note=f"catalog entry {entry.id}",
                    )
                )
    return tuple(examples)


# -- the rule ---------------------------------------------------------------------------------

_TAIL = {
    Behaviour.RAISES: "has no deterministic implementation (deterministic mode raises)",
    Behaviour.SILENT: "is nondeterministic, and deterministic mode does not catch it",
}


def describe(finding: Finding, tail: str) -> str:
    """The finding in words: op, condition (with what the source leaves open), tail and the
    alternative."""
    entry = finding.entry
    condition = f" (if {' and '.join(finding.undecided)})" if finding.undecided else ""
    message = f"`{finding.spelling}`: {entry.summary}{condition} {tail}"
    if entry.alternative and finding.behaviour in HAS_NO_DETERMINISTIC_KERNEL:
        message += f"; alternative: {entry.alternative}"
    return message


class CatalogRule(CatalogTraversal, Rule):
    """A rule that reports catalogued calls (RPL401, RPL402)."""

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self.calls = CatalogCalls(context.names, context.target_torch)


class NondeterministicOp(CatalogRule):
    """
    ## What it does
    Flags an explicit call, or a module construction, of a PyTorch op that has no
    deterministic implementation for the target torch version: under
    `torch.use_deterministic_algorithms(True)` it raises (a few are not even caught), and
    without it the result changes from run to run. Examples: the backward of bicubic
    interpolation, of reflection padding and of 3-D average pooling on CUDA;
    `median(x, dim)`, `histc` of floats and `bincount` with weights on CUDA;
    `put_(accumulate=False)` and `MaxUnpool2d` on every device.

    The argument conditions of the catalog decide (`bincount` only with `weights`,
    `median` only with `dim`, interpolation only in linear/bilinear/bicubic/trilinear modes,
    `F.pad` only in `reflect` mode, `EmbeddingBag` only with `mode="max"`, `nll_loss` only
    for provably spatial input, `AdaptiveAvgPool2d(1)` never); an argument the source does
    not decide (a variable `mode`) is reported, and the message says what it depends on.
    Tensor methods (`x.median(dim=1)`) are reported only when `x` is likely a torch tensor,
    never on numpy arrays or pandas objects.

    ## Why is this bad?
    These kernels accumulate with atomic adds (or pick among tied indices) in an order that
    depends on thread scheduling, so two runs with the same seeds give different numbers.
    Deterministic mode cannot help: it has no deterministic kernel to switch to, so it raises
    `RuntimeError: <op> does not have a deterministic implementation` as soon as the op runs,
    and a training script that turns on deterministic mode for reproducibility crashes.

    ## Options
    `target-torch` (or the torch version inferred from the project's dependencies): ops whose
    status changed between releases (bilinear and trilinear interpolation, replication
    padding, `cumsum`, `kthvalue`, `histc` of integers, 3-D max pooling with indices) are
    judged for that release.

    ## Known limitations
    The device is not known statically: an op that is nondeterministic only on CUDA is
    reported even in code that runs on the CPU (ignore RPL401 for such files with
    `per-file-ignores`). Convolutions, matmul, attention (SDPA) and plain tensor indexing are
    not reported per call (RPL202 covers them), nor ops hazardous only under torch.compile
    tracing or an optional kernel library (see "Not reported per call").

    ## References
    - `torch.use_deterministic_algorithms` documentation
    - PyTorch notes on randomness: "Avoiding nondeterministic algorithms"
    """

    CODE = "RPL401"
    MESSAGE = "This op has no deterministic implementation for the target torch version"
    TRIGGERS = CATALOG_TRIGGERS
    TRIGGER_WORDS = True
    _NEW = {"target-torch": "2.13"}
    INVALID = (
        Invalid(
            "import torch\nfrom torch import nn\n\n"
            "class Decoder(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.up = nn.Upsample(scale_factor=2, mode='bicubic')\n",
            config=_NEW,
        ),
        Invalid(
            "import torch.nn.functional as F\n\n"
            "def resize(image, mode):\n"
            "    return F.interpolate(image, scale_factor=2, mode=mode)\n",
            note="a mode the source does not decide is reported",
        ),
        Invalid(
            "import torch\n\ndef stats(scores: torch.Tensor):\n    return scores.median(dim=1)\n",
            note="a parameter annotated torch.Tensor",
        ),
        Invalid(
            "import torch\nfrom torch import nn\n\nclass Head(nn.Module):\n"
            "    def forward(self, logits):\n"
            "        return logits.median(1)\n",
            note="a parameter of forward in an nn.Module",
        ),
        Invalid(
            "import torch\nfrom torch import nn\n\nclass Head(nn.Module):\n"
            "    def forward(self, x):\n"
            "        return self.weight.put_(x, x)\n",
            note="an attribute of an nn.Module",
        ),
        Invalid(
            "import torch\ncounts = torch.arange(10.0, device='cuda').histc(bins=4)\n",
            note="a chain starting at a torch call",
        ),
        Invalid("import torch\nloss = torch.Tensor.put_(torch.zeros(3), idx, src)\n"),
        Invalid(
            "import torch\nfrom torch import nn\n\n"
            "images = torch.randn(8, 3, 32, 32, device='cuda')\n"
            "criterion = nn.CrossEntropyLoss()\n"
            "loss = criterion(images, labels)\n",
            note="a provably spatial input to a loss module",
        ),
        Invalid(
            "from torch.nn.functional import pad\n"
            "def f(x):\n"
            "    return pad(x, (1, 1), mode='reflect')\n"
        ),
        Invalid(
            "import torch\nfrom torch import nn\nup = nn.Upsample(scale_factor=2, mode='bilinear')\n",
            config={"target-torch": "2.0"},
            note="bilinear raises before 2.1",
        ),
        *catalog_examples(HAS_NO_DETERMINISTIC_KERNEL),
    )
    VALID = (
        Valid(
            "import torch\nfrom torch import nn\n\n"
            "class Decoder(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.up = nn.Upsample(scale_factor=2, mode='nearest')\n",
            note="nearest interpolation has a deterministic backward",
        ),
        PREAMBLE + "up = nn.Upsample(scale_factor=2)\ny = F.interpolate(x, scale_factor=2)\n",
        Valid(
            PREAMBLE + "y = F.interpolate(x, scale_factor=2, mode='bilinear')\n",
            config=_NEW,
            note="bilinear is deterministic in deterministic mode since 2.1 (RPL402)",
        ),
        Valid(PREAMBLE + "counts = torch.bincount(idx)\n", note="no weights"),
        Valid(PREAMBLE + "m = torch.median(x)\nn = x.nanmedian()\n", note="no dim"),
        Valid(
            PREAMBLE + "h = torch.histc(torch.tensor([1, 2, 2], device='cuda'), bins=3)\n",
            config=_NEW,
            note="integer histc stopped alerting in 2.8",
        ),
        Valid(
            PREAMBLE + "y = F.pad(x, (1, 1))\nz = F.pad(x, (1, 1), mode='replicate')\n",
            config=_NEW,
            note="replicate padding is deterministic in deterministic mode since 2.3 (RPL402)",
        ),
        Valid(
            PREAMBLE + "bag = nn.EmbeddingBag(10, 3)\nbag2 = nn.EmbeddingBag(10, 3, mode='sum')\n"
        ),
        Valid(
            PREAMBLE + "logits = torch.randn(8, 10, device='cuda')\n"
            "loss = F.cross_entropy(logits, labels)\nl2 = nn.CrossEntropyLoss()(logits, labels)\n",
            note="2-D input: nll_loss, not nll_loss2d",
        ),
        Valid(
            PREAMBLE
            + "criterion = nn.CrossEntropyLoss()\nloss = criterion(model(images), labels)\n"
            "l2 = F.nll_loss(outputs, labels)\n",
            note="not provably spatial: quiet",
        ),
        Valid(
            PREAMBLE + "y = torch.zeros(3, device='cuda').scatter_reduce_(0, idx, x, 'sum')\n",
            note="sum/mean are deterministic in deterministic mode (RPL402)",
        ),
        Valid(
            PREAMBLE + "y = torch.zeros(4, device='cuda').index_put_((idx,), x, accumulate=True)\n"
        ),
        Valid(
            PREAMBLE + "pool = nn.AdaptiveAvgPool2d(1)\npool2 = nn.AdaptiveAvgPool2d((1, 1))\n"
            "y = F.adaptive_avg_pool2d(x, 1)\npool3 = nn.AdaptiveMaxPool3d(1)\n",
            note="output size 1 is a mean (max), not the atomic backward",
        ),
        Valid(
            "import numpy as np\nimport pandas as pd\nimport torch\n\n"
            "df = pd.read_csv('scores.csv')\nm = df.median()\narr = np.arange(10)\n"
            "c = arr.cumsum()\nmed = np.median(arr, axis=0)\narr.put([0], [1])\n"
            "t = torch.arange(10)\nn = t.numpy().cumsum()\n",
            config={"target-torch": "2.0"},
            note="pandas and numpy look-alikes",
        ),
        Valid(
            "import numpy as np\nimport torch\nfrom torch import nn\n\n"
            "class Stats(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.history = np.zeros(10)\n"
            "    def forward(self, x):\n"
            "        return self.history.put([0], [1])\n",
            note="an nn.Module attribute assigned a numpy array",
        ),
        Valid(
            "import torch\n\ndef summarize(values):\n    return values.median(dim=0)\n",
            note="an unannotated parameter may be anything",
        ),
        Valid(
            "import torch\nfrom torch.utils.data import Dataset\n\nclass Data(Dataset):\n"
            "    def __getitem__(self, i):\n        return self.rows.median(dim=0)\n",
            note="a Dataset is not an nn.Module",
        ),
        Valid(
            PREAMBLE + "conv = nn.Conv2d(3, 8, 3)\ny = torch.matmul(x, x)\n"
            "a = F.scaled_dot_product_attention(x, x, x)\nz = x[idx]\nx[idx] = 0.0\n"
            "b = torch.bmm(x[0], x[0])\n",
            note="ubiquitous ops are covered by RPL202",
        ),
        Valid(
            PREAMBLE
            + "v = torch.kthvalue(x, 2, dim=1)\nc = x.cumsum(dim=1)\nm = torch.mode(x, 1)\n",
            config=_NEW,
            note="kthvalue fixed in 2.10; cumsum fixed by deterministic mode in 2.6; mode only when traced",
        ),
        Valid(
            PREAMBLE + "y = torch.zeros(3, device='cuda').scatter_(0, idx, 1.0)\n",
            note="a scalar value",
        ),
        Valid(PREAMBLE + "x.resize_(4)\n", note="not a quantized tensor"),
        Valid(
            PREAMBLE + "pool = nn.MaxPool3d(2, return_indices=True)\n",
            config=_NEW,
            note="with indices, deterministic mode uses a decomposition in 2.13 (RPL402)",
        ),
        Valid(
            "import torch\ncounts = torch.zeros(10).put_(idx, src, accumulate=True)\n",
            config={"target-torch": "1.8"},
            note="not judged before the release the catalog vouches for",
        ),
    )

    def on_finding(self, node: cst.Call, finding: Finding) -> None:
        tail = _TAIL.get(finding.behaviour)
        if tail is not None:
            self.report(node, describe(finding, tail))

    @classmethod
    def doc_sections(cls, target: TorchVersion | None = None) -> dict[str, str]:
        not_per_call = "\n".join(
            f"- {', '.join(dict.fromkeys(f'`{short_name(a.name)}`' for a in entry.apis))}: "
            f"{entry.summary}; {entry.scope.value}"
            for entry in ENTRIES
            if entry.scope is not Scope.CALL
        )
        return {
            **catalog_sections(HAS_NO_DETERMINISTIC_KERNEL, target),
            "Not reported per call": not_per_call,
            "Catalog corrections": corrections(ENTRIES),
        }
