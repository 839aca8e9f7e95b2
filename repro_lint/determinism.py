"""Which calls run CUDA kernels that only a setting makes deterministic, and which settings
cover them: the evidence RPL202 weighs (cuDNN convolutions, attention), where a program
runs (CUDA or not, training or inference only), and the backend flags torch has.

Data as code, keyed by qualified names (as ``names.py`` resolves them); the module summaries
(``summary.py``) record what a file's calls say through these tables and the program model
(``program.py``) joins them per entry point. Nothing here sees a CST.

Which setting covers which kernel (reproducibility-facts.md):

- cuDNN convolutions: ``cudnn.deterministic = True``, or deterministic mode
  (``use_deterministic_algorithms(True)``, also with ``warn_only=True``: it only turns
  raises into warnings, the convolution still takes a deterministic algorithm).
- attention backward (SDPA's flash, memory-efficient and cuDNN backends): only deterministic
  mode without ``warn_only``, or a ``sdpa_kernel(SDPBackend.MATH)`` context; never
  ``cudnn.deterministic``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from repro_lint import randomness as rng

CONV = "conv"
ATTENTION = "attention"
# Appended to a kernel's description when the architecture is inferred from a factory.
INFERRED = "|inferred"

# -- setting kinds (the program model's ``Profile.settings`` keys) --------------------------
# "cudnn" and "algorithms" are the original kinds: cudnn.deterministic, and deterministic
# mode (warn-only included). The rest are added here.
STRICT = "strict"  # deterministic mode without warn_only: covers attention too
SDPA_MATH = "sdpa-math"  # an sdpa_kernel context restricted to the math backend
NO_FLASH, NO_EFFICIENT, NO_CUDNN_SDPA = "no-flash-sdp", "no-efficient-sdp", "no-cudnn-sdp"
BENCHMARK = "benchmark"  # cudnn.benchmark assigned (any value): a fix must not set it again
# cudnn.benchmark assigned a value that is not a literal (``cudnn_benchmark``, an option): it
# may turn the autotuner on after any fix, which RPL201 cannot judge.
BENCHMARK_VARIABLE = "benchmark-variable"
CUDNN_OFF = "cudnn-off"  # cudnn.deterministic = False
ALGORITHMS_OFF = "algorithms-off"  # use_deterministic_algorithms(False)
CUBLAS = "cublas"  # CUBLAS_WORKSPACE_CONFIG set in the program

# -- convolutions -------------------------------------------------------------------------------

# timm's model factory, in every spelling it is imported under.
TIMM_FACTORIES = frozenset(
    {
        "timm.create_model",
        "timm.models.create_model",
        "timm.models.factory.create_model",
        "timm.models._factory.create_model",
    }
)
# timm classes built from convolutions (a ViT's patch embedding is a Conv2d).
_TIMM_CONV_CLASS = re.compile(
    r"^(PatchEmbed\w*|VisionTransformer\w*|ResNet\w*|ConvNeXt\w*|EfficientNet\w*|RegNet\w*)$"
)
# Framework builders that return a convolutional network for a vision task; the
# architecture is read from a config, so it is inferred.
_VISION_FRAMEWORKS = (
    "mmdet", "mmseg", "mmpretrain", "mmcls", "mmyolo", "mmaction", "mmpose", "mmocr",
    "mmrotate", "mmdet3d", "mmtrack", "mmagic", "mmedit",
)  # fmt: skip
_FRAMEWORK_BUILDERS = frozenset(
    {
        "build_detector", "build_segmentor", "build_classifier", "build_backbone",
        "build_model", "build_posenet", "build_recognizer", "build_localizer",
    }
)  # fmt: skip
CONV_BUILDERS = frozenset(
    {
        "detectron2.modeling.build_model",
        "detectron2.modeling.meta_arch.build.build_model",
        "ultralytics.YOLO",
        "ultralytics.models.YOLO",
        "ultralytics.models.yolo.model.YOLO",
        "torchvision.models.get_model",
    }
)
# Libraries whose models or layers are convolutional whatever their configuration.
_CONV_LIBRARIES = ("segmentation_models_pytorch.", "asteroid_filterbanks.")
# Modules whose callables, looked up by name at run time, build convolutional networks.
CONV_MODULES = ("torchvision.models", "timm.models", "timm")

# -- attention ---------------------------------------------------------------------------------

SDPA = "torch.nn.functional.scaled_dot_product_attention"
MHA_FORWARD = "torch.nn.functional.multi_head_attention_forward"
MHA_LAYER = "MultiheadAttention"
# torch.nn layers that call MultiheadAttention with need_weights=False (the SDPA path).
TRANSFORMER_LAYERS = frozenset(
    {
        "Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
        "TransformerDecoderLayer",
    }
)  # fmt: skip
# Hugging Face model classes (``BertModel``, ``AutoModelForCausalLM``, ``GPT2LMHeadModel``),
# not the abstract base, not the TensorFlow or Flax ones, not outputs, configs or tokenizers.
_HF_MODEL = re.compile(r"Model$|For[A-Z]\w*$")
_HF_NOT_MODELS = re.compile(r"^(TF|Flax)|^PreTrainedModel$|Output")
HF_LOADERS = ("from_pretrained", "from_config", "_from_config")
SENTENCE_TRANSFORMERS = frozenset(
    {
        "sentence_transformers.SentenceTransformer",
        "sentence_transformers.SentenceTransformer.SentenceTransformer",
    }
)
# timm model names whose blocks are attention (timm >= 0.9 runs them through SDPA).
_TIMM_VIT_NAME = re.compile(
    r"^(vit|deit|beit|eva|swin|cait|xcit|convit|crossvit|twins|pit|volo|maxvit|flexivit|"
    r"davit|levit|samvit|vitamin|hiera)",
    re.IGNORECASE,
)
_TIMM_ATTENTION_CLASS = re.compile(r"^(VisionTransformer\w*|Block|Attention)$")
SDPA_CONTEXTS = frozenset({"torch.nn.attention.sdpa_kernel", "torch.backends.cuda.sdp_kernel"})
SDPA_MATH_BACKEND = "torch.nn.attention.SDPBackend.MATH"
SDPA_SWITCHES = {
    "torch.backends.cuda.enable_flash_sdp": NO_FLASH,
    "torch.backends.cuda.enable_mem_efficient_sdp": NO_EFFICIENT,
    "torch.backends.cuda.enable_cudnn_sdp": NO_CUDNN_SDPA,
}

# -- where the program runs ---------------------------------------------------------------------

CUDA_PREFIXES = ("torch.cuda.", "torch.accelerator.")
# Literal device and backend names that select a GPU.
# ``"cuda"``, ``"cuda:0"``, the templates ``"cuda:%d"``, ``"cuda:{}"``, ``"cuda:{rank}"``, and
# ``"cuda:"`` (``"cuda:" + str(rank)``).
_CUDA_STRING = re.compile(r"^(cuda(:(\d+|%d|\{\w*\})?)?|gpu|nccl)$")
# The text an f-string starts with that selects a GPU by index: ``f"cuda:{rank}"``.
CUDA_FSTRING_PREFIX = "cuda:"
# Framework objects that put the model on the GPU whenever one is there.
CUDA_FRAMEWORKS = frozenset(
    {
        *rng.LIGHTNING_TRAINERS,
        "lightning.Fabric",
        "lightning.fabric.Fabric",
        "lightning_fabric.Fabric",
        "transformers.Trainer",
        "transformers.trainer.Trainer",
        "transformers.Seq2SeqTrainer",
        "transformers.trainer_seq2seq.Seq2SeqTrainer",
        "accelerate.Accelerator",
        "accelerate.accelerator.Accelerator",
        "mmengine.runner.Runner",
        "mmengine.runner.Runner.from_cfg",
        "mmengine.Runner",
        "detectron2.engine.DefaultTrainer",
        "ultralytics.YOLO",
        "torch.nn.DataParallel",
        "torch.nn.parallel.DataParallel",
    }
)
# Training the model (a backward pass will run).
TRAINING_CALLS = frozenset(
    {
        "torch.autograd.backward",
        "torch.autograd.grad",
        "torch.cuda.amp.GradScaler",
        "torch.amp.GradScaler",
        "torch.GradScaler",
        "timm.utils.NativeScaler",
        "timm.utils.ApexScaler",
        "timm.utils.cuda.NativeScaler",
    }
)
# Gradient-free regions (context managers and decorators).
NO_GRAD = frozenset(
    {
        "torch.no_grad",
        "torch.inference_mode",
        "torch.autograd.no_grad",
        "torch.autograd.grad_mode.no_grad",
        "torch.autograd.grad_mode.inference_mode",
    }
)
SET_GRAD_ENABLED = "torch.set_grad_enabled"

# -- framework switches of deterministic mode ---------------------------------------------------

TRAINING_ARGUMENTS = frozenset(
    {
        "transformers.TrainingArguments",
        "transformers.training_args.TrainingArguments",
        "transformers.Seq2SeqTrainingArguments",
        "transformers.training_args_seq2seq.Seq2SeqTrainingArguments",
    }
)
# ``set_seed(seed, ..., deterministic=True)``: the position of ``deterministic``.
SEEDING_SWITCHES = {
    "accelerate.utils.set_seed": 2,
    "accelerate.utils.random.set_seed": 2,
    "transformers.set_seed": 1,
    "transformers.trainer_utils.set_seed": 1,
}
FULL_DETERMINISM = frozenset(
    {"transformers.enable_full_determinism", "transformers.trainer_utils.enable_full_determinism"}
)
RUNNERS = frozenset({"mmengine.runner.Runner", "mmengine.Runner"})

# -- backend flags (RPL206, RPL207) -------------------------------------------------------------

# What a program can name on each backend namespace, as torch 2.13 has it; a test compares
# these with the installed torch so the lists cannot drift. ``*_FLAGS`` are the settings
# (suggestions for a misspelled one come from them); ``*_NAMES`` everything else public there
# too (functions, submodules), which an assignment may shadow but never misspells.
CUDNN_FLAGS = frozenset(
    {
        "enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32",
        "fp32_precision", "depthwise_kernel",
    }
)  # fmt: skip
CUDNN_NAMES = CUDNN_FLAGS | frozenset(
    {
        "conv", "rnn", "flags", "set_flags", "is_available", "is_acceptable", "version",
        "CUDNN_TENSOR_DTYPES", "CudnnModule",
    }
)  # fmt: skip
# torch.backends.cudnn.conv / .rnn: (flags, names).
CUDNN_SUBMODULES: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "conv": (frozenset({"fp32_precision"}), frozenset({"fp32_precision"})),
    "rnn": (
        frozenset({"fp32_precision"}),
        frozenset({"fp32_precision", "get_cudnn_mode", "init_dropout_state", "Unserializable"})
        | frozenset({"CudnnRNNModule", "ContextProp"}),
    ),
}
MATMUL_FLAGS = frozenset(
    {
        "allow_tf32", "allow_fp16_reduced_precision_reduction",
        "allow_fp16_reduced_precision_reduction_split_k",
        "allow_bf16_reduced_precision_reduction",
        "allow_bf16_reduced_precision_reduction_split_k", "allow_fp16_accumulation",
        "fp32_precision",
    }
)  # fmt: skip
CUDA_NAMES = frozenset(
    {
        "matmul", "cufft_plan_cache", "preferred_blas_library", "preferred_linalg_library",
        "preferred_rocm_fa_library", "blas_workspace_size", "cublas_workspace_size",
        "cublaslt_workspace_size", "is_built", "sdp_kernel", "SDPAParams",
        "allow_fp16_bf16_reduction_math_sdp", "fp16_bf16_reduction_math_sdp_allowed",
        "can_use_cudnn_attention", "can_use_efficient_attention", "can_use_flash_attention",
        "cudnn_sdp_enabled", "enable_cudnn_sdp", "flash_sdp_enabled", "enable_flash_sdp",
        "math_sdp_enabled", "enable_math_sdp", "mem_efficient_sdp_enabled",
        "enable_mem_efficient_sdp", "is_ck_sdpa_available", "is_flash_attention_available",
        "cuBLASModule", "cuFFTPlanCache", "cuFFTPlanCacheAttrContextProp",
        "cuFFTPlanCacheManager",
    }
)  # fmt: skip
# Flags whose True switches fp32 work (or fp16/bf16 reductions) to reduced precision.
REDUCED_PRECISION_FLAGS = frozenset(
    {
        "allow_tf32", "allow_fp16_accumulation", "allow_fp16_reduced_precision_reduction",
        "allow_bf16_reduced_precision_reduction",
    }
)  # fmt: skip
# ``fp32_precision`` values that keep full precision ("none" defers to the parent setting).
FULL_PRECISION_MODES = frozenset({"ieee", "none"})


# Qualified names whose calls the tables above can say anything about (a fast filter).
KNOWN_PREFIXES = (
    "torch.", "torchvision.", "timm.", "transformers.", "sentence_transformers.",
    "accelerate.", "lightning", "pytorch_lightning.", "mm", "detectron2.", "ultralytics.",
    "segmentation_models_pytorch.", "asteroid_filterbanks.", "os.",
)  # fmt: skip


@dataclass(frozen=True)
class Kernel:
    """Evidence that a call builds or runs a kernel family: what to name in a message."""

    family: str  # CONV or ATTENTION
    what: str  # e.g. "nn.Conv2d", "timm.create_model|inferred"


def _short(qualified: str) -> str:
    """``torch.nn.functional.conv2d`` -> ``F.conv2d``; ``torch.nn.Conv2d`` -> ``nn.Conv2d``."""
    for prefix, short in (("torch.nn.functional.", "F."), ("torch.nn.", "nn.")):
        if qualified.startswith(prefix):
            return short + qualified.rsplit(".", 1)[-1]
    return qualified


def conv_kernel(qualified: str) -> Kernel | None:
    """The convolution a call to ``qualified`` builds or runs, if any."""
    parts = qualified.split(".")
    last = parts[-1]
    if qualified.startswith("torch.nn.") and "functional" not in parts:
        return Kernel(CONV, f"nn.{last}") if last in rng.CONV_LAYERS else None
    if qualified in rng.CONV_FUNCTIONS:
        return Kernel(CONV, _short(qualified))
    if qualified in TIMM_FACTORIES or qualified in CONV_BUILDERS:
        return Kernel(CONV, qualified + INFERRED)
    if rng.builds_conv_model(qualified):
        return Kernel(CONV, qualified + INFERRED)
    if qualified.startswith("timm.") and _TIMM_CONV_CLASS.match(last):
        return Kernel(CONV, qualified)
    if qualified.startswith(_CONV_LIBRARIES) and (last[:1].isupper() or last.startswith("make_")):
        return Kernel(CONV, qualified)
    top = parts[0]
    if top in _VISION_FRAMEWORKS and (
        last in _FRAMEWORK_BUILDERS or qualified.endswith((".MODELS.build", ".registry.build"))
    ):
        return Kernel(CONV, qualified + INFERRED)
    return None


def attention_kernel(qualified: str, model_name: str | None = None) -> Kernel | None:
    """The attention a call to ``qualified`` builds or runs, if any (calls whose arguments
    decide, ``need_weights`` and ``attn_implementation``, are judged by the summary).
    ``model_name`` is a literal model name passed to a factory."""
    parts = qualified.split(".")
    last = parts[-1]
    if qualified == SDPA:
        return Kernel(ATTENTION, "F.scaled_dot_product_attention")
    if qualified.startswith("torch.nn.") and "functional" not in parts:
        return Kernel(ATTENTION, f"nn.{last}") if last in TRANSFORMER_LAYERS else None
    if qualified.startswith("transformers.") and len(parts) >= 2:
        cls = parts[-2] if last in HF_LOADERS else last
        if last not in HF_LOADERS and not cls[:1].isupper():
            return None
        if _HF_MODEL.search(cls) and not _HF_NOT_MODELS.search(cls):
            return Kernel(ATTENTION, f"{cls}.{last}" if last in HF_LOADERS else cls)
        return None
    if qualified in SENTENCE_TRANSFORMERS:
        return Kernel(ATTENTION, "SentenceTransformer")
    if qualified in TIMM_FACTORIES:
        if model_name is not None and _TIMM_VIT_NAME.match(model_name):
            return Kernel(ATTENTION, f"{qualified}({model_name!r})")
        return None
    if qualified.startswith("timm.") and _TIMM_ATTENTION_CLASS.match(last):
        return Kernel(ATTENTION, qualified)
    if qualified.startswith("torchvision.models.") and (
        last.startswith("vit_") or last == "VisionTransformer"
    ):
        return Kernel(ATTENTION, qualified)
    return None


def base_kernels(qualified: str) -> list[Kernel]:
    """What a project class extending library class ``qualified`` builds."""
    found = [k for k in (conv_kernel(qualified), attention_kernel(qualified)) if k is not None]
    return [Kernel(k.family, k.what.replace(INFERRED, "") + " subclass") for k in found]


def describe(what: str) -> tuple[str, bool]:
    """A kernel description for a message, and whether the architecture was inferred."""
    if what.endswith(INFERRED):
        return what[: -len(INFERRED)], True
    return what, False


def cuda_string(value: str) -> bool:
    """A literal that selects a GPU: ``"cuda"``, ``"cuda:0"``, ``"gpu"``, ``"nccl"``."""
    return bool(_CUDA_STRING.match(value))


def attention_covered(settings: set[str] | frozenset[str]) -> bool:
    """Whether these settings make the attention backward deterministic."""
    return (
        STRICT in settings
        or SDPA_MATH in settings
        or {NO_FLASH, NO_EFFICIENT, NO_CUDNN_SDPA} <= set(settings)
    )


def conv_covered(settings: set[str] | frozenset[str]) -> bool:
    """Whether these settings make cuDNN convolutions deterministic."""
    return "cudnn" in settings or "algorithms" in settings


__all__ = [
    "ATTENTION",
    "CONV",
    "Kernel",
    "attention_covered",
    "attention_kernel",
    "base_kernels",
    "conv_covered",
    "conv_kernel",
    "cuda_string",
    "describe",
]
