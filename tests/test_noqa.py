"""The suppression lifecycle: --add-noqa to adopt, RPL901 to find dead noqa, --ignore-noqa."""

from __future__ import annotations

import json
import shlex
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from repro_lint.cli import main
from repro_lint.config import Config
from repro_lint.diagnostics import FixSafety
from repro_lint.engine import fix_source, lint_text
from repro_lint.fixes import apply_edits
from repro_lint.settings import Settings
from repro_lint.suppressions import noqa_edits

ROOT = Path(__file__).resolve().parent.parent
HAZARDS = (
    "import torch\n"
    "torch.backends.cudnn.benchmark = True  # speed\n"
    "torch.use_deterministic_algorithms(False)  # noqa: E501 -- long line\n"
    "import lightning as L\n"
    "trainer = L.Trainer(\n"
    "    benchmark=True,\n"
    ")\n"
)


def run(cwd: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> Result:
    monkeypatch.chdir(cwd)
    return CliRunner().invoke(main, [*args, "--no-cache"], catch_exceptions=False)


def codes(result: Result) -> list[tuple[str, int]]:
    """(code, row) of each finding in concise output."""
    found = []
    for line in result.stdout.splitlines():
        parts = line.split(":")
        if len(parts) >= 4 and parts[3].strip().startswith("RPL"):
            found.append((parts[3].split()[0], int(parts[1])))
    return found


def test_add_noqa_suppresses_every_finding_and_keeps_existing_codes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "train.py").write_text(HAZARDS, encoding="utf-8")
    before = run(tmp_path, monkeypatch, "check", ".", "--output-format", "concise")
    assert codes(before) == [("RPL201", 2), ("RPL203", 3), ("RPL201", 6)]

    added = run(tmp_path, monkeypatch, "check", ".", "--add-noqa")
    assert added.exit_code == 0
    lines = (tmp_path / "train.py").read_text(encoding="utf-8").splitlines()
    assert lines[1] == "torch.backends.cudnn.benchmark = True  # speed  # noqa: RPL201"
    assert lines[2] == (
        "torch.use_deterministic_algorithms(False)  # noqa: E501, RPL203 -- long line"
    )
    assert lines[5] == "    benchmark=True,  # noqa: RPL201"

    after = run(tmp_path, monkeypatch, "check", ".", "--output-format", "concise")
    assert after.exit_code == 0 and codes(after) == []
    content = (tmp_path / "train.py").read_bytes()
    again = run(tmp_path, monkeypatch, "check", ".", "--add-noqa")
    assert again.exit_code == 0
    assert (tmp_path / "train.py").read_bytes() == content, "--add-noqa is idempotent"


def test_add_noqa_keeps_crlf_line_endings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = "import torch\r\ntorch.backends.cudnn.benchmark = True\r\n"
    (tmp_path / "t.py").write_bytes(source.encode())
    assert run(tmp_path, monkeypatch, "check", ".", "--add-noqa").exit_code == 0
    assert (tmp_path / "t.py").read_bytes() == (
        b"import torch\r\ntorch.backends.cudnn.benchmark = True  # noqa: RPL201\r\n"
    )


def test_add_noqa_skips_a_line_that_ends_inside_a_string(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The finding starts on line 2, which ends inside the string: a comment there would
    # change the string, so the line is left alone and a warning names it.
    source = 'import torch\ntorch.backends.cudnn.benchmark = True; x = """\n"""\n'
    (tmp_path / "t.py").write_text(source, encoding="utf-8")
    result = run(tmp_path, monkeypatch, "check", ".", "--add-noqa")
    assert result.exit_code == 0
    assert "t.py:2" in result.stderr
    assert (tmp_path / "t.py").read_text(encoding="utf-8") == source


@pytest.mark.parametrize(
    ("source", "row"),
    [
        ('x = """\nbody\n"""\n', 1),
        ("x = 1 + \\\n    2\n", 1),
    ],
)
def test_no_noqa_where_a_comment_cannot_go(source: str, row: int) -> None:
    edits, skipped = noqa_edits(source, {row: ["RPL201"]})
    assert edits == [] and skipped == [row]


def test_add_noqa_refuses_fix_and_stdin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "t.py").write_text(HAZARDS, encoding="utf-8")
    assert run(tmp_path, monkeypatch, "check", ".", "--add-noqa", "--fix").exit_code == 2
    assert run(tmp_path, monkeypatch, "check", "-", "--add-noqa").exit_code == 2
    assert (tmp_path / "t.py").read_text(encoding="utf-8") == HAZARDS


def test_ignore_noqa_reports_and_fixes_suppressed_findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = "import torch\ntorch.backends.cudnn.benchmark = True  # noqa: RPL201\n"
    (tmp_path / "t.py").write_text(source, encoding="utf-8")
    assert run(tmp_path, monkeypatch, "check", ".").exit_code == 0
    shown = run(tmp_path, monkeypatch, "check", ".", "--ignore-noqa", "--output-format", "concise")
    assert shown.exit_code == 1 and codes(shown) == [("RPL201", 2)]
    fixed = run(tmp_path, monkeypatch, "check", ".", "--ignore-noqa", "--fix")
    assert fixed.exit_code == 0
    assert "benchmark = False  # noqa: RPL201" in (tmp_path / "t.py").read_text(encoding="utf-8")


def test_lifecycle_adopt_fix_then_remove_dead_noqa(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Adopt with --add-noqa; once a hazard is fixed by hand, RPL901 finds its stale noqa
    and --fix removes it; the still-needed suppressions stay."""
    (tmp_path / "train.py").write_text(HAZARDS, encoding="utf-8")
    run(tmp_path, monkeypatch, "check", ".", "--add-noqa")
    path = tmp_path / "train.py"
    path.write_text(
        path.read_text(encoding="utf-8").replace(
            "benchmark = True  # speed", "benchmark = False  # speed"
        ),
        encoding="utf-8",
    )
    stale = run(
        tmp_path,
        monkeypatch,
        "check",
        ".",
        "--extend-select",
        "RPL901",
        "--output-format",
        "concise",
    )
    assert stale.exit_code == 1 and codes(stale) == [("RPL901", 2)]
    fixed = run(tmp_path, monkeypatch, "check", ".", "--extend-select", "RPL901", "--fix")
    assert fixed.exit_code == 0
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[1] == "torch.backends.cudnn.benchmark = False  # speed"
    assert lines[2].endswith("# noqa: E501, RPL203 -- long line")
    assert lines[5] == "    benchmark=True,  # noqa: RPL201"


def test_unused_noqa_is_off_by_default() -> None:
    source = "import torch\ntorch.backends.cudnn.benchmark = False  # noqa: RPL201\n"
    assert lint_text(source, "t.py", Settings.from_config(Config())).diagnostics == ()


def test_unused_noqa_position_and_fix_of_a_whole_line_directive() -> None:
    settings = Settings.from_config(Config(extend_select=("RPL901",)))
    source = "import torch\n    # noqa: RPL201\nx = 1\n"
    [finding] = lint_text(source, "t.py", settings).diagnostics
    assert (finding.code, finding.location.row, finding.location.column) == ("RPL901", 2, 5)
    assert finding.fix is not None and finding.fix.applicability is FixSafety.SAFE
    assert apply_edits(source, finding.fix.edits) == "import torch\nx = 1\n"
    assert fix_source(source, settings).text == "import torch\nx = 1\n"


def test_unused_noqa_ignores_codes_of_rules_that_did_not_run() -> None:
    # Only RPL901 and RPL203 run: the RPL201 entry may matter under another configuration.
    settings = Settings.from_config(Config(select=("RPL901", "RPL203")))
    source = "import torch\nx = 1  # noqa: RPL201, RPL203\n"
    [finding] = lint_text(source, "t.py", settings).diagnostics
    assert finding.code == "RPL901" and finding.fix is not None
    assert apply_edits(source, finding.fix.edits) == "import torch\nx = 1  # noqa: RPL201\n"


def test_ignore_noqa_turns_unused_noqa_off() -> None:
    settings = Settings.from_config(Config(extend_select=("RPL901",)))
    source = "import torch\nx = 1  # noqa: RPL201\n"
    assert [d.code for d in lint_text(source, "t.py", settings).diagnostics] == ["RPL901"]
    ignoring = Settings(settings.config, settings.selected, settings.target, ignore_noqa=True)
    assert lint_text(source, "t.py", ignoring).diagnostics == ()


def test_readme_adoption_commands_run_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code_blocks: Callable[[Path], dict[str, str]]
) -> None:
    """The README's adoption recipe on a copy of the example project, line by line."""
    shutil.copytree(ROOT / "examples", tmp_path / "src")
    block = code_blocks(ROOT / "README.md")[
        "repro-lint src/ --add-noqa                      # suppress every current finding, line by line"
    ]
    add, stale, remove, everything = (
        shlex.split(line, comments=True) for line in block.splitlines()
    )
    assert run(tmp_path, monkeypatch, *add[1:]).exit_code == 0
    assert run(tmp_path, monkeypatch, "src/").exit_code == 0, "every finding is suppressed"
    # The example project already carries one stale noqa: RPL901 finds it (and only RPL901).
    stale_json = run(tmp_path, monkeypatch, *stale[1:], "--output-format", "json")
    assert {d["code"] for d in json.loads(stale_json.stdout)} == {"RPL901"}
    assert run(tmp_path, monkeypatch, *remove[1:]).exit_code == 0
    assert run(tmp_path, monkeypatch, *stale[1:]).exit_code == 0
    assert run(tmp_path, monkeypatch, *everything[1:]).exit_code == 1
