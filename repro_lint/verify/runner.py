"""Run catalog probes on a device, in default and in deterministic mode, and classify each
entry by what the runs show."""

from __future__ import annotations

import enum
import functools
import importlib.util
import platform
import re
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch

from repro_lint.catalog import Behaviour, Device, Entry, Scope
from repro_lint.torch_versions import TorchVersion, parse_version
from repro_lint.verify.probes import PROBES, Outputs, Probe

# PyTorch's nondeterminism alert: "<caller> does not have a deterministic implementation, ..."
_ALERT = re.compile(r"(?:^|\n|Error: )(.+?) does not have a deterministic implementation")
# The optional kernel library that BUILD-scope entries need (topk's CuTeDSL override).
_BUILD_LIBRARY = ("cutlass", "nvidia-cutlass-dsl")


class Verdict(enum.Enum):
    """What the runs of one probe on one device show."""

    # Runs differ bitwise in default mode, and still differ in deterministic mode.
    NONDETERMINISTIC = "nondeterministic"
    # Deterministic mode raises PyTorch's nondeterminism alert.
    RAISES = "raises-in-deterministic-mode"
    # Runs differ in default mode and are identical in deterministic mode.
    FIXED = "fixed-by-deterministic-mode"
    # Every run was identical, in both modes.
    NOT_REPRODUCED = "not-reproduced"
    # The hazard cannot occur on this device (or in an eager run), so nothing was compared.
    NOT_APPLICABLE = "not-applicable"


# Verdicts that show a hazard on this device: differing runs, or PyTorch's own alert.
CONFIRMING = frozenset({Verdict.NONDETERMINISTIC, Verdict.RAISES, Verdict.FIXED})

_EXPECTED = {
    Behaviour.RAISES: Verdict.RAISES,
    Behaviour.FIXED_BY_MODE: Verdict.FIXED,
    Behaviour.SILENT: Verdict.NONDETERMINISTIC,
    Behaviour.DETERMINISTIC: Verdict.NOT_REPRODUCED,
}


@dataclass(frozen=True)
class Repeats:
    """Several runs of a probe in one mode, each compared bitwise with the first."""

    runs: int
    # Runs after the first whose outputs differ from the first's.
    differing: int
    # The largest absolute difference of a floating-point output (None when only integer
    # outputs, such as indices, differ, or nothing does).
    max_abs_diff: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": (
                Verdict.NONDETERMINISTIC if self.differing else Verdict.NOT_REPRODUCED
            ).value,
            "runs": self.runs,
            "differing_runs": self.differing,
            "max_abs_diff": self.max_abs_diff,
        }


@dataclass(frozen=True)
class Result:
    """The verdict on one catalog entry on one device, with the evidence."""

    entry: Entry
    device: str
    verdict: Verdict
    # What the catalog says this torch release does on this device (None: not vouched for).
    expected: Verdict | None
    default: Repeats | None = None
    deterministic: Repeats | None = None
    # PyTorch's alert caller when deterministic mode raised.
    caller: str | None = None
    # Why the entry is not applicable, or what went wrong running the probe.
    note: str | None = None
    failed: bool = False
    seconds: float = 0.0

    @property
    def confirmed(self) -> bool:
        """Whether the runs show the hazard on this device."""
        return self.verdict in CONFIRMING

    @property
    def default_verdict(self) -> Verdict | None:
        """What default mode alone shows: nondeterministic or not-reproduced (None when the
        probe did not run in default mode)."""
        if self.default is None:
            return None
        return Verdict.NONDETERMINISTIC if self.default.differing else Verdict.NOT_REPRODUCED

    @property
    def agreement(self) -> str:
        """How the verdict compares with the catalog: agrees, not-shown (the catalog expects
        nondeterminism that these runs did not show; no contradiction), disagrees, or
        unknown (the catalog does not vouch for this release)."""
        if self.failed:
            return "probe-failed"
        if self.expected is None:
            return "unknown"
        if self.verdict is self.expected:
            return "agrees"
        if self.verdict is Verdict.NOT_REPRODUCED and self.expected in (
            Verdict.FIXED,
            Verdict.NONDETERMINISTIC,
        ):
            return "not-shown"
        return "disagrees"

    def to_json(self) -> dict[str, Any]:
        return {
            "entry": self.entry.id,
            "package": self.entry.package,
            "device": self.device,
            "verdict": self.verdict.value,
            "confirmed": self.confirmed,
            "catalog": self.expected.value if self.expected is not None else None,
            "agreement": self.agreement,
            "default_mode": self.default.to_json() if self.default else None,
            "deterministic_mode": self.deterministic.to_json() if self.deterministic else None,
            "caller": self.caller,
            "note": self.note,
            "seconds": round(self.seconds, 3),
        }


@dataclass(frozen=True)
class Options:
    """How to run probes: where, how often, with how many CPU threads."""

    device: torch.device
    runs: int = 5
    threads: int = 2


class DeviceUnavailable(Exception):
    """The requested device does not exist here; the CLI exits 2 with this message."""


def resolve_device(spec: str | None) -> torch.device:
    """``cuda``, ``cuda:N`` or ``cpu``; by default CUDA when it is available."""
    if spec is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(spec)
    except RuntimeError as exc:
        raise DeviceUnavailable(f"not a device: {spec!r} (use cuda, cuda:N or cpu)") from exc
    if device.type == "cpu":
        return device
    if device.type != "cuda":
        raise DeviceUnavailable(f"unsupported device {spec!r} (use cuda, cuda:N or cpu)")
    if not torch.cuda.is_available():
        raise DeviceUnavailable(f"{spec}: CUDA is not available in this torch build or machine")
    if device.index is not None and device.index >= torch.cuda.device_count():
        raise DeviceUnavailable(f"{spec}: there are {torch.cuda.device_count()} CUDA devices")
    return device


def default_threads() -> int:
    """CPU threads for probes: at least 2, since CPU atomics only race between threads."""
    return max(2, torch.get_num_threads())


@functools.cache
def installed_torch() -> TorchVersion | None:
    return parse_version(torch.__version__.split("+")[0])


def environment(device: torch.device, threads: int | None = None) -> dict[str, Any]:
    """The torch build and device the verdicts hold for."""
    cuda = torch.version.cuda
    # torch declares no types for these two.
    available = torch.backends.cudnn.is_available()  # type: ignore[no-untyped-call]
    cudnn = torch.backends.cudnn.version() if available else None  # type: ignore[no-untyped-call]
    gpu = None
    if device.type == "cuda":
        gpu = torch.cuda.get_device_name(device.index or 0)
    return {
        "torch": torch.__version__,
        "cuda": cuda,
        "cudnn": cudnn,
        "device": str(device),
        "gpu": gpu,
        "cuda_available": torch.cuda.is_available(),
        "cpu_threads": threads if threads is not None else torch.get_num_threads(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def missing_package(entry: Entry) -> str | None:
    """Why a third-party entry cannot be probed here: its package is not installed."""
    if entry.package is None or importlib.util.find_spec(entry.package) is not None:
        return None
    return f"skipped: its package {entry.package} is not installed"


def not_applicable(entry: Entry, device: torch.device) -> str | None:
    """Why ``entry``'s hazard cannot show on ``device`` in an eager run, if it cannot."""
    missing = missing_package(entry)
    if missing is not None:
        return missing
    if entry.device is Device.CUDA and device.type != "cuda":
        return f"nondeterministic only on CUDA; this device is {device.type}"
    if entry.device is Device.CPU and device.type != "cpu":
        return f"catalogued for the CPU only; this device is {device}"
    if entry.scope is Scope.TRACED:
        return "hazardous only when traced by torch.compile or export, not in an eager run"
    if entry.scope is Scope.BUILD and importlib.util.find_spec(_BUILD_LIBRARY[0]) is None:
        return f"needs the optional kernel library {_BUILD_LIBRARY[1]}, not installed"
    return None


def applicable_entry(entries: Sequence[Entry], device: torch.device) -> Entry:
    """The first of ``entries`` whose hazard can show on ``device`` (else the first)."""
    for entry in entries:
        if not_applicable(entry, device) is None:
            return entry
    return entries[0]


def expected_verdict(entry: Entry, device: torch.device) -> Verdict | None:
    """What the catalog predicts for the installed torch on this device."""
    if not_applicable(entry, device) is not None:
        return Verdict.NOT_APPLICABLE
    version = installed_torch()
    behaviour = entry.behaviour(version) if version is not None else None
    return _EXPECTED[behaviour] if behaviour is not None else None


def alert_caller(message: str) -> str | None:
    """The caller PyTorch's nondeterminism alert names, if ``message`` is one."""
    found = _ALERT.search(message)
    return found.group(1).strip() if found else None


# -- isolation ----------------------------------------------------------------------------------


@contextmanager
def isolated(threads: int | None = None) -> Iterator[None]:
    """Restore deterministic mode (and warn-only), the CPU thread count and the cuDNN flags on
    the way out, whatever happens inside."""
    enabled = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    num_threads = torch.get_num_threads()
    cudnn = (torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark)
    try:
        if threads is not None:
            torch.set_num_threads(threads)
        yield
    finally:
        torch.use_deterministic_algorithms(enabled, warn_only=warn_only)
        torch.set_num_threads(num_threads)
        torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = cudnn


# -- comparing runs -------------------------------------------------------------------------------


def _comparable(tensor: torch.Tensor) -> torch.Tensor:
    """A dense CPU tensor whose bytes can be compared."""
    tensor = tensor.detach()
    if tensor.is_sparse:
        tensor = tensor.to_dense()
    if tensor.is_quantized:
        tensor = tensor.int_repr()
    return tensor.cpu().contiguous()


def _bytes_differ(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return True
    # Bitwise: NaNs with the same bits are equal, -0.0 and 0.0 are not.
    return bool(a.reshape(-1).view(torch.uint8).ne(b.reshape(-1).view(torch.uint8)).any())


def _abs_diff(a: torch.Tensor, b: torch.Tensor) -> float | None:
    if a.shape != b.shape or not (a.is_floating_point() or a.is_complex()):
        return None
    wide = torch.complex128 if a.is_complex() else torch.float64
    diff = (a.to(wide) - b.to(wide)).abs()
    finite = diff[torch.isfinite(diff)]
    return float(finite.max()) if finite.numel() else None


def compare(first: Outputs, other: Outputs) -> tuple[bool, float | None]:
    """Whether ``other`` differs bitwise from ``first``, and the largest float difference."""
    if len(first) != len(other):
        return True, None
    differs, largest = False, None
    for a, b in zip(first, other, strict=True):
        if _bytes_differ(a, b):
            differs = True
            diff = _abs_diff(a, b)
            if diff is not None and (largest is None or diff > largest):
                largest = diff
    return differs, largest


def _repeat(probe: Probe, device: torch.device, runs: int) -> Repeats:
    first = tuple(_comparable(t) for t in probe(device))
    differing, largest = 0, None
    for _ in range(runs - 1):
        differs, diff = compare(first, tuple(_comparable(t) for t in probe(device)))
        if differs:
            differing += 1
            if diff is not None and (largest is None or diff > largest):
                largest = diff
    return Repeats(runs, differing, largest)


# -- classifying ----------------------------------------------------------------------------------


def _verdict(default: Repeats, deterministic: Repeats | None) -> Verdict:
    if deterministic is None:
        return Verdict.RAISES
    if deterministic.differing:
        return Verdict.NONDETERMINISTIC
    if default.differing:
        return Verdict.FIXED
    return Verdict.NOT_REPRODUCED


def run_probe(entry: Entry, options: Options, probe: Probe | None = None) -> Result:
    """Classify ``entry`` on ``options.device`` from real runs of its probe.

    A not-applicable entry's probe still runs once, so that its code is known to be valid.
    """
    probe = probe or PROBES[entry.id]
    device = options.device
    expected = expected_verdict(entry, device)
    started = time.perf_counter()
    reason = not_applicable(entry, device)
    with isolated(options.threads if device.type == "cpu" else None), warnings.catch_warnings():
        # Probes use deprecated and beta APIs on purpose; their warnings are noise here.
        warnings.simplefilter("ignore")
        try:
            torch.use_deterministic_algorithms(False)
            if reason is not None:
                if missing_package(entry) is None:
                    probe(device)
                elapsed = time.perf_counter() - started
                return Result(
                    entry,
                    str(device),
                    Verdict.NOT_APPLICABLE,
                    expected,
                    note=reason,
                    seconds=elapsed,
                )
            default = _repeat(probe, device, options.runs)
            torch.use_deterministic_algorithms(True)
            caller = None
            try:
                deterministic: Repeats | None = _repeat(probe, device, options.runs)
            except RuntimeError as exc:
                caller = alert_caller(str(exc))
                if caller is None:
                    raise
                deterministic = None
        except Exception as exc:  # a probe that cannot run here is reported, not fatal
            return Result(
                entry,
                str(device),
                Verdict.NOT_APPLICABLE,
                expected,
                note=f"the probe failed on this device: {type(exc).__name__}: {exc}",
                failed=True,
                seconds=time.perf_counter() - started,
            )
    return Result(
        entry,
        str(device),
        _verdict(default, deterministic),
        expected,
        default=default,
        deterministic=deterministic,
        caller=caller,
        seconds=time.perf_counter() - started,
    )


def run_probes(
    entries: Sequence[Entry],
    options: Options,
    progress: Callable[[Result], None] | None = None,
) -> list[Result]:
    """Classify each entry, in order; ``progress`` is told of each result."""
    results = []
    for entry in entries:
        result = run_probe(entry, options)
        if progress is not None:
            progress(result)
        results.append(result)
    return results
