"""Run a script as ``__main__`` under the recorder, in a fresh process of its own.

Used by ``repro-lint verify --run SCRIPT --twice`` for each of its runs:
``python -m repro_lint.verify.capture CAPTURE_DIR SCRIPT [ARGS...]``, where
``CAPTURE_DIR/options.json`` holds the run's options. The trace, the copies of saved tensors
and the op-level trace are written to CAPTURE_DIR. The script's own output and exit status are
kept; an exception it raises is printed as Python would print it and ends the run with
status 1.
"""

from __future__ import annotations

import json
import runpy
import sys
import traceback
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        sys.stderr.write(
            "usage: python -m repro_lint.verify.capture CAPTURE_DIR SCRIPT [ARGS...]\n"
        )
        return 2
    capture_dir, script = Path(argv[0]), argv[1]
    capture_dir.mkdir(parents=True, exist_ok=True)
    # Imported here so that a broken torch fails the run with its own message.
    from repro_lint.verify.optrace import OpTrace
    from repro_lint.verify.recorder import Options, Recorder, Stop
    from repro_lint.verify.trace import error_text

    settings = capture_dir / "options.json"
    options = (
        Options.from_json(json.loads(settings.read_text(encoding="utf-8")))
        if settings.exists()
        else Options()
    )
    recorder = Recorder(capture_dir, options)
    recorder.script = str(Path(script).resolve())
    recorder.install()
    if options.locate is not None:
        recorder.window = OpTrace(recorder, options.locate, options.locate_initialisation)
        if options.locate <= 1 or options.locate_initialisation is not None:
            recorder.window.open()
    sys.argv = [script, *argv[2:]]
    # The script's directory comes first on sys.path, as when it is run with `python SCRIPT`.
    sys.path.insert(0, str(Path(script).resolve().parent))
    stopped: str | None = None
    error: str | None = None
    exit_status: int | str | None = None
    status = 0
    try:
        runpy.run_path(script, run_name="__main__")
    except Stop as stop:
        stopped = stop.reason
    except SystemExit as exit_:
        code = exit_.code
        exit_status = code if code is None or isinstance(code, int | str) else str(code)
        if isinstance(code, str):
            sys.stderr.write(code + "\n")
        status = code if isinstance(code, int) else (0 if code is None else 1)
    except BaseException as exc:  # the user's script failed: reported, with what was recorded
        error = error_text(exc, recorder.files)
        traceback.print_exc()
        status = 130 if isinstance(exc, KeyboardInterrupt) else 1
    finally:
        recorder.finish(stopped, error, exit_status)
    sys.stdout.flush()
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
