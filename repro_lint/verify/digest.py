"""Bitwise digests of tensors, computed on the device the tensors live on, and of the host
random number generators' states.

A tensor's digest is a position-weighted sum of its bit patterns: its bytes are read as
32-bit integers (narrower elements are widened, wider ones split), each is multiplied by an
odd weight (wrapping at 32 bits) and the products are summed in 64 bits. One changed element
always changes the digest; integer sums do not depend on the reduction order, so the digest
itself is deterministic on every device. It stays a 0-d tensor on the device until a batch of
digests is read at once.
"""

from __future__ import annotations

import hashlib
import random
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import torch

# The weights for each device, grown as larger tensors come (one vector serves every size).
_WEIGHTS: dict[torch.device, torch.Tensor] = {}
_GOLDEN = 0x9E3779B1
_OFFSET = 0x7F4A7C15


def _weights(count: int, device: torch.device) -> torch.Tensor:
    weights = _WEIGHTS.get(device)
    if weights is None or weights.numel() < count:
        size = max(count, 2 * (weights.numel() if weights is not None else 0), 4096)
        index = torch.arange(size, dtype=torch.int64, device=device)
        # Odd weights below 2**31: multiplying by one is a bijection modulo 2**32.
        weights = (((index * _GOLDEN + _OFFSET) % (1 << 31)) | 1).to(torch.int32)
        _WEIGHTS[device] = weights
    return weights[:count]


def _bits(tensor: torch.Tensor) -> torch.Tensor:
    """The tensor's bytes as a flat int32 tensor (elements widened or split)."""
    if tensor.layout is not torch.strided:
        tensor = tensor.to_dense()
    if tensor.is_quantized:
        tensor = tensor.int_repr()
    if tensor.is_complex():
        tensor = torch.view_as_real(tensor)
    flat = tensor.contiguous().reshape(-1)
    if flat.dtype is torch.bool:
        return flat.view(torch.uint8).to(torch.int32)
    size = flat.element_size()
    if size == 1:
        return flat.view(torch.uint8).to(torch.int32)
    if size == 2:
        return flat.view(torch.int16).to(torch.int32)
    return flat.view(torch.int32)


def digest(tensor: torch.Tensor) -> torch.Tensor | None:
    """A 0-d int64 tensor on ``tensor``'s device, or None when its data cannot be read here
    (meta and fake tensors, subclasses without storage)."""
    try:
        tensor = tensor.detach()
        if tensor.device.type == "meta":
            return None
        bits = _bits(tensor)
        if bits.numel() == 0:
            return torch.zeros((), dtype=torch.int64, device=tensor.device)
        return (bits * _weights(bits.numel(), bits.device)).sum(dtype=torch.int64)
    except Exception:  # a tensor subclass or layout without readable bytes
        return None


def combine(digests: Sequence[torch.Tensor]) -> torch.Tensor | None:
    """One digest for an ordered sequence of digests (on the first one's device)."""
    if not digests:
        return None
    device = digests[0].device
    stacked = torch.stack([d.to(device) for d in digests])
    return (stacked * _weights(len(digests), device).to(torch.int64)).sum()


def tensors_in(value: object, depth: int = 0) -> Iterator[torch.Tensor]:
    """The tensors in a (nested) batch, in a stable order."""
    if isinstance(value, torch.Tensor):
        yield value
    elif depth > 8:
        return
    elif isinstance(value, dict):
        for item in value.values():
            yield from tensors_in(item, depth + 1)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from tensors_in(item, depth + 1)


def digest_all(values: Iterable[object]) -> torch.Tensor | None:
    """One digest of every tensor in ``values`` (None when there is none)."""
    found = [d for t in tensors_in(list(values)) if (d := digest(t)) is not None]
    return combine(found)


def read(digests: Sequence[torch.Tensor | None]) -> list[int | None]:
    """Python integers for a batch of 0-d digests: one transfer per device."""
    values: list[int | None] = [None] * len(digests)
    by_device: dict[torch.device, list[int]] = {}
    for index, found in enumerate(digests):
        if found is not None:
            by_device.setdefault(found.device, []).append(index)
    for indices in by_device.values():
        stacked = torch.stack([digests[i].to(torch.int64) for i in indices])  # type: ignore[union-attr]
        for index, value in zip(indices, stacked.cpu().tolist(), strict=True):
            values[index] = int(value)
    return values


def read_floats(values: Sequence[torch.Tensor]) -> list[float]:
    """Python floats for 0-d tensors (losses): one transfer per device."""
    result: list[float] = [float("nan")] * len(values)
    by_device: dict[torch.device, list[int]] = {}
    for index, value in enumerate(values):
        by_device.setdefault(value.device, []).append(index)
    for indices in by_device.values():
        stacked = torch.stack([values[i].detach().reshape(()).double() for i in indices])
        for index, value in zip(indices, stacked.cpu().tolist(), strict=True):
            result[index] = float(value)
    return result


# -- host values ----------------------------------------------------------------------------------


def stable(data: bytes | str) -> int:
    """A digest of bytes or text that does not change between processes (``hash`` does)."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    return int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), "little", signed=True)


def host_value(value: object) -> int:
    """A digest of what a sampler yields: indices as Python numbers, lists of them, or tensors
    (whose ``repr`` would elide long ones)."""
    if isinstance(value, torch.Tensor):
        data = value.detach().cpu().contiguous().reshape(-1)
        raw = bytes(data.view(torch.uint8).numpy()) if data.numel() else b""
        return stable(repr((data.dtype, tuple(value.shape))).encode() + raw)
    if isinstance(value, list | tuple):
        return stable(repr([host_value(item) for item in value]))
    tobytes = getattr(value, "tobytes", None)
    if callable(tobytes):
        return stable(repr(getattr(value, "dtype", "")).encode() + bytes(tobytes()))
    return stable(repr(value))


def numpy_state(generator: Any) -> int:
    """The state of a numpy ``RandomState``, ``Generator`` or bit generator."""
    if hasattr(generator, "get_state"):
        kind, keys, position, has_gauss, gauss = generator.get_state()
        return stable(keys.tobytes() + repr((kind, position, has_gauss, gauss)).encode())
    bit_generator = getattr(generator, "bit_generator", generator)
    return stable(repr(sorted(bit_generator.state.items())))


def python_state(generator: random.Random) -> int:
    return stable(repr(generator.getstate()))


def cuda_initialised() -> bool:
    """Whether the program has used CUDA (asking does not initialise it)."""
    return torch.cuda.is_available() and bool(torch.cuda.is_initialized())  # type: ignore[no-untyped-call]


def rng_states() -> dict[str, int]:
    """The global generators' states: torch (CPU and each initialised CUDA device), numpy (when
    the program imported it) and ``random``."""
    states = {
        "torch": stable(torch.get_rng_state().numpy().tobytes()),
        "random": python_state(random._inst),
    }
    if cuda_initialised():
        for index, state in enumerate(torch.cuda.get_rng_state_all()):
            states[f"torch.cuda:{index}"] = stable(state.numpy().tobytes())
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        states["numpy"] = numpy_state(numpy.random.mtrand._rand)
    return states
