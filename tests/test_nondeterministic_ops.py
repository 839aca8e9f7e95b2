"""RPL401/RPL402: which calls are reported, where, for which torch release; the RPL402 fix;
the catalog in ``explain``."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import libcst as cst
import pytest
from click.testing import CliRunner

from repro_lint.catalog import (
    BY_ID,
    HAS_NO_DETERMINISTIC_KERNEL,
    NEEDS_DETERMINISTIC_MODE,
    Entry,
    reported,
)
from repro_lint.cli import main
from repro_lint.config import Config, parse_table
from repro_lint.diagnostics import FixSafety
from repro_lint.engine import fix_source, lint_text
from repro_lint.names import Names
from repro_lint.rule import Invalid, Valid
from repro_lint.rules.nondeterministic_op import (
    PREAMBLE,
    CatalogCalls,
    CatalogTraversal,
    NondeterministicOp,
    classify,
    short_name,
)
from repro_lint.rules.nondeterministic_op_without_deterministic_mode import (
    NondeterministicOpWithoutDeterministicMode,
)
from repro_lint.settings import Settings
from repro_lint.tensors import Tensors
from repro_lint.torch_versions import TorchVersion, parse_version

CODES = ("RPL401", "RPL402")
Expected = tuple[str, int, str]


def _settings(target: str) -> Settings:
    values = parse_table({"target-torch": target}, None)
    values["select"] = CODES
    return Settings.from_config(Config(**values))


def _findings(source: str, target: str) -> set[tuple[str, int, int]]:
    result = lint_text(source, "example.py", _settings(target))
    return {(d.code, d.location.row, d.location.column) for d in result.diagnostics}


def _where(source: str, expected: list[Expected]) -> set[tuple[str, int, int]]:
    """(code, row, column) for each (code, row, text at which the call starts)."""
    lines = source.splitlines()
    found = set()
    for code, row, at in expected:
        column = lines[row - 1].find(at)
        assert column >= 0, (row, at)
        found.add((code, row, column + 1))
    return found


CASES: list[tuple[str, str, str, list[Expected]]] = [
    (
        "assigned from a torch call",
        """
        import torch
        t = torch.zeros(5, device="cuda")
        t.index_add_(0, i, v)
        """,
        "2.13",
        [("RPL402", 3, "t.index_add_(")],
    ),
    (
        "a numpy array, later replaced by a tensor",
        """
        import numpy as np
        import torch
        a = np.arange(4)
        a.put([0], [1])
        a = torch.from_numpy(a)
        a.put_(i, v)
        """,
        "2.13",
        [("RPL401", 6, "a.put_(")],
    ),
    (
        "annotated parameters",
        """
        from typing import Optional
        import torch
        from torch import Tensor
        def f(a: Optional[Tensor], b: "torch.Tensor", c: Tensor | None, d: int, e):
            a.median(0)
            b.median(0)
            c.median(0)
            d.median(0)
            e.median(0)
        """,
        "2.13",
        [("RPL401", 5, "a.median("), ("RPL401", 6, "b.median("), ("RPL401", 7, "c.median(")],
    ),
    (
        "nn.Module: forward parameters, attributes, submodule outputs, instances",
        """
        import numpy as np
        import torch
        from torch import nn
        class Net(nn.Module):
            def __init__(self, scale):
                super().__init__()
                self.table = np.zeros(3)
                self.proj = nn.Linear(3, 3)
                self.scale = scale
                self.names = ["a", "b"]
            def forward(self, x, lengths: list):
                x.median(1)
                lengths.median(1)
                self.table.put([0], [1])
                self.proj.weight.put_(i, v)
                self.buffer.put_(i, v)
                self.scale.put_(i, v)
                self.names.put_(i, v)
                return self.proj(x).median(1)
        model = Net()
        model.proj.weight.put_(i, v)
        """,
        "2.13",
        [
            ("RPL401", 12, "x.median("),
            ("RPL401", 15, "self.proj.weight.put_("),
            ("RPL401", 16, "self.buffer.put_("),
            ("RPL401", 17, "self.scale.put_("),
            ("RPL401", 19, "self.proj(x).median("),
            ("RPL401", 21, "model.proj.weight.put_("),
        ],
    ),
    (
        "a subclass of a local nn.Module subclass",
        """
        from torch import nn
        class Base(nn.Module):
            pass
        class Head(Base):
            def forward(self, scores):
                return scores.median(dim=1)
        """,
        "2.13",
        [("RPL401", 6, "scores.median(")],
    ),
    (
        "unpacking, loops, comprehensions, chains, leaving torch",
        """
        import torch
        values, order = torch.sort(torch.randn(5))
        values.median(0)
        for values in rows:
            values.median(0)
        s = [values.median(0) for values in torch.randn(3, 3)]
        torch.arange(10).float().cumsum(0).median(0)
        torch.arange(10).numpy().cumsum()
        n = torch.randn(3).tolist().median()
        """,
        "2.13",
        [
            ("RPL401", 3, "values.median("),
            ("RPL402", 7, "torch.arange"),
            ("RPL401", 7, "torch.arange"),
        ],
    ),
    (
        "lambda parameters shadow outer names",
        """
        import torch
        t = torch.zeros(3)
        f = lambda t: t.median(0)
        g = lambda: t.median(0)
        """,
        "2.13",
        [("RPL401", 4, "t.median(")],
    ),
    (
        "pandas look-alikes",
        """
        import pandas as pd
        import torch
        df = pd.DataFrame({"a": [1, 2]})
        df.median()
        df["a"].cumsum()
        s = df.a
        s.mode()
        df.median(axis=1)
        """,
        "2.0",
        [],
    ),
    (
        "bincount only with weights",
        """
        import torch
        torch.bincount(x)
        torch.bincount(x, w)
        torch.bincount(x, weights=None)
        torch.bincount(x, minlength=3)
        idx.bincount(w)
        torch.arange(3).bincount(weights=w)
        """,
        "2.13",
        [("RPL401", 3, "torch.bincount("), ("RPL401", 7, "torch.arange")],
    ),
    (
        "median only with dim; *args and **kwargs may pass it",
        """
        import torch
        torch.median(x)
        torch.median(x, 0)
        torch.nanmedian(x, dim=0)
        torch.median(x, **options)
        torch.median(*args)
        """,
        "2.13",
        [
            ("RPL401", 3, "torch.median("),
            ("RPL401", 4, "torch.nanmedian("),
            ("RPL401", 5, "torch.median("),
            ("RPL401", 6, "torch.median("),
        ],
    ),
    (
        "interpolation modes",
        """
        import torch.nn.functional as F
        from torch import nn
        F.interpolate(x, scale_factor=2)
        F.interpolate(x, None, 2, "bicubic")
        F.interpolate(x, scale_factor=2, mode="bilinear", antialias=True)
        F.interpolate(x, scale_factor=2, mode="bilinear")
        nn.Upsample(scale_factor=2, mode="linear")
        nn.Upsample(scale_factor=2, mode=mode)
        nn.UpsamplingBilinear2d(scale_factor=2)
        F.interpolate(x, scale_factor=2, mode="nearest-exact")
        """,
        "2.13",
        [
            ("RPL401", 4, "F.interpolate("),
            ("RPL401", 5, "F.interpolate("),
            ("RPL402", 6, "F.interpolate("),
            ("RPL401", 7, "nn.Upsample("),
            ("RPL401", 8, "nn.Upsample("),
            ("RPL402", 9, "nn.UpsamplingBilinear2d("),
        ],
    ),
    (
        "padding modes",
        """
        import torch.nn.functional as F
        from torch import nn
        F.pad(x, (1, 1))
        F.pad(x, (1, 1), "reflect")
        F.pad(x, (1, 1, 1, 1), mode="replicate")
        F.pad(x, pad, mode="reflect")
        F.pad(x, (1, 1), mode="circular")
        nn.ReflectionPad2d(1)
        nn.ReplicationPad3d(1)
        """,
        "2.13",
        [
            ("RPL401", 4, "F.pad("),
            ("RPL402", 5, "F.pad("),
            ("RPL401", 6, "F.pad("),
            # The 2-D reflection backward has a deterministic kernel by 2.11.
            ("RPL402", 8, "nn.ReflectionPad2d("),
            ("RPL402", 9, "nn.ReplicationPad3d("),
        ],
    ),
    (
        "2-D reflection padding raises before 2.11",
        """
        import torch.nn.functional as F
        from torch import nn
        nn.ReflectionPad2d(1)
        F.pad(x, (1, 1, 1, 1), mode="reflect")
        nn.ReflectionPad1d(1)
        """,
        "2.10",
        [
            ("RPL401", 3, "nn.ReflectionPad2d("),
            ("RPL401", 4, "F.pad("),
            ("RPL401", 5, "nn.ReflectionPad1d("),
        ],
    ),
    (
        "padding on torch 2.2: 3-D replication padding still raises",
        """
        import torch.nn.functional as F
        from torch import nn
        F.pad(x, (1, 1, 1, 1), mode="replicate")
        nn.ReplicationPad3d(1)
        """,
        "2.2",
        [("RPL402", 3, "F.pad("), ("RPL401", 4, "nn.ReplicationPad3d(")],
    ),
    (
        "EmbeddingBag only with mode='max'",
        """
        from torch import nn
        import torch.nn.functional as F
        nn.EmbeddingBag(10, 3)
        nn.EmbeddingBag(10, 3, None, 2.0, False, "max")
        nn.EmbeddingBag(10, 3, mode="max")
        nn.EmbeddingBag.from_pretrained(w, mode="max")
        F.embedding_bag(i, w, mode="sum")
        """,
        "2.13",
        [
            ("RPL401", 4, "nn.EmbeddingBag("),
            ("RPL401", 5, "nn.EmbeddingBag("),
            ("RPL401", 6, "nn.EmbeddingBag.from_pretrained("),
        ],
    ),
    (
        "nll_loss and cross entropy only for provably spatial input",
        """
        import torch
        import torch.nn.functional as F
        from torch import nn
        img = torch.randn(4, 3, 8, 8)
        flat = torch.randn(4, 10)
        F.cross_entropy(img, t)
        F.cross_entropy(flat, t)
        F.nll_loss(img, t, reduction="none")
        F.nll_loss(img.view(4, 3, 64), t)
        F.nll_loss(img.flatten(2), t)
        loss_fn = nn.CrossEntropyLoss()
        loss_fn(img, t)
        loss_fn(flat, t)
        none_fn = nn.NLLLoss(reduction="none")
        none_fn(img, t)
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.criterion = nn.CrossEntropyLoss()
            def forward(self, x):
                return self.criterion(torch.randn(2, 3, 4, 4), x)
        nn.NLLLoss2d()
        """,
        "2.13",
        [
            ("RPL401", 6, "F.cross_entropy("),
            ("RPL401", 9, "F.nll_loss("),
            ("RPL401", 12, "loss_fn("),
            ("RPL401", 21, "self.criterion("),
            ("RPL401", 22, "nn.NLLLoss2d("),
        ],
    ),
    (
        "an einops pattern, or a comparison, tells the dimensions of what torch is given",
        """
        import numpy as np
        import torch
        import torch.nn.functional as F
        from einops import rearrange, reduce
        def loss(model, x, t, other):
            logits = model(x)
            F.cross_entropy(rearrange(logits, "b n c -> b c n"), t)
            F.cross_entropy(rearrange(logits, "b n c -> (b n) c"), t)
            F.cross_entropy(rearrange(logits, "b ... c -> b c ..."), t)
            F.cross_entropy(reduce(logits, "b n c k -> b c n", "mean"), t, reduction="none")
            rearrange(np.zeros((2, 3)), "a b -> b a").cumsum(0)
            img = torch.randn(4, 3, 8, 8)
            F.nll_loss((img > 0).float(), t)
            F.nll_loss((img > other).float(), t)
            return F.nll_loss(rearrange(logits, "b h w c -> b c h w"), t)
        """,
        "2.13",
        [
            ("RPL401", 7, "F.cross_entropy("),
            ("RPL401", 13, "F.nll_loss("),
            ("RPL401", 15, "F.nll_loss("),
        ],
    ),
    (
        "scatter by src and reduce; index_put_ and put_ by accumulate",
        """
        import torch
        t = torch.zeros(3, device="cuda")
        t.scatter_(0, i, 1.0)
        t.scatter_(0, i, value=2)
        t.scatter_(0, i, src)
        t.scatter_(0, i, src, reduce="add")
        t.scatter_(0, i, src, reduce="multiply")
        t.scatter_reduce_(0, i, src, "amax")
        t.scatter_reduce_(0, i, src, reduce="mean")
        t.scatter_reduce_(0, i, src, "prod")
        t.index_put_((i,), v)
        t.index_put_((i,), v, True)
        t.put_(i, v)
        t.put_(i, v, accumulate=True)
        """,
        "2.13",
        [
            ("RPL402", 5, "t.scatter_("),
            ("RPL402", 6, "t.scatter_("),
            ("RPL401", 7, "t.scatter_("),
            ("RPL402", 9, "t.scatter_reduce_("),
            ("RPL401", 10, "t.scatter_reduce_("),
            ("RPL402", 11, "t.index_put_("),
            ("RPL402", 12, "t.index_put_("),
            ("RPL401", 13, "t.put_("),
            ("RPL401", 14, "t.put_("),
        ],
    ),
    (
        "adaptive pooling to size 1 is a mean",
        """
        import torch.nn.functional as F
        from torch import nn
        nn.AdaptiveAvgPool2d(1)
        nn.AdaptiveAvgPool2d((1, 1))
        nn.AdaptiveAvgPool2d(output_size=(7, 7))
        nn.AdaptiveAvgPool2d((1, None))
        F.adaptive_avg_pool2d(x, 1)
        F.adaptive_avg_pool2d(x, size)
        nn.AdaptiveAvgPool3d(1)
        nn.AdaptiveMaxPool2d(1)
        """,
        "2.13",
        [
            ("RPL401", 5, "nn.AdaptiveAvgPool2d("),
            ("RPL401", 6, "nn.AdaptiveAvgPool2d("),
            ("RPL401", 8, "F.adaptive_avg_pool2d("),
            ("RPL401", 10, "nn.AdaptiveMaxPool2d("),
        ],
    ),
    (
        "histc of floats (and, before 2.8, of integers)",
        """
        import torch
        torch.histc(torch.randn(10), bins=4)
        torch.histc(torch.tensor([1, 2, 3]), bins=4)
        torch.histc(torch.arange(10), bins=4)
        torch.histc(torch.arange(10.0), bins=4)
        torch.histc(data, bins=4)
        torch.randint(0, 5, (10,)).histc()
        """,
        "2.13",
        [
            ("RPL401", 2, "torch.histc("),
            ("RPL401", 5, "torch.histc("),
            ("RPL401", 6, "torch.histc("),
        ],
    ),
    (
        "histc on torch 2.7",
        """
        import torch
        torch.histc(torch.tensor([1, 2, 3]), bins=4)
        torch.randint(0, 5, (10,)).histc()
        """,
        "2.7",
        [("RPL401", 2, "torch.histc("), ("RPL401", 3, "torch.randint(")],
    ),
    (
        "cumsum of 1-D floats: fixed by deterministic mode since 2.6; wider is deterministic",
        """
        import torch
        torch.cumsum(torch.randn(5), 0)
        torch.cumsum(torch.arange(5), 0)
        torch.randn(5).cumsum(0, dtype=torch.int64)
        torch.arange(5).cumsum(0, dtype=torch.float32)
        torch.cumsum(torch.randn(4, 5), 1)
        def f(t: torch.Tensor):
            return t.cumsum(0)
        """,
        "2.13",
        # Line 5 scans integers in float32: whole numbers add up exactly in any order.
        [("RPL402", 2, "torch.cumsum("), ("RPL402", 8, "t.cumsum(")],
    ),
    (
        "cumsum of floats raises on torch 2.5",
        """
        import torch
        torch.cumsum(torch.randn(5), 0)
        torch.arange(5).cumsum(0, dtype=torch.float32)
        torch.cumsum(torch.randn(4, 5), 1)
        """,
        "2.5",
        [
            ("RPL401", 2, "torch.cumsum("),
            ("RPL401", 4, "torch.cumsum("),
        ],
    ),
    (
        "whole numbers held in float32/float64 add up exactly: scans and integer atomics",
        """
        import torch
        import torch.nn.functional as F
        out = torch.cat((torch.randint(0, 9, (2, 3)), torch.randint(0, 9, (2, 1))), dim=-1)
        is_eos = out == 2
        shifted = F.pad(is_eos, (1, -1))
        a = shifted.float().cumsum(dim=-1)
        b = shifted.half().cumsum(dim=-1)
        c = F.pad(is_eos, (1, -1), value=0.5).float().cumsum(-1)
        d = (out > 0).double().cumsum(-1)
        e = (out > 0).cumsum(-1, dtype=torch.float32)
        f = (out > 0).cumsum(-1, dtype=torch.bfloat16)
        g = out.float().cumsum(-1)
        h = out.float().sigmoid().cumsum(-1)
        i = is_eos.float().transpose(0, 1).cumsum(-1)
        counts = torch.zeros(4, dtype=torch.int32, device='cuda')
        counts.scatter_add_(0, out.flatten(), torch.ones_like(out.flatten(), dtype=torch.int32))
        counts.index_add_(0, out.flatten(), torch.ones_like(out.flatten(), dtype=torch.int32))
        sums = torch.zeros(4, device='cuda')
        sums.scatter_add_(0, out.flatten(), torch.ones_like(out.flatten(), dtype=torch.float))
        """,
        "2.5",
        [
            ("RPL401", 7, "shifted.half("),
            ("RPL401", 8, "F.pad("),
            ("RPL401", 11, "(out > 0).cumsum("),
            ("RPL401", 12, "out.float("),
            ("RPL401", 13, "out.float().sigmoid("),
            ("RPL402", 19, "sums.scatter_add_("),
        ],
    ),
    (
        "cumsum is not judged before the alert existed (1.13)",
        """
        import torch
        torch.cumsum(torch.randn(5), 0)
        """,
        "1.12",
        [],
    ),
    (
        "3-D max pooling: only with indices does deterministic mode help (2.13)",
        """
        import torch.nn.functional as F
        from torch import nn
        nn.MaxPool3d(2)
        nn.MaxPool3d(2, return_indices=True)
        F.max_pool3d(x, 2, return_indices=True)
        F.max_pool3d_with_indices(x, 2)
        nn.MaxPool2d(2)
        """,
        "2.13",
        [
            ("RPL401", 3, "nn.MaxPool3d("),
            ("RPL402", 4, "nn.MaxPool3d("),
            ("RPL402", 5, "F.max_pool3d("),
            ("RPL402", 6, "F.max_pool3d_with_indices("),
        ],
    ),
    (
        "import aliases and module paths",
        """
        import torch as T
        import torch.nn.functional as fn
        from torch.nn.functional import interpolate as resize
        from torch import nn as tnn
        import torch.nn.modules.upsampling as ups
        resize(x, scale_factor=2, mode="bicubic")
        fn.interpolate(x, scale_factor=2, mode="bicubic")
        tnn.Upsample(scale_factor=2, mode="bicubic")
        ups.Upsample(scale_factor=2, mode="bicubic")
        T.nn.Upsample(scale_factor=2, mode="bicubic")
        T.Tensor.median(T.zeros(3), 0)
        """,
        "2.13",
        [
            ("RPL401", 6, "resize("),
            ("RPL401", 7, "fn.interpolate("),
            ("RPL401", 8, "tnn.Upsample("),
            ("RPL401", 9, "ups.Upsample("),
            ("RPL401", 10, "T.nn.Upsample("),
            ("RPL401", 11, "T.Tensor.median("),
        ],
    ),
    (
        "same names in other libraries",
        """
        import numpy as np
        import scipy.ndimage as nd
        import tensorflow as tf
        import torch
        np.median(a, axis=0)
        tf.image.resize(x, (2, 2), method="bicubic")
        np.histogram(a)
        nd.median(a)
        np.cumsum(a)
        """,
        "2.0",
        [],
    ),
    (
        "ubiquitous ops are not reported per call",
        """
        import torch
        import torch.nn.functional as F
        from torch import nn
        x = torch.randn(2, 3, 8, 8)
        nn.Conv2d(3, 8, 3)(x)
        F.conv2d(x, w)
        torch.matmul(x, x)
        torch.bmm(x[0], x[0])
        F.scaled_dot_product_attention(x, x, x)
        nn.MultiheadAttention(8, 2)
        y = x[idx]
        x[idx] = 0.0
        torch.topk(x, 3)
        torch.mode(x, 1)
        """,
        "2.13",
        [],
    ),
    (
        "a file that turns deterministic mode on anywhere gets no RPL402",
        """
        import torch
        def setup():
            torch.use_deterministic_algorithms(True, warn_only=True)
        t = torch.zeros(3)
        t.index_add_(0, i, v)
        t.put_(i, v)
        """,
        "2.13",
        [("RPL401", 6, "t.put_(")],
    ),
    (
        "switching the mode off does not count; an alias turning it on does",
        """
        import torch
        torch.use_deterministic_algorithms(False)
        torch.zeros(3).index_add_(0, i, v)
        """,
        "2.13",
        [("RPL402", 3, "torch.zeros(")],
    ),
    (
        "deterministic mode through an alias",
        """
        import torch as T
        T.use_deterministic_algorithms(mode=True)
        T.zeros(3).index_add_(0, i, v)
        """,
        "2.13",
        [],
    ),
    (
        "indices distinct by construction write and add without collisions",
        """
        import torch
        def rank(x: torch.Tensor, src: torch.Tensor, flag):
            v, i = torch.topk(x, 3)
            a = torch.full_like(x, 0.0).scatter_(-1, i, v)
            b = torch.zeros_like(x).scatter_(0, x.sort(dim=1)[1], src)
            c = torch.zeros_like(x).scatter_add_(1, x.argsort(dim=1), src)
            d = torch.zeros(8, device="cuda").index_add_(0, torch.randperm(8, device="cuda"), src)
            e = torch.zeros(8, device="cuda").index_copy_(0, torch.unique(src.long()), src)
            g = torch.zeros(8).index_add_(0, torch.arange(0, 4, 0.5, dtype=torch.long), src)
            h = torch.zeros(8).index_add_(0, torch.randperm(8).repeat(2), src)
            k = torch.zeros(8).index_add_(0, torch.unique(src, return_inverse=flag), src)
            u, inv = torch.unique(src, return_inverse=True)
            m = torch.zeros(8).index_add_(0, inv, src)
            n = torch.zeros(8).index_add_(0, u.long(), src)
            o = torch.zeros_like(x).scatter_(1, x.topk(2, dim=1).indices.cuda(), src)
        """,
        "2.13",
        [
            ("RPL402", 5, "torch.zeros_like("),
            ("RPL402", 9, "torch.zeros("),
            ("RPL402", 10, "torch.zeros("),
            ("RPL402", 11, "torch.zeros("),
            ("RPL402", 13, "torch.zeros("),
            ("RPL402", 14, "torch.zeros("),
        ],
    ),
    (
        "a tensor known to be on the CPU has no CUDA-only hazard",
        """
        import numpy as np
        import torch
        def metrics(pred, label, n, ignore):
            pred = torch.from_numpy(pred)
            label = torch.from_numpy(np.load(label))
            mask = label != ignore
            pred = pred[mask]
            label = label[mask] - 1
            a = torch.histc(pred[pred == label].float(), bins=n, min=0, max=n - 1)
            b = torch.histc(label.float() * 2.0, bins=n)
            c = pred.float().cpu().cumsum(0)
            d = torch.histc(label.float().cuda(), bins=n)
            e = torch.histc(label.float() * ignore, bins=n)
            f = torch.zeros(3).index_add_(0, label, pred.float())
            g = torch.from_numpy(pred.numpy()).float().to(label.device).cumsum(0)
            h = pred.float().cpu().put_(label, pred.float())
        """,
        "2.13",
        [
            ("RPL401", 12, "torch.histc("),
            ("RPL401", 13, "torch.histc("),
            ("RPL402", 14, "torch.zeros("),
            ("RPL402", 15, "torch.from_numpy("),
            ("RPL401", 16, "pred.float()"),
        ],
    ),
    (
        "a dtype given as another tensor's is not the factory's default",
        """
        import torch
        def pack(ref: torch.Tensor, src):
            a = torch.randint(0, 5, (3,), dtype=ref.dtype, device="cuda").cumsum(0)
            b = torch.randint(0, 5, (3,), device="cuda").cumsum(0)
            idx = torch.arange(0, 4, 0.5, dtype=ref.dtype)
            c = torch.zeros(8, device="cuda").index_add_(0, idx, src)
            d = torch.zeros(8, device="cuda").index_add_(0, torch.arange(0, 4, 0.5), src)
        """,
        "2.13",
        [
            ("RPL402", 3, "torch.randint("),
            ("RPL402", 6, "torch.zeros("),
        ],
    ),
    (
        "a slice of an index distinct by construction is distinct",
        """
        import torch
        def subset(x: torch.Tensor, src: torch.Tensor, k, picks):
            keep = torch.randperm(x.shape[0], device=x.device)[:k]
            a = torch.index_add(x, 0, keep, src)
            b = torch.zeros_like(x).scatter_(1, x.argsort(dim=1)[:, :k], src)
            c = torch.zeros(8).index_add_(0, (torch.randperm(8))[2:k:2], src)
            d = torch.zeros(8).index_add_(0, torch.randperm(8)[picks], src)
            e = torch.zeros(8).index_add_(0, torch.randperm(8)[None], src)
            f = torch.zeros_like(x).scatter_(1, x.argsort(dim=1)[0], src)
            g = torch.zeros_like(x).scatter_(0, x.argsort(dim=1)[:, :k], src)
        """,
        "2.13",
        [
            ("RPL402", 7, "torch.zeros("),
            ("RPL402", 8, "torch.zeros("),
            ("RPL402", 9, "torch.zeros_like("),
            ("RPL402", 10, "torch.zeros_like("),
        ],
    ),
    (
        "a local name bound once to one of two ops may call either",
        """
        import torch
        import torch.nn.functional as F
        def loss(target, log_probs):
            loss_fn = F.cross_entropy if not log_probs else F.nll_loss
            return loss_fn(torch.randn(2, 3, 8, 8, device="cuda"), target)
        def other(target, log_probs, mod):
            loss_fn = F.cross_entropy if not log_probs else mod.loss
            return loss_fn(torch.randn(2, 3, 8, 8, device="cuda"), target)
        def rebound(target, flag):
            g = F.nll_loss if flag else F.cross_entropy
            g = F.mse_loss
            return g(torch.randn(2, 3, 8, 8, device="cuda"), target)
        def neither(target, flag):
            g = F.mse_loss if flag else F.l1_loss
            return g(torch.randn(2, 3, 8, 8, device="cuda"), target)
        """,
        "2.13",
        [("RPL401", 5, "loss_fn(")],
    ),
    (
        "a suppressed line",
        """
        import torch
        torch.zeros(3).index_add_(0, i, v)  # noqa: RPL402
        torch.zeros(3).put_(i, v)  # noqa: nondeterministic-op
        """,
        "2.13",
        [],
    ),
]


@pytest.mark.parametrize(
    ("source", "target", "expected"),
    [pytest.param(source, target, expected, id=name) for name, source, target, expected in CASES],
)
def test_findings_and_positions(source: str, target: str, expected: list[Expected]) -> None:
    source = textwrap.dedent(source).lstrip("\n")
    assert _findings(source, target) == _where(source, expected)


def test_version_changes_the_code() -> None:
    source = "from torch import nn\nup = nn.Upsample(scale_factor=2, mode='bilinear')\n"
    assert _findings(source, "2.0") == {("RPL401", 2, 6)}
    assert _findings(source, "2.1") == {("RPL402", 2, 6)}
    source = "import torch\nv = torch.kthvalue(torch.randn(5), 2)\n"
    assert _findings(source, "2.9") == {("RPL401", 2, 5)}
    assert _findings(source, "2.10") == set()


def test_odd_syntax_does_not_crash() -> None:
    source = textwrap.dedent(
        """
        import torch
        from torch import nn
        f = lambda t: t.median(0)
        class A:
            x: torch.Tensor
            class B(nn.Module):
                @staticmethod
                def g(t: torch.Tensor):
                    return t.median(0)
                async def forward(self, *args, **kwargs):
                    global G
                    async with ctx() as (a, b):
                        return [y async for y in a]
        def outer(t: torch.Tensor):
            def inner():
                nonlocal t
                return t.median(0)
            return inner
        (w := torch.zeros(3)).median(0)
        match v:
            case [a, *rest]:
                a.median(0)
        torch.zeros(3).scatter_(*args, reduce="multiply", **kw)
        """
    ).lstrip("\n")
    found = _findings(source, "2.13")
    assert {code for code, _, _ in found} <= set(CODES)
    rows = {row for _, row, _ in found}
    # Annotated parameters (also through a closure), the walrus target, and the star call;
    # not the lambda's or the match capture's unknown names.
    assert rows == {9, 17, 19, 23}


# -- the RPL402 fix ---------------------------------------------------------------------------


def _fixed(source: str, target: str = "2.13") -> str:
    return fix_source(source, _settings(target), frozenset({FixSafety.SAFE}), "example.py").text


def test_one_insertion_fixes_every_finding() -> None:
    source = (
        "import torch\n\n"
        "a = torch.zeros(3).index_add_(0, i, v)\n"
        "b = torch.zeros(3).scatter_add_(0, i, v)\n"
    )
    result = lint_text(source, "example.py", _settings("2.13"))
    fixes = {d.fix for d in result.diagnostics}
    assert len(result.diagnostics) == 2 and len(fixes) == 1
    (fix,) = fixes
    assert fix is not None and fix.applicability is FixSafety.SAFE
    fixed = _fixed(source)
    assert fixed.count("use_deterministic_algorithms(True, warn_only=True)") == 1
    assert _findings(fixed, "2.13") == set()


def test_fix_after_future_import_adds_torch() -> None:
    source = (
        '"""Doc."""\n'
        "from __future__ import annotations\n"
        "from torch.nn import functional as F\n"
        "y = F.pad(x, (1, 1, 1, 1), mode='replicate')\n"
    )
    assert _fixed(source) == (
        '"""Doc."""\n'
        "from __future__ import annotations\n"
        "import torch\n"
        "from torch.nn import functional as F\n"
        "\n"
        "torch.use_deterministic_algorithms(True, warn_only=True)\n"
        "y = F.pad(x, (1, 1, 1, 1), mode='replicate')\n"
    )


def test_fix_goes_to_the_top_of_the_main_block() -> None:
    source = (
        "import torch\n"
        "def main():\n"
        "    return torch.zeros(3).index_add_(0, i, v)\n"
        "if '__main__' == __name__:\n"
        "    # start\n"
        "    main()\n"
    )
    assert _fixed(source) == (
        "import torch\n"
        "def main():\n"
        "    return torch.zeros(3).index_add_(0, i, v)\n"
        "if '__main__' == __name__:\n"
        "    torch.use_deterministic_algorithms(True, warn_only=True)\n"
        "    # start\n"
        "    main()\n"
    )


def test_fix_is_not_applied_to_a_suppressed_finding_only() -> None:
    source = "import torch\ntorch.zeros(3).index_add_(0, i, v)  # noqa: RPL402\n"
    assert _fixed(source) == source


# -- entry-level classification ---------------------------------------------------------------


def _last_statement_calls(module: cst.Module) -> set[cst.Call]:
    calls: set[cst.Call] = set()

    class _Calls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            calls.add(node)

    module.body[-1].visit(_Calls())
    return calls


def _classified(entry: Entry, target: TorchVersion) -> set[str]:
    assert entry.example is not None
    module = cst.parse_module(PREAMBLE + entry.example + "\n")
    found = classify(module, Names(module, "__main__"), target)
    return {found[call].entry.id for call in _last_statement_calls(module) if call in found}


EXAMPLE_PERIODS = [
    pytest.param(entry, period.since, id=f"{entry.id}@{period.since}")
    for entry in reported()
    for period in entry.history
    if period.behaviour in HAS_NO_DETERMINISTIC_KERNEL | NEEDS_DETERMINISTIC_MODE
]


@pytest.mark.parametrize(("entry", "since"), EXAMPLE_PERIODS)
def test_each_catalog_example_is_classified_as_its_entry(entry: Entry, since: TorchVersion) -> None:
    expected = entry.shadowed_by or entry.id
    assert expected in _classified(entry, since)


# -- documentation ----------------------------------------------------------------------------


def _sections(page: str) -> dict[str, str]:
    parts = re.split(r"^## (.+)$", page, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def _explain(*args: str) -> dict[str, str]:
    result = CliRunner().invoke(main, ["explain", *args])
    assert result.exit_code == 0, result.output
    return _sections(result.output)


@pytest.mark.parametrize(
    ("code", "behaviours"),
    [("RPL401", HAS_NO_DETERMINISTIC_KERNEL), ("RPL402", NEEDS_DETERMINISTIC_MODE)],
)
@pytest.mark.parametrize("target", ["2.0", "2.5", "2.13"])
def test_explain_lists_the_catalog_for_the_target(
    code: str, behaviours: frozenset[object], target: str
) -> None:
    sections = _explain(code, "--target-torch", target)
    version = parse_version(target)
    assert version is not None
    for entry in reported():
        if entry.shadowed_by is not None:
            continue
        row = f"`{short_name(entry.main_api.name)}`"
        now = entry.behaviour(version) in behaviours
        ever = any(period.behaviour in behaviours for period in entry.history)
        assert (row in sections["Ops"]) == (now or _listed_elsewhere(entry, version, behaviours))
        if ever and not now:
            assert row in sections["Ops reported for other torch releases"]


def _listed_elsewhere(entry: Entry, version: TorchVersion, behaviours: frozenset[object]) -> bool:
    """Another entry listed for this release may name the same API (put_, nn.MaxPool3d)."""
    return any(
        entry.main_api.name in {api.name for api in other.apis}
        and other.behaviour(version) in behaviours
        for other in reported()
        if other.shadowed_by is None
    )


def test_explain_uses_the_projects_target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "p"\ndependencies = ["torch>=2.4"]\n', encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    assert "Status on torch 2.4" in _explain("RPL402")["Ops"]


def test_generated_pages_show_every_release() -> None:
    from repro_lint.explain import render_markdown
    from repro_lint.rules.nondeterministic_op import NondeterministicOp

    sections = _sections(render_markdown(NondeterministicOp))
    assert (
        "| Status |" in sections["Ops"] and "Ops reported for other torch releases" not in sections
    )
    assert BY_ID["kthvalue-cuda"].condition in sections["Ops"]


# -- RPL401 and RPL402 share one traversal of the catalog per file ------------------------------


def _code_and_target(example: Invalid | Valid | str) -> tuple[str, str]:
    if isinstance(example, str):
        return example, "2.13"
    return example.code, str(example.config.get("target-torch", "2.13"))


_SHARED_SOURCES = [
    pytest.param(textwrap.dedent(source), target, id=f"case-{name}")
    for name, source, target, _ in CASES
] + [
    pytest.param(*_code_and_target(example), id=f"{rule.CODE}-example-{i}")
    for rule in (NondeterministicOp, NondeterministicOpWithoutDeterministicMode)
    for i, example in enumerate((*rule.INVALID, *rule.VALID))
]


def _run(source: str, target: str, codes: tuple[str, ...]) -> tuple[list[str], object]:
    values = parse_table({"target-torch": target}, None)
    values["select"] = codes
    result = lint_text(source, "example.py", Settings.from_config(Config(**values)))
    return [repr(d.to_json()) for d in result.diagnostics], result.summary.get("notes")


@pytest.mark.parametrize(("source", "target"), _SHARED_SOURCES)
def test_rules_sharing_the_traversal_find_what_each_finds_alone(source: str, target: str) -> None:
    both, notes = _run(source, target, CODES)
    alone_401, notes_401 = _run(source, target, ("RPL401",))
    alone_402, notes_402 = _run(source, target, ("RPL402",))
    assert sorted(both) == sorted(alone_401 + alone_402)
    # The notes for the project phase (findings its callers settle) are each rule's, once.
    assert notes == notes_401 == notes_402


def test_rpl401_and_rpl402_run_one_traversal(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[object] = []
    original = CatalogCalls.__init__

    def counting(self: CatalogCalls, *args: object, **kwargs: object) -> None:
        made.append(self)
        original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(CatalogCalls, "__init__", counting)
    source = "import torch\nt = torch.zeros(5, device='cuda')\nt.index_add_(0, i, v)\n"
    found, _ = _run(source, "2.13", CODES)
    assert found
    assert len(made) == 1


def test_a_follower_of_the_shared_catalog_traversal_is_not_dispatched_its_idle_hooks() -> None:
    """RPL401 and RPL402 share one traversal: the second one made has the shared hooks idle,
    and the traversal does not call them; the hooks it adds itself are still called."""
    from repro_lint.rule import FileContext
    from repro_lint.settings import Settings
    from repro_lint.traversal import Dispatcher

    module = cst.parse_module("import torch\nx = torch.rand(3)\n")
    settings = Settings.from_config(Config(root=Path(".")))
    names = Names(module, "m", False)
    context = FileContext(module, names, settings.config, settings.target.version, None, "m")
    leader = NondeterministicOp(context)
    follower = NondeterministicOpWithoutDeterministicMode(context)
    assert leader.idle_hooks() == frozenset()
    idle = follower.idle_hooks()
    assert {"visit_Name", "leave_Assign", "visit_Module"} <= idle
    assert "visit_Call" not in idle  # its own, which adds to the shared one
    dispatcher = Dispatcher([leader, follower], context, None)
    visits = {
        name: [hook.__self__ for hook in hooks]  # type: ignore[attr-defined]
        for name, hooks in dispatcher._visit.items()
    }
    assert visits["Name"] == [leader]
    assert visits["Call"] == [leader, follower]
    # The leader's shared hooks are called as they are, without the leader test around them.
    (name_hook,) = dispatcher._visit["Name"]
    assert name_hook.__func__ is vars(CatalogTraversal)["visit_Name"]  # type: ignore[attr-defined]


DETACHED = """\
import torch
import torch.nn.functional as F


class Net(torch.nn.Module):
    def shortcut(self, x, planes):
        out = F.avg_pool3d(x, kernel_size=1, stride=2)
        pads = torch.zeros(out.size(0), planes - out.size(1), *out.shape[2:])
        if isinstance(out.data, torch.cuda.FloatTensor):
            pads = pads.cuda()
{after}
"""


@pytest.mark.parametrize(
    ("after", "reported"),
    [
        # Read only through .size(), .shape and .data until bound again: no backward.
        ("        out = torch.cat([out.data, pads], dim=1)\n        return out", False),
        ("        out = torch.cat([out.detach(), pads], dim=1)\n        return out", False),
        # The result itself reaches the graph.
        ("        out = torch.cat([out, pads], dim=1)\n        return out", True),
        ("        return torch.cat([out.data, pads], dim=1), out", True),
        # Bound again only in a branch: the old value may still be returned.
        ("        if planes:\n            out = out.data\n        return out", True),
    ],
    ids=["data", "detach", "differentiable", "returned", "rebound-in-a-branch"],
)
def test_a_result_read_only_detached_takes_no_backward(after: str, reported: bool) -> None:
    source = DETACHED.format(after=after)
    found = {code for code, _, _ in _findings(source, "2.0")}
    assert ("RPL401" in found) is reported


RESIZED = """\
import torch
import torch.nn.functional as F


class Model(torch.nn.Module):
    def get_input(self, batch, size):
        x = batch["image"].float()
{body}
"""


@pytest.mark.parametrize(
    ("body", "reported"),
    [
        # Resized in a branch, detached after it: no backward goes through the resize.
        (
            "        if size != x.shape[2]:\n"
            "            x = F.interpolate(x, size=size, mode='bicubic')\n"
            "        x = x.detach()\n        return x",
            False,
        ),
        (
            "        with torch.autocast('cuda'):\n"
            "            if size:\n"
            "                x = F.interpolate(x, size=size, mode='bicubic')\n"
            "        return x.detach()",
            False,
        ),
        # Read as it is after the branch.
        (
            "        if size != x.shape[2]:\n"
            "            x = F.interpolate(x, size=size, mode='bicubic')\n"
            "        return x",
            True,
        ),
        # A loop's next round reads it before anything after the loop does.
        (
            "        for _ in range(2):\n"
            "            x = self.net(x)\n"
            "            if size:\n"
            "                x = F.interpolate(x, size=size, mode='bicubic')\n"
            "        x = x.detach()\n        return x",
            True,
        ),
        # Only the ``if`` arm's value is followed past the statement, not an ``else``'s.
        (
            "        if size:\n            x = x * 2\n        else:\n"
            "            x = F.interpolate(x, size=4, mode='bicubic')\n"
            "        x = x.detach()\n        return x",
            True,
        ),
    ],
    ids=["after-an-if", "after-a-with-and-an-if", "read-after", "in-a-loop", "in-an-else"],
)
def test_a_result_detached_after_its_branch_takes_no_backward(body: str, reported: bool) -> None:
    found = {code for code, _, _ in _findings(RESIZED.format(body=body), "2.0")}
    assert ("RPL401" in found) is reported


@pytest.mark.parametrize(
    "expression",
    [
        " + ".join(f"x[..., {i}] * ct" for i in range(16)),
        "y" + ".abs()" * 16,
    ],
    ids=["a chain of operators", "a chain of method calls"],
)
def test_a_long_chain_is_judged_without_exponential_work(
    expression: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each part of a chain is judged once per question: a side asked for twice at every
    level made the work grow as 2**n (a 48-term mask in kornia ran for hours). The rules ask
    about every link, so the work grows as n**2 (about 700 calls here, 65,536 at 2**16)."""
    asked = 0
    kind = Tensors.kind

    def counting(self: Tensors, expr: cst.BaseExpression) -> object:
        nonlocal asked
        asked += 1
        return kind(self, expr)

    monkeypatch.setattr(Tensors, "kind", counting)
    source = (
        "import torch\nimport torch.nn.functional as F\n\n\n"
        "def f(x: torch.Tensor, ct: torch.Tensor, y):\n"
        f"    m = {expression}\n    return F.interpolate(m, scale_factor=2, mode='bilinear')\n"
    )
    found = _findings(source, "2.0")
    assert {code for code, _, _ in found} == {"RPL401"}
    assert 0 < asked < 5_000, asked
