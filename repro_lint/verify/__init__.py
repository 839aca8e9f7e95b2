"""Runtime verifier: runs flagged ops and whole scripts with torch. The only code that imports
torch, and only when called (``pip install "repro-lint[verify]"``)."""

from __future__ import annotations

import importlib.util
from types import ModuleType

INSTALL_HINT = 'pip install "repro-lint[verify]"'


class VerifierUnavailable(Exception):
    """torch is not installed (or cannot be imported); the CLI exits 2 with this message."""


def torch_installed() -> None:
    """Check that torch is installed, without importing it."""
    if importlib.util.find_spec("torch") is None:
        raise VerifierUnavailable(f"the verifier needs torch: {INSTALL_HINT}")


def require_torch() -> ModuleType:
    """Import torch, or explain how to get it."""
    if importlib.util.find_spec("torch") is None:
        raise VerifierUnavailable(f"the verifier needs torch: {INSTALL_HINT}")
    try:
        import torch
    except Exception as exc:  # a broken install raises all sorts of errors
        raise VerifierUnavailable(f"torch is installed but cannot be imported: {exc}") from exc
    return torch
