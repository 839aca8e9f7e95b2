"""Run a script as ``__main__`` and keep a copy of everything it saves with ``torch.save``.

Used by ``repro-lint verify --run SCRIPT --twice`` in each of its fresh subprocesses:
``python -m repro_lint.verify.capture CAPTURE_DIR SCRIPT [ARGS...]``.
"""

from __future__ import annotations

import functools
import json
import os
import runpy
import sys
from pathlib import Path
from typing import Any


def _install(capture_dir: Path) -> None:
    import torch

    original = torch.save
    saves: list[dict[str, str]] = []

    @functools.wraps(original)
    def save(obj: Any, f: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(obj, f, *args, **kwargs)
        copy = capture_dir / f"save-{len(saves):04d}.pt"
        original(obj, copy)
        target = os.fspath(f) if isinstance(f, str | os.PathLike) else repr(f)
        saves.append({"target": target, "copy": copy.name})
        (capture_dir / "saves.json").write_text(json.dumps(saves), encoding="utf-8")
        return result

    torch.save = save


def main(argv: list[str]) -> None:
    if len(argv) < 2:
        sys.exit("usage: python -m repro_lint.verify.capture CAPTURE_DIR SCRIPT [ARGS...]")
    capture_dir, script = Path(argv[0]), argv[1]
    capture_dir.mkdir(parents=True, exist_ok=True)
    _install(capture_dir)
    sys.argv = [script, *argv[2:]]
    # The script's directory comes first on sys.path, as when it is run with `python SCRIPT`.
    sys.path.insert(0, str(Path(script).resolve().parent))
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
