"""The backend flag names RPL206 and RPL207 know are the ones the installed torch has."""

from __future__ import annotations

import inspect
import re
import types
from typing import Any

import pytest

from repro_lint import determinism as det

torch = pytest.importorskip("torch")
cuda_backend = pytest.importorskip("torch.backends.cuda")
cudnn_backend = pytest.importorskip("torch.backends.cudnn")


def _public(namespace: Any) -> set[str]:
    """The public names a backend namespace defines itself: its own functions, classes,
    values and submodules, and the properties of the wrapper torch puts around it
    (``PropModule``); not what it merely imports (``os``, ``contextmanager``...)."""
    module = getattr(namespace, "m", namespace)
    names: set[str] = set()
    for name in dir(module):
        if name.startswith("_"):
            continue
        value = getattr(module, name)
        if isinstance(value, types.ModuleType):
            if value.__name__.startswith(module.__name__ + "."):
                names.add(name)
            continue
        home = getattr(value, "__module__", None)
        if (inspect.isclass(value) or callable(value)) and home not in (None, module.__name__):
            continue
        names.add(name)
    if module is not namespace:
        names |= {name for name in vars(type(namespace)) if not name.startswith("_")}
    return names


def _flags(namespace: Any) -> set[str]:
    """The settings of a ``PropModule`` wrapper: its data descriptors (``ContextProp``) and
    plain values."""
    return {
        name
        for name, value in vars(type(namespace)).items()
        if not name.startswith("_")
        and (value is None or (hasattr(value, "__get__") and hasattr(value, "__set__")))
    }


def _checked_names(cls: type) -> set[str]:
    """Names an object with ``__getattr__``/``__setattr__`` accepts (it raises for others)."""
    return set(re.findall(r'name == "(\w+)"', inspect.getsource(cls))) - {"backend", "op"}


def test_cudnn_names_match_the_installed_torch() -> None:
    cudnn = cudnn_backend
    assert _flags(cudnn) == det.CUDNN_FLAGS
    assert _public(cudnn) == det.CUDNN_NAMES


def test_cudnn_submodule_names_match_the_installed_torch() -> None:
    cudnn = cudnn_backend
    conv_flags, conv_names = det.CUDNN_SUBMODULES["conv"]
    assert _checked_names(type(cudnn.conv)) == conv_flags == conv_names
    rnn_flags, rnn_names = det.CUDNN_SUBMODULES["rnn"]
    assert _flags(cudnn.rnn) == rnn_flags
    assert _public(cudnn.rnn) == rnn_names


def test_matmul_flags_match_the_installed_torch() -> None:
    assert _checked_names(type(cuda_backend.matmul)) == det.MATMUL_FLAGS


def test_cuda_names_match_the_installed_torch() -> None:
    assert _public(cuda_backend) == det.CUDA_NAMES


def test_reduced_precision_flags_exist() -> None:
    assert det.REDUCED_PRECISION_FLAGS <= det.MATMUL_FLAGS | det.CUDNN_FLAGS
