"""RPL403: layers and functions of third-party packages whose CUDA kernels scatter with
atomic adds (PyTorch Geometric, torch_scatter, DGL, torchvision's RoI ops)."""

from __future__ import annotations

import libcst as cst

from repro_lint.arguments import argument
from repro_lint.catalog import (
    BY_ID,
    DGL_FUNCTIONS,
    DGL_MESSAGE_PASSING,
    HAS_NO_DETERMINISTIC_KERNEL,
    UNKNOWN,
    Behaviour,
    Named,
    Value,
    third_party,
)
from repro_lint.diagnostics import Diagnostic
from repro_lint.program import Program, SettledRule
from repro_lint.rule import FileContext, Invalid, Valid
from repro_lint.rules.nondeterministic_op import (
    CatalogRule,
    Finding,
    Site,
    catalog_table,
    describe,
)
from repro_lint.rules.nondeterministic_op_without_deterministic_mode import enables
from repro_lint.torch_versions import TorchVersion

_DGL = BY_ID["dgl-message-passing-cuda"]
_UPDATE_ALL = next(api for api in _DGL.apis if api.short == "update_all")
# Every catalogued third-party name is imported from one of these packages, and DGL's
# message passing names its built-in functions through ``dgl``; torchvision is imported by
# most vision code, so its RoI ops are matched by their own names.
_TRIGGERS = (
    "torch_geometric", "torch_scatter", "dgl", "roi_align", "RoIAlign", "MultiScaleRoIAlign",
    "roi_pool", "RoIPool",
)  # fmt: skip
_TAILS = {
    Behaviour.FIXED_BY_MODE: "is nondeterministic unless deterministic mode is on",
    Behaviour.RAISES: "has no deterministic implementation (deterministic mode raises)",
    Behaviour.SILENT: "is nondeterministic, and deterministic mode does not reach it",
}


class _ReducerView:
    """The one argument DGL's message-passing condition reads: the reducer's candidates."""

    def __init__(self, reducers: frozenset[str] | None) -> None:
        self._reducers = reducers

    def value(self, param: str) -> Value:
        if self._reducers is None:
            return UNKNOWN
        return tuple(Named(name) for name in sorted(self._reducers))


class NondeterministicLibraryKernel(CatalogRule, SettledRule):
    """
    ## What it does
    Flags layers and functions of third-party packages whose CUDA kernels add up with atomic
    operations, so that training on a GPU gives different numbers from run to run with every
    seed fixed:

    - PyTorch Geometric message passing that sums or averages (`GCNConv`, `SAGEConv`,
      `GATConv`, `GINConv`, ... and models built from them such as `GraphSAGE` and `GAT`),
      `global_add_pool`/`global_mean_pool` and `torch_geometric.utils.scatter`: PyTorch's
      `scatter_add_`/`scatter_reduce_` underneath, which
      `torch.use_deterministic_algorithms(True)` makes deterministic;
    - `torch_scatter.scatter` (sum and mean, and the composites built on them);
    - DGL's built-in message passing with a `sum` or `mean` reducer
      (`g.update_all(fn.copy_u("h", "m"), fn.sum("m", "h"))`, `send_and_recv`, `pull`,
      `push`) and the DGL layers built on it (`GraphConv`, `GATConv`, `SAGEConv`, `GINConv`,
      `RelGraphConv`, ...): DGL's own kernels, which deterministic mode does not reach;
    - the backward of torchvision's `roi_pool`/`RoIPool`, which raises under deterministic
      mode, and of `roi_align`/`RoIAlign`/`MultiScaleRoIAlign`, which raised until
      torchvision 0.16 (torch 2.1) and since then is deterministic under the mode, through a
      slow pure-Python implementation.

    A layer whose aggregation provably takes a maximum or minimum (`aggr="max"`,
    `SAGEConv(..., "pool")`, `fn.max`) is not reported; one the source does not decide is,
    and the message says what it depends on. As for RPL401/RPL402, code no training step
    reaches is left alone: no-grad scopes, data code, evaluation functions, and layers built
    only to be used there.

    ## Why is this bad?
    A graph layer gathers messages along edges and adds them onto nodes; on CUDA many threads
    add onto the same node at once, in an order that changes from run to run, and
    floating-point addition is not associative. The differences are in the last bits at
    first, and training amplifies them: two runs with the same seeds end with different
    weights and accuracies (often by a point or more on small graphs).

    ## Fix safety
    There is no automatic fix. For PyTorch Geometric and torch_scatter, turn deterministic
    mode on (`torch.use_deterministic_algorithms(True)`; RPL402's fix inserts its warn-only
    form), or aggregate with sorted indices (`torch_scatter.segment_csr`, a `SparseTensor`
    adjacency). DGL has no deterministic switch: aggregate in PyTorch where runs must repeat.
    `roi_pool` has no deterministic backward. `roi_align` has one under deterministic mode from
    torchvision 0.16, at a price: its first call compiles (about a minute), and its backward
    grows with boxes times sampling points; a fixed `sampling_ratio` keeps it small.

    ## Options
    `target-torch`: the catalog vouches for these entries from torch 2.0.

    ## Known limitations
    The device is not known statically: layers that are nondeterministic only on CUDA are
    reported in code that runs on the CPU too, but for a notebook whose program never
    selects a CUDA device (as for RPL401). Which package version is installed is not
    known either; the entries describe current releases. PyTorch Geometric with a
    `SparseTensor` adjacency aggregates deterministically, which the source rarely shows.

    ## References
    - PyTorch notes on randomness: "Avoiding nondeterministic algorithms"
    - pyg-team/pytorch_geometric#2788; rusty1s/pytorch_scatter#226; dmlc/dgl#1471, #7241
    """

    CODE = "RPL403"
    MESSAGE = "This library kernel adds up with atomics on CUDA: results differ between runs"
    TRIGGERS = _TRIGGERS
    TRIGGER_WORDS = True
    gate_forward = True
    LIBRARY = True
    INVALID = (
        Invalid(
            "import torch\nimport torch.nn.functional as F\nfrom torch_geometric.nn import GCNConv\n\n"
            "class GCN(torch.nn.Module):\n"
            "    def __init__(self, in_channels, hidden, classes):\n"
            "        super().__init__()\n"
            "        self.conv1 = GCNConv(in_channels, hidden, cached=True)\n"
            "        self.conv2 = GCNConv(hidden, classes, cached=True)\n\n"
            "    def forward(self, x, edge_index):\n"
            "        x = F.relu(self.conv1(x, edge_index))\n"
            "        return self.conv2(x, edge_index)\n",
            note="PyG layers in a model trained on CUDA",
        ),
        Invalid(
            "import torch\nfrom torch_geometric.nn.conv import SAGEConv\n\n"
            "class SAGE(torch.nn.Module):\n"
            "    def __init__(self, sizes):\n"
            "        super().__init__()\n"
            "        self.convs = torch.nn.ModuleList()\n"
            "        for a, b in zip(sizes, sizes[1:]):\n"
            "            self.convs.append(SAGEConv(a, b))\n",
            note="the default mean aggregation, appended to a ModuleList",
        ),
        Invalid(
            "import torch_geometric.nn as pyg_nn\n\n"
            "def readout(x, batch):\n"
            "    return pyg_nn.global_add_pool(x, batch)\n",
        ),
        Invalid(
            "from torch_geometric.utils import scatter\n\n"
            "def node_loss(loss, batch):\n"
            "    return scatter(loss, batch, reduce='mean').sum()\n",
        ),
        Invalid(
            "import torch_scatter\n\n"
            "def pool(x, index):\n"
            "    return torch_scatter.scatter(x, index, dim=0)\n",
            note="sum is the default reduction",
        ),
        Invalid(
            "import dgl.nn as dglnn\nfrom torch import nn\n\n"
            "class GCN(nn.Module):\n"
            "    def __init__(self, in_size, hid_size, out_size):\n"
            "        super().__init__()\n"
            "        self.layers = nn.ModuleList([\n"
            "            dglnn.GraphConv(in_size, hid_size),\n"
            "            dglnn.GraphConv(hid_size, out_size),\n"
            "        ])\n",
        ),
        Invalid(
            "from dgl.nn.pytorch import SAGEConv\n\nlayer = SAGEConv(16, 16, 'gcn')\n",
            note="the gcn aggregator sums",
        ),
        Invalid(
            "import dgl.function as fn\nimport torch\n\n"
            "class Propagate(torch.nn.Module):\n"
            "    def forward(self, graph, feat):\n"
            "        with graph.local_scope():\n"
            "            graph.ndata['h'] = feat\n"
            "            graph.update_all(fn.copy_u('h', 'm'), fn.sum('m', 'h'))\n"
            "            return graph.ndata['h']\n",
            note="built-in message passing with a sum reducer",
        ),
        Invalid(
            "import dgl.function as fn\nimport torch\n\n"
            "class Conv(torch.nn.Module):\n"
            "    def __init__(self, aggregator):\n"
            "        super().__init__()\n"
            "        if aggregator == 'sum':\n"
            "            self.reduce = fn.sum\n"
            "        else:\n"
            "            self.reduce = fn.max\n\n"
            "    def forward(self, graph, feat):\n"
            "        message = fn.copy_u('h', 'm')\n"
            "        graph.update_all(message, self.reduce('m', 'h'))\n",
            note="a reducer chosen at construction: reported, the message says when",
        ),
        Invalid(
            "import torch\nfrom torchvision.ops import RoIAlign\n\n"
            "class Head(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.pool = RoIAlign((7, 7), spatial_scale=1 / 16, sampling_ratio=2)\n\n"
            "    def forward(self, features, rois):\n"
            "        return self.pool(features, rois)\n",
        ),
    )
    VALID = (
        Valid(
            "import torch\nfrom torch_geometric.nn import GCNConv\n\n"
            "torch.use_deterministic_algorithms(True)\nconv = GCNConv(16, 16)\n",
            note="deterministic mode selects PyTorch's deterministic scatter kernels",
        ),
        Valid(
            "from torch_geometric.nn import SAGEConv, EdgeConv\n\n"
            "a = SAGEConv(16, 16, aggr='max')\nb = SAGEConv(16, 16, 'max')\n",
            note="max aggregation does not add up",
        ),
        Valid(
            "import torch_scatter\n\n"
            "def pool(x, index, ptr):\n"
            "    m = torch_scatter.scatter(x, index, dim=0, reduce='max')\n"
            "    return torch_scatter.segment_csr(x, ptr)\n",
            note="max, and segment reductions of sorted indices",
        ),
        Valid(
            "import dgl.function as fn\n\n"
            "def propagate(graph):\n"
            "    graph.update_all(fn.copy_u('h', 'm'), fn.max('m', 'h'))\n",
        ),
        Valid(
            "import torch\n\n"
            "def propagate(graph, message, reduce):\n"
            "    graph.update_all(message, reduce)\n",
            note="user-defined functions: not DGL's atomic built-ins (and not known to be DGL)",
        ),
        Valid(
            "import torch\nfrom torch_geometric.nn import LabelPropagation, GCNConv\n\n"
            "@torch.no_grad()\n"
            "def test(model, data):\n"
            "    conv = GCNConv(16, 16)\n"
            "    return conv(data.x, data.edge_index)\n",
            note="evaluation under no_grad",
        ),
        Valid(
            "import torch\nfrom torchvision.ops import roi_align\n\n"
            "def crops(images, boxes):\n"
            "    with torch.no_grad():\n"
            "        return roi_align(images, boxes, (7, 7))\n",
            note="no backward pass",
        ),
        Valid(
            "import torch\nfrom torch_geometric.nn import GCNConv\n\nconv = GCNConv(16, 16)\n",
            config={"target-torch": "1.13"},
            note="not judged before the release the catalog vouches for",
        ),
    )

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self._file_enables = False
        self._fixed_by_mode: list[Site] = []
        # DGL built-in functions held by names of the enclosing functions, and by ``self``
        # attributes of the enclosing classes.
        self._dgl_names: list[dict[str, frozenset[str]]] = [{}]
        self._dgl_attributes: list[dict[str, frozenset[str]]] = []

    # -- DGL's built-in functions through names and attributes --------------------------------

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        super().visit_ClassDef(node)
        self._dgl_attributes.append({})

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        super().leave_ClassDef(original_node)
        self._dgl_attributes.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        self._dgl_names.append({})

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        super().leave_FunctionDef(original_node)
        self._dgl_names.pop()

    def leave_Assign(self, original_node: cst.Assign) -> None:
        super().leave_Assign(original_node)
        found = self._dgl(original_node.value)
        for target in original_node.targets:
            name = target.target
            if type(name) is cst.Name:
                if found is None:
                    self._dgl_names[-1].pop(name.value, None)
                else:
                    self._dgl_names[-1][name.value] = found
            elif (
                type(name) is cst.Attribute
                and found is not None
                and self._dgl_attributes
                and self.calls.autograd.is_self(name.value)
            ):
                held = self._dgl_attributes[-1]
                held[name.attr.value] = held.get(name.attr.value, frozenset()) | found

    def _dgl(self, expr: cst.BaseExpression | None) -> frozenset[str] | None:
        """The DGL built-in functions ``expr`` is (or calls), if it is one."""
        if type(expr) is cst.Call:
            expr = expr.func
        if expr is None:
            return None
        qualified = self.names.qualified_name(expr)
        if qualified is not None:
            return frozenset({qualified}) if qualified.startswith(DGL_FUNCTIONS) else None
        if type(expr) is cst.Name:
            for scope in reversed(self._dgl_names):
                if expr.value in scope:
                    return scope[expr.value]
            return None
        if (
            type(expr) is cst.Attribute
            and self._dgl_attributes
            and self.calls.autograd.is_self(expr.value)
        ):
            return self._dgl_attributes[-1].get(expr.attr.value)
        return None

    # -- findings ---------------------------------------------------------------------------

    def visit_Call(self, node: cst.Call) -> None:
        super().visit_Call(node)
        if not self._file_enables:
            self._file_enables = enables(node, self.names)
        func = node.func
        if type(func) is not cst.Attribute or func.attr.value not in DGL_MESSAGE_PASSING:
            return
        position = DGL_MESSAGE_PASSING[func.attr.value]
        message = argument(node, "message_func", position - 1)
        reducer = argument(node, "reduce_func", position)
        reducers = self._dgl(reducer.value) if reducer is not None else None
        if reducers is None and (message is None or self._dgl(message.value) is None):
            # Neither argument is one of DGL's built-ins: a user-defined message passing
            # (or not DGL at all).
            return
        behaviour = _DGL.behaviour(self.calls.target)
        view = _ReducerView(reducers)
        verdict = _UPDATE_ALL.when.evaluate(view)
        if behaviour is None or verdict is False:
            return
        undecided = _UPDATE_ALL.when.undecided(view) if verdict is None else ()
        spelling = f"{func.attr.value}"
        self.judge(node, Finding(_DGL, _UPDATE_ALL, behaviour, spelling, undecided))

    def on_finding(self, site: Site) -> None:
        if site.finding.behaviour in HAS_NO_DETERMINISTIC_KERNEL:
            self._report(site)
        elif site.finding.behaviour is Behaviour.FIXED_BY_MODE:
            # A call later in the file may still turn deterministic mode on.
            self._fixed_by_mode.append(site)

    def finish_module(self, module: cst.Module) -> None:
        if not self._file_enables:
            for site in self._fixed_by_mode:
                self._report(site)

    def _report(self, site: Site) -> None:
        tail = _TAILS[site.finding.behaviour]
        self.report(site.node, describe(site.finding, tail), anchor=site.anchor)

    @classmethod
    def settle(
        cls, program: Program, filename: str, diagnostics: list[Diagnostic]
    ) -> list[Diagnostic]:
        """A notebook whose program selects no CUDA device keeps no finding (its kernels run
        on the CPU, where they add up in order); findings that deterministic mode fixes are
        dropped when every entry point of the run that reaches the file turns it on."""
        if program.on_cpu(filename):
            return []
        entries = program.reaching(filename)
        if not entries or not all(e.enables_deterministic_algorithms() for e in entries):
            return diagnostics
        fixed = _TAILS[Behaviour.FIXED_BY_MODE]
        return [d for d in diagnostics if fixed not in d.message]

    @classmethod
    def doc_sections(cls, target: TorchVersion | None = None) -> dict[str, str]:
        return {"Layers and functions": catalog_table(third_party(), target)}
