"""The rule table's records (``repro_lint.rules``) and what a run imports because of them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TypedDict, cast

import pytest

from repro_lint import rules
from repro_lint.program import ProjectRule, SettledRule
from repro_lint.rules import table


def test_the_generated_index_is_current() -> None:
    # Run `python -m repro_lint.rules.table` after changing a rule's code, name, default,
    # kind or triggers.
    assert table.INDEX_PATH.read_text(encoding="utf-8") == table.index_source()


def test_each_record_describes_its_class() -> None:
    assert [info.CODE for info in rules.INFOS] == [rule.CODE for rule in table.ALL_RULES]
    for info, rule in zip(rules.INFOS, table.ALL_RULES, strict=True):
        assert info.load() is rule
        assert info.name == rule.name
        assert info.DEFAULT_ENABLED == rule.DEFAULT_ENABLED
        assert info.project == issubclass(rule, ProjectRule)
        assert info.settled == issubclass(rule, SettledRule)
        assert tuple(rule.TRIGGERS) == info.TRIGGERS
        assert info.TRIGGER_WORDS == rule.TRIGGER_WORDS
    assert rules.rule_for("rpl201") is rules.BY_CODE["RPL201"].load()
    assert rules.rule_for("cudnn-benchmark-enabled") is rules.rule_for("RPL201")
    assert rules.rule_for("RPL999") is None


# Runs the command line in a fresh interpreter and prints its output, its exit status and
# which of the heavy modules it imported.
_RUN = """
import contextlib, io, json, sys
from repro_lint.cli import run
sys.argv = ["repro-lint", "check", "--no-cache", "--output-format", "concise", *sys.argv[1:]]
out = io.StringIO()
code = None
with contextlib.redirect_stdout(out):
    try:
        run()
    except SystemExit as exit:
        code = exit.code
heavy = sorted(
    name for name in sys.modules
    if name == "libcst"
    or (name.startswith("repro_lint.rules.") and name != "repro_lint.rules._index")
    or name in ("repro_lint.program", "repro_lint.summary", "repro_lint.tree_pass")
)
print(json.dumps({"out": out.getvalue(), "code": code, "heavy": heavy}))
"""


class _Ran(TypedDict):
    out: str
    code: int | None
    heavy: list[str]


def _run(directory: Path, *args: str) -> _Ran:
    env = {**os.environ, "REPRO_LINT_NO_DAEMON": "1"}
    done = subprocess.run(
        [sys.executable, "-c", _RUN, *args],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return cast(_Ran, json.loads(done.stdout))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.repro-lint]\n")
    # Imports, so it could take part in a program; but no rule's trigger, no call at the
    # start of a line and no __main__ block: settled from its text.
    (tmp_path / "settings.py").write_text('import os\n\nDATA = os.path.join("data", "x")\n')
    (tmp_path / "train.py").write_text("import torch\n\ntorch.backends.cudnn.benchmark = True\n")
    return tmp_path


def test_a_run_whose_files_nothing_triggers_on_imports_no_rule_and_no_libcst(
    project: Path,
) -> None:
    for args in (["--force-exclude", "settings.py"], ["settings.py"]):
        ran = _run(project, *args)
        assert ran["code"] == 0
        assert ran["heavy"] == []


def test_a_file_a_rule_triggers_on_is_parsed_and_judged_as_before(project: Path) -> None:
    ran = _run(project, "--force-exclude", "settings.py", "train.py")
    assert ran["code"] == 1
    assert "train.py:3:1: RPL201" in ran["out"]
    assert "libcst" in ran["heavy"] and "repro_lint.tree_pass" in ran["heavy"]
    assert "repro_lint.rules.cudnn_benchmark_enabled" in ran["heavy"]
