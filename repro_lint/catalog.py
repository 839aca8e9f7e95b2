"""The nondeterministic-op catalog: which PyTorch ops are nondeterministic, when, and what
``torch.use_deterministic_algorithms(True)`` does with them, as typed, immutable data.

It is the single source for RPL401/RPL402, their documentation and the runtime verifier, so it
imports neither torch nor libcst. Conditions are small predicate objects over an abstract view
of one call (``CallView``): the rules feed them what the source says, the verifier can feed
them real tensors.

Reading an entry:

- ``history`` lists what each torch release does, from ``since`` on. The first period is the
  earliest release the catalog vouches for; an older target torch is not judged (no finding),
  except a release older than deterministic mode itself (1.7): the kernels 1.7 listed as
  having no deterministic implementation ran the same way before, uncaught.
  Where a release was not determined, the entry says so and the first period starts at 2.0,
  the oldest release this linter targets by default.
- ``scope`` says where the hazard is reported: ``CALL`` at the call or module construction;
  the others are not reported per call: ``PROGRAM`` ops are ubiquitous (convolutions,
  matmul, attention, plain indexing); RPL202 judges the program for the convolutions and the
  attention backends (which setting covers which: ``determinism.py``); ``BUILD`` ops are
  hazardous only with an optional kernel library, ``TRACED`` ops only when traced
  (``torch.compile``/export).
- ``correction`` records where this catalog departs from the project's reference research or
  from PyTorch's own docstring, and on what evidence.

Settings rather than ops are not catalogued here: ``cudnn.benchmark`` (RPL201),
``cudnn.deterministic`` / deterministic mode switched off (RPL203/RPL202),
``CUBLAS_WORKSPACE_CONFIG`` for cuBLAS and cuDNN RNNs (RPL204), the Inductor settings that
deterministic mode also switches (RPL205), ``fill_uninitialized_memory`` (uninitialised memory
is not an op hazard) and in-place writes to overlapping memory (undetectable statically).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Protocol

from repro_lint.torch_versions import TorchVersion

# -- what a condition can know about one argument -----------------------------------------------


class _Sentinel(enum.Enum):
    MISSING = "missing"
    UNKNOWN = "unknown"
    MAYBE = "maybe"


# The argument was not passed: the parameter's default applies.
MISSING = _Sentinel.MISSING
# The argument was passed, but what it is cannot be told.
UNKNOWN = _Sentinel.UNKNOWN
# The argument may or may not be passed (``f(*args)``, ``f(**kwargs)``).
MAYBE = _Sentinel.MAYBE


@dataclass(frozen=True, slots=True)
class Named:
    """An argument that is a dotted name resolved through imports (``torch.float64``)."""

    qualified: str


@dataclass(frozen=True, slots=True)
class TensorFacts:
    """What is known of a tensor argument; None means not known."""

    ndim: int | None = None
    floating: bool | None = None
    # Holds whole numbers exactly: an integer or boolean tensor, or one cast from such to
    # float32/float64 (``mask.float()``), whose sums are exact in any order.
    whole: bool | None = None
    quantized: bool | None = None
    sparse: bool | None = None
    # The dimension along which no value repeats (as written: -1 is the last), for index
    # tensors that are distinct by construction (``topk``/``sort``/``argsort`` indices,
    # ``randperm``, ``arange``, ``unique``).
    distinct: int | None = None
    # Known to be on the CPU (``torch.from_numpy``, ``.cpu()``, and what indexing, casts and
    # arithmetic with numbers make of such a tensor): a CUDA-only hazard cannot arise.
    cpu: bool | None = None


# A plain literal (str, int, float, bool, None, or a tuple of those), a Named, a TensorFacts,
# MISSING, UNKNOWN or MAYBE.
Value = object


class CallView(Protocol):
    """One call of a catalogued API, as a condition sees it."""

    def value(self, param: str) -> Value:
        """The argument bound to ``param`` (for a Tensor method, ``input`` is the tensor)."""
        ...


FLOATING_DTYPES = frozenset(
    f"torch.{name}"
    for name in (
        "float", "float32", "float64", "double", "float16", "half", "bfloat16",
        "complex64", "complex128", "cfloat", "cdouble", "complex32", "chalf",
    )
)  # fmt: skip
# Floating dtypes that hold the partial sums of whole numbers exactly (up to 2**24).
EXACT_WHOLE_DTYPES = frozenset(
    f"torch.{name}" for name in ("float", "float32", "float64", "double")
)
INTEGER_DTYPES = frozenset(
    f"torch.{name}"
    for name in (
        "int", "int8", "int16", "int32", "int64", "long", "short", "uint8", "uint16",
        "uint32", "uint64", "bool",
    )
)  # fmt: skip


def _subject(param: str) -> str:
    # For a Tensor method the input is the tensor itself, not an argument named ``input``.
    return "the input" if param == "input" else f"`{param}`"


def _is_literal(value: Value) -> bool:
    return value is None or isinstance(value, str | int | float | bool | tuple)


# -- conditions ---------------------------------------------------------------------------------
# ``evaluate`` answers True, False or None (cannot tell). A rule reports a call unless the
# answer is False, so a leaf that must be *proven* (a spatial input) answers False when unsure.


class Condition:
    """A predicate over one call; subclasses are the leaves and ``AllOf``."""

    def evaluate(self, call: CallView) -> bool | None:
        raise NotImplementedError

    def params(self) -> frozenset[str]:
        """The parameters the condition reads."""
        raise NotImplementedError

    def describe(self) -> str:
        """The condition in words, for documentation and for undecided findings."""
        raise NotImplementedError

    def undecided(self, call: CallView) -> tuple[str, ...]:
        """Descriptions of the leaves that cannot be decided for this call (and are worth
        mentioning in a message)."""
        return (self.describe(),) if self.evaluate(call) is None and self.mention else ()

    @property
    def mention(self) -> bool:
        return True


@dataclass(frozen=True, slots=True)
class Always(Condition):
    def evaluate(self, call: CallView) -> bool | None:
        return True

    def params(self) -> frozenset[str]:
        return frozenset()

    def describe(self) -> str:
        return "always"


ALWAYS = Always()


@dataclass(frozen=True, slots=True)
class Given(Condition):
    """The argument is passed and is not the literal None (``bincount(x, weights=w)``)."""

    param: str

    def evaluate(self, call: CallView) -> bool | None:
        value = call.value(self.param)
        if value is MAYBE:
            return None
        return value is not MISSING and value is not None

    def params(self) -> frozenset[str]:
        return frozenset({self.param})

    def describe(self) -> str:
        return f"`{self.param}` is given"


@dataclass(frozen=True, slots=True)
class OneOf(Condition):
    """The argument (or its default, when missing) is one of ``values``."""

    param: str
    values: tuple[object, ...]
    default: object

    def evaluate(self, call: CallView) -> bool | None:
        value = call.value(self.param)
        if value is MISSING:
            value = self.default
        if not _is_literal(value):
            return None
        return value in self.values

    def params(self) -> frozenset[str]:
        return frozenset({self.param})

    def describe(self) -> str:
        return f"`{self.param}` is " + " or ".join(repr(v) for v in self.values)


@dataclass(frozen=True, slots=True)
class IsTensor(Condition):
    """The argument is a tensor rather than a Python number (``scatter_(d, i, src)``)."""

    param: str

    def evaluate(self, call: CallView) -> bool | None:
        value = call.value(self.param)
        if isinstance(value, TensorFacts):
            return True
        if value is MISSING or _is_literal(value):
            return False
        return None

    def params(self) -> frozenset[str]:
        return frozenset({self.param})

    def describe(self) -> str:
        return f"`{self.param}` is a tensor"


@dataclass(frozen=True, slots=True)
class MayRepeat(Condition):
    """The index may hold a value twice where writes or adds would collide: False only
    for an index distinct by construction along the dimension the op indexes (``topk``
    indices scattered along the dimension ``topk`` ran over; a ``randperm`` or ``arange``
    given to ``index_add_``), True otherwise. With ``dim`` None the index is 1-D (the
    ``index_*`` ops) and any distinct 1-D index will do. Where the index's number of
    dimensions is unknown, a non-negative ``dim`` is taken to be the last one, along which
    ``topk``/``sort``/``argsort`` ran by default (``topk(logits, k)`` then
    ``scatter_(1, indices, values)``): code writes such indices back along the dimension
    they came from."""

    index: str = "index"
    dim: str | None = "dim"

    def evaluate(self, call: CallView) -> bool | None:
        facts = call.value(self.index)
        if not isinstance(facts, TensorFacts) or facts.distinct is None:
            return True
        if self.dim is None:
            return facts.ndim != 1
        dim = call.value(self.dim)
        if not isinstance(dim, int) or isinstance(dim, bool):
            return True
        if dim == facts.distinct:
            return False
        ndim = facts.ndim
        if ndim is None:
            return not (facts.distinct == -1 and dim >= 0)
        return not (-ndim <= dim < ndim) or dim % ndim != facts.distinct % ndim

    def params(self) -> frozenset[str]:
        return frozenset({self.index} | ({self.dim} if self.dim else set()))

    def describe(self) -> str:
        return f"`{self.index}` may repeat a value"

    @property
    def mention(self) -> bool:
        return False


@dataclass(frozen=True, slots=True)
class Floating(Condition):
    """The op works on floating-point (or complex) values: decided by an explicit ``dtype=``
    argument when there is one, else by what is known of the input."""

    param: str = "input"
    dtype_param: str | None = None
    # For an accumulation (a scan): whole numbers held in float32/float64 add up exactly in
    # any order, so they count as not floating.
    whole_exact: bool = False

    def evaluate(self, call: CallView) -> bool | None:
        facts = call.value(self.param)
        whole = (
            self.whole_exact
            and isinstance(facts, TensorFacts)
            and (facts.whole is True or facts.floating is False)
        )
        if self.dtype_param is not None:
            dtype = call.value(self.dtype_param)
            if isinstance(dtype, Named):
                if dtype.qualified in FLOATING_DTYPES:
                    return not (whole and dtype.qualified in EXACT_WHOLE_DTYPES)
                if dtype.qualified in INTEGER_DTYPES:
                    return False
        if whole:
            return False
        return facts.floating if isinstance(facts, TensorFacts) else None

    def params(self) -> frozenset[str]:
        return frozenset({self.param} | ({self.dtype_param} if self.dtype_param else set()))

    def describe(self) -> str:
        return f"{_subject(self.param)} is floating point"


@dataclass(frozen=True, slots=True)
class ProvablyInteger(Condition):
    """The input is known to hold integers (False when unsure)."""

    param: str = "input"

    def evaluate(self, call: CallView) -> bool | None:
        facts = call.value(self.param)
        return isinstance(facts, TensorFacts) and facts.floating is False

    def params(self) -> frozenset[str]:
        return frozenset({self.param})

    def describe(self) -> str:
        return f"{_subject(self.param)} is an integer tensor"


@dataclass(frozen=True, slots=True)
class NotInteger(Condition):
    """The tensor accumulated into is not known to hold integers: atomic adds of integers
    give the same sum in any order (True when unsure)."""

    param: str = "input"

    def evaluate(self, call: CallView) -> bool | None:
        return not ProvablyInteger(self.param).evaluate(call)

    def params(self) -> frozenset[str]:
        return frozenset({self.param})

    def describe(self) -> str:
        return f"{_subject(self.param)} is not an integer tensor"

    @property
    def mention(self) -> bool:
        return False


@dataclass(frozen=True, slots=True)
class ProvablyQuantized(Condition):
    """The tensor is known to be quantized (False when unsure)."""

    param: str = "input"

    def evaluate(self, call: CallView) -> bool | None:
        facts = call.value(self.param)
        return isinstance(facts, TensorFacts) and facts.quantized is True

    def params(self) -> frozenset[str]:
        return frozenset({self.param})

    def describe(self) -> str:
        return f"{_subject(self.param)} is a quantized tensor"


@dataclass(frozen=True, slots=True)
class ProvablySparse(Condition):
    """The tensor is known to be sparse (False when unsure; only a run can tell)."""

    param: str = "input"

    def evaluate(self, call: CallView) -> bool | None:
        facts = call.value(self.param)
        return isinstance(facts, TensorFacts) and facts.sparse is True

    def params(self) -> frozenset[str]:
        return frozenset({self.param})

    def describe(self) -> str:
        return f"{_subject(self.param)} is a sparse tensor"


@dataclass(frozen=True, slots=True)
class ProvablySpatial(Condition):
    """The input is known to have at least ``min_ndim`` dimensions (False when unsure)."""

    param: str = "input"
    min_ndim: int = 3

    def evaluate(self, call: CallView) -> bool | None:
        facts = call.value(self.param)
        return isinstance(facts, TensorFacts) and (facts.ndim or 0) >= self.min_ndim

    def params(self) -> frozenset[str]:
        return frozenset({self.param})

    def describe(self) -> str:
        return f"{_subject(self.param)} is spatial (at least {self.min_ndim}-D, e.g. N, C, H, W)"


@dataclass(frozen=True, slots=True)
class ProvablySpatialTarget(Condition):
    """Class-index targets known to have at least 2 dimensions (N, d1, ...): the input then
    has a class dimension besides them, so it is at least 3-D (False when unsure). Float
    (probability) targets have the input's shape and prove nothing."""

    param: str = "target"

    def evaluate(self, call: CallView) -> bool | None:
        facts = call.value(self.param)
        return isinstance(facts, TensorFacts) and facts.floating is False and (facts.ndim or 0) >= 2

    def params(self) -> frozenset[str]:
        return frozenset({self.param})

    def describe(self) -> str:
        return f"`{self.param}` holds class indices over at least one spatial dimension"


@dataclass(frozen=True, slots=True)
class NDim(Condition):
    """The input has exactly ``ndim`` dimensions, when known. It only tells apart entries
    that share an API (grid_sample 2-D vs 3-D), so messages do not mention it."""

    param: str
    ndim: int

    def evaluate(self, call: CallView) -> bool | None:
        facts = call.value(self.param)
        if isinstance(facts, TensorFacts) and facts.ndim is not None:
            return facts.ndim == self.ndim
        return None

    def params(self) -> frozenset[str]:
        return frozenset({self.param})

    def describe(self) -> str:
        return f"{_subject(self.param)} is {self.ndim}-D"

    @property
    def mention(self) -> bool:
        return False


@dataclass(frozen=True, slots=True)
class OneDimensional(Condition):
    """The input is 1-D, when known (a known 2-D or wider input counts as not 1-D, though
    its other dimensions could all be 1)."""

    param: str = "input"

    def evaluate(self, call: CallView) -> bool | None:
        facts = call.value(self.param)
        if isinstance(facts, TensorFacts) and facts.ndim is not None:
            return facts.ndim <= 1
        return None

    def params(self) -> frozenset[str]:
        return frozenset({self.param})

    def describe(self) -> str:
        return f"{_subject(self.param)} is 1-D"


@dataclass(frozen=True, slots=True)
class PadsDims(Condition):
    """``F.pad``'s ``pad`` sequence pads ``dims`` trailing dimensions (two numbers each)."""

    param: str
    dims: int

    def evaluate(self, call: CallView) -> bool | None:
        value = call.value(self.param)
        if isinstance(value, tuple):
            return len(value) == 2 * self.dims
        return None

    def params(self) -> frozenset[str]:
        return frozenset({self.param})

    def describe(self) -> str:
        return f"`{self.param}` pads {self.dims} dimension(s)"

    @property
    def mention(self) -> bool:
        return False


@dataclass(frozen=True, slots=True)
class NotOne(Condition):
    """An output size other than 1 (adaptive pooling to 1 is computed as a mean)."""

    param: str

    def evaluate(self, call: CallView) -> bool | None:
        value = call.value(self.param)
        if isinstance(value, int) and not isinstance(value, bool):
            return value != 1
        if isinstance(value, tuple) and value:
            if all(v == 1 and isinstance(v, int) for v in value):
                return False
            # ``(1, None)`` keeps an input size: not provably a mean.
            return True if all(_is_literal(v) for v in value) else None
        return None

    def params(self) -> frozenset[str]:
        return frozenset({self.param})

    def describe(self) -> str:
        return f"`{self.param}` is not 1"


@dataclass(frozen=True, slots=True)
class AllOf(Condition):
    """Every part holds (False if any is False; None if any is undecided)."""

    parts: tuple[Condition, ...]

    def evaluate(self, call: CallView) -> bool | None:
        results = [part.evaluate(call) for part in self.parts]
        if any(result is False for result in results):
            return False
        return None if any(result is None for result in results) else True

    def params(self) -> frozenset[str]:
        return frozenset().union(*(part.params() for part in self.parts))

    def describe(self) -> str:
        return " and ".join(part.describe() for part in self.parts)

    def undecided(self, call: CallView) -> tuple[str, ...]:
        return tuple(text for part in self.parts for text in part.undecided(call))


def all_of(*parts: Condition) -> Condition:
    return parts[0] if len(parts) == 1 else AllOf(parts)


@dataclass(frozen=True, slots=True)
class AnyOf(Condition):
    """Some part holds (True if any is True; None if none is True and one is undecided)."""

    parts: tuple[Condition, ...]

    def evaluate(self, call: CallView) -> bool | None:
        results = [part.evaluate(call) for part in self.parts]
        if any(result is True for result in results):
            return True
        return None if any(result is None for result in results) else False

    def params(self) -> frozenset[str]:
        return frozenset().union(*(part.params() for part in self.parts))

    def describe(self) -> str:
        return " or ".join(part.describe() for part in self.parts)


# -- APIs and entries ---------------------------------------------------------------------------


class ApiKind(enum.Enum):
    FUNCTION = "function"
    METHOD = "Tensor method"
    MODULE = "nn.Module"


@dataclass(frozen=True, slots=True)
class Api:
    """One way to call a catalogued op, and when that call is hazardous.

    ``params`` are the positional parameters in order (for a Tensor method, those after the
    tensor itself, which conditions call ``input``). For a module, ``params`` are the
    constructor's and ``forward`` names the arguments of a call of the built module; a
    condition that reads a forward argument is judged where the module is called, any other
    where it is built.
    """

    name: str
    params: tuple[str, ...] = ()
    when: Condition = ALWAYS
    forward: tuple[str, ...] = ()

    @property
    def kind(self) -> ApiKind:
        if self.name.startswith("torch.Tensor."):
            return ApiKind.METHOD
        last = self.short
        return ApiKind.MODULE if last[:1].isupper() else ApiKind.FUNCTION

    @property
    def short(self) -> str:
        return self.name.rsplit(".", 1)[1]

    @property
    def judged_at_call(self) -> bool:
        """For a module: whether the condition needs the arguments of the module's call."""
        return bool(self.when.params() & set(self.forward))


@dataclass(frozen=True, slots=True)
class Aten:
    """An aten operator (overload packet, ``torch.ops.aten.<packet>``) that a call of the
    entry's op dispatches to in the forward pass, and when that dispatch is the hazard.

    The runtime tracer matches executed operators against these, after autograd and after
    composite ops are decomposed. ``when`` reads the operator schema's argument names (the
    tensor ``self`` is ``input``), so it can differ from the Python API's condition: aten's
    ``reduction`` and ``mode`` are enum integers, where Python passes strings. For a
    backward-phase entry the forward operator is listed (its call site is the one the user
    wrote); the tracer requires an input that requires grad.
    """

    packet: str
    when: Condition = ALWAYS


def aten(*packets: str, when: Condition = ALWAYS) -> tuple[Aten, ...]:
    return tuple(Aten(packet, when) for packet in packets)


def _split(params: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in params.split(",") if p.strip())


def fn(name: str, params: str = "", when: Condition = ALWAYS) -> Api:
    return Api(f"torch.{name}", _split(params), when)


def method(name: str, params: str = "", when: Condition = ALWAYS) -> Api:
    return Api(f"torch.Tensor.{name}", _split(params), when)


def module(name: str, params: str = "", when: Condition = ALWAYS, forward: str = "") -> Api:
    return Api(f"torch.nn.{name}", _split(params), when, _split(forward))


class Behaviour(enum.Enum):
    """What a torch release does with the op (in the catalogued condition)."""

    # Nondeterministic by default; deterministic mode switches to a deterministic kernel.
    FIXED_BY_MODE = "fixed by deterministic mode"
    # Nondeterministic; deterministic mode raises (warns with ``warn_only=True``).
    RAISES = "raises in deterministic mode"
    # Nondeterministic; deterministic mode neither fixes nor reports it.
    SILENT = "nondeterministic, not caught by deterministic mode"
    # Deterministic in every mode: no longer a hazard.
    DETERMINISTIC = "deterministic"


# Behaviours each rule reports.
HAS_NO_DETERMINISTIC_KERNEL = frozenset({Behaviour.RAISES, Behaviour.SILENT})
NEEDS_DETERMINISTIC_MODE = frozenset({Behaviour.FIXED_BY_MODE})
# The first release with deterministic mode (``torch.set_deterministic``, renamed
# ``use_deterministic_algorithms`` in 1.8) and its list of nondeterministic kernels.
DETERMINISTIC_MODE_SINCE = TorchVersion(1, 7)


@dataclass(frozen=True, slots=True)
class Period:
    """From ``since`` on (until the next period), the op behaves as ``behaviour``."""

    since: TorchVersion
    behaviour: Behaviour


class Device(enum.Enum):
    CUDA = "CUDA"
    CPU = "CPU"
    ANY = "any device"


class Phase(enum.Enum):
    FORWARD = "forward"
    BACKWARD = "backward"
    BOTH = "forward and backward"


class Scope(enum.Enum):
    CALL = "reported per call"
    PROGRAM = "ubiquitous: not reported per call (RPL202 judges convolutions and attention)"
    BUILD = "only with an optional kernel library the linter cannot see"
    TRACED = "only when traced by torch.compile or export"


@dataclass(frozen=True, slots=True)
class Entry:
    """One hazard: an op, the condition under which it is nondeterministic, and what each
    torch release does with it."""

    id: str
    # The hazard in a few words, read after the op's name: "backward of bicubic
    # interpolation on CUDA".
    summary: str
    apis: tuple[Api, ...]
    condition: str
    device: Device
    phase: Phase
    history: tuple[Period, ...]
    # What PyTorch's nondeterminism alert names as the caller (``<caller> does not have a
    # deterministic implementation``), where the op raises or once raised.
    caller: str | None = None
    alternative: str | None = None
    scope: Scope = Scope.CALL
    # Code that calls the main API with the condition satisfied; it may use ``x`` (a 4-D
    # float CUDA tensor that requires grad), ``idx`` (a 1-D CUDA index tensor with repeats),
    # ``src`` (a 1-D float CUDA tensor as long as ``idx``), ``F`` (torch.nn.functional) and
    # ``nn`` (torch.nn).
    example: str | None = None
    # Where this catalog departs from the reference research or PyTorch's docstring, and why.
    correction: str | None = None
    # The id of an entry that the same calls always also match and that takes precedence
    # (so this one is never reported on its own).
    shadowed_by: str | None = None
    sources: tuple[str, ...] = field(default=())
    # The aten operators its calls dispatch to (empty: a run cannot tell it from another
    # entry's operator, or it is hazardous only under tracing or an optional kernel library).
    aten: tuple[Aten, ...] = field(default=())
    # The third-party package (its import name) whose layers or functions these are; None
    # for PyTorch's own ops. Its history is still read against the target torch release.
    package: str | None = None

    @property
    def main_api(self) -> Api:
        return self.apis[0]

    @property
    def since(self) -> TorchVersion:
        return self.history[0].since

    @property
    def until(self) -> TorchVersion | None:
        """The first release in which the op is deterministic in every mode, if any."""
        for period in self.history:
            if period.behaviour is Behaviour.DETERMINISTIC:
                return period.since
        return None

    def behaviour(self, version: TorchVersion) -> Behaviour | None:
        """What ``version`` does with the op; None before the catalog vouches for it.

        A release older than deterministic mode itself (1.7) has no mode to raise or to fix
        anything: the kernels that 1.7 already listed as nondeterministic (the entries whose
        history starts at 1.7 without a deterministic kernel) were there before the flag that
        reports them, so such a release runs them nondeterministically, uncaught (``SILENT``).
        """
        found: Behaviour | None = None
        for period in self.history:
            if period.since <= version:
                found = period.behaviour
        first = self.history[0]
        if (
            found is None
            and version < DETERMINISTIC_MODE_SINCE
            and first.since == DETERMINISTIC_MODE_SINCE
            and first.behaviour in HAS_NO_DETERMINISTIC_KERNEL
        ):
            return Behaviour.SILENT
        return found

    def history_text(self) -> str:
        """``raises in deterministic mode from 1.7, fixed by deterministic mode from 2.1``."""
        return ", ".join(f"{p.behaviour.value} from {p.since}" for p in self.history)


V = TorchVersion
_NOT_DETERMINED = "first release not determined; vouched for from 2.0"


def _raises(since: TorchVersion) -> tuple[Period, ...]:
    return (Period(since, Behaviour.RAISES),)


def _fixed_by_mode(
    since: TorchVersion, raised_from: TorchVersion | None = None
) -> tuple[Period, ...]:
    earlier = (Period(raised_from, Behaviour.RAISES),) if raised_from is not None else ()
    return (*earlier, Period(since, Behaviour.FIXED_BY_MODE))


# -- reusable conditions ----------------------------------------------------------------------

_NO_ANTIALIAS = OneOf("antialias", (False,), False)
_ANTIALIAS = OneOf("antialias", (True,), False)


def _mode(*modes: str, default: str = "nearest") -> OneOf:
    return OneOf("mode", modes, default)


def _interpolation_apis(mode: str, antialias: bool) -> tuple[Api, ...]:
    """``F.interpolate`` in one mode, plus ``nn.Upsample``/``F.upsample`` (no antialias)."""
    functional = fn(
        "nn.functional.interpolate",
        _INTERPOLATE,
        all_of(_mode(mode), _ANTIALIAS if antialias else _NO_ANTIALIAS),
    )
    if antialias:
        return (functional,)
    return (
        functional,
        module("Upsample", "size, scale_factor, mode, align_corners", _mode(mode)),
        fn("nn.functional.upsample", "input, size, scale_factor, mode, align_corners", _mode(mode)),
    )


_INTERPOLATE = "input, size, scale_factor, mode, align_corners, recompute_scale_factor, antialias"


def _area(ndim: int) -> Condition:
    """``F.interpolate(mode='area')``: adaptive average pooling of an ``ndim``-D input."""
    return all_of(_mode("area"), NotOne("size"), NDim("input", ndim))


_PAD = "input, pad, mode, value"


def _pad(mode: str, dims: int) -> Api:
    return fn(
        "nn.functional.pad", _PAD, all_of(OneOf("mode", (mode,), "constant"), PadsDims("pad", dims))
    )


_REDUCTION = all_of(
    OneOf("reduction", ("mean", "sum"), "mean"),
    # The legacy ``reduce=False`` means reduction="none", which does not alert.
    OneOf("reduce", (None, True), None),
)
_SPATIAL_NLL = all_of(
    AnyOf((ProvablySpatial("input"), ProvablySpatialTarget("target"))), _REDUCTION
)
_LOSS_INIT = "weight, size_average, ignore_index, reduce, reduction"

_ADAPTIVE_ALTERNATIVE_2D = (
    "for output size 1 use `x.mean(dim=(-2, -1), keepdim=True)`; when the input size is a "
    "multiple of the output size, `F.avg_pool2d(x, k, stride=k)`"
)

# -- the catalog ------------------------------------------------------------------------------


def _conv(kind: str, dims: int) -> Entry:
    transposed = kind == "ConvTranspose"
    functional = f"conv_transpose{dims}d" if transposed else f"conv{dims}d"
    return Entry(
        id=f"{'conv-transpose' if transposed else 'conv'}{dims}d-cuda",
        summary=f"a {dims}-D {'transposed ' if transposed else ''}cuDNN convolution on CUDA",
        apis=(
            module(f"{kind}{dims}d"),
            module(f"Lazy{kind}{dims}d"),
            fn(f"nn.functional.{functional}"),
            fn(functional),
        ),
        condition="cuDNN may pick a nondeterministic algorithm (forward or backward)",
        device=Device.CUDA,
        phase=Phase.BOTH,
        aten=aten(
            "convolution",
            when=all_of(OneOf("transposed", (transposed,), False), NDim("input", dims + 2)),
        ),
        history=_fixed_by_mode(V(1, 7)),
        alternative="`torch.backends.cudnn.deterministic = True` and `benchmark = False`",
        scope=Scope.PROGRAM,
        sources=("use_deterministic_algorithms docstring (2.13)", "notes/randomness"),
    )


_CONVS = tuple(_conv(kind, dims) for kind in ("Conv", "ConvTranspose") for dims in (1, 2, 3))

_PROGRAM_WIDE = (
    Entry(
        id="bmm-sparse-dense-cuda",
        summary="batched matmul of a sparse COO tensor with a dense one on CUDA",
        apis=(fn("bmm", "input, mat2"), method("bmm", "mat2")),
        condition="first operand a sparse COO CUDA tensor",
        device=Device.CUDA,
        phase=Phase.FORWARD,
        aten=aten("bmm", when=ProvablySparse("input")),
        history=_fixed_by_mode(V(1, 7)),
        scope=Scope.PROGRAM,
        sources=("use_deterministic_algorithms docstring (2.13)",),
    ),
    Entry(
        id="getitem-backward-cpu",
        summary="backward of advanced indexing `x[idx]` on CPU",
        apis=(method("__getitem__", "indices"),),
        condition="the index is a tensor or a list of tensors; result differentiated",
        device=Device.CPU,
        phase=Phase.BACKWARD,
        aten=aten("index"),
        history=_fixed_by_mode(V(1, 8)),
        alternative="deterministic mode",
        scope=Scope.PROGRAM,
        sources=("use_deterministic_algorithms docstring (2.13)", "CPU stress test, 2 threads"),
    ),
    Entry(
        id="setitem-duplicate-indices",
        summary="`x[idx] = v` with repeated indices",
        apis=(method("__setitem__", "indices, values"),),
        condition="a tensor index with repeats: which value wins is unspecified",
        device=Device.ANY,
        phase=Phase.FORWARD,
        aten=aten("index_put_", "index_put", when=OneOf("accumulate", (False,), False)),
        history=_fixed_by_mode(V(1, 9)),
        alternative="unique indices, or deterministic mode",
        scope=Scope.PROGRAM,
        correction=(
            "Split from the reference's index_put_(accumulate=False) entry: plain indexed "
            "assignment is ubiquitous and not reported per call, while an "
            "explicit `index_put_` call is."
        ),
        sources=("use_deterministic_algorithms docstring (2.13)", "PR #57839"),
    ),
    *(
        Entry(
            id=f"sdpa-{backend}-backward-cuda",
            summary=f"backward of scaled-dot-product attention with the {label} backend on CUDA",
            apis=(
                fn("nn.functional.scaled_dot_product_attention"),
                module("MultiheadAttention"),
                fn("nn.functional.multi_head_attention_forward"),
            ),
            condition=f"SDPA dispatches to the {label} backend (direct calls, "
            "`MultiheadAttention`/`multi_head_attention_forward` with `need_weights=False`, "
            "`nn.Transformer*` layers, Hugging Face `sdpa` attention)",
            device=Device.CUDA,
            phase=Phase.BACKWARD,
            aten=aten(f"_scaled_dot_product_{backend}_attention"),
            history=_fixed_by_mode(V(2, 0)),
            alternative="`torch.nn.attention.sdpa_kernel(SDPBackend.MATH)`, or deterministic mode "
            "without `warn_only` (with `warn_only=True` the fast backward is kept)",
            scope=Scope.PROGRAM,
            sources=(f"aten _scaled_dot_product_{backend}_attention_backward", _NOT_DETERMINED),
        )
        for backend, label in (
            ("flash", "FlashAttention"),
            ("efficient", "memory-efficient"),
            ("cudnn", "cuDNN"),
        )
    ),
    Entry(
        id="topk-cutedsl-cuda",
        summary="topk through the optional CuTeDSL kernel on CUDA",
        apis=(
            fn("topk", "input, k, dim, largest, sorted"),
            method("topk", "k, dim, largest, sorted"),
        ),
        condition="nvidia-cutlass-dsl installed, fp32, largest=True, sorted=True, k in 64..1024; "
        "ties may come back in a different order",
        device=Device.CUDA,
        phase=Phase.FORWARD,
        aten=aten("topk"),
        history=_fixed_by_mode(V(2, 13)),
        scope=Scope.BUILD,
        sources=("torch/_native/ops/topk (2.13)",),
    ),
)


def _family(name: str, params: str, when: Condition = ALWAYS) -> tuple[Api, ...]:
    """``x.name_(...)``, ``x.name(...)`` and ``torch.name(x, ...)`` under one condition."""
    return (
        method(f"{name}_", params, when),
        method(name, params, when),
        fn(name, f"input, {params}", when),
    )


def _scatter(reduce: str | None) -> tuple[Api, ...]:
    """``scatter_``/``scatter`` of a tensor ``src`` with a legacy ``reduce`` (or none);
    plain and adding writes collide only where the index repeats a value."""
    when = all_of(IsTensor("src"), OneOf("reduce", (reduce,), None))
    if reduce in (None, "add"):
        when = all_of(when, MayRepeat())
    return _family("scatter", "dim, index, src", when)


def _scatter_reduce(reduce: str) -> Condition:
    """aten ``scatter_(dim, index, src, reduce=...)``: the legacy reduce of a tensor ``src``."""
    return all_of(IsTensor("src"), OneOf("reduce", (reduce,), None))


_SCATTER_SRC = all_of(IsTensor("src"), OneOf("reduce", (None,), None))


def _accumulate(value: bool) -> OneOf:
    return OneOf("accumulate", (value,), False)


_INDEXING = (
    Entry(
        id="index-put-accumulate-false",
        summary="`index_put_` with accumulate=False and repeated indices",
        apis=_family("index_put", "indices, values, accumulate", _accumulate(False)),
        condition="`accumulate=False` (the default); with repeated indices one value wins",
        device=Device.ANY,
        phase=Phase.FORWARD,
        aten=aten("index_put_", "index_put", when=_accumulate(False)),
        history=_fixed_by_mode(V(1, 9)),
        alternative="unique indices",
        example="torch.zeros(4, device='cuda').index_put_((idx,), src)",
        sources=("use_deterministic_algorithms docstring (2.13)", "PR #57839"),
    ),
    Entry(
        id="index-put-accumulate-true-cpu",
        summary="`index_put_` with accumulate=True on CPU",
        apis=_family("index_put", "indices, values, accumulate", _accumulate(True)),
        condition="`accumulate=True` on a CPU tensor (parallel atomic adds); CUDA always sorts",
        device=Device.CPU,
        phase=Phase.FORWARD,
        aten=aten("index_put_", "index_put", when=_accumulate(True)),
        history=_fixed_by_mode(V(1, 8)),
        example="torch.zeros(4).index_put_((idx.cpu(),), src.cpu(), accumulate=True)",
        sources=("use_deterministic_algorithms docstring (2.13)", "CPU stress test, 2 threads"),
    ),
    Entry(
        id="put-accumulate-true-cpu",
        summary="`put_` with accumulate=True on CPU",
        apis=_family("put", "index, source, accumulate", _accumulate(True)),
        condition="`accumulate=True` on a CPU tensor",
        device=Device.CPU,
        phase=Phase.FORWARD,
        aten=aten("put_", "put", when=_accumulate(True)),
        history=_fixed_by_mode(V(1, 9)),
        example="torch.zeros(4).put_(idx.cpu(), src.cpu(), accumulate=True)",
        shadowed_by="put-accumulate-true-cuda",
        sources=("use_deterministic_algorithms docstring (2.13)", "CPU stress test, 2 threads"),
    ),
    Entry(
        id="put-accumulate-false",
        summary="`put_` with accumulate=False",
        apis=_family("put", "index, source, accumulate", _accumulate(False)),
        condition="`accumulate=False` (the default), on every device",
        device=Device.ANY,
        phase=Phase.FORWARD,
        aten=aten("put_", "put", when=_accumulate(False)),
        history=_raises(V(1, 9)),
        caller="put_",
        alternative="`x.view(-1).index_put_((idx,), v)` (deterministic in deterministic mode)",
        example="torch.zeros(4, device='cuda').put_(idx, src)",
        sources=("use_deterministic_algorithms docstring (2.13)", "CPU probe: raises `put_`"),
    ),
    Entry(
        id="put-accumulate-true-cuda",
        summary="`put_` with accumulate=True on CUDA",
        apis=_family("put", "index, source, accumulate", _accumulate(True)),
        condition="`accumulate=True` on a CUDA tensor (atomic adds)",
        device=Device.CUDA,
        phase=Phase.FORWARD,
        aten=aten("put_", "put", when=_accumulate(True)),
        history=_raises(V(1, 9)),
        caller="put_",
        alternative="`x.view(-1).index_put_((idx,), v, accumulate=True)`",
        example="torch.zeros(4, device='cuda').put_(idx, src, accumulate=True)",
        sources=("use_deterministic_algorithms docstring (2.13)",),
    ),
    Entry(
        id="scatter-add-cuda",
        summary="`scatter_add_` on CUDA",
        apis=_family("scatter_add", "dim, index, src", all_of(MayRepeat(), NotInteger())),
        condition="a CUDA tensor of floating-point values (atomic adds; integer sums are exact)",
        device=Device.CUDA,
        phase=Phase.FORWARD,
        aten=aten("scatter_add_", "scatter_add"),
        history=_fixed_by_mode(V(1, 11), raised_from=V(1, 7)),
        caller="scatter_add_cuda_kernel",
        example="torch.zeros(3, device='cuda').scatter_add_(0, idx, src)",
        sources=(
            "use_deterministic_algorithms docstring (2.13); 1.11/1.12 docs limit it to 1-D input",
            "aten scatter_add: _scatter_via_index_put in deterministic mode",
        ),
    ),
    Entry(
        id="gather-backward-cuda",
        summary="backward of `gather` on CUDA",
        apis=(
            fn("gather", "input, dim, index", MayRepeat()),
            method("gather", "dim, index", MayRepeat()),
            fn("take_along_dim", "input, indices, dim"),
            method("take_along_dim", "indices, dim"),
        ),
        condition="a CUDA tensor that requires grad (the backward scatters with atomic adds)",
        device=Device.CUDA,
        phase=Phase.BACKWARD,
        aten=aten("gather"),
        history=_fixed_by_mode(V(1, 11), raised_from=V(1, 7)),
        caller="scatter_add_cuda_kernel",
        example="torch.gather(x.flatten(), 0, idx)",
        sources=("use_deterministic_algorithms docstring (2.13); 1.11/1.12 docs: 1-D only",),
    ),
    Entry(
        id="index-add-cuda",
        summary="`index_add_` on CUDA",
        apis=_family("index_add", "dim, index, source", all_of(MayRepeat(dim=None), NotInteger())),
        condition="a CUDA tensor of floating-point values (atomic adds; integer sums are exact)",
        device=Device.CUDA,
        phase=Phase.FORWARD,
        aten=aten("index_add_", "index_add"),
        history=_fixed_by_mode(V(1, 11), raised_from=V(1, 7)),
        caller="index_add_cuda_",
        example="torch.zeros(3, device='cuda').index_add_(0, idx, src)",
        sources=("use_deterministic_algorithms docstring (2.13)", "docs 1.11"),
    ),
    Entry(
        id="index-select-backward-cuda",
        summary="backward of `index_select` on CUDA",
        apis=(
            fn("index_select", "input, dim, index", MayRepeat(dim=None)),
            method("index_select", "dim, index", MayRepeat(dim=None)),
        ),
        condition="a CUDA tensor that requires grad (the backward is an index_add)",
        device=Device.CUDA,
        phase=Phase.BACKWARD,
        aten=aten("index_select"),
        history=_fixed_by_mode(V(1, 12)),
        example="torch.index_select(x, 0, idx)",
        sources=("use_deterministic_algorithms docstring (2.13)", "docs 1.12"),
    ),
    Entry(
        id="repeat-interleave-backward-cuda",
        summary="backward of `repeat_interleave` on CUDA",
        apis=(
            fn("repeat_interleave", "input, repeats, dim"),
            method("repeat_interleave", "repeats, dim"),
        ),
        condition="a CUDA tensor that requires grad",
        device=Device.CUDA,
        phase=Phase.BACKWARD,
        # No operator of its own: tensor repeats dispatch to index_select (whose backward is
        # the hazard: index-select-backward-cuda), an int repeat to a broadcast.
        history=_fixed_by_mode(V(2, 0)),
        example="torch.repeat_interleave(x, 2, dim=0)",
        sources=("use_deterministic_algorithms docstring (2.13)", _NOT_DETERMINED),
    ),
    Entry(
        id="index-copy",
        summary="`index_copy_` with repeated indices",
        apis=_family("index_copy", "dim, index, source", MayRepeat(dim=None)),
        condition="repeated indices, on CPU or CUDA: which value wins is unspecified",
        device=Device.ANY,
        phase=Phase.FORWARD,
        aten=aten("index_copy_", "index_copy"),
        history=_fixed_by_mode(V(2, 0)),
        alternative="unique indices",
        example="torch.zeros(3, device='cuda').index_copy_(0, idx, src)",
        sources=(
            "use_deterministic_algorithms docstring (2.13)",
            "PR #46942 added an alert in 1.8; " + _NOT_DETERMINED,
        ),
    ),
    Entry(
        id="scatter-src-cuda",
        summary="`scatter_` of a tensor `src` with repeated indices on CUDA",
        apis=_scatter(None),
        condition="`src` is a tensor (not a number), no `reduce`, repeated indices",
        device=Device.CUDA,
        phase=Phase.FORWARD,
        aten=aten("scatter_", "scatter", when=_SCATTER_SRC),
        history=_fixed_by_mode(V(2, 0)),
        example="torch.zeros(3, device='cuda').scatter_(0, idx, src)",
        sources=("use_deterministic_algorithms docstring (2.13)", _NOT_DETERMINED),
    ),
    Entry(
        id="scatter-reduce-sum-mean-cuda",
        summary="`scatter_reduce_` with reduce='sum' or 'mean' on CUDA",
        apis=(
            *_family(
                "scatter_reduce",
                "dim, index, src, reduce",
                all_of(OneOf("reduce", ("sum", "mean"), None), MayRepeat()),
            ),
            # The legacy ``scatter_(..., reduce="add")`` takes the same deterministic path.
            *_scatter("add"),
        ),
        condition="`reduce` is 'sum' or 'mean' (or legacy `scatter_(..., reduce='add')`)",
        device=Device.CUDA,
        phase=Phase.FORWARD,
        aten=(
            *aten("scatter_reduce_", "scatter_reduce", when=OneOf("reduce", ("sum", "mean"), None)),
            *aten("scatter_", "scatter", when=_scatter_reduce("add")),
        ),
        history=_fixed_by_mode(V(2, 0)),
        example="torch.zeros(3, device='cuda').scatter_reduce_(0, idx, src, 'sum')",
        sources=("use_deterministic_algorithms docstring (2.13)", _NOT_DETERMINED),
    ),
    Entry(
        id="scatter-reduce-prod-cuda",
        summary="`scatter_reduce_` with reduce='prod' on CUDA",
        apis=_family("scatter_reduce", "dim, index, src, reduce", OneOf("reduce", ("prod",), None)),
        condition="`reduce='prod'` with a tensor `src`",
        device=Device.CUDA,
        phase=Phase.FORWARD,
        aten=aten("scatter_reduce_", "scatter_reduce", when=OneOf("reduce", ("prod",), None)),
        history=_raises(V(2, 0)),
        caller="scatter_reduce_cuda_prod_",
        alternative="sum logarithms with `reduce='sum'` for positive values",
        example="torch.ones(3, device='cuda').scatter_reduce_(0, idx, src, 'prod')",
        sources=("use_deterministic_algorithms docstring (2.13)", _NOT_DETERMINED),
    ),
    Entry(
        id="scatter-legacy-multiply-cuda",
        summary="`scatter_` with reduce='multiply' on CUDA",
        apis=_scatter("multiply"),
        condition="legacy `reduce='multiply'` with a tensor `src` ('add' is deterministic)",
        device=Device.CUDA,
        phase=Phase.FORWARD,
        aten=aten("scatter_", "scatter", when=_scatter_reduce("multiply")),
        history=_raises(V(2, 0)),
        caller="scatter_reduce_cuda_kernel",
        alternative="sum logarithms with `scatter_reduce(..., reduce='sum')` for positive values",
        example="torch.ones(3, device='cuda').scatter_(0, idx, src, reduce='multiply')",
        sources=("aten ScatterGatherKernel.cu (not in the docstring)", _NOT_DETERMINED),
    ),
    Entry(
        id="index-reduce-cuda",
        summary="`index_reduce_` on CUDA",
        apis=_family("index_reduce", "dim, index, source, reduce"),
        condition="a CUDA tensor, any `reduce` (the alert is unconditional)",
        device=Device.CUDA,
        phase=Phase.FORWARD,
        aten=aten("index_reduce_", "index_reduce"),
        history=_raises(V(1, 12)),
        caller="index_reduce_cuda",
        alternative="`scatter_reduce` with 'sum'/'mean' where it fits",
        example="torch.ones(3, device='cuda').index_reduce_(0, idx, src, 'prod')",
        sources=("aten Indexing.cu index_reduce_func_cuda_impl (not in the docstring)",),
    ),
)


def _replication_pad(dims: int, since: TorchVersion, source: str) -> Entry:
    return Entry(
        id=f"replication-pad{dims}d-backward-cuda",
        summary=f"backward of {dims}-D replication padding on CUDA",
        apis=(module(f"ReplicationPad{dims}d", "padding"), _pad("replicate", dims)),
        condition=f"`mode='replicate'` padding {dims} dimension(s), differentiated",
        device=Device.CUDA,
        phase=Phase.BACKWARD,
        aten=aten(f"replication_pad{dims}d"),
        history=_fixed_by_mode(since, raised_from=V(1, 7)),
        caller=f"replication_pad{dims}d_backward_cuda",
        example=f"nn.ReplicationPad{dims}d(1)",
        correction=None
        if dims == 2
        else (
            f"The reference left the release open; `F.pad` routes {dims}-D replicate padding to "
            "a decomposition with an index_put backward since PR #115113 (Dec 2023), so 2.3."
        ),
        sources=(
            "use_deterministic_algorithms docstring (2.13)",
            source,
            "torch.nn.functional.pad (2.13)",
        ),
    )


# Seen on an H200 (torch 2.11.0+cu130) in two sessions: deterministic mode did not raise, and
# the backward was identical in every repeat under it while it differed in default mode.
_REFLECTION_PAD2D_CORRECTION = (
    "The reference and the 2.13 docstring say deterministic mode raises. PyTorch's CUDA "
    "sources have a separate deterministic kernel for the 2-D backward "
    "(`reflection_pad2d_backward_det_out_kernel`, from pytorch/pytorch#136241, September 2024; "
    "none for 1-D or 3-D), and on an H200 with torch 2.11 (2026-12-04, two runs) deterministic "
    "mode did not raise: the backward differed in 9 of 9 and 4 of 4 repeats in default mode and "
    "in none under the mode. The first release with that kernel is not established, so the "
    "mode fixes it from 2.11 here and raises before."
)


def _reflection_pad(
    dims: int, caller: str, since: TorchVersion, fixed_from: TorchVersion | None = None
) -> Entry:
    return Entry(
        id=f"reflection-pad{dims}d-backward-cuda",
        summary=f"backward of {dims}-D reflection padding on CUDA",
        apis=(module(f"ReflectionPad{dims}d", "padding"), _pad("reflect", dims)),
        condition=f"`mode='reflect'` padding {dims} dimension(s), differentiated",
        device=Device.CUDA,
        phase=Phase.BACKWARD,
        aten=aten(f"reflection_pad{dims}d"),
        history=_raises(since) if fixed_from is None else _fixed_by_mode(fixed_from, since),
        caller=caller,
        alternative="build the padding from slices: `torch.cat([x[..., 1:p + 1].flip(-1), x, "
        "x[..., -p - 1:-1].flip(-1)], -1)` per padded dimension",
        example=f"nn.ReflectionPad{dims}d(1)",
        correction=None if fixed_from is None else _REFLECTION_PAD2D_CORRECTION,
        sources=(
            "use_deterministic_algorithms docstring (2.13)",
            *(() if fixed_from is None else ("pytorch/pytorch#136241",)),
        ),
    )


_PADDING = (
    _replication_pad(1, V(2, 3), "PR #115113"),
    _replication_pad(2, V(2, 2), "PR #111590"),
    _replication_pad(3, V(2, 3), "PR #115113"),
    _reflection_pad(1, "reflection_pad1d_backward_out_cuda", V(1, 7)),
    _reflection_pad(2, "reflection_pad2d_backward_cuda", V(1, 7), fixed_from=V(2, 11)),
    _reflection_pad(3, "reflection_pad3d_backward_out_cuda", V(1, 10)),
)

_MAX_POOL3D_INIT = "kernel_size, stride, padding, dilation, return_indices, ceil_mode"
_MAX_POOL3D_FN = "input, kernel_size, stride, padding, dilation, ceil_mode, return_indices"
_MAX_POOL3D_CORRECTION = (
    "The reference and PyTorch's docstring call all of nn.MaxPool3d deterministic under "
    "deterministic mode. In the installed 2.13.0 sources only "
    "`F.max_pool3d_with_indices` (that is, `return_indices=True`) routes CUDA input to the "
    "decomposition; with `return_indices=False`, the default, `F.max_pool3d` calls "
    "`torch.max_pool3d`, a composite of aten `max_pool3d_with_indices` whose CUDA backward "
    "alerts `max_pool3d_with_indices_backward_cuda`. Not yet run on a GPU."
)

_POOLING = (
    Entry(
        id="max-pool3d-indices-backward-cuda",
        summary="backward of 3-D max pooling with return_indices=True on CUDA",
        apis=(
            fn("nn.functional.max_pool3d_with_indices", _MAX_POOL3D_FN),
            module("MaxPool3d", _MAX_POOL3D_INIT, OneOf("return_indices", (True,), False)),
            fn("nn.functional.max_pool3d", _MAX_POOL3D_FN, OneOf("return_indices", (True,), False)),
        ),
        condition="`return_indices=True`, differentiated",
        device=Device.CUDA,
        phase=Phase.BACKWARD,
        aten=aten("max_pool3d_with_indices"),
        history=_fixed_by_mode(V(2, 13), raised_from=V(1, 7)),
        caller="max_pool3d_with_indices_backward_cuda",
        example="F.max_pool3d_with_indices(x.unsqueeze(2), 1)",
        correction=_MAX_POOL3D_CORRECTION,
        sources=("torch/nn/functional.py max_pool3d_with_indices (2.13)", "PR #179104"),
    ),
    Entry(
        id="max-pool3d-backward-cuda",
        summary="backward of 3-D max pooling on CUDA",
        apis=(
            module("MaxPool3d", _MAX_POOL3D_INIT, OneOf("return_indices", (False,), False)),
            fn(
                "nn.functional.max_pool3d", _MAX_POOL3D_FN, OneOf("return_indices", (False,), False)
            ),
            fn("max_pool3d", "input, kernel_size, stride, padding, dilation, ceil_mode"),
        ),
        condition="`return_indices=False` (the default), differentiated",
        device=Device.CUDA,
        phase=Phase.BACKWARD,
        aten=aten("max_pool3d_with_indices"),
        history=_raises(V(1, 7)),
        caller="max_pool3d_with_indices_backward_cuda",
        alternative="on torch 2.13+, `return_indices=True` (and drop the indices): deterministic "
        "mode then uses a decomposition with a deterministic backward",
        example="nn.MaxPool3d(2)",
        correction=_MAX_POOL3D_CORRECTION,
        sources=("torch/nn/functional.py _max_pool3d (2.13)", "aten Pooling.cpp max_pool3d"),
    ),
    Entry(
        id="avg-pool3d-backward-cuda",
        summary="backward of 3-D average pooling on CUDA",
        apis=(
            module("AvgPool3d", "kernel_size, stride, padding, ceil_mode, count_include_pad"),
            fn("nn.functional.avg_pool3d", "input, kernel_size, stride, padding"),
        ),
        condition="differentiated (atomic adds)",
        device=Device.CUDA,
        phase=Phase.BACKWARD,
        aten=aten("avg_pool3d"),
        history=_raises(V(1, 7)),
        caller="avg_pool3d_backward_cuda",
        alternative="for non-overlapping windows, reshape and `.mean()` over the window dimensions",
        example="nn.AvgPool3d(2)",
        sources=("use_deterministic_algorithms docstring (2.13)",),
    ),
    Entry(
        id="adaptive-avg-pool2d-backward-cuda",
        summary="backward of 2-D adaptive average pooling on CUDA",
        apis=(
            module("AdaptiveAvgPool2d", "output_size", NotOne("output_size")),
            fn("nn.functional.adaptive_avg_pool2d", "input, output_size", NotOne("output_size")),
            # ``mode='area'`` interpolation of a 4-D input is adaptive average pooling.
            fn("nn.functional.interpolate", _INTERPOLATE, _area(4)),
        ),
        condition="output size other than 1 (size 1 is computed as a mean), differentiated; "
        "also `F.interpolate(mode='area')` of a 4-D input",
        device=Device.CUDA,
        phase=Phase.BACKWARD,
        aten=aten("_adaptive_avg_pool2d", when=NotOne("output_size")),
        history=_raises(V(1, 7)),
        caller="adaptive_avg_pool2d_backward_cuda",
        alternative=_ADAPTIVE_ALTERNATIVE_2D,
        example="nn.AdaptiveAvgPool2d((7, 7))",
        sources=(
            "use_deterministic_algorithms docstring (2.13)",
            "aten AdaptiveAveragePooling.cpp: output size 1 is input.mean()",
        ),
    ),
    Entry(
        id="adaptive-avg-pool3d-backward-cuda",
        summary="backward of 3-D adaptive average pooling on CUDA",
        apis=(
            module("AdaptiveAvgPool3d", "output_size", NotOne("output_size")),
            fn("nn.functional.adaptive_avg_pool3d", "input, output_size", NotOne("output_size")),
            fn("nn.functional.interpolate", _INTERPOLATE, _area(5)),
        ),
        condition="output size other than 1 (size 1 is computed as a mean), differentiated; "
        "also `F.interpolate(mode='area')` of a 5-D input",
        device=Device.CUDA,
        phase=Phase.BACKWARD,
        aten=aten("_adaptive_avg_pool3d", when=NotOne("output_size")),
        history=_raises(V(1, 7)),
        caller="adaptive_avg_pool3d_backward_cuda",
        alternative="for output size 1 use `x.mean(dim=(-3, -2, -1), keepdim=True)`",
        example="nn.AdaptiveAvgPool3d(4)",
        sources=(
            "use_deterministic_algorithms docstring (2.13)",
            "aten AdaptiveAveragePooling3d.cpp: output size 1 is input.mean()",
        ),
    ),
    Entry(
        id="adaptive-max-pool2d-backward-cuda",
        summary="backward of 2-D adaptive max pooling on CUDA",
        apis=(
            module("AdaptiveMaxPool2d", "output_size, return_indices"),
            fn("nn.functional.adaptive_max_pool2d", "input, output_size, return_indices"),
            fn(
                "nn.functional.adaptive_max_pool2d_with_indices",
                "input, output_size, return_indices",
            ),
        ),
        condition="differentiated (the alert is unconditional, even for output size 1)",
        device=Device.CUDA,
        phase=Phase.BACKWARD,
        aten=aten("adaptive_max_pool2d"),
        history=_raises(V(1, 7)),
        caller="adaptive_max_pool2d_backward_cuda",
        alternative="for output size 1 use `x.amax(dim=(-2, -1), keepdim=True)`; for divisible "
        "sizes `F.max_pool2d(x, k, stride=k)`",
        example="nn.AdaptiveMaxPool2d(1)",
        sources=("use_deterministic_algorithms docstring (2.13)",),
    ),
    Entry(
        id="adaptive-max-pool3d-backward-cuda",
        summary="backward of 3-D adaptive max pooling on CUDA",
        apis=(
            module("AdaptiveMaxPool3d", "output_size, return_indices", NotOne("output_size")),
            fn(
                "nn.functional.adaptive_max_pool3d",
                "input, output_size, return_indices",
                NotOne("output_size"),
            ),
            fn(
                "nn.functional.adaptive_max_pool3d_with_indices",
                "input, output_size, return_indices",
                NotOne("output_size"),
            ),
        ),
        condition="input size not a multiple of the output size (the backward then uses atomic "
        "adds, without an alert)",
        device=Device.CUDA,
        phase=Phase.BACKWARD,
        aten=aten("adaptive_max_pool3d", when=NotOne("output_size")),
        history=(Period(V(1, 7), Behaviour.SILENT),),
        alternative="for output size 1 use `x.amax(dim=(-3, -2, -1), keepdim=True)`",
        example="nn.AdaptiveMaxPool3d(4)",
        sources=(
            "aten AdaptiveMaxPooling3d.cu: atomicadaptivemaxgradinput, no alert (source read, "
            "not run on a GPU)",
        ),
    ),
    *(
        Entry(
            id=f"fractional-max-pool{dims}d-backward-cuda",
            summary=f"backward of {dims}-D fractional max pooling on CUDA",
            apis=(
                module(
                    f"FractionalMaxPool{dims}d",
                    "kernel_size, output_size, output_ratio, return_indices",
                ),
                fn(
                    f"nn.functional.fractional_max_pool{dims}d",
                    "input, kernel_size, output_size, output_ratio",
                ),
                fn(
                    f"nn.functional.fractional_max_pool{dims}d_with_indices",
                    "input, kernel_size, output_size, output_ratio",
                ),
            ),
            condition="differentiated (it also draws random samples: seed it)",
            device=Device.CUDA,
            phase=Phase.BACKWARD,
            aten=aten(f"fractional_max_pool{dims}d"),
            history=_raises(V(1, 7)),
            caller=f"fractional_max_pool{dims}d_backward_cuda",
            example=f"nn.FractionalMaxPool{dims}d(2, output_ratio=0.5)",
            sources=("use_deterministic_algorithms docstring (2.13)",),
        )
        for dims in (2, 3)
    ),
    *(
        Entry(
            id=f"max-unpool{dims}d",
            summary=f"{dims}-D max unpooling (any device)",
            apis=(
                module(f"MaxUnpool{dims}d", "kernel_size, stride, padding"),
                fn(
                    f"nn.functional.max_unpool{dims}d",
                    "input, indices, kernel_size, stride, padding",
                ),
            ),
            condition="always alerts; the result is ambiguous only when indices repeat",
            device=Device.ANY,
            phase=Phase.FORWARD,
            # MaxUnpool1d runs as the 2-D op on an unsqueezed input.
            aten=aten(f"max_unpool{max(dims, 2)}d"),
            history=_raises(V(1, 13)),
            caller=f"max_unpooling{max(dims, 2)}d_forward_out",
            alternative="with MaxPool indices (unique per plane): `x.new_zeros(N, C, H * W)"
            ".scatter_(2, idx.flatten(2), x.flatten(2)).view(N, C, H, W)`",
            example=f"nn.MaxUnpool{dims}d(2)",
            sources=(
                "use_deterministic_algorithms docstring (2.13)",
                "CPU probe raises",
                "PR #84766",
            ),
        )
        for dims in (1, 2, 3)
    ),
)

_NEAREST = "`mode='nearest'` (its backward is deterministic)"

_INTERPOLATION = (
    Entry(
        id="interpolate-linear-backward-cuda",
        summary="backward of linear interpolation on CUDA",
        apis=_interpolation_apis("linear", antialias=False),
        condition="`mode='linear'` (3-D input), differentiated",
        device=Device.CUDA,
        phase=Phase.BACKWARD,
        aten=aten("upsample_linear1d"),
        history=_raises(V(1, 7)),
        caller="upsample_linear1d_backward_out_cuda",
        alternative=_NEAREST,
        example="F.interpolate(x.flatten(2), scale_factor=2, mode='linear')",
        sources=("use_deterministic_algorithms docstring (2.13)",),
    ),
    Entry(
        id="interpolate-bilinear-backward-cuda",
        summary="backward of bilinear interpolation on CUDA",
        apis=(
            *_interpolation_apis("bilinear", antialias=False),
            module("UpsamplingBilinear2d", "size, scale_factor"),
            fn("nn.functional.upsample_bilinear", "input, size, scale_factor"),
        ),
        condition="`mode='bilinear'` without antialias (4-D input), differentiated",
        device=Device.CUDA,
        phase=Phase.BACKWARD,
        aten=aten("upsample_bilinear2d"),
        history=_fixed_by_mode(V(2, 1), raised_from=V(1, 7)),
        caller="upsample_bilinear2d_backward_out_cuda",
        example="F.interpolate(x, scale_factor=2, mode='bilinear')",
        correction=(
            "PyTorch's 2.13 docstring still lists bilinear interpolation as raising, but "
            "`F.interpolate` routes non-CPU input to a decomposition with an index_put backward "
            "when deterministic mode is on at forward time (PR #101115, so 2.1)."
        ),
        sources=("torch/nn/functional.py interpolate (2.13)", "PR #101115", "issue #95578"),
    ),
    Entry(
        id="interpolate-bicubic-backward-cuda",
        summary="backward of bicubic interpolation on CUDA",
        apis=_interpolation_apis("bicubic", antialias=False),
        condition="`mode='bicubic'` without antialias (4-D input), differentiated",
        device=Device.CUDA,
        phase=Phase.BACKWARD,
        aten=aten("upsample_bicubic2d"),
        history=_raises(V(1, 7)),
        caller="upsample_bicubic2d_backward_out_cuda",
        alternative=_NEAREST,
        example="F.interpolate(x, scale_factor=2, mode='bicubic')",
        sources=("use_deterministic_algorithms docstring (2.13)",),
    ),
    Entry(
        id="interpolate-trilinear-backward-cuda",
        summary="backward of trilinear interpolation on CUDA",
        apis=_interpolation_apis("trilinear", antialias=False),
        condition="`mode='trilinear'` (5-D input), differentiated",
        device=Device.CUDA,
        phase=Phase.BACKWARD,
        aten=aten("upsample_trilinear3d"),
        history=_fixed_by_mode(V(2, 8), raised_from=V(1, 7)),
        caller="upsample_trilinear3d_backward_out_cuda",
        example="F.interpolate(x.unsqueeze(2), scale_factor=2, mode='trilinear')",
        correction=(
            "PyTorch's 2.13 docstring still lists trilinear interpolation as raising, but "
            "`F.interpolate` routes non-CPU input to the same decomposition as bilinear; the "
            "reference left the release open: PR #154239 (June 2025), so 2.8."
        ),
        sources=("torch/nn/functional.py interpolate (2.13)", "PR #154239", "issue #154183"),
    ),
    Entry(
        id="interpolate-bilinear-antialias-backward-cuda",
        summary="backward of antialiased bilinear interpolation on CUDA",
        apis=_interpolation_apis("bilinear", antialias=True),
        condition="`mode='bilinear', antialias=True`, differentiated (no deterministic routing)",
        device=Device.CUDA,
        phase=Phase.BACKWARD,
        aten=aten("_upsample_bilinear2d_aa"),
        history=_raises(V(1, 11)),
        caller="upsample_bilinear2d_aa_backward_out_cuda",
        alternative="`antialias=False` (deterministic in deterministic mode)",
        example="F.interpolate(x, scale_factor=0.5, mode='bilinear', antialias=True)",
        sources=("torch/nn/functional.py interpolate (2.13)", "antialias appeared in 1.11"),
    ),
    Entry(
        id="interpolate-bicubic-antialias-backward-cuda",
        summary="backward of antialiased bicubic interpolation on CUDA",
        apis=_interpolation_apis("bicubic", antialias=True),
        condition="`mode='bicubic', antialias=True`, differentiated",
        device=Device.CUDA,
        phase=Phase.BACKWARD,
        aten=aten("_upsample_bicubic2d_aa"),
        history=_raises(V(1, 11)),
        caller="upsample_bicubic2d_aa_backward_out_cuda",
        alternative="`mode='bilinear'` without antialias (deterministic in deterministic mode)",
        example="F.interpolate(x, scale_factor=0.5, mode='bicubic', antialias=True)",
        sources=("torch/nn/functional.py interpolate (2.13)", "antialias appeared in 1.11"),
    ),
    *(
        Entry(
            id=f"grid-sample-{dims}d-backward-cuda",
            summary="backward of `grid_sample` on CUDA",
            apis=(
                fn(
                    "nn.functional.grid_sample",
                    "input, grid, mode, padding_mode, align_corners",
                    NDim("input", dims + 2),
                ),
                fn("grid_sampler", "input, grid", NDim("input", dims + 2)),
                fn(f"grid_sampler_{dims}d", "input, grid"),
            ),
            condition=f"{dims + 2}-D input, differentiated",
            device=Device.CUDA,
            phase=Phase.BACKWARD,
            aten=aten(f"grid_sampler_{dims}d"),
            history=_raises(V(1, 7)),
            caller=f"grid_sampler_{dims}d_backward_cuda",
            example=f"F.grid_sample(x{'.unsqueeze(2)' if dims == 3 else ''}, grid)",
            sources=("use_deterministic_algorithms docstring (2.13)",),
        )
        for dims in (2, 3)
    ),
)

_LOSSES = (
    Entry(
        id="nll-loss2d-forward-cuda",
        summary="NLL loss over a spatial (N, C, H, W) input on CUDA",
        apis=(
            fn("nn.functional.nll_loss", f"input, target, {_LOSS_INIT}", _SPATIAL_NLL),
            fn("nn.functional.cross_entropy", f"input, target, {_LOSS_INIT}", _SPATIAL_NLL),
            module("NLLLoss", _LOSS_INIT, _SPATIAL_NLL, forward="input, target"),
            module("CrossEntropyLoss", _LOSS_INIT, _SPATIAL_NLL, forward="input, target"),
            # The deprecated 2-D loss exists for spatial input only.
            module("NLLLoss2d", _LOSS_INIT, _REDUCTION),
        ),
        condition="input of 3 or more dimensions (routed to nll_loss2d) with class-index "
        "targets, reduction 'mean' or 'sum'",
        device=Device.CUDA,
        phase=Phase.FORWARD,
        # aten's reduction is an enum: 1 is mean, 2 is sum.
        aten=aten("nll_loss2d_forward", when=OneOf("reduction", (1, 2), 1)),
        history=_raises(V(1, 7)),
        caller="nll_loss2d_forward_out_cuda_template",
        alternative="flatten to 2-D: `F.nll_loss(x.movedim(1, -1).reshape(-1, C), t.reshape(-1))`, "
        "or `reduction='none'` then `.mean()`",
        example="F.nll_loss(x.log_softmax(1), idx.view(2, 2).long())",
        sources=("use_deterministic_algorithms docstring (2.13)", "aten nll_loss_nd"),
    ),
    Entry(
        id="ctc-loss-backward-cuda",
        summary="backward of CTC loss on CUDA",
        apis=(
            module("CTCLoss", "blank, reduction, zero_infinity"),
            fn("nn.functional.ctc_loss", "log_probs, targets, input_lengths, target_lengths"),
        ),
        condition="differentiated, native (non-cuDNN) implementation",
        device=Device.CUDA,
        phase=Phase.BACKWARD,
        aten=aten("_ctc_loss"),
        history=_raises(V(1, 7)),
        caller="ctc_loss_backward_gpu",
        example="nn.CTCLoss()",
        sources=("use_deterministic_algorithms docstring (2.13)",),
    ),
    Entry(
        id="embedding-bag-max-backward-cuda",
        summary="backward of EmbeddingBag with mode='max' on CUDA",
        apis=(
            module(
                "EmbeddingBag",
                "num_embeddings, embedding_dim, max_norm, norm_type, scale_grad_by_freq, mode",
                _mode("max", default="mean"),
            ),
            fn(
                "nn.functional.embedding_bag",
                "input, weight, offsets, max_norm, norm_type, scale_grad_by_freq, mode",
                _mode("max", default="mean"),
            ),
            Api(
                "torch.nn.EmbeddingBag.from_pretrained",
                _split("embeddings, freeze, max_norm, norm_type, scale_grad_by_freq, mode"),
                _mode("max", default="mean"),
            ),
        ),
        condition="`mode='max'`, differentiated",
        device=Device.CUDA,
        phase=Phase.BACKWARD,
        # aten's mode is an enum: 0 sum, 1 mean, 2 max.
        aten=aten("_embedding_bag", when=OneOf("mode", (2,), 0)),
        history=_raises(V(1, 7)),
        caller="embedding_bag_backward_cuda_max",
        alternative="`mode='sum'` or `mode='mean'`",
        example="nn.EmbeddingBag(10, 3, mode='max')",
        sources=("use_deterministic_algorithms docstring (2.13)",),
    ),
)

_HISTC_FLOAT = Floating("input")
_CUMSUM_CORRECTION = (
    "PyTorch's 2.13 docstring still lists float cumsum on CUDA as raising (corrected upstream "
    "by PR #190975). The installed 2.13 headers (ATen/native/cuda/ScanUtils.cuh, scan_dim) "
    "show no alert; only an effectively 1-D input takes CUB's scan, which deterministic mode "
    "replaces by a deterministic one (PR #140887, Nov 2024, so 2.6); other shapes use "
    "deterministic kernels. Split in two entries so that each release is judged right."
)


def _cumsum(when: Condition) -> tuple[Api, ...]:
    return (
        fn("cumsum", "input, dim", when),
        method("cumsum", "dim, dtype", when),
        method("cumsum_", "dim, dtype", when),
    )


_REDUCTIONS = (
    Entry(
        id="histc-float-cuda",
        summary="`histc` of floating-point input on CUDA",
        apis=(
            fn("histc", "input, bins, min, max", _HISTC_FLOAT),
            method("histc", "bins, min, max", _HISTC_FLOAT),
        ),
        condition="floating-point input",
        device=Device.CUDA,
        phase=Phase.FORWARD,
        aten=aten("histc", when=_HISTC_FLOAT),
        history=_raises(V(1, 7)),
        caller="_histc_cuda with floating point input",
        alternative="quantise first: `torch.bincount(torch.bucketize(x, edges))` (no weights)",
        example="torch.histc(x, bins=10)",
        sources=(
            "use_deterministic_algorithms docstring (2.13)",
            "torch/_meta_registrations.py meta_histc (2.13)",
            "the caller was `_histc_cuda` before 2.8",
        ),
    ),
    Entry(
        id="histc-integer-cuda",
        summary="`histc` of integer input on CUDA",
        apis=(
            fn("histc", "input, bins, min, max", ProvablyInteger("input")),
            method("histc", "bins, min, max", ProvablyInteger("input")),
        ),
        condition="integer input (integer atomics are order-independent)",
        device=Device.CUDA,
        phase=Phase.FORWARD,
        aten=aten("histc", when=ProvablyInteger("input")),
        history=(Period(V(1, 7), Behaviour.RAISES), Period(V(2, 8), Behaviour.DETERMINISTIC)),
        caller="_histc_cuda",
        example="torch.histc(torch.tensor([1, 2, 2], device='cuda'), bins=3)",
        correction=(
            "Split from the reference's histc entry so that the release matters: integer input "
            "stopped alerting with PR #151701 (April 2025), so 2.8."
        ),
        sources=("PR #151701",),
    ),
    Entry(
        id="bincount-weights-cuda",
        summary="`bincount` with weights on CUDA",
        apis=(
            fn("bincount", "input, weights, minlength", Given("weights")),
            method("bincount", "weights, minlength", Given("weights")),
        ),
        condition="`weights` given (without weights it is deterministic)",
        device=Device.CUDA,
        phase=Phase.FORWARD,
        aten=aten("bincount", when=Given("weights")),
        history=_raises(V(1, 7)),
        caller="_bincount_cuda",
        alternative="`torch.zeros(n, device=...).index_add_(0, x, w)` (deterministic in "
        "deterministic mode)",
        example="torch.bincount(idx, weights=src)",
        sources=("use_deterministic_algorithms docstring (2.13)",),
    ),
    Entry(
        id="median-dim-cuda",
        summary="`median` along a dimension (values and indices) on CUDA",
        apis=(
            fn("median", "input, dim, keepdim", Given("dim")),
            method("median", "dim, keepdim", Given("dim")),
        ),
        condition="a `dim` argument (returns indices); `median(x)` alone is deterministic",
        device=Device.CUDA,
        phase=Phase.FORWARD,
        aten=aten("median", when=Given("dim")),
        history=_raises(V(1, 8)),
        caller="median CUDA with indices output",
        alternative="`s, i = torch.sort(x, dim=d, stable=True)` and select index `(n - 1) // 2`",
        example="torch.median(x, dim=1)",
        sources=("use_deterministic_algorithms docstring (2.13)", "PR #46942"),
    ),
    Entry(
        id="nanmedian-dim-cuda",
        summary="`nanmedian` along a dimension (values and indices) on CUDA",
        apis=(
            fn("nanmedian", "input, dim, keepdim", Given("dim")),
            method("nanmedian", "dim, keepdim", Given("dim")),
        ),
        condition="a `dim` argument (returns indices)",
        device=Device.CUDA,
        phase=Phase.FORWARD,
        aten=aten("nanmedian", when=Given("dim")),
        history=_raises(V(1, 8)),
        caller="median CUDA with indices output",
        alternative="a stable sort after masking NaN, as for `median`",
        example="torch.nanmedian(x, dim=1)",
        sources=("aten Sorting.cpp median_with_indices_impl (not in the docstring)",),
    ),
    Entry(
        id="cumsum-cuda",
        summary="`cumsum` of floating-point values on CUDA",
        apis=_cumsum(Floating("input", dtype_param="dtype", whole_exact=True)),
        condition="floating-point or complex values (scans of integers, or of whole numbers "
        "cast to float32/float64, are exact)",
        device=Device.CUDA,
        phase=Phase.FORWARD,
        aten=aten(
            "cumsum", "cumsum_", when=Floating("input", dtype_param="dtype", whole_exact=True)
        ),
        history=(
            Period(V(1, 13), Behaviour.RAISES),
            # From then on only the 1-D case is nondeterministic (the next entry).
            Period(V(2, 6), Behaviour.DETERMINISTIC),
        ),
        caller="cumsum_cuda_kernel",
        example="torch.cumsum(x, dim=1)",
        correction=_CUMSUM_CORRECTION,
        sources=("PR #75693", "PR #140887"),
    ),
    Entry(
        id="cumsum-1d-cuda",
        summary="`cumsum` of a 1-D floating-point tensor on CUDA",
        apis=_cumsum(
            all_of(
                Floating("input", dtype_param="dtype", whole_exact=True), OneDimensional("input")
            )
        ),
        condition="floating-point or complex values, 1-D (or one non-singleton dimension): "
        "the only case that uses CUB's nondeterministic scan",
        device=Device.CUDA,
        phase=Phase.FORWARD,
        aten=aten(
            "cumsum",
            "cumsum_",
            when=all_of(
                Floating("input", dtype_param="dtype", whole_exact=True), OneDimensional("input")
            ),
        ),
        history=(Period(V(2, 6), Behaviour.FIXED_BY_MODE),),
        example="torch.cumsum(x.flatten(), dim=0)",
        correction=_CUMSUM_CORRECTION,
        sources=("ATen/native/cuda/ScanUtils.cuh scan_dim (2.13)", "PR #140887"),
    ),
    Entry(
        id="kthvalue-cuda",
        summary="`kthvalue` on CUDA",
        apis=(fn("kthvalue", "input, k, dim, keepdim"), method("kthvalue", "k, dim, keepdim")),
        condition="repeated k-th values: which index is returned",
        device=Device.CUDA,
        phase=Phase.FORWARD,
        aten=aten("kthvalue"),
        history=(Period(V(1, 8), Behaviour.RAISES), Period(V(2, 10), Behaviour.DETERMINISTIC)),
        caller="kthvalue CUDA",
        alternative="upgrade to torch 2.10+, where the kernel always returns the smallest index",
        example="torch.kthvalue(x, 2, dim=1)",
        correction=(
            "The reference marks kthvalue as made deterministic by deterministic mode; PR #165762 "
            "(Oct 2025, so 2.10) made the CUDA kernel itself deterministic (smallest index) and "
            "removed the alert, so enabling the mode changes nothing and there is no hazard left."
        ),
        sources=("PR #165762", "PR #46942", "issue #186883"),
    ),
    Entry(
        id="mode-cuda",
        summary="`torch.mode` on CUDA while tracing",
        apis=(fn("mode", "input, dim, keepdim"), method("mode", "dim, keepdim")),
        condition="torch.compile/export: the fake-tensor (meta) kernel alerts; eager does not",
        device=Device.CUDA,
        phase=Phase.FORWARD,
        aten=aten("mode"),
        history=_raises(V(2, 0)),
        caller="median CUDA with indices output",
        scope=Scope.TRACED,
        sources=("torch/_meta_registrations.py meta_median_mode_dim (2.13)", _NOT_DETERMINED),
    ),
    Entry(
        id="resize-quantized",
        summary="`resize_` of a quantized tensor",
        apis=(method("resize_", "sizes", ProvablyQuantized("input")),),
        condition="a quantized tensor (growing it leaves uninitialised memory)",
        device=Device.CPU,
        phase=Phase.FORWARD,
        aten=aten("resize_", when=ProvablyQuantized("input")),
        history=_raises(V(2, 1)),
        caller="quantized_resize_cpu_",
        alternative="build a new tensor with `torch.quantize_per_tensor` of initialised values",
        example="torch.quantize_per_tensor(torch.rand(4), 0.1, 0, torch.quint8).resize_(8)",
        sources=("use_deterministic_algorithms docstring (2.13)", "CPU probe raises"),
    ),
)

# -- third-party packages -----------------------------------------------------------------
# Graph libraries aggregate messages by scattering them onto nodes; on CUDA the scatter adds
# with atomics, so the sum's order (and its last bits) changes from run to run, in the forward
# and in the backward pass. PyTorch Geometric and torch_scatter do it through PyTorch's own
# ``scatter_add_``/``scatter_reduce_``/``index_select`` (so deterministic mode selects their
# deterministic kernels), DGL through kernels of its own that deterministic mode does not
# reach; torchvision's RoI ops alert in their CUDA backward like PyTorch's ops.


@dataclass(frozen=True, slots=True)
class Aggregates(Condition):
    """A graph layer's aggregation (``aggr``/``aggregator_type``) sums or averages: a name
    among ``values``, or a list of aggregations with one of them."""

    param: str
    values: tuple[str, ...]
    default: str

    def evaluate(self, call: CallView) -> bool | None:
        value = call.value(self.param)
        if value is MISSING:
            value = self.default
        if isinstance(value, str):
            return value in self.values
        if isinstance(value, tuple) and all(isinstance(v, str) for v in value):
            return any(v in self.values for v in value)
        return None

    def params(self) -> frozenset[str]:
        return frozenset({self.param})

    def describe(self) -> str:
        return f"`{self.param}` is " + " or ".join(repr(v) for v in self.values)


_SUM_MEAN = ("add", "sum", "mean")
_PYG = "torch_geometric"
_PYG_NN = "torch_geometric.nn"
# PyG message-passing layers that sum or average messages, and their aggregation default.
_PYG_LAYERS = {
    "GCNConv": "add", "SAGEConv": "mean", "GATConv": "add", "GATv2Conv": "add",
    "GINConv": "add", "GINEConv": "add", "GraphConv": "add", "ChebConv": "add",
    "TAGConv": "add", "SGConv": "add", "SSGConv": "add", "APPNP": "add", "ARMAConv": "add",
    "GCN2Conv": "add", "TransformerConv": "add", "GatedGraphConv": "add", "NNConv": "add",
    "RGCNConv": "mean", "FastRGCNConv": "mean", "RGATConv": "add", "ResGatedGraphConv": "add",
    "SuperGATConv": "add", "HypergraphConv": "add", "LEConv": "add", "ClusterGCNConv": "add",
    "FiLMConv": "mean", "GeneralConv": "add", "PNAConv": "add", "CGConv": "add",
    "EGConv": "add", "FAConv": "add", "LGConv": "add", "MFConv": "add", "PDNConv": "add",
    "HEATConv": "add", "HGTConv": "add", "HANConv": "add", "GPSConv": "add",
    "AntiSymmetricConv": "add", "MixHopConv": "add", "SplineConv": "mean", "GMMConv": "mean",
    "FeaStConv": "mean", "GENConv": "add", "DNAConv": "add",
}  # fmt: skip
# PyG model classes built from such layers.
_PYG_MODELS = ("GCN", "GraphSAGE", "GIN", "GAT", "PNA", "SGFormer", "Polynormer")
# DGL layers that sum or average messages, and their aggregation parameter (position after
# the input sizes) and default, when they have one.
_DGL_LAYERS: dict[str, tuple[str, str] | None] = {
    "GraphConv": None, "GATConv": None, "GATv2Conv": None, "DotGatConv": None,
    "SAGEConv": ("in_feats, out_feats, aggregator_type", "mean"),
    "GINConv": ("apply_func, aggregator_type", "sum"),
    "GINEConv": None, "RelGraphConv": None, "GatedGraphConv": None, "TAGConv": None,
    "SGConv": None, "APPNPConv": None, "ChebConv": None, "GCN2Conv": None, "AGNNConv": None,
    "CFConv": None, "EGATConv": None, "EdgeGATConv": None,
    "GMMConv": ("in_feats, out_feats, dim, n_kernels, aggregator_type", "sum"),
    "NNConv": ("in_feats, out_feats, edge_func, aggregator_type", "mean"),
}  # fmt: skip
_DGL_SUM_MEAN = ("sum", "mean", "gcn")
# DGL's graph methods that run a built-in message function and reducer, with the reducer's
# position among their arguments.
DGL_MESSAGE_PASSING = {"update_all": 1, "send_and_recv": 2, "pull": 2, "push": 2}
DGL_FUNCTIONS = "dgl.function."
DGL_SUM_MEAN = frozenset({"dgl.function.sum", "dgl.function.mean"})


@dataclass(frozen=True, slots=True)
class Reducer(Condition):
    """A DGL reducer is a built-in sum or mean: a ``Named`` ``dgl.function.*``, or a tuple of
    the candidates (an attribute assigned one of several)."""

    param: str

    def evaluate(self, call: CallView) -> bool | None:
        value = call.value(self.param)
        candidates = value if isinstance(value, tuple) else (value,)
        names = [c.qualified for c in candidates if isinstance(c, Named)]
        if not names or len(names) != len(candidates):
            return None
        hits = [name in DGL_SUM_MEAN for name in names]
        if all(hits):
            return True
        if not any(hits) and all(name.startswith(DGL_FUNCTIONS) for name in names):
            return False
        return None

    def params(self) -> frozenset[str]:
        return frozenset({self.param})

    def describe(self) -> str:
        return "the reducer is `sum` or `mean`"


def _library_api(name: str, params: str = "", when: Condition = ALWAYS) -> Api:
    return Api(name, _split(params), when)


def _pyg_layers() -> tuple[Api, ...]:
    layers = tuple(
        _library_api(f"{_PYG_NN}.{name}", "", Aggregates("aggr", _SUM_MEAN, default))
        for name, default in _PYG_LAYERS.items()
    )
    # SAGEConv takes ``aggr`` third, after the channel sizes.
    sage = _library_api(
        f"{_PYG_NN}.SAGEConv",
        "in_channels, out_channels, aggr",
        Aggregates("aggr", _SUM_MEAN, "mean"),
    )
    models = tuple(_library_api(f"{_PYG_NN}.{name}") for name in _PYG_MODELS)
    return (*(api for api in layers if api.short != "SAGEConv"), sage, *models)


def _dgl_layers() -> tuple[Api, ...]:
    apis = []
    for name, aggregation in _DGL_LAYERS.items():
        if aggregation is None:
            apis.append(_library_api(f"dgl.nn.{name}"))
        else:
            params, default = aggregation
            when = Aggregates("aggregator_type", _DGL_SUM_MEAN, default)
            apis.append(_library_api(f"dgl.nn.{name}", params, when))
    return tuple(apis)


_SCATTER_REDUCE = Aggregates("reduce", ("sum", "add", "mean"), "sum")
_THIRD_PARTY_SOURCES = "issues of the package (maintainers' replies); not run on a GPU here"

_THIRD_PARTY = (
    Entry(
        id="pyg-message-passing-cuda",
        summary="PyTorch Geometric message passing (sum/mean scatter aggregation) on CUDA",
        apis=(
            *_pyg_layers(),
            _library_api(f"{_PYG_NN}.global_add_pool", "x, batch, size"),
            _library_api(f"{_PYG_NN}.global_mean_pool", "x, batch, size"),
            _library_api(
                f"{_PYG}.utils.scatter", "src, index, dim, dim_size, reduce", _SCATTER_REDUCE
            ),
            _library_api(f"{_PYG}.utils.softmax", "src, index, ptr, num_nodes, dim"),
        ),
        condition="sum or mean aggregation of messages onto nodes (or of nodes onto graphs) "
        "on CUDA, through PyTorch's scatter_add_/scatter_reduce_ and index_select backward",
        device=Device.CUDA,
        phase=Phase.BOTH,
        history=_fixed_by_mode(V(2, 0)),
        alternative="deterministic mode; or a SparseTensor adjacency (sorted CSR aggregation)",
        sources=(
            "pyg-team/pytorch_geometric#2788, #3175, #7525 (global_add_pool and "
            "global_mean_pool deterministic under deterministic mode)",
            _NOT_DETERMINED,
            _THIRD_PARTY_SOURCES,
        ),
        package=_PYG,
    ),
    Entry(
        id="torch-scatter-sum-mean-cuda",
        summary="torch_scatter's sum/mean scatter on CUDA",
        apis=(
            _library_api(
                "torch_scatter.scatter", "src, index, dim, out, dim_size, reduce", _SCATTER_REDUCE
            ),
            *(
                _library_api(f"torch_scatter.{name}", "src, index, dim, out, dim_size")
                for name in (
                    "scatter_add",
                    "scatter_sum",
                    "scatter_mean",
                    "scatter_softmax",
                    "scatter_log_softmax",
                    "scatter_std",
                    "scatter_logsumexp",
                )
            ),
        ),
        condition="sum or mean reduction (and the composites built on it) on CUDA: "
        "`out.scatter_add_` with atomic adds; `segment_*` of sorted indices is deterministic",
        device=Device.CUDA,
        phase=Phase.BOTH,
        history=_fixed_by_mode(V(2, 0)),
        alternative="`torch_scatter.segment_csr` / `segment_coo` on sorted indices, or "
        "deterministic mode",
        sources=("rusty1s/pytorch_scatter#226", "pyg-team/pytorch_geometric#3175", _NOT_DETERMINED),
        package="torch_scatter",
    ),
    Entry(
        id="dgl-message-passing-cuda",
        summary="DGL message passing with a sum/mean reducer on CUDA",
        apis=(
            *_dgl_layers(),
            _library_api(
                "dgl.DGLGraph.update_all",
                "message_func, reduce_func, apply_node_func, etype",
                Reducer("reduce_func"),
            ),
        ),
        condition="a built-in message function with a `sum` or `mean` reducer "
        "(`g.update_all(fn.copy_u(...), fn.sum(...))`, and the layers built on it) on CUDA: "
        "DGL's own kernels add with atomics, which PyTorch's deterministic mode does not reach",
        device=Device.CUDA,
        phase=Phase.BOTH,
        history=(Period(V(2, 0), Behaviour.SILENT),),
        alternative="none inside DGL: aggregate in PyTorch (scatter_add_ under deterministic mode) "
        "where runs must repeat",
        sources=(
            "dmlc/dgl#1471 (maintainer: built-in message passing uses atomic operators)",
            "dmlc/dgl#7241 (2024: still nondeterministic with use_deterministic_algorithms)",
            _NOT_DETERMINED,
        ),
        package="dgl",
    ),
    Entry(
        id="roi-align-backward-cuda",
        summary="backward of torchvision's `roi_align` on CUDA",
        apis=(
            _library_api(
                "torchvision.ops.roi_align",
                "input, boxes, output_size, spatial_scale, sampling_ratio, aligned",
            ),
            _library_api("torchvision.ops.RoIAlign", "output_size, spatial_scale, sampling_ratio"),
            _library_api("torchvision.ops.MultiScaleRoIAlign", "featmap_names, output_size"),
        ),
        condition="differentiated with respect to the feature map (atomic adds)",
        device=Device.CUDA,
        phase=Phase.BACKWARD,
        history=_fixed_by_mode(V(2, 1), raised_from=V(2, 0)),
        caller="roi_align_backward_kernel",
        alternative="none before torchvision 0.16; from 0.16 (torch 2.1), deterministic mode, at "
        "a price: the first call compiles the pure-Python `_roi_align` (about 70 s on an H200), "
        "and its backward is a sorted `index_put_` whose cost grows with boxes x sampling points "
        "(5 s for 256 boxes of 16x16 pixels with adaptive sampling); a fixed `sampling_ratio` "
        "keeps it small",
        correction=(
            "The reference has no torchvision entries. From torchvision 0.16 (released with "
            "torch 2.1; pytorch/vision#7587, May 2023) `roi_align` on a CUDA input takes a "
            "pure-Python implementation whenever deterministic mode is on, so the mode fixes it "
            "instead of raising. Seen on an H200 with torchvision 0.26 (2026-12-04): default "
            "mode differed in 4 of 4 repeats; in deterministic mode `torchvision.ops.roi_align` "
            "compiled and ran its backward through `indexing_backward_kernel` (the deterministic "
            "`index_put_`), without raising."
        ),
        sources=(
            "torchvision csrc/ops/cuda/roi_align_kernel.cu alerts `roi_align_backward_kernel` "
            "(the path deterministic mode took before 0.16)",
            "pytorch/vision#7587 (deterministic pure-Python roi_align, torchvision 0.16)",
            "pytorch/vision#8168 (the pure-Python path is memory hungry unless compiled)",
            _NOT_DETERMINED,
        ),
        package="torchvision",
    ),
    Entry(
        id="roi-pool-backward-cuda",
        summary="backward of torchvision's `roi_pool` on CUDA",
        apis=(
            _library_api("torchvision.ops.roi_pool", "input, boxes, output_size, spatial_scale"),
            _library_api("torchvision.ops.RoIPool", "output_size, spatial_scale"),
        ),
        condition="differentiated with respect to the feature map (atomic adds)",
        device=Device.CUDA,
        phase=Phase.BACKWARD,
        history=_raises(V(2, 0)),
        caller="roi_pool_backward_kernel",
        sources=(
            "torchvision csrc/ops/cuda/roi_pool_kernel.cu alerts `roi_pool_backward_kernel`",
            _NOT_DETERMINED,
        ),
        package="torchvision",
    ),
)

ENTRIES: tuple[Entry, ...] = (
    *_CONVS,
    *_PROGRAM_WIDE,
    *_INDEXING,
    *_PADDING,
    *_POOLING,
    *_INTERPOLATION,
    *_LOSSES,
    *_REDUCTIONS,
    *_THIRD_PARTY,
)

# Qualified spellings that name a catalogued API by another path: the prefix, replaced by the
# public namespace, keeps only the last part (``torch_geometric.nn.conv.gcn_conv.GCNConv``).
_ALIASES = {
    "torch.nn.modules.": "torch.nn.",
    "torch_geometric.nn.": "torch_geometric.nn.",
    "torch_geometric.utils.": "torch_geometric.utils.",
    "torch_scatter.": "torch_scatter.",
    "dgl.nn.": "dgl.nn.",
    "torchvision.ops.": "torchvision.ops.",
}


def _index() -> tuple[
    Mapping[str, tuple[tuple[Entry, Api], ...]], Mapping[str, tuple[tuple[Entry, Api], ...]]
]:
    by_name: dict[str, list[tuple[Entry, Api]]] = {}
    methods: dict[str, list[tuple[Entry, Api]]] = {}
    for entry in ENTRIES:
        for api in entry.apis:
            by_name.setdefault(api.name, []).append((entry, api))
            if api.kind is ApiKind.METHOD:
                methods.setdefault(api.short, []).append((entry, api))
    return (
        MappingProxyType({k: tuple(v) for k, v in by_name.items()}),
        MappingProxyType({k: tuple(v) for k, v in methods.items()}),
    )


BY_API, BY_METHOD = _index()
BY_ID: Mapping[str, Entry] = MappingProxyType({entry.id: entry for entry in ENTRIES})


def canonical(qualified: str) -> str:
    """``torch.nn.modules.upsampling.Upsample`` -> ``torch.nn.Upsample``."""
    for prefix, replacement in _ALIASES.items():
        if qualified.startswith(prefix):
            return replacement + qualified.rsplit(".", 1)[1]
    return qualified


def apis_named(qualified: str) -> tuple[tuple[Entry, Api], ...]:
    """Every (entry, API) pair an imported name refers to."""
    return BY_API.get(canonical(qualified), ())


def reported(entries: Sequence[Entry] = ENTRIES) -> tuple[Entry, ...]:
    """The entries of PyTorch's own ops that the rules report per call (RPL401/RPL402)."""
    return tuple(entry for entry in entries if entry.scope is Scope.CALL and entry.package is None)


def third_party(entries: Sequence[Entry] = ENTRIES) -> tuple[Entry, ...]:
    """The entries of third-party packages (RPL403)."""
    return tuple(entry for entry in entries if entry.package is not None)
