"""noqa comments: which findings they hide, and that fixes never touch a suppressed line."""

from __future__ import annotations

import pytest

from repro_lint.config import Config
from repro_lint.diagnostics import FixSafety
from repro_lint.engine import fix_source, lint_text
from repro_lint.settings import Settings

SETTINGS = Settings.from_config(Config())


def rows(source: str) -> list[tuple[str, int]]:
    return [(d.code, d.location.row) for d in lint_text(source, "t.py", SETTINGS).diagnostics]


@pytest.mark.parametrize(
    ("comment", "suppressed"),
    [
        ("# noqa", True),
        ("# noqa: RPL201", True),
        ("# NOQA:RPL201", True),
        ("# noqa: E501, RPL201", True),
        ("# noqa: RPL204 RPL201", True),
        ("# noqa: cudnn-benchmark-enabled", True),
        ("# noqa: RPL201 -- we benchmark on purpose", True),
        ("# noqa: RPL999", False),
        ("# noqa: RPL20", False),
        ("# noqa: E501", False),
        ("# a comment mentioning noqa later", False),
    ],
)
def test_line_suppression(comment: str, suppressed: bool) -> None:
    source = f"import torch\ntorch.backends.cudnn.benchmark = True  {comment}\n"
    assert rows(source) == ([] if suppressed else [("RPL201", 2)])


def test_noqa_inside_a_string_does_not_suppress() -> None:
    source = 'import torch\ntorch.backends.cudnn.benchmark = True; x = "# noqa"\n'
    assert rows(source) == [("RPL201", 2)]


def test_noqa_on_the_first_line_of_a_multiline_statement() -> None:
    source = (
        "import lightning as L\n"
        "trainer = L.Trainer(  # noqa: RPL201\n"
        "    max_epochs=3,\n"
        "    benchmark=True,\n"
        ")\n"
    )
    assert rows(source) == []
    assert rows(source.replace("  # noqa: RPL201", "")) == [("RPL201", 4)]


@pytest.mark.parametrize(
    ("directive", "expected"),
    [
        ("# repro-lint: noqa", []),
        ("# repro-lint: noqa: RPL201", [("RPL203", 3)]),
        ("# repro-lint: noqa: deterministic-mode-disabled", [("RPL201", 2)]),
        ("# repro-lint: noqa: RPL999", [("RPL201", 2), ("RPL203", 3)]),
    ],
)
def test_file_level_suppression(directive: str, expected: list[tuple[str, int]]) -> None:
    source = (
        "import torch\n"
        "torch.backends.cudnn.benchmark = True\n"
        "torch.use_deterministic_algorithms(False)\n"
        f"{directive}\n"
    )
    assert rows(source) == expected


def test_fix_never_modifies_a_suppressed_line() -> None:
    # RPL204's fix inserts before `import torch`, which is fine; but the RPL203 fix would edit
    # line 4, which carries a noqa for RPL203 itself: that finding is suppressed, so no fix.
    source = (
        "import os\n"
        "import torch\n"
        "torch.backends.cudnn.benchmark = True  # noqa: RPL201\n"
        "torch.backends.cudnn.deterministic = False  # noqa\n"
    )
    outcome = fix_source(source, SETTINGS, frozenset({FixSafety.SAFE, FixSafety.UNSAFE}))
    assert outcome.text == source


def test_fix_for_another_code_skips_a_line_with_a_noqa() -> None:
    # The RPL201 finding on line 2 is not suppressed (its noqa names RPL204), but the line
    # carries a repro-lint noqa, so the fix leaves it alone and the finding stays.
    source = "import torch\ntorch.backends.cudnn.benchmark = True  # noqa: RPL204\n"
    outcome = fix_source(source, SETTINGS)
    assert outcome.text == source
    assert [(d.code, d.fix) for d in outcome.result.diagnostics] == [("RPL201", None)]
