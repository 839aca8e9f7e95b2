"""The generated rules/ catalog matches the rule classes; `explain` uses the same renderer."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro_lint.cli import main
from repro_lint.explain import page_name, render_index, render_markdown
from repro_lint.rules.table import ALL_RULES

CATALOG = Path(__file__).resolve().parent.parent / "rules"


def test_catalog_pages_are_current(
    golden: Callable[[Path, str], None], update_goldens: bool
) -> None:
    expected = {page_name(rule) for rule in ALL_RULES} | {"README.md"}
    if update_goldens:
        for stale in CATALOG.glob("*.md"):
            if stale.name not in expected:
                stale.unlink()
    for rule in ALL_RULES:
        golden(CATALOG / page_name(rule), render_markdown(rule))
    golden(CATALOG / "README.md", render_index(ALL_RULES))
    assert {p.name for p in CATALOG.glob("*.md")} == expected, "stale pages in rules/"


@pytest.mark.parametrize("selector", ["RPL201", "cudnn-benchmark-enabled", "rpl201"])
def test_explain_prints_the_catalog_page(selector: str) -> None:
    result = CliRunner().invoke(main, ["explain", selector])
    assert result.exit_code == 0
    assert result.stdout == (CATALOG / "RPL201-cudnn-benchmark-enabled.md").read_text(
        encoding="utf-8"
    )


def test_explain_unknown_rule_exits_2() -> None:
    result = CliRunner().invoke(main, ["explain", "RPL999"])
    assert result.exit_code == 2
    assert "RPL999" in result.stderr


def test_rules_lists_every_rule_as_json() -> None:
    import json

    result = CliRunner().invoke(main, ["rules", "--output-format", "json"])
    assert result.exit_code == 0
    assert [item["code"] for item in json.loads(result.stdout)] == [r.CODE for r in ALL_RULES]
    table = CliRunner().invoke(main, ["rules"])
    assert [line.split()[0] for line in table.stdout.splitlines()] == [r.CODE for r in ALL_RULES]
