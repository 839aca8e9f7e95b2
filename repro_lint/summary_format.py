"""The constants of a module summary's format that the run reads without the collector (which
imports libcst): its version, the keys of a deferred summary and of a module's code, and the
kinds of checkpoint content its checkpoint facts name (read by RPL109)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

SUMMARY_VERSION = 34
# The summary of a file not summarised yet: it cannot be an entry point and no per-file rule
# parsed it; the project phase loads its real summary if an entry point reaches it.
DEFERRED_KEY = "deferred"
DEFERRED: Mapping[str, bool] = {DEFERRED_KEY: True}
MODULE = ""  # key of a module's top-level code
MAIN = "<main>"  # key of its ``if __name__ == "__main__":`` block

# What a checkpoint save holds (``checkpoints.content``), weakest first: model weights
# alone, what only a resume needs (optimizer or scheduler state, counters), both (a whole
# training state); and the kinds a resume continues from.
CHECKPOINT_KINDS = ("weights", "resume", "full")
RESUMABLE = frozenset({"resume", "full"})


def strongest(kinds: Iterable[str | None]) -> str | None:
    """The strongest of some checkpoint contents (``CHECKPOINT_KINDS``), None for none."""
    known = [CHECKPOINT_KINDS.index(kind) for kind in kinds if kind is not None]
    return CHECKPOINT_KINDS[max(known)] if known else None


__all__ = [
    "CHECKPOINT_KINDS",
    "DEFERRED",
    "DEFERRED_KEY",
    "MAIN",
    "MODULE",
    "RESUMABLE",
    "SUMMARY_VERSION",
    "strongest",
]
