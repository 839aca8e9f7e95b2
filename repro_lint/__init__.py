"""repro-lint: find reproducibility hazards in PyTorch training code, and fix them."""

from __future__ import annotations

__version__ = "0.1.0"

# (Not typing's: importing typing is a third of what the daemon's client imports.)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from repro_lint.config import Config
    from repro_lint.diagnostics import Diagnostic, FileResult
    from repro_lint.engine import lint_paths, lint_source

__all__ = ["Config", "Diagnostic", "FileResult", "__version__", "lint_paths", "lint_source"]

_LAZY = {
    "Config": "repro_lint.config",
    "Diagnostic": "repro_lint.diagnostics",
    "FileResult": "repro_lint.diagnostics",
    "lint_paths": "repro_lint.engine",
    "lint_source": "repro_lint.engine",
}


def __getattr__(name: str) -> Any:
    # Importing the package stays cheap (the CLI and the verifier import submodules directly).
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'repro_lint' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
