"""The rule table: every rule's record (``RuleInfo``), in code order, and selection by code,
prefix or name. Light: the classes are listed in ``table.py`` and imported only when a rule
runs (``RuleInfo.load``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from repro_lint.config import ConfigError
from repro_lint.rule_info import RuleInfo
from repro_lint.rules._index import INFOS

if TYPE_CHECKING:
    from repro_lint.rule import Rule

BY_CODE: dict[str, RuleInfo] = {rule.CODE: rule for rule in INFOS}
BY_NAME: dict[str, RuleInfo] = {rule.name: rule for rule in INFOS}
# Always reported, whatever ``select`` says; only an explicit ``ignore`` of the code hides it.
ALWAYS_ON = frozenset({"RPL000"})
# Per-file rules whose fixes project rules count on, listed in ``Unit.codes`` where enabled:
# RPL105 gives scikit-learn calls `random_state=` (then numpy needs no seed for them).
FIX_PARTNERS = frozenset({"RPL105"})


def info_for(code_or_name: str) -> RuleInfo | None:
    """The record of the rule with this exact code (``RPL201``) or name
    (``cudnn-benchmark-enabled``)."""
    return BY_CODE.get(code_or_name.upper()) or BY_NAME.get(code_or_name.lower())


def rule_for(code_or_name: str) -> type[Rule] | None:
    """The class of the rule with this exact code or name (imported on first use)."""
    info = info_for(code_or_name)
    return info.load() if info is not None else None


def _matches(selector: str) -> tuple[int, list[RuleInfo]]:
    """Rules a selector picks, and its specificity (longer prefixes are more specific)."""
    if selector.upper() == "ALL":
        return 0, list(INFOS)
    rule = BY_NAME.get(selector.lower())
    if rule is not None:
        return len(rule.CODE), [rule]
    prefix = selector.upper()
    return len(prefix), [r for r in INFOS if r.CODE.startswith(prefix)]


def matching(selector: str) -> list[RuleInfo]:
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
) -> tuple[RuleInfo, ...]:
    """Resolve ruff-style selection: the most specific selector decides; ties go to ignore."""
    chosen: dict[str, int] = {}
    if select is None:
        for rule in INFOS:
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
    return tuple(rule for rule in INFOS if rule.CODE in chosen)


__all__ = [
    "ALWAYS_ON",
    "BY_CODE",
    "BY_NAME",
    "FIX_PARTNERS",
    "INFOS",
    "RuleInfo",
    "info_for",
    "matching",
    "rule_for",
    "select",
    "validate_selectors",
]
