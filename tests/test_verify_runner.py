"""Probes and verdicts from real runs on the CPU (and on CUDA where there is one)."""

from __future__ import annotations

import os
import threading
import warnings
from typing import Any

import pytest

from repro_lint.catalog import BY_ID, ENTRIES, Device, Entry, Scope

pytestmark = pytest.mark.torch

# 2 threads: CPU atomics only race between threads (the catalog's facts were measured so).
THREADS = 2


def _cpu_options(runs: int = 3) -> Any:
    import torch

    from repro_lint.verify.runner import Options

    return Options(torch.device("cpu"), runs=runs, threads=THREADS)


def test_every_entry_has_a_probe() -> None:
    from repro_lint.verify.probes import PROBES

    assert set(PROBES) == {entry.id for entry in ENTRIES}


@pytest.mark.skipif((os.cpu_count() or 1) < THREADS, reason="CPU atomics race on 2 cores")
@pytest.mark.parametrize(
    "entry_id", ["index-put-accumulate-true-cpu", "put-accumulate-true-cpu", "getitem-backward-cpu"]
)
def test_cpu_atomics_are_nondeterministic_and_fixed_by_deterministic_mode(entry_id: str) -> None:
    """~2M duplicate-index updates on 2 threads: runs differ in default mode, never under
    the flag."""
    from repro_lint.verify.runner import Verdict, run_probe

    result = run_probe(BY_ID[entry_id], _cpu_options())
    assert result.default_verdict is Verdict.NONDETERMINISTIC
    assert result.verdict is Verdict.FIXED
    assert result.default is not None and result.deterministic is not None
    assert result.default.differing >= 1 and result.deterministic.differing == 0
    assert result.default.max_abs_diff is not None and result.default.max_abs_diff > 0
    assert result.confirmed and result.agreement == "agrees"


@pytest.mark.parametrize("entry_id", ["max-unpool2d", "put-accumulate-false"])
def test_ops_without_a_deterministic_kernel_raise_with_pytorchs_caller(entry_id: str) -> None:
    from repro_lint.verify.runner import Verdict, run_probe

    entry = BY_ID[entry_id]
    result = run_probe(entry, _cpu_options(runs=2))
    assert result.verdict is Verdict.RAISES
    assert result.caller == entry.caller
    assert result.deterministic is None and result.confirmed


def _racing_threads(device: Any) -> tuple[Any, ...]:
    """Two Python threads adding into one tensor at once: lost updates that no kernel choice
    can prevent, so deterministic mode cannot fix them."""
    import torch

    generator = torch.Generator().manual_seed(0)
    index = torch.randint(0, 64, (200_000,), generator=generator).to(device)
    values = torch.randn(200_000, generator=generator).to(device)
    total = torch.zeros(64, device=device)
    start = threading.Barrier(2)

    def add() -> None:
        start.wait()
        # Many short kernels, so the two threads overlap for the whole loop.
        for _ in range(100):
            total.index_add_(0, index, values)

    threads = [threading.Thread(target=add) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return (total,)


def test_differences_that_survive_deterministic_mode_are_nondeterministic() -> None:
    from repro_lint.verify.runner import Verdict, run_probe

    result = run_probe(BY_ID["index-put-accumulate-true-cpu"], _cpu_options(4), _racing_threads)
    assert result.verdict is Verdict.NONDETERMINISTIC
    assert result.deterministic is not None and result.deterministic.differing >= 1


def test_identical_runs_are_not_reproduced() -> None:
    import torch

    from repro_lint.verify.runner import Verdict, run_probe

    def seeded_sum(device: Any) -> tuple[Any, ...]:
        generator = torch.Generator().manual_seed(0)
        return (torch.randn(1000, generator=generator).to(device).cumsum(0),)

    result = run_probe(BY_ID["index-put-accumulate-true-cpu"], _cpu_options(), seeded_sum)
    assert result.verdict is Verdict.NOT_REPRODUCED and not result.confirmed
    assert result.agreement == "not-shown"


def _is_cuda_only(entry: Entry) -> bool:
    return entry.device is Device.CUDA


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.id)
def test_every_probe_runs_on_the_cpu(entry: Entry) -> None:
    """CUDA-only entries are not applicable here, but their probe code runs on CPU tensors;
    wherever the runs can tell, the CPU agrees with the catalog."""
    from repro_lint.verify.runner import Verdict, run_probe

    result = run_probe(entry, _cpu_options(runs=2))
    assert not result.failed, result.note
    if _is_cuda_only(entry) or entry.scope is Scope.TRACED:
        assert result.verdict is Verdict.NOT_APPLICABLE
    assert result.agreement in ("agrees", "not-shown")


def test_probe_outputs_are_identical_inputs_across_runs() -> None:
    """Every run starts from the same seeded inputs: a deterministic op gives equal bytes."""
    import torch

    from repro_lint.verify.probes import PROBES
    from repro_lint.verify.runner import compare

    cpu = torch.device("cpu")
    first, second = PROBES["cumsum-cuda"](cpu), PROBES["cumsum-cuda"](cpu)
    assert compare(first, second) == (False, None)


def test_settings_are_restored_whatever_happens() -> None:
    import torch

    from repro_lint.verify.runner import Options, run_probe

    def broken(device: Any) -> tuple[Any, ...]:
        torch.use_deterministic_algorithms(False)
        torch.backends.cudnn.benchmark = True
        raise ValueError("a probe that fails half-way")

    before = (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
        torch.get_num_threads(),
        torch.backends.cudnn.benchmark,
    )
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        options = Options(torch.device("cpu"), runs=2, threads=torch.get_num_threads() + 1)
        failed = run_probe(BY_ID["index-put-accumulate-true-cpu"], options, broken)
        raised = run_probe(BY_ID["put-accumulate-false"], options)
        assert failed.failed and not raised.failed
        assert torch.are_deterministic_algorithms_enabled()
        assert torch.is_deterministic_algorithms_warn_only_enabled()
        assert torch.get_num_threads() == before[2]
        assert torch.backends.cudnn.benchmark == before[3]
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=before[1])


def test_devices_resolve_or_are_refused() -> None:
    import torch

    from repro_lint.verify.runner import DeviceUnavailable, resolve_device

    assert resolve_device("cpu") == torch.device("cpu")
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device(None).type == expected
    with pytest.raises(DeviceUnavailable):
        resolve_device("not-a-device")
    with pytest.raises(DeviceUnavailable):
        resolve_device(f"cuda:{torch.cuda.device_count()}")


def test_alert_callers_are_read_from_pytorchs_message() -> None:
    import torch

    from repro_lint.verify.runner import alert_caller, isolated

    with isolated(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.use_deterministic_algorithms(True, warn_only=True)
        torch.zeros(4).put_(torch.tensor([0, 0]), torch.ones(2))
    callers = [alert_caller(str(w.message)) for w in caught]
    assert "put_" in callers
    assert alert_caller("an unrelated warning") is None


# -- on a GPU -------------------------------------------------------------------------------------


@pytest.mark.cuda
@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.id)
def test_every_probe_runs_on_cuda(entry: Entry) -> None:
    import torch

    from repro_lint.verify.runner import Options, run_probe

    result = run_probe(entry, Options(torch.device("cuda"), runs=3, threads=THREADS))
    # An attention backend may be missing from a GPU or build; every other probe must run.
    assert not result.failed or entry.id.startswith("sdpa-"), result.note


@pytest.mark.cuda
@pytest.mark.parametrize(
    "entry_id", ["index-add-cuda", "scatter-add-cuda", "bincount-weights-cuda"]
)
def test_cuda_atomics_show_their_catalogued_behaviour(entry_id: str) -> None:
    import torch

    from repro_lint.verify.runner import Options, run_probe

    result = run_probe(BY_ID[entry_id], Options(torch.device("cuda"), runs=5, threads=THREADS))
    assert result.confirmed and result.agreement == "agrees", result
