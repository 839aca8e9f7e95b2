"""The flake8 plugin: repro-lint's rules as flake8 checks (``flake8 --select RPL``).

flake8 hands over each file's lines; the engine lints them with the settings of the nearest
``[tool.repro-lint]`` (so ``target-torch``, ``ignore`` and ``per-file-ignores`` apply as on the
command line) and the findings go back with 0-based columns, which flake8 prints 1-based.
Which findings show is flake8's to decide (``--select``, ``--extend-ignore``, its ``# noqa``).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from repro_lint import __version__
from repro_lint.config import load_config
from repro_lint.engine import lint_text
from repro_lint.settings import Settings

_STDIN = ("stdin", "-", "<stdin>")


@functools.lru_cache(maxsize=64)
def _settings(directory: Path) -> Settings:
    return Settings.from_config(load_config(directory))


class Plugin:
    """flake8's entry point ``RPL`` (a tree plugin: flake8 checks that its codes start so)."""

    name = "repro-lint"
    version = __version__

    def __init__(self, tree: ast.AST, lines: Sequence[str], filename: str) -> None:
        # flake8 passes what a plugin's parameters name; the tree is its own parse, ours is
        # libcst's, so only the lines are used.
        self.lines = lines
        self.filename = filename

    def run(self) -> Iterator[tuple[int, int, str, type[Any]]]:
        path = None if self.filename in _STDIN else Path(self.filename).resolve()
        settings = _settings(path.parent if path is not None else Path.cwd())
        result = lint_text("".join(self.lines), self.filename, settings, path)
        for d in result.diagnostics:
            yield d.location.row, d.location.column - 1, f"{d.code} {d.message}", type(self)
