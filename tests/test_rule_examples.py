"""Every example of every rule is a test; plus invariants of the rule table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from repro_lint.config import Config, parse_table
from repro_lint.diagnostics import FixSafety
from repro_lint.engine import fix_source, lint_text
from repro_lint.explain import REQUIRED, render_markdown, sections
from repro_lint.rule import Invalid, Rule, Valid
from repro_lint.rules import ALWAYS_ON
from repro_lint.rules.table import ALL_RULES
from repro_lint.settings import Settings

ALL_FIXES = frozenset({FixSafety.SAFE, FixSafety.UNSAFE})


def _settings(rule: type[Rule], overrides: Mapping[str, Any]) -> Settings:
    values = parse_table(overrides, None)
    values.setdefault("select", (rule.CODE,))
    return Settings.from_config(Config(**values))


def _valid(rule: type[Rule]) -> list[Valid]:
    return [v if isinstance(v, Valid) else Valid(v) for v in rule.VALID]


INVALID = [
    pytest.param(rule, example, id=f"{rule.CODE}-invalid-{i}")
    for rule in ALL_RULES
    for i, example in enumerate(rule.INVALID)
]
VALID = [
    pytest.param(rule, example, id=f"{rule.CODE}-valid-{i}")
    for rule in ALL_RULES
    for i, example in enumerate(_valid(rule))
]


@pytest.mark.parametrize(("rule", "example"), INVALID)
def test_invalid_example_is_reported(rule: type[Rule], example: Invalid) -> None:
    settings = _settings(rule, example.config)
    result = lint_text(example.code, "example.py", settings)
    assert rule.CODE in {d.code for d in result.diagnostics}, example.code
    if example.fixed is None:
        return
    outcome = fix_source(example.code, settings, ALL_FIXES, "example.py")
    assert outcome.text == example.fixed
    # The fix converges: the fixed code no longer has the finding, and fixing again is a no-op.
    assert rule.CODE not in {d.code for d in outcome.result.diagnostics}
    assert fix_source(outcome.text, settings, ALL_FIXES, "example.py").text == outcome.text


NO_FIX = [
    pytest.param(rule, example, id=f"{rule.CODE}-invalid-{i}")
    for rule in ALL_RULES
    for i, example in enumerate(rule.INVALID)
    if "no fix" in example.note
]


@pytest.mark.parametrize(("rule", "example"), NO_FIX)
def test_invalid_example_said_to_have_no_fix_has_none(rule: type[Rule], example: Invalid) -> None:
    """An example whose note says "no fix" is reported without one (a fix there would be
    wrong: the examples' `fixed=` cannot say so)."""
    result = lint_text(example.code, "example.py", _settings(rule, example.config))
    found = [d for d in result.diagnostics if d.code == rule.CODE]
    assert found, example.code
    assert all(d.fix is None for d in found), example.code


@pytest.mark.parametrize(("rule", "example"), VALID)
def test_valid_example_is_quiet(rule: type[Rule], example: Valid) -> None:
    result = lint_text(example.code, "example.py", _settings(rule, example.config))
    assert rule.CODE not in {d.code for d in result.diagnostics}, example.code


def test_codes_are_unique_and_ordered() -> None:
    codes = [rule.CODE for rule in ALL_RULES]
    assert codes == sorted(codes)
    assert len(set(codes)) == len(codes)
    assert len({rule.name for rule in ALL_RULES}) == len(codes)
    for code in codes:
        assert len(code) == 6 and code.startswith("RPL") and code[3:].isdigit()


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.CODE)
def test_rule_is_documented(rule: type[Rule]) -> None:
    found = sections(rule)
    assert "What it does" in found and "Why is this bad?" in found
    page = render_markdown(rule)
    for heading in REQUIRED:
        assert f"## {heading}" in page, heading
    if rule.FIX_SAFETY is not None:
        assert "Fix safety" in found
    assert rule.MESSAGE and len(rule.MESSAGE) <= 80 and not rule.MESSAGE.endswith(".")
    assert rule.INVALID, "every rule needs at least one INVALID example"
    assert rule.VALID, "every rule needs at least one VALID example"


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.CODE)
def test_valid_examples_import_what_they_exercise(rule: type[Rule]) -> None:
    for example in _valid(rule):
        assert "import " in example.code, example.code


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.CODE)
def test_fix_safety_is_consistent(rule: type[Rule]) -> None:
    emitted = set()
    for example in rule.INVALID:
        result = lint_text(example.code, "example.py", _settings(rule, example.config))
        emitted |= {
            d.fix.applicability
            for d in result.diagnostics
            if d.code == rule.CODE and d.fix is not None
        }
    has_fixed = any(example.fixed is not None for example in rule.INVALID)
    if rule.FIX_SAFETY is None:
        assert not emitted and not has_fixed and rule.FIX_TITLE is None
    else:
        assert rule.FIX_TITLE, "a rule with fixes needs a FIX_TITLE"
        allowed = {rule.FIX_SAFETY, FixSafety.DISPLAY_ONLY}
        if rule.FIX_SAFETY is FixSafety.SAFE and "unsafe" in sections(rule)["Fix safety"]:
            # A rule whose usual fix is safe may offer an unsafe one where no safe fix exists
            # (RPL202: deterministic mode for attention), when its docs say which.
            allowed.add(FixSafety.UNSAFE)
        assert emitted <= allowed, emitted
        if rule.FIX_SAFETY in (FixSafety.SAFE, FixSafety.UNSAFE):
            assert has_fixed, "show at least one fix as an INVALID example with fixed="


def test_syntax_error_is_always_on() -> None:
    assert {rule.CODE for rule in ALL_RULES if rule.CODE in ALWAYS_ON} == {"RPL000"}
