"""Digests of tensors (computed where the tensors live) and what a saved object holds: the two
things `--twice` compares runs by."""

from __future__ import annotations

import math

import pytest

pytestmark = pytest.mark.torch


def _value(tensor: object) -> int:
    from repro_lint.verify.digest import digest, read

    found = digest(tensor)  # type: ignore[arg-type]
    assert found is not None
    (value,) = read([found])
    assert value is not None
    return value


def test_a_digest_is_a_0d_integer_tensor_on_the_tensors_device() -> None:
    import torch

    from repro_lint.verify.digest import digest

    found = digest(torch.randn(5))
    assert found is not None
    assert (found.dim(), found.dtype, found.device.type) == (0, torch.int64, "cpu")


def test_one_changed_element_changes_the_digest() -> None:
    import torch

    x = torch.linspace(-1, 1, 10_000)
    y = x.clone()
    y[1234] = torch.nextafter(y[1234], torch.tensor(2.0))
    assert _value(x) == _value(x.clone())
    assert _value(x) != _value(y)


def test_the_order_of_elements_matters() -> None:
    """A shuffled batch holds the same samples in another order: it must not digest equal."""
    import torch

    x = torch.arange(64, dtype=torch.float32)
    assert _value(x) != _value(x.flip(0))
    assert _value(x) != _value(x[torch.randperm(64, generator=torch.Generator().manual_seed(1))])


def test_bits_decide_not_values() -> None:
    import torch

    assert _value(torch.tensor([0.0])) != _value(torch.tensor([-0.0]))
    nan = torch.tensor([math.nan])
    assert _value(nan) == _value(nan.clone())


@pytest.mark.parametrize(
    "dtype", ["float16", "bfloat16", "float32", "float64", "int8", "int64", "bool", "complex64"]
)
def test_every_dtype_has_a_digest(dtype: str) -> None:
    import torch

    kind = getattr(torch, dtype)
    x = (torch.arange(12) % 3).to(kind)
    y = x.clone()
    y[5] = 0 if y[5] else 1
    assert _value(x) == _value(x.clone())
    assert _value(x) != _value(y)


def test_layout_does_not_change_the_digest() -> None:
    import torch

    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    assert _value(x.t()) == _value(x.t().contiguous())
    assert _value(x.to_sparse()) == _value(x)
    assert _value(torch.tensor(3)) == _value(torch.tensor([3]))
    assert _value(torch.empty(0)) == 0


def test_tensors_without_data_have_no_digest() -> None:
    import torch

    from repro_lint.verify.digest import digest

    assert digest(torch.empty(3, device="meta")) is None


def test_host_generator_states() -> None:
    import random

    import numpy as np

    from repro_lint.verify.digest import numpy_state, python_state, stable

    assert stable("abc") == stable(b"abc") != stable("abd")
    first, second = random.Random(1), random.Random(1)
    assert python_state(first) == python_state(second)
    first.random()
    assert python_state(first) != python_state(second)
    assert numpy_state(np.random.RandomState(3)) == numpy_state(np.random.RandomState(3))
    assert numpy_state(np.random.default_rng(3)) != numpy_state(np.random.default_rng(4))


# -- saved objects ---------------------------------------------------------------------------------


def test_a_saved_module_is_read_through_its_state_dict() -> None:
    import torch

    from repro_lint.verify.saves import leaves

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(2, 3)
            self.norm = torch.nn.BatchNorm1d(3)

    found = {leaf.path: leaf for leaf in leaves(Net())}
    assert set(found) == {
        "['fc.weight']", "['fc.bias']", "['norm.weight']", "['norm.bias']",
        "['norm.running_mean']", "['norm.running_var']", "['norm.num_batches_tracked']",
    }  # fmt: skip
    assert all(leaf.tensor is not None for leaf in found.values())


def test_a_checkpoint_dict_with_plain_values_arrays_and_objects() -> None:
    import argparse

    import numpy as np
    import torch

    from repro_lint.verify.saves import leaves

    model = torch.nn.Linear(2, 1)
    checkpoint = {
        "model": model.state_dict(),
        "optimizer": torch.optim.SGD(model.parameters(), lr=0.1),
        "epoch": 3,
        "args": argparse.Namespace(lr=0.1, name="run"),
        "mean": np.zeros(4),
        "schedule": lambda epoch: 0.9**epoch,
    }
    found = {leaf.path: leaf for leaf in leaves(checkpoint)}
    assert found["['epoch']"].value == 3
    assert found["['args'].lr"].value == 0.1
    assert found["['mean']"].tensor is not None
    assert found["['model']['weight']"].tensor is not None
    assert found["['optimizer']['param_groups'][0]['lr']"].value == 0.1
    assert "function" in str(found["['schedule']"].value)
    assert all(leaf.unreadable is None for leaf in found.values())


def test_what_cannot_be_read_is_said() -> None:
    import threading

    from repro_lint.verify.saves import capture

    captured = capture({"lock": threading.Lock(), "step": 1}, budget=1 << 20)
    assert captured.not_compared is not None
    assert "['lock']" in captured.not_compared
    assert [r["path"] for r in captured.records] == ["['step']"]


def test_copies_are_kept_only_within_the_budget() -> None:
    import torch

    from repro_lint.verify.saves import capture

    captured = capture({"small": torch.zeros(4), "large": torch.zeros(1000)}, budget=64)
    assert set(captured.tensors) == {"['small']"}
    assert len(captured.digests) == 2


def test_sampler_indices_are_digested_whole() -> None:
    """A long tensor of indices would print elided; its digest covers every element."""
    import torch

    from repro_lint.verify.digest import host_value

    order = torch.arange(5000)
    swapped = order.clone()
    swapped[[2000, 2001]] = swapped[[2001, 2000]]
    assert host_value(order) == host_value(order.clone())
    assert host_value(order) != host_value(swapped)
    assert host_value([3, 1, 2]) != host_value([1, 2, 3])
