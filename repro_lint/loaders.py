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
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import libcst as cst

from repro_lint import randomness as rng
from repro_lint.arguments import (
    argument,
    dict_literal_items,
    literal_bool,
    literal_str,
    with_keyword,
)
from repro_lint.names import Names, dotted_name
from repro_lint.positions import Positions

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
}
# Loaders that install a worker_init_fn of their own when the caller passes none (MONAI's
# reseeds its randomizable transforms in every worker).
SEEDS_WORKERS = frozenset({"monai.data.DataLoader", "monai.data.dataloader.DataLoader"})

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
PARTIAL = "functools.partial"
HELPER = "seed_worker"
_RANK = re.compile(r"(?:^|_)rank(?:$|_)|^process_index$", re.I)
_MAX_DEPTH = 8
_TRANSFORM = re.compile(r"transform|augment|aug\b", re.I)


def is_rank_name(name: str) -> bool:
    """``rank``, ``local_rank``, ``global_rank``, ``rank_id``, accelerate's ``process_index``."""
    return _RANK.search(name) is not None


def mentions_rank(node: cst.CSTNode, names: Names) -> bool:
    """Whether an expression involves the process rank: a rank-named variable or attribute,
    ``torch.distributed.get_rank()``, or the ``RANK``/``LOCAL_RANK`` environment variables."""
    for found in _walk(node):
        if isinstance(found, cst.Name) and is_rank_name(found.value):
            return True
        if isinstance(found, cst.Attribute) and is_rank_name(found.attr.value):
            return True
        if isinstance(found, cst.Call) and (names.qualified_name(found.func) or "").endswith(
            "distributed.get_rank"
        ):
            return True
        if isinstance(found, cst.SimpleString) and literal_str(found) in ("RANK", "LOCAL_RANK"):
            return True
    return False


def _walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(current.children)


class _Absolute(cst.CSTTransformer):
    """Writes the block indentation into line breaks inside an expression, so that the
    expression's code is right wherever it is generated on its own."""

    def __init__(self, indent: str) -> None:
        super().__init__()
        self.indent = indent

    def leave_ParenthesizedWhitespace(
        self, original_node: cst.ParenthesizedWhitespace, updated_node: cst.ParenthesizedWhitespace
    ) -> cst.ParenthesizedWhitespace:
        if not updated_node.indent:
            return updated_node
        last = cst.SimpleWhitespace(self.indent + updated_node.last_line.value)
        return updated_node.with_changes(indent=False, last_line=last)

    def leave_EmptyLine(
        self, original_node: cst.EmptyLine, updated_node: cst.EmptyLine
    ) -> cst.EmptyLine:
        if not updated_node.indent:
            return updated_node
        whitespace = cst.SimpleWhitespace(self.indent + updated_node.whitespace.value)
        return updated_node.with_changes(indent=False, whitespace=whitespace)


def expression_code(module: cst.Module, node: cst.BaseExpression, indent: str) -> str:
    """The code of ``node`` for a statement indented by ``indent``: ``code_for_node`` alone
    leaves the block's indentation out of the expression's continuation lines."""
    absolute = node.visit(_Absolute(indent))
    assert isinstance(absolute, cst.BaseExpression)
    return module.code_for_node(absolute)


def block_indent(statements: Sequence[cst.CSTNode], module: cst.Module) -> str:
    """The indentation of the innermost of ``statements`` (outermost first): the indents of
    the blocks of the compound statements around it."""
    parts = []
    for outer in statements[:-1]:
        body = getattr(outer, "body", None)
        if isinstance(body, cst.IndentedBlock):
            parts.append(module.default_indent if body.indent is None else body.indent)
    return "".join(parts)


def generator_chain(node: cst.BaseExpression, names: Names) -> str | None:
    """The generator constructor behind ``torch.Generator()``,
    ``torch.Generator().manual_seed(0)`` or ``np.random.Generator(np.random.PCG64(1))``."""
    while isinstance(node, cst.Call):
        qualified = names.qualified_name(node.func)
        if qualified in GENERATOR_KINDS:
            return qualified
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("manual_seed", "seed"):
            node = func.value
            continue
        return None
    return None


# -- per-file collection ------------------------------------------------------------------------


@dataclass(frozen=True)
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


class SiteSource(Protocol):
    """Tells where the call being visited is (the summary collector knows its statements)."""

    def site(self, node: cst.CSTNode) -> CallSite: ...


@dataclass(frozen=True)
class _Item:
    """The ``index``-th element of what ``call`` returns (``a, b = random_split(...)``)."""

    call: cst.Call
    index: int


@dataclass
class _Mapping:
    """A dict built in this scope for ``**kwargs``: its literal items and later updates."""

    items: dict[str, cst.BaseExpression]
    opaque: bool = False


@dataclass
class _Scope:
    kind: str  # "module", "function" or "class"
    values: dict[str, cst.BaseExpression | _Item] = field(default_factory=dict)
    mappings: dict[str, _Mapping] = field(default_factory=dict)
    # Parameters and other names bound here without a value we follow.
    bound: set[str] = field(default_factory=set)
    method: str | None = None  # the function's name, when it is a method
    # An ``__init__``'s named parameters and whether it takes ``**kwargs``.
    accepts: tuple[list[str], bool] | None = None


@dataclass
class _Pending:
    """A call recorded during the traversal; positions and fix texts come at the end."""

    node: cst.Call
    site: CallSite
    record: dict[str, Json]
    rank: str | None = None


class LoaderFacts:
    """The data-loading part of one file's summary (fed by ``project.SummaryCollector``)."""

    def __init__(self, context: FileContext) -> None:
        self._names = context.names
        self._module = context.module
        self._positions = context.positions
        self._seed = context.config.seed
        self._scopes: list[_Scope] = [_Scope("module")]
        self._classes: list[str] = []
        self._loaders: list[_Pending] = []
        self._samplers: list[_Pending] = []
        self._distributed: list[_Pending] = []
        self._by_call: dict[int, _Pending] = {}
        self._partials: dict[str, dict[str, Json]] = {}
        self._facts: dict[str, list[list[Json]]] = {}
        self._seen: dict[str, set[tuple[str, str]]] = {}
        self._objects: dict[str, str] = {}
        self._object_uses: dict[str, set[str]] = {}
        self._flags: set[str] = set()
        self._key = ""

    # -- scopes -------------------------------------------------------------------------------

    def enter_function(self, node: cst.FunctionDef, method: bool) -> None:
        scope = _Scope("function", method=node.name.value if method else None)
        params = node.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            scope.bound.add(param.name.value)
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                scope.bound.add(star.name.value)
        if method and node.name.value == "__init__":
            named = [p.name.value for p in (*params.params, *params.kwonly_params)]
            scope.accepts = (named, isinstance(params.star_kwarg, cst.Param))
        self._scopes.append(scope)

    def leave_function(self) -> None:
        self._scopes.pop()

    def enter_class(self, key: str) -> None:
        self._classes.append(key)
        self._scopes.append(_Scope("class"))

    def leave_class(self) -> None:
        self._classes.pop()
        self._scopes.pop()

    def _lookup(self, name: str) -> cst.BaseExpression | _Item | None:
        scope = self._scopes[-1]
        if name in scope.values:
            return scope.values[name]
        if name in scope.bound or scope.kind == "class":
            return None
        return self._scopes[0].values.get(name)

    def _mapping(self, name: str) -> _Mapping | None:
        scope = self._scopes[-1]
        if name in scope.mappings:
            return scope.mappings[name]
        if name in scope.values or name in scope.bound:
            return None
        return self._scopes[0].mappings.get(name)

    def _resolve(self, node: cst.BaseExpression) -> cst.BaseExpression | _Item:
        """Follow a name to the value last assigned to it in this scope (or at module level)."""
        current: cst.BaseExpression | _Item = node
        for _ in range(_MAX_DEPTH):
            if not isinstance(current, cst.Name):
                break
            found = self._lookup(current.value)
            if found is None or found is current:
                break
            current = found
        return current

    # -- assignments --------------------------------------------------------------------------

    def assign(
        self,
        targets: Sequence[cst.BaseAssignTargetExpression],
        value: cst.BaseExpression | None,
        key: str,
    ) -> None:
        """After ``targets = value`` in function ``key`` (the value's calls were visited)."""
        self._key = key
        scope = self._scopes[-1]
        for target in targets:
            if isinstance(target, cst.Name) and scope.kind == "class" and value is not None:
                # ``rng = np.random.default_rng(0)`` in a class body: every instance shares it.
                kind = generator_chain(value, self._names)
                if kind is not None and self._classes:
                    self._fact(self._classes[-1], ["attr", target.value, kind])
            elif isinstance(target, cst.Name):
                self._bind(scope, target.value, value)
            elif isinstance(target, cst.Tuple | cst.List) and isinstance(value, cst.Call):
                for index, element in enumerate(target.elements):
                    if isinstance(element.value, cst.Name):
                        self._bind(scope, element.value.value, _Item(value, index))
            elif isinstance(target, cst.Tuple | cst.List):
                for element in target.elements:
                    if isinstance(element.value, cst.Name):
                        self._bind(scope, element.value.value, None)
            elif isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name):
                self._set_item(target, value)
            elif isinstance(target, cst.Attribute) and value is not None:
                self._attribute(target, value)
            if value is not None and isinstance(value, cst.Call):
                pending = self._by_call.get(id(value))
                if pending is not None and pending.record.get("name") is None:
                    with contextlib.suppress(TypeError):
                        pending.record["name"] = dotted_name(target)

    def _bind(self, scope: _Scope, name: str, value: cst.BaseExpression | _Item | None) -> None:
        scope.mappings.pop(name, None)
        if value is None:
            scope.values.pop(name, None)
            scope.bound.add(name)
            return
        scope.values[name] = value
        if isinstance(value, cst.BaseExpression):
            items = dict_literal_items(value)
            if items is not None:
                scope.mappings[name] = _Mapping(dict(items))
            if scope.kind == "module":
                self._module_value(name, value)

    def _module_value(self, name: str, value: cst.BaseExpression) -> None:
        kind = generator_chain(value, self._names)
        if kind is not None:
            self._objects[name] = kind
        if isinstance(value, cst.Call) and self._names.qualified_name(value.func) == PARTIAL:
            described = self._partial(value)
            if described is not None:
                self._partials[name] = described

    def _set_item(self, target: cst.Subscript, value: cst.BaseExpression | None) -> None:
        """``kwargs["num_workers"] = 4`` on a dict built for ``**kwargs``."""
        assert isinstance(target.value, cst.Name)
        mapping = self._mapping(target.value.value)
        if mapping is None:
            return
        key = None
        if len(target.slice) == 1 and isinstance(target.slice[0].slice, cst.Index):
            key = literal_str(target.slice[0].slice.value)
        if key is None or value is None:
            mapping.opaque = True
        else:
            mapping.items[key] = value

    def _attribute(self, target: cst.Attribute, value: cst.BaseExpression) -> None:
        """``self.rng = np.random.default_rng()``: a generator the object owns."""
        if not (isinstance(target.value, cst.Name) and target.value.value in ("self", "cls")):
            return
        kind = generator_chain(value, self._names)
        if kind is not None and self._classes:
            self._fact(self._key, ["attr", target.attr.value, kind])

    # -- facts ----------------------------------------------------------------------------------

    def _fact(self, key: str, fact: list[Json]) -> None:
        marker = (str(fact[0]), repr(fact[1]))
        seen = self._seen.setdefault(key, set())
        if marker in seen:
            return
        seen.add(marker)
        self._facts.setdefault(key, []).append(fact)

    def _in_method(self) -> bool:
        return any(scope.method is not None for scope in self._scopes)

    def _uses(self, node: cst.Call) -> None:
        """``self.rng.normal(...)``, ``f(x, generator=self.g)``: attributes a method uses;
        ``_rng.normal(...)``: a module-level generator object a function uses."""
        func = node.func
        values: list[cst.BaseExpression] = [arg.value for arg in node.args]
        if isinstance(func, cst.Attribute):
            values.append(func.value)
        for value in values:
            if (
                isinstance(value, cst.Attribute)
                and isinstance(value.value, cst.Name)
                and value.value.value == "self"
                and self._in_method()
            ):
                self._fact(self._key, ["self", value.attr.value])
            elif (
                isinstance(value, cst.Name)
                and len(self._scopes) > 1
                and self._names.binding(value.value) is None
                and self._names.qualified_name(value) is None
                and self._names.is_bound(value.value)
                and value.value not in self._scopes[-1].values
                and value.value not in self._scopes[-1].bound
            ):
                self._object_uses.setdefault(self._key, set()).add(value.value)

    # -- calls --------------------------------------------------------------------------------

    def call(self, node: cst.Call, qualified: str | None, key: str, where: SiteSource) -> None:
        """A call in function ``key`` (``""`` at module level); ``where`` tells its site."""
        self._key = key
        func = node.func
        self._uses(node)
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method == "set_epoch":
                self._flags.add("set_epoch")
            if isinstance(func.value, cst.Name):
                self._dict_method(func.value.value, method, node)
            if (
                method == "__init__"
                and isinstance(func.value, cst.Call)
                and isinstance(func.value.func, cst.Name)
                and func.value.func.value == "super"
            ):
                self._super_init(node)
        if qualified is None:
            self._unresolved(node, where)
            return
        if qualified in rng.SEEDS or qualified in rng.HELPERS:
            self._seeding(node, qualified)
        if qualified.startswith(DISTRIBUTED_PREFIXES):
            self._flags.add("distributed")
        if qualified.startswith(OTHER_RNG_LIBRARIES) or qualified == "imgaug":
            self._fact(self._key, ["lib", qualified.split(".", 1)[0]])
        if qualified in rng.LIGHTNING_TRAINERS:
            self._flags.add("trainer")
        if qualified in LOADERS:
            self._loader(node, ["lib", qualified], [], {}, where.site(node))
        elif qualified in RANDOM_SAMPLERS:
            self._sampler(node, qualified, where)
        elif qualified in DISTRIBUTED_SAMPLERS:
            self._distributed_sampler(node, where.site(node))
        elif not rng.is_library(qualified, self._own) and self._loader_like(node, qualified):
            self._loader(node, ["q", qualified], [], {}, where.site(node))

    @property
    def _own(self) -> str | None:
        module = self._names.module_name
        return module.split(".", 1)[0] if module else None

    def _unresolved(self, node: cst.Call, where: SiteSource) -> None:
        """``make_loader(ds)`` for ``make_loader = partial(DataLoader, ...)`` in scope, or
        ``partial(DataLoader, ...)(ds)``."""
        func = node.func
        target = self._resolve(func) if isinstance(func, cst.Name) else func
        if isinstance(target, cst.Call) and self._names.qualified_name(target.func) == PARTIAL:
            described = self._partial(target)
            if described is not None:
                self._loader(
                    node, described["callee"], described["pos"], described["kw"], where.site(node)
                )

    def _loader_like(self, node: cst.Call, qualified: str) -> bool:
        if "loader" in qualified.rsplit(".", 1)[-1].lower():
            return True
        return any(a.keyword is not None and a.keyword.value in LOADER_KEYWORDS for a in node.args)

    def _seeding(self, node: cst.Call, qualified: str) -> None:
        family = rng.SEEDS.get(qualified)
        if family in ("torch", None) and any(mentions_rank(arg, self._names) for arg in node.args):
            self._flags.add("rank_seed")
        if qualified in rng.LIGHTNING_SEED:
            workers = argument(node, "workers", 1)
            if workers is not None and literal_bool(workers.value) is not False:
                # Lightning then gives every loader a worker_init_fn that mixes in the rank.
                self._flags.add("seeds_workers")

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
        pos, kw, opaque = self._describe_args(call.args[1:])
        return {"callee": callee, "pos": pos, "kw": kw, "opaque": opaque}

    def _dict_method(self, name: str, method: str, node: cst.Call) -> None:
        """``kwargs.update(num_workers=4)`` and other changes to a dict built for ``**``."""
        mapping = self._mapping(name)
        if mapping is None or method in ("get", "copy", "items", "keys", "values"):
            return
        if method == "update" and not any(arg.star for arg in node.args):
            for arg in node.args:
                if arg.keyword is not None:
                    mapping.items[arg.keyword.value] = arg.value
                    continue
                items = dict_literal_items(arg.value)
                if items is None:
                    mapping.opaque = True
                else:
                    mapping.items.update(items)
        elif method == "setdefault":
            key = argument(node, None, 0)
            value = argument(node, None, 1)
            name_text = literal_str(key.value) if key is not None else None
            if name_text is None or value is None:
                mapping.opaque = True
            else:
                mapping.items.setdefault(name_text, value.value)
        else:
            mapping.opaque = True

    def _super_init(self, node: cst.Call) -> None:
        """``super().__init__(..., worker_init_fn=...)`` in a loader subclass's ``__init__``."""
        scope = self._scopes[-1]
        if scope.method != "__init__" or not self._classes:
            return
        _, kw, _ = self._describe_args(node.args)
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
        more_pos, more_kw, opaque = self._describe_args(node.args, offset=len(pos))
        record: dict[str, Json] = {
            "s": site.statement,
            "row": site.row,
            "callee": callee,
            "pos": [*pos, *more_pos],
            "kw": {**kw, **more_kw},
            "opaque": opaque,
        }
        pending = _Pending(node, site, record, self._rank_variable())
        self._loaders.append(pending)
        self._by_call[id(node)] = pending

    def _sampler(self, node: cst.Call, qualified: str, where: SiteSource) -> None:
        if any(arg.star == "**" for arg in node.args):
            return
        if argument(node, "generator", RANDOM_SAMPLERS[qualified]) is not None:
            return
        site = where.site(node)
        record = {"s": site.statement, "row": site.row, "class": qualified.rsplit(".", 1)[-1]}
        self._samplers.append(_Pending(node, site, record, self._rank_variable()))

    def _distributed_sampler(self, node: cst.Call, site: CallSite) -> None:
        shuffle = argument(node, "shuffle", DISTRIBUTED_SHUFFLE)
        record: dict[str, Json] = {"s": site.statement, "row": site.row, "name": None}
        if shuffle is not None:
            record["shuffle"] = self._describe(shuffle.value)
        elif any(arg.star for arg in node.args):
            record["shuffle"] = {}
        pending = _Pending(node, site, record)
        self._distributed.append(pending)
        self._by_call[id(node)] = pending

    def _rank_variable(self) -> str | None:
        """A rank-named parameter or local variable of the function being visited."""
        scope = self._scopes[-1]
        if scope.kind != "function":
            return None
        for name in sorted({*scope.bound, *scope.values}):
            if is_rank_name(name) and name != "process_index":
                return name
        return None

    # -- describing arguments -------------------------------------------------------------------

    def _describe_args(
        self, args: Sequence[cst.Arg], offset: int = 0
    ) -> tuple[list[Json], dict[str, Json], bool]:
        """Positional and keyword arguments described (``**mapping`` merged when the mapping
        was built in this scope); True when some argument cannot be known (``*args``, a
        ``**mapping`` from elsewhere)."""
        pos: list[Json] = []
        kw: dict[str, Json] = {}
        opaque = False
        for arg in args:
            if arg.star == "*":
                opaque = True
                break
            if arg.star == "**":
                items = self._mapping_items(arg.value)
                if items is None:
                    opaque = True
                    continue
                for key, value in items.items():
                    kw[key] = self._describe(value, dataset=key == "dataset")
                continue
            if arg.keyword is not None:
                key = arg.keyword.value
                kw[key] = self._describe(arg.value, dataset=key == "dataset")
            else:
                # The dataset is the first positional argument (after a partial's own ones).
                pos.append(self._describe(arg.value, dataset=offset + len(pos) == 0))
        return pos, kw, opaque

    def _mapping_items(self, node: cst.BaseExpression) -> dict[str, cst.BaseExpression] | None:
        literal = dict_literal_items(node)
        if literal is not None:
            return literal
        if isinstance(node, cst.Name):
            mapping = self._mapping(node.value)
            if mapping is not None and not mapping.opaque:
                return mapping.items
        return None

    def _describe(self, node: cst.BaseExpression, dataset: bool = False) -> dict[str, Json]:
        """What the rules need to know about an argument's value."""
        value = self._resolve(node)
        found: dict[str, Json] = {}
        if dataset:
            found["d"] = self._dataset(node, 0)
        if isinstance(value, _Item):
            return found
        if isinstance(value, cst.Name) and value.value in ("True", "False", "None"):
            found["v"] = None if value.value == "None" else value.value == "True"
        elif isinstance(value, cst.Integer):
            found["v"] = int(value.evaluated_value)
        sampler = self._sampler_kind(value, 0)
        if sampler is not None:
            found["s"] = sampler
        if generator_chain(value, self._names) == "torch.Generator":
            found["g"] = "rank" if mentions_rank(value, self._names) else "set"
        return found

    def _sampler_kind(self, node: cst.BaseExpression | _Item, depth: int) -> str | None:
        if not isinstance(node, cst.Call) or depth > _MAX_DEPTH:
            return None
        qualified = self._names.qualified_name(node.func)
        if qualified in RANDOM_SAMPLERS:
            has = argument(node, "generator", RANDOM_SAMPLERS[qualified]) is not None or any(
                a.star == "**" for a in node.args
            )
            return "seeded" if has else "random"
        if qualified in DISTRIBUTED_SAMPLERS:
            return "distributed"
        if qualified in BATCH_SAMPLERS:
            inner = argument(node, "sampler", 0)
            if inner is not None:
                return self._sampler_kind(self._resolve(inner.value), depth + 1)
        return None

    def _dataset(self, node: cst.BaseExpression | _Item, depth: int) -> list[Json]:
        """The dataset an expression evaluates to, as far as this file tells:
        ``["plain"]``, ``["class", ref, parts]``, ``["library", name, parts]``,
        ``["subset", inner]``, ``["concat", [inner, ...]]`` or ``["unknown"]``."""
        if depth > _MAX_DEPTH:
            return ["unknown"]
        if isinstance(node, cst.BaseExpression):
            node = self._resolve(node)
        if isinstance(node, _Item):
            qualified = self._names.qualified_name(node.call.func)
            if qualified in SPLITS:
                inner = argument(node.call, "dataset", 0)
                if inner is not None:
                    return ["subset", self._dataset(inner.value, depth + 1)]
            return ["unknown"]
        if isinstance(node, cst.Subscript) and isinstance(
            target := self._resolve(node.value), cst.Call
        ):
            # ``random_split(ds, [8, 2])[0]``
            if self._names.qualified_name(target.func) in SPLITS:
                inner = argument(target, "dataset", 0)
                if inner is not None:
                    return ["subset", self._dataset(inner.value, depth + 1)]
            return ["unknown"]
        if not isinstance(node, cst.Call):
            return ["unknown"]
        qualified = self._names.qualified_name(node.func)
        if qualified is None:
            return ["unknown"]
        if qualified in PLAIN_DATASETS:
            return ["plain"]
        if qualified in SUBSETS:
            inner = argument(node, "dataset", 0)
            return ["subset", self._dataset(inner.value, depth + 1)] if inner else ["unknown"]
        if qualified in CONCATS:
            inner = argument(node, "datasets", 0)
            if inner is None or not isinstance(
                listed := self._resolve(inner.value), cst.List | cst.Tuple
            ):
                return ["unknown"]
            return ["concat", [self._dataset(e.value, depth + 1) for e in listed.elements]]
        parts = self._parts(node.args, depth)
        if qualified.startswith(LIBRARY_DATASETS):
            return ["library", qualified, parts]
        if rng.is_library(qualified, self._own):
            return ["unknown"]
        return ["class", ["q", qualified], parts]

    def _parts(self, args: Sequence[cst.Arg], depth: int) -> list[Json]:
        """What a dataset is built with that may draw random numbers in workers: the classes
        and functions called in its constructor's arguments (transforms, augmenters), and
        ``["unknown"]`` for a transform-like argument whose value cannot be followed."""
        found: list[Json] = []
        todo: list[tuple[str, cst.BaseExpression | _Item]] = []
        for arg in args:
            label = arg.keyword.value if arg.keyword is not None else ""
            todo.append((label, arg.value))
        steps = 0
        while todo and steps < 64:
            steps += 1
            label, current = todo.pop()
            if isinstance(current, cst.Name):
                label = f"{label} {current.value}"
                current = self._resolve(current)
                if isinstance(current, cst.Name) and _TRANSFORM.search(label):
                    # ``Dataset(root, transform=transform)`` with a parameter: not followed.
                    if ["unknown"] not in found:
                        found.append(["unknown"])
                    continue
            if isinstance(current, cst.Call):
                qualified = self._names.qualified_name(current.func)
                if qualified is not None and qualified != PARTIAL:
                    part = ["x" if rng.is_library(qualified, self._own) else "q", qualified]
                    if part not in found:
                        found.append(part)
                todo.extend(("", arg.value) for arg in current.args)
            elif isinstance(current, cst.List | cst.Tuple | cst.Set):
                todo.extend(("", element.value) for element in current.elements)
        return found

    # -- the result -----------------------------------------------------------------------------

    def summary(self) -> dict[str, Json] | None:
        """The ``data`` part of the summary (None when the file builds and owns nothing)."""
        for key, names in self._object_uses.items():
            for name in sorted(names):
                kind = self._objects.get(name)
                if kind is not None:
                    self._fact(key, ["object", name, kind])
        if self._names.is_bound(HELPER):
            self._flags.add("helper")
        if not (
            self._loaders or self._samplers or self._distributed or self._facts or self._partials
        ) and not (self._flags - {"helper"}):
            return None
        positions = self._positions
        data: dict[str, Json] = {"flags": sorted(self._flags)}
        if self._loaders:
            data["loaders"] = [self._finish(p, positions, loader=True) for p in self._loaders]
        if self._samplers:
            data["samplers"] = [self._finish(p, positions, loader=False) for p in self._samplers]
        if self._distributed:
            data["distributed"] = [
                p.record | {"at": self._span(p, positions)} for p in self._distributed
            ]
        if self._facts:
            data["facts"] = self._facts
        if self._partials:
            data["partials"] = self._partials
        return data

    def _span(self, pending: _Pending, positions: Positions) -> list[int]:
        positions.hint(pending.node, pending.site.top)
        found = positions.syntactic(pending.node)
        return [found.start.line, found.start.column + 1, found.end.line, found.end.column + 1]

    def _finish(self, pending: _Pending, positions: Positions, *, loader: bool) -> dict[str, Json]:
        """A record with its position and the calls its fixes would write."""
        record = dict(pending.record)
        record["at"] = self._span(pending, positions)
        site = pending.site
        record["helper_row"] = site.helper_row
        generator, binding = self._names.expression_for(rng.TORCH_GENERATOR)
        seed = str(self._seed)
        if pending.rank is not None and "distributed" in self._flags:
            seed = f"{seed} + {pending.rank}"
        call, indent = pending.node, site.indent
        value = f"{generator}().manual_seed({seed})"
        record["generator"] = expression_code(
            self._module, with_keyword(call, "generator", value), indent
        )
        record["import"] = binding is None
        if loader:
            record["init"] = expression_code(
                self._module, with_keyword(call, "worker_init_fn", HELPER), indent
            )
        return record
