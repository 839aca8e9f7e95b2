"""Records, in the process that runs the user's script, what decides its result: per step the
batches the model receives, the losses, the gradients and the parameters after the step; the
objects it saves; and its state when it ends. Tensors are reduced to digests on their device.

A step is an optimizer step. A script that steps its parameters by hand, with no optimizer,
has a step per ``backward()`` call; the step ends when the next forward of a model (or the
next backward, or the end) shows that the update is done. The trace is written as JSON lines,
a line per step, so a run that crashes or is killed leaves what it recorded.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import json
import math
import os
import shutil
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, Generic, TextIO, TypeVar

import torch
from torch.nn.modules.module import (
    register_module_forward_hook,
    register_module_forward_pre_hook,
)
from torch.optim.optimizer import (
    register_optimizer_step_post_hook,
    register_optimizer_step_pre_hook,
)
from torch.utils.data import DataLoader
from torch.utils.data.dataloader import _BaseDataLoaderIter
from torch.utils.weak import WeakIdKeyDictionary

from repro_lint.verify import digest as digests
from repro_lint.verify.saves import capture
from repro_lint.verify.trace import Site, UserFiles, site_of

# Records held in memory before they are written without waiting for a step to end.
_MAX_OPEN_RECORDS = 50_000


class Stop(BaseException):
    """Ends the user's script early; a BaseException, so ``except Exception`` cannot eat it."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Options:
    """What the parent process asks of one run."""

    max_steps: int | None = None
    max_seconds: float | None = None
    # The step whose window gets an op-level trace (1 is the first step, initialisation and
    # data loading before it included); None: no op-level trace.
    locate: int | None = None
    # The runs differ in the initialisation of this model: trace from the start, and stop at
    # its first forward.
    locate_initialisation: str | None = None
    # The user's files (their lines are where ops are reported).
    roots: tuple[str, ...] = ()
    # Bytes of tensor copies kept per run, for the largest difference of differing tensors.
    keep_bytes: int = 256 << 20

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Options:
        return cls(**{**data, "roots": tuple(data.get("roots", ()))})


K = TypeVar("K")
V = TypeVar("V")


class Identity(Generic[K, V]):
    """A mapping by object identity that does not keep its keys alive (tensors compare
    element-wise, so a plain weak dictionary cannot hold them)."""

    def __init__(self) -> None:
        self._items = WeakIdKeyDictionary()

    def get(self, key: K) -> V | None:
        found: V | None = self._items.get(key)  # type: ignore[no-untyped-call]
        return found

    def __setitem__(self, key: K, value: V) -> None:
        self._items[key] = value

    def __contains__(self, key: K) -> bool:
        return key in self._items

    def __getitem__(self, key: K) -> V:
        value: V = self._items[key]
        return value


@dataclass
class Model:
    """A module called from outside any other module's forward, with parameters."""

    label: str
    # Held until the run ends: the final state is read after the script returns, when its
    # own references are gone.
    module: torch.nn.Module
    built: Site | None


@dataclass
class Record:
    """One thing compared between runs: a digest, with where it comes from."""

    phase: str
    kind: str
    owner: str
    name: str = ""
    digest: torch.Tensor | None = None
    # A digest of a host value (the indices a sampler drew).
    host: int | None = None
    value: torch.Tensor | None = None
    shape: tuple[int, ...] | None = None

    def to_json(self, digest: int | None, value: float | None) -> dict[str, Any]:
        data: dict[str, Any] = {"phase": self.phase, "kind": self.kind, "owner": self.owner}
        if self.name:
            data["name"] = self.name
        data["digest"] = self.host if self.host is not None else digest
        if value is not None:
            data["value"] = value if math.isfinite(value) else repr(value)
        if self.shape is not None:
            data["shape"] = list(self.shape)
        return data


@dataclass
class _Loader:
    label: str
    built: Site | None


@dataclass
class _Backup:
    path: str
    existed: bool
    backup: str | None


@dataclass
class State:
    """Where the script is within its step, for the op-level trace's phases."""

    depth: int = 0
    # Inside a DataLoader's ``__next__``.
    loading: int = 0
    in_backward: int = 0
    in_optimizer: int = 0
    forward_done: bool = False
    backward_done: bool = False
    # Modules whose forward is running, outermost first (kept only while ops are traced).
    stack: list[torch.nn.Module] = field(default_factory=list)


class Recorder:
    """Installs hooks on torch while active and writes the trace to ``out``."""

    def __init__(self, out: Path, options: Options) -> None:
        self.out = out
        self.options = options
        self.files = UserFiles([Path(root) for root in options.roots])
        self.pid = os.getpid()
        self.thread = threading.get_ident()
        self.started = time.monotonic()
        self.lines: TextIO = (out / "trace.jsonl").open("w", encoding="utf-8")
        self.step = 0
        self.unit: str | None = None
        self.state = State()
        self.records: list[Record] = []
        # The input record of the model whose forward is running.
        self.input: Record | None = None
        self.models: list[Model] = []
        self.model_of: Identity[torch.nn.Module, Model] = Identity()
        # Held until the run ends, as the models are.
        self.optimizers: list[torch.optim.Optimizer] = []
        self.built: Identity[torch.nn.Module, Site | None] = Identity()
        # DataLoaders and their iterators, to where the loader was built.
        self.loaders: Identity[object, _Loader] = Identity()
        self.loader_count = 0
        self.leaves: list[weakref.ref[torch.Tensor]] = []
        self.saves = 0
        self.backups: dict[str, _Backup] = {}
        self.keep = options.keep_bytes
        self.notes: list[str] = []
        self.busy = False
        self.finished = False
        _import_numpy()
        self.rng_start = digests.rng_states()
        self.restore: list[Callable[[], None]] = []
        self.script: str | None = None
        # torch's own save, for the copies this recorder keeps.
        self.save: Callable[..., None] = torch.save
        # Set when an op-level trace runs (``optrace.OpTrace``).
        self.window: Any = None

    # -- helpers --

    def active(self) -> bool:
        return not self.busy and os.getpid() == self.pid and threading.get_ident() == self.thread

    @contextmanager
    def quiet(self) -> Iterator[None]:
        """Our own torch calls: not traced, and never fatal to the script."""
        busy, self.busy = self.busy, True
        try:
            yield
        finally:
            self.busy = busy

    def guard(self, where: str, call: Callable[[], None]) -> None:
        """Run a hook's work; a failure is noted, never raised into the user's script."""
        try:
            with self.quiet():
                call()
        except Stop:
            raise
        except Exception as exc:
            note = f"the recorder could not read {where}: {type(exc).__name__}: {exc}"
            if note not in self.notes:
                self.notes.append(note)

    def user_site(self, frame: FrameType | None) -> Site | None:
        while frame is not None:
            path = self.files.resolve(frame.f_code.co_filename)
            if path is not None:
                return site_of(frame, path)
            frame = frame.f_back
        return None

    def add(self, record: Record) -> None:
        self.records.append(record)
        if len(self.records) >= _MAX_OPEN_RECORDS:
            # A script with no steps (inference over a large set) writes as it goes.
            self.flush({"type": "tail"})

    def add_optimizer(self, optimizer: torch.optim.Optimizer) -> None:
        if all(known is not optimizer for known in self.optimizers):
            self.optimizers.append(optimizer)

    def named_parameters(self) -> list[tuple[str, str, torch.Tensor]]:
        """(owner, name, tensor) of everything trained: the models' parameters, then the
        optimizers' other parameters, then (with neither) the leaves backward reached."""
        found: list[tuple[str, str, torch.Tensor]] = []
        seen: set[int] = set()
        for model in self.models:
            for name, parameter in model.module.named_parameters():
                # A submodule called on its own shares its parameters with the whole model.
                if id(parameter) not in seen:
                    seen.add(id(parameter))
                    found.append((model.label, name, parameter))
        for number, optimizer in enumerate(self.optimizers):
            for g, group in enumerate(optimizer.param_groups):
                for i, parameter in enumerate(group["params"]):
                    if id(parameter) not in seen:
                        seen.add(id(parameter))
                        label = f"{type(optimizer).__name__}#{number}"
                        found.append((label, f"param_groups[{g}][{i}]", parameter))
        if not found:
            for i, ref in enumerate(self.leaves):
                leaf = ref()
                if leaf is not None:
                    found.append(("tensors", f"leaf#{i}", leaf))
        return found

    # -- steps --

    def boundary(self, allow_stop: bool = True) -> None:
        """The step ends: record the parameters, write the step, and stop if asked to."""
        self.step += 1
        state = self.state
        state.forward_done = state.backward_done = False
        with self.quiet():
            for owner, name, parameter in self.named_parameters():
                self.add(Record("optimizer", "parameter", owner, name, digests.digest(parameter)))
            self.flush({"type": "step", "step": self.step, "unit": self.unit})
        if self.window is not None:
            self.window.on_boundary(self.step)
        if not allow_stop:
            return
        if self.options.max_steps is not None and self.step >= self.options.max_steps:
            raise Stop("max-steps")
        elapsed = time.monotonic() - self.started
        if self.options.max_seconds is not None and elapsed >= self.options.max_seconds:
            raise Stop("max-seconds")

    def flush(self, head: dict[str, Any]) -> None:
        records, self.records = self.records, []
        found = digests.read([r.digest for r in records])
        values = [r.value for r in records if r.value is not None]
        floats = iter(digests.read_floats(values)) if values else iter(())
        head["records"] = [
            r.to_json(d, next(floats) if r.value is not None else None)
            for r, d in zip(records, found, strict=True)
        ]
        self.write(head)

    def write(self, data: dict[str, Any]) -> None:
        self.lines.write(json.dumps(data) + "\n")
        self.lines.flush()

    # -- hooks: models --

    def _model(self, module: torch.nn.Module) -> Model:
        model = self.model_of.get(module)
        if model is not None:
            return model
        name = type(module).__name__
        same = sum(1 for m in self.models if m.label.split("#")[0] == name)
        label = f"{name}#{same + 1}" if same else name
        model = Model(label, module, self.built.get(module))
        self.models.append(model)
        self.model_of[module] = model
        self.write({"type": "owner", "label": label, "built": _json(model.built)})
        for key, tensor in module.state_dict(keep_vars=True).items():
            if isinstance(tensor, torch.Tensor):
                self.add(
                    Record("initialisation", "state", model.label, key, digests.digest(tensor))
                )
        return model

    def on_forward(self, module: torch.nn.Module, args: tuple[Any, ...]) -> None:
        if not self.active():
            return
        state = self.state
        if state.depth == 0:
            self.guard("a forward's input", lambda: self._forward_input(module, args))
        state.depth += 1
        if self.window is not None:
            state.stack.append(module)

    def _forward_input(self, module: torch.nn.Module, args: tuple[Any, ...]) -> None:
        if next(module.parameters(), None) is None:
            return
        if self.unit == "backward" and self.state.backward_done:
            self.boundary()
        model = self._model(module)
        if self.window is not None:
            self.window.on_model_forward(model.label)
        self.state.forward_done = True
        # Positional inputs now, before the forward could change them in place; keyword
        # inputs (which the global pre-hook does not see) when it ends.
        self.input = Record("data", "input", model.label, digest=digests.digest_all([args]))
        self.add(self.input)

    def on_forward_end(self, module: torch.nn.Module, kwargs: dict[str, Any], output: Any) -> None:
        if not self.active():
            return
        state = self.state
        state.depth = max(0, state.depth - 1)
        if state.stack:
            state.stack.pop()
        if state.depth == 0:
            model = self.model_of.get(module)
            if model is not None:
                self.guard(
                    "a forward's output", lambda: self._forward_output(model, kwargs, output)
                )

    def _forward_output(self, model: Model, kwargs: dict[str, Any], output: Any) -> None:
        record, self.input = self.input, None
        if kwargs and record is not None and record.owner == model.label:
            found = [d for d in (record.digest, digests.digest_all([kwargs])) if d is not None]
            record.digest = digests.combine(found)
        self.add(Record("forward", "output", model.label, digest=digests.digest_all([output])))

    def _watch_construction(self) -> None:
        original = torch.nn.Module.__init__
        recorder = self

        @functools.wraps(original)
        def init(module: torch.nn.Module, *args: Any, **kwargs: Any) -> None:
            original(module, *args, **kwargs)
            if recorder.active() and module not in recorder.built:
                recorder.built[module] = recorder.user_site(_outside_init(sys._getframe(1), module))

        # Subclasses call ``super().__init__``, which finds this wrapper on the class.
        setattr(torch.nn.Module, "__init__", init)  # noqa: B010 (mypy forbids assigning a method)
        self.restore.append(lambda: setattr(torch.nn.Module, "__init__", original))

    # -- hooks: backward and optimizers --

    def _watch_backward(self) -> None:
        original = torch.autograd.backward
        recorder = self

        @functools.wraps(original)
        def backward(tensors: Any, *args: Any, **kwargs: Any) -> Any:
            if not recorder.active() or recorder.state.in_backward:
                return original(tensors, *args, **kwargs)
            recorder.guard("a loss", lambda: recorder._before_backward(tensors))
            recorder.state.in_backward += 1
            try:
                result = original(tensors, *args, **kwargs)
            finally:
                recorder.state.in_backward -= 1
            recorder.guard("the gradients", recorder._after_backward)
            return result

        torch.autograd.backward = backward
        self.restore.append(lambda: setattr(torch.autograd, "backward", original))

    def _before_backward(self, tensors: Any) -> None:
        if self.unit is None:
            self.unit = "optimizer" if self.optimizers else "backward"
        if self.unit == "backward" and self.state.backward_done:
            self.boundary()
        for tensor in digests.tensors_in(tensors):
            value = tensor.detach().reshape(-1)[0] if tensor.numel() == 1 else None
            self.add(Record("forward", "loss", "", digest=digests.digest(tensor), value=value))
            if not self.models and not self.optimizers:
                self._find_leaves(tensor)

    def _find_leaves(self, tensor: torch.Tensor) -> None:
        """The tensors a hand-written loop trains, with no module or optimizer to name them:
        the leaves of the loss's graph."""
        known = {id(ref()) for ref in self.leaves}
        pending: list[Any] = [tensor.grad_fn]
        seen: set[int] = set()
        while pending and len(seen) < 10_000:
            node = pending.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            variable = getattr(node, "variable", None)
            if isinstance(variable, torch.Tensor) and id(variable) not in known:
                known.add(id(variable))
                self.leaves.append(weakref.ref(variable))
            pending.extend(next_node for next_node, _ in node.next_functions)

    def _after_backward(self) -> None:
        for owner, name, parameter in self.named_parameters():
            if parameter.grad is not None:
                self.add(
                    Record("backward", "gradient", owner, name, digests.digest(parameter.grad))
                )
        self.state.backward_done = True

    def _watch_optimizers(self) -> None:
        original = torch.optim.Optimizer.__init__
        recorder = self

        @functools.wraps(original)
        def init(optimizer: torch.optim.Optimizer, *args: Any, **kwargs: Any) -> None:
            original(optimizer, *args, **kwargs)
            if os.getpid() == recorder.pid:
                recorder.add_optimizer(optimizer)

        setattr(torch.optim.Optimizer, "__init__", init)  # noqa: B010
        self.restore.append(lambda: setattr(torch.optim.Optimizer, "__init__", original))

        def before(optimizer: torch.optim.Optimizer, *_: Any) -> None:
            if self.active():
                self.add_optimizer(optimizer)
                self.state.in_optimizer += 1

        def after(optimizer: torch.optim.Optimizer, *_: Any) -> None:
            if not self.active():
                return
            self.state.in_optimizer = max(0, self.state.in_optimizer - 1)
            if self.unit is None:
                self.unit = "optimizer"
            if self.unit == "optimizer":
                self.boundary()

        for register, hook in (
            (register_optimizer_step_pre_hook, before),
            (register_optimizer_step_post_hook, after),
        ):
            handle = register(hook)
            self.restore.append(handle.remove)

    # -- hooks: data --

    def _watch_loaders(self) -> None:
        recorder = self
        init = DataLoader.__init__

        @functools.wraps(init)
        def loader_init(loader: DataLoader[Any], *args: Any, **kwargs: Any) -> None:
            init(loader, *args, **kwargs)
            if os.getpid() == recorder.pid:
                recorder.loader_count += 1
                site = recorder.user_site(sys._getframe(1))
                label = f"DataLoader#{recorder.loader_count}"
                recorder.loaders[loader] = _Loader(label, site)
                recorder.write({"type": "owner", "label": label, "built": _json(site)})

        get_iterator = DataLoader._get_iterator

        @functools.wraps(get_iterator)
        def iterator(loader: DataLoader[Any]) -> _BaseDataLoaderIter:
            made = get_iterator(loader)
            found = recorder.loaders.get(loader)
            if found is not None:
                recorder.loaders[made] = found
            return made

        next_index = _BaseDataLoaderIter._next_index

        @functools.wraps(next_index)
        def indices(it: _BaseDataLoaderIter) -> Any:
            drawn = next_index(it)  # type: ignore[no-untyped-call]
            if recorder.active():
                label = recorder._loader_label(it)
                recorder.guard(
                    "a sampler's indices",
                    lambda: recorder.add(
                        Record("data", "indices", label, host=digests.host_value(drawn))
                    ),
                )
            return drawn

        next_batch = _BaseDataLoaderIter.__next__

        @functools.wraps(next_batch)
        def batch(it: _BaseDataLoaderIter) -> Any:
            if not recorder.active():
                return next_batch(it)
            recorder.state.loading += 1
            try:
                data = next_batch(it)
            finally:
                recorder.state.loading -= 1
            if recorder.active():
                label = recorder._loader_label(it)
                recorder.guard(
                    "a batch",
                    lambda: recorder.add(
                        Record("data", "batch", label, digest=digests.digest_all([data]))
                    ),
                )
            return data

        patches: list[tuple[type, str, Any, Any]] = [
            (DataLoader, "__init__", init, loader_init),
            (DataLoader, "_get_iterator", get_iterator, iterator),
            (_BaseDataLoaderIter, "_next_index", next_index, indices),
            (_BaseDataLoaderIter, "__next__", next_batch, batch),
        ]
        for owner, name, before, after in patches:
            setattr(owner, name, after)
            self.restore.append(functools.partial(setattr, owner, name, before))

    def _loader_label(self, iterator: object) -> str:
        found = self.loaders.get(iterator)
        return found.label if found is not None else "DataLoader"

    def loader_of(self, obj: object) -> _Loader | None:
        return self.loaders.get(obj)

    # -- hooks: saves --

    def _watch_saves(self) -> None:
        original = self.save = torch.save
        recorder = self

        @functools.wraps(original)
        def save(obj: Any, f: Any, *args: Any, **kwargs: Any) -> Any:
            if not recorder.active():
                return original(obj, f, *args, **kwargs)
            record: dict[str, Any] = {}
            caller = sys._getframe(1)
            recorder.guard(
                "a saved object", lambda: record.update(recorder._read_save(obj, f, caller))
            )
            try:
                result = original(obj, f, *args, **kwargs)
            except BaseException as exc:
                record["error"] = f"{type(exc).__name__}: {exc}"
                recorder._write_save(record)
                raise
            recorder._write_save(record)
            return result

        torch.save = save
        self.restore.append(lambda: setattr(torch, "save", original))

    def _read_save(self, obj: Any, f: Any, caller: FrameType) -> dict[str, Any]:
        index = self.saves
        self.saves += 1
        target = _target(f)
        record: dict[str, Any] = {
            "type": "save",
            "index": index,
            "step": self.step,
            "target": target,
        }
        site = self.user_site(caller)
        if site is not None:
            record["site"] = site.to_json()
        if isinstance(f, str | os.PathLike):
            self._back_up(os.path.abspath(os.fspath(f)))
        captured = capture(obj, self.keep)
        self.keep -= sum(t.numel() * t.element_size() for t in captured.tensors.values())
        found = iter(digests.read(captured.digests))
        leaves = []
        for leaf in captured.records:
            if "dtype" in leaf:
                leaf["digest"] = next(found)
            leaves.append(leaf)
        record["leaves"] = leaves
        record["not_compared"] = captured.not_compared
        if captured.tensors:
            copy = self.out / f"save-{index:04d}.pt"
            self.save(captured.tensors, copy)
            record["copy"] = copy.name
        return record

    def _back_up(self, path: str) -> None:
        """Keep what a path held before this run first saved to it, so that the next run
        starts from the same files."""
        if path in self.backups:
            return
        existed = os.path.isfile(path)
        backup = None
        if existed and os.path.getsize(path) <= self.keep:
            backup = f"backup-{len(self.backups):04d}"
            shutil.copy2(path, self.out / backup)
        self.backups[path] = _Backup(path, existed, backup)
        self.write({"type": "target", **asdict(self.backups[path])})

    def _write_save(self, record: dict[str, Any]) -> None:
        if record:
            self.write(record)

    # -- lifetime --

    def install(self) -> None:
        self._watch_construction()
        self._watch_backward()
        self._watch_optimizers()
        self._watch_loaders()
        self._watch_saves()
        pre = register_module_forward_pre_hook(self._pre_hook)
        post = register_module_forward_hook(self._post_hook, with_kwargs=True, always_call=True)
        self.restore.extend([pre.remove, post.remove])
        self.write({"type": "start", "rng": self.rng_start, "options": self.options.to_json()})

    def _pre_hook(self, module: torch.nn.Module, args: tuple[Any, ...]) -> None:
        self.on_forward(module, args)

    def _post_hook(
        self, module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], output: Any
    ) -> None:
        self.on_forward_end(module, kwargs, output)

    def uninstall(self) -> None:
        for undo in reversed(self.restore):
            undo()
        self.restore.clear()

    def finish(self, stopped: str | None, error: str | None, exit_status: int | str | None) -> None:
        """Write the end of the trace: the open step, the final state and how the run ended."""
        if self.finished:
            return
        self.finished = True
        if self.window is not None:
            self.guard("the op-level trace", self.window.close)
        if self.unit == "backward" and self.state.backward_done and stopped is None:
            self.guard("the last step", lambda: self.boundary(allow_stop=False))
        if self.records:
            self.guard("the records after the last step", lambda: self.flush({"type": "tail"}))
        end: dict[str, Any] = {
            "type": "end",
            "steps": self.step,
            "unit": self.unit,
            "stopped": stopped,
            "error": error,
            "exit_status": exit_status,
            "seconds": round(time.monotonic() - self.started, 3),
        }
        self.guard("the final state", lambda: end.update(self._final_state()))
        self.guard("the files the run used", lambda: end.update(files=self._files()))
        end["notes"] = self.notes
        self.write(end)
        self.lines.close()

    def _files(self) -> list[str]:
        """The user's files the run imported, the script first."""
        found = [self.script] if self.script else []
        for module in list(sys.modules.values()):
            path = self.files.resolve(getattr(module, "__file__", None) or "<>")
            if path is not None and path not in found:
                found.append(path)
        return found

    def _final_state(self) -> dict[str, Any]:
        records: list[dict[str, Any]] = []
        found: list[torch.Tensor | None] = []
        kept: dict[str, torch.Tensor] = {}
        for model in self.models:
            for key, tensor in model.module.state_dict().items():
                if isinstance(tensor, torch.Tensor):
                    self._final(records, found, kept, "model", model.label, key, tensor)
        names = {
            id(p): f"{owner}.{name}" if len(self.models) > 1 else name
            for owner, name, p in self.named_parameters()
        }
        for number, optimizer in enumerate(self.optimizers):
            label = (
                f"{type(optimizer).__name__}#{number}"
                if len(self.optimizers) > 1
                else type(optimizer).__name__
            )
            order = [p for group in optimizer.param_groups for p in group["params"]]
            for parameter, state in optimizer.state.items():
                if not isinstance(parameter, torch.Tensor):
                    continue
                where = names.get(id(parameter)) or f"param {_position(order, parameter)}"
                for key, value in state.items():
                    if isinstance(value, torch.Tensor):
                        self._final(
                            records, found, kept, "optimizer", label, f"{where}.{key}", value
                        )
        if not self.models:
            for owner, name, tensor in self.named_parameters():
                self._final(records, found, kept, "tensor", owner, name, tensor)
        for record, value in zip(records, digests.read(found), strict=True):
            record["digest"] = value
        result: dict[str, Any] = {"final": records, "rng": digests.rng_states()}
        if kept:
            self.save(kept, self.out / "final.pt")
            result["copy"] = "final.pt"
        return result

    def _final(
        self,
        records: list[dict[str, Any]],
        found: list[torch.Tensor | None],
        kept: dict[str, torch.Tensor],
        kind: str,
        owner: str,
        name: str,
        tensor: torch.Tensor,
    ) -> None:
        key = f"{kind}:{owner}:{name}"
        records.append(
            {"kind": kind, "owner": owner, "name": name, "key": key,
             "dtype": str(tensor.dtype), "shape": list(tensor.shape)}
        )  # fmt: skip
        found.append(digests.digest(tensor))
        size = tensor.numel() * tensor.element_size()
        if size <= self.keep and tensor.device.type != "meta":
            self.keep -= size
            kept[key] = tensor.detach().to("cpu", copy=True)


def _outside_init(frame: FrameType | None, module: torch.nn.Module) -> FrameType | None:
    """The frame that builds ``module``, past the ``__init__`` methods of its own classes
    (where ``super().__init__()`` is called)."""
    while frame is not None and frame.f_code.co_name == "__init__":
        if frame.f_locals.get("self") is not module:
            break
        frame = frame.f_back
    return frame


def _import_numpy() -> None:
    """numpy's global generator is seeded from the operating system when numpy is imported:
    its state is known before the script runs only if numpy is imported first (which the
    script's own import then finds done)."""
    if "numpy" not in sys.modules and importlib.util.find_spec("numpy") is not None:
        importlib.import_module("numpy")


def _json(site: Site | None) -> dict[str, Any] | None:
    return site.to_json() if site is not None else None


def _position(order: list[torch.Tensor], parameter: torch.Tensor) -> int:
    for index, candidate in enumerate(order):
        if candidate is parameter:
            return index
    return -1


def _target(f: object) -> str:
    if isinstance(f, str | os.PathLike):
        return os.path.abspath(os.fspath(f))
    name = getattr(f, "name", None)
    if isinstance(name, str):
        return os.path.abspath(name)
    return f"<{type(f).__name__}>"
