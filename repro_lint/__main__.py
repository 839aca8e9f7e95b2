"""``python -m repro_lint``."""

from repro_lint.cli import run

if __name__ == "__main__":
    run()
