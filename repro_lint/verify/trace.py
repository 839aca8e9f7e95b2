"""Run a user's script in this process under a tracer: which catalogued ops it executes, where
in the user's code, on which device, and which nondeterminism alerts PyTorch raises.

Three sources feed the trace, because each sees what the others miss:

- a ``TorchFunctionMode`` sees the Python-level calls (``F.interpolate(x, mode="bilinear")``,
  ``x.index_add_(...)``) with their real arguments, so the catalog's own API conditions are
  evaluated on real values, as the static rules evaluate them on source text;
- a ``TorchDispatchMode`` sees the aten operators those calls and composite ops dispatch to
  (``Entry.aten``), including ops called from C++ or from libraries;
- ``use_deterministic_algorithms(True, warn_only=True)`` turns PyTorch's nondeterminism alerts
  into warnings, which are recorded with the caller they name.

Every record carries the user's source line (the innermost frame in the user's files) and,
when the op ran inside a ``torch.nn`` module, the line where that module was built, since that
is where RPL401/RPL402 report module hazards.
"""

from __future__ import annotations

import functools
import os
import runpy
import signal
import sys
import time
import traceback
import warnings
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any, TextIO

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from repro_lint.catalog import (
    ENTRIES,
    MISSING,
    UNKNOWN,
    Api,
    ApiKind,
    Aten,
    Behaviour,
    Device,
    Entry,
    Named,
    Phase,
    Scope,
    TensorFacts,
    Value,
)
from repro_lint.verify.runner import alert_caller, installed_torch

_PACKAGE_DIR = str(Path(__file__).resolve().parent.parent)
_ALERT_MESSAGE = r".*does not have a deterministic implementation"


# -- what a trace records -----------------------------------------------------------------------


@dataclass(frozen=True, order=True)
class Site:
    """Lines of a file (absolute path): where a call ran, or where a module was built."""

    path: str
    line: int
    end_line: int

    def holds(self, path: str, row: int) -> bool:
        return self.path == path and self.line <= row <= self.end_line

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "end_line": self.end_line}


@dataclass
class Event:
    """A catalogued op that ran: the entry, where, on which device, how it was seen."""

    entry: Entry
    site: Site | None
    module_site: Site | None
    device: str
    via: set[str] = field(default_factory=set)
    calls: int = 0
    # Calls that autograd recorded: only those run a hazardous backward.
    differentiated: int = 0

    @property
    def hazardous(self) -> bool:
        """Whether the hazard happened: the op is hazardous in this torch release, and a
        backward-phase op was differentiated."""
        if self.entry.phase is Phase.BACKWARD and not self.differentiated:
            return False
        return hazardous(self.entry)

    @property
    def hazard_here(self) -> bool:
        """Whether the catalog calls what ran nondeterministic on the device it ran on."""
        device_type = self.device.split(":", 1)[0]
        if self.entry.device is Device.CUDA and device_type != "cuda":
            return False
        if self.entry.device is Device.CPU and device_type != "cpu":
            return False
        return self.hazardous

    @property
    def hazard_on_cuda(self) -> bool:
        """Whether it would be nondeterministic had it run on a CUDA device."""
        return self.entry.device in (Device.CUDA, Device.ANY) and self.hazardous

    def to_json(self) -> dict[str, Any]:
        return {
            "entry": self.entry.id,
            "site": self.site.to_json() if self.site else None,
            "module_site": self.module_site.to_json() if self.module_site else None,
            "device": self.device,
            "via": sorted(self.via),
            "calls": self.calls,
            "differentiated": self.differentiated,
            "hazard_here": self.hazard_here,
            "hazard_on_cuda": self.hazard_on_cuda,
        }


@dataclass
class Alert:
    """A nondeterminism alert PyTorch raised (as a warning) while the script ran."""

    caller: str | None
    message: str
    site: Site | None
    entries: tuple[Entry, ...]
    count: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "caller": self.caller,
            "message": self.message,
            "site": self.site.to_json() if self.site else None,
            "entries": [entry.id for entry in self.entries],
            "count": self.count,
        }


@dataclass
class Trace:
    """Everything one traced run of a script showed."""

    script: str
    args: tuple[str, ...]
    roots: tuple[str, ...]
    events: list[Event] = field(default_factory=list)
    alerts: list[Alert] = field(default_factory=list)
    steps: int = 0
    seconds: float = 0.0
    # Why the run ended early: "max-steps" or "max-seconds" (None: it ran to its end).
    stopped: str | None = None
    # The script's exit status when it called sys.exit (None: it returned).
    exit_status: int | str | None = None
    # The exception the script raised, with the user's line (None: it did not raise).
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "script": self.script,
            "args": list(self.args),
            "steps": self.steps,
            "seconds": round(self.seconds, 3),
            "stopped": self.stopped,
            "exit_status": self.exit_status,
            "error": self.error,
            "events": [event.to_json() for event in self.events],
            "alerts": [alert.to_json() for alert in self.alerts],
        }


def hazardous(entry: Entry) -> bool:
    """Whether the installed torch release has this hazard at all."""
    version = installed_torch()
    behaviour = entry.behaviour(version) if version is not None else None
    return behaviour is not None and behaviour is not Behaviour.DETERMINISTIC


# -- conditions on real arguments -----------------------------------------------------------------


def _value(obj: object) -> Value:
    """A real argument as the catalog's conditions see one."""
    if isinstance(obj, torch.Tensor):
        return TensorFacts(
            ndim=obj.dim(),
            floating=obj.is_floating_point() or obj.is_complex(),
            quantized=obj.is_quantized,
            sparse=obj.is_sparse,
        )
    if obj is None or isinstance(obj, bool | int | float | str):
        return obj
    if isinstance(obj, list | tuple):
        return tuple(_value(item) for item in obj)
    if isinstance(obj, torch.dtype):
        return Named(str(obj))
    return UNKNOWN


class _RealCall:
    """One real call as a ``catalog.CallView``: arguments bound to parameter names."""

    def __init__(self, bound: Mapping[str, object]) -> None:
        self._bound = bound

    def value(self, param: str) -> Value:
        if param not in self._bound:
            return MISSING
        return _value(self._bound[param])


def _bind_api(api: Api, args: Sequence[object], kwargs: Mapping[str, object]) -> _RealCall:
    bound: dict[str, object] = {}
    rest = list(args)
    if api.kind is ApiKind.METHOD and rest:
        # ``Tensor.index_add_(x, ...)``: the tensor itself is the condition's ``input``.
        bound["input"] = rest.pop(0)
    bound.update(zip(api.params, rest, strict=False))
    bound.update(kwargs)
    return _RealCall(bound)


def bind_schema(func: Any, args: Sequence[object], kwargs: Mapping[str, object]) -> _RealCall:
    names = ["input" if a.name == "self" else a.name for a in func._schema.arguments]
    bound: dict[str, object] = dict(zip(names, args, strict=False))
    bound.update({"input" if k == "self" else k: v for k, v in kwargs.items()})
    return _RealCall(bound)


def _tensors(values: Iterable[object]) -> Iterator[torch.Tensor]:
    for value in values:
        if isinstance(value, torch.Tensor):
            yield value
        elif isinstance(value, list | tuple):
            yield from _tensors(value)


def _differentiated(args: Sequence[object], kwargs: Mapping[str, object]) -> bool:
    """Whether autograd records this call (its backward may run)."""
    return torch.is_grad_enabled() and any(
        t.requires_grad for t in _tensors((*args, *kwargs.values()))
    )


def _device(args: Sequence[object], kwargs: Mapping[str, object]) -> str | None:
    for tensor in _tensors((*args, *kwargs.values())):
        return str(tensor.device)
    return None


def traced_entries() -> list[Entry]:
    """Entries a run can show: hazardous in the installed torch, not only under tracing or
    an optional kernel library."""
    return [
        entry
        for entry in ENTRIES
        if entry.scope in (Scope.CALL, Scope.PROGRAM) and hazardous(entry)
    ]


def _resolve(qualified: str) -> object | None:
    obj: object = torch
    for part in qualified.split(".")[1:]:
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _function_index() -> dict[object, list[tuple[Entry, Api]]]:
    """Python callables of per-call entries' functions and methods, to the (entry, API)s they
    are. Modules are seen through the functional calls their ``forward`` makes."""
    index: dict[object, list[tuple[Entry, Api]]] = {}
    for entry in traced_entries():
        if entry.scope is not Scope.CALL:
            # Program-wide APIs (``x[idx]``, ``bmm``) are too broad at the Python level; their
            # aten operators tell the hazardous cases apart.
            continue
        for api in entry.apis:
            if api.kind is ApiKind.MODULE:
                continue
            obj = _resolve(api.name)
            if obj is not None and callable(obj):
                index.setdefault(obj, []).append((entry, api))
    return index


def aten_index() -> dict[str, list[tuple[Entry, Aten]]]:
    index: dict[str, list[tuple[Entry, Aten]]] = {}
    for entry in traced_entries():
        for op in entry.aten:
            index.setdefault(op.packet, []).append((entry, op))
    return index


def _alert_index() -> dict[str, tuple[Entry, ...]]:
    index: dict[str, list[Entry]] = {}
    for entry in ENTRIES:
        if entry.caller is not None:
            index.setdefault(entry.caller, []).append(entry)
    return {caller: tuple(entries) for caller, entries in index.items()}


# -- the tracer ---------------------------------------------------------------------------------


class _Stop(BaseException):
    """Ends the user's script early; a BaseException, so ``except Exception`` cannot eat it."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class UserFiles:
    """Which source files are the user's: under a root, outside installed packages and this
    tool."""

    def __init__(self, roots: Sequence[Path]) -> None:
        self.roots = tuple(str(root.resolve()) for root in roots)
        self._memo: dict[str, str | None] = {}

    def resolve(self, filename: str) -> str | None:
        """The absolute path of ``filename`` if it is a user file, else None."""
        if filename in self._memo:
            return self._memo[filename]
        found = None
        if not filename.startswith("<"):
            path = os.path.realpath(filename)
            inside = any(path.startswith(root + os.sep) for root in self.roots)
            parts = Path(path).parts
            installed = "site-packages" in parts or "dist-packages" in parts
            if inside and not installed and not path.startswith(_PACKAGE_DIR + os.sep):
                found = path
        self._memo[filename] = found
        return found


def site_of(frame: FrameType, path: str) -> Site:
    line = frame.f_lineno
    end = line
    positions = list(frame.f_code.co_positions())
    index = frame.f_lasti // 2
    if 0 <= index < len(positions):
        start, stop = positions[index][0], positions[index][1]
        if start is not None and stop is not None:
            line, end = start, stop
    return Site(path, line, end)


class Tracer:
    """Records catalogued ops, alerts, module construction sites and optimizer steps while
    active; restores everything it changed on exit."""

    def __init__(
        self,
        roots: Sequence[Path],
        max_steps: int | None = None,
        max_seconds: float | None = None,
    ) -> None:
        self.files = UserFiles(roots)
        self.max_steps = max_steps
        self.max_seconds = max_seconds
        self.deadline: float | None = None
        self.steps = 0
        self.events: dict[tuple[str, Site | None, Site | None, str], Event] = {}
        self.alerts: dict[tuple[str, Site | None], Alert] = {}
        self._functions = _function_index()
        self._aten = aten_index()
        self._callers = _alert_index()
        self._built: weakref.WeakKeyDictionary[torch.nn.Module, Site | None] = (
            weakref.WeakKeyDictionary()
        )
        # DataLoader workers fork with the modes installed: only this process records.
        self._pid = os.getpid()
        self._stack = ExitStack()
        # Events of the Python-level call now running, by entry id.
        self.covering: dict[str, Event] = {}

    # -- locating the user's code --

    def _locate(self, frame: FrameType | None) -> tuple[Site | None, Site | None]:
        """The innermost user frame from ``frame`` outwards, and the build site of the
        innermost ``torch.nn`` module whose code ran in between."""
        module: torch.nn.Module | None = None
        while frame is not None:
            path = self.files.resolve(frame.f_code.co_filename)
            if path is not None:
                return site_of(frame, path), self._built.get(module) if module is not None else None
            if module is None:
                candidate = frame.f_locals.get("self")
                if isinstance(candidate, torch.nn.Module):
                    module = candidate
            frame = frame.f_back
        return None, None

    def record(
        self,
        entry: Entry,
        via: str,
        args: Sequence[object],
        kwargs: Mapping[str, object],
        frame: FrameType | None,
    ) -> Event:
        site, module_site = self._locate(frame)
        device = _device(args, kwargs) or "unknown"
        key = (entry.id, site, module_site, device)
        event = self.events.get(key)
        if event is None:
            event = self.events[key] = Event(entry, site, module_site, device)
        event.via.add(via)
        event.calls += 1
        if _differentiated(args, kwargs):
            event.differentiated += 1
        return event

    def _alert(self, message: str, frame: FrameType | None) -> None:
        caller = alert_caller(message)
        site, _ = self._locate(frame)
        key = (caller or message, site)
        alert = self.alerts.get(key)
        if alert is None:
            entries = self._callers.get(caller, ()) if caller is not None else ()
            alert = self.alerts[key] = Alert(caller, message.strip(), site, entries)
        alert.count += 1

    # -- hooks --

    def active(self) -> bool:
        return os.getpid() == self._pid

    def check_deadline(self) -> None:
        if self.deadline is not None and time.monotonic() > self.deadline:
            self.deadline = None
            raise _Stop("max-seconds")

    def on_call(
        self, func: object, args: Sequence[object], kwargs: Mapping[str, object]
    ) -> dict[str, Event]:
        """Record a Python-level call; the events it made, by entry id."""
        recorded: dict[str, Event] = {}
        for entry, api in self._functions.get(func, ()):
            if api.when.evaluate(_bind_api(api, args, kwargs)) is not False:
                recorded[entry.id] = self.record(entry, api.name, args, kwargs, sys._getframe())
        return recorded

    def on_dispatch(self, func: Any, args: Sequence[object], kwargs: Mapping[str, object]) -> None:
        specs = self._aten.get(func._overloadpacket.__name__)
        # Operators that run inside a backward pass belong to the forward call that
        # recorded them (already seen, with its line).
        if not specs or torch._C._current_autograd_node() is not None:
            return
        call = bind_schema(func, args, kwargs)
        for entry, op in specs:
            if op.when.evaluate(call) is False:
                continue
            if not self.covering:
                self.record(entry, f"aten.{op.packet}", args, kwargs, sys._getframe())
            elif entry.id in self.covering:
                # The Python-level call around this operator was recorded already: one call,
                # seen twice.
                self.covering[entry.id].via.add(f"aten.{op.packet}")
            # Otherwise the operator is another entry's too (MaxUnpool1d runs as the 2-D
            # op): the Python-level call already said which hazard this is.

    def _on_step(self, *_: object) -> None:
        if not self.active():
            return
        self.steps += 1
        if self.max_steps is not None and self.steps >= self.max_steps:
            raise _Stop("max-steps")
        self.check_deadline()

    # -- installing --

    def __enter__(self) -> Tracer:
        stack = self._stack
        stack.enter_context(_deterministic_warn_only())
        stack.enter_context(self._catch_alerts())
        stack.enter_context(self._watch_construction())
        handle = register_optimizer_step_post_hook(self._on_step)
        stack.callback(handle.remove)
        if self.max_seconds is not None:
            self.deadline = time.monotonic() + self.max_seconds
            stack.enter_context(_alarm(self.max_seconds))
        stack.enter_context(_FunctionTracer(self))
        stack.enter_context(_DispatchTracer(self))
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stack.close()

    @contextmanager
    def _catch_alerts(self) -> Iterator[None]:
        with warnings.catch_warnings():
            # Every alert, not only the first at each place (the default filter's rule).
            warnings.filterwarnings("always", message=_ALERT_MESSAGE)
            shown = warnings.showwarning

            def show(
                message: Warning | str,
                category: type[Warning],
                filename: str,
                lineno: int,
                file: TextIO | None = None,
                line: str | None = None,
            ) -> None:
                if self.active() and alert_caller(str(message)) is not None:
                    self._alert(str(message), sys._getframe(1))
                    return
                shown(message, category, filename, lineno, file, line)

            warnings.showwarning = show
            yield

    @contextmanager
    def _watch_construction(self) -> Iterator[None]:
        """Remember where each ``torch.nn`` module is built (RPL401 reports a hazardous
        module where it is built, and its ops run elsewhere)."""
        original = torch.nn.Module.__init__
        built = self._built

        @functools.wraps(original)
        def init(module: torch.nn.Module, *args: Any, **kwargs: Any) -> None:
            original(module, *args, **kwargs)
            if module not in built:
                built[module] = self._locate(sys._getframe(1))[0]

        setattr(torch.nn.Module, "__init__", init)  # noqa: B010 (mypy forbids assigning a method)
        try:
            yield
        finally:
            setattr(torch.nn.Module, "__init__", original)  # noqa: B010

    def trace(self) -> tuple[list[Event], list[Alert]]:
        events = sorted(
            self.events.values(),
            key=lambda e: (e.site or Site("", 0, 0), e.entry.id, e.device),
        )
        alerts = sorted(self.alerts.values(), key=lambda a: (a.site or Site("", 0, 0), a.message))
        return events, alerts


class _FunctionTracer(TorchFunctionMode):
    def __init__(self, tracer: Tracer) -> None:
        super().__init__()
        self.tracer = tracer

    def __torch_function__(
        self,
        func: Callable[..., Any],
        types: Any,
        args: Sequence[object] = (),
        kwargs: Mapping[str, object] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        tracer = self.tracer
        if not tracer.active():
            return func(*args, **kwargs)
        tracer.check_deadline()
        recorded = tracer.on_call(func, args, kwargs)
        if not recorded:
            return func(*args, **kwargs)
        outer, tracer.covering = tracer.covering, recorded
        try:
            return func(*args, **kwargs)
        finally:
            tracer.covering = outer


# torch leaves TorchDispatchMode's constructor and subclass hook untyped.
class _DispatchTracer(TorchDispatchMode):  # type: ignore[no-untyped-call]
    def __init__(self, tracer: Tracer) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.tracer = tracer

    def __torch_dispatch__(
        self,
        func: Any,
        types: Any,
        args: Sequence[object] = (),
        kwargs: Mapping[str, object] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        if self.tracer.active():
            self.tracer.on_dispatch(func, args, kwargs)
        return func(*args, **kwargs)


@contextmanager
def _deterministic_warn_only() -> Iterator[None]:
    enabled = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(enabled, warn_only=warn_only)


@contextmanager
def _alarm(seconds: float) -> Iterator[None]:
    """Interrupt the script after ``seconds`` even while it runs no torch code (main thread
    only; elsewhere the deadline is checked at each torch call)."""
    if sys.platform == "win32" or not hasattr(signal, "setitimer"):
        yield
        return
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: FrameType | None) -> None:
        raise _Stop("max-seconds")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# -- running a script -----------------------------------------------------------------------------


def error_text(exc: BaseException, files: UserFiles) -> str:
    summary = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        path = files.resolve(frame.filename)
        if path is not None:
            return f"{summary} (at {path}:{frame.lineno})"
    return summary


def run_script(
    script: Path,
    args: Sequence[str],
    roots: Sequence[Path],
    max_steps: int | None = None,
    max_seconds: float | None = None,
) -> Trace:
    """Run ``script`` as ``__main__`` with ``args`` under the tracer; ``roots`` hold the
    user's files. The interpreter's argv, path and modules are restored afterwards."""
    script = script.resolve()
    trace = Trace(str(script), tuple(args), tuple(str(r) for r in roots))
    tracer = Tracer(roots, max_steps=max_steps, max_seconds=max_seconds)
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    modules = set(sys.modules)
    sys.argv = [str(script), *args]
    # The script's directory comes first on sys.path, as with ``python SCRIPT``.
    sys.path.insert(0, str(script.parent))
    started = time.perf_counter()
    try:
        with tracer:
            runpy.run_path(str(script), run_name="__main__")
    except _Stop as stop:
        trace.stopped = stop.reason
    except SystemExit as exit_:
        code = exit_.code
        trace.exit_status = code if isinstance(code, int | str) or code is None else str(code)
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # the user's script failed: report it with what was traced
        trace.error = error_text(exc, tracer.files)
    finally:
        trace.seconds = time.perf_counter() - started
        sys.argv, sys.path[:] = saved_argv, saved_path
        # Forget the user's modules, so that a second run imports them afresh.
        for name in set(sys.modules) - modules:
            if tracer.files.resolve(getattr(sys.modules[name], "__file__", None) or "<>"):
                del sys.modules[name]
    trace.steps = tracer.steps
    trace.events, trace.alerts = tracer.trace()
    return trace
