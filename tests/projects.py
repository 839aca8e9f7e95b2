"""Throwaway projects for tests that lint several files together."""

from __future__ import annotations

import json
import os
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

# An entry point and the module it builds its model with: the module names no rule's trigger
# (its summary is deferred by the per-file pass), and the program reads it whole.
TRAIN_WITH_HELPERS = """import torch

from helpers import build_model


def main():
    model = build_model()
    print(model(torch.randn(4, 3)))


if __name__ == "__main__":
    main()
"""
HELPERS = "import torch.nn as nn\n\n\ndef build_model():\n    return nn.Linear(3, 2)\n"


def write(root: Path, files: Mapping[str, str], config: str = "") -> None:
    """A ``pyproject.toml`` (with ``config`` appended) and ``files`` (dedented) under ``root``."""
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "demo"\n{config}', encoding="utf-8", newline=""
    )
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8", newline="")


def relative_json(text: str, root: Path | None = None) -> Any:
    """The findings of a JSON report with their file names (absolute, as ruff's) relative to
    ``root`` (default: the working directory), so tests can compare them with short names."""
    base = Path.cwd() if root is None else root
    found = json.loads(text)
    for finding in found if isinstance(found, list) else ():
        finding["filename"] = _relative(finding["filename"], base)
        for edit in (finding.get("fix") or {}).get("edits", ()):
            if "filename" in edit:
                edit["filename"] = _relative(edit["filename"], base)
    return found


def _relative(name: str, base: Path) -> str:
    path = Path(name)
    if not path.is_absolute():
        return name
    return Path(os.path.relpath(path, base)).as_posix()
