"""RPL202's fixes where none may be inserted: a later statement on the program's path
switches the setting off again (the rule's examples cannot say "no fix")."""

from __future__ import annotations

import pytest

from repro_lint.config import Config, parse_table
from repro_lint.engine import lint_text
from repro_lint.rule import Invalid
from repro_lint.rules.missing_deterministic_config import MissingDeterministicConfig
from repro_lint.settings import Settings

SWITCHED_OFF = [
    example
    for example in MissingDeterministicConfig.INVALID
    if example.fixed is None and "later" in (example.note or "")
]


def test_both_kinds_of_switch_are_covered() -> None:
    codes = "".join(example.code for example in SWITCHED_OFF)
    assert "cudnn.deterministic = False" in codes
    assert "use_deterministic_algorithms(False)" in codes


@pytest.mark.parametrize("example", SWITCHED_OFF, ids=lambda e: e.note)
def test_no_fix_when_a_later_statement_switches_the_setting_off(example: Invalid) -> None:
    code = example.code
    settings = Settings.from_config(Config(**parse_table({"select": ["RPL202"]}, None)))
    found = [d for d in lint_text(code, "example.py", settings).diagnostics if d.code == "RPL202"]
    assert found, code
    assert all(d.fix is None for d in found)
    assert all("switched off at" in d.message for d in found)
