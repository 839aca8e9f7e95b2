"""``python -m repro_lint``."""

import os
import sys

# `python -m` puts the current directory first on sys.path, and the current directory is
# often the tree being linted: nothing in it may be imported (a planted `libcst/` or `torch/`
# would run). repro_lint itself is already loaded; its dependencies come from site-packages.
if sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

from repro_lint.launch import run

if __name__ == "__main__":
    run()
