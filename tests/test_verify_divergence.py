"""Where two op-level traces part and the likely cause, on traces written as the recorder
writes them (the end-to-end runs are in test_verify_twice.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from repro_lint.verify.divergence import locate


def op(
    name: str, phase: str, line: int, inputs: list[int | None], outputs: list[int], **extra: Any
) -> dict[str, Any]:
    site = {"path": "/p/train.py", "line": line, "end_line": line}
    return {"kind": "op", "op": name, "phase": phase, "site": site, "origin": None,
            "inputs": inputs, "outputs": outputs, "random": False, "generator": False,
            "entries": [], **extra}  # fmt: skip


def draw(name: str, phase: str, line: int, state: int, user: bool) -> dict[str, Any]:
    site = {"path": "/p/train.py", "line": line, "end_line": line}
    return {"kind": "draw", "op": name, "family": name.partition(".")[0], "phase": phase,
            "site": site, "origin": None, "state": state, "user_called": user,
            "generator": False, "owner": "RandomState", "inputs": [], "outputs": []}  # fmt: skip


def test_identical_traces_do_not_part() -> None:
    trace = [op("aten.mm.default", "forward", 3, [1, 2], [3])]
    assert locate(trace, list(trace), 1) is None


def test_a_random_op_with_the_same_inputs_is_a_draw() -> None:
    first = [op("aten.uniform_.default", "initialisation", 5, [], [10], random=True)]
    second = [op("aten.uniform_.default", "initialisation", 5, [], [11], random=True)]
    found = locate(first, second, 1)
    assert found is not None
    assert (found.phase, found.cause.kind, found.site and found.site.line) == (
        "initialisation",
        "initialisation",
        5,
    )
    assert found.cause.codes[0] == "RPL101"


def test_a_kernel_with_the_same_inputs_names_its_catalog_entry() -> None:
    entry = "index-put-accumulate-true-cpu"
    first = [op("aten.index_put_.default", "forward", 9, [1, 2], [5], entries=[entry])]
    second = [op("aten.index_put_.default", "forward", 9, [1, 2], [6], entries=[entry])]
    found = locate(first, second, 2)
    assert found is not None
    assert (found.step, found.cause.kind, found.cause.entries) == (
        2,
        "nondeterministic-kernel",
        (entry,),
    )
    assert found.detail == "same inputs, different output"


def test_a_draw_that_reaches_no_tensor_is_not_the_divergence() -> None:
    """A temporary file's random name differs in every run; the weights drawn next are what
    decides."""
    first = [
        draw("random.choices", "data", 2, 100, user=False),
        op("aten.normal_.default", "initialisation", 7, [], [1], random=True),
    ]
    second = [
        draw("random.choices", "data", 2, 200, user=False),
        op("aten.normal_.default", "initialisation", 7, [], [2], random=True),
    ]
    found = locate(first, second, 1)
    assert found is not None
    assert (found.op, found.site and found.site.line) == ("aten.normal_", 7)


def test_host_data_that_differs_is_explained_by_the_users_draw() -> None:
    first = [
        draw("random.choices", "data", 2, 100, user=False),
        draw("numpy.normal", "data", 18, 5, user=True),
        op("aten.lift_fresh.default", "data", 19, [40], [40]),
    ]
    second = [
        draw("random.choices", "data", 2, 300, user=False),
        draw("numpy.normal", "data", 18, 6, user=True),
        op("aten.lift_fresh.default", "data", 19, [41], [41]),
    ]
    found = locate(first, second, 1, "data")
    assert found is not None
    assert (found.op, found.site and found.site.line, found.cause.kind) == (
        "numpy.normal",
        18,
        "data-content",
    )


def test_host_data_with_no_differing_draw_is_data_read_from_outside() -> None:
    first = [op("aten.lift_fresh.default", "data", 19, [40], [40])]
    second = [op("aten.lift_fresh.default", "data", 19, [41], [41])]
    found = locate(first, second, 1, "data")
    assert found is not None
    assert found.cause.kind == "data-content"
    assert found.detail.startswith("its inputs already differ")


def test_earlier_phases_are_skipped_when_the_step_records_agree_there() -> None:
    """Weights drawn at random and then set to zeros: initialisation agrees, the shuffle
    that follows does not."""
    first = [
        op("aten.uniform_.default", "initialisation", 4, [], [1], random=True),
        op("aten.random_.default", "data", 8, [], [7], random=True),
    ]
    second = [
        op("aten.uniform_.default", "initialisation", 4, [], [2], random=True),
        op("aten.random_.default", "data", 8, [], [9], random=True),
    ]
    found = locate(first, second, 1, "data")
    assert found is not None
    assert (found.phase, found.cause.kind) == ("data", "data-order")


def test_different_ops_mean_different_paths() -> None:
    first = [
        op("aten.relu.default", "forward", 3, [1], [1]),
        op("aten.mm.default", "forward", 4, [1], [2]),
    ]
    second = [
        op("aten.relu.default", "forward", 3, [1], [1]),
        op("aten.add.Tensor", "forward", 6, [1], [2]),
    ]
    found = locate(first, second, 3)
    assert found is not None
    assert found.cause.kind == "control-flow"
    assert found.site is not None and found.site.line == 4


def test_reading_uninitialised_memory() -> None:
    first = [op("aten.add.Tensor", "forward", 3, [None], [5], reads_uninitialised=True)]
    second = [op("aten.add.Tensor", "forward", 3, [None], [6], reads_uninitialised=True)]
    found = locate(first, second, 1)
    assert found is not None
    assert found.cause.kind == "uninitialised-memory"
    assert found.cause.codes == ()


# -- the op-level re-runs: which pair's answer is kept --------------------------------------------


class _Trace:
    def __init__(self, ops: list[dict[str, Any]]) -> None:
        self.ops = ops
        self.owners: dict[str, Any] = {}


class _Run:
    def __init__(self, number: int, ops: list[dict[str, Any]]) -> None:
        self.number = number
        self.trace = _Trace(ops)
        self.completed = True
        self.failure = None
        self.seconds = 1.0


class _Files:
    def learn(self, run: object) -> None:
        pass

    def reset(self) -> None:
        pass


def _located(monkeypatch: Any, pairs: list[tuple[list[Any], list[Any]]]) -> Any:
    """``rerun._locate`` with re-runs that give the traces of ``pairs`` in turn."""
    from types import SimpleNamespace

    from repro_lint.verify import rerun

    traces = [trace for pair in pairs for trace in pair]

    def run_once(number: int, *args: Any) -> _Run:
        return _Run(number, traces[number - 3])

    monkeypatch.setattr(rerun, "run_once", run_once)
    first = SimpleNamespace(step=3, phase="forward", owner=None, after_last=False)
    outcome = SimpleNamespace(
        comparison=SimpleNamespace(first=first),
        runs=(_Run(1, []), _Run(2, [])),
        located=(),
        divergence=None,
    )
    files: Any = _Files()
    fake: Any = outcome
    rerun._locate(fake, Path("train.py"), (), Path("."), rerun.Settings(), files, lambda _: None)
    return outcome


# A race in the traced step: same inputs, different output.
RACE = (
    [op("aten.index_put_.default", "forward", 9, [1, 2], [5], entries=["e"])],
    [op("aten.index_put_.default", "forward", 9, [1, 2], [6], entries=["e"])],
)
# A pair that parted in an earlier, untraced step: the step's first op already has
# differing inputs.
SOONER = (
    [op("aten.mul.Tensor", "forward", 8, [1, 7], [5])],
    [op("aten.mul.Tensor", "forward", 8, [1, 8], [6])],
)


def test_a_pair_that_parted_sooner_gives_way_to_one_that_parts_in_the_step(
    monkeypatch: Any,
) -> None:
    outcome = _located(monkeypatch, [SOONER, RACE])
    assert outcome.divergence.cause.kind == "nondeterministic-kernel"
    assert len(outcome.located) == 4
    # With no better second pair, the first pair's answer stands.
    outcome = _located(monkeypatch, [SOONER, ([], [])])
    assert (outcome.divergence.cause.kind, outcome.divergence.site.line) == ("unexplained", 8)
    # A first pair that parts in the step is taken at once.
    outcome = _located(monkeypatch, [RACE, SOONER])
    assert outcome.divergence.cause.kind == "nondeterministic-kernel"
    assert len(outcome.located) == 2
