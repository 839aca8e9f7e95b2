"""The resolved settings of a run: the rules to run, per-file ignores, the target torch."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

from repro_lint import rules as rule_table
from repro_lint.config import Config
from repro_lint.files import real_path
from repro_lint.rule_info import RuleInfo
from repro_lint.summary_format import SUMMARY_VERSION
from repro_lint.torch_versions import TargetTorch, resolve_target

if TYPE_CHECKING:
    import pathspec

    from repro_lint.program import ProjectOptions, ProjectRule, SettledRule
    from repro_lint.rule import Rule


@dataclass(frozen=True)
class Settings:
    """A resolved configuration: the rules to run and the torch version to judge against.

    The rules are held as their records (``RuleInfo``): their classes, and libcst with them,
    are imported only when asked for (``rules``, ``project_rules``, ``settling_rules``), which
    a run does once it parses a file or runs the project pass."""

    config: Config
    selected: tuple[RuleInfo, ...]
    target: TargetTorch
    _per_file: tuple[tuple[pathspec.GitIgnoreSpec, tuple[RuleInfo, ...]], ...] = field(
        default=(), repr=False
    )
    _entry_points: pathspec.GitIgnoreSpec | None = field(default=None, repr=False)
    # ``--ignore-noqa``: report (and fix) as if no file had a noqa comment.
    ignore_noqa: bool = False

    @classmethod
    def from_config(cls, config: Config, *, ignore_noqa: bool = False) -> Settings:
        """Resolve selection and target; raises ConfigError for selectors that match nothing.
        ``ignore_noqa``: as ``--ignore-noqa`` says."""
        source = config.source
        rule_table.validate_selectors("select", config.select or (), source)
        rule_table.validate_selectors("extend-select", config.extend_select, source)
        rule_table.validate_selectors("ignore", config.ignore, source)
        selected = rule_table.select(config.select, config.extend_select, config.ignore)
        if config.per_file_ignores or config.entry_points:
            # Imported only when there are patterns: a one-file run has little else to do.
            import pathspec
        per_file = []
        for pattern, codes in config.per_file_ignores:
            rule_table.validate_selectors(f"per-file-ignores.{pattern}", codes, source)
            ignored = tuple({rule for code in codes for rule in rule_table.matching(code)})
            spec = pathspec.GitIgnoreSpec.from_lines([pattern])
            per_file.append((spec, ignored))
        target = resolve_target(config.target_torch, config.root)
        entry_points = (
            pathspec.GitIgnoreSpec.from_lines(config.entry_points) if config.entry_points else None
        )
        return cls(
            config,
            selected,
            target,
            tuple(per_file),
            _entry_points=entry_points,
            ignore_noqa=ignore_noqa,
        )

    @functools.cached_property
    def rules(self) -> tuple[type[Rule], ...]:
        """The selected rules' classes."""
        return tuple(info.load() for info in self.selected)

    @property
    def needs_project(self) -> bool:
        """Whether a project phase runs: project rules, or per-file rules that it settles."""
        return any(info.project or info.settled for info in self.selected)

    @functools.cached_property
    def project_infos(self) -> tuple[RuleInfo, ...]:
        """The records of the selected rules judged on whole programs."""
        return tuple(info for info in self.selected if info.project)

    @functools.cached_property
    def project_rules(self) -> tuple[type[ProjectRule], ...]:
        """The selected rules judged on whole programs (run after every file is linted)."""
        return tuple(cast("type[ProjectRule]", info.load()) for info in self.project_infos)

    @functools.cached_property
    def settling_rules(self) -> tuple[type[SettledRule], ...]:
        """The selected per-file rules whose findings the project pass revises."""
        return tuple(
            cast("type[SettledRule]", info.load()) for info in self.selected if info.settled
        )

    @functools.cached_property
    def entry_point_matcher(self) -> Callable[[Path], bool] | None:
        """Whether a file is an entry point by ``entry-points`` (None: no such setting)."""
        spec = self._entry_points
        if spec is None:
            return None
        root = self.config.root.resolve()

        def matcher(path: Path) -> bool:
            try:
                relative = real_path(path).relative_to(root).as_posix()
            except ValueError:
                relative = path.name
            return spec.match_file(relative)

        return matcher

    def project_options(self) -> ProjectOptions:
        from repro_lint.program import ProjectOptions

        return ProjectOptions(
            seed=self.config.seed,
            seed_functions=frozenset(self.config.seed_functions),
            entry_points=self.entry_point_matcher,
            known_codes=frozenset(rule_table.BY_CODE) | frozenset(rule_table.BY_NAME),
            target_torch=self.target.version,
            dataloader_worker_rng=self.config.dataloader_worker_rng,
        )

    def selected_for(self, path: Path | None) -> tuple[RuleInfo, ...]:
        """The records of the rules that apply to ``path`` (``per-file-ignores``)."""
        if path is None or not self._per_file:
            return self.selected
        try:
            relative = real_path(path).relative_to(self.config.root.resolve()).as_posix()
        except ValueError:
            relative = path.name
        ignored: set[RuleInfo] = set()
        for spec, rules in self._per_file:
            if spec.match_file(relative):
                ignored.update(rules)
        return tuple(r for r in self.selected if r not in ignored)

    def cache_key(self) -> str:
        codes = ",".join(rule.CODE for rule in self.selected)
        noqa = "|ignore-noqa" if self.ignore_noqa else ""
        return (
            f"{self.config.fingerprint()}|rules={codes}|torch={self.target.version}"
            f"|summary={SUMMARY_VERSION}{noqa}"
        )


__all__ = ["Settings"]
