"""RPL202: a seeded program runs, on CUDA, kernels that only a setting makes deterministic."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from repro_lint import determinism as det
from repro_lint.diagnostics import Edit, FixSafety
from repro_lint.program import (
    Chain,
    EntryPoint,
    Placement,
    Profile,
    Program,
    ProjectReport,
    ProjectRule,
    Site,
    Spawn,
)
from repro_lint.rule import Invalid, Valid
from repro_lint.torch_versions import TorchVersion

DETERMINISTIC = "torch.backends.cudnn.deterministic"
BENCHMARK = "torch.backends.cudnn.benchmark"
ALGORITHMS = "torch.use_deterministic_algorithms"
ENVIRON = "os.environ.setdefault"
# torch releases before this one raise at the first cuBLAS call in deterministic mode unless
# CUBLAS_WORKSPACE_CONFIG is set (pytorch/pytorch#161749 removed the check).
CUBLAS_CHECK_REMOVED_IN = TorchVersion(2, 10)
UNSAFE_TITLE = "Enable `torch.use_deterministic_algorithms(True)` next to the seeding"

_H = "import torch\nimport torch.nn.functional as F\n\n\n"
# A torchvision model trained after ``{freeze}``.
_PROBE = (
    "import torch\nimport torchvision\n\nif __name__ == '__main__':\n"
    "    torch.manual_seed(0)\n    model = torchvision.models.resnet50().cuda()\n"
    "{freeze}"
    "    loss = model(torch.randn(8, 3, 224, 224).cuda()).sum()\n    loss.backward()\n"
)
_ATTENTION_STEP = (
    "def step(q, k, v):\n    out = F.scaled_dot_product_attention(q, k, v)\n"
    "    out.sum().backward()\n\n\n"
)


@dataclass(frozen=True)
class _Process:
    """One process of a program: the entry's own, or a worker started in a fresh one."""

    profile: Profile
    spawn: Spawn | None


@dataclass(frozen=True)
class _Open:
    """What a process runs uncovered, and the settings it has."""

    process: _Process
    conv: Chain | None
    attention: Chain | None


class MissingDeterministicConfig(ProjectRule):
    """
    ## What it does
    Flags an entry point whose program seeds (so it wants repeatable results), runs on CUDA,
    trains, and reaches kernels that are nondeterministic by default and deterministic only
    under a setting the program never enables:

    - **cuDNN convolutions**: `nn.Conv1d/2d/3d`, transposed and lazy variants, `F.conv*`,
      and models that contain them: `torchvision.models.*`, `timm.create_model` (in any
      spelling), a ViT's convolutional patch embedding, detection and segmentation
      framework builders (`build_detector`, `MODELS.build`, `detectron2`'s `build_model`),
      `ultralytics.YOLO`, `models.__dict__[name]()` lookups. Where the architecture comes
      from a factory, the message says it was inferred.
    - **attention** that dispatches to scaled-dot-product attention (SDPA):
      `F.scaled_dot_product_attention`, `nn.MultiheadAttention` or
      `F.multi_head_attention_forward` called with `need_weights=False`, the
      `nn.Transformer*` layers (they pass it), Hugging Face models loaded with
      `from_pretrained` or built from a config (their default attention implementation is
      `sdpa`) unless `attn_implementation="eager"` (passed directly, in a keyword dict, or
      set on the config object the model is built from), timm and torchvision ViTs, and code
      run under `sdpa_kernel(...)` with a fast backend.

    Which setting covers which kernel:

    | setting | convolutions | attention |
    |---|---|---|
    | `torch.backends.cudnn.deterministic = True` | yes | **no** |
    | `torch.use_deterministic_algorithms(True)` | yes | yes |
    | `torch.use_deterministic_algorithms(True, warn_only=True)` | yes | **no** |
    | `with sdpa_kernel(SDPBackend.MATH):` around the training step | no | yes |
    | Lightning `Trainer(deterministic=True)` | yes | yes |
    | Lightning `Trainer(deterministic="warn")` | yes | **no** |
    | Hugging Face `TrainingArguments(full_determinism=True)`, `enable_full_determinism()` | yes | yes |
    | accelerate `set_seed(seed, deterministic=True)` | yes | yes |
    | mmengine `randomness=dict(deterministic=True)`, `set_random_seed(..., deterministic=True)` | yes | yes |
    | an ultralytics model's `train()` (its `deterministic=True` default) | yes | **no** |
    | `set_seed(seed)`, `seed_everything(seed)` alone | no | no |

    Framework switches are read through keyword dicts built in the same function
    (`Trainer(**kwargs)`, `randomness=cfg`). A value that is not a literal
    (`deterministic=args.deterministic`) counts as on.

    A kernel that a model builds or runs only behind an option defaulting to `False`
    (`nn.Conv2d(...) if talking_heads else None`, `if self.flash: F.scaled_dot_product_attention(...)`
    with `self.flash` set only in `__init__`, from such a parameter that the function does
    not bind again) counts only for a program
    that turns the option on: a file the program reaches gives its name a value other than
    `False`, `None` or `0` as a keyword, a dict or subscript key, or an attribute
    (`model.flash = True`), gives it behind a prefix string the program's code names
    (`attn_flash=True` where the library routes `"attn_"` keywords), or passes it on from
    another name the program turns on. An option set only in a config file read at run time,
    or passed positionally, is not seen.

    ## Why is this bad?
    On CUDA, cuDNN picks among several convolution algorithms, some of which accumulate in a
    nondeterministic order (atomics in the backward pass); a convolution takes a
    deterministic algorithm only when `cudnn.deterministic` or deterministic mode is on.
    SDPA dispatches to the flash, memory-efficient or cuDNN attention backends, whose
    backward passes are nondeterministic by default; only
    `torch.use_deterministic_algorithms(True)` without `warn_only` makes them deterministic
    (`cudnn.deterministic = True`, which most recipes set, does not affect them). The weights
    then drift apart between runs even with every seed fixed: seeding alone gives a false
    sense of reproducibility.

    The rule stays quiet for programs that never select a CUDA device (no `.cuda()`,
    `"cuda"`, `torch.cuda.*`, `torch.accelerator.*`, `device_map=`, cuDNN or CUDA backend
    settings, or a framework that uses the GPU by default: Lightning, Hugging Face's
    `Trainer`, accelerate's `Accelerator`, mmengine's `Runner`), for programs that only run
    inference (gradient-free regions and `.eval()`, and nothing that trains: no
    `backward()`, `zero_grad()`, optimizer step, trainer `fit()`/`train()`), for linear
    probing, where the process freezes its model but the head (every parameter but the
    `weight`/`bias` named in a list, `if name not in ["fc.weight", "fc.bias"]:`, or all of
    them and then those of its head again: `model.fc`, `model.head`, `model.classifier`),
    so the model's convolutions and attention
    run forward only, and for library modules without an entry point. A freeze that keeps
    anything else trainable (`if not name.startswith("layer4"):`), or that runs only on
    some paths (`if args.probe:`), does not count.

    ## Fix safety
    Convolution-only programs get a safe fix: `torch.backends.cudnn.deterministic = True`
    (and `torch.backends.cudnn.benchmark = False`, unless the program sets `benchmark`
    itself, which RPL201 judges) inserted just before the statement that seeds. It may slow
    convolutions down; it never changes what is computed beyond fixing the algorithm.

    Programs with attention get an unsafe fix: `torch.use_deterministic_algorithms(True)`,
    placed with the seeding, preceded by `os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG",
    ":4096:8")` where the target torch still needs it (before 2.10). It is unsafe because
    deterministic mode raises on ops that have no deterministic implementation (RPL401).

    The settings go above the comment lines right before the seeding statement (they
    describe it), in the entry point's own file; launchers that reach their seed through a
    function of another entry point's file (one `train()` that several scripts call) share
    the settings that entry point gets there. They go into the process that does the work:
    when the kernels run in a worker that `mp.spawn` or a spawn-context `Process` (or the
    spawn start method) starts, at the start of that worker, since flags set in the parent
    do not reach it; when the parent only builds the model and its workers train it, at the
    start of each training worker; when the main process runs a worker function directly
    (`train(0, ...)` with one GPU), only at that function's start, which covers both. No fix
    is offered when a later statement on the program's path switches the setting off again
    (`cudnn.deterministic = False`, `use_deterministic_algorithms(False)`), or when the
    program sets `cudnn.benchmark` from a value that may be True (an option): the message
    names that statement instead. Nor where warn-only deterministic mode is on already: the
    fix is to make that call strict (no `warn_only`; Lightning's `deterministic=True`). Nor
    in a model file's smoke test, a launcher that hands the work to a cluster job (a
    submitit executor: the job's own code gets the fix), or a program that measures speed
    (it runs a profiler or a benchmark timer: deterministic kernels change what it times).

    ## Options
    `target-torch` decides whether the unsafe fix also sets `CUBLAS_WORKSPACE_CONFIG`.

    ## Known limitations
    Attention inside third-party packages other than those named above (for example the
    `flash_attn` package, whose kernels need their own `deterministic=True`) is not seen.
    Whether a framework uses the GPU is judged by the framework, not by the machine.

    ## References
    - PyTorch notes on randomness: "CUDA convolution determinism" and
      "CUDA Scaled Dot Product Attention"
    - `torch.use_deterministic_algorithms`, `torch.nn.attention.sdpa_kernel`
    """

    CODE = "RPL202"
    MESSAGE = "A seeded program runs CUDA kernels that no deterministic setting covers"
    FIX_TITLE = "Set `torch.backends.cudnn.deterministic = True` next to the seeding"
    FIX_SAFETY = FixSafety.SAFE
    INVALID = (
        Invalid(
            "import torch\nfrom torch import nn\n\nif __name__ == '__main__':\n"
            "    torch.manual_seed(0)\n    model = nn.Conv2d(3, 8, 3).cuda()\n",
            fixed="import torch\nfrom torch import nn\n\nif __name__ == '__main__':\n"
            "    torch.backends.cudnn.deterministic = True\n"
            "    torch.backends.cudnn.benchmark = False\n"
            "    torch.manual_seed(0)\n    model = nn.Conv2d(3, 8, 3).cuda()\n",
        ),
        Invalid(
            "import lightning as L\nimport torchvision\nfrom torch.backends import cudnn\n\n\n"
            "def main():\n    L.seed_everything(0)\n    net = torchvision.models.resnet18()\n"
            "    L.Trainer(max_epochs=1).fit(net)\n\n\n"
            "if __name__ == '__main__':\n    main()\n",
            fixed="import lightning as L\nimport torchvision\nfrom torch.backends import cudnn\n\n\n"
            "def main():\n    cudnn.deterministic = True\n    cudnn.benchmark = False\n"
            "    L.seed_everything(0)\n    net = torchvision.models.resnet18()\n"
            "    L.Trainer(max_epochs=1).fit(net)\n\n\n"
            "if __name__ == '__main__':\n    main()\n",
            note="a torchvision factory (architecture inferred); Lightning uses the GPU when "
            "there is one; the existing `cudnn` import is reused",
        ),
        Invalid(
            "import random\nimport torch.nn.functional as F\n\n\ndef step(x, w):\n"
            "    return F.conv2d(x.cuda(), w.cuda())\n\n\nif __name__ == '__main__':\n"
            "    random.seed(0)\n    step(x, w)\n",
            fixed="import random\nimport torch\nimport torch.nn.functional as F\n\n\n"
            "def step(x, w):\n    return F.conv2d(x.cuda(), w.cuda())\n\n\n"
            "if __name__ == '__main__':\n"
            "    torch.backends.cudnn.deterministic = True\n"
            "    torch.backends.cudnn.benchmark = False\n    random.seed(0)\n    step(x, w)\n",
        ),
        Invalid(
            "import torch\nfrom timm.models import create_model\n\n\ndef main(args):\n"
            "    torch.manual_seed(args.seed)\n    device = torch.device(args.device)\n"
            "    model = create_model(args.model).to(device)\n\n\n"
            "if __name__ == '__main__':\n    main(parse('--device', default='cuda'))\n",
            note="timm's factory imported from `timm.models`: a convolutional architecture "
            "is inferred",
        ),
        Invalid(
            _PROBE.format(
                freeze="    for name, param in model.named_parameters():\n"
                "        if not name.startswith('layer4'):\n"
                "            param.requires_grad = False\n"
            ),
            note="fine-tuning the last stage: its convolutions run backward",
        ),
        Invalid(
            _PROBE.format(
                freeze="    model.requires_grad_(False)\n    model.layer4.requires_grad_(True)\n"
            ),
            note="the whole model frozen, then a stage that is not its head trained again",
        ),
        Invalid(
            _PROBE.format(
                freeze="    if args.probe:\n        model.requires_grad_(False)\n"
                "        model.fc.requires_grad_(True)\n"
            ),
            note="frozen on one path only: without `--probe` the whole model trains",
        ),
        Invalid(
            "import torch\nimport torchvision.models as models\n\n"
            "if __name__ == '__main__':\n    torch.manual_seed(0)\n"
            "    model = models.__dict__[args.arch]().cuda()\n",
            note="a model looked up by name in torchvision.models",
        ),
        Invalid(
            "import torch\nfrom mmdet.registry import MODELS\n\n"
            "if __name__ == '__main__':\n    torch.manual_seed(0)\n"
            "    detector = MODELS.build(cfg.model).cuda()\n",
            note="a detection framework's registry builds the model",
        ),
        Invalid(
            _H + _ATTENTION_STEP + "if __name__ == '__main__':\n    torch.manual_seed(1337)\n"
            "    step(*torch.randn(3, 2, 4, 8, 16, device='cuda'))\n",
            fixed=_H + _ATTENTION_STEP + "if __name__ == '__main__':\n"
            "    torch.use_deterministic_algorithms(True)\n    torch.manual_seed(1337)\n"
            "    step(*torch.randn(3, 2, 4, 8, 16, device='cuda'))\n",
            config={"target-torch": "2.10"},
            note="a GPT-style trainer calling SDPA: the unsafe fix enables deterministic mode",
        ),
        Invalid(
            _H + _ATTENTION_STEP + "if __name__ == '__main__':\n    torch.manual_seed(1337)\n"
            "    step(*torch.randn(3, 2, 4, 8, 16, device='cuda'))\n",
            fixed="import os\n\n" + _H + _ATTENTION_STEP + "if __name__ == '__main__':\n"
            '    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")\n'
            "    torch.use_deterministic_algorithms(True)\n    torch.manual_seed(1337)\n"
            "    step(*torch.randn(3, 2, 4, 8, 16, device='cuda'))\n",
            config={"target-torch": "2.4"},
            note="a torch before 2.10 also needs CUBLAS_WORKSPACE_CONFIG before the first "
            "cuBLAS call",
        ),
        Invalid(
            _H + _ATTENTION_STEP + "if __name__ == '__main__':\n    torch.manual_seed(0)\n"
            "    torch.backends.cudnn.deterministic = True\n"
            "    step(*torch.randn(3, 2, 4, 8, 16, device='cuda'))\n",
            note="`cudnn.deterministic` covers convolutions, not attention",
        ),
        Invalid(
            _H + _ATTENTION_STEP + "if __name__ == '__main__':\n    torch.manual_seed(0)\n"
            "    torch.use_deterministic_algorithms(True, warn_only=True)\n"
            "    step(*torch.randn(3, 2, 4, 8, 16, device='cuda'))\n",
            note="warn-only deterministic mode keeps the fast attention backward; no fix is "
            "inserted (a strict call before it would be switched back to warn-only)",
        ),
        Invalid(
            "import torch\nfrom torch import nn\n\n\nclass Block(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.attn = nn.MultiheadAttention(64, 4, batch_first=True)\n\n"
            "    def forward(self, x):\n"
            "        return self.attn(x, x, x, need_weights=False)[0]\n\n\n"
            "if __name__ == '__main__':\n    torch.manual_seed(0)\n"
            "    block = Block().to('cuda')\n    block(x).sum().backward()\n",
            note="MultiheadAttention called with need_weights=False takes the SDPA path",
        ),
        Invalid(
            "import torch\nfrom torch import nn\n\n\nclass Model(nn.Transformer):\n"
            "    pass\n\n\nif __name__ == '__main__':\n    torch.manual_seed(0)\n"
            "    model = Model().to(torch.device('cuda'))\n",
            note="a subclass of nn.Transformer",
        ),
        Invalid(
            "from accelerate import Accelerator\nfrom accelerate.utils import set_seed\n"
            "from transformers import AutoModelForSequenceClassification\n\n\n"
            "def training_function(config):\n    accelerator = Accelerator()\n"
            "    set_seed(config['seed'])\n"
            "    model = AutoModelForSequenceClassification.from_pretrained('bert-base-cased')\n"
            "    accelerator.backward(model(**batch).loss)\n\n\n"
            "if __name__ == '__main__':\n    training_function({'seed': 42})\n",
            note="a Hugging Face model (sdpa attention by default); `set_seed` alone enables "
            "nothing",
        ),
        Invalid(
            "import torch\nfrom transformers import AutoConfig, AutoModelForCausalLM\n\n\n"
            "def main(name):\n    torch.manual_seed(0)\n"
            "    config = AutoConfig.from_pretrained(name, attn_implementation='sdpa')\n"
            "    model = AutoModelForCausalLM.from_config(config).cuda()\n"
            "    model(**batch).loss.backward()\n\n\n"
            "if __name__ == '__main__':\n    main('gpt2')\n",
            note="a config that selects `sdpa` (or any implementation but eager) keeps the "
            "SDPA backward",
        ),
        Invalid(
            "import lightning as L\nimport torch\nfrom torch import nn\n\n"
            "if __name__ == '__main__':\n    L.seed_everything(0)\n"
            "    model = nn.TransformerEncoderLayer(64, 4)\n"
            "    L.Trainer(deterministic='warn').fit(model)\n",
            note="Lightning's deterministic='warn' is warn-only",
        ),
        Invalid(
            "import timm\nimport torch\n\nif __name__ == '__main__':\n"
            "    torch.manual_seed(0)\n    torch.backends.cudnn.deterministic = True\n"
            "    model = timm.create_model('vit_base_patch16_224').cuda()\n",
            note="a timm ViT: its patch embedding is covered, its attention is not",
        ),
        Invalid(
            "import torch\nimport torch.multiprocessing as mp\nfrom torch import nn\n\n\n"
            "def worker(rank):\n    torch.manual_seed(rank)\n"
            "    model = nn.Conv2d(3, 8, 3).cuda(rank)\n\n\n"
            "if __name__ == '__main__':\n    torch.backends.cudnn.deterministic = True\n"
            "    mp.spawn(worker, nprocs=2)\n",
            fixed="import torch\nimport torch.multiprocessing as mp\nfrom torch import nn\n\n\n"
            "def worker(rank):\n    torch.backends.cudnn.deterministic = True\n"
            "    torch.backends.cudnn.benchmark = False\n    torch.manual_seed(rank)\n"
            "    model = nn.Conv2d(3, 8, 3).cuda(rank)\n\n\n"
            "if __name__ == '__main__':\n    torch.backends.cudnn.deterministic = True\n"
            "    mp.spawn(worker, nprocs=2)\n",
            note="the flag set in the parent does not reach the spawned worker: the fix goes "
            "into the worker",
        ),
        Invalid(
            "import torch\nimport torch.multiprocessing as mp\nfrom torch import nn\n\n\n"
            "def worker(rank):\n    torch.manual_seed(rank)\n"
            "    nn.Conv2d(3, 8, 3).cuda(rank)(x).sum().backward()\n\n\n"
            "if __name__ == '__main__':\n    torch.backends.cudnn.deterministic = True\n"
            "    ctx = mp.get_context('spawn')\n"
            "    procs = [ctx.Process(target=worker, args=(r,)) for r in range(2)]\n",
            fixed="import torch\nimport torch.multiprocessing as mp\nfrom torch import nn\n\n\n"
            "def worker(rank):\n    torch.backends.cudnn.deterministic = True\n"
            "    torch.backends.cudnn.benchmark = False\n    torch.manual_seed(rank)\n"
            "    nn.Conv2d(3, 8, 3).cuda(rank)(x).sum().backward()\n\n\n"
            "if __name__ == '__main__':\n    torch.backends.cudnn.deterministic = True\n"
            "    ctx = mp.get_context('spawn')\n"
            "    procs = [ctx.Process(target=worker, args=(r,)) for r in range(2)]\n",
            note="a spawn-context `Process` target is a fresh interpreter too",
        ),
        Invalid(
            _H + "def worker(rank):\n    torch.manual_seed(rank)\n"
            "    q = torch.randn(2, 4, 8, 16, device=f'cuda:{rank}', requires_grad=True)\n"
            "    F.scaled_dot_product_attention(q, q, q).sum().backward()\n\n\n"
            "if __name__ == '__main__':\n    torch.use_deterministic_algorithms(True)\n"
            "    torch.multiprocessing.spawn(worker, nprocs=2)\n",
            fixed=_H + "def worker(rank):\n    torch.use_deterministic_algorithms(True)\n"
            "    torch.manual_seed(rank)\n"
            "    q = torch.randn(2, 4, 8, 16, device=f'cuda:{rank}', requires_grad=True)\n"
            "    F.scaled_dot_product_attention(q, q, q).sum().backward()\n\n\n"
            "if __name__ == '__main__':\n    torch.use_deterministic_algorithms(True)\n"
            "    torch.multiprocessing.spawn(worker, nprocs=2)\n",
            config={"target-torch": "2.10"},
            note="deterministic mode is per process: the spawned worker (on `f'cuda:{rank}'`) "
            "needs its own",
        ),
        Invalid(
            "import torch\nimport torch.multiprocessing as mp\nfrom torch import nn\n\n\n"
            "def train(rank, model):\n    torch.manual_seed(1 + rank)\n"
            "    opt = torch.optim.SGD(model.parameters(), lr=0.01)\n"
            "    model(torch.randn(8, 1, 28, 28, device='cuda')).sum().backward()\n"
            "    opt.step()\n\n\n"
            "if __name__ == '__main__':\n    torch.manual_seed(1)\n"
            "    mp.set_start_method('spawn', force=True)\n"
            "    model = nn.Conv2d(1, 10, kernel_size=5).to('cuda')\n    model.share_memory()\n"
            "    p = mp.Process(target=train, args=(0, model))\n    p.start()\n",
            fixed="import torch\nimport torch.multiprocessing as mp\nfrom torch import nn\n\n\n"
            "def train(rank, model):\n    torch.backends.cudnn.deterministic = True\n"
            "    torch.backends.cudnn.benchmark = False\n    torch.manual_seed(1 + rank)\n"
            "    opt = torch.optim.SGD(model.parameters(), lr=0.01)\n"
            "    model(torch.randn(8, 1, 28, 28, device='cuda')).sum().backward()\n"
            "    opt.step()\n\n\n"
            "if __name__ == '__main__':\n    torch.manual_seed(1)\n"
            "    mp.set_start_method('spawn', force=True)\n"
            "    model = nn.Conv2d(1, 10, kernel_size=5).to('cuda')\n    model.share_memory()\n"
            "    p = mp.Process(target=train, args=(0, model))\n    p.start()\n",
            note="the parent builds the model and the workers of the spawn start method train "
            "it: the settings go where it trains",
        ),
        Invalid(
            "import torch\nimport torch.multiprocessing as mp\nfrom torch import nn\n\n\n"
            "def train(rank, h):\n    model = nn.Conv1d(80, 512, 7).cuda(rank)\n"
            "    model(torch.randn(1, 80, 32, device='cuda')).sum().backward()\n\n\n"
            "def main(h):\n    torch.manual_seed(h.seed)\n    if h.num_gpus > 1:\n"
            "        mp.spawn(train, nprocs=h.num_gpus, args=(h,))\n    else:\n"
            "        train(0, h)\n\n\nif __name__ == '__main__':\n    main(h)\n",
            fixed="import torch\nimport torch.multiprocessing as mp\nfrom torch import nn\n\n\n"
            "def train(rank, h):\n    torch.backends.cudnn.deterministic = True\n"
            "    torch.backends.cudnn.benchmark = False\n"
            "    model = nn.Conv1d(80, 512, 7).cuda(rank)\n"
            "    model(torch.randn(1, 80, 32, device='cuda')).sum().backward()\n\n\n"
            "def main(h):\n    torch.manual_seed(h.seed)\n    if h.num_gpus > 1:\n"
            "        mp.spawn(train, nprocs=h.num_gpus, args=(h,))\n    else:\n"
            "        train(0, h)\n\n\nif __name__ == '__main__':\n    main(h)\n",
            note="the worker function also runs in the main process with one GPU: the "
            "settings at its start cover both, once",
        ),
        Invalid(
            "import argparse\nimport torch\nfrom torch import nn\n\n"
            "parser = argparse.ArgumentParser()\nparser.add_argument('--seed', type=int, default=1)\n"
            "args = parser.parse_args()\n\n# Set the random seed manually for reproducibility.\n"
            "torch.manual_seed(args.seed)\nmodel = nn.Conv1d(4, 8, 3).cuda()\n"
            "model(torch.randn(2, 4, 16, device='cuda')).sum().backward()\n",
            fixed="import argparse\nimport torch\nfrom torch import nn\n\n"
            "parser = argparse.ArgumentParser()\nparser.add_argument('--seed', type=int, default=1)\n"
            "args = parser.parse_args()\n\ntorch.backends.cudnn.deterministic = True\n"
            "torch.backends.cudnn.benchmark = False\n"
            "# Set the random seed manually for reproducibility.\n"
            "torch.manual_seed(args.seed)\nmodel = nn.Conv1d(4, 8, 3).cuda()\n"
            "model(torch.randn(2, 4, 16, device='cuda')).sum().backward()\n",
            note="the settings go above the comment that describes the seeding",
        ),
        Invalid(
            "from ultralytics import YOLO\n\nmodel = YOLO('yolov8s.yaml')\n"
            "model.train(data='data.yaml', epochs=150, deterministic=False)\n",
            note="the trainer is told not to set its deterministic flags",
        ),
        Invalid(
            "import torch\nfrom torch import nn\n\n\n"
            "def training_loop(random_seed=0, cudnn_benchmark=True):\n"
            "    torch.manual_seed(random_seed)\n"
            "    torch.backends.cudnn.benchmark = cudnn_benchmark\n"
            "    net = nn.Conv2d(3, 8, 3).cuda()\n    net(x).sum().backward()\n\n\n"
            "if __name__ == '__main__':\n    training_loop()\n",
            note="`benchmark` comes from an option that may turn the autotuner on: no fix "
            "(a setting inserted here would leave it on); the message names that line",
        ),
        Invalid(
            "import torch\nfrom torch import nn\n\nif __name__ == '__main__':\n"
            "    torch.manual_seed(0)\n    torch.backends.cudnn.benchmark = True\n"
            "    model = nn.Conv2d(3, 8, 3).cuda()\n",
            fixed="import torch\nfrom torch import nn\n\nif __name__ == '__main__':\n"
            "    torch.backends.cudnn.deterministic = True\n    torch.manual_seed(0)\n"
            "    torch.backends.cudnn.benchmark = True\n"
            "    model = nn.Conv2d(3, 8, 3).cuda()\n",
            note="`benchmark` is set by the program already: RPL201's fix turns it off, this "
            "fix does not set it a second time",
        ),
        Invalid(
            "import torch\nfrom torch import nn\n\n\ndef evaluate(model):\n"
            "    torch.backends.cudnn.deterministic = False\n\n\n"
            "if __name__ == '__main__':\n    torch.manual_seed(0)\n"
            "    model = nn.Conv2d(3, 8, 3).cuda()\n    evaluate(model)\n",
            note="a later statement switches the flag off: no fix, the message names it",
        ),
        Invalid(
            _H + "def evaluate(model):\n    torch.use_deterministic_algorithms(False)\n\n\n"
            "def main():\n    torch.manual_seed(0)\n"
            "    q = torch.randn(2, 4, 8, 16, device='cuda', requires_grad=True)\n"
            "    F.scaled_dot_product_attention(q, q, q).sum().backward()\n"
            "    evaluate(None)\n\n\n"
            "if __name__ == '__main__':\n    main()\n",
            note="deterministic mode switched off later on the path: no fix is inserted",
        ),
    )
    VALID = (
        Valid(
            "from ultralytics import YOLO\nimport torch\n"
            "torch.use_deterministic_algorithms(False)\n\n"
            "model = YOLO('yolov8s.yaml')\n"
            "model.train(data='data.yaml', epochs=150, device='0,1')\n",
            note="the trainer's init_seeds sets cudnn.deterministic and warn-only "
            "deterministic mode (deterministic=True by default), which covers convolutions",
        ),
        Valid(
            _PROBE.format(
                freeze="    for name, param in model.named_parameters():\n"
                "        if name not in ['fc.weight', 'fc.bias']:\n"
                "            param.requires_grad = False\n"
            ),
            note="linear probing: every parameter but the head's is frozen, so the "
            "convolutions run forward only",
        ),
        Valid(
            _PROBE.format(
                freeze="    for _, p in model.named_parameters():\n        p.requires_grad = False\n"
                "    for _, p in model.fc.named_parameters():\n        p.requires_grad = True\n"
            ),
            note="the whole model frozen, then its head trained again",
        ),
        Valid(
            _PROBE.format(
                freeze="    model.requires_grad_(False)\n    model.fc.requires_grad_()\n"
            ),
            note="the same with `requires_grad_`",
        ),
        Valid(
            "import torch\nfrom torch import nn\n\nif __name__ == '__main__':\n"
            "    torch.manual_seed(0)\n    torch.backends.cudnn.deterministic = True\n"
            "    model = nn.Conv2d(3, 8, 3).cuda()\n",
            note="`cudnn.deterministic` covers convolutions",
        ),
        Valid(
            "import torch\nfrom torch import nn\n\nif __name__ == '__main__':\n"
            "    torch.manual_seed(0)\n"
            "    torch.use_deterministic_algorithms(True, warn_only=True)\n"
            "    model = nn.Conv2d(3, 8, 3).cuda()\n",
            note="warn-only deterministic mode still makes convolutions deterministic",
        ),
        Valid(
            _H + _ATTENTION_STEP + "if __name__ == '__main__':\n    torch.manual_seed(0)\n"
            "    torch.use_deterministic_algorithms(True)\n"
            "    step(*torch.randn(3, 2, 4, 8, 16, device='cuda'))\n",
            note="deterministic mode without warn_only covers attention",
        ),
        Valid(
            "import torch\nimport torch.nn.functional as F\n"
            "from torch.nn.attention import SDPBackend, sdpa_kernel\n\n\n"
            "def step(q, k, v):\n    with sdpa_kernel(SDPBackend.MATH):\n"
            "        F.scaled_dot_product_attention(q, k, v).sum().backward()\n\n\n"
            "if __name__ == '__main__':\n    torch.manual_seed(0)\n"
            "    step(*torch.randn(3, 2, 4, 8, 16, device='cuda'))\n",
            note="the math backend around the training step is deterministic",
        ),
        Valid(
            "import lightning as L\nfrom torch import nn\n\nif __name__ == '__main__':\n"
            "    L.seed_everything(0)\n    model = nn.TransformerDecoderLayer(64, 4)\n"
            "    L.Trainer(deterministic=True).fit(model)\n",
            note="Lightning's deterministic=True is deterministic mode",
        ),
        Valid(
            "import lightning as L\nfrom torch import nn\n\nif __name__ == '__main__':\n"
            "    L.seed_everything(0)\n    model = nn.TransformerDecoderLayer(64, 4)\n"
            "    trainer_args = dict(max_epochs=3)\n"
            "    trainer_args['deterministic'] = True\n"
            "    L.Trainer(**trainer_args).fit(model)\n",
            note="the switch passed in a keyword dict",
        ),
        Valid(
            "import transformers\n\nif __name__ == '__main__':\n"
            "    model = transformers.AutoModelForCausalLM.from_pretrained('gpt2')\n"
            "    args = transformers.TrainingArguments('out', full_determinism=True)\n"
            "    transformers.Trainer(model=model, args=args).train()\n",
            note="the Trainer seeds; full_determinism enables deterministic mode",
        ),
        Valid(
            "from transformers import AutoModel, enable_full_determinism\n\n"
            "if __name__ == '__main__':\n    enable_full_determinism(0)\n"
            "    model = AutoModel.from_pretrained('bert-base-cased').cuda()\n",
        ),
        Valid(
            "from accelerate import Accelerator\nfrom accelerate.utils import set_seed\n"
            "from transformers import AutoModelForCausalLM\n\n"
            "if __name__ == '__main__':\n    accelerator = Accelerator()\n"
            "    set_seed(42, deterministic=True)\n"
            "    model = AutoModelForCausalLM.from_pretrained('gpt2')\n"
            "    accelerator.backward(model(**batch).loss)\n",
            note="accelerate's set_seed with deterministic=True",
        ),
        Valid(
            "import torch\nfrom mmengine.runner import Runner\nfrom mmdet.registry import MODELS\n\n"
            "if __name__ == '__main__':\n    torch.manual_seed(0)\n"
            "    model = MODELS.build(cfg.model)\n"
            "    Runner(model=model, randomness=dict(seed=0, deterministic=True)).train()\n",
            note="mmengine's randomness dict enables deterministic mode",
        ),
        Valid(
            "from transformers import AutoModelForCausalLM, set_seed\n\n"
            "if __name__ == '__main__':\n    set_seed(0)\n    model = AutoModelForCausalLM."
            "from_pretrained('gpt2', attn_implementation='eager').cuda()\n",
            note="the eager attention implementation is matmul and softmax",
        ),
        Valid(
            "import torch\nfrom transformers import AutoConfig, AutoModelForCausalLM\n\n\n"
            "def main(name):\n    torch.manual_seed(0)\n"
            "    config = AutoConfig.from_pretrained(name, attn_implementation='eager')\n"
            "    model = AutoModelForCausalLM.from_config(config).cuda()\n"
            "    model(**batch).loss.backward()\n\n\n"
            "if __name__ == '__main__':\n    main('gpt2')\n",
            note="eager attention selected by the config the model is built from",
        ),
        Valid(
            "import torch\nfrom transformers import AutoModelForSequenceClassification\n\n\n"
            "def main(name):\n    torch.manual_seed(0)\n"
            "    model_kwargs = dict(num_labels=2)\n"
            "    model_kwargs['attn_implementation'] = 'eager'\n"
            "    model = AutoModelForSequenceClassification.from_pretrained(name, **model_kwargs)\n"
            "    model.cuda()(**batch).loss.backward()\n\n\n"
            "if __name__ == '__main__':\n    main('bert-base-cased')\n",
            note="eager attention passed in a keyword dict",
        ),
        Valid(
            "import torch\nfrom torch import nn\n\n\nclass Block(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.attn = nn.MultiheadAttention(64, 4)\n\n"
            "    def forward(self, x):\n        return self.attn(x, x, x)[0]\n\n\n"
            "if __name__ == '__main__':\n    torch.manual_seed(0)\n"
            "    Block().cuda()(x).sum().backward()\n",
            note="need_weights defaults to True: the attention weights are computed with "
            "matmul and softmax, not SDPA",
        ),
        Valid(
            "import torch\n\nif __name__ == '__main__':\n    torch.manual_seed(0)\n"
            "    model = torch.nn.Transformer(batch_first=True)\n"
            "    model(src, tgt).sum().backward()\n",
            note="never selects a CUDA device: the program runs on the CPU",
        ),
        Valid(
            "import torch\nfrom model import GPT\n\nif __name__ == '__main__':\n"
            "    torch.manual_seed(0)\n    model = GPT(conf).to('cuda')\n    model.eval()\n"
            "    with torch.no_grad():\n"
            "        y = torch.nn.functional.scaled_dot_product_attention(q, k, v)\n",
            note="inference only: the attention backward never runs",
        ),
        Valid(
            "import torch\nfrom torch import nn\n\nif __name__ == '__main__':\n"
            "    model = nn.Conv2d(3, 8, 3).cuda()\n",
            note="not seeded: the program does not ask for repeatable results (see RPL101)",
        ),
        Valid(
            "import torch\n\nif __name__ == '__main__':\n    torch.manual_seed(0)\n"
            "    model = torch.nn.Linear(3, 8).cuda()\n",
            note="no convolution and no attention",
        ),
        Valid(
            "import lightning as L\nimport torchvision\n\nif __name__ == '__main__':\n"
            "    L.seed_everything(0)\n    trainer = L.Trainer(deterministic=True)\n"
            "    net = torchvision.models.resnet18()\n",
        ),
        Valid(
            "import torch\nfrom torch import nn\n\n\ndef setup(args):\n"
            "    torch.manual_seed(args.seed)\n    torch.backends.cudnn.deterministic = args.det\n\n\n"
            "if __name__ == '__main__':\n    setup(parse())\n    nn.Conv1d(1, 1, 3).cuda()\n",
            note="set in a helper, with a value decided at run time",
        ),
        Valid(
            "import torch\nfrom mylib import Conv2d\n\nif __name__ == '__main__':\n"
            "    torch.manual_seed(0)\n    layer = Conv2d(3, 8, 3).cuda()\n",
            note="a look-alike convolution from another library",
        ),
        Valid(
            "import torch\nimport torch.nn.functional as F\n\nif __name__ == '__main__':\n"
            "    if args.seed is not None:\n        torch.manual_seed(args.seed)\n"
            "        torch.backends.cudnn.deterministic = True\n"
            "    F.conv2d(x.cuda(), w.cuda())\n",
            note="opt-in seeding and determinism together",
        ),
        Valid(
            "import torch\nfrom torch import nn\n\n\ndef build():\n    torch.manual_seed(0)\n"
            "    return nn.Conv2d(3, 8, 3).cuda()\n",
            note="a library module",
        ),
    )

    @classmethod
    def check(cls, program: Program) -> Iterator[ProjectReport]:
        opened: list[tuple[EntryPoint, _Open, list[_Process]]] = []
        for entry in program.entries:
            processes = [
                _Process(entry.profile, None),
                *(_Process(worker, spawn) for spawn, worker in entry.workers),
            ]
            profiles = [p.profile for p in processes]
            if not any(p.seeded for p in profiles):
                continue
            if not any(p.cuda is not None for p in profiles):
                # Never selects a CUDA device: the kernels in question are CPU ones.
                continue
            trains = any(p.trains is not None for p in profiles)
            if not trains and any(p.inference is not None for p in profiles):
                # Inference only: no backward pass, where these kernels are nondeterministic.
                continue
            on = program.options_on(entry)
            found = next((o for o in _candidates(processes, on) if o is not None), None)
            if found is not None:
                opened.append((entry, found, processes))
        places = [_places(program, entry, found, processes) for entry, found, processes in opened]
        _join(program, opened, places)
        for (entry, found, processes), place in zip(opened, places, strict=True):
            yield cls._report(program, entry, found, processes, place)

    @classmethod
    def _report(
        cls,
        program: Program,
        entry: EntryPoint,
        found: _Open,
        processes: list[_Process],
        places: _Places | None,
    ) -> ProjectReport:
        kernels: list[str] = []
        if found.attention is not None:
            what, _ = det.describe(found.attention[-1][3])
            kernels.append(f"attention backward ({program.where(found.attention[-1])}, `{what}`)")
        if found.conv is not None:
            what, inferred = det.describe(found.conv[-1][3])
            note = "; architecture inferred" if inferred else ""
            kernels.append(f"cuDNN convolutions ({program.where(found.conv[-1])}, `{what}`{note})")
        verb = "are" if found.conv is not None else "is"
        message = f"Seeded, but {' and '.join(kernels)} {verb} "
        message += "nondeterministic on CUDA" + _why(program, found, processes)
        off = _override(found)
        if off is not None:
            message += f"; it is switched off at {program.where(off[-1])}"
            return ProjectReport(entry.unit, entry.statement, message)
        variable = found.process.profile.settings.get(det.BENCHMARK_VARIABLE)
        if variable is not None:
            # A deterministic setting inserted here would leave the autotuner to that
            # statement: cuDNN may still pick a different (deterministic) algorithm per run.
            message += (
                f"; `cudnn.benchmark` is set at {program.where(variable[-1])} from a value "
                "that may be True (make it False there)"
            )
            return ProjectReport(entry.unit, entry.statement, message)
        edits = cls._fix(program, entry, places) if places is not None else ()
        attention = found.attention is not None
        return ProjectReport(
            entry.unit,
            entry.statement,
            message,
            edits=edits,
            fix_title=UNSAFE_TITLE if attention else None,
            fix_safety=(FixSafety.UNSAFE if attention else FixSafety.SAFE) if edits else None,
        )

    @staticmethod
    def _fix(program: Program, entry: EntryPoint, places: _Places) -> tuple[Edit, ...]:
        edits: list[Edit] = []
        for place in places.at:
            lines: list[str] = []
            imports: list[str] = []
            for name, rest in places.wanted:
                spelled = program.spell(place.unit, name, place.at.row)
                if spelled is None:
                    return ()
                text, module = spelled
                lines.append(text + rest)
                if module is not None and module not in imports:
                    imports.append(module)
            made = program.insert(place, lines, imports, finding=entry.unit)
            if made is None:
                return ()
            edits.extend(made)
        return tuple(edits)


@dataclass
class _Places:
    """Where an entry point's fix writes which settings."""

    at: list[Placement]
    wanted: list[tuple[str, str]]


def _places(
    program: Program, entry: EntryPoint, found: _Open, processes: list[_Process]
) -> _Places | None:
    """Where the fix goes and what it sets; None where the message says what to change
    instead (a setting switched off later, `benchmark` from an option, warn-only mode)."""
    if _override(found) is not None:
        return None
    if found.process.profile.settings.get(det.BENCHMARK_VARIABLE) is not None:
        return None
    if found.attention is not None and "algorithms" in found.process.profile.settings:
        # Warn-only deterministic mode is enabled already: a strict call inserted before
        # it would be switched back to warn-only by it. The fix is to drop `warn_only`
        # there (the message says where); RPL204 already sees to CUBLAS_WORKSPACE_CONFIG.
        return None
    chains = [chain for chain in (found.conv, found.attention) if chain is not None]
    at = program.settings_placements(entry, found.process.spawn, chains)
    if not at:
        return None
    everywhere = {kind for p in processes for kind in p.profile.settings}
    wanted: list[tuple[str, str]] = []
    if found.attention is not None:
        target = program.options.target_torch
        if det.CUBLAS not in everywhere and (target is None or target < CUBLAS_CHECK_REMOVED_IN):
            wanted.append((ENVIRON, '("CUBLAS_WORKSPACE_CONFIG", ":4096:8")'))
        wanted.append((ALGORITHMS, "(True)"))
    else:
        wanted.append((DETERMINISTIC, " = True"))
        if det.BENCHMARK not in everywhere:
            wanted.append((BENCHMARK, " = False"))
    return _Places(at, wanted)


def _join(
    program: Program,
    opened: list[tuple[EntryPoint, _Open, list[_Process]]],
    places: list[_Places | None],
) -> None:
    """Entry points that reach their first seed through a function of another entry
    point's file, before whose seeding statement that entry point's own settings go (one
    ``train()`` that several launchers call), take that place: one insertion serves them
    all, where each launcher's own would run the same settings twice."""
    # The entry points whose settings go just before their own first seed: that statement
    # and that place.
    seated: dict[int, tuple[Site, Placement]] = {}
    for index, ((entry, found, _), own) in enumerate(zip(opened, places, strict=True)):
        site = program.seed_site(entry)
        if own is None or found.process.spawn is not None or site is None:
            continue
        if own.at == [program.seed_placement(entry)]:
            seated[index] = (site, own.at[0])
    for index, (entry, _, _) in enumerate(opened):
        own = places[index]
        chain = program.seed_chain(entry)
        if index not in seated or own is None or chain is None:
            continue
        steps = {(step[0], step[1]) for step in chain}
        for other, (site, place) in seated.items():
            theirs = places[other]
            if (
                opened[other][0].unit is not entry.unit
                and theirs is not None
                and (site[0], site[1]) in steps
                and theirs.wanted == own.wanted
            ):
                places[index] = _Places([place], own.wanted)
                break


def _candidates(processes: list[_Process], on: Callable[[str], bool]) -> Iterator[_Open | None]:
    """Each process's kernels that no setting of its own covers, in order (a kernel behind
    options defaulting off counts when the program turns them ``on``). A main process that
    trains nowhere while spawned workers train hands its model over: its kernels run in those
    workers (whose own code may not show them), so they are judged there."""
    main, workers = processes[0], processes[1:]
    training = [w for w in workers if w.profile.trains is not None]
    if main.profile.trains is None and training:
        for worker in training:
            yield _uncovered(
                worker,
                worker.profile.kernel("conv", on) or main.profile.kernel("conv", on),
                worker.profile.kernel("attention", on) or main.profile.kernel("attention", on),
            )
        return
    for process in processes:
        yield _uncovered(
            process, process.profile.kernel("conv", on), process.profile.kernel("attention", on)
        )


def _uncovered(process: _Process, conv: Chain | None, attention: Chain | None) -> _Open | None:
    if process.profile.frozen is not None:
        # Linear probing: the model is frozen but its head, so its convolutions and
        # attention run forward only (no backward pass through them).
        return None
    settings = set(process.profile.settings)
    conv = conv if not det.conv_covered(settings) else None
    attention = attention if not det.attention_covered(settings) else None
    if conv is None and attention is None:
        return None
    return _Open(process, conv, attention)


def _why(program: Program, found: _Open, processes: list[_Process]) -> str:
    """What the program already set, and why it does not cover the kernels."""
    settings = found.process.profile.settings
    spawn = found.process.spawn
    if spawn is not None:
        parent = processes[0].profile.settings
        covering = next(
            (parent[k] for k in ("algorithms", "cudnn", det.STRICT) if k in parent), None
        )
        worker = program.units[spawn.unit]
        started = program.where(spawn.chain[-1])
        if covering is not None:
            return (
                f"; the setting at {program.where(covering[-1])} stays in the parent process, "
                f"and `{spawn.key}` runs in a fresh one (started at {started})"
            )
        where = f"in `{spawn.key}` ({worker.filename}), started in a fresh process at {started}"
    else:
        where = ""
    if found.attention is not None:
        if "algorithms" in settings:
            warn = settings["algorithms"]
            return (
                f"{'; ' + where if where else ''}; deterministic mode at "
                f"{program.where(warn[-1])} is warn-only, which keeps the fast attention backward"
                " (make it strict there)"
            )
        if "cudnn" in settings:
            return (
                f"{'; ' + where if where else ''}; `cudnn.deterministic` "
                f"({program.where(settings['cudnn'][-1])}) does not cover attention"
            )
        return f"{'; ' + where if where else ''}; nothing enables deterministic mode"
    return (
        f"{'; ' + where if where else ''}; neither `cudnn.deterministic` nor deterministic "
        "mode is on"
    )


def _override(found: _Open) -> Chain | None:
    """A statement on the path that switches off the setting the fix would insert."""
    settings = found.process.profile.settings
    kind = det.ALGORITHMS_OFF if found.attention is not None else det.CUDNN_OFF
    return settings.get(kind)
