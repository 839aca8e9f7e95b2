"""Throwaway projects for tests that lint several files together."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from pathlib import Path


def write(root: Path, files: Mapping[str, str], config: str = "") -> None:
    """A ``pyproject.toml`` (with ``config`` appended) and ``files`` (dedented) under ``root``."""
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "demo"\n{config}', encoding="utf-8", newline=""
    )
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8", newline="")
