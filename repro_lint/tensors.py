"""Which expressions are likely torch tensors, and the little that is known of their shape.

A rule feeds ``Tensors`` the scopes and assignments it visits, in source order, and asks what an
expression is. The inference is deliberately small and documented, because it decides whether
``x.cumsum()`` is PyTorch's (reported) or numpy's / pandas' (never reported). An expression is
a likely tensor when it is:

- a name last assigned (in the same function, else in an enclosing one, else at module level)
  from a torch call that returns tensors (``torch.zeros(...)``, ``F.softmax(...)``), from a
  likely tensor, or from a call of a built ``nn.Module``;
- a parameter annotated ``torch.Tensor`` (also ``Tensor``, ``Optional[Tensor]``,
  ``Tensor | None``, ``torch.FloatTensor``...), or a parameter of ``forward`` in an
  ``nn.Module`` subclass;
- an attribute of an ``nn.Module``: ``self.weight`` inside an ``nn.Module`` subclass (unless
  it was assigned something that plainly is not a tensor: a literal, a list, a call into
  another library such as numpy), or ``model.weight`` where ``model`` was built from a
  ``torch.nn`` class or a local ``nn.Module`` subclass;
- a chain of tensor methods, arithmetic or indexing starting at one of the above or at a torch
  call (``torch.arange(10).float().cumsum(0)``), except methods that leave torch
  (``.numpy()``, ``.tolist()``, ``.item()``, ``.size()``).

Everything else (names bound by loops, ``with``, unpacking of unknown values, other libraries'
calls) is not a tensor. Shape and dtype are tracked only through literal factory arguments
(``torch.randn(8, 3, 32, 32)``, ``dtype=torch.long``, ``torch.tensor([1, 2])``) and a few
methods (``.float()``, ``.long()``, ``.view(...)``, ``.unsqueeze(...)``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import libcst as cst

from repro_lint.arguments import (
    argument,
    evaluated,
    literal_bool,
    literal_int,
    literal_str,
    number_is_float,
)
from repro_lint.catalog import FLOATING_DTYPES, INTEGER_DTYPES, TensorFacts, canonical
from repro_lint.names import Names


@dataclass(frozen=True, slots=True)
class ModuleInstance:
    """An expression that refers to an ``nn.Module`` built by a constructor call."""

    qualified: str
    call: cst.Call | None


@dataclass(frozen=True, slots=True)
class ModuleMember:
    """An attribute of an ``nn.Module``: a parameter, a buffer or a submodule."""


Kind = TensorFacts | ModuleInstance | ModuleMember | None

_MEMBER = ModuleMember()
_ANY_TENSOR = TensorFacts()

MODULE_BASES = frozenset(
    {
        "torch.nn.Module",
        "torch.nn.modules.module.Module",
        "lightning.LightningModule",
        "lightning.pytorch.LightningModule",
        "pytorch_lightning.LightningModule",
    }
)
TENSOR_TYPES = {
    "torch.Tensor": _ANY_TENSOR,
    "torch.nn.Parameter": _ANY_TENSOR,
    "torch.nn.parameter.Parameter": _ANY_TENSOR,
    "torch.FloatTensor": TensorFacts(floating=True),
    "torch.DoubleTensor": TensorFacts(floating=True),
    "torch.HalfTensor": TensorFacts(floating=True),
    "torch.LongTensor": TensorFacts(floating=False),
    "torch.IntTensor": TensorFacts(floating=False),
    "torch.BoolTensor": TensorFacts(floating=False),
    "torch.ByteTensor": TensorFacts(floating=False),
}
# Modules whose lowercase functions return tensors.
_TENSOR_NAMESPACES = frozenset(
    {"torch", "torch.nn.functional", "torch.linalg", "torch.fft", "torch.special", "torch.sparse"}
)
# Lowercase torch functions that do not return tensors (the ones scripts commonly call).
_NOT_TENSOR_FUNCTIONS = frozenset(
    f"torch.{name}"
    for name in (
        "device", "dtype", "finfo", "iinfo", "no_grad", "enable_grad", "inference_mode",
        "set_grad_enabled", "is_grad_enabled", "compile", "load", "save", "manual_seed", "seed",
        "initial_seed", "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
        "set_deterministic_debug_mode", "set_default_dtype", "get_default_dtype",
        "set_default_device", "is_tensor", "is_floating_point", "is_complex", "numel",
        "autocast", "set_num_threads", "get_num_threads", "set_num_interop_threads",
        "set_printoptions", "set_float32_matmul_precision", "typename", "result_type",
        "promote_types", "can_cast", "broadcast_shapes", "vmap", "cond", "export",
    )
)  # fmt: skip
_SHAPE_FACTORIES = frozenset(f"torch.{n}" for n in ("randn", "rand", "zeros", "ones", "empty"))
_LIKE_FACTORIES = frozenset(
    f"torch.{n}_like" for n in ("zeros", "ones", "empty", "full", "rand", "randn", "randint")
)
_QUANTIZERS = frozenset(
    f"torch.{n}"
    for n in ("quantize_per_tensor", "quantize_per_channel", "quantize_per_tensor_dynamic")
)
# torch.nn.functional calls whose output has the input's shape.
_SHAPE_KEEPING_FUNCTIONAL = frozenset(
    f"torch.nn.functional.{n}"
    for n in (
        "relu", "gelu", "silu", "elu", "leaky_relu", "sigmoid", "tanh", "softmax", "log_softmax",
        "dropout", "normalize", "layer_norm", "batch_norm", "group_norm", "interpolate", "pad",
    )
)  # fmt: skip
# Tensor methods and attributes that leave torch (or are not tensors).
_NOT_TENSOR_METHODS = frozenset(
    (
        "numpy", "tolist", "item", "size", "dim", "ndimension", "numel", "nelement",
        "element_size", "stride", "data_ptr", "storage", "untyped_storage", "is_contiguous",
        "is_floating_point", "is_complex", "get_device", "backward", "register_hook", "equal",
        "__array__", "__len__", "type", "storage_offset",
    )
)  # fmt: skip
_TENSOR_ATTRIBUTES = frozenset(
    {"T", "mT", "H", "mH", "data", "grad", "real", "imag", "values", "indices"}
)
_FLOAT_METHODS = frozenset(
    {"float", "double", "half", "bfloat16", "mean", "softmax", "log_softmax", "sigmoid", "exp"}
)
_INTEGER_METHODS = frozenset(
    {"long", "int", "short", "byte", "char", "bool", "argmax", "argmin", "argsort", "nonzero"}
)
# Methods whose result has the receiver's number of dimensions.
_NDIM_KEEPING_METHODS = frozenset(
    (
        "cuda", "cpu", "to", "detach", "detach_", "clone", "contiguous", "requires_grad_",
        "pin_memory", "float", "double", "half", "bfloat16", "long", "int", "bool", "abs",
        "neg", "exp", "log", "sqrt", "sigmoid", "tanh", "relu", "softmax", "log_softmax",
        "permute", "transpose", "flip", "roll", "masked_fill", "clamp", "add", "sub", "mul",
        "div", "pow", "type_as", "nan_to_num", "square",
    )
)  # fmt: skip
# Methods that keep an index tensor's values as they are (a permutation stays one).
_DISTINCT_KEEPING_METHODS = frozenset(
    {"cuda", "cpu", "to", "detach", "clone", "contiguous", "pin_memory", "long"}
)
# Methods whose result may be on another device than the receiver.
_MOVING_METHODS = frozenset({"cuda", "to", "type", "xpu", "mps"})
# Methods that keep a tensor's values (its layout or device may change).
_WHOLE_KEEPING_METHODS = frozenset(
    (
        "cuda", "cpu", "to", "detach", "clone", "contiguous", "pin_memory", "permute",
        "transpose", "flip", "roll", "view", "reshape", "expand", "unsqueeze", "squeeze",
        "flatten", "abs", "neg",
    )
)  # fmt: skip
_EINOPS = frozenset({"einops.rearrange", "einops.repeat", "einops.reduce"})
_ORDERING = (
    cst.Equal, cst.NotEqual, cst.LessThan, cst.LessThanEqual, cst.GreaterThan,
    cst.GreaterThanEqual,
)  # fmt: skip
# Module methods that return the module itself.
_MODULE_RETURNING = frozenset(
    {"cuda", "cpu", "to", "train", "eval", "float", "double", "half", "requires_grad_", "type"}
)


_NOT_TENSOR_NODES = (
    cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.Integer, cst.Float,
    cst.Imaginary, cst.List, cst.Tuple, cst.Dict, cst.Set, cst.ListComp, cst.SetComp,
    cst.DictComp, cst.GeneratorExp, cst.Lambda,
)  # fmt: skip


@dataclass
class _Class:
    is_module: bool
    # ``self.<attr>`` assignments seen so far in the class's methods.
    attributes: dict[str, Kind] = field(default_factory=dict)


@dataclass
class _Function:
    bindings: dict[str, Kind]
    cls: _Class | None
    self_name: str | None


class Tensors:
    """The likely tensors of one module, updated as the traversal goes."""

    def __init__(self, names: Names) -> None:
        self.names = names
        self._module_scope: dict[str, Kind] = {}
        self._functions: list[_Function] = []
        # Each enclosing class, with how many functions enclosed it (to tell methods from
        # functions nested in methods).
        self._classes: list[tuple[_Class, int]] = []
        self._module_classes: set[str] = set()

    # -- traversal events ----------------------------------------------------------------------

    def enter_class(self, node: cst.ClassDef) -> None:
        is_module = any(self._is_module_class(base.value) for base in node.bases)
        if is_module:
            qualified = self.names.qualified_name(node.name)
            self._module_classes.add(qualified or node.name.value)
        self._classes.append((_Class(is_module), len(self._functions)))

    def leave_class(self) -> None:
        self._classes.pop()

    def enter_function(self, node: cst.FunctionDef | cst.Lambda) -> None:
        """A new scope: a function (a method when directly in a class body) or a lambda."""
        cls = self._method_class() if type(node) is cst.FunctionDef else None
        outer = self._functions[-1] if self._functions else None
        params = [*node.params.posonly_params, *node.params.params]
        self_name: str | None = None
        if cls is not None and params and not _is_static(node):
            self_name = params[0].name.value
            params = params[1:]
        elif outer is not None:
            cls, self_name = outer.cls, outer.self_name
        bindings: dict[str, Kind] = {}
        is_forward = (
            cls is not None
            and cls.is_module
            and type(node) is cst.FunctionDef
            and node.name.value == "forward"
        )
        for param in [*params, *node.params.kwonly_params]:
            kind: Kind = None
            if param.annotation is not None:
                kind = self._annotated(param.annotation.annotation)
            elif is_forward:
                kind = _ANY_TENSOR
            bindings[param.name.value] = kind
        for star in (node.params.star_arg, node.params.star_kwarg):
            if type(star) is cst.Param:
                bindings[star.name.value] = None
        if self_name is not None:
            bindings[self_name] = None
        self._functions.append(_Function(bindings, cls, self_name))

    def leave_function(self) -> None:
        self._functions.pop()

    def bind(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        """Record ``target = value`` (a None value: bound to something unknown)."""
        if value is None:
            self._bind_kind(target, None)
            return
        parts = self._parts(value)
        if parts is not None and isinstance(target, cst.Tuple | cst.List):
            # ``values, counts = torch.unique(x, return_counts=True)``,
            # ``values, indices = torch.topk(x, k)``: each part's facts.
            elements = target.elements
            if len(elements) == len(parts) and not any(
                type(e) is cst.StarredElement for e in elements
            ):
                for element, facts in zip(elements, parts, strict=True):
                    self._bind_kind(element.value, facts)
                return
        kind = self.kind(value)
        if (
            kind is None
            and self._is_module_attribute(target)
            and not self._plainly_not_tensor(value)
        ):
            # ``self.weight = weight``: an nn.Module attribute stays a likely tensor (or
            # submodule) unless it is given something that plainly is not one.
            kind = _MEMBER
        self._bind_kind(target, kind)

    def declare(self, target: cst.BaseExpression, annotation: cst.BaseExpression) -> None:
        """``x: torch.Tensor`` without a value."""
        if type(target) is cst.Name:
            self._scope()[target.value] = self._annotated(annotation)

    def _bind_kind(self, target: cst.BaseExpression, kind: Kind) -> None:
        if type(target) is cst.Name:
            self._scope()[target.value] = kind
        elif isinstance(target, cst.Tuple | cst.List):
            # ``values, indices = torch.sort(x)``: each part of a tensor result is a tensor.
            part: Kind = _ANY_TENSOR if isinstance(kind, TensorFacts) else None
            for element in target.elements:
                inner = element.value
                self._bind_kind(inner, None if type(element) is cst.StarredElement else part)
        elif type(target) is cst.Attribute and self._is_self(target.value):
            cls = self._functions[-1].cls if self._functions else None
            if cls is not None:
                cls.attributes[target.attr.value] = kind

    # -- queries -------------------------------------------------------------------------------

    def facts(self, expr: cst.BaseExpression) -> TensorFacts | None:
        """What is known of ``expr`` if it is likely a tensor, else None."""
        kind = self.kind(expr)
        if isinstance(kind, ModuleMember):
            return _ANY_TENSOR
        return kind if isinstance(kind, TensorFacts) else None

    def is_module_base(self, base: cst.BaseExpression) -> bool:
        """Whether a class with this base is an ``nn.Module``."""
        return self._is_module_class(base)

    def module_instance(self, expr: cst.BaseExpression) -> ModuleInstance | None:
        kind = self.kind(expr)
        return kind if isinstance(kind, ModuleInstance) else None

    def kind(self, expr: cst.BaseExpression) -> Kind:
        # ``type(...) is``: concrete node classes have no subclasses; isinstance goes through abc.
        if type(expr) is cst.Name:
            return self._lookup(expr)
        if type(expr) is cst.Attribute:
            return self._attribute(expr)
        if type(expr) is cst.Call:
            return self._call(expr)
        if type(expr) is cst.BinaryOperation:
            return self._arithmetic(expr)
        if type(expr) is cst.UnaryOperation:
            return self.facts(expr.expression)
        if type(expr) is cst.Comparison:
            return self._comparison(expr)
        if type(expr) is cst.NamedExpr:
            return self.kind(expr.value)
        if type(expr) is cst.Subscript:
            parts = self._parts(expr.value)
            index = _single_index(expr)
            if parts is not None and index is not None and -len(parts) <= index < len(parts):
                return parts[index]
            base = self.facts(expr.value)
            if base is None:
                return None
            if _slices_only(expr):
                # ``torch.randperm(n)[:k]``: basic slicing keeps the dimensions, and a part of
                # an index distinct along a dimension is still distinct along it.
                return TensorFacts(
                    base.ndim,
                    base.floating,
                    whole=base.whole,
                    distinct=base.distinct,
                    cpu=base.cpu,
                )
            # Indexing stays on the tensor's device.
            return TensorFacts(floating=base.floating, whole=base.whole, cpu=base.cpu)
        if type(expr) is cst.IfExp:
            body, orelse = self.facts(expr.body), self.facts(expr.orelse)
            if body is None or orelse is None:
                return None
            return body if body == orelse else _ANY_TENSOR
        return None

    # -- helpers -------------------------------------------------------------------------------

    def _scope(self) -> dict[str, Kind]:
        return self._functions[-1].bindings if self._functions else self._module_scope

    def _lookup(self, name: cst.Name) -> Kind:
        for function in reversed(self._functions):
            if name.value in function.bindings:
                return function.bindings[name.value]
        return self._module_scope.get(name.value)

    def _is_module_attribute(self, target: cst.BaseExpression) -> bool:
        if not (type(target) is cst.Attribute and self._is_self(target.value)):
            return False
        cls = self._functions[-1].cls
        return cls is not None and cls.is_module

    def _plainly_not_tensor(self, value: cst.BaseExpression) -> bool:
        """A literal, a display, or a call of something imported from outside torch."""
        if isinstance(value, _NOT_TENSOR_NODES):
            return True
        if type(value) is cst.Name and value.value in ("True", "False", "None"):
            return True
        if type(value) is cst.Call:
            qualified = self.names.qualified_name(value.func)
            return qualified is not None and not qualified.startswith("torch.")
        return False

    def _is_self(self, expr: cst.BaseExpression) -> bool:
        if not self._functions or type(expr) is not cst.Name:
            return False
        function = self._functions[-1]
        return function.self_name is not None and expr.value == function.self_name

    def _method_class(self) -> _Class | None:
        """The class a function being entered is a method of, if it sits directly in a
        class body."""
        if not self._classes:
            return None
        cls, depth = self._classes[-1]
        return cls if depth == len(self._functions) else None

    def _is_module_class(self, base: cst.BaseExpression) -> bool:
        qualified = self.names.qualified_name(base)
        if qualified is None:
            return type(base) is cst.Name and base.value in self._module_classes
        qualified = canonical(qualified)
        if qualified in MODULE_BASES or qualified in self._module_classes:
            return True
        # Any torch.nn class (``nn.Sequential``, ``nn.Linear``) is a Module.
        return qualified.startswith("torch.nn.") and qualified.rsplit(".", 1)[1][:1].isupper()

    def _annotated(self, annotation: cst.BaseExpression) -> Kind:
        if type(annotation) is cst.SimpleString:
            text = evaluated(annotation)
            if not isinstance(text, str):
                return None
            try:
                annotation = cst.parse_expression(text)
            except cst.ParserSyntaxError:
                return None
        if type(annotation) is cst.BinaryOperation:
            # ``Tensor | None``
            return self._annotated(annotation.left) or self._annotated(annotation.right)
        if type(annotation) is cst.Subscript:
            # ``Optional[Tensor]``
            if self.names.qualified_name(annotation.value) in ("typing.Optional", "typing.Union"):
                for element in annotation.slice:
                    if type(element.slice) is cst.Index:
                        found = self._annotated(element.slice.value)
                        if found is not None:
                            return found
            return None
        qualified = self.names.qualified_name(annotation)
        return TENSOR_TYPES.get(qualified) if qualified else None

    def _attribute(self, expr: cst.Attribute, known: tuple[Kind] | None = None) -> Kind:
        """``known``: the kind of ``expr.value`` where the caller has it already."""
        if self.names.qualified_name(expr) is not None:
            # An imported name (``torch.pi``, ``np.random``): not a local tensor.
            return None
        name = expr.attr.value
        if self._is_self(expr.value):
            cls = self._functions[-1].cls
            if cls is not None and cls.is_module:
                return cls.attributes.get(name, _MEMBER)
            return cls.attributes.get(name) if cls is not None else None
        if name in ("values", "indices"):
            parts = self._parts(expr.value)
            if parts is not None and len(parts) == 2:
                # ``torch.topk(x, k).indices``
                return parts[0] if name == "values" else parts[1]
        base = known[0] if known is not None else self.kind(expr.value)
        if isinstance(base, ModuleInstance | ModuleMember):
            return _MEMBER
        if isinstance(base, TensorFacts):
            return _ANY_TENSOR if name in _TENSOR_ATTRIBUTES else None
        return None

    def _call(self, call: cst.Call) -> Kind:
        func = call.func
        qualified = self.names.qualified_name(func)
        if qualified in _EINOPS:
            return self._einops(call)
        if qualified is not None:
            return self._torch_call(canonical(qualified), call)
        if type(func) is cst.Attribute:
            base = self.kind(func.value)
            method = func.attr.value
            if isinstance(base, ModuleInstance):
                if method in _MODULE_RETURNING:
                    return base
                return _ANY_TENSOR if method == "forward" else None
            if isinstance(base, ModuleMember):
                if method in _MODULE_RETURNING:
                    return _MEMBER
                return self._tensor_method(_ANY_TENSOR, method, call)
            if isinstance(base, TensorFacts):
                return self._tensor_method(base, method, call)
            # The receiver's kind once: asking again doubled the work at every call of a
            # chain (``x.abs().abs()...``).
            callee = self._attribute(func, (base,))
        else:
            callee = self.kind(func)
        if isinstance(callee, ModuleInstance | ModuleMember):
            # Calling a built module (``model(x)``, ``self.encoder(x)``) returns its output.
            return _ANY_TENSOR
        return None

    def _torch_call(self, qualified: str, call: cst.Call) -> Kind:
        if qualified in self._module_classes or (
            qualified.startswith("torch.nn.")
            and qualified.rsplit(".", 1)[1][:1].isupper()
            and qualified not in TENSOR_TYPES
        ):
            return ModuleInstance(qualified, call)
        if qualified in ("torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.Tensor"):
            first = argument(call, "data", 0)
            return (self.facts(first.value) if first else None) or _ANY_TENSOR
        namespace, _, function = qualified.rpartition(".")
        if namespace not in _TENSOR_NAMESPACES or not function[:1].islower():
            return None
        if qualified in _NOT_TENSOR_FUNCTIONS:
            return None
        if qualified == "torch.from_numpy":
            # Shares the array's memory: on the CPU whatever the default device.
            return TensorFacts(cpu=True)
        return self._factory(qualified, call)

    def _factory(self, qualified: str, call: cst.Call) -> TensorFacts:
        found = self._dtype(call)
        # ``dtype=x.dtype``: given, but not known here; without it, each factory's default.
        given = found is not None or argument(call, "dtype") is not None

        def dtype(default: bool | None) -> bool | None:
            return found if given else default

        if qualified in _QUANTIZERS:
            return TensorFacts(quantized=True)
        if qualified in _SHAPE_FACTORIES:
            return TensorFacts(_shape_ndim(call), dtype(True))
        if qualified == "torch.full":
            size = argument(call, "size", 0)
            fill = argument(call, "fill_value", 1)
            floating = dtype(number_is_float(fill.value) if fill is not None else None)
            return TensorFacts(_sequence_length(size.value) if size else None, floating)
        if qualified == "torch.randint":
            size = argument(call, "size") or _last_positional(call)
            return TensorFacts(_sequence_length(size.value) if size else None, dtype(False))
        if qualified == "torch.randperm":
            return TensorFacts(1, dtype(False), distinct=0)
        if qualified in ("torch.linspace", "torch.logspace"):
            return TensorFacts(1, dtype(True))
        if qualified == "torch.eye":
            return TensorFacts(2, dtype(True))
        if qualified == "torch.arange":
            floats = [number_is_float(arg.value) for arg in call.args if arg.keyword is None]
            inferred = (
                True
                if any(floats)
                else (False if floats and all(f is False for f in floats) else None)
            )
            # Cast to integers, a range with a fractional step may repeat values.
            step = argument(call, "step", 2)
            fractional = step is not None and number_is_float(step.value) is not False
            floating = dtype(inferred)
            distinct = None if floating is not True and given and fractional else 0
            return TensorFacts(1, floating, distinct=distinct)
        if qualified == "torch.argsort":
            first = argument(call, "input", 0)
            base = (self.facts(first.value) if first else None) or _ANY_TENSOR
            return TensorFacts(base.ndim, False, distinct=_dim(call, 1))
        if qualified in ("torch.unique", "torch.unique_consecutive"):
            parts = self._parts(call)
            if parts is not None:
                return _ANY_TENSOR
            first = argument(call, "input", 0)
            base = (self.facts(first.value) if first else None) or _ANY_TENSOR
            return _unique_values(call, base, qualified == "torch.unique", 1)
        if qualified in ("torch.tensor", "torch.as_tensor"):
            data = argument(call, "data", 0)
            ndim, floating = _literal_data(data.value) if data else (None, None)
            return TensorFacts(ndim, dtype(floating))
        if qualified in _LIKE_FACTORIES:
            first = argument(call, "input", 0)
            base = (self.facts(first.value) if first else None) or _ANY_TENSOR
            floating = (
                True if qualified in ("torch.rand_like", "torch.randn_like") else base.floating
            )
            return TensorFacts(base.ndim, dtype(floating))
        if qualified in _SHAPE_KEEPING_FUNCTIONAL:
            first = argument(call, "input", 0)
            base = (self.facts(first.value) if first else None) or _ANY_TENSOR
            whole = None
            if qualified == "torch.nn.functional.pad" and base.whole:
                # Padded with zeros, or with another whole number (``value=False``).
                fill = argument(call, "value", 3)
                whole = fill is None or number_is_float(fill.value) is False or None
            return TensorFacts(base.ndim, base.floating, whole=whole)
        return _ANY_TENSOR

    def _tensor_method(self, receiver: TensorFacts, method: str, call: cst.Call) -> Kind:
        if method in _NOT_TENSOR_METHODS:
            return None
        if method == "argsort":
            return TensorFacts(receiver.ndim, False, distinct=_dim(call, 0))
        if method in ("unique", "unique_consecutive") and self._parts(call) is None:
            return _unique_values(call, receiver, method == "unique", 0)
        distinct = receiver.distinct if method in _DISTINCT_KEEPING_METHODS else None
        if method == "long" and receiver.floating is not False:
            distinct = None
        if method == "to" and self._dtype(call, positional=True) is not None:
            distinct = None
        # A method's result is on its receiver's device, but for those that move it.
        cpu = True if method == "cpu" else (None if method in _MOVING_METHODS else receiver.cpu)
        receiver = replace(receiver, distinct=distinct, cpu=cpu)
        ndim = receiver.ndim if method in _NDIM_KEEPING_METHODS else None
        if method in ("view", "reshape", "expand"):
            ndim = _shape_ndim(call)
        elif method == "unsqueeze" and receiver.ndim is not None:
            ndim = receiver.ndim + 1
        floating = receiver.floating
        whole = receiver.whole if method in _WHOLE_KEEPING_METHODS else None
        if method in _FLOAT_METHODS:
            floating = True
            if method in ("float", "double") and receiver.whole:
                # Whole numbers stay exact in float32/float64.
                whole = True
        elif method in _INTEGER_METHODS:
            floating = False
            whole = True
        elif method in ("to", "type"):
            dtype = self._dtype(call, positional=True)
            floating = dtype if dtype is not None else receiver.floating
            if dtype is not None:
                whole = True if dtype is False else None
        return replace(receiver, ndim=ndim, floating=floating, whole=whole)

    def argument_facts(self, expr: cst.BaseExpression) -> TensorFacts | None:
        """``facts`` of an argument that a torch op takes as a tensor: there an einops call
        (``F.cross_entropy(rearrange(logits, "b n c -> b c n"), target)``) is a tensor even
        when its input is not known to be one."""
        found = self.facts(expr)
        if found is None and type(expr) is cst.Call:
            if self.names.qualified_name(expr.func) in _EINOPS:
                return self._einops(expr, tensor=True)
        return found

    def _einops(self, call: cst.Call, tensor: bool = False) -> TensorFacts | None:
        """``rearrange(x, "b n c -> b c n")`` (or ``repeat``/``reduce``) of a tensor (or of
        anything, with ``tensor``): as many dimensions as the pattern's output names, when
        it names them all (no ``...``)."""
        first = argument(call, "tensor", 0)
        base = self.facts(first.value) if first is not None else None
        pattern = argument(call, "pattern", 1)
        text = literal_str(pattern.value) if pattern is not None else None
        if base is None:
            if not tensor:
                # einops takes numpy arrays too.
                return None
            base = _ANY_TENSOR
        if not isinstance(text, str) or text.count("->") != 1:
            return TensorFacts(floating=base.floating)
        output = text.split("->")[1]
        if "..." in output or "…" in output:
            return TensorFacts(floating=base.floating)
        # A parenthesised group is one dimension.
        ndim = len(re.findall(r"\([^()]*\)|[^\s()]+", output))
        return TensorFacts(ndim, base.floating)

    def _comparison(self, expr: cst.Comparison) -> Kind:
        """``out == eos``, ``x > 0``: a boolean tensor when one side is a tensor."""
        if len(expr.comparisons) != 1:
            return None
        target = expr.comparisons[0]
        if not isinstance(target.operator, _ORDERING):
            return None
        sides = [self.facts(side) for side in (expr.left, target.comparator)]
        known = [facts for facts in sides if facts is not None]
        if not known:
            return None
        # Broadcasting: the result has the most dimensions of its sides (unknown where a
        # side that is not a number may be a tensor of unknown shape).
        ndims = [facts.ndim for facts in known]
        plain = all(
            facts is not None or number_is_float(side) is not None
            for facts, side in zip(sides, (expr.left, target.comparator), strict=True)
        )
        ndim = max(n for n in ndims if n is not None) if plain and None not in ndims else None
        sides_cpu = _sides_on_cpu((expr.left, target.comparator), sides)
        return TensorFacts(ndim, False, whole=True, cpu=sides_cpu)

    def _arithmetic(self, expr: cst.BinaryOperation) -> Kind:
        left, right = self.facts(expr.left), self.facts(expr.right)
        if left is None and right is None:
            return None
        cpu = _sides_on_cpu((expr.left, expr.right), (left, right))
        if type(expr.operator) is cst.MatrixMultiply:
            return TensorFacts(cpu=cpu)
        known = [f for f in (left, right) if f is not None]
        ndims = [f.ndim for f in known]
        ndim = max(n for n in ndims if n is not None) if all(n is not None for n in ndims) else None
        if type(expr.operator) is cst.Divide:
            return TensorFacts(ndim, True, cpu=cpu)
        floats = [f.floating for f in known]
        # Each side's facts once: asking again doubled the work at every level of a chain
        # (``a & b & c & ...``), 2**48 calls for a 48-term mask.
        for side, facts in ((expr.left, left), (expr.right, right)):
            if facts is None:
                floats.append(number_is_float(side))
        floating = True if any(floats) else (False if all(f is False for f in floats) else None)
        return TensorFacts(ndim, floating, cpu=cpu)

    def _parts(self, value: cst.BaseExpression) -> list[TensorFacts] | None:
        """The parts of a call that returns a tuple of tensors, when they are known:
        ``topk``/``sort`` (values, and indices distinct along the dimension they ran over),
        ``unique`` with ``return_inverse``/``return_counts``."""
        if type(value) is not cst.Call:
            return None
        func = value.func
        qualified = self.names.qualified_name(func)
        short: str | None = None
        receiver: cst.BaseExpression | None = None
        if qualified in ("torch.topk", "torch.sort"):
            short = qualified.rpartition(".")[2]
            first = argument(value, "input", 0)
            receiver = first.value if first is not None else None
            shift = 1
        elif (
            qualified is None
            and type(func) is cst.Attribute
            and func.attr.value in ("topk", "sort")
            and self.facts(func.value) is not None
        ):
            short, receiver, shift = func.attr.value, func.value, 0
        if short is not None:
            base = (self.facts(receiver) if receiver is not None else None) or _ANY_TENSOR
            # ``topk(input, k, dim)``, ``sort(input, dim)``
            dim = _dim(value, shift + (1 if short == "topk" else 0))
            values = TensorFacts(base.ndim, base.floating)
            return [values, TensorFacts(base.ndim, False, distinct=dim)]
        return self._unique_parts(value)

    def _unique_parts(self, value: cst.Call) -> list[TensorFacts] | None:
        """``torch.unique(x, return_inverse=..., return_counts=...)`` (or ``x.unique(...)``,
        ``unique_consecutive``) returning a tuple: the values (as ``x``), then the inverse
        indices and the counts, which are integers."""
        func = value.func
        qualified = self.names.qualified_name(func)
        receiver: cst.BaseExpression | None = None
        if qualified in ("torch.unique", "torch.unique_consecutive"):
            first = argument(value, "input", 0)
            receiver = first.value if first is not None else None
        elif (
            qualified is None
            and type(func) is cst.Attribute
            and func.attr.value in ("unique", "unique_consecutive")
            and self.facts(func.value) is not None
        ):
            receiver = func.value
        else:
            return None
        flags = []
        for name in ("return_inverse", "return_counts"):
            arg = argument(value, name)
            flag = literal_bool(arg.value) if arg is not None else False
            if flag is None:
                return None
            flags.append(flag)
        if not any(flags):
            return None
        base = (self.facts(receiver) if receiver is not None else None) or _ANY_TENSOR
        unique = qualified == "torch.unique" or (
            qualified is None and type(func) is cst.Attribute and func.attr.value == "unique"
        )
        shift = 1 if qualified is not None else 0
        values = _unique_values(value, base, unique, shift, counted=True)
        return [values, *(TensorFacts(None, False) for f in flags if f)]

    def _dtype(self, call: cst.Call, positional: bool = False) -> bool | None:
        """Floating (True), integer (False) or unknown, from ``dtype=`` (or, for ``.to()``,
        any argument naming a dtype)."""
        candidates = [
            arg for arg in call.args if arg.keyword is not None and arg.keyword.value == "dtype"
        ]
        if positional:
            candidates += [arg for arg in call.args if arg.keyword is None]
        for arg in candidates:
            qualified = self.names.qualified_name(arg.value)
            if qualified in FLOATING_DTYPES:
                return True
            if qualified in INTEGER_DTYPES:
                return False
        return None


def _dim(call: cst.Call, position: int) -> int | None:
    """The literal ``dim`` argument of a call whose default is -1 (``topk``, ``sort``,
    ``argsort``); None when it is not a literal."""
    arg = argument(call, "dim", position)
    if arg is None:
        return -1
    return literal_int(arg.value)


def _unique_values(
    call: cst.Call, base: TensorFacts, whole: bool, shift: int, counted: bool = False
) -> TensorFacts:
    """The values ``unique`` returns (``shift``: 1 when the input is the first argument):
    1-D and distinct when no ``dim`` is given and the call returns them alone (or, with
    ``counted``, first in a tuple whose parts are known). ``unique_consecutive`` only
    drops repeats that follow each other: not distinct."""
    # ``unique(input, sorted, return_inverse, return_counts, dim)``;
    # ``unique_consecutive(input, return_inverse, return_counts, dim)``.
    flags = (2, 3) if whole else (1, 2)
    if argument(call, "dim", shift + flags[1]) is not None:
        return TensorFacts(None, base.floating)
    if not counted:
        for name, position in zip(("return_inverse", "return_counts"), flags, strict=True):
            arg = argument(call, name, shift + position - 1)
            if arg is not None and literal_bool(arg.value) is not False:
                return TensorFacts(None, base.floating)
    return TensorFacts(1, base.floating, distinct=0 if whole else None)


def _single_index(expr: cst.Subscript) -> int | None:
    """``x[1]``: the literal index, if that is the subscript."""
    if len(expr.slice) != 1 or type(expr.slice[0].slice) is not cst.Index:
        return None
    return literal_int(expr.slice[0].slice.value)


def _sides_on_cpu(
    sides: Sequence[cst.BaseExpression], facts: Sequence[TensorFacts | None]
) -> bool | None:
    """Whether an operation of ``sides`` runs on the CPU: each side a tensor known to be
    there or a number (a side that may be a tensor elsewhere leaves it open)."""
    for side, found in zip(sides, facts, strict=True):
        if found is None:
            if number_is_float(side) is None:
                return None
        elif found.cpu is not True:
            return None
    return True if any(found is not None for found in facts) else None


def _slices_only(expr: cst.Subscript) -> bool:
    """``x[:k]``, ``x[:, 1:]``: every part of the subscript a slice (no index, ``None`` or
    ``...``, which add or drop dimensions, and no tensor index, which gathers)."""
    return all(type(part.slice) is cst.Slice for part in expr.slice)


def _is_static(node: cst.FunctionDef | cst.Lambda) -> bool:
    if isinstance(node, cst.Lambda):
        return True
    return any(
        type(d.decorator) is cst.Name and d.decorator.value in ("staticmethod", "classmethod")
        for d in node.decorators
    )


def _shape_ndim(call: cst.Call) -> int | None:
    """Dimensions given as ``f(2, 3, 4)``, ``f((2, 3, 4))`` or ``f(size=(2, 3))``."""
    size = argument(call, "size")
    if size is not None:
        return _sequence_length(size.value)
    positional = [arg for arg in call.args if arg.keyword is None]
    if any(arg.star for arg in positional):
        return None
    if len(positional) == 1:
        single = _sequence_length(positional[0].value)
        if single is not None:
            return single
    return len(positional) or None


def _sequence_length(node: cst.BaseExpression) -> int | None:
    if isinstance(node, cst.Tuple | cst.List):
        if any(type(e) is cst.StarredElement for e in node.elements):
            return None
        return len(node.elements)
    return _leading_dims(node)


def _leading_dims(node: cst.BaseExpression) -> int | None:
    """``x.shape[:2]`` or ``x.size()[:2]``: the first dimensions of another tensor (2)."""
    if type(node) is not cst.Subscript or len(node.slice) != 1:
        return None
    sizes = node.value
    if type(sizes) is cst.Call and not sizes.args:
        sizes = sizes.func
        if not (type(sizes) is cst.Attribute and sizes.attr.value == "size"):
            return None
    elif not (type(sizes) is cst.Attribute and sizes.attr.value == "shape"):
        return None
    part = node.slice[0].slice
    if type(part) is not cst.Slice or part.step is not None or part.upper is None:
        return None
    if part.lower is not None and literal_int(part.lower) != 0:
        return None
    upper = literal_int(part.upper)
    return upper if upper is not None and upper > 0 else None


def _last_positional(call: cst.Call) -> cst.Arg | None:
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    return positional[-1] if positional else None


def _literal_data(node: cst.BaseExpression) -> tuple[int | None, bool | None]:
    """Dimensions and floating-ness of a nested list literal (``[[1.0, 2.0]]`` -> 2, True)."""
    if isinstance(node, cst.List | cst.Tuple):
        if not node.elements:
            return 1, None
        inner = [_literal_data(element.value) for element in node.elements]
        ndims = {ndim for ndim, _ in inner}
        # Ragged or unknown elements: the depth is not known.
        element = ndims.pop() if len(ndims) == 1 else None
        ndim = element + 1 if element is not None else None
        floats = [floating for _, floating in inner]
        floating = True if any(floats) else (False if all(f is False for f in floats) else None)
        return ndim, floating
    if type(node) is cst.Name and node.value in ("True", "False"):
        return 0, False
    floating = number_is_float(node)
    return (0, floating) if floating is not None else (None, None)
