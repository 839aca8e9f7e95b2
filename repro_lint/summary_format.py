"""The constants of a module summary's format that the run reads without the collector (which
imports libcst): its version, and the keys of a deferred summary and of a module's code."""

from __future__ import annotations

from collections.abc import Mapping

SUMMARY_VERSION = 26
# The summary of a file not summarised yet: it cannot be an entry point and no per-file rule
# parsed it; the project phase loads its real summary if an entry point reaches it.
DEFERRED_KEY = "deferred"
DEFERRED: Mapping[str, bool] = {DEFERRED_KEY: True}
MODULE = ""  # key of a module's top-level code
MAIN = "<main>"  # key of its ``if __name__ == "__main__":`` block

__all__ = ["DEFERRED", "DEFERRED_KEY", "MAIN", "MODULE", "SUMMARY_VERSION"]
