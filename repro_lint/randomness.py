"""Which library calls seed, draw from, create or configure random number generators.

Data as code, keyed by qualified names (as ``names.py`` resolves them). The module summaries
(``summary.py``) and the per-file seeding rules read these tables; nothing here sees a CST.
"""

from __future__ import annotations

import re
import sys

# The global generators a program seeds. Order is the order of inserted seed calls.
FAMILIES = ("torch", "numpy", "random")

# Seeding the global generator of one family. ``torch.cuda.manual_seed(_all)`` is absent on
# purpose: it leaves the CPU generator (weight init, shuffling, CPU dropout) unseeded.
SEEDS: dict[str, str] = {
    "torch.manual_seed": "torch",
    "torch.random.manual_seed": "torch",
    "torch.seed": "torch",
    "torch.random.seed": "torch",
    "numpy.random.seed": "numpy",
    "random.seed": "random",
}

# Third-party helpers that seed torch, numpy and random together. The value lists the
# deterministic settings the helper also makes ("algorithms": use_deterministic_algorithms,
# "cudnn": cudnn.deterministic); "mmengine" makes both only when called with
# ``deterministic=True``.
_LIGHTNING_SEED = (
    "lightning.seed_everything",
    "lightning.pytorch.seed_everything",
    "lightning.pytorch.utilities.seed.seed_everything",
    "lightning.fabric.seed_everything",
    "lightning.fabric.utilities.seed.seed_everything",
    "lightning.fabric.utilities.seed_everything",
    "lightning_fabric.seed_everything",
    "lightning_fabric.utilities.seed.seed_everything",
    "pytorch_lightning.seed_everything",
    "pytorch_lightning.utilities.seed.seed_everything",
)
# Fabric's ``seed_everything``: a static method calling the function above, also called on a
# Fabric object (``fabric.seed_everything(seed)``); its ``workers`` defaults to True.
_FABRIC_CLASSES = (
    "lightning.Fabric", "lightning.fabric.Fabric", "lightning.fabric.fabric.Fabric",
    "lightning_fabric.Fabric", "lightning_fabric.fabric.Fabric",
)  # fmt: skip
FABRIC_SEED_METHOD = "seed_everything"
FABRIC_SEED = frozenset(f"{klass}.{FABRIC_SEED_METHOD}" for klass in _FABRIC_CLASSES)
LIGHTNING_SEED = frozenset({*_LIGHTNING_SEED, *FABRIC_SEED})
BOTH = ("algorithms", "cudnn")
HELPERS: dict[str, tuple[str, ...]] = {
    **{name: () for name in sorted(LIGHTNING_SEED)},
    "transformers.set_seed": (),
    "transformers.trainer_utils.set_seed": (),
    "transformers.enable_full_determinism": BOTH,
    "transformers.trainer_utils.enable_full_determinism": BOTH,
    "accelerate.utils.set_seed": (),
    "accelerate.utils.random.set_seed": (),
    "mmengine.runner.set_random_seed": ("mmengine",),
    "mmengine.runner.utils.set_random_seed": ("mmengine",),
    "detectron2.utils.env.seed_all_rng": (),
    "timm.utils.random_seed": (),
    "timm.utils.random.random_seed": (),
    # detectron2's setup seeds with seed_all_rng(cfg.SEED) on the way (an entropy seed while
    # SEED keeps its default -1); its first argument is the config, not a seed.
    "detectron2.engine.default_setup": (),
    "detectron2.engine.defaults.default_setup": (),
}
# Helpers among HELPERS whose first argument is not the seed.
SETUP_HELPERS = frozenset(
    {"detectron2.engine.default_setup", "detectron2.engine.defaults.default_setup"}
)
# Constructing these seeds every family (Trainer.__init__ calls set_seed(args.seed); an
# mmengine Runner calls set_randomness(**cfg.randomness) in its constructor).
SEEDING_CONSTRUCTORS = frozenset(
    {
        "transformers.Trainer",
        "transformers.trainer.Trainer",
        "transformers.Seq2SeqTrainer",
        "transformers.trainer_seq2seq.Seq2SeqTrainer",
        "mmengine.runner.Runner",
        "mmengine.runner.runner.Runner",
        "mmengine.runner.Runner.from_cfg",
        "mmengine.runner.runner.Runner.from_cfg",
    }
)
# Methods that seed every family, by the qualified name of the class of their receiver:
# training an ultralytics model builds a trainer whose constructor calls init_seeds.
_ULTRALYTICS_MODELS = (
    "ultralytics.YOLO", "ultralytics.RTDETR", "ultralytics.models.YOLO",
    "ultralytics.models.yolo.YOLO", "ultralytics.models.yolo.model.YOLO",
    "ultralytics.engine.model.Model",
)  # fmt: skip
SEEDING_METHODS = frozenset(f"{model}.train" for model in _ULTRALYTICS_MODELS)
# Constructors that build a model with fresh random weights from a configuration file
# (``YOLO("yolov8s.yaml")``; a ``.pt`` argument loads trained weights instead). They are
# framework facades, judged by these documented semantics even where the framework's code
# is in the project tree (their many methods are not followed).
CONFIG_MODELS = frozenset(_ULTRALYTICS_MODELS)
CONFIG_SUFFIXES = (".yaml", ".yml")
# A fresh random seed made by a framework (rank 0 draws it, every rank receives it).
ENTROPY_SEED_FUNCTIONS = frozenset(
    {"mmengine.dist.sync_random_seed", "mmengine.dist.utils.sync_random_seed"}
)

# -- consumption of the global generators ------------------------------------------------------

TORCH_DRAWS = frozenset(
    {
        "rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like",
        "normal", "bernoulli", "multinomial", "poisson",
    }
)  # fmt: skip
TORCH_INIT = frozenset(
    {
        "uniform_", "normal_", "trunc_normal_", "xavier_uniform_", "xavier_normal_",
        "kaiming_uniform_", "kaiming_normal_", "orthogonal_", "sparse_",
        "uniform", "normal", "xavier_uniform", "xavier_normal", "kaiming_uniform",
        "kaiming_normal", "orthogonal", "sparse",
    }
)  # fmt: skip
CONV_LAYERS = frozenset(
    {
        "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
        "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
        "LazyConvTranspose3d",
    }
)  # fmt: skip
# torch.nn modules whose constructor draws random initial weights.
PARAMETER_LAYERS = CONV_LAYERS | frozenset(
    {
        "Linear", "Bilinear", "LazyLinear", "Embedding", "EmbeddingBag", "RNN", "LSTM", "GRU",
        "RNNCell", "LSTMCell", "GRUCell", "MultiheadAttention", "Transformer",
        "TransformerEncoderLayer", "TransformerDecoderLayer",
    }
)  # fmt: skip
DROPOUT_LAYERS = frozenset(
    {"Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"}
)
DROPOUT_FUNCTIONS = frozenset(
    {
        "torch.dropout", "torch.nn.functional.dropout", "torch.nn.functional.dropout1d",
        "torch.nn.functional.dropout2d", "torch.nn.functional.dropout3d",
        "torch.nn.functional.alpha_dropout", "torch.nn.functional.feature_alpha_dropout",
    }
)  # fmt: skip
CONV_FUNCTIONS = frozenset(
    {
        "torch.conv1d", "torch.conv2d", "torch.conv3d", "torch.conv_transpose1d",
        "torch.conv_transpose2d", "torch.conv_transpose3d", "torch.nn.functional.conv1d",
        "torch.nn.functional.conv2d", "torch.nn.functional.conv3d",
        "torch.nn.functional.conv_transpose1d", "torch.nn.functional.conv_transpose2d",
        "torch.nn.functional.conv_transpose3d",
    }
)  # fmt: skip
# Model factories that build convolutional networks with random initial weights.
CONV_MODEL_FACTORIES = frozenset({"timm.create_model"})
CONV_MODEL_PREFIXES = ("torchvision.models.",)
RANDOM_SAMPLERS = frozenset({"RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler"})
RANDOM_TRANSFORMS = frozenset(
    {
        "ColorJitter", "RandAugment", "AutoAugment", "TrivialAugmentWide", "AugMix",
        "GaussianBlur", "ElasticTransform", "ScaleJitter", "RandomShortestSize",
    }
)  # fmt: skip
NUMPY_NOT_DRAWS = frozenset(
    {
        "seed", "default_rng", "RandomState", "Generator", "SeedSequence", "BitGenerator",
        "PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64", "get_state", "set_state",
        "get_bit_generator", "set_bit_generator",
    }
)  # fmt: skip
RANDOM_DRAWS = frozenset(
    {
        "random", "uniform", "triangular", "randint", "randrange", "choice", "choices",
        "shuffle", "sample", "gauss", "normalvariate", "lognormvariate", "expovariate",
        "vonmisesvariate", "gammavariate", "betavariate", "paretovariate", "weibullvariate",
        "getrandbits", "randbytes", "binomialvariate",
    }
)  # fmt: skip

# Third-party layers built with random initial weights: graph neural network libraries
# (their layer classes, ``GCNConv``, ``GATConv``, ``SAGEConv``...) and adapters that peft
# initialises (``get_peft_model``: LoRA's A matrices are drawn from the torch generator).
THIRD_PARTY_LAYER_PREFIXES = ("torch_geometric.nn.", "dgl.nn.")
THIRD_PARTY_MODEL_FUNCTIONS = frozenset({"peft.get_peft_model", "peft.mapping.get_peft_model"})
THIRD_PARTY_MODELS = frozenset(
    {"Linear", "HeteroLinear", "MLP", "GCN", "GAT", "GIN", "GraphSAGE", "PNA", "EdgeCNN",
     "Node2Vec", "MetaPath2Vec", "GAE", "VGAE", "ARGA", "ARGVA", "SchNet", "DimeNet",
     "RelGraphConv", "HeteroGraphConv", "Embedding"}
)  # fmt: skip

# Kinds of consumption. Those in DEFERRED draw later than the call (a loader shuffles when it
# is iterated, a layer drops out in forward): they count as use, but not for ordering.
MODEL = "model with parameters"
DRAW = "random draw"
INIT = "random init"
DROPOUT = "dropout"
DROPOUT_LAYER = "dropout layer"
LOADER = "shuffling loader"
WORKERS = "loader workers seeded from it"
SAMPLER = "random sampler"
SPLIT = "random split"
TRANSFORM = "random transform"
SKLEARN = "scikit-learn call without `random_state`"
ESTIMATOR = "scikit-learn estimator without `random_state`"
DEFERRED = frozenset({DROPOUT_LAYER, LOADER, WORKERS, SAMPLER, TRANSFORM, ESTIMATOR})
# Kinds whose draws only set initial weights: a checkpoint loaded over the model replaces them.
WEIGHTS = frozenset({MODEL, INIT})

# -- generator objects (RPL102) ----------------------------------------------------------------

# Constructor -> the parameter that takes the seed (name, position).
NUMPY_GENERATORS: dict[str, tuple[str, int]] = {
    "numpy.random.default_rng": ("seed", 0),
    "numpy.random.RandomState": ("seed", 0),
    "numpy.random.SeedSequence": ("entropy", 0),
    "numpy.random.PCG64": ("seed", 0),
    "numpy.random.PCG64DXSM": ("seed", 0),
    "numpy.random.MT19937": ("seed", 0),
    "numpy.random.Philox": ("seed", 0),
    "numpy.random.SFC64": ("seed", 0),
    "random.Random": ("x", 0),
}
TORCH_GENERATOR = "torch.Generator"

# -- processes ---------------------------------------------------------------------------------

# Start a worker in a fresh interpreter: the parent's seeds do not carry over.
SPAWNERS = frozenset(
    {
        "torch.multiprocessing.spawn",
        "torch.multiprocessing.start_processes",
        "torch.multiprocessing.spawn.spawn",
        "torch.multiprocessing.spawn.start_processes",
    }
)
PROCESS_CLASSES = frozenset({"multiprocessing.Process", "torch.multiprocessing.Process"})
GET_CONTEXT = frozenset({"multiprocessing.get_context", "torch.multiprocessing.get_context"})
SET_START_METHOD = frozenset(
    {"multiprocessing.set_start_method", "torch.multiprocessing.set_start_method"}
)
FRESH_START_METHODS = frozenset({"spawn", "forkserver"})
# Run ``target=`` in this process (a thread): an ordinary call for seeding purposes.
THREADS = frozenset({"threading.Thread", "threading.Timer"})
# Launchers that run a function in one fresh process per device (spawned with
# torch.multiprocessing): qualified name -> (keyword, position) of that function.
LAUNCHERS: dict[str, tuple[str, int]] = {
    "detectron2.engine.launch": ("main_func", 0),
    "detectron2.engine.launch.launch": ("main_func", 0),
    "detectron2.engine.defaults.launch": ("main_func", 0),
    "fairseq.distributed.utils.call_main": ("main", 1),
    "fairseq.distributed_utils.call_main": ("main", 1),
    "fairseq.distributed.call_main": ("main", 1),
}
# Cluster job executors' methods that run a callable in a job of its own (another process,
# usually on another machine), by the qualified name of the executor's class.
_JOB_EXECUTORS = (
    "submitit.AutoExecutor", "submitit.SlurmExecutor", "submitit.LocalExecutor",
    "submitit.auto.auto.AutoExecutor", "submitit.slurm.slurm.SlurmExecutor",
    "submitit.local.local.LocalExecutor",
)  # fmt: skip
JOB_SUBMITS = frozenset(
    f"{executor}.{method}"
    for executor in _JOB_EXECUTORS
    for method in ("submit", "map_array", "submit_array")
)
# Tools that time code (a profiler run, a benchmark timer; not the region labels of
# ``record_function``): a program that calls them measures speed.
TIMERS = ("torch.profiler.profile", "torch.autograd.profiler.profile", "torch.utils.benchmark.")
# Command-line runners that call the function they are given (its first argument).
RUNNERS = frozenset(
    {"fire.Fire", "typer.run", "jsonargparse.CLI", "jsonargparse.auto_cli", "tyro.cli",
     "absl.app.run"}
)  # fmt: skip

# -- deterministic settings --------------------------------------------------------------------

CUDNN = "torch.backends.cudnn"
USE_DETERMINISTIC = frozenset({"torch.use_deterministic_algorithms", "torch.set_deterministic"})
DEBUG_MODE = "torch.set_deterministic_debug_mode"
LIGHTNING_TRAINERS = frozenset(
    {
        "lightning.Trainer",
        "lightning.pytorch.Trainer",
        "lightning.pytorch.trainer.Trainer",
        "lightning.pytorch.trainer.trainer.Trainer",
        "pytorch_lightning.Trainer",
        "pytorch_lightning.trainer.Trainer",
        "pytorch_lightning.trainer.trainer.Trainer",
    }
)

# -- where project code can be ---------------------------------------------------------------

# Top-level packages that are never project code (calls into them are classified above or
# ignored); keeps summaries small. A project's own top-level package is never skipped.
LIBRARIES = frozenset(sys.stdlib_module_names) | frozenset(
    {
        "builtins", "torch", "numpy", "sklearn", "scipy", "pandas", "torchvision", "torchaudio",
        "torchtext", "transformers", "lightning", "pytorch_lightning", "lightning_fabric",
        "accelerate", "timm", "mmengine", "mmcv", "detectron2", "jax", "tensorflow", "keras",
        "matplotlib", "seaborn", "tqdm", "PIL", "cv2", "wandb", "hydra", "omegaconf", "yaml",
        "h5py", "einops", "deepspeed", "triton", "sympy", "numba", "click", "pytest",
    }
)  # fmt: skip


def torch_use(qualified: str) -> str | None:
    """The kind of global torch RNG use a call makes (ignoring ``generator=``), if any."""
    parts = qualified.split(".")
    last = parts[-1]
    if qualified.startswith("torch.nn.init."):
        return INIT if last in TORCH_INIT else None
    if qualified.startswith("torch.nn.") and "functional" not in parts:
        if last in PARAMETER_LAYERS:
            return MODEL
        if last in DROPOUT_LAYERS:
            return DROPOUT_LAYER
        return None
    if qualified in DROPOUT_FUNCTIONS:
        return DROPOUT
    if len(parts) == 2 and parts[0] == "torch" and last in TORCH_DRAWS:
        return DRAW
    if qualified.startswith("torch.utils.data."):
        if last == "random_split":
            return SPLIT
        if last in RANDOM_SAMPLERS:
            return SAMPLER
        return None
    if qualified.startswith("torchvision.transforms.") and (
        last.startswith("Random") or last in RANDOM_TRANSFORMS
    ):
        return TRANSFORM
    if builds_conv_model(qualified):
        return MODEL
    return None


def builds_conv(qualified: str) -> bool:
    """Whether a call builds or runs a cuDNN convolution."""
    parts = qualified.split(".")
    if qualified.startswith("torch.nn.") and "functional" not in parts:
        return parts[-1] in CONV_LAYERS
    return qualified in CONV_FUNCTIONS or builds_conv_model(qualified)


def builds_conv_model(qualified: str) -> bool:
    if qualified in CONV_MODEL_FACTORIES:
        return True
    # torchvision.models.resnet18(...), torchvision.models.segmentation.fcn_resnet50(...);
    # not the weight enums (ResNet18_Weights.DEFAULT) nor get_weight().
    if qualified.startswith(CONV_MODEL_PREFIXES):
        last = qualified.rsplit(".", 1)[1]
        return last[:1].islower() and not last.startswith(("get_", "list_"))
    return False


def numpy_draw(qualified: str) -> bool:
    parts = qualified.split(".")
    return len(parts) == 3 and parts[:2] == ["numpy", "random"] and parts[2] not in NUMPY_NOT_DRAWS


def random_draw(qualified: str) -> bool:
    parts = qualified.split(".")
    return len(parts) == 2 and parts[0] == "random" and parts[1] in RANDOM_DRAWS


def is_library(qualified: str, own_package: str | None, tree: frozenset[str] = frozenset()) -> bool:
    """Whether a qualified name belongs to a library rather than (possibly) the project.
    ``tree`` holds the library names the project's own tree contains (a checkout of the
    library itself, or a vendored copy): those are project code."""
    top = qualified.split(".", 1)[0]
    return top != own_package and top in LIBRARIES and top not in tree


def third_party_layer(qualified: str) -> bool:
    """A layer or model class of a graph neural network library that has trainable weights
    (``torch_geometric.nn.GCNConv``, ``dgl.nn.GATConv``, ``TopKPooling``, ``GraphSAGE``);
    not parameter-free ones (``LabelPropagation``, the ``global_*_pool`` functions)."""
    if not qualified.startswith(THIRD_PARTY_LAYER_PREFIXES):
        return False
    last = qualified.rsplit(".", 1)[-1]
    return last.endswith(("Conv", "Pooling")) or last in THIRD_PARTY_MODELS


_WORDS = re.compile(r"_+|(?<=[a-z0-9])(?=[A-Z])")


def is_seed_name(name: str) -> bool:
    """A variable, attribute or key named for a seed: ``seed``, ``manualSeed``,
    ``random_seed``, ``SEED``; not ``seeded`` or ``seeds_dir``-like words."""
    if "seed" not in name.lower():
        return False  # (every word is a part of the name: most names end here)
    return any(
        word == "seed" or (word.endswith("seed") and len(word) > 4)
        for word in (part.lower() for part in _WORDS.split(name))
    )


def is_port_name(name: str) -> bool:
    """A variable, attribute or key named for a network port (``MASTER_PORT``) or for the
    address a process group meets at (``dist_url``, ``init_method``: ``tcp://host:port``)."""
    lower = name.lower()
    return (
        any(part.lower() in ("port", "ports") for part in _WORDS.split(name))
        or "dist_url" in lower
        or "init_method" in lower
    )
