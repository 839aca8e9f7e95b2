"""One runnable probe per catalog entry: seeded inputs sized so that nondeterminism can show,
the op (and its backward where the hazard is there), and the tensors to compare between runs.

Every probe builds its inputs on the CPU from a fixed seed and then moves them to the device,
so two runs start from bitwise-identical inputs on every device. Hazards that come from
atomic adds need many updates landing on few places, and floating-point values that do not
add up exactly in every order: probes use random values (never all-ones gradients, whose sums
are exact integers) and millions of duplicate indices. The same code runs on CPU tensors, so
the probes of CUDA-only entries are checked for validity where no GPU is available.
"""

from __future__ import annotations

import contextlib
import importlib
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import MappingProxyType

import torch
import torch.nn.functional as F  # noqa: N812 (PyTorch's own spelling)

Outputs = tuple[torch.Tensor, ...]
Probe = Callable[[torch.device], Outputs]

SEED = 20240607
# Duplicate-index updates: ~2M values into 64 slots show CPU nondeterminism on 2 threads
# in every run (measured), and saturate CUDA atomics.
UPDATES = 2_000_000
SLOTS = 64


class _Inputs:
    """Seeded inputs for one probe run, made on the CPU and moved to ``device``."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.generator = torch.Generator().manual_seed(SEED)

    def randn(
        self, *shape: int, grad: bool = False, dtype: torch.dtype = torch.float32
    ) -> torch.Tensor:
        value = torch.randn(shape, generator=self.generator).to(self.device, dtype)
        return value.requires_grad_(grad)

    def rand(self, *shape: int, grad: bool = False) -> torch.Tensor:
        value = torch.rand(shape, generator=self.generator).to(self.device)
        return value.requires_grad_(grad)

    def randint(self, low: int, high: int, *shape: int) -> torch.Tensor:
        return torch.randint(low, high, shape, generator=self.generator).to(self.device)

    def ties(self, *shape: int, levels: int = 4) -> torch.Tensor:
        """Floats with many equal values, so that index outputs depend on tie-breaking."""
        return self.randint(0, levels, *shape).float()

    def duplicates(self, updates: int = UPDATES, slots: int = SLOTS) -> torch.Tensor:
        return self.randint(0, slots, updates)

    def near_one(self, *shape: int) -> torch.Tensor:
        """Factors close to 1, so that long products neither vanish nor overflow."""
        return 1.0 + 1e-4 * self.randn(*shape)


def _backward(
    inputs: _Inputs, output: torch.Tensor, wrt: Sequence[torch.Tensor]
) -> tuple[torch.Tensor, ...]:
    """Gradients of ``output`` with respect to ``wrt`` for a seeded random upstream gradient."""
    upstream = inputs.randn(*output.shape, dtype=output.dtype)
    return tuple(torch.autograd.grad(output, list(wrt), upstream))


def _with_backward(
    op: Callable[[_Inputs], tuple[torch.Tensor, Sequence[torch.Tensor]]],
) -> Probe:
    """A probe returning the op's output and the gradients of its differentiable inputs."""

    def probe(device: torch.device) -> Outputs:
        inputs = _Inputs(device)
        output, wrt = op(inputs)
        return (output.detach(), *_backward(inputs, output, wrt))

    return probe


def _forward(op: Callable[[_Inputs], torch.Tensor | Sequence[torch.Tensor]]) -> Probe:
    def probe(device: torch.device) -> Outputs:
        result = op(_Inputs(device))
        return (result,) if isinstance(result, torch.Tensor) else tuple(result)

    return probe


# -- convolutions (cuDNN algorithm choice) ------------------------------------------------------


def _conv(dims: int, transposed: bool) -> Probe:
    spatial = {1: (2048,), 2: (48, 48), 3: (12, 12, 12)}[dims]
    function = getattr(F, f"conv_transpose{dims}d" if transposed else f"conv{dims}d")

    def op(inputs: _Inputs) -> tuple[torch.Tensor, Sequence[torch.Tensor]]:
        x = inputs.randn(8, 32, *spatial, grad=True)
        weight = inputs.randn(32, 32, *([3] * dims), grad=True)
        return function(x, weight, padding=1), (x, weight)

    return _with_backward(op)


# -- indexing -----------------------------------------------------------------------------------


def _getitem_backward(inputs: _Inputs) -> tuple[torch.Tensor, Sequence[torch.Tensor]]:
    x = inputs.randn(SLOTS, grad=True)
    return x[inputs.duplicates()], (x,)


def _setitem(inputs: _Inputs) -> torch.Tensor:
    x = torch.zeros(SLOTS, device=inputs.device)
    x[inputs.duplicates()] = inputs.randn(UPDATES)
    return x


def _index_put(accumulate: bool) -> Probe:
    def op(inputs: _Inputs) -> torch.Tensor:
        x = torch.zeros(SLOTS, device=inputs.device)
        return x.index_put_((inputs.duplicates(),), inputs.randn(UPDATES), accumulate=accumulate)

    return _forward(op)


def _put(accumulate: bool) -> Probe:
    def op(inputs: _Inputs) -> torch.Tensor:
        x = torch.zeros(SLOTS, device=inputs.device)
        return x.put_(inputs.duplicates(), inputs.randn(UPDATES), accumulate=accumulate)

    return _forward(op)


def _scatter_add(inputs: _Inputs) -> torch.Tensor:
    x = torch.zeros(SLOTS, device=inputs.device)
    return x.scatter_add_(0, inputs.duplicates(), inputs.randn(UPDATES))


def _gather_backward(inputs: _Inputs) -> tuple[torch.Tensor, Sequence[torch.Tensor]]:
    x = inputs.randn(SLOTS, grad=True)
    return torch.gather(x, 0, inputs.duplicates()), (x,)


def _index_add(inputs: _Inputs) -> torch.Tensor:
    x = torch.zeros(SLOTS, device=inputs.device)
    return x.index_add_(0, inputs.duplicates(), inputs.randn(UPDATES))


def _index_select_backward(inputs: _Inputs) -> tuple[torch.Tensor, Sequence[torch.Tensor]]:
    x = inputs.randn(SLOTS, 16, grad=True)
    return torch.index_select(x, 0, inputs.duplicates(UPDATES // 16)), (x,)


def _repeat_interleave_backward(inputs: _Inputs) -> tuple[torch.Tensor, Sequence[torch.Tensor]]:
    x = inputs.randn(256, 16, grad=True)
    # Tensor repeats go through index_select (an int repeat is a broadcast: no atomics).
    repeats = inputs.randint(1, 512, 256)
    return torch.repeat_interleave(x, repeats, dim=0), (x,)


def _index_copy(inputs: _Inputs) -> torch.Tensor:
    x = torch.zeros(SLOTS, device=inputs.device)
    return x.index_copy_(0, inputs.duplicates(), inputs.randn(UPDATES))


def _scatter_src(inputs: _Inputs) -> torch.Tensor:
    x = torch.zeros(SLOTS, device=inputs.device)
    return x.scatter_(0, inputs.duplicates(), inputs.randn(UPDATES))


def _scatter_reduce(reduce: str) -> Probe:
    def op(inputs: _Inputs) -> torch.Tensor:
        if reduce == "prod":
            x = torch.ones(SLOTS, device=inputs.device)
            src = inputs.near_one(UPDATES)
        else:
            x = torch.zeros(SLOTS, device=inputs.device)
            src = inputs.randn(UPDATES)
        return x.scatter_reduce_(0, inputs.duplicates(), src, reduce)

    return _forward(op)


def _scatter_multiply(inputs: _Inputs) -> torch.Tensor:
    x = torch.ones(SLOTS, device=inputs.device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the legacy ``reduce=`` argument is deprecated
        return x.scatter_(0, inputs.duplicates(), inputs.near_one(UPDATES), reduce="multiply")


def _index_reduce(inputs: _Inputs) -> torch.Tensor:
    x = torch.ones(SLOTS, device=inputs.device)
    return x.index_reduce_(0, inputs.duplicates(), inputs.near_one(UPDATES), "prod")


# -- padding, pooling, interpolation --------------------------------------------------------------

# Shapes per number of spatial dimensions: big enough that many threads add into the border
# (padding) or into shared input positions (overlapping windows).
_SPATIAL = {1: (8, 16, 4096), 2: (8, 16, 96, 96), 3: (4, 8, 20, 20, 20)}


def _pad(mode: str, dims: int) -> Probe:
    def op(inputs: _Inputs) -> tuple[torch.Tensor, Sequence[torch.Tensor]]:
        x = inputs.randn(*_SPATIAL[dims], grad=True)
        return F.pad(x, (3,) * (2 * dims), mode=mode), (x,)

    return _with_backward(op)


def _pool3d(function: Callable[..., torch.Tensor]) -> Probe:
    def op(inputs: _Inputs) -> tuple[torch.Tensor, Sequence[torch.Tensor]]:
        x = inputs.randn(*_SPATIAL[3], grad=True)
        # Overlapping windows (stride 1): several windows add into one input gradient.
        return function(x), (x,)

    return _with_backward(op)


def _max_pool3d_indices(device: torch.device) -> Outputs:
    inputs = _Inputs(device)
    x = inputs.randn(*_SPATIAL[3], grad=True)
    output, indices = F.max_pool3d(x, 3, stride=1, return_indices=True)
    return (output.detach(), indices, *_backward(inputs, output, (x,)))


def _adaptive(function: Callable[..., torch.Tensor], dims: int, size: int) -> Probe:
    def op(inputs: _Inputs) -> tuple[torch.Tensor, Sequence[torch.Tensor]]:
        # An input size that is not a multiple of the output size: the bins overlap.
        shape = {2: (8, 16, 37, 37), 3: (4, 8, 19, 19, 19)}[dims]
        x = inputs.randn(*shape, grad=True)
        return function(x, size), (x,)

    return _with_backward(op)


def _adaptive_max(dims: int) -> Probe:
    function = getattr(F, f"adaptive_max_pool{dims}d")

    def op(inputs: _Inputs) -> tuple[torch.Tensor, Sequence[torch.Tensor]]:
        shape = {2: (8, 16, 37, 37), 3: (4, 8, 19, 19, 19)}[dims]
        # Ties make neighbouring windows share their maximum, so gradients collide.
        x = inputs.ties(*shape).requires_grad_(True)
        return function(x, shape[-1] - 1), (x,)

    return _with_backward(op)


def _fractional(dims: int) -> Probe:
    function = getattr(F, f"fractional_max_pool{dims}d")

    def op(inputs: _Inputs) -> tuple[torch.Tensor, Sequence[torch.Tensor]]:
        x = inputs.ties(*_SPATIAL[dims]).requires_grad_(True)
        # The op draws its window offsets at random unless they are given.
        samples = inputs.rand(x.shape[0], x.shape[1], dims)
        ratio = (0.5,) * dims
        return function(x, 3, output_ratio=ratio, _random_samples=samples), (x,)

    return _with_backward(op)


def _max_unpool(dims: int) -> Probe:
    function: Callable[..., torch.Tensor] = getattr(F, f"max_unpool{dims}d")

    def op(inputs: _Inputs) -> torch.Tensor:
        shape = {1: (8, 16, 1024), 2: (8, 16, 32, 32), 3: (4, 8, 10, 10, 10)}[dims]
        values = inputs.randn(*shape)
        plane = 1
        for size in shape[2:]:
            plane *= 2 * size
        # Repeated indices (MaxPool's are unique per plane): which value lands is unspecified.
        indices = inputs.randint(0, plane // 64, *shape)
        return function(values, indices, 2)

    return _forward(op)


def _interpolate(mode: str, antialias: bool = False) -> Probe:
    dims = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}[mode]

    def op(inputs: _Inputs) -> tuple[torch.Tensor, Sequence[torch.Tensor]]:
        x = inputs.randn(*_SPATIAL[dims], grad=True)
        # Downsampling with antialias (its reason to exist); upsampling otherwise.
        scale = 0.5 if antialias else 2.0
        output = F.interpolate(
            x, scale_factor=scale, mode=mode, align_corners=False, antialias=antialias
        )
        return output, (x,)

    return _with_backward(op)


def _grid_sample(dims: int) -> Probe:
    def op(inputs: _Inputs) -> tuple[torch.Tensor, Sequence[torch.Tensor]]:
        # Many more sampling points than input pixels: gradients collide in the input.
        shape = {2: (4, 8, 32, 32), 3: (2, 4, 12, 12, 12)}[dims]
        points = {2: (128, 128), 3: (32, 32, 32)}[dims]
        x = inputs.randn(*shape, grad=True)
        grid = (inputs.rand(shape[0], *points, dims) * 2 - 1).requires_grad_(True)
        return F.grid_sample(x, grid, align_corners=False), (x, grid)

    return _with_backward(op)


# -- losses -------------------------------------------------------------------------------------


def _nll_loss2d(inputs: _Inputs) -> torch.Tensor:
    logits = inputs.randn(8, 10, 64, 64).log_softmax(1)
    return F.nll_loss(logits, inputs.randint(0, 10, 8, 64, 64))


def _ctc_loss(inputs: _Inputs) -> tuple[torch.Tensor, Sequence[torch.Tensor]]:
    steps, batch, classes, length = 64, 16, 20, 24
    logits = inputs.randn(steps, batch, classes, grad=True)
    targets = inputs.randint(1, classes, batch, length)
    input_lengths = torch.full((batch,), steps, dtype=torch.long, device=inputs.device)
    target_lengths = inputs.randint(length // 2, length + 1, batch)
    loss = F.ctc_loss(logits.log_softmax(2), targets, input_lengths, target_lengths)
    return loss, (logits,)


def _embedding_bag_max(inputs: _Inputs) -> tuple[torch.Tensor, Sequence[torch.Tensor]]:
    weight = inputs.ties(256, 32).requires_grad_(True)
    bags = inputs.randint(0, 256, 4096, 16)
    return F.embedding_bag(bags, weight, mode="max"), (weight,)


# -- reductions and scans -----------------------------------------------------------------------


def _histc(inputs: _Inputs) -> torch.Tensor:
    return torch.histc(inputs.rand(UPDATES), bins=SLOTS, min=0.0, max=1.0)


def _histc_integer(inputs: _Inputs) -> torch.Tensor:
    values = inputs.randint(0, SLOTS, UPDATES)
    if values.device.type == "cpu":
        # The CPU kernel takes floating input only; the CUDA entry is about integer input.
        values = values.float()
    return torch.histc(values, bins=SLOTS, min=0, max=SLOTS - 1)


def _bincount_weights(inputs: _Inputs) -> torch.Tensor:
    return torch.bincount(inputs.duplicates(), weights=inputs.randn(UPDATES), minlength=SLOTS)


def _median(function: Callable[..., tuple[torch.Tensor, torch.Tensor]], nan: bool) -> Probe:
    def op(inputs: _Inputs) -> Sequence[torch.Tensor]:
        x = inputs.ties(512, 1024)
        if nan:
            x = x.masked_fill(inputs.rand(512, 1024) < 0.1, float("nan"))
        values, indices = function(x, dim=1)
        return values, indices

    return _forward(op)


def _cumsum(inputs: _Inputs) -> torch.Tensor:
    return torch.cumsum(inputs.randn(64, 16384), dim=1)


def _cumsum_1d(inputs: _Inputs) -> torch.Tensor:
    return torch.cumsum(inputs.randn(UPDATES), dim=0)


def _kthvalue(inputs: _Inputs) -> Sequence[torch.Tensor]:
    values, indices = torch.kthvalue(inputs.ties(512, 1024), 100, dim=1)
    return values, indices


def _mode(inputs: _Inputs) -> Sequence[torch.Tensor]:
    values, indices = torch.mode(inputs.ties(512, 1024), dim=1)
    return values, indices


def _topk(inputs: _Inputs) -> Sequence[torch.Tensor]:
    # float32, largest and sorted, k in 64..1024: the case the optional CuTeDSL kernel takes.
    values, indices = torch.topk(inputs.ties(64, 4096, levels=64), 256, dim=-1)
    return values, indices


def _resize_quantized(inputs: _Inputs) -> torch.Tensor:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # quantized dtypes are deprecated in 2.13
        quantized = torch.quantize_per_tensor(inputs.rand(SLOTS).cpu(), 0.1, 0, torch.quint8)
        # Growing it exposes uninitialised memory unless deterministic mode fills it.
        return quantized.resize_(UPDATES // 16).int_repr()


# -- attention, sparse ------------------------------------------------------------------------


@contextlib.contextmanager
def _sdpa_backend(device: torch.device, backend: str) -> Iterator[None]:
    """Force the backend on CUDA; on other devices run whatever SDPA picks (the entry is
    CUDA-only, the CPU run only proves the probe is valid)."""
    if device.type != "cuda":
        yield
        return
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(getattr(SDPBackend, backend)):
        yield


def _sdpa(backend: str) -> Probe:
    def probe(device: torch.device) -> Outputs:
        inputs = _Inputs(device)
        dtype = torch.float16 if device.type == "cuda" else torch.float32
        q, k, v = (inputs.randn(4, 8, 256, 64, grad=True, dtype=dtype) for _ in range(3))
        with _sdpa_backend(device, backend):
            output = F.scaled_dot_product_attention(q, k, v)
            grads = _backward(inputs, output, (q, k, v))
        return (output.detach(), *grads)

    return probe


def _bmm_sparse(inputs: _Inputs) -> torch.Tensor:
    dense = inputs.randn(8, 256, 256)
    sparse = (dense * (inputs.rand(8, 256, 256) < 0.05)).to_sparse()
    return torch.bmm(sparse, inputs.randn(8, 256, 64))


# -- third-party packages (imported when probed; the runner skips an entry whose package is
# not installed) ----------------------------------------------------------------------------

# A graph of a few nodes and many duplicate edges: every node receives thousands of messages.
_NODES = SLOTS
_EDGES = 200_000
_FEATURES = 16


def _edges(inputs: _Inputs) -> torch.Tensor:
    return torch.stack((inputs.randint(0, _NODES, _EDGES), inputs.randint(0, _NODES, _EDGES)))


def _seeded_parameters(inputs: _Inputs, module: torch.nn.Module) -> torch.nn.Module:
    """A layer's parameters from the probe's seed, not from the global generator."""
    with torch.no_grad():
        for parameter in module.parameters():
            parameter.copy_(inputs.randn(*parameter.shape))
    return module.to(inputs.device)


def _pyg_message_passing(inputs: _Inputs) -> tuple[torch.Tensor, Sequence[torch.Tensor]]:
    layers = importlib.import_module("torch_geometric.nn")
    conv = _seeded_parameters(inputs, layers.GCNConv(_FEATURES, _FEATURES, add_self_loops=False))
    x = inputs.randn(_NODES, _FEATURES, grad=True)
    return conv(x, _edges(inputs)), (x,)


def _torch_scatter_sum(inputs: _Inputs) -> tuple[torch.Tensor, Sequence[torch.Tensor]]:
    torch_scatter = importlib.import_module("torch_scatter")
    src = inputs.randn(UPDATES, grad=True)
    return torch_scatter.scatter(src, inputs.duplicates(), dim=0, reduce="sum"), (src,)


def _dgl_message_passing(inputs: _Inputs) -> tuple[torch.Tensor, Sequence[torch.Tensor]]:
    dgl = importlib.import_module("dgl")
    fn = importlib.import_module("dgl.function")
    edges = _edges(inputs)
    graph = dgl.graph((edges[0], edges[1]), num_nodes=_NODES).to(inputs.device)
    x = inputs.randn(_NODES, _FEATURES, grad=True)
    graph.ndata["h"] = x
    graph.update_all(fn.copy_u("h", "m"), fn.sum("m", "out"))
    return graph.ndata["out"], (x,)


def _roi_boxes(inputs: _Inputs, count: int, size: int) -> torch.Tensor:
    """Many overlapping boxes on one image: their gradients land on the same pixels."""
    corners = inputs.rand(count, 2) * (size / 2)
    return torch.cat(
        (torch.zeros(count, 1, device=inputs.device), corners, corners + size / 2), dim=1
    )


def _roi(name: str) -> Probe:
    def op(inputs: _Inputs) -> tuple[torch.Tensor, Sequence[torch.Tensor]]:
        function = getattr(importlib.import_module("torchvision.ops"), name)
        x = inputs.randn(1, 8, 32, 32, grad=True)
        # 256 boxes: enough for the atomic adds to collide (4 of 4 repeats differed on an
        # H200), and few enough for deterministic mode's pure-Python roi_align, whose backward
        # took 5 s there (4,096 boxes took minutes per call).
        boxes = _roi_boxes(inputs, 256, 32)
        return function(x, boxes, (7, 7)), (x,)

    return _with_backward(op)


PROBES: Mapping[str, Probe] = MappingProxyType(
    {
        **{
            f"{'conv-transpose' if transposed else 'conv'}{dims}d-cuda": _conv(dims, transposed)
            for transposed in (False, True)
            for dims in (1, 2, 3)
        },
        "bmm-sparse-dense-cuda": _forward(_bmm_sparse),
        "getitem-backward-cpu": _with_backward(_getitem_backward),
        "setitem-duplicate-indices": _forward(_setitem),
        "sdpa-flash-backward-cuda": _sdpa("FLASH_ATTENTION"),
        "sdpa-efficient-backward-cuda": _sdpa("EFFICIENT_ATTENTION"),
        "sdpa-cudnn-backward-cuda": _sdpa("CUDNN_ATTENTION"),
        "topk-cutedsl-cuda": _forward(_topk),
        "index-put-accumulate-false": _index_put(accumulate=False),
        "index-put-accumulate-true-cpu": _index_put(accumulate=True),
        "put-accumulate-true-cpu": _put(accumulate=True),
        "put-accumulate-false": _put(accumulate=False),
        "put-accumulate-true-cuda": _put(accumulate=True),
        "scatter-add-cuda": _forward(_scatter_add),
        "gather-backward-cuda": _with_backward(_gather_backward),
        "index-add-cuda": _forward(_index_add),
        "index-select-backward-cuda": _with_backward(_index_select_backward),
        "repeat-interleave-backward-cuda": _with_backward(_repeat_interleave_backward),
        "index-copy": _forward(_index_copy),
        "scatter-src-cuda": _forward(_scatter_src),
        "scatter-reduce-sum-mean-cuda": _scatter_reduce("sum"),
        "scatter-reduce-prod-cuda": _scatter_reduce("prod"),
        "scatter-legacy-multiply-cuda": _forward(_scatter_multiply),
        "index-reduce-cuda": _forward(_index_reduce),
        **{f"replication-pad{d}d-backward-cuda": _pad("replicate", d) for d in (1, 2, 3)},
        **{f"reflection-pad{d}d-backward-cuda": _pad("reflect", d) for d in (1, 2, 3)},
        "max-pool3d-indices-backward-cuda": _max_pool3d_indices,
        "max-pool3d-backward-cuda": _pool3d(lambda x: F.max_pool3d(x, 3, stride=1)),
        "avg-pool3d-backward-cuda": _pool3d(lambda x: F.avg_pool3d(x, 3, stride=1)),
        "adaptive-avg-pool2d-backward-cuda": _adaptive(F.adaptive_avg_pool2d, 2, 7),
        "adaptive-avg-pool3d-backward-cuda": _adaptive(F.adaptive_avg_pool3d, 3, 4),
        "adaptive-max-pool2d-backward-cuda": _adaptive_max(2),
        "adaptive-max-pool3d-backward-cuda": _adaptive_max(3),
        "fractional-max-pool2d-backward-cuda": _fractional(2),
        "fractional-max-pool3d-backward-cuda": _fractional(3),
        **{f"max-unpool{d}d": _max_unpool(d) for d in (1, 2, 3)},
        "interpolate-linear-backward-cuda": _interpolate("linear"),
        "interpolate-bilinear-backward-cuda": _interpolate("bilinear"),
        "interpolate-bicubic-backward-cuda": _interpolate("bicubic"),
        "interpolate-trilinear-backward-cuda": _interpolate("trilinear"),
        "interpolate-bilinear-antialias-backward-cuda": _interpolate("bilinear", antialias=True),
        "interpolate-bicubic-antialias-backward-cuda": _interpolate("bicubic", antialias=True),
        "grid-sample-2d-backward-cuda": _grid_sample(2),
        "grid-sample-3d-backward-cuda": _grid_sample(3),
        "nll-loss2d-forward-cuda": _forward(_nll_loss2d),
        "ctc-loss-backward-cuda": _with_backward(_ctc_loss),
        "embedding-bag-max-backward-cuda": _with_backward(_embedding_bag_max),
        "histc-float-cuda": _forward(_histc),
        "histc-integer-cuda": _forward(_histc_integer),
        "bincount-weights-cuda": _forward(_bincount_weights),
        "median-dim-cuda": _median(torch.median, nan=False),
        "nanmedian-dim-cuda": _median(torch.nanmedian, nan=True),
        "cumsum-cuda": _forward(_cumsum),
        "cumsum-1d-cuda": _forward(_cumsum_1d),
        "kthvalue-cuda": _forward(_kthvalue),
        "mode-cuda": _forward(_mode),
        "resize-quantized": _forward(_resize_quantized),
        "pyg-message-passing-cuda": _with_backward(_pyg_message_passing),
        "torch-scatter-sum-mean-cuda": _with_backward(_torch_scatter_sum),
        "dgl-message-passing-cuda": _with_backward(_dgl_message_passing),
        "roi-align-backward-cuda": _roi("roi_align"),
        "roi-pool-backward-cuda": _roi("roi_pool"),
    }
)
