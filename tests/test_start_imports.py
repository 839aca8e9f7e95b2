"""What a check, and the helper it forks, import before they can work: not the modules only
some runs need (each costs a run after an edit a few milliseconds)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

# ``tempfile`` imports ``shutil`` and ``random``; ``shutil`` imports ``bz2`` and ``lzma``.
# Only --fix writes through a temporary file of tempfile's, ``clean`` and the cache's pruning
# remove trees, and only a TOML file needs its parser.
OPTIONAL = ("tempfile", "shutil", "random", "secrets", "bz2", "lzma", "tomllib", "tomli")

_HELPER = """
import json, sys
from pathlib import Path
from repro_lint.launch import _import_per_file_pass
_import_per_file_pass()
from repro_lint.config import Config
from repro_lint.engine import check_helper
handle = check_helper(Config(root=Path(".")), False)
handle(("file", "train.py", "train.py", False, False, False))
print(json.dumps(sorted(set(sys.argv[1:]) & set(sys.modules))))
"""

_CHECK = """
import contextlib, io, json, sys
from repro_lint.cli import run
optional = sys.argv[1:]
sys.argv = ["repro-lint", ".", "-q", "--output-format", "concise"]
code = None
with contextlib.redirect_stdout(io.StringIO()):
    try:
        run()
    except SystemExit as exit:
        code = exit.code
print(json.dumps([code, sorted(set(optional) & set(sys.modules))]))
"""


def _python(directory: Path, code: str, modules: tuple[str, ...] = OPTIONAL) -> object:
    """What ``code`` prints, run in a fresh interpreter in ``directory`` with ``modules`` as
    its arguments (the modules it is asked about)."""
    env = {**os.environ, "REPRO_LINT_NO_DAEMON": "1", "REPRO_LINT_NO_HELPER": "1"}
    done = subprocess.run(
        [sys.executable, "-c", code, *modules],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def test_a_helper_imports_and_lints_without_the_optional_modules(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("import torch\n\ntorch.backends.cudnn.benchmark = True\n")
    assert _python(tmp_path, _HELPER) == []


def test_checks_that_write_the_cache_and_the_record_import_none_of_them(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("import torch\n\ntorch.backends.cudnn.benchmark = True\n")
    # A cold run, then one after an edit: both write the cache and the run record.
    assert _python(tmp_path, _CHECK) == [1, []]
    script.write_text(script.read_text() + "# edited\n")
    assert _python(tmp_path, _CHECK) == [1, []]
    records = list((tmp_path / ".repro_lint_cache").glob("*/run-*.marshal"))
    assert len(records) == 1
    assert not list((tmp_path / ".repro_lint_cache").rglob(".tmp-*"))


def test_a_project_with_a_toml_file_still_reads_it(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.repro-lint]\nignore = ["RPL201"]\n')
    (tmp_path / "train.py").write_text("import torch\n\ntorch.backends.cudnn.benchmark = True\n")
    ran = _python(tmp_path, _CHECK)
    assert ran in ([0, ["tomllib"]], [0, ["tomli"]])


def test_the_per_file_pass_runs_the_catalog_rules_without_the_program_model(
    tmp_path: Path,
) -> None:
    # RPL401/RPL402 are settled by the project pass; linting a file for them (what a helper
    # does after an edit) needs only their base class, not ``repro_lint.program``.
    (tmp_path / "model.py").write_text(
        "import torch.nn.functional as F\n\n\n"
        "def up(x):\n    return F.interpolate(x, scale_factor=2, mode='bilinear')\n"
    )
    code = _HELPER.replace('"train.py", "train.py"', '"model.py", "model.py"')
    heavy = ("repro_lint.program", "repro_lint.rules.nondeterministic_op")
    assert _python(tmp_path, code, heavy) == ["repro_lint.rules.nondeterministic_op"]
