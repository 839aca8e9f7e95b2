"""What an object passed to ``torch.save`` holds, read at save time in the process that saves
it: its tensors (digests, and copies when small enough) and its plain values, by path.

Reading at save time means comparing never unpickles the user's classes: a whole model saved
with ``torch.save(model, f)`` is compared through its ``state_dict()``, whatever module its
class lives in.
"""

from __future__ import annotations

import enum
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

from repro_lint.verify.digest import digest

# Deeper structures are reported as not compared rather than walked.
_MAX_DEPTH = 12


@dataclass(frozen=True)
class Leaf:
    """One value in a saved object: a tensor or a plain value, at a path like
    ``['model']['fc.weight']``."""

    path: str
    tensor: torch.Tensor | None = None
    value: Any = None
    # Why this part could not be compared (None: it can be).
    unreadable: str | None = None


def _key(key: object) -> str:
    return repr(key) if isinstance(key, str | int | float | bool | None) else repr(str(key))


def _plain(value: object) -> bool:
    return value is None or isinstance(value, bool | int | float | complex | str | bytes)


def leaves(
    obj: object, path: str = "", depth: int = 0, seen: set[int] | None = None
) -> Iterator[Leaf]:
    """The leaves of ``obj``, in a stable order."""
    seen = set() if seen is None else seen
    if isinstance(obj, torch.Tensor):
        yield Leaf(path or "(tensor)", tensor=obj)
        return
    if _plain(obj):
        yield Leaf(path or "(value)", value=obj)
        return
    if isinstance(obj, enum.Enum | torch.dtype | torch.device | torch.Size | os.PathLike):
        yield Leaf(path or "(value)", value=str(obj))
        return
    if depth >= _MAX_DEPTH:
        yield Leaf(path, unreadable=f"nested more than {_MAX_DEPTH} levels deep")
        return
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, torch.nn.Module | torch.optim.Optimizer):
        yield from leaves(obj.state_dict(), path, depth + 1, seen)
        return
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield from leaves(value, f"{path}[{_key(key)}]", depth + 1, seen)
        return
    if isinstance(obj, list | tuple):
        for index, item in enumerate(obj):
            yield from leaves(item, f"{path}[{index}]", depth + 1, seen)
        return
    if isinstance(obj, set | frozenset):
        yield Leaf(path, value=sorted(repr(item) for item in obj))
        return
    numpy_array = _numpy(obj)
    if numpy_array is not None:
        yield Leaf(path, tensor=numpy_array)
        return
    state_dict = getattr(obj, "state_dict", None)
    if callable(state_dict):
        try:
            state = state_dict()
        except Exception as exc:
            yield Leaf(path, unreadable=f"`{type(obj).__name__}.state_dict()` failed: {exc}")
            return
        yield from leaves(state, path, depth + 1, seen)
        return
    if callable(obj):
        # Functions and classes are saved by name.
        name = getattr(obj, "__qualname__", None) or type(obj).__qualname__
        yield Leaf(path, value=f"<{type(obj).__name__} {getattr(obj, '__module__', '?')}.{name}>")
        return
    attributes = getattr(obj, "__dict__", None)
    if isinstance(attributes, dict):
        for key, value in attributes.items():
            yield from leaves(value, f"{path}.{key}", depth + 1, seen)
        return
    yield Leaf(path, unreadable=f"a `{type(obj).__name__}` holds nothing this tool can read")


def _numpy(obj: object) -> torch.Tensor | None:
    if type(obj).__module__ != "numpy" or not hasattr(obj, "dtype"):
        return None
    try:
        return torch.from_numpy(obj)
    except (TypeError, ValueError):
        return None


@dataclass(frozen=True)
class Captured:
    """A saved object, read: each leaf's JSON record, and the tensors worth keeping."""

    records: list[dict[str, Any]]
    digests: list[torch.Tensor | None]
    tensors: dict[str, torch.Tensor]
    not_compared: str | None


def capture(obj: object, budget: int) -> Captured:
    """Read ``obj``; keep CPU copies of its tensors while they fit in ``budget`` bytes."""
    records: list[dict[str, Any]] = []
    found: list[torch.Tensor | None] = []
    kept: dict[str, torch.Tensor] = {}
    problems: list[str] = []
    try:
        for leaf in leaves(obj):
            if leaf.unreadable is not None:
                problems.append(f"{leaf.path or '(object)'}: {leaf.unreadable}")
                continue
            if leaf.tensor is None:
                records.append({"path": leaf.path, "value": _jsonable(leaf.value)})
                continue
            tensor = leaf.tensor
            records.append(
                {"path": leaf.path, "dtype": str(tensor.dtype), "shape": list(tensor.shape)}
            )
            found.append(digest(tensor))
            size = tensor.numel() * tensor.element_size()
            if size <= budget and tensor.device.type != "meta":
                budget -= size
                kept[leaf.path] = tensor.detach().to("cpu", copy=True)
    except Exception as exc:  # an object that breaks while being read is reported, never fatal
        problems.append(f"reading it failed: {type(exc).__name__}: {exc}")
    return Captured(records, found, kept, "; ".join(problems) or None)


def _jsonable(value: object) -> object:
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        # JSON has no NaN; the text keeps NaN and infinities comparable.
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, list):
        return [_jsonable(item) for item in value]
    return repr(value)
