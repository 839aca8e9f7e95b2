"""DataLoaders, samplers and datasets as the data-loading rules see them.

``LoaderFacts`` rides along the project summary's traversal of a file (``summary.py`` feeds it)
and writes the ``data`` part of the summary: every call that builds a DataLoader (any alias, a
wrapper from another library, a ``functools.partial`` of one, or a call into project code that
may be a DataLoader subclass), with its arguments described by what the rules need (literal
values, the kind of sampler, whether a generator mixes in the rank, which dataset it loads,
followed through assignments in the same scope and through ``**kwargs`` dicts built there); the
random samplers and DistributedSamplers the file builds; and, per function, what random number
generators its code owns or uses (``self.rng = np.random.default_rng()``, a module-level
generator object, another RNG library). The project phase joins these across files
(``rules/dataloader_worker_rng.py``). Nothing here imports torch.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import libcst as cst

from repro_lint import layout
from repro_lint import program_seed as ps
from repro_lint import randomness as rng
from repro_lint.arguments import (
    argument,
    literal_bool,
    literal_int,
    literal_str,
)
from repro_lint.eval_loaders import evaluation_only
from repro_lint.names import Names, dotted_name
from repro_lint.positions import Positions
from repro_lint.torch_versions import TorchVersion
from repro_lint.values import (
    Bound,
    Entered,
    Flow,
    Item,
    Scope,
    Value,
    literal,
    name_chain,
    parameters,
    target_names,
)
from repro_lint.walker import children

if TYPE_CHECKING:
    from repro_lint.rule import FileContext

Json = Any

# -- tables -------------------------------------------------------------------------------------

# torch.utils.data.DataLoader's parameters that can be passed by position, in order.
TORCH_LOADER_PARAMS = (
    "dataset", "batch_size", "shuffle", "sampler", "batch_sampler", "num_workers", "collate_fn",
    "pin_memory", "drop_last", "timeout", "worker_init_fn", "multiprocessing_context",
    "generator",
)  # fmt: skip
_GEOMETRIC_PARAMS = ("dataset", "batch_size", "shuffle", "follow_batch", "exclude_keys")
_MONAI_PARAMS = ("dataset", "num_workers")
# DGL's loader of whole graphs; with ``use_ddp`` it samples through a DistributedSampler.
_DGL_GRAPH_PARAMS = ("dataset", "collate_fn", "use_ddp", "ddp_seed")
# Loader classes (qualified) -> their positional parameters. Each passes the torch loader's
# keyword arguments on.
LOADERS: dict[str, tuple[str, ...]] = {
    "torch.utils.data.DataLoader": TORCH_LOADER_PARAMS,
    "torch.utils.data.dataloader.DataLoader": TORCH_LOADER_PARAMS,
    "torchdata.stateful_dataloader.StatefulDataLoader": TORCH_LOADER_PARAMS,
    "torchdata.stateful_dataloader.stateful_dataloader.StatefulDataLoader": TORCH_LOADER_PARAMS,
    "torch_geometric.loader.DataLoader": _GEOMETRIC_PARAMS,
    "torch_geometric.loader.dataloader.DataLoader": _GEOMETRIC_PARAMS,
    "monai.data.DataLoader": _MONAI_PARAMS,
    "monai.data.dataloader.DataLoader": _MONAI_PARAMS,
    "dgl.dataloading.GraphDataLoader": _DGL_GRAPH_PARAMS,
    "dgl.dataloading.dataloader.GraphDataLoader": _DGL_GRAPH_PARAMS,
}
_LOADER_NAMES = frozenset(LOADERS)
# Loaders that install a worker_init_fn of their own when the caller passes none (MONAI's
# reseeds its randomizable transforms in every worker).
SEEDS_WORKERS = frozenset({"monai.data.DataLoader", "monai.data.dataloader.DataLoader"})

# The release that gave DataLoader, the random samplers and ``random_split`` their
# ``generator`` parameter (pytorch/pytorch#39737): before it, passing one raises.
GENERATORS_SINCE = TorchVersion(1, 6)

# Random samplers -> the position of their ``generator`` parameter.
RANDOM_SAMPLERS: dict[str, int] = {
    "torch.utils.data.RandomSampler": 3,
    "torch.utils.data.sampler.RandomSampler": 3,
    "torch.utils.data.SubsetRandomSampler": 1,
    "torch.utils.data.sampler.SubsetRandomSampler": 1,
    "torch.utils.data.WeightedRandomSampler": 3,
    "torch.utils.data.sampler.WeightedRandomSampler": 3,
}
DISTRIBUTED_SAMPLERS = frozenset(
    {"torch.utils.data.DistributedSampler", "torch.utils.data.distributed.DistributedSampler"}
)
# DistributedSampler(dataset, num_replicas, rank, shuffle, seed, drop_last)
DISTRIBUTED_SHUFFLE = 3
BATCH_SAMPLERS = frozenset(
    {"torch.utils.data.BatchSampler", "torch.utils.data.sampler.BatchSampler"}
)

# Datasets whose items involve no random numbers at all.
PLAIN_DATASETS = frozenset(
    {
        "torch.utils.data.TensorDataset", "torch.utils.data.dataset.TensorDataset",
        "torch.utils.data.StackDataset", "torch.utils.data.dataset.StackDataset",
    }
)  # fmt: skip
SUBSETS = frozenset({"torch.utils.data.Subset", "torch.utils.data.dataset.Subset"})
SPLITS = frozenset({"torch.utils.data.random_split", "torch.utils.data.dataset.random_split"})
CONCATS = frozenset(
    {
        "torch.utils.data.ConcatDataset", "torch.utils.data.dataset.ConcatDataset",
        "torch.utils.data.ChainDataset", "torch.utils.data.dataset.ChainDataset",
    }
)  # fmt: skip
# Library datasets that draw random numbers, if at all, only through the transforms they are
# given (which are judged separately) and the global generators.
LIBRARY_DATASETS = ("torchvision.datasets.", "torchaudio.datasets.")
# Base classes a project dataset may extend without hiding random number generation.
TRANSPARENT_BASES = ("torch.utils.data.", "torchvision.datasets.", "torchaudio.datasets.")

# Generator objects a dataset or transform can own -> the kind the fix reseeds.
GENERATOR_KINDS: dict[str, str] = {
    "numpy.random.default_rng": "numpy",
    "numpy.random.Generator": "numpy",
    "numpy.random.RandomState": "numpy-legacy",
    "random.Random": "random",
    "torch.Generator": "torch",
}
# Random number libraries that PyTorch does not reseed in loader workers (their own global
# state is copied into every worker as it is).
OTHER_RNG_LIBRARIES = ("imgaug.", "cupy.random.", "tensorflow.random.")
# Calls that say the program runs on several processes that train together.
DISTRIBUTED_PREFIXES = (
    "torch.distributed.",
    "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.distributed.",
    "torch.utils.data.distributed.",
    "torch.utils.data.DistributedSampler",
)
# Keywords that only loaders take: a call into project code with one of them may build one.
LOADER_KEYWORDS = frozenset(
    {"num_workers", "worker_init_fn", "sampler", "batch_sampler", "persistent_workers",
     "pin_memory", "prefetch_factor", "collate_fn"}
)  # fmt: skip
# Objects whose launcher runs the whole script once per process, each told its rank in the
# ``RANK`` environment variable (``accelerate launch`` starts them through torchrun).
LAUNCHED_PER_RANK = frozenset({"accelerate.Accelerator", "accelerate.accelerator.Accelerator"})
# What a program started once per process by ``mpiexec`` calls: its rank is
# ``MPI.COMM_WORLD.Get_rank()`` (0 when it runs alone).
MPI_CALLS = "mpi4py.MPI."
PARTIAL = "functools.partial"
# Directory listings (their order is the filesystem's) and the Path methods that list.
LISTING_CALLS = frozenset({"os.listdir", "os.scandir", "os.walk", "glob.glob", "glob.iglob"})
LISTING_METHODS = frozenset({"iterdir", "glob", "rglob"})
# Calls that pass on the order of the iterable they get (progress bars included).
KEEPS_ORDER = frozenset(
    {
        "builtins.list", "builtins.tuple", "builtins.iter", "builtins.filter", "builtins.map",
        "builtins.reversed", "tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm",
        "tqdm.std.tqdm", "tqdm.rich.tqdm",
    }
)  # fmt: skip
HELPER = "seed_worker"
_RANK = re.compile(r"(?:^|_)rank(?:$|_)|^process_index$", re.I)
_RANK_TEXT = re.compile(r"rank|process_index", re.I)
_MAX_DEPTH = 8
_TRANSFORM = re.compile(r"transform|augment|aug\b", re.I)


def _says_rank(text: str) -> bool:
    """``_RANK_TEXT`` found in ``text``: for ASCII text (about 60% of the benchmark corpus's
    files), the same test by substring on the lowered text, several times faster than a
    case-blind regex."""
    if text.isascii():
        lowered = text.lower()
        return "rank" in lowered or "process_index" in lowered
    return _RANK_TEXT.search(text) is not None


def is_rank_name(name: str) -> bool:
    """``rank``, ``local_rank``, ``global_rank``, ``rank_id``, accelerate's ``process_index``."""
    return _RANK.search(name) is not None


def mentions_rank(node: cst.CSTNode, names: Names) -> bool:
    """Whether an expression involves the process rank: a rank-named variable or attribute,
    ``torch.distributed.get_rank()``, or the ``RANK``/``LOCAL_RANK`` environment variables."""
    for found in _walk(node):
        if type(found) is cst.Name and is_rank_name(found.value):
            return True
        if type(found) is cst.Attribute and is_rank_name(found.attr.value):
            return True
        if (
            type(found) is cst.Call
            # ``x.get_rank()`` is a rank-named attribute already: only an alias needs names.
            and type(found.func) is cst.Name
            and (names.qualified_name(found.func) or "").endswith("distributed.get_rank")
        ):
            return True
        if type(found) is cst.SimpleString and literal_str(found) in ("RANK", "LOCAL_RANK"):
            return True
    return False


def _walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(children(current))


def block_indent(statements: Sequence[cst.CSTNode], module: cst.Module) -> str:
    """The indentation of the innermost of ``statements`` (outermost first): the indents of
    the blocks of the compound statements around it."""
    parts = []
    for outer in statements[:-1]:
        body = getattr(outer, "body", None)
        if type(body) is cst.IndentedBlock:
            parts.append(module.default_indent if body.indent is None else body.indent)
    return "".join(parts)


def generator_chain(node: cst.BaseExpression, names: Names) -> str | None:
    """The generator constructor behind ``torch.Generator()``,
    ``torch.Generator().manual_seed(0)`` or ``np.random.Generator(np.random.PCG64(1))``."""
    while type(node) is cst.Call:
        qualified = names.qualified_name(node.func)
        if qualified in GENERATOR_KINDS:
            return qualified
        func = node.func
        if type(func) is cst.Attribute and func.attr.value in ("manual_seed", "seed"):
            node = func.value
            continue
        return None
    return None


# -- per-file collection ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CallSite:
    """Where a call is, for reports and fixes: its innermost statement (index in the
    summary's statement table), row and indentation, and its top-level statement with the
    row where a helper function can go before it (after the blank lines that lead it, before
    its comments and decorators)."""

    statement: int
    row: int
    indent: str
    top: cst.CSTNode | None
    helper_row: int
    # The branches the call runs in within its function (the summary's ``ctx`` form).
    context: tuple[tuple[int, int], ...] = ()
    # The innermost statement's node (None at module level outside every statement): the
    # call is positioned by generating that statement, not its whole top-level one.
    inner: cst.CSTNode | None = None


class SiteSource(Protocol):
    """Tells where the call being visited is (the summary collector knows its statements)."""

    def site(self, node: cst.CSTNode) -> CallSite: ...

    def node_row(self, node: cst.CSTNode) -> int: ...


@dataclass(slots=True)
class _Pending:
    """A call recorded during the traversal; positions and fix texts come at the end."""

    node: cst.Call
    site: CallSite
    record: dict[str, Json]
    rank: str | None = None
    # The seed the program passed before this call in the same scope (``args.seed``).
    seed: ps.Seed | None = None
    # Where the call is, to read which names are bound there once the file is done.
    at: Value | None = None


# Sampler kinds, most telling first: a random sampler without a generator decides the order
# whatever else the loader may get.
SAMPLER_ORDER = ("random", "seeded", "distributed", "ordered", "other", "none")
# Distributed strategies of Lightning's Trainer (the names or the strategy classes).
_DISTRIBUTED_STRATEGY = re.compile(r"ddp|fsdp|deepspeed|horovod", re.I)
_UNKNOWN: list[Json] = ["unknown"]
# Stands for an argument whose value is not followed.
_BLANK = cst.Name("_")


def _names_in(node: cst.BaseExpression) -> Iterator[cst.Name]:
    """The variables an expression reads (not attribute names)."""
    stack: list[cst.CSTNode] = [node]
    while stack:
        current = stack.pop()
        if type(current) is cst.Name:
            yield current
        elif type(current) is cst.Attribute:
            stack.append(current.value)
        else:
            stack.extend(children(current))


def _conditions(test: cst.BaseExpression) -> list[list[Json]]:
    """Conditions on ``self`` attributes a test is made of (all must hold): ``self.a``,
    ``not self.a``, ``self.a is None``, ``self.a is not None``, ``self.a == "x"``,
    ``self.a != "x"``, and ``and`` of those; [] for anything else."""
    if type(test) is cst.BooleanOperation and type(test.operator) is cst.And:
        return [*_conditions(test.left), *_conditions(test.right)]
    attribute = _self_attribute(test)
    if attribute is not None:
        return [[attribute, "truthy", None]]
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        inner = _conditions(test.expression)
        return [_negated(inner[0])] if len(inner) == 1 else []
    if type(test) is cst.Comparison and len(test.comparisons) == 1:
        target = test.comparisons[0]
        left, right = test.left, target.comparator
        attribute = _self_attribute(left)
        if attribute is None:
            attribute, left, right = _self_attribute(right), right, left
        if attribute is None:
            return []
        ok, value = literal(right)
        if not ok:
            return []
        operator = target.operator
        if isinstance(operator, cst.Is | cst.Equal):
            return [[attribute, "eq", value]]
        if isinstance(operator, cst.IsNot | cst.NotEqual):
            return [[attribute, "ne", value]]
    return []


def _negated(condition: list[Json]) -> list[Json]:
    attribute, operator, value = condition
    opposite = {"truthy": "falsy", "falsy": "truthy", "eq": "ne", "ne": "eq"}[operator]
    return [attribute, opposite, value]


def _self_attribute(node: cst.BaseExpression) -> str | None:
    if type(node) is cst.Attribute and type(node.value) is cst.Name and node.value.value == "self":
        return node.attr.value
    return None


def _telling(described: dict[str, Json]) -> bool:
    """Whether an argument's description says anything a loader's judgement could use."""
    return (
        any(k in described for k in ("v", "s", "g", "m", "p"))
        or described.get("d", _UNKNOWN) != _UNKNOWN
    )


def _with_parts(described: list[Json], parts: list[Json]) -> list[Json]:
    """A described dataset (``_dataset``) with more parts: those of a transform set on it
    after it was built. Only a dataset class's instances take them (a library or project
    class); any other description is returned as it is."""
    kind = described[0]
    if kind == "any":
        return ["any", [_with_parts(alternative, parts) for alternative in described[1]]]
    if kind in ("library", "class"):
        joined = list(described[2])
        joined.extend(part for part in parts if part not in joined)
        return [*described[:2], joined, *described[3:]]
    return described


def _flag(value: Value) -> bool:
    """A parameter whose default is a bool, number or string literal
    (``augment_horizontal_flip=True``): a switch or a setting, not a transform object."""
    binding = value.binding
    if value.node is not None or binding is None or binding.default is None:
        return False
    if type(binding.default) is cst.Float:
        return True
    ok, default = literal(binding.default)
    return ok and default is not None


class LoaderFacts:
    """The data-loading part of one file's summary (fed by ``summary.SummaryCollector``)."""

    def __init__(self, context: FileContext, text: str = "") -> None:
        self._names = context.names
        self._module = context.module
        self._positions = context.positions
        self._path = context.path
        self._text = text
        self._split: list[str] | None = None
        self._seed = context.config.seed
        self._seed_functions = context.config.seed_functions
        # Per scope: the seeds the program passes to a seeding call (the seed, the branch
        # path where it holds on every path, the bindings of its names then); the integers
        # passed as seeds anywhere in it; its seed-named parameter.
        self._seeded: dict[
            int, list[tuple[ps.Seed, tuple[int, ...], list[str], list[Any], int]]
        ] = {}
        self._literal_seeds: dict[int, list[str]] = {}
        # Methods: scope id -> (the class's key, the name of the method's first parameter).
        self._methods: dict[int, tuple[str, str]] = {}
        # Per class: the seeds its methods pass that read only the instance (``set_seed(
        # self.args.seed)``): any other method may pass the same.
        self._instance_seeds: dict[str, list[tuple[ps.Seed, str]]] = {}
        # Per scope: when (in traversal order) it passes a seed it names (``seed``).
        self._seed_seqs: dict[int, list[int]] = {}
        self._seed_params: dict[int, ps.Seed] = {}
        # ``if x is not None:`` blocks (by id) -> the code of ``x``.
        self._none_guards: dict[int, str] = {}
        # Names bound to a parsed command line (``args = parser.parse_args()``).
        self._namespaces: set[str] = set()
        # ``train_set.transform = Compose([...])`` after the dataset was built: per scope
        # and name, the transform-like attributes written so far (forgotten on rebinding).
        self._set_transforms: dict[tuple[int, str], list[tuple[str, Value]]] = {}
        self._option: tuple[str, bool] | None = None
        self._flow = Flow()
        self._classes: list[str] = []
        self._loaders: list[_Pending] = []
        self._samplers: list[_Pending] = []
        self._distributed: list[_Pending] = []
        self._by_call: dict[int, _Pending] = {}
        self._partials: dict[str, dict[str, Json]] = {}
        self._facts: dict[str, list[list[Json]]] = {}
        self._seen: dict[str, set[str]] = {}
        self._objects: dict[str, str] = {}
        # Per function, the names of the file's objects it uses (a list: usually one or two).
        self._object_uses: dict[str, list[str]] = {}
        self._returns: dict[str, list[Json]] = {}
        self._guards: dict[int, list[list[Json]]] = {}
        # Listing calls and calls into project code, by node, with their rows.
        self._listing_rows: dict[int, int] = {}
        self._call_rows: dict[int, tuple[list[Json], int]] = {}
        self._loops: list[tuple[Scope, cst.For]] = []
        # The function scopes (by id) that yield outside a ``while`` loop: generator
        # functions called for each pass.
        self._yielding: set[int] = set()
        # The scopes of the ``while`` loops around the point of the traversal.
        self._whiles: list[Scope] = []
        self._guarded: list[tuple[int, int, list[list[Json]]]] = []
        self._flags: set[str] = set()
        # The functions (keys) whose code makes the run distributed: a program is distributed
        # only where it runs one of them, not wherever it imports the file.
        self._distributed_in: set[str] = set()
        # The functions (keys) that build an object of ``LAUNCHED_PER_RANK``.
        self._launched_in: set[str] = set()
        # The functions (keys) that call into MPI (``MPI_CALLS``).
        self._mpi_in: set[str] = set()
        self._key = ""
        # Whether an expression (by id; the module's nodes live as long as this) involves
        # the rank.
        self._ranked: dict[int, bool] = {}
        # A module whose text never says rank has no expression that involves it.
        self._may_rank = not text or _says_rank(text)

    def release(self) -> None:
        """Drop the bindings followed (``Flow.release``): the file's pass is over."""
        self._flow.release()

    def _lines(self) -> list[str]:
        if self._split is None:
            self._split = re.split(r"\r\n?|\n", self._text)
        return self._split

    # -- scopes and branches ----------------------------------------------------------------------

    def enter_function(self, node: cst.FunctionDef, method: bool, key: str = "") -> None:
        parent = self._flow.scope
        if parent.kind == "function":
            # A function defined inside another one: callable by its name there.
            parent.locals[node.name.value] = key
        scope = Scope("function", key=key, method=node.name.value if method else None)
        params = node.params
        if method and node.name.value == "__init__":
            named = [p.name.value for p in (*params.params, *params.kwonly_params)]
            scope.accepts = (named, type(params.star_kwarg) is cst.Param)
        self._flow.enter_scope(scope)
        first = ps.first_parameter(node) if method and self._classes else None
        if first is not None:
            self._methods[id(scope)] = (self._classes[-1], first)
        parameter = ps.seed_parameter(node)
        if parameter is not None:
            self._seed_params[id(scope)] = parameter
        defaults: dict[str, Json] = {}
        for name, index, default in parameters(node):
            self._flow.bind(name, None, param=(index, name), default=default)
            if default is not None:
                ok, value = literal(default)
                if ok:
                    defaults[name] = value
        if method and node.name.value == "__init__" and defaults:
            # What a dataset's switches are when its constructor is not given them.
            self._fact(key, ["defaults", defaults])

    def leave_function(self) -> None:
        self._flow.leave_scope()

    def enter_class(self, key: str) -> None:
        self._classes.append(key)
        self._flow.enter_scope(Scope("class", key=key))

    def leave_class(self) -> None:
        self._classes.pop()
        self._flow.leave_scope()

    def branches(self, node: cst.CSTNode) -> None:
        """A compound statement whose blocks may run or not (``if``, loops, ``try``)."""
        self._flow.branches(node)
        if type(node) is cst.If:
            guarded = ps.none_guard(node.test)
            if guarded is not None:
                self._none_guards[id(node.body)] = self._module.code_for_node(guarded)
            if self._method_class() is not None:
                self._guard_chain(node, [])

    def settled(self, node: cst.If) -> None:
        """After an ``if`` chain (its first ``if``): what it proves for the code after it."""
        self._flow.settle(node)

    def left_try(self) -> None:
        self._flow.left_try()

    def augmented(self, target: cst.BaseExpression) -> None:
        """``target += value``: the name (chain) now holds something else."""
        chain = name_chain(target)
        if chain is not None and not self._flow.dead:
            self._flow.written(chain)

    def _guard_chain(self, node: cst.If, before: list[list[Json]]) -> None:
        """``if self.split: ...``: each block of the chain runs only while the conditions
        on the object's attributes hold (the earlier tests failed, its own test holds)."""
        own = _conditions(node.test)
        self._guards[id(node.body)] = [*before, *own]
        failed = [*before, *([_negated(own[0])] if len(own) == 1 else [])]
        orelse = node.orelse
        if type(orelse) is cst.Else:
            self._guards[id(orelse.body)] = failed
        elif type(orelse) is cst.If:
            self._guard_chain(orelse, failed)

    @property
    def dead(self) -> bool:
        """Whether the code being visited can never run (``if False:``, the ``else`` of
        ``if True:``, ``if TYPE_CHECKING:``)."""
        return self._flow.dead

    def enter_block(self, node: cst.CSTNode, row: int | None) -> None:
        self._flow.enter_block(node)
        conditions = self._guards.pop(id(node), None)
        if conditions and row is not None:
            self._guarded.append((id(node), row, conditions))

    def leave_block(self, node: cst.CSTNode, row: int | None) -> None:
        self._flow.leave_block(node)
        if self._guarded and self._guarded[-1][0] == id(node) and row is not None:
            _, start, conditions = self._guarded.pop()
            # Rows after the header line up to the block's last line run only if...
            for condition in conditions:
                self._fact(self._flow.scope.key, ["guard", *condition, start + 1, row - 1])

    def _method_class(self, scope: Scope | None = None) -> str | None:
        """The class whose method ``scope`` is (the summary keys methods ``Class.name``)."""
        scope = scope or self._flow.scope
        if scope.kind != "function" or scope.method is None:
            return None
        return scope.key.rpartition(".")[0] or None

    # -- assignments --------------------------------------------------------------------------

    def assign(
        self,
        targets: Sequence[cst.BaseAssignTargetExpression],
        value: cst.BaseExpression | None,
        key: str,
    ) -> None:
        """After ``targets = value`` in function ``key`` (the value's calls were visited)."""
        self._key = key
        if self._flow.dead:
            return
        scope = self._flow.scope
        if (
            len(targets) == 1
            and type(targets[0]) is cst.Name
            and type(value) is cst.Call
            and ps.callee_name(value.func) == "parse_args"
        ):
            self._namespaces.add(targets[0].value)
        for target in targets:
            if type(target) is cst.Name and scope.kind == "class" and value is not None:
                # ``rng = np.random.default_rng(0)`` in a class body: every instance shares it.
                kind = generator_chain(value, self._names)
                if kind is not None and self._classes:
                    self._fact(self._classes[-1], ["attr", target.value, kind])
            elif type(target) is cst.Name:
                self._bind(target.value, value)
            elif isinstance(target, cst.Tuple | cst.List):
                self._unpack(target, value)
            elif type(target) is cst.Subscript and type(target.value) is cst.Name:
                if value is not None:
                    index = None
                    if len(target.slice) == 1 and type(target.slice[0].slice) is cst.Index:
                        index = target.slice[0].slice.value
                    self._flow.set_item(target.value.value, index, value)
            elif type(target) is cst.Attribute:
                chain = name_chain(target)
                if chain is not None:
                    self._flow.written(chain)
                if value is not None:
                    self._attribute(target, value)
            if value is not None and type(value) is cst.Call:
                pending = self._by_call.get(id(value))
                if pending is not None and pending.record.get("name") is None:
                    with contextlib.suppress(TypeError):
                        pending.record["name"] = dotted_name(target)

    def _unpack(self, target: cst.Tuple | cst.List, value: cst.BaseExpression | None) -> None:
        """``a, b = value``: each name gets its element (a literal's, or ``Item``)."""
        elements = list(target.elements)
        literal_elements = None
        if isinstance(value, cst.Tuple | cst.List) and not any(
            type(e) is cst.StarredElement for e in value.elements
        ):
            literal_elements = [e.value for e in value.elements]
        starred = any(type(e) is cst.StarredElement for e in elements)
        for index, element in enumerate(elements):
            inner = element.value
            if type(inner) is not cst.Name or starred or value is None:
                for name in target_names(inner):
                    self._bind(name, None)
                continue
            if literal_elements is not None:
                bound = literal_elements[index] if index < len(literal_elements) else None
                self._bind(inner.value, bound)
            else:
                self._bind(inner.value, Item(value, index))

    def _bind(self, name: str, value: Bound | None) -> None:
        self._flow.bind(name, value)
        if self._set_transforms:
            self._set_transforms.pop((id(self._flow.scope), name), None)
        if isinstance(value, cst.BaseExpression) and self._flow.scope.kind == "module":
            self._module_value(name, value)

    def bound(self, target: cst.BaseExpression) -> None:
        """Names bound to something not followed (a loop variable)."""
        if not self._flow.dead:
            for name in target_names(target):
                self._flow.bind(name, None)

    def entered(self, target: cst.BaseExpression, source: cst.BaseExpression) -> None:
        """``with source as target``: a name gets what ``source.__enter__()`` returns."""
        if type(target) is cst.Name:
            self._bind(target.value, Entered(source))
        else:
            self.bound(target)

    def _module_value(self, name: str, value: cst.BaseExpression) -> None:
        kind = generator_chain(value, self._names)
        if kind is not None:
            self._objects[name] = kind
        if type(value) is cst.Call and self._names.qualified_name(value.func) == PARTIAL:
            described = self._partial(value)
            if described is not None:
                self._partials[name] = described

    def _attribute(self, target: cst.Attribute, value: cst.BaseExpression) -> None:
        """``self.rng = np.random.default_rng()``: a generator the object owns;
        ``self.train_set = Images(...)``: what the attribute may hold, for a loader that
        reads it in another method; ``train_set.transform = Compose([...])``: a transform
        the dataset bound to a name gets after it was built."""
        if type(target.value) is not cst.Name:
            return
        if target.value.value not in ("self", "cls"):
            if _TRANSFORM.search(target.attr.value):
                where = (id(self._flow.scope), target.value.value)
                written = self._set_transforms.setdefault(where, [])
                written.append((target.attr.value, self._flow.here(value)))
            return
        kind = generator_chain(value, self._names)
        if kind is not None and self._classes:
            self._fact(self._key, ["attr", target.attr.value, kind])
        klass = self._method_class()
        if klass is not None:
            described = self._dataset(self._flow.values(value), 0)
            self._fact(klass, ["set", target.attr.value, described])

    def returned(self, node: cst.Return) -> None:
        """``return value`` in a function: what it returns, if it may be a dataset, and
        whether it passes on a directory listing in its filesystem order."""
        scope = self._flow.scope
        if scope.kind != "function" or node.value is None or self._flow.dead:
            return
        value = node.value
        self._passes_on(scope, value)
        if type(value) is cst.Tuple:
            described: list[Json] = [
                "tuple",
                [self._dataset(self._flow.values(e.value), 0) for e in value.elements],
            ]
        elif scope.method is not None and self._is_self(value):
            # ``return self`` (an ``__enter__`` that opens the dataset's files).
            described = ["self"]
        else:
            described = self._dataset(self._flow.values(value), 0)
        found = self._returns.setdefault(scope.key, [])
        if described not in found:
            found.append(described)

    def _is_self(self, value: cst.BaseExpression) -> bool:
        """Whether ``value`` is the ``self`` parameter of the method being visited."""
        if not (type(value) is cst.Name and value.value == "self"):
            return False
        found = self._flow.values(value)
        return len(found) == 1 and found[0].param == (0, "self")

    def enter_loop(self, node: cst.For) -> None:
        self._loops.append((self._flow.scope, node))

    def leave_loop(self, node: cst.For) -> None:
        if self._loops and self._loops[-1][1] is node:
            self._loops.pop()

    def enter_while(self) -> None:
        self._whiles.append(self._flow.scope)

    def leave_while(self) -> None:
        self._whiles.pop()

    def yielded(self, node: cst.Yield) -> None:
        """``yield`` inside a loop over a listing, ``yield from`` a listing: the function
        hands out entries in filesystem order."""
        scope = self._flow.scope
        if scope.kind != "function":
            return
        if not any(owner is scope for owner in self._whiles):
            # A generator function that yields one pass (not an endless stream, ``while
            # True: yield from loader``) runs its body again for every pass it is called
            # for (per epoch, per update).
            self._yielding.add(id(scope))
        if self._flow.dead:
            return
        if type(node.value) is cst.From:
            self._passes_on(scope, node.value.item)
            return
        for owner, loop in reversed(self._loops):
            if owner is not scope:
                break
            row = self._listing_in(loop.iter, 0)
            if row is not None:
                self._fact(scope.key, ["lists", row])
                return

    def _passes_on(self, scope: Scope, value: cst.BaseExpression) -> None:
        """A function's result is a listing (``["lists", row]``) or another function's
        result (``["relays", ref, row]``): what ``unsorted-file-listing`` judges by."""
        row = self._listing_in(value, 0)
        if row is not None:
            self._fact(scope.key, ["lists", row])
            return
        inner = value
        while type(inner) is cst.Call and id(inner) not in self._call_rows:
            if self._names.qualified_name(inner.func) not in KEEPS_ORDER or not inner.args:
                return
            inner = inner.args[0].value
        if type(inner) is cst.Call:
            ref, call_row = self._call_rows[id(inner)]
            self._fact(scope.key, ["relays", ref, call_row])

    def _listing_in(self, node: cst.BaseExpression, depth: int) -> int | None:
        """The row of the unsorted directory listing an expression passes on, if any."""
        if depth > _MAX_DEPTH:
            return None
        if type(node) is cst.Call:
            row = self._listing_rows.get(id(node))
            if row is not None:
                return row
            if self._names.qualified_name(node.func) in KEEPS_ORDER:
                for arg in node.args:
                    row = self._listing_in(arg.value, depth + 1)
                    if row is not None:
                        return row
            return None
        if isinstance(node, cst.ListComp | cst.GeneratorExp):
            return self._listing_in(node.for_in.iter, depth + 1)
        if type(node) is cst.Name:
            for value in self._flow.values(node):
                if isinstance(value.node, cst.BaseExpression) and value.node is not node:
                    row = self._listing_in(value.node, depth + 1)
                    if row is not None:
                        return row
        return None

    # -- facts ----------------------------------------------------------------------------------

    def _fact(self, key: str, fact: list[Json]) -> None:
        marker = repr(fact)
        seen = self._seen.setdefault(key, set())
        if marker in seen:
            return
        seen.add(marker)
        self._facts.setdefault(key, []).append(fact)

    def _in_method(self) -> bool:
        return any(scope.method is not None for scope in self._flow.scopes)

    def _uses(self, node: cst.Call) -> None:
        """``self.rng.normal(...)``, ``f(x, generator=self.g)``: attributes a method uses;
        ``_rng.normal(...)``: a module-level generator object a function uses."""
        func = node.func
        values: list[cst.BaseExpression] = [arg.value for arg in node.args]
        if type(func) is cst.Attribute:
            values.append(func.value)
        scope = self._flow.scope
        for value in values:
            if (
                type(value) is cst.Attribute
                and type(value.value) is cst.Name
                and value.value.value == "self"
                and self._in_method()
            ):
                self._fact(self._key, ["self", value.attr.value])
            elif (
                type(value) is cst.Name
                and len(self._flow.scopes) > 1
                and self._names.binding(value.value) is None
                and self._names.qualified_name(value) is None
                and self._names.is_bound(value.value)
                and value.value not in scope.history
            ):
                uses = self._object_uses.setdefault(self._key, [])
                if value.value not in uses:
                    uses.append(value.value)

    # -- calls --------------------------------------------------------------------------------

    def call(self, node: cst.Call, qualified: str | None, key: str, where: SiteSource) -> None:
        """A call in function ``key`` (``""`` at module level); ``where`` tells its site."""
        self._key = key
        if self._flow.dead:
            # Code that can never run (``if True: ... else: <here>``) builds nothing.
            return
        func = node.func
        self._flow.escapes(node)
        self._uses(node)
        if qualified in LISTING_CALLS or (
            type(func) is cst.Attribute and func.attr.value in LISTING_METHODS
        ):
            self._listing_rows[id(node)] = where.node_row(node)
        if type(func) is cst.Attribute:
            method = func.attr.value
            if method == "set_epoch":
                self._flags.add("set_epoch")
            if type(func.value) is cst.Name:
                self._flow.change(func.value.value, method, node)
            if (
                method == "__init__"
                and type(func.value) is cst.Call
                and type(func.value.func) is cst.Name
                and func.value.func.value == "super"
            ):
                self._super_init(node)
        self._program_seed(node, qualified)
        if qualified is None:
            self._unresolved(node, where)
            return
        if qualified in rng.SEEDS or qualified in rng.HELPERS:
            self._seeding(node, qualified)
        if qualified.startswith(DISTRIBUTED_PREFIXES):
            self._runs_distributed()
        if qualified in LAUNCHED_PER_RANK:
            self._launched_in.add(self._key)
        if qualified.startswith(MPI_CALLS):
            self._mpi_in.add(self._key)
        if qualified.startswith(OTHER_RNG_LIBRARIES) or qualified == "imgaug":
            self._fact(self._key, ["lib", qualified.split(".", 1)[0]])
        if qualified in rng.LIGHTNING_TRAINERS:
            self._flags.add("trainer")
            self._trainer(node)
        if qualified in rng.PROCESS_CLASSES or qualified in rng.SPAWNERS:
            self._process(node, qualified)
        if qualified in LOADERS:
            self._loader(node, ["lib", qualified], [], {}, where.site(node))
        elif qualified in RANDOM_SAMPLERS:
            self._sampler(node, qualified, where)
        elif qualified in DISTRIBUTED_SAMPLERS:
            self._distributed_sampler(node, where.site(node))
        elif not rng.is_library(qualified, self._own):
            if self._loader_like(node, qualified):
                self._loader(node, ["q", qualified], [], {}, where.site(node))
            self._call_fact(["q", qualified], node.args)
            self._call_rows[id(node)] = (["q", qualified], where.node_row(node))

    @property
    def _own(self) -> str | None:
        module = self._names.module_name
        return module.split(".", 1)[0] if module else None

    def _unresolved(self, node: cst.Call, where: SiteSource) -> None:
        """``make_loader(ds)`` for ``make_loader = partial(DataLoader, ...)`` in scope, or
        ``partial(DataLoader, ...)(ds)``; ``self.build(...)`` in a method."""
        func = node.func
        targets = [v.node for v in self._flow.values(func)] if type(func) is cst.Name else [func]
        for target in targets:
            if type(target) is cst.Call and self._names.qualified_name(target.func) == PARTIAL:
                described = self._partial(target)
                if described is not None:
                    self._loader(
                        node,
                        described["callee"],
                        described["pos"],
                        described["kw"],
                        where.site(node),
                    )
                    return
        klass = self._method_class()
        if (
            klass is not None
            and type(func) is cst.Attribute
            and type(func.value) is cst.Name
            and func.value.value == "self"
        ):
            ref: list[Json] = ["m", klass, func.attr.value, 0]
            self._call_fact(ref, node.args)
            self._call_rows[id(node)] = (ref, where.node_row(node))
        elif type(func) is cst.Name:
            for scope in reversed(self._flow.scopes):
                local = scope.locals.get(func.value)
                if local is not None:
                    self._call_rows[id(node)] = (["l", local], where.node_row(node))
                    break

    def _loader_like(self, node: cst.Call, qualified: str) -> bool:
        if "loader" in qualified.rsplit(".", 1)[-1].lower():
            return True
        return any(a.keyword is not None and a.keyword.value in LOADER_KEYWORDS for a in node.args)

    def _seeding(self, node: cst.Call, qualified: str) -> None:
        family = rng.SEEDS.get(qualified)
        if family in ("torch", None):
            if any(self._mentions_rank(arg.value) for arg in node.args):
                self._flags.add("rank_seed")
            else:
                self._flags.add("same_seed")
        if qualified in rng.LIGHTNING_SEED:
            workers = argument(node, "workers", 1)
            # Fabric's method seeds the workers unless told not to; the function only if told.
            if (
                qualified in rng.FABRIC_SEED
                if workers is None
                else literal_bool(workers.value) is not False
            ):
                # Lightning then gives every loader a worker_init_fn that mixes in the rank.
                self._flags.add("seeds_workers")

    def _program_seed(self, node: cst.Call, qualified: str | None) -> None:
        """Remember the seed a seeding call passes (``torch.manual_seed(args.seed)``,
        ``set_seed(seed)``, ``set_random_seed(seed)``) when it is a plain value that later
        code of the scope may repeat, and every integer the scope passes as a seed."""
        scope = self._flow.scope
        number = ps.literal_seed(node, qualified, self._seed_functions)
        if number is not None:
            self._literal_seeds.setdefault(id(scope), []).append(number)
        value = ps.seeding_argument(node, qualified, self._seed_functions)
        if value is None or not ps.is_plain(value):
            return
        text = self._module.code_for_node(value)
        if "\n" in text or "\r" in text:
            return
        path = self._flow.path()
        optional = False
        if path and self._none_guards.get(path[-1]) == text:
            # ``if args.seed is not None: torch.manual_seed(args.seed)``: after the block
            # the seed is the option's, or None where the program runs unseeded.
            path, optional = path[:-1], True
        names = list(ps.names_in(value))
        alive = [b for name in names for b in self._flow.alive(name) or []]
        seed = ps.Seed(text, ranked=self._mentions_rank(value), optional=optional)
        seq = self._flow.here_read().seq
        self._seeded.setdefault(id(scope), []).append((seed, path, names, alive, seq))
        method = self._methods.get(id(scope))
        if method is not None and set(names) == {method[1]}:
            self._instance_seeds.setdefault(method[0], []).append((seed, method[1]))
        if qualified is not None:
            # A seeding function (not a generator object's ``manual_seed``, which may be
            # one a fix just wrote).
            self._seed_seqs.setdefault(id(scope), []).append(seq)

    def _seed_here(self) -> ps.Seed | None:
        """The first seed the program passed earlier in this scope on every path to here,
        whose names still hold the same values."""
        here = self._flow.path()
        for seed, path, names, alive, _ in self._seeded.get(id(self._flow.scope), ()):
            if here[: len(path)] != path:
                continue
            now = [b for name in names for b in self._flow.alive(name) or []]
            if [id(b) for b in now] != [id(b) for b in alive]:
                continue
            return seed
        return None

    def _mentions_rank(self, node: cst.BaseExpression) -> bool:
        """Whether a value involves the rank, also through the variables it is made of
        (``seed = args.seed + utils.get_rank()``, then ``torch.manual_seed(seed)``)."""
        if not self._may_rank:
            return False
        if self._rank_in(node):
            return True
        return any(
            isinstance(value.node, cst.BaseExpression) and self._rank_in(value.node)
            for name in _names_in(node)
            for value in self._flow.values(name)
        )

    def _rank_in(self, node: cst.BaseExpression) -> bool:
        """``mentions_rank`` once per expression: the values of a variable are read again
        at every call that passes it."""
        known = self._ranked.get(id(node))
        if known is None:
            known = self._ranked[id(node)] = mentions_rank(node, self._names)
        return known

    def _trainer(self, node: cst.Call) -> None:
        """Lightning ``Trainer(strategy="ddp")``: every rank runs the same program."""
        strategy = argument(node, "strategy")
        if strategy is None:
            return
        for value in self._flow.values(strategy.value):
            current = value.node
            text = literal_str(current) if isinstance(current, cst.BaseExpression) else None
            if text is None and type(current) is cst.Call:
                text = self._names.qualified_name(current.func)
            if text is not None and _DISTRIBUTED_STRATEGY.search(text):
                self._runs_distributed()

    def _runs_distributed(self) -> None:
        self._flags.add("distributed")
        self._distributed_in.add(self._key)

    def _process(self, node: cst.Call, qualified: str) -> None:
        """``Process(target=f, args=(...))`` and ``mp.spawn(f, args=(...))`` call ``f``."""
        spawn = qualified in rng.SPAWNERS
        target = argument(node, "fn", 0) if spawn else argument(node, "target", 1)
        passed = argument(node, "args", 1 if spawn else 3)
        if target is None:
            return
        callee = self._names.qualified_name(target.value)
        if callee is None or rng.is_library(callee, self._own):
            return
        args: list[cst.Arg] = [cst.Arg(_BLANK)] if spawn else []
        if passed is not None:
            elements = self._flow.elements(passed.value)
            if elements is None:
                return
            args.extend(
                cst.Arg(e.node if isinstance(e.node, cst.BaseExpression) else _BLANK)
                for e in elements
            )
        self._call_fact(["q", callee], args)

    def _call_fact(self, ref: list[Json], args: Sequence[cst.Arg]) -> None:
        """What a call into project code passes, where that may matter to a loader the
        callee builds: datasets, dicts for ``**kwargs``, literal flags."""
        pos: list[Json] = []
        kw: dict[str, Json] = {}
        telling = ranked = False
        described_args: list[tuple[cst.Arg, dict[str, Json]]] = []
        for arg in args:
            if arg.star == "*":
                break
            if arg.star == "**":
                continue
            described = self._argument(arg)
            described_args.append((arg, described))
            telling = telling or _telling(described)
            if not ranked and self._mentions_rank(arg.value):
                ranked = True
            if arg.keyword is not None:
                kw[arg.keyword.value] = described
            else:
                pos.append(described)
        if telling:
            # (What transforms are made of is no part of whether a call tells anything: it
            # is looked for only in the calls that do, a few of the many into project code.)
            for arg, described in described_args:
                self._add_parts(arg, described)
            self._fact(self._key, ["call", ref, pos, kw])
        if ranked:
            # ``set_seed(args.seed + rank)``: a project helper may seed each rank apart.
            self._fact(self._key, ["rankcall", ref])

    def _argument(self, arg: cst.Arg) -> dict[str, Json]:
        """What a call passes as ``arg`` (``_add_parts`` adds what transforms it holds)."""
        node = arg.value
        values = self._flow.values(node)
        described = self._describe(values, dataset=True)
        if isinstance(node, cst.Name | cst.Dict) or (
            type(node) is cst.Call and type(node.func) is cst.Name
        ):
            mapping = self._flow.mapping_of(node, self._flow.here_read())
            if mapping is not None:
                described["m"] = {k: self._describe(v) for k, v in mapping.items.items()}
                if mapping.opaque:
                    described["mo"] = True
        return described

    def _add_parts(self, arg: cst.Arg, described: dict[str, Json]) -> None:
        """What a transform argument is made of, for a dataset built from a parameter: added
        to ``_argument``'s description of ``arg`` (before its mapping, as it was made)."""
        parts = self._parts([arg], self._flow.here_read(), 0)
        if parts:
            mapping: dict[str, Json] = {
                key: described.pop(key) for key in ("m", "mo") if key in described
            }
            described["t"] = parts
            described.update(mapping)

    def _partial(self, call: cst.Call) -> dict[str, Json] | None:
        """``functools.partial(DataLoader, ...)``: the loader it calls and its arguments."""
        first = argument(call, None, 0)
        if first is None:
            return None
        qualified = self._names.qualified_name(first.value)
        if qualified is None:
            return None
        if qualified in LOADERS:
            callee = ["lib", qualified]
        elif not rng.is_library(qualified, self._own):
            callee = ["q", qualified]
        else:
            return None
        pos, kw, opaque, _ = self._describe_args(call.args[1:])
        return {"callee": callee, "pos": pos, "kw": kw, "opaque": opaque}

    def _super_init(self, node: cst.Call) -> None:
        """``super().__init__(..., worker_init_fn=...)`` in a loader subclass's ``__init__``."""
        scope = self._flow.scope
        if scope.method != "__init__" or not self._classes:
            return
        _, kw, _, _ = self._describe_args(node.args)
        if kw:
            self._fact(self._key, ["super", kw])
        if scope.accepts is not None:
            # The keywords a loader subclass takes: a fix may add only those.
            self._fact(self._key, ["accepts", *scope.accepts])

    # -- records --------------------------------------------------------------------------------

    def _loader(
        self,
        node: cst.Call,
        callee: list[Json],
        pos: list[Json],
        kw: dict[str, Json],
        site: CallSite,
    ) -> None:
        more_pos, more_kw, opaque, forwarded = self._describe_args(node.args, offset=len(pos))
        record: dict[str, Json] = {
            "s": site.statement,
            "row": site.row,
            "callee": callee,
            "pos": [*pos, *more_pos],
            "kw": {**kw, **more_kw},
            "opaque": opaque,
        }
        if forwarded is not None:
            record["kwp"] = forwarded
        pending = self._pending(node, site, record)
        self._loaders.append(pending)
        self._by_call[id(node)] = pending

    def _sampler(self, node: cst.Call, qualified: str, where: SiteSource) -> None:
        if any(arg.star == "**" for arg in node.args):
            return
        if argument(node, "generator", RANDOM_SAMPLERS[qualified]) is not None:
            return
        site = where.site(node)
        record = {"s": site.statement, "row": site.row, "class": qualified.rsplit(".", 1)[-1]}
        self._samplers.append(self._pending(node, site, record))

    def _pending(self, node: cst.Call, site: CallSite, record: dict[str, Json]) -> _Pending:
        """A loader or sampler call to finish at the end, with what its fix's seed needs."""
        # The summary's function (``summary.MAIN`` for the ``__main__`` block) and the
        # branches the call runs in there, for whether the program has seeded torch by then.
        record["fn"] = self._key
        record["ctx"] = site.context
        scope = self._flow.scope
        if any(owner is scope for owner, _ in self._loops) or any(
            owner is scope for owner in self._whiles
        ):
            # Built again on every pass of a loop: a generator seeded with a constant would
            # give every pass the same order.
            record["repeats"] = True
        return _Pending(
            node, site, record, self._rank_variable(), self._seed_here(), self._flow.here_read()
        )

    def _distributed_sampler(self, node: cst.Call, site: CallSite) -> None:
        shuffle = argument(node, "shuffle", DISTRIBUTED_SHUFFLE)
        record: dict[str, Json] = {"s": site.statement, "row": site.row, "name": None}
        if shuffle is not None:
            record["shuffle"] = self._describe(self._flow.values(shuffle.value))
        elif any(arg.star for arg in node.args):
            record["shuffle"] = {}
        pending = _Pending(node, site, record)
        self._distributed.append(pending)
        self._by_call[id(node)] = pending

    def _rank_variable(self) -> str | None:
        """A rank-named parameter or local variable of the function being visited, bound on
        every path to the call being visited: a fix's seed may read it there (one bound only
        in another arm of an ``if`` would be unbound where the fix reads it)."""
        scope = self._flow.scope
        if scope.kind != "function":
            return None
        for name in sorted(scope.history):
            if is_rank_name(name) and name != "process_index" and self._flow.bound(name):
                return name
        return None

    # -- describing arguments -------------------------------------------------------------------

    def _describe_args(
        self, args: Sequence[cst.Arg], offset: int = 0
    ) -> tuple[list[Json], dict[str, Json], bool, list[Json] | None]:
        """Positional and keyword arguments described (``**mapping`` merged when the mapping
        can be followed); True when some argument cannot be known (``*args``, a
        ``**mapping`` from elsewhere); and the parameter a ``**kwargs`` forwards, whose
        callers may tell what it holds."""
        pos: list[Json] = []
        kw: dict[str, Json] = {}
        opaque = False
        forwarded: list[Json] | None = None
        for arg in args:
            if arg.star == "*":
                opaque = True
                break
            if arg.star == "**":
                mapping = self._flow.mapping_of(arg.value, self._flow.here_read())
                if mapping is None:
                    opaque = True
                    values = self._flow.values(arg.value)
                    if len(values) == 1 and values[0].param is not None:
                        binding = values[0].binding
                        assert binding is not None and values[0].param is not None
                        index, name = values[0].param
                        forwarded = [binding.scope.key, index, name]
                    continue
                for key, found in mapping.items.items():
                    kw[key] = self._describe(found, dataset=key == "dataset")
                opaque = opaque or mapping.opaque
                continue
            values = self._flow.values(arg.value)
            if arg.keyword is not None:
                key = arg.keyword.value
                kw[key] = self._describe(values, dataset=key == "dataset")
                if key == "dataset":
                    self._add_set_transforms(kw[key], arg.value)
            else:
                # The dataset is the first positional argument (after a partial's own ones).
                pos.append(self._describe(values, dataset=offset + len(pos) == 0))
                if offset + len(pos) == 1:
                    self._add_set_transforms(pos[-1], arg.value)
        return pos, kw, opaque, forwarded

    def _add_set_transforms(self, described: dict[str, Json], node: cst.BaseExpression) -> None:
        """A dataset passed by name whose transform was set after it was built
        (``train_set.transform = Compose([...])``): what that transform is made of joins
        the parts of the dataset's class."""
        if not self._set_transforms or type(node) is not cst.Name:
            return
        written = self._set_transforms.get((id(self._flow.scope), node.value))
        if not written or "d" not in described:
            return
        parts: list[Json] = []
        for attribute, value in written:
            assert isinstance(value.node, cst.BaseExpression)
            arg = cst.Arg(value=value.node, keyword=cst.Name(attribute))
            for part in self._parts([arg], value, 0):
                if part not in parts:
                    parts.append(part)
        described["d"] = _with_parts(described["d"], parts)

    def _expand(self, values: Sequence[Value]) -> list[Value]:
        """Values as written (a dict's items) followed to what they may evaluate to."""
        found: list[Value] = []
        for value in values:
            if isinstance(value.node, cst.Name | cst.IfExp | cst.BooleanOperation):
                found.extend(self._flow.values(value.node, value))
            else:
                found.append(value)
        return found

    def _describe(self, values: Sequence[Value], dataset: bool = False) -> dict[str, Json]:
        """What the rules need to know about an argument's possible values."""
        values = self._expand(values)
        found: dict[str, Json] = {}
        if dataset:
            found["d"] = self._dataset(values, 0)
        literals = [literal(v.node) for v in values]
        plain = {repr(x) for ok, x in literals if ok and not isinstance(x, str)}
        if values and all(ok and not isinstance(x, str) for ok, x in literals) and len(plain) == 1:
            found["v"] = literals[0][1]
        if len(values) == 1 and values[0].param is not None:
            binding = values[0].binding
            assert binding is not None
            index, name = values[0].param
            found["p"] = [binding.scope.key, index, name]
            if binding.default is not None:
                ok, default = literal(binding.default)
                found["pd"] = [ok and not isinstance(default, str), default if ok else None]
        per_value = [self._sampler_kind(v, 0) for v in values]
        if any(per_value):
            # Alternatives that are no sampler we know: None, or some other object.
            kinds = {
                kind or ("none" if literal(value.node) == (True, None) else "other")
                for kind, value in zip(per_value, values, strict=True)
            }
            ordered = sorted(kinds, key=SAMPLER_ORDER.index)
            found["s"] = ordered[0]
            if len(ordered) > 1:
                found["ss"] = ordered
        generators = [
            v.node
            for v in values
            if isinstance(v.node, cst.BaseExpression)
            and generator_chain(v.node, self._names) == "torch.Generator"
        ]
        if generators:
            ranked = all(self._mentions_rank(g) for g in generators)
            found["g"] = "rank" if ranked else "set"
        return found

    def _sampler_kind(self, value: Value, depth: int) -> str | None:
        node = value.node
        if type(node) is not cst.Call or depth > _MAX_DEPTH:
            return None
        qualified = self._names.qualified_name(node.func)
        if qualified in RANDOM_SAMPLERS:
            has = argument(node, "generator", RANDOM_SAMPLERS[qualified]) is not None or any(
                a.star == "**" for a in node.args
            )
            return "seeded" if has else "random"
        if qualified in DISTRIBUTED_SAMPLERS:
            shuffle = argument(node, "shuffle", DISTRIBUTED_SHUFFLE)
            if shuffle is not None and literal_bool(shuffle.value) is False:
                return "ordered"
            return "distributed"
        if qualified in BATCH_SAMPLERS:
            inner = argument(node, "sampler", 0)
            if inner is not None:
                kinds = {
                    self._sampler_kind(v, depth + 1) for v in self._flow.values(inner.value, value)
                } - {None}
                if kinds:
                    return sorted(kinds, key=SAMPLER_ORDER.index)[0]
        return None

    def _dataset(self, values: Sequence[Value], depth: int) -> list[Json]:
        """The dataset expressions may evaluate to, as far as this file tells:
        ``["plain"]``, ``["class", ref, parts]``, ``["library", name, parts]``,
        ``["subset", inner]``, ``["concat", [inner, ...]]``, ``["any", [alternative, ...]]``,
        ``["enter", inner]`` (``with inner as name``),
        ``["param", function, position, name]``, ``["attr", class, name]``,
        ``["ret", ref, element]`` or ``["unknown"]``."""
        found: list[list[Json]] = []
        for value in values:
            described = self._dataset_of(value, depth)
            if described not in found:
                found.append(described)
        if not found:
            return list(_UNKNOWN)
        return found[0] if len(found) == 1 else ["any", found]

    def _dataset_of(self, value: Value, depth: int) -> list[Json]:
        node = value.node
        if depth > _MAX_DEPTH:
            return list(_UNKNOWN)
        if node is None:
            param = value.param
            binding = value.binding
            if (
                param is not None
                and binding is not None
                and binding.scope.kind == "function"
                and param[1] not in ("self", "cls")
            ):
                return ["param", binding.scope.key, param[0], param[1]]
            return list(_UNKNOWN)
        if isinstance(node, Item):
            return self._element(node.source, node.index, value, depth)
        if isinstance(node, Entered):
            # The project decides: a class whose ``__enter__`` returns ``self``.
            return ["enter", self._dataset(self._flow.values(node.source, value), depth + 1)]
        if type(node) is cst.Subscript:
            index = None
            if len(node.slice) == 1 and type(node.slice[0].slice) is cst.Index:
                index = literal_int(node.slice[0].slice.value)
            if index is None:
                return list(_UNKNOWN)
            return self._element(node.value, index, value, depth)
        if (
            type(node) is cst.Attribute
            and type(node.value) is cst.Name
            and node.value.value == "self"
        ):
            klass = self._method_class(value.scope)
            return ["attr", klass, node.attr.value] if klass else list(_UNKNOWN)
        if type(node) is not cst.Call:
            return list(_UNKNOWN)
        qualified = self._names.qualified_name(node.func)
        if qualified is None:
            ref = self._self_method(node, value) or self._star(node.func)
            if ref is None:
                return list(_UNKNOWN)
            if ref[0] == "star":
                return ["class", ref, self._parts(node.args, value, depth), self._literals(node)]
            return ["ret", ref, None]
        if qualified in PLAIN_DATASETS:
            return ["plain"]
        if qualified in SUBSETS or qualified in SPLITS:
            inner = argument(node, "dataset", 0)
            if inner is None:
                return list(_UNKNOWN)
            return ["subset", self._dataset(self._flow.values(inner.value, value), depth + 1)]
        if qualified in CONCATS:
            inner = argument(node, "datasets", 0)
            elements = self._flow.elements(inner.value, value) if inner is not None else None
            if elements is None:
                return list(_UNKNOWN)
            return [
                "concat",
                [self._dataset(self._flow.values(e.node, e), depth + 1) for e in elements],
            ]
        parts = self._parts(node.args, value, depth)
        if qualified.startswith(LIBRARY_DATASETS):
            return ["library", qualified, parts]
        if rng.is_library(qualified, self._own):
            return list(_UNKNOWN)
        return ["class", ["q", qualified], parts, self._literals(node)]

    def _star(self, func: cst.BaseExpression) -> list[Json] | None:
        """``Images(...)`` where ``Images`` comes from ``from .datasets import *``: the
        modules it may come from."""
        stars = self._names.star_imports
        if not stars or type(func) is not cst.Name or self._names.is_bound(func.value):
            return None
        if self._flow.alive(func.value):
            return None
        own = [m for m in stars if not rng.is_library(m, self._own)]
        return ["star", own, func.value] if own else None

    def _literals(self, call: cst.Call) -> dict[str, Json]:
        """The literal arguments of a constructor call (``mode="val"``, ``False``), which
        may switch off what its instances draw; ``"*"``: positions past a ``*args``."""
        pos: list[Json] = []
        kw: dict[str, Json] = {}
        star = False
        for arg in call.args:
            if arg.star == "**":
                mapping = self._flow.mapping_of(arg.value, self._flow.here_read())
                if mapping is None or mapping.opaque:
                    star = True
                    continue
                for key, items in mapping.items.items():
                    kw[key] = self._literal(self._expand(items))
                continue
            if arg.star:
                star = True
                continue
            described = self._literal(self._flow.values(arg.value))
            if arg.keyword is not None:
                kw[arg.keyword.value] = described
            elif not star:
                pos.append(described)
        result: dict[str, Json] = {}
        if pos:
            result["pos"] = pos
        if kw:
            result["kw"] = kw
        if star:
            result["*"] = True
        return result

    @staticmethod
    def _literal(values: Sequence[Value]) -> list[Json]:
        """``[True, value]`` when every value is the same literal, else ``[False, None]``."""
        literals = [literal(v.node) for v in values]
        known = bool(values) and all(ok for ok, _ in literals)
        if known and len({repr(v) for _, v in literals}) == 1:
            return [True, literals[0][1]]
        return [False, None]

    def _self_method(self, node: cst.Call, value: Value) -> list[Json] | None:
        """``self.build(...)`` in a method: a reference to that method."""
        func = node.func
        klass = self._method_class(value.scope)
        if (
            klass is not None
            and type(func) is cst.Attribute
            and type(func.value) is cst.Name
            and func.value.value == "self"
        ):
            return ["m", klass, func.attr.value, 0]
        return None

    def _element(self, source: cst.BaseExpression, index: int, at: Value, depth: int) -> list[Json]:
        """The ``index``-th element of what ``source`` evaluates to."""
        found: list[Json] = []
        for value in self._flow.values(source, at):
            node = value.node
            described: list[Json] = list(_UNKNOWN)
            if type(node) is cst.Call:
                qualified = self._names.qualified_name(node.func)
                if qualified in SPLITS:
                    inner = argument(node, "dataset", 0)
                    if inner is not None:
                        inner_values = self._flow.values(inner.value, value)
                        described = ["subset", self._dataset(inner_values, depth + 1)]
                elif qualified is not None and not rng.is_library(qualified, self._own):
                    described = ["ret", ["q", qualified], index]
                elif qualified is None:
                    ref = self._self_method(node, value)
                    if ref is not None:
                        described = ["ret", ref, index]
            elif isinstance(node, cst.ListComp | cst.GeneratorExp):
                described = self._dataset(self._flow.values(node.elt, value), depth + 1)
            elif isinstance(node, cst.List | cst.Tuple) and 0 <= index < len(node.elements):
                element = node.elements[index].value
                described = self._dataset(self._flow.values(element, value), depth + 1)
            if described not in found:
                found.append(described)
        if not found:
            return list(_UNKNOWN)
        return found[0] if len(found) == 1 else ["any", found]

    def _parts(self, args: Sequence[cst.Arg], at: Value, depth: int) -> list[Json]:
        """What a dataset is built with that may draw random numbers in workers: the classes
        and functions called in its constructor's arguments (transforms, augmenters), and
        ``["unknown"]`` for a transform-like argument whose value cannot be followed."""
        found: list[Json] = []
        todo: list[tuple[str, Value]] = []
        for arg in args:
            label = arg.keyword.value if arg.keyword is not None else ""
            todo.append((label, Value(arg.value, at.scope, at.seq, at.path)))
        steps = 0
        while todo and steps < 64:
            steps += 1
            label, current = todo.pop()
            node = current.node
            if type(node) is cst.Name and node.value not in ("True", "False", "None"):
                label = f"{label} {node.value}"
                for value in self._flow.values(node, current):
                    if value.node is None or type(value.node) is cst.Name:
                        if not _TRANSFORM.search(label) or _flag(value):
                            continue
                        # ``Dataset(root, transform=transform)`` with a parameter: its
                        # callers tell what it is.
                        part = self._dataset_of(value, depth + 1)
                        if part[0] != "param":
                            part = list(_UNKNOWN)
                        if part not in found:
                            found.append(part)
                        continue
                    todo.append((label, value))
                continue
            if type(node) is cst.Call:
                qualified = self._names.qualified_name(node.func)
                if qualified is not None and qualified != PARTIAL:
                    part = ["x" if rng.is_library(qualified, self._own) else "q", qualified]
                    if part not in found:
                        found.append(part)
                todo.extend(
                    ("", Value(arg.value, current.scope, current.seq, current.path))
                    for arg in node.args
                )
            elif isinstance(node, cst.List | cst.Tuple | cst.Set):
                todo.extend(
                    ("", Value(e.value, current.scope, current.seq, current.path))
                    for e in node.elements
                )
        return found

    # -- the result -----------------------------------------------------------------------------

    def summary(self, option: tuple[str, bool] | None = None) -> dict[str, Json] | None:
        """The ``data`` part of the summary (None when the file builds and owns nothing).
        ``option``: the file's seed option (``seed`` of ``--seed``) and whether it defaults
        to None, for fixes that seed with it."""
        self._option = option
        for key, names in self._object_uses.items():
            for name in sorted(names):
                kind = self._objects.get(name)
                if kind is not None:
                    self._fact(key, ["object", name, kind])
        for key, returned in self._returns.items():
            # A function that returns no dataset tells nothing: leave it out.
            if any(described != _UNKNOWN for described in returned):
                for described in returned:
                    self._fact(key, ["ret", described])
        if self._names.is_bound(HELPER):
            self._flags.add("helper")
        if not (
            self._loaders
            or self._samplers
            or self._distributed
            or self._facts
            or self._partials
            or self._launched_in
            or self._mpi_in
        ) and not (self._flags - {"helper"}):
            return None
        positions = self._positions
        data: dict[str, Json] = {"flags": sorted(self._flags)}
        if self._distributed_in:
            data["distributed_in"] = sorted(self._distributed_in)
        if self._launched_in:
            data["launched_in"] = sorted(self._launched_in)
        if self._mpi_in:
            data["mpi_in"] = sorted(self._mpi_in)
        if self._loaders:
            data["loaders"] = [self._finish(p, positions, loader=True) for p in self._loaders]
        if self._samplers:
            data["samplers"] = [self._finish(p, positions, loader=False) for p in self._samplers]
        if self._distributed:
            data["distributed"] = [
                p.record | {"at": self._span(p, positions)} | self._evaluation(p)
                for p in self._distributed
            ]
        if self._facts:
            data["facts"] = self._facts
        if self._partials:
            data["partials"] = self._partials
        return data

    def _evaluation(self, pending: _Pending) -> dict[str, Json]:
        """``{"eval": True}`` for a distributed sampler that feeds evaluation only."""
        if evaluation_only(self._module, pending.node, self._names, _LOADER_NAMES):
            return {"eval": True}
        return {}

    def _span(self, pending: _Pending, positions: Positions) -> list[int]:
        if pending.site.inner is not None:
            positions.within(pending.node, pending.site.inner)
        positions.hint(pending.node, pending.site.top)
        found = positions.syntactic(pending.node)
        return [found.start.line, found.start.column + 1, found.end.line, found.end.column + 1]

    def _finish(self, pending: _Pending, positions: Positions, *, loader: bool) -> dict[str, Json]:
        """A record with its position and the calls its fixes would write."""
        record = dict(pending.record)
        record["at"] = self._span(pending, positions)
        if pending.at is not None and id(pending.at.scope) in self._yielding:
            record["repeats"] = True
        site = pending.site
        record["helper_row"] = site.helper_row
        generator, binding = self._names.expression_for(rng.TORCH_GENERATOR)
        seed = self._program_seed_at(pending)
        rank = pending.rank if "distributed" in self._flags else None
        if seed is None:
            # No seed of the program reaches here: the configured one, unless the program
            # seeds torch on every path before the call (the project phase knows), where
            # ``torch.initial_seed()`` is that seed by value (per rank where it is set so).
            seed = ps.Seed(str(self._seed))
            initial, known = self._names.expression_for("torch.initial_seed")
            record["fallback"] = True
            record["initial"] = self._fit(
                pending, positions, f"{generator}().manual_seed({initial}())"
            )
            record["initial_import"] = known is None
            at = pending.at
            if at is not None and any(
                seq > at.seq for seq in self._seed_seqs.get(id(at.scope), ())
            ):
                # The scope seeds later with a value of its own (``for seed in seeds:
                # set_random_seed(seed)``): the order is meant to follow that seed.
                record["seeded_later"] = True
        record["ranked"] = seed.ranked or rank is not None
        record["generator"] = self._fit(
            pending, positions, seed.call(f"{generator}().manual_seed(", rank)
        )
        record["import"] = binding is None
        if loader:
            record["init"] = self._fit(pending, positions, HELPER, "worker_init_fn")
        return record

    def _program_seed_at(self, pending: _Pending) -> ps.Seed | None:
        """The program's own seed at a loader or sampler (``program_seed``'s order): passed
        earlier in the scope, the parsed option through its namespace, the function's seed
        parameter, a seed passed later whose names already hold it, the one integer the
        scope (or else the module) passes as a seed."""
        if pending.seed is not None:
            return pending.seed
        at = pending.at
        if at is None:
            return None
        if self._option is not None:
            dest, optional = self._option
            for name in sorted(self._namespaces):
                if self._flow.alive(name, at):
                    return ps.Seed(f"{name}.{dest}", optional=optional)
        parameter = self._seed_params.get(id(at.scope))
        if parameter is not None:
            bound = self._flow.alive(parameter.text, at) or []
            if len(bound) == 1 and bound[0].param is not None:
                return parameter
        for seed, _, names, alive, seq in self._seeded.get(id(at.scope), ()):
            # A seed the scope passes later, made of names that already hold that value
            # here (``seed = int(config["seed"])``, the loader, then ``set_seed(seed)``).
            if seq < at.seq or not names:
                continue
            now = [b for name in names for b in self._flow.alive(name, at) or []]
            if [id(b) for b in now] == [id(b) for b in alive]:
                return seed
        if id(at.scope) in self._literal_seeds:
            return ps.only(self._literal_seeds[id(at.scope)])
        method = self._methods.get(id(at.scope))
        if method is not None:
            # The seed another method of the class passes from the instance (``Trainer``'s
            # ``set_seed(self.args.seed)``), when that is the one it passes; the same first
            # parameter reads it here.
            seeds = self._instance_seeds.get(method[0], [])
            if (
                len({seed.text for seed, _ in seeds}) == 1
                and {first for _, first in seeds} == {method[1]}
                and self._flow.alive(method[1], at)
            ):
                return seeds[0][0]
        return ps.only(self._literal_seeds.get(id(self._flow.module), ()))

    def _fit(
        self, pending: _Pending, positions: Positions, value: str, keyword: str = "generator"
    ) -> str:
        """The call with ``keyword=value`` added, laid out as the call is, within the file's
        line length."""
        call, indent = pending.node, pending.site.indent
        found = positions.syntactic(call)
        room = layout.room_at(
            self._lines(),
            (found.start.line, found.start.column),
            (found.end.line, found.end.column),
            indent,
            layout.line_length(self._path),
            formatted=layout.formatted(self._path),
        )
        return layout.fit_call(self._module, call, [layout.keyword_arg(keyword, value)], room)
