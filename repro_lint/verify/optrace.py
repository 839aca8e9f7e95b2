"""The op-level trace of one step's window, to find where two runs part: for each op that
runs, digests of its inputs and outputs, its phase, module path and innermost user line; and
each draw from a host generator (numpy, ``random``) with the generator's state before it.

It runs only in the re-runs that locate a divergence, and only in the window of the first
step that differs (from the previous optimizer step to that step's end), so its cost is
bounded by one step. Digests stay on the device until the window closes.
"""

from __future__ import annotations

import dis
import functools
import json
import random
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import Any, cast

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from repro_lint.catalog import Device, Entry, Phase
from repro_lint.verify import digest as digests
from repro_lint.verify.recorder import Identity, Recorder, Stop
from repro_lint.verify.trace import Site, aten_index, bind_schema, hazardous, site_of

# Ops whose output holds whatever the allocator returned.
_UNINITIALISED = frozenset(
    {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "empty_permuted"}
)
# In-place ops whose result does not depend on what their first argument held.
_OVERWRITE = frozenset(
    {"fill_", "zero_", "copy_", "uniform_", "normal_", "random_", "bernoulli_", "exponential_",
     "geometric_", "cauchy_", "log_normal_", "set_", "resize_"}
)  # fmt: skip
# Random ops that take no generator argument (they use the default one).
_RANDOM = frozenset(
    {"native_dropout", "_fused_dropout", "rrelu_with_noise", "rrelu_with_noise_",
     "dropout", "feature_dropout", "alpha_dropout", "feature_alpha_dropout"}
)  # fmt: skip
# Namespaces of ops that compute nothing worth comparing (profiler ranges).
_SKIPPED_NAMESPACES = frozenset({"profiler"})
# Methods of host generators that seed or inspect them rather than draw.
_NOT_DRAWS = frozenset(
    {"seed", "getstate", "setstate", "get_state", "set_state", "spawn", "jumped",
     "bit_generator", "__getstate__", "__setstate__", "__reduce__", "__init__"}
)  # fmt: skip
_MISSING = object()
_RANDOM_METHODS = (
    "random", "uniform", "triangular", "randint", "choice", "randrange", "sample", "shuffle",
    "choices", "normalvariate", "gauss", "lognormvariate", "expovariate", "vonmisesvariate",
    "gammavariate", "betavariate", "paretovariate", "weibullvariate", "getrandbits",
    "randbytes", "binomialvariate",
)  # fmt: skip
# Functions that initialise the module they are given (or are a method of).
_INITIALISERS = frozenset(
    {"__init__", "reset_parameters", "_reset_parameters", "reset_running_stats",
     "init_weights", "_init_weights", "weights_init", "initialize_weights"}
)  # fmt: skip


# Instructions whose source position spans a whole compound statement (``for x in loader:``
# and its body): only their first line is where the op was asked for.
_STATEMENT_WIDE = frozenset(
    dis.opmap[name] for name in ("FOR_ITER", "GET_ITER") if name in dis.opmap
)


def _site(frame: FrameType, path: str) -> Site:
    site = site_of(frame, path)
    code = frame.f_code.co_code
    if site.end_line > site.line and 0 <= frame.f_lasti < len(code):
        if code[frame.f_lasti] in _STATEMENT_WIDE:
            return Site(site.path, site.line, site.line)
    return site


@dataclass
class _Walk:
    site: Site | None = None
    origin: Site | None = None
    initialising: bool = False
    building: torch.nn.Module | None = None


def _default(generator: object) -> bool:
    """Whether ``generator`` is one of torch's default generators (``random_split`` passes
    the default one explicitly). The dispatcher hands ops a new Python object for the same
    generator, so it is recognised by its seed and state."""
    if not isinstance(generator, torch.Generator):
        return False
    defaults = [torch.default_generator]
    if digests.cuda_initialised():
        defaults.extend(torch.cuda.default_generators)
    for default in defaults:
        if generator.device != default.device or generator.initial_seed() != default.initial_seed():
            continue
        if torch.equal(generator.get_state(), default.get_state()):
            return True
    return False


@functools.cache
def draws_randomness(packet: Any) -> bool:
    """Whether an aten op draws from a generator (some overload takes ``generator``)."""
    if packet.__name__ in _RANDOM:
        return True
    for overload in packet.overloads():
        schema = getattr(packet, overload)._schema
        if any(argument.name == "generator" for argument in schema.arguments):
            return True
    return False


def _hazard_here(entry: Entry, device_type: str) -> bool:
    if entry.device is Device.CUDA and device_type != "cuda":
        return False
    if entry.device is Device.CPU and device_type != "cpu":
        return False
    return hazardous(entry)


def _storage(tensor: torch.Tensor) -> int | None:
    try:
        return int(tensor.untyped_storage().data_ptr())
    except Exception:  # sparse, meta and subclass tensors have no plain storage
        return None


class OpTrace:
    """Records ops and host draws between ``open`` and ``close``."""

    def __init__(self, recorder: Recorder, step: int, initialisation: str | None) -> None:
        self.recorder = recorder
        self.step = step
        self.initialisation = initialisation
        self.opened = False
        self.closed = False
        self.events: list[dict[str, Any]] = []
        self.inputs: list[list[torch.Tensor | None]] = []
        self.outputs: list[list[torch.Tensor | None]] = []
        self.modules: list[torch.nn.Module | None] = []
        # Autograd nodes, by id, to the forward op's event: a backward op is reported where its
        # forward ran.
        self.nodes: dict[int, int] = {}
        # Forward ops' outputs, to their event.
        self.produced: Identity[torch.Tensor, int] = Identity()
        self.uninitialised: set[int] = set()
        self.aten = aten_index()
        self.mode: _Mode | None = None
        self.patched: list[tuple[Any, str, Any]] = []
        self.drawing = False

    # -- the window --

    def on_boundary(self, step: int) -> None:
        if step == self.step - 1:
            self.open()

    def on_model_forward(self, label: str) -> None:
        """A model's first forward: with the model whose initialisation differs, the window
        holds what built it."""
        if self.initialisation == label and self.opened:
            raise Stop("located")

    def open(self) -> None:
        if self.opened:
            return
        self.opened = True
        self.mode = _Mode(self)
        self.mode.__enter__()  # type: ignore[no-untyped-call]
        self._patch_generators()

    def close(self) -> None:
        if not self.opened or self.closed:
            return
        self.closed = True
        self._unpatch()
        if self.mode is not None:
            self.mode.__exit__(None, None, None)  # type: ignore[no-untyped-call]
        self._write()

    # -- recording --

    def _phase(self, node: object) -> str:
        state = self.recorder.state
        if node is not None or state.in_backward:
            return "backward"
        if state.in_optimizer:
            return "optimizer"
        if state.loading:
            return "data"
        if state.depth:
            return "forward"
        if state.backward_done:
            return "optimizer"
        if state.forward_done:
            return "forward"
        return "data"

    def _walk(self, frame: FrameType | None) -> _Walk:
        """From an op's frame out to the innermost user line: the build site of the innermost
        module or DataLoader whose code ran in between, and the module being initialised
        (its ``__init__`` or ``reset_parameters``, or ``torch.nn.init`` on the way)."""
        recorder = self.recorder
        walk = _Walk()
        found_origin = False
        while frame is not None:
            name = frame.f_code.co_name
            if frame.f_globals.get("__name__") == "torch.nn.init":
                walk.initialising = True
            if name in _INITIALISERS and walk.building is None:
                local = frame.f_locals
                for candidate in (local.get("module"), local.get("m"), local.get("self")):
                    if isinstance(candidate, torch.nn.Module):
                        walk.building, walk.initialising = candidate, True
                        break
            path = recorder.files.resolve(frame.f_code.co_filename)
            if path is not None:
                walk.site = _site(frame, path)
                return walk
            if not found_origin:
                owner = frame.f_locals.get("self")
                if owner is not None:
                    loader = recorder.loader_of(owner)
                    if loader is not None:
                        walk.origin, found_origin = loader.built, True
                    elif isinstance(owner, torch.nn.Module) and owner in recorder.built:
                        walk.origin, found_origin = recorder.built[owner], True
            frame = frame.f_back
        return walk

    def _module(self, walk: _Walk) -> torch.nn.Module | None:
        if walk.building is not None:
            return walk.building
        stack = self.recorder.state.stack
        return stack[-1] if stack else None

    def on_op(
        self,
        func: Any,
        args: Sequence[object],
        kwargs: Mapping[str, object],
        run: Any,
    ) -> Any:
        packet = func._overloadpacket
        name = packet.__name__
        if func.namespace in _SKIPPED_NAMESPACES:
            return run()
        schema = func._schema
        overwritten = name in _OVERWRITE
        inputs: list[torch.Tensor | None] = []
        reads_uninitialised = False
        bound: list[tuple[str, object]] = list(
            zip((a.name for a in schema.arguments), args, strict=False)
        )
        bound.extend(kwargs.items())
        device = None
        generator = False
        external = False
        for position, (argument, value) in enumerate(bound):
            if argument == "generator" and value is not None and not _default(value):
                generator = True
            if isinstance(value, torch.UntypedStorage | torch.TypedStorage):
                # Data filled outside the traced ops: shared memory from a DataLoader worker,
                # a file.
                external = True
            if argument == "out" or (overwritten and position == 0):
                continue
            for tensor in digests.tensors_in(value):
                device = device or tensor.device.type
                self._learn_node(tensor)
                if _storage(tensor) in self.uninitialised:
                    reads_uninitialised = True
                    inputs.append(None)
                else:
                    inputs.append(digests.digest(tensor))
        result = run()
        outputs: list[torch.Tensor | None] = []
        first_shape = None
        returns_alias = any(r.alias_info is not None for r in schema.returns)
        for tensor in digests.tensors_in(result):
            device = device or tensor.device.type
            if first_shape is None:
                first_shape = list(tensor.shape)
            storage = _storage(tensor)
            if name in _UNINITIALISED or (
                returns_alias and not overwritten and reads_uninitialised
            ):
                if storage is not None:
                    self.uninitialised.add(storage)
                outputs.append(None)
                continue
            if storage is not None:
                self.uninitialised.discard(storage)
            outputs.append(digests.digest(tensor))
        node = torch._C._current_autograd_node()
        walk = self._walk(sys._getframe(2))
        module = self._module(walk)
        initialising = walk.initialising and node is None and not self.recorder.state.depth
        phase = "initialisation" if initialising else self._phase(node)
        event: dict[str, Any] = {
            "kind": "op",
            "op": str(func),
            "phase": phase,
            "site": walk.site.to_json() if walk.site else None,
            "origin": walk.origin.to_json() if walk.origin else None,
            "random": draws_randomness(packet),
            "generator": generator,
            "shape": first_shape,
            "entries": self._entries(name, func, args, kwargs, device or "cpu"),
        }
        if reads_uninitialised:
            event["reads_uninitialised"] = True
        if external:
            event["external"] = True
        if node is not None:
            forward = self.nodes.get(id(node))
            if forward is not None:
                before = self.events[forward]
                event["backward_of"] = before["op"]
                event["site"], event["origin"] = before["site"], before["origin"]
                event["entries"] = sorted({*event["entries"], *before["backward_entries"]})
                module = self.modules[forward]
        event["backward_entries"] = self._backward_entries(
            name, func, args, kwargs, device or "cpu"
        )
        if node is None and torch.is_grad_enabled():
            for tensor in digests.tensors_in(result):
                self.produced[tensor] = len(self.events)
        self.events.append(event)
        self.inputs.append(inputs)
        self.outputs.append(outputs)
        self.modules.append(module)
        return result

    def _learn_node(self, tensor: torch.Tensor) -> None:
        """Map the autograd node of a tensor an earlier op produced to that op. Below autograd,
        where ops are dispatched to this trace, an output has no node yet; it has one when a
        later op (in the forward or the backward) takes it as input."""
        if not tensor.requires_grad:
            return
        node = tensor.grad_fn
        if node is None or id(node) in self.nodes:
            return
        index = self.produced.get(tensor)
        if index is not None:
            self.nodes[id(node)] = index

    def _matching(
        self,
        name: str,
        func: Any,
        args: Sequence[object],
        kwargs: Mapping[str, object],
        device: str,
    ) -> list[Entry]:
        specs = self.aten.get(name)
        if not specs:
            return []
        call = bind_schema(func, args, kwargs)
        return [
            entry
            for entry, op in specs
            if op.when.evaluate(call) is not False and _hazard_here(entry, device)
        ]

    def _entries(
        self,
        name: str,
        func: Any,
        args: Sequence[object],
        kwargs: Mapping[str, object],
        device: str,
    ) -> list[str]:
        return sorted(
            e.id
            for e in self._matching(name, func, args, kwargs, device)
            if e.phase is not Phase.BACKWARD
        )

    def _backward_entries(
        self,
        name: str,
        func: Any,
        args: Sequence[object],
        kwargs: Mapping[str, object],
        device: str,
    ) -> list[str]:
        return sorted(
            e.id
            for e in self._matching(name, func, args, kwargs, device)
            if e.phase is not Phase.FORWARD
        )

    # -- host generators --

    def _patch_generators(self) -> None:
        """Wrap the host generators' drawing methods: ``random.Random``'s (the module's
        functions are bound to its global instance) and numpy's module-level functions
        (bound to its global ``RandomState``). numpy's ``Generator`` and ``RandomState``
        classes are compiled and cannot be wrapped; their draws show through the tensors
        made from them."""
        for name in _RANDOM_METHODS:
            original = getattr(random.Random, name, None)
            if callable(original):
                self._patch(random.Random, name, self._wrap_method("random", name, original))
        for name in dir(random):
            bound = getattr(random, name)
            if getattr(bound, "__self__", None) is random._inst and name in _RANDOM_METHODS:
                method = getattr(random.Random, name)
                self._patch(random, name, functools.partial(method, random._inst))
        numpy = sys.modules.get("numpy")
        if numpy is None:
            return
        state = numpy.random.mtrand._rand
        for name in dir(numpy.random):
            bound = getattr(numpy.random, name, None)
            if (
                name.startswith("_")
                or name in _NOT_DRAWS
                or getattr(bound, "__self__", None) is not state
            ):
                continue
            function = cast(Callable[..., Any], bound)
            self._patch(numpy.random, name, self._wrap_function("numpy", name, state, function))

    def _patch(self, owner: Any, name: str, replacement: Any) -> None:
        # A class's own attribute, or _MISSING when it inherits it (then it is deleted again).
        original = vars(owner).get(name, _MISSING)
        self.patched.append((owner, name, original))
        setattr(owner, name, replacement)

    def _unpatch(self) -> None:
        for owner, name, original in reversed(self.patched):
            if original is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, original)
        self.patched.clear()

    def _wrap_method(
        self, kind: str, name: str, original: Callable[..., Any]
    ) -> Callable[..., Any]:
        trace = self

        @functools.wraps(original)
        def draw(generator: Any, *args: Any, **kwargs: Any) -> Any:
            return trace._drawing(
                kind, generator, name, lambda: original(generator, *args, **kwargs)
            )

        return draw

    def _wrap_function(
        self, kind: str, name: str, generator: Any, original: Callable[..., Any]
    ) -> Callable[..., Any]:
        trace = self

        @functools.wraps(original)
        def draw(*args: Any, **kwargs: Any) -> Any:
            return trace._drawing(kind, generator, name, lambda: original(*args, **kwargs))

        return draw

    def _drawing(self, kind: str, generator: Any, name: str, call: Callable[[], Any]) -> Any:
        """Record a draw (the outermost one: ``randint`` calls ``randrange``), then make it."""
        if self.drawing or self.closed:
            return call()
        self.drawing = True
        try:
            # The wrapper's caller.
            self._draw(kind, generator, name, sys._getframe(2))
            return call()
        finally:
            self.drawing = False

    def _draw(self, kind: str, owner: object, call: str, frame: FrameType) -> None:
        recorder = self.recorder
        if not recorder.active():
            return
        try:
            if kind == "numpy":
                state: int | None = digests.numpy_state(owner)
            else:
                state = digests.python_state(owner)  # type: ignore[arg-type]
        except NotImplementedError:
            # SystemRandom: every draw comes from the operating system.
            state = None
        numpy = sys.modules.get("numpy")
        is_global = owner is random._inst or (
            numpy is not None and owner is numpy.random.mtrand._rand
        )
        walk = self._walk(frame)
        called_by_user = recorder.files.resolve(frame.f_code.co_filename) is not None
        self.events.append(
            {
                "kind": "draw",
                "user_called": called_by_user,
                "op": f"{kind}.{call}",
                "family": kind,
                "generator": not is_global,
                "owner": type(owner).__name__,
                "state": state,
                "phase": "initialisation" if walk.building is not None else self._phase(None),
                "site": walk.site.to_json() if walk.site else None,
                "origin": walk.origin.to_json() if walk.origin else None,
            }
        )
        self.inputs.append([])
        self.outputs.append([])
        self.modules.append(self._module(walk))

    # -- output --

    def _names(self) -> dict[int, str]:
        names: dict[int, str] = {}
        models = self.recorder.models
        for model in models:
            for name, sub in model.module.named_modules():
                if id(sub) not in names:
                    prefix = model.label if len(models) > 1 else ""
                    names[id(sub)] = ".".join(p for p in (prefix, name) if p) or model.label
        return names

    def _write(self) -> None:
        flat: list[torch.Tensor | None] = []
        for inputs, outputs in zip(self.inputs, self.outputs, strict=True):
            flat.extend(inputs)
            flat.extend(outputs)
        values = iter(digests.read(flat))
        names = self._names()
        with (self.recorder.out / "ops.jsonl").open("w", encoding="utf-8") as out:
            for event, inputs, outputs, module in zip(
                self.events, self.inputs, self.outputs, self.modules, strict=True
            ):
                event["inputs"] = [next(values) for _ in inputs]
                event["outputs"] = [next(values) for _ in outputs]
                event.pop("backward_entries", None)
                if module is not None:
                    event["module"] = names.get(id(module))
                    event["module_type"] = type(module).__name__
                event["step"] = self.step
                out.write(json.dumps(event) + "\n")


# torch leaves TorchDispatchMode's constructor and subclass hook untyped.
class _Mode(TorchDispatchMode):  # type: ignore[no-untyped-call]
    def __init__(self, trace: OpTrace) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.trace = trace

    def __torch_dispatch__(
        self,
        func: Any,
        types: Any,
        args: Sequence[object] = (),
        kwargs: Mapping[str, object] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        trace = self.trace
        if trace.closed or not trace.recorder.active():
            return func(*args, **kwargs)
        recorder = trace.recorder
        recorder.busy = True
        try:
            return trace.on_op(func, args, kwargs, lambda: _run(recorder, func, args, kwargs))
        finally:
            recorder.busy = False


def _run(
    recorder: Recorder, func: Any, args: Sequence[object], kwargs: Mapping[str, object]
) -> Any:
    # The op itself is the user's: hooks it triggers (none, at this level) see the script.
    recorder.busy = False
    try:
        return func(*args, **kwargs)
    finally:
        recorder.busy = True
