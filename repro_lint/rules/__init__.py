"""The rule table: every rule, in code order. The one place that lists rules by hand."""

from __future__ import annotations

from repro_lint.config import ConfigError
from repro_lint.rule import Rule
from repro_lint.rules.autotune_enabled import AutotuneEnabled
from repro_lint.rules.checkpoint_without_rng_state import CheckpointWithoutRngState
from repro_lint.rules.cudnn_benchmark_enabled import CudnnBenchmarkEnabled
from repro_lint.rules.dataloader_missing_generator import DataloaderMissingGenerator
from repro_lint.rules.dataloader_worker_rng import DataloaderWorkerRng
from repro_lint.rules.dataset_shuffle_without_seed import DatasetShuffleWithoutSeed
from repro_lint.rules.deterministic_mode_disabled import DeterministicModeDisabled
from repro_lint.rules.distributed_sampler_without_set_epoch import DistributedSamplerWithoutSetEpoch
from repro_lint.rules.hashseed_set_in_process import HashseedSetInProcess
from repro_lint.rules.late_seed import LateSeed
from repro_lint.rules.missing_cublas_workspace_config import MissingCublasWorkspaceConfig
from repro_lint.rules.missing_deterministic_config import MissingDeterministicConfig
from repro_lint.rules.missing_seed import MissingSeed
from repro_lint.rules.nondeterministic_library_kernel import NondeterministicLibraryKernel
from repro_lint.rules.nondeterministic_op import NondeterministicOp
from repro_lint.rules.nondeterministic_op_without_deterministic_mode import (
    NondeterministicOpWithoutDeterministicMode,
)
from repro_lint.rules.nondeterministic_seed import NondeterministicSeed
from repro_lint.rules.random_split_missing_generator import RandomSplitMissingGenerator
from repro_lint.rules.reduced_precision_matmul import ReducedPrecisionMatmul
from repro_lint.rules.seed_defaults_to_none import SeedDefaultsToNone
from repro_lint.rules.seed_lost_in_subprocess import SeedLostInSubprocess
from repro_lint.rules.sklearn_missing_random_state import SklearnMissingRandomState
from repro_lint.rules.syntax_error import SyntaxError
from repro_lint.rules.unknown_backend_flag import UnknownBackendFlag
from repro_lint.rules.unseeded_generator import UnseededGenerator
from repro_lint.rules.unsorted_file_listing import UnsortedFileListing
from repro_lint.rules.unused_noqa import UnusedNoqa

ALL_RULES: tuple[type[Rule], ...] = (
    SyntaxError,
    MissingSeed,
    UnseededGenerator,
    NondeterministicSeed,
    LateSeed,
    SklearnMissingRandomState,
    HashseedSetInProcess,
    SeedLostInSubprocess,
    SeedDefaultsToNone,
    CheckpointWithoutRngState,
    CudnnBenchmarkEnabled,
    MissingDeterministicConfig,
    DeterministicModeDisabled,
    MissingCublasWorkspaceConfig,
    AutotuneEnabled,
    UnknownBackendFlag,
    ReducedPrecisionMatmul,
    DataloaderWorkerRng,
    DataloaderMissingGenerator,
    RandomSplitMissingGenerator,
    DistributedSamplerWithoutSetEpoch,
    UnsortedFileListing,
    DatasetShuffleWithoutSeed,
    NondeterministicOp,
    NondeterministicOpWithoutDeterministicMode,
    NondeterministicLibraryKernel,
    UnusedNoqa,
)

BY_CODE: dict[str, type[Rule]] = {rule.CODE: rule for rule in ALL_RULES}
BY_NAME: dict[str, type[Rule]] = {rule.name: rule for rule in ALL_RULES}
# Always reported, whatever ``select`` says; only an explicit ``ignore`` of the code hides it.
ALWAYS_ON = frozenset({SyntaxError.CODE})


def rule_for(code_or_name: str) -> type[Rule] | None:
    """The rule with this exact code (``RPL201``) or name (``cudnn-benchmark-enabled``)."""
    return BY_CODE.get(code_or_name.upper()) or BY_NAME.get(code_or_name.lower())


def _matches(selector: str) -> tuple[int, list[type[Rule]]]:
    """Rules a selector picks, and its specificity (longer prefixes are more specific)."""
    if selector.upper() == "ALL":
        return 0, list(ALL_RULES)
    rule = BY_NAME.get(selector.lower())
    if rule is not None:
        return len(rule.CODE), [rule]
    prefix = selector.upper()
    return len(prefix), [r for r in ALL_RULES if r.CODE.startswith(prefix)]


def matching(selector: str) -> list[type[Rule]]:
    """Every rule a selector (ALL, prefix, code or name) picks."""
    return _matches(selector)[1]


def validate_selectors(key: str, selectors: tuple[str, ...], source: object = None) -> None:
    for selector in selectors:
        if not _matches(selector)[1]:
            raise ConfigError(
                key,
                f"`{selector}` matches no rule (use a code such as RPL201, a prefix such as "
                "RPL2, a name such as cudnn-benchmark-enabled, or ALL)",
                str(source) if source else None,
            )


def select(
    select: tuple[str, ...] | None,
    extend_select: tuple[str, ...],
    ignore: tuple[str, ...],
) -> tuple[type[Rule], ...]:
    """Resolve ruff-style selection: the most specific selector decides; ties go to ignore."""
    chosen: dict[str, int] = {}
    if select is None:
        for rule in ALL_RULES:
            if rule.DEFAULT_ENABLED:
                chosen[rule.CODE] = 0
    for selector in (*(select or ()), *extend_select):
        specificity, rules = _matches(selector)
        for rule in rules:
            chosen[rule.CODE] = max(chosen.get(rule.CODE, -1), specificity)
    for code in ALWAYS_ON:
        chosen.setdefault(code, 0)
    for selector in ignore:
        specificity, rules = _matches(selector)
        for rule in rules:
            if rule.CODE in chosen and specificity >= chosen[rule.CODE]:
                if rule.CODE in ALWAYS_ON and specificity < len(rule.CODE):
                    continue
                del chosen[rule.CODE]
    return tuple(rule for rule in ALL_RULES if rule.CODE in chosen)
