"""What a run decides with before any rule's code is needed: a rule's code, name, selection
default, kind and triggers (``RuleInfo``). The run imports a rule's class, and libcst with
it, only when a file is parsed for the rule or the project pass runs it: a one-file run
whose file no rule triggers on imports neither."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from repro_lint.rule import Rule


@dataclass(frozen=True, eq=False, slots=True)
class RuleInfo:
    """A rule as the rule table records it. The upper-case attributes are the class's own
    (``Rule.CODE``, ``Rule.TRIGGERS``, ...), so that what asks only those takes either.

    Each rule has exactly one record (``repro_lint.rules.INFOS``): records compare and hash
    by identity."""

    CODE: str
    name: str
    # The module that defines the class, and the class's name there.
    module: str
    qualname: str
    DEFAULT_ENABLED: bool
    # A ``ProjectRule`` (judged on whole programs) / a ``SettledRule`` (a per-file rule
    # whose findings the project pass revises).
    project: bool
    settled: bool
    TRIGGERS: tuple[str, ...]
    TRIGGER_WORDS: bool

    def load(self) -> type[Rule]:
        """The rule's class (its module is imported on first use)."""
        return cast("type[Rule]", getattr(importlib.import_module(self.module), self.qualname))


__all__ = ["RuleInfo"]
