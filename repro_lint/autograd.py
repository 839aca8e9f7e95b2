"""Where a backward pass can reach an op: no-grad scopes, data and evaluation code, and which
values may require grad.

A hazard of the backward pass (interpolation, padding, pooling, ``gather``...) needs a tensor
that requires grad, in code that autograd records. ``Autograd`` rides along a rule's traversal
(the same events as ``tensors.Tensors``) and answers two questions, both erring towards "it
may" so that only what is provable keeps a rule quiet:

- ``quiet()``: why no backward can run here, if that is provable from the enclosing code:
  under ``torch.no_grad()`` / ``torch.inference_mode()`` / ``set_grad_enabled(False)`` (as
  context managers or decorators; ``enable_grad`` switches it back on); in data code, which
  runs in loader workers on the CPU (a ``torch.utils.data`` Dataset or a torchvision transform
  subclass, a class with ``__getitem__`` that is not an ``nn.Module``, a collate function,
  a framework data preprocessor); in an evaluation or metric function (by its name: eval,
  valid, test, predict, infer, metric, score, accuracy, visualize) that never calls
  ``backward``; or in a generator function that never calls it (a data pipeline yielding
  batches).
- ``grad(expr)``: whether a value may require grad (``Grad``). No grad, provably: literals
  and Python numbers, integer and boolean tensors (they cannot require grad), tensors that
  torch creates (``zeros``, ``arange``, ``tensor``... without ``requires_grad=True``),
  ``detach()``, ``.data``, shapes and devices, checkpoints (``torch.load``, ``state_dict()``,
  ``load_state_dict_from_url``), a module's registered buffers, values computed in a no-grad
  scope, a function parameter named as a mask (``mask``, ``attn_mask``: by convention, not
  provably), batches from a DataLoader (a loop over a loader built in the file, or over a name
  that says it is one: ``train_loader``) and whatever is computed from these alone.
  Everything else may (parameters, module outputs, unknown calls), except what depends only
  on the enclosing function's parameters or on what a function of the file returns: those
  are left open (``Grad.depends``) and ``settled`` decides them at the end of the module from
  the file's own call sites of the function (every call site must pass values without grad)
  and from the function's return statements. A parameter the function edits as stored state
  (it reads ``m["key"]`` and writes ``m["key"]`` back: a state dict resized while loading
  weights) holds stored tensors, which do not require grad.

Everything here is per file. ``GradCalls`` records, for the project phase, where a file
calls functions of other modules and whether a backward can reach those calls: a finding
that depends on the parameters of a module-level function its own file never calls is
settled there by the callers in other modules (``across_files`` names those functions).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import libcst as cst

from repro_lint.arguments import evaluated, literal_bool, string_value
from repro_lint.catalog import canonical
from repro_lint.names import Names, assigned_name
from repro_lint.tensors import Tensors
from repro_lint.walker import NESTED_SCOPES, code_children


@dataclass(frozen=True, slots=True)
class Grad:
    """Whether a value may require grad: ``maybe`` (it may, or nothing is known), or not
    unless one of ``depends`` does: ``"p:<name>"``, a parameter of the enclosing function,
    or ``"r:<function>"``, what a function of the file returns."""

    maybe: bool = False
    depends: frozenset[str] = frozenset()

    @property
    def none(self) -> bool:
        """Provably no grad."""
        return not self.maybe and not self.depends


NO_GRAD = Grad()
MAYBE = Grad(True)


def join(grads: Iterable[Grad]) -> Grad:
    """A value computed from all of ``grads``."""
    depends: set[str] = set()
    for grad in grads:
        if grad.maybe:
            return MAYBE
        depends |= grad.depends
    return Grad(False, frozenset(depends)) if depends else NO_GRAD


# Context managers and decorators that switch grad recording off (True) or back on (False).
_GRAD_SWITCHES = {
    "torch.no_grad": True,
    "torch.inference_mode": True,
    "torch.autograd.no_grad": True,
    "torch.autograd.inference_mode": True,
    "torch.autograd.grad_mode.no_grad": True,
    "torch.autograd.grad_mode.inference_mode": True,
    "torch.enable_grad": False,
    "torch.autograd.enable_grad": False,
    "torch.autograd.grad_mode.enable_grad": False,
}
_SET_GRAD_ENABLED = frozenset({"torch.set_grad_enabled", "torch.autograd.set_grad_enabled"})
# Creation functions: a new tensor that requires grad only with ``requires_grad=True``.
_FACTORIES = frozenset(
    f"torch.{name}"
    for name in (
        "zeros", "ones", "empty", "full", "rand", "randn", "randint", "randperm", "arange",
        "range", "linspace", "logspace", "eye", "tensor", "from_numpy", "zeros_like",
        "ones_like", "empty_like", "full_like", "rand_like", "randn_like", "randint_like",
        "tril_indices", "triu_indices", "empty_strided", "frombuffer", "Tensor", "LongTensor",
        "FloatTensor", "BoolTensor", "IntTensor", "ByteTensor", "DoubleTensor", "HalfTensor",
        "bernoulli", "multinomial", "normal", "poisson", "hann_window", "hamming_window",
    )
)  # fmt: skip
# Calls that return stored tensors (checkpoints, state dicts): nothing in them requires grad.
_STORED = frozenset(
    {
        "torch.load",
        "torch.hub.load_state_dict_from_url",
        "torch.utils.model_zoo.load_url",
        "safetensors.torch.load_file",
        "safetensors.torch.load",
    }
)
# Builtins whose result is a plain Python value (never a tensor that requires grad).
_PLAIN_BUILTINS = frozenset(
    f"builtins.{name}"
    for name in ("len", "int", "float", "bool", "str", "range", "round", "isinstance", "print",
                 "hash", "id", "repr", "format", "type", "hasattr", "callable")
)  # fmt: skip
_PASSING_BUILTINS = frozenset(
    f"builtins.{name}" for name in ("list", "tuple", "sorted", "reversed", "enumerate", "zip")
)
# Attributes that are not (differentiable) tensors: metadata, or detached views.
_PLAIN_ATTRIBUTES = frozenset(
    {"shape", "device", "dtype", "ndim", "is_cuda", "requires_grad", "data", "grad", "layout",
     "is_leaf", "names", "itemsize", "nbytes"}
)  # fmt: skip
_TENSOR_VIEWS = frozenset({"T", "mT", "H", "mH", "real", "imag"})
# Methods whose result requires grad only if their receiver does (the other arguments are
# sizes, dimensions, indices, dtypes or devices).
_RECEIVER_ONLY = frozenset(
    (
        "view", "view_as", "reshape", "reshape_as", "repeat", "repeat_interleave", "expand",
        "expand_as", "permute", "transpose", "t", "unsqueeze", "squeeze", "flatten",
        "unflatten", "contiguous", "clone", "to", "cuda", "cpu", "float", "double", "half",
        "bfloat16", "long", "int", "short", "byte", "char", "bool", "type_as", "gather",
        "index_select", "take_along_dim", "flip", "fliplr", "flipud", "roll", "narrow",
        "select", "chunk", "split", "unbind", "tril", "triu", "masked_fill", "masked_fill_",
        "fill_", "zero_", "sum", "mean", "max", "min", "amax", "amin", "argmax", "argmin",
        "argsort", "sort", "topk", "cumsum", "cumprod", "prod", "std", "var", "norm", "abs",
        "neg", "exp", "log", "log1p", "sqrt", "rsqrt", "sigmoid", "tanh", "relu", "softmax",
        "log_softmax", "clamp", "clamp_", "clip", "round", "floor", "ceil", "sign", "nonzero",
        "any", "all", "unique", "pin_memory", "square", "movedim", "swapaxes", "diag",
        "diagonal", "tile", "squeeze_", "unsqueeze_", "cumsum_", "float_power", "logical_not",
        "keys", "values", "items", "get", "copy", "pop",
    )
)  # fmt: skip
# Methods that build a new tensor, or leave torch: never requires grad.
_NO_GRAD_METHODS = frozenset(
    (
        "detach", "detach_", "numpy", "tolist", "item", "size", "dim", "numel", "nelement",
        "stride", "data_ptr", "get_device", "element_size", "is_contiguous", "state_dict",
        "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor", "is_floating_point",
        "eq", "ne", "lt", "le", "gt", "ge", "equal", "isnan", "isinf", "isfinite",
        "logical_and", "logical_or", "logical_xor", "__len__",
    )
)  # fmt: skip
_NAMESPACES = frozenset(
    {"torch", "torch.nn.functional", "torch.linalg", "torch.fft", "torch.special"}
)
# Keyword arguments of torch functions that carry tensors into the result.
_TENSOR_KEYWORDS = frozenset({"input", "other", "tensors", "weight", "bias", "src", "grid"})
# Words in a function's name that mark evaluation or metric code.
_EVALUATION_WORDS = (
    "eval", "valid", "test", "predict", "infer", "metric", "score", "accuracy", "visuali",
)  # fmt: skip
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
# Framework classes whose ``forward`` runs on the raw batch before the model (the batch
# never requires grad there): data preprocessors and batch augmentations.
_BATCH_AUGMENTS = frozenset({"BatchSyncRandomResize", "BatchFixedSizePad", "BatchResize"})
_BATCH_FRAMEWORKS = ("mmengine.", "mmdet.", "mmyolo.", "mmseg.", "mmpretrain.", "mmaction.")
_LOOP_WRAPPERS = frozenset(
    {"builtins.enumerate", "builtins.iter", "builtins.zip", "tqdm.tqdm", "tqdm.auto.tqdm",
     "tqdm.notebook.tqdm", "tqdm.rich.tqdm"}
)  # fmt: skip
_LOADER_CLASSES = (
    "torch.utils.data.DataLoader",
    "torch.utils.data.dataloader.DataLoader",
    "torch_geometric.loader.",
    "torchdata.stateful_dataloader.",
    "monai.data.DataLoader",
)


def _words(name: str) -> list[str]:
    return [word.lower() for part in name.split("_") for word in _WORD.findall(part)]


def mask_name(name: str) -> bool:
    """Whether a parameter's name says it holds a mask (``mask``, ``masks``, ``attn_mask``,
    ``key_padding_mask``; not ``mask_token`` or ``mask_logits``)."""
    words = _words(name)
    return bool(words) and words[-1] in ("mask", "masks")


def evaluation_name(name: str) -> bool:
    """Whether a function's name says it evaluates (``validate``, ``test_step``,
    ``compute_metrics``, ``predictImage``)."""
    return any(word.startswith(_EVALUATION_WORDS) for word in _words(name))


@dataclass(slots=True)
class _Class:
    node: cst.ClassDef
    key: str | None
    is_module: bool
    data: bool
    methods: frozenset[str]
    buffers: set[str] = field(default_factory=set)
    attributes: dict[str, Grad] = field(default_factory=dict)


@dataclass(slots=True)
class _Function:
    node: cst.FunctionDef | cst.Lambda | None  # None: a comprehension's scope
    key: str | None  # set when the file's call sites of it are followed
    cls: _Class | None
    self_name: str | None
    bindings: dict[str, Grad] = field(default_factory=dict)
    loaders: set[str] = field(default_factory=set)
    # Grad switches of its decorators, then of each enclosing ``with``: True off, False on.
    switches: list[bool | None] = field(default_factory=list)
    returns: list[Grad] = field(default_factory=list)
    evaluation: bool | None = None  # computed on demand
    # Names bound to ``functools.partial(<qualified>, ...)``.
    partials: dict[str, str] = field(default_factory=dict)
    # A comprehension's scope: its variables only, the rest is the enclosing function's.
    comprehension: bool = False
    # ``x = m["key"]`` and ``m["key"] = y``: entries of a mapping read and written back.
    entries_read: set[tuple[str, str]] = field(default_factory=set)
    entries_written: set[tuple[str, str]] = field(default_factory=set)


@dataclass(frozen=True, slots=True)
class Signature:
    """A function of the file whose call sites are followed."""

    params: tuple[str, ...]  # positional-or-keyword, in order (``self`` left out)
    kwonly: frozenset[str]
    defaults: Mapping[str, Grad]


# Shared by the many functions without keyword-only parameters or defaults.
_NO_NAMES: frozenset[str] = frozenset()
_NO_DEFAULTS: Mapping[str, Grad] = MappingProxyType({})


def top_functions(module: cst.Module) -> frozenset[str]:
    """The names of the functions defined in a module's own body (not under ``if``)."""
    return frozenset(s.name.value for s in module.body if type(s) is cst.FunctionDef)


# How ``Autograd.across_files`` has a module-level function judged by its callers: by
# whether a backward reaches it at all (a plain function of the file whose call of such a
# function may pass a value with grad); by what its callers in other modules pass (the file
# never calls it); by that, where the file calls it too (in plain functions judged by
# runs), so that it need not be called from anywhere else.
JUDGED_BY_RUNS, JUDGED_BY_ARGUMENTS, CALLED_IN_ITS_FILE = 0, 1, 2


@dataclass(frozen=True, slots=True)
class CallSite:
    positional: tuple[Grad, ...]
    keywords: dict[str, Grad]
    # ``f(*args)`` / ``f(**kwargs)``: any parameter may be passed anything.
    starred: bool
    # The plain module-level function the call is made in (no decorator, no grad switch
    # around the call), whose own callers decide whether a backward reaches it.
    runner: str | None = None


def _is_self_call(func: cst.BaseExpression, self_name: str | None) -> str | None:
    if (
        self_name is not None
        and type(func) is cst.Attribute
        and type(func.value) is cst.Name
        and func.value.value == self_name
    ):
        return func.attr.value
    return None


def _mentions(node: cst.CSTNode, attributes: frozenset[str], nested: bool) -> bool:
    """Whether ``node`` calls a method named in ``attributes`` (``loss.backward()``), or
    contains a ``yield`` (``attributes`` empty); ``nested`` functions count only if asked."""
    stack: list[cst.CSTNode] = code_children(node)
    while stack:
        current = stack.pop()
        # ``type(...)``: a function's whole tree is walked (isinstance goes through abc).
        kind = type(current)
        if kind in NESTED_SCOPES and not nested:
            continue
        if attributes and kind is cst.Call:
            func = current.func  # type: ignore[attr-defined]
            if type(func) is cst.Attribute and func.attr.value in attributes:
                return True
        if not attributes and kind is cst.Yield:
            return True
        stack.extend(code_children(current))
    return False


_BACKWARD_CALLS = frozenset({"backward", "manual_backward", "grad"})


# Expressions that never require grad, by their (concrete, final) node class.
_LITERALS = frozenset(
    {
        cst.Integer,
        cst.Float,
        cst.Imaginary,
        cst.SimpleString,
        cst.ConcatenatedString,
        cst.FormattedString,
        cst.Comparison,
        cst.Ellipsis,
    }
)


class Autograd:
    """The grad state of one module, updated as the traversal goes."""

    def __init__(self, names: Names, tensors: Tensors) -> None:
        self.names = names
        self.tensors = tensors
        self._module: dict[str, Grad] = {}
        self._module_loaders: set[str] = set()
        self._module_switches: list[bool | None] = []
        self._functions: list[_Function] = []
        self._classes: list[tuple[_Class, int]] = []
        self._data_classes: set[str] = set()
        # Functions of the file whose call sites are followed, and those call sites.
        self._top_functions: set[str] = set()
        self.signatures: dict[str, Signature] = {}
        self.call_sites: dict[str, list[CallSite]] = {}
        self.returns: dict[str, Grad] = {}
        # The functions of the file that yield (their keys).
        self._generators: set[str] = set()
        # Per function, the parameters it edits as stored state (a state dict whose entry it
        # reads and writes back under the same key).
        self.stored_state: dict[str, frozenset[str]] = {}

    # -- traversal events ----------------------------------------------------------------------

    def enter_module(self, node: cst.Module) -> None:
        self._top_functions = set(top_functions(node))

    def enter_class(self, node: cst.ClassDef) -> None:
        top = not self._functions and not self._classes
        methods = frozenset(
            statement.name.value
            for statement in (node.body.body if type(node.body) is cst.IndentedBlock else ())
            if type(statement) is cst.FunctionDef
        )
        is_module = any(self.tensors.is_module_base(base.value) for base in node.bases)
        data = any(self._data_base(base.value) for base in node.bases) or (
            not is_module and "__getitem__" in methods and "forward" not in methods
        )
        if data:
            self._data_classes.add(node.name.value)
        key = node.name.value if top else None
        self._classes.append((_Class(node, key, is_module, data, methods), len(self._functions)))

    def leave_class(self) -> None:
        self._classes.pop()

    def enter_function(self, node: cst.FunctionDef | cst.Lambda) -> None:
        outer = self._functions[-1] if self._functions else None
        cls = self._method_class() if type(node) is cst.FunctionDef else None
        params = [*node.params.posonly_params, *node.params.params]
        self_name: str | None = None
        if cls is not None and params and not _is_static(node):
            self_name = params[0].name.value
            params = params[1:]
        elif outer is not None:
            cls, self_name = outer.cls, outer.self_name
        method = cls if self_name is not None and self._method_class() is cls else None
        key = self._key(node, method)
        function = _Function(node, key, cls, self_name)
        # Parameters are open while the file's call sites are followed, else unknown.
        for param in [*params, *node.params.kwonly_params]:
            name = param.name.value
            if mask_name(name):
                # A mask passed in (``mask``, ``attn_mask``, ``key_padding_mask``) selects or
                # weights positions: data, not an activation that autograd records.
                function.bindings[name] = NO_GRAD
                continue
            function.bindings[name] = Grad(False, frozenset({f"p:{name}"})) if key else MAYBE
        for star in (node.params.star_arg, node.params.star_kwarg):
            if type(star) is cst.Param:
                function.bindings[star.name.value] = MAYBE
        if self_name is not None:
            function.bindings[self_name] = MAYBE
        if key is not None and type(node) is cst.FunctionDef:
            self.signatures[key] = Signature(
                tuple(p.name.value for p in params),
                frozenset(p.name.value for p in node.params.kwonly_params) or _NO_NAMES,
                {
                    p.name.value: self.grad(p.default)
                    for p in [*params, *node.params.kwonly_params]
                    if p.default is not None
                }
                or _NO_DEFAULTS,
            )
        if type(node) is cst.FunctionDef:
            function.switches.append(self._decorator_switch(node))
        self._functions.append(function)

    def enter_comprehension(self) -> None:
        outer = self._functions[-1] if self._functions else None
        cls = outer.cls if outer is not None else None
        self_name = outer.self_name if outer is not None else None
        self._functions.append(_Function(None, None, cls, self_name, comprehension=True))

    def leave_comprehension(self) -> None:
        self._functions.pop()

    def leave_function(self) -> None:
        function = self._functions.pop()
        if function.key is not None:
            edited = function.entries_read & function.entries_written
            if edited:
                self.stored_state[function.key] = frozenset(name for name, _ in edited)
        if function.key is not None and type(function.node) is cst.FunctionDef:
            returned = join(function.returns) if function.returns else NO_GRAD
            # What depends on its own parameters is open per call: not followed that far.
            self.returns[function.key] = MAYBE if returned.depends else returned

    def enter_with(self, node: cst.With) -> None:
        switch: bool | None = None
        for item in node.items:
            found = self._switch(item.item)
            if found is not None:
                switch = found
        self._switches().append(switch)

    def leave_with(self) -> None:
        self._switches().pop()

    def bind(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        """``target = value`` (None: bound to something unknown)."""
        grad = MAYBE if value is None else (NO_GRAD if self._no_grad_scope() else self.grad(value))
        loader = value is not None and self._is_loader_value(value)
        self._bind(target, grad, loader)
        function = self._function()
        if function is not None:
            read = _entry(value) if value is not None else None
            if read is not None:
                function.entries_read.add(read)
            written = _entry(target)
            if written is not None:
                function.entries_written.add(written)
        if type(target) is cst.Name and self._functions:
            partials = self._functions[-1].partials
            partials.pop(target.value, None)
            wrapped = self._partial(value)
            if wrapped is not None:
                partials[target.value] = wrapped

    def _partial(self, value: cst.BaseExpression | None) -> str | None:
        """``functools.partial(torch.arange, device=d)`` -> ``torch.arange``."""
        if type(value) is not cst.Call or not value.args or value.args[0].keyword:
            return None
        if self.names.qualified_name(value.func) != "functools.partial":
            return None
        wrapped = self.names.qualified_name(value.args[0].value)
        return canonical(wrapped) if wrapped is not None else None

    def bind_loop(self, target: cst.BaseExpression, iterable: cst.BaseExpression) -> None:
        """``for target in iterable``: batches of a loader have no grad; elements of other
        things have the grad of the thing."""
        grad = NO_GRAD if self._is_loader(iterable) else self._elements(iterable)
        self._bind(target, grad, False)

    def augment(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        """``target += value``."""
        if type(target) is cst.Name and not self._no_grad_scope():
            self._bind(target, join((self._lookup(target), self.grad(value))), False)

    def is_self(self, expr: cst.BaseExpression) -> bool:
        """Whether ``expr`` is the ``self`` of the method being visited."""
        function = self._functions[-1] if self._functions else None
        return (
            function is not None
            and function.self_name is not None
            and type(expr) is cst.Name
            and expr.value == function.self_name
        )

    def on_yield(self, value: cst.BaseExpression | None) -> None:
        """What a generator yields is what iterating over its call gives; its body runs
        where it is iterated, not where it is called."""
        function = self._functions[-1] if self._functions else None
        if function is not None and function.key is not None:
            self._generators.add(function.key)
        self.on_return(value)

    def on_return(self, value: cst.BaseExpression | None) -> None:
        if self._functions and value is not None:
            self._functions[-1].returns.append(
                NO_GRAD if self._no_grad_scope() else self.grad(value)
            )

    def on_call(self, node: cst.Call) -> None:
        """Registered buffers, and the call sites of the file's functions."""
        func = node.func
        function = self._functions[-1] if self._functions else None
        self_name = function.self_name if function is not None else None
        method = _is_self_call(func, self_name)
        if method == "register_buffer" and function is not None and function.cls is not None:
            first = node.args[0].value if node.args else None
            if isinstance(first, cst.SimpleString | cst.ConcatenatedString):
                text = string_value(first)
                if isinstance(text, str):
                    function.cls.buffers.add(text)
            return
        key: str | None = None
        if method is not None and function is not None and function.cls is not None:
            if function.cls.key is not None and method in function.cls.methods:
                key = f"{function.cls.key}.{method}"
        elif type(func) is cst.Name and func.value in self._top_functions:
            if not self._shadowed(func.value):
                key = func.value
        elif type(func) is cst.Attribute:
            # ``other.method(...)``: a method of a class of the file may be called with
            # anything from here.
            for cls, _ in self._classes:
                if cls.key is not None and func.attr.value in cls.methods:
                    self.call_sites.setdefault(f"{cls.key}.{func.attr.value}", []).append(
                        CallSite((), {}, True)
                    )
        if key is None:
            return
        quiet = self._no_grad_scope()
        runner = None if quiet or "." in key else self._plain_runner()
        positional: list[Grad] = []
        keywords: dict[str, Grad] = {}
        starred = False
        for arg in node.args:
            grad = NO_GRAD if quiet else self.grad(arg.value)
            # An open parameter of the caller is not followed further.
            grad = MAYBE if grad.depends else grad
            if arg.star:
                starred = True
            elif arg.keyword is not None:
                keywords[arg.keyword.value] = grad
            else:
                positional.append(grad)
        self.call_sites.setdefault(key, []).append(
            CallSite(tuple(positional), keywords, starred, runner)
        )

    def _plain_runner(self) -> str | None:
        """The plain module-level function the traversal is directly in (not a method, a
        nested function or a lambda, whose body may run anywhere it is passed; no
        decorator), when no grad switch is on around it."""
        if len(self._functions) != 1:
            return None
        function = self._functions[0]
        node = function.node
        if (
            type(node) is not cst.FunctionDef
            or function.cls is not None
            or node.decorators
            or function.key != node.name.value
            or function.key not in self._top_functions
        ):
            return None
        if any(s is not None for s in (*self._module_switches, *function.switches)):
            return None
        return function.key

    # -- queries -------------------------------------------------------------------------------

    def quiet(self) -> str | None:
        """Why no backward pass can run here, if that is provable."""
        for switch in reversed([*self._module_switches, *self._all_switches()]):
            if switch is not None:
                return "under a no-grad scope" if switch else None
        for function in reversed(self._functions):
            if function.comprehension:
                continue
            if self._data_function(function):
                return "in data code"
            if self._evaluation(function):
                return "in code that never calls backward"
        return None

    def settled(self, grad: Grad) -> bool:
        """Whether an open grad is settled as none by the file's call sites and returns (call
        only once the module has been visited)."""
        if grad.maybe:
            return False
        for depend in grad.depends:
            kind, _, rest = depend.partition(":")
            if kind == "r":
                if not self.returns.get(rest, MAYBE).none:
                    return False
                continue
            function, _, param = rest.rpartition("|")
            if param in self.stored_state.get(function, ()):
                # The function edits an entry of a state dict it was given (a checkpoint's
                # position embedding resized while loading): stored tensors, not a loss.
                continue
            if not self._passed_without_grad(function, param):
                return False
        return True

    def across_files(self, grad: Grad) -> tuple[tuple[str, int], ...]:
        """For an open grad that the file does not settle: the module-level functions whose
        callers in other modules may still settle it, each with how they are judged
        (``JUDGED_BY_RUNS``, ``JUDGED_BY_ARGUMENTS``, ``CALLED_IN_ITS_FILE``). Empty when
        anything else keeps it open (a call made elsewhere in the file than directly in a
        plain function, a method, what a function returns)."""
        found: set[tuple[str, int]] = set()
        for depend in grad.depends:
            kind, _, rest = depend.partition(":")
            if kind == "r":
                if not self.returns.get(rest, MAYBE).none:
                    return ()
                continue
            function, _, param = rest.rpartition("|")
            if param in self.stored_state.get(function, ()):
                continue
            if self._passed_without_grad(function, param):
                continue
            if "." in function:
                return ()
            if function not in self.call_sites:
                found.add((function, JUDGED_BY_ARGUMENTS))
                continue
            runners = self._runners(function, param)
            if runners is None:
                return ()
            found.update((runner, JUDGED_BY_RUNS) for runner in runners)
            found.add((function, CALLED_IN_ITS_FILE))
        return tuple(sorted(found))

    def _runners(self, function: str, param: str) -> set[str] | None:
        """The plain functions (``CallSite.runner``) that make the file's calls of
        ``function`` passing ``param`` a value that may require grad; None when such a call
        is made anywhere else."""
        signature = self.signatures.get(function)
        if signature is None:
            return None
        runners: set[str] = set()
        for site in self.call_sites.get(function, []):
            if not site.starred and _passed(site, signature, param).none:
                continue
            if site.runner is None or site.runner in self._generators:
                return None
            runners.add(site.runner)
        return runners

    def opened(self, grad: Grad) -> Grad:
        """``grad`` with the parameters named by their function, so that ``settled`` can
        find the call sites (``p:x`` -> ``p:f|x``)."""
        if not grad.depends:
            return grad
        function = self._function()
        if function is None or function.key is None:
            return MAYBE if any(d.startswith("p:") for d in grad.depends) else grad
        return Grad(
            False,
            frozenset(
                f"p:{function.key}|{d[2:]}" if d.startswith("p:") else d for d in grad.depends
            ),
        )

    def grad(self, expr: cst.BaseExpression | None, depth: int = 0) -> Grad:
        """Whether ``expr`` may require grad."""
        if expr is None or depth > 12:
            return MAYBE
        # ``type(...)``: concrete node classes have no subclasses; isinstance goes through abc.
        if type(expr) in _LITERALS:
            return NO_GRAD
        facts = self.tensors.facts(expr)
        if facts is not None and facts.floating is False:
            # Integer and boolean tensors cannot require grad.
            return NO_GRAD
        deeper = depth + 1
        if type(expr) is cst.Name:
            return self._lookup(expr)
        if type(expr) is cst.Attribute:
            return self._attribute(expr, deeper)
        if type(expr) is cst.Call:
            return self._call(expr, deeper)
        if type(expr) is cst.Subscript:
            return self.grad(expr.value, deeper)
        if isinstance(expr, cst.BinaryOperation | cst.BooleanOperation):
            return join((self.grad(expr.left, deeper), self.grad(expr.right, deeper)))
        if type(expr) is cst.UnaryOperation:
            return self.grad(expr.expression, deeper)
        if type(expr) is cst.IfExp:
            return join((self.grad(expr.body, deeper), self.grad(expr.orelse, deeper)))
        if type(expr) is cst.NamedExpr:
            return self.grad(expr.value, deeper)
        if isinstance(expr, cst.Tuple | cst.List | cst.Set):
            return join(self.grad(element.value, deeper) for element in expr.elements)
        if type(expr) is cst.Dict:
            return join(
                self.grad(element.value, deeper)
                for element in expr.elements
                if type(element) is cst.DictElement
            )
        return MAYBE

    # -- helpers -------------------------------------------------------------------------------

    def _key(self, node: cst.FunctionDef | cst.Lambda, method_of: _Class | None) -> str | None:
        """The key of a function whose call sites are followed: a module-level function or a
        method of a module-level class called through ``self`` (not nested functions,
        lambdas, static methods, nor ``forward`` and other methods called implicitly)."""
        if type(node) is not cst.FunctionDef:
            return None
        name = node.name.value
        if method_of is None:
            return name if not self._functions and not self._classes else None
        if method_of.key is None or name == "forward" or name.startswith("__"):
            return None
        return f"{method_of.key}.{name}"

    def _innermost(self) -> int:
        """The index of the innermost function that is not a comprehension's scope."""
        index = len(self._functions) - 1
        while index > 0 and self._functions[index].comprehension:
            index -= 1
        return index

    def _function(self) -> _Function | None:
        """The innermost function (not a comprehension's scope)."""
        return self._functions[self._innermost()] if self._functions else None

    def _method_class(self) -> _Class | None:
        if not self._classes:
            return None
        cls, depth = self._classes[-1]
        return cls if depth == len(self._functions) else None

    def _switches(self) -> list[bool | None]:
        return self._functions[-1].switches if self._functions else self._module_switches

    def _all_switches(self) -> list[bool | None]:
        return [switch for function in self._functions for switch in function.switches]

    def _no_grad_scope(self) -> bool:
        for switch in reversed([*self._module_switches, *self._all_switches()]):
            if switch is not None:
                return switch
        return False

    def _switch(self, expr: cst.BaseExpression) -> bool | None:
        return grad_switch(self.names, expr)

    def _decorator_switch(self, node: cst.FunctionDef) -> bool | None:
        return decorator_switch(self.names, node)

    def _data_base(self, base: cst.BaseExpression) -> bool:
        return data_base(self.names, base, self._data_classes)

    def _data_function(self, function: _Function) -> bool:
        node = function.node
        if type(node) is cst.FunctionDef and "collate" in node.name.value.lower():
            return True
        return function.cls is not None and function.cls.data

    def _evaluation(self, function: _Function) -> bool:
        """An evaluation or metric function, or a generator, that never calls backward."""
        if function.evaluation is None:
            node = function.node
            function.evaluation = (
                type(node) is cst.FunctionDef
                and (evaluation_name(node.name.value) or _mentions(node, frozenset(), False))
                and not _mentions(node, _BACKWARD_CALLS, nested=True)
            )
        return function.evaluation

    def _shadowed(self, name: str) -> bool:
        return any(name in function.bindings for function in self._functions)

    def _scope(self) -> dict[str, Grad]:
        return self._functions[-1].bindings if self._functions else self._module

    def _bind(self, target: cst.BaseExpression, grad: Grad, loader: bool) -> None:
        if type(target) is cst.Name:
            self._scope()[target.value] = grad
            loaders = self._functions[-1].loaders if self._functions else self._module_loaders
            if loader:
                loaders.add(target.value)
            else:
                loaders.discard(target.value)
        elif isinstance(target, cst.Tuple | cst.List):
            for element in target.elements:
                self._bind(element.value, grad, False)
        elif type(target) is cst.StarredElement:
            self._bind(target.value, grad, False)
        elif type(target) is cst.Attribute:
            function = self._functions[-1] if self._functions else None
            if (
                function is not None
                and function.cls is not None
                and type(target.value) is cst.Name
                and target.value.value == function.self_name
            ):
                name = target.attr.value
                # What depends on a method's parameters is not followed into attributes.
                grad = MAYBE if grad.depends else grad
                known = function.cls.attributes.get(name)
                function.cls.attributes[name] = grad if known is None else join((known, grad))

    def _lookup(self, name: cst.Name) -> Grad:
        if name.value in ("True", "False", "None"):
            return NO_GRAD
        innermost = self._innermost()
        for index in range(len(self._functions) - 1, -1, -1):
            bindings = self._functions[index].bindings
            if name.value in bindings:
                grad = bindings[name.value]
                # An enclosing function's open parameter is not followed into closures.
                return grad if index >= innermost or not grad.depends else MAYBE
        if name.value in self._module:
            return self._module[name.value]
        qualified = self.names.qualified_name(name)
        if qualified is not None and not qualified.startswith("builtins."):
            # An imported or defined name (a module, a constant, a class, a function).
            return NO_GRAD
        return MAYBE

    def _attribute(self, expr: cst.Attribute, depth: int) -> Grad:
        name = expr.attr.value
        if name in _PLAIN_ATTRIBUTES:
            return NO_GRAD
        if name in _TENSOR_VIEWS:
            return self.grad(expr.value, depth)
        function = self._functions[-1] if self._functions else None
        if (
            function is not None
            and function.cls is not None
            and type(expr.value) is cst.Name
            and expr.value.value == function.self_name
        ):
            if name in function.cls.buffers:
                return NO_GRAD
            return function.cls.attributes.get(name, MAYBE)
        if self.names.qualified_name(expr) is not None:
            return NO_GRAD
        return MAYBE

    def _call(self, call: cst.Call, depth: int) -> Grad:
        func = call.func
        qualified = self.names.qualified_name(func)
        if qualified is not None:
            return self._qualified_call(canonical(qualified), call, depth)
        function = self._functions[-1] if self._functions else None
        if type(func) is cst.Attribute:
            method = func.attr.value
            self_name = function.self_name if function is not None else None
            own = _is_self_call(func, self_name)
            if own is not None and function is not None and function.cls is not None:
                cls = function.cls
                if own in cls.methods and cls.key is not None:
                    return Grad(False, frozenset({f"r:{cls.key}.{own}"}))
                return MAYBE
            if method in _NO_GRAD_METHODS:
                return NO_GRAD
            if method == "requires_grad_":
                return MAYBE
            receiver = self.grad(func.value, depth)
            if receiver.maybe:
                return MAYBE
            if method in _RECEIVER_ONLY:
                return receiver
            if self.tensors.facts(func.value) is not None:
                # Another tensor method: its tensor arguments count too.
                return join((receiver, *self._arguments(call, depth, positional_only=True)))
            return MAYBE
        if type(func) is cst.Name:
            for scope in reversed(self._functions):
                if func.value in scope.partials:
                    return self._qualified_call(scope.partials[func.value], call, depth)
            if func.value in self._top_functions and not self._shadowed(func.value):
                return Grad(False, frozenset({f"r:{func.value}"}))
        return MAYBE

    def _qualified_call(self, qualified: str, call: cst.Call, depth: int) -> Grad:
        if qualified in _STORED or qualified.startswith(("numpy.", "math.", "random.")):
            return NO_GRAD
        if qualified in _PLAIN_BUILTINS:
            return NO_GRAD
        if qualified in _PASSING_BUILTINS:
            return join(self._arguments(call, depth, positional_only=True))
        if qualified in _FACTORIES:
            for arg in call.args:
                if arg.keyword is not None and arg.keyword.value == "requires_grad":
                    return NO_GRAD if literal_bool(arg.value) is False else MAYBE
            return NO_GRAD
        namespace, _, function = qualified.rpartition(".")
        if namespace in _NAMESPACES and function[:1].islower():
            if qualified in _SET_GRAD_ENABLED or qualified in _GRAD_SWITCHES:
                return NO_GRAD
            return join(self._arguments(call, depth, positional_only=False))
        return MAYBE

    def _arguments(self, call: cst.Call, depth: int, positional_only: bool) -> list[Grad]:
        grads: list[Grad] = []
        for arg in call.args:
            if arg.star:
                grads.append(MAYBE)
            elif arg.keyword is None or (
                not positional_only and arg.keyword.value in _TENSOR_KEYWORDS
            ):
                grads.append(self.grad(arg.value, depth))
        return grads

    def _elements(self, iterable: cst.BaseExpression) -> Grad:
        # ``range(...)`` unwraps to nothing: plain ints.
        return join(self.grad(part) for part in self._unwrap(iterable))

    def _unwrap(self, iterable: cst.BaseExpression) -> list[cst.BaseExpression]:
        """``enumerate(tqdm(loader))`` -> ``[loader]``; ``zip(a, b)`` -> ``[a, b]``."""
        if type(iterable) is cst.Call:
            qualified = self.names.qualified_name(iterable.func)
            if qualified is not None and canonical(qualified) in _LOOP_WRAPPERS:
                parts: list[cst.BaseExpression] = []
                for arg in iterable.args:
                    if arg.keyword is None and not arg.star:
                        parts.extend(self._unwrap(arg.value))
                return parts
            if qualified == "builtins.range":
                return []
        return [iterable]

    def _is_loader(self, iterable: cst.BaseExpression) -> bool:
        parts = self._unwrap(iterable)
        if not parts:
            return False
        # ``enumerate(loader)`` pairs the batch with an int; ``zip`` of loaders pairs batches.
        return all(self._names_loader(part) for part in parts)

    def _names_loader(self, expr: cst.BaseExpression) -> bool:
        if type(expr) is cst.Name:
            for function in reversed(self._functions):
                if expr.value in function.loaders:
                    return True
                if expr.value in function.bindings:
                    break
            else:
                if expr.value in self._module_loaders:
                    return True
            return "loader" in expr.value.lower()
        if type(expr) is cst.Attribute:
            return "loader" in expr.attr.value.lower()
        return False

    def _is_loader_value(self, value: cst.BaseExpression) -> bool:
        if type(value) is not cst.Call:
            return False
        qualified = self.names.qualified_name(value.func)
        return qualified is not None and qualified.startswith(_LOADER_CLASSES)

    def _passed_without_grad(self, function: str, param: str) -> bool:
        signature = self.signatures.get(function)
        sites = self.call_sites.get(function, [])
        if signature is None or not sites:
            return False
        for site in sites:
            if site.starred:
                return False
            if not _passed(site, signature, param).none:
                return False
        return True


def _passed(site: CallSite, signature: Signature, param: str) -> Grad:
    """What a call site (not starred) passes a parameter: its argument, or its default."""
    if param in site.keywords:
        return site.keywords[param]
    if param in signature.params and signature.params.index(param) < len(site.positional):
        return site.positional[signature.params.index(param)]
    return signature.defaults.get(param, MAYBE)


# -- calls across files ---------------------------------------------------------------------

Json = Any


@dataclass(slots=True)
class _Frame:
    """A function being visited, as ``GradCalls`` sees it."""

    name: str
    data: bool
    evaluation: bool
    # Grad switches of its decorators, then of each enclosing ``with``.
    switches: list[bool | None]
    # A module-level function without decorators: it runs only where it is called.
    plain: bool = False
    yields: bool = False
    backward: bool = False


# Flags of a recorded call (``GradCalls.summary``): made directly in a plain module-level
# function (``_Frame.plain``) under no grad switch, so that whether a backward reaches it is
# whether one reaches that function's calls; made with no argument at all.
IN_PLAIN_FUNCTION = 1
NO_ARGUMENTS = 2


class GradCalls:
    """The calls a file makes of project functions (of other modules and of its own), and
    whether a backward pass can reach each (``Autograd.quiet``'s judgement: a no-grad scope,
    data code, an evaluation function or generator that never calls backward), for the
    project phase: a function whose parameter feeds a backward-only hazard, and that its own
    module never calls, is judged by its callers in other modules, and a call made in a
    plain module-level function by that function's own callers. Also the project names the
    file uses as values (passed on, stored: called from anywhere), its own functions
    included. Rides along the summary's traversal."""

    def __init__(
        self, names: Names, library: Callable[[str], bool], defined: frozenset[str] = frozenset()
    ) -> None:
        self._names = names
        self._library = library
        self._tensors = Tensors(names)
        self._frames: list[_Frame] = []
        self._module_switches: list[bool | None] = []
        # Enclosing classes: whether each is data code, and how many functions enclose it.
        self._classes: list[tuple[bool, int]] = []
        self._data_classes: set[str] = set()
        self._sites: list[tuple[str, tuple[_Frame, ...], bool | None, int]] = []
        # Nodes that are not uses of a name of their own: callees, parts of attributes.
        self._skip: set[int] = set()
        self._imports = 0
        self._imported = {
            binding.local: binding.qualified
            for binding in names.bindings()
            if binding.is_import and not library(binding.qualified)
        }
        # The module's own functions (``defined``: those defined at its top level), whose
        # uses as values are recorded as an import's are.
        self._defined = defined
        # The local names whose use as a value is recorded: project imports and the module's
        # own functions (a use of another name is nothing to record).
        self.imported = frozenset(self._imported) | defined
        self._refs: set[str] = set()

    def enter_class(self, node: cst.ClassDef) -> None:
        self._tensors.enter_class(node)
        body = node.body.body if type(node.body) is cst.IndentedBlock else ()
        methods = {s.name.value for s in body if type(s) is cst.FunctionDef}
        is_module = any(self._tensors.is_module_base(base.value) for base in node.bases)
        data = any(data_base(self._names, base.value, self._data_classes) for base in node.bases)
        data = data or (not is_module and "__getitem__" in methods and "forward" not in methods)
        if data:
            self._data_classes.add(node.name.value)
        self._classes.append((data, len(self._frames)))

    def leave_class(self) -> None:
        self._tensors.leave_class()
        self._classes.pop()

    def enter_function(self, node: cst.FunctionDef) -> None:
        name = node.name.value
        method_of = self._classes[-1] if self._classes else None
        data = method_of is not None and method_of[1] == len(self._frames) and method_of[0]
        data = data or "collate" in name.lower()
        switch = decorator_switch(self._names, node)
        plain = (
            not self._frames and not self._classes and not node.decorators and name in self._defined
        )
        if name in self.imported:
            # Its name where it is defined is no use of it.
            self._skip.add(id(node.name))
        self._frames.append(_Frame(name, data, evaluation_name(name), [switch], plain))

    def leave_function(self) -> None:
        self._frames.pop()

    def enter_with(self, node: cst.With) -> None:
        switch: bool | None = None
        for item in node.items:
            found = grad_switch(self._names, item.item)
            if found is not None:
                switch = found
        (self._frames[-1].switches if self._frames else self._module_switches).append(switch)

    def leave_with(self) -> None:
        (self._frames[-1].switches if self._frames else self._module_switches).pop()

    def on_yield(self) -> None:
        if self._frames:
            self._frames[-1].yields = True

    def enter_import(self) -> None:
        self._imports += 1

    def leave_import(self) -> None:
        self._imports -= 1

    def call(self, node: cst.Call, qualified: str | None, in_lambda: bool = False) -> None:
        """A call (``in_lambda``: in a lambda's body, which runs wherever the lambda is
        passed)."""
        func = node.func
        self._mute(func)
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value in self.imported:
                # ``f(crop=...)``: a keyword names no value.
                self._skip.add(id(arg.keyword))
        if type(func) is cst.Attribute and func.attr.value in _BACKWARD_CALLS:
            # A backward anywhere in a function (nested ones too) makes it training code.
            for frame in self._frames:
                frame.backward = True
        if qualified is None:
            if not (
                self._names.star_imports
                and type(func) is cst.Name
                and not self._names.is_bound(func.value)
            ):
                return
            # ``from helpers import *`` then ``resize(x)``.
            target = f"*{func.value}"
        elif self._library(qualified):
            return
        else:
            target = qualified
        switch: bool | None = None
        for found in reversed([*self._module_switches, *self._all_switches()]):
            if found is not None:
                switch = found
                break
        flags = 0 if node.args else NO_ARGUMENTS
        if len(self._frames) == 1 and self._frames[0].plain and switch is None and not in_lambda:
            flags |= IN_PLAIN_FUNCTION
        self._sites.append((target, tuple(self._frames), switch, flags))

    def name(self, node: cst.Name) -> None:
        if self._imports or id(node) in self._skip:
            return
        qualified = self._imported.get(node.value)
        if qualified is None and node.value in self._defined:
            qualified = self._names.qualified_name(node)
        if qualified is not None:
            self._refs.add(qualified)

    def attribute(self, node: cst.Attribute) -> None:
        """``helpers.resize`` used as a value (a module's function passed on)."""
        value = node.value
        self._mute(value)
        self._mute(node.attr)
        if self._imports or id(node) in self._skip:
            return
        if type(value) is cst.Name and value.value in self._imported:
            qualified = self._names.qualified_name(node)
            if qualified is not None and not self._library(qualified):
                self._refs.add(qualified)

    def _mute(self, node: cst.BaseExpression) -> None:
        """Note that ``node`` (a callee, or a part of a dotted name) is no use of a name as a
        value. Only a node that could otherwise count is noted (an imported name, or an
        attribute of one): a file has a callee per call."""
        if type(node) is cst.Attribute:  # (``type``: abc's isinstance is slow)
            value = node.value
            if type(value) is cst.Name and value.value in self._imported:
                self._skip.add(id(node))
        elif type(node) is cst.Name and node.value in self.imported:
            self._skip.add(id(node))

    def _all_switches(self) -> list[bool | None]:
        return [switch for frame in self._frames for switch in frame.switches]

    def summary(self) -> dict[str, Json] | None:
        """``calls``: [callee, 1 if no backward reaches the call else 0, the name of the
        function making it ("" at module level), its flags (``IN_PLAIN_FUNCTION``,
        ``NO_ARGUMENTS``)]; ``refs``: project names used as values (the module's own
        functions too)."""
        calls: list[list[Json]] = []
        seen: set[tuple[str, int, str, int]] = set()
        for target, frames, switch, recorded in self._sites:
            quiet = 1 if _quiet_frames(frames, switch) else 0
            flags = recorded
            if flags & IN_PLAIN_FUNCTION and frames[0].yields:
                # A generator's body runs where it is iterated, not where it is called.
                flags &= ~IN_PLAIN_FUNCTION
            marker = (target, quiet, frames[-1].name if frames else "", flags)
            if marker not in seen:
                seen.add(marker)
                calls.append(list(marker))
        if not calls and not self._refs:
            return None
        return {"calls": calls, "refs": sorted(self._refs)}


def _quiet_frames(frames: tuple[_Frame, ...], switch: bool | None) -> bool:
    """``Autograd.quiet`` for a call made in ``frames`` under the innermost grad switch."""
    if switch is not None:
        return switch
    for frame in reversed(frames):
        if frame.data or ((frame.evaluation or frame.yields) and not frame.backward):
            return True
    return False


def grad_switch(names: Names, expr: cst.BaseExpression) -> bool | None:
    """True for an expression that turns grad recording off (``torch.no_grad()``), False for
    one that turns it on (``torch.enable_grad()``), None for anything else."""
    call = expr if type(expr) is cst.Call else None
    qualified = names.qualified_name(call.func if call is not None else expr)
    if qualified is None:
        return None
    if qualified in _GRAD_SWITCHES:
        return _GRAD_SWITCHES[qualified]
    if qualified in _SET_GRAD_ENABLED and call is not None and call.args:
        enabled = literal_bool(call.args[0].value)
        return None if enabled is None else not enabled
    return None


def decorator_switch(names: Names, node: cst.FunctionDef) -> bool | None:
    """The grad switch a function's decorators set (the last one wins)."""
    switch: bool | None = None
    for decorator in node.decorators:
        found = grad_switch(names, decorator.decorator)
        if found is not None:
            switch = found
    return switch


def data_base(names: Names, base: cst.BaseExpression, data_classes: set[str]) -> bool:
    """Whether a class with this base is data code (a Dataset, a transform, a framework's
    batch preprocessor); ``data_classes``: the data classes of the file so far."""
    qualified = names.qualified_name(base)
    if qualified is None:
        return type(base) is cst.Name and base.value in data_classes
    qualified = canonical(qualified)
    if qualified in data_classes:
        return True
    if qualified.startswith(("torch.utils.data.", "torchvision.datasets.")):
        return qualified.rsplit(".", 1)[1].endswith("Dataset")
    if qualified.startswith("torchvision.transforms."):
        return True
    # A name without a dot: ``from . import Base`` in a module outside any package.
    last = qualified.rpartition(".")[2]
    return qualified.startswith(_BATCH_FRAMEWORKS) and (
        last.lower().endswith("datapreprocessor") or last in _BATCH_AUGMENTS
    )


def _entry(expr: cst.BaseExpression) -> tuple[str, str] | None:
    """``m["key"]``: the mapping's name and the key."""
    if type(expr) is not cst.Subscript or type(expr.value) is not cst.Name:
        return None
    if len(expr.slice) != 1 or type(expr.slice[0].slice) is not cst.Index:
        return None
    key = expr.slice[0].slice.value
    if type(key) is not cst.SimpleString:
        return None
    text = evaluated(key)
    return (expr.value.value, text) if isinstance(text, str) else None


def _is_static(node: cst.FunctionDef | cst.Lambda) -> bool:
    if isinstance(node, cst.Lambda):
        return True
    return any(
        type(d.decorator) is cst.Name and d.decorator.value in ("staticmethod", "classmethod")
        for d in node.decorators
    )


def used_detached(statements: tuple[cst.CSTNode, ...], call: cst.Call) -> bool:
    """Whether the result of ``call``, the value of ``name = call`` (the innermost of the
    enclosing ``statements``), is read only through what carries no gradient (``name.data``,
    ``name.size(0)``, ``name.shape``, ``name.detach()``) until ``name`` is bound again: then
    no backward pass goes through the call. ``x = F.avg_pool3d(...); y = torch.cat([x.data,
    pad])`` is such a use. The statements read are those after it in its block and, where
    that block is the body of an ``if`` or a ``with`` (not a loop's, whose next round may
    read it first), those after that statement, and so on outwards: ``if small: x =
    F.interpolate(x, ...)`` then ``x = x.detach()``."""
    if len(statements) < 2:
        return False
    line = statements[-1]
    assign = _lone_assign(line)
    name = None if assign is None else assigned_name(assign, call)
    if name is None:
        return False
    level = len(statements) - 1
    while level >= 1:
        node, parent = statements[level], statements[level - 1]
        body = getattr(parent, "body", None)
        if type(body) is not cst.IndentedBlock:
            return False
        following = body.body
        index = next((i for i, s in enumerate(following) if s is node), None)
        if index is None:
            return False
        for statement in following[index + 1 :]:
            assign = _lone_assign(statement)
            if assign is not None and assigned_name(assign) == name:
                # Bound again: only its value still reads the call's result.
                return _reads_only_plain(assign.value, name)
            if not _reads_only_plain(statement, name):
                return False
            if _returns(statement):
                # The function ends here: nothing reads the name after.
                return True
        if type(parent) not in (cst.If, cst.With):
            return False
        level -= 1
    return False


def _returns(statement: cst.CSTNode) -> bool:
    """Whether a line ends with ``return`` (nothing after it in its function runs)."""
    return type(statement) is cst.SimpleStatementLine and type(statement.body[-1]) is cst.Return


def _lone_assign(statement: cst.CSTNode) -> cst.Assign | None:
    """The assignment a line holds alone (``x = f(y)``), else None."""
    if type(statement) is cst.SimpleStatementLine and len(statement.body) == 1:
        small = statement.body[0]
        return small if type(small) is cst.Assign else None
    return None


def _reads_only_plain(node: cst.CSTNode, name: str) -> bool:
    """Whether every read of ``name`` in ``node`` is ``name.<attribute>`` for an attribute
    or method that carries no gradient."""
    stack: list[cst.CSTNode] = [node]
    while stack:
        current = stack.pop()
        if (
            type(current) is cst.Attribute
            and type(current.value) is cst.Name
            and current.value.value == name
        ):
            if current.attr.value in _PLAIN_ATTRIBUTES or current.attr.value in _NO_GRAD_METHODS:
                continue
            return False
        if type(current) is cst.Name and current.value == name:
            return False
        stack.extend(code_children(current))
    return True
