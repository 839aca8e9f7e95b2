"""The console script (``launch.run``): what it sets up, and how a check's process ends."""

from __future__ import annotations

import dataclasses
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro_lint import dataclass_code, helper, launch
from repro_lint.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


class Ended(Exception):
    """``os._exit`` called (the code it was given)."""


class Events:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[object] = []
        monkeypatch.setenv(launch.ENV_OFF, "1")
        monkeypatch.setattr(dataclass_code, "install", self._install)
        monkeypatch.setattr("repro_lint.launch.os._exit", self._exit)

    def _install(self) -> Events:
        self.calls.append("install")
        return self

    def save(self) -> bool:
        self.calls.append("save")
        return True

    def _exit(self, code: int) -> None:
        self.calls.append(("exit", code))
        raise Ended(code)


@pytest.fixture
def events(monkeypatch: pytest.MonkeyPatch) -> Events:
    return Events(monkeypatch)


def _run(monkeypatch: pytest.MonkeyPatch, *args: str) -> None:
    monkeypatch.setattr(sys, "argv", ["repro-lint", *args])
    launch.run()


def test_a_check_ends_at_once_with_its_status_once_its_output_is_flushed(
    events: Events, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = io.StringIO()
    flushed: list[str] = []
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(out, "flush", lambda: flushed.append(out.getvalue()))
    with pytest.raises(Ended):
        _run(monkeypatch, "check", str(EXAMPLES), "--no-cache", "--output-format", "concise")
    # What was printed was flushed before the end; the stored code was saved; status 1.
    want = CliRunner().invoke(
        main, ["check", str(EXAMPLES), "--no-cache", "--output-format", "concise"]
    )
    assert flushed and flushed[-1] == want.stdout
    assert events.calls == ["install", "save", ("exit", 1)]


def test_other_commands_end_as_python_ends_a_process(
    events: Events, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as ended:
        _run(monkeypatch, "rules")
    assert ended.value.code in (0, None)
    assert "RPL101" in capsys.readouterr().out
    assert events.calls == ["install"]


def test_a_message_as_the_status_is_left_to_python(
    events: Events, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fails() -> None:
        raise SystemExit("error: a message")

    monkeypatch.setattr("repro_lint.cli.run", fails)
    with pytest.raises(SystemExit, match="a message"):
        _run(monkeypatch, "check", ".")
    assert events.calls == ["install"]


def test_a_stream_that_cannot_be_flushed_is_left_to_python(
    events: Events, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken() -> None:
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr("repro_lint.cli.run", lambda: sys.exit(1))
    monkeypatch.setattr(sys.stdout, "flush", broken)
    with pytest.raises(SystemExit) as ended:
        _run(monkeypatch, "check", ".")
    assert ended.value.code == 1
    assert events.calls == ["install"]


def test_a_check_in_a_process_of_its_own_prints_what_it_prints_in_process(
    tmp_path: Path,
) -> None:
    args = ["check", str(EXAMPLES), "--no-cache", "--output-format", "concise"]
    command = [sys.executable, "-c", "from repro_lint.launch import run; run()", *args]
    env = {"REPRO_LINT_NO_DAEMON": "1", "PATH": "", "PYTHONPATH": ":".join(sys.path)}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    want = CliRunner().invoke(main, args)
    assert (done.returncode, done.stdout) == (want.exit_code, want.stdout) == (1, want.stdout)
    # A reader that stops early: the flush fails, and Python's own exit ends the process.
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) as p:
        assert p.stdout is not None
        p.stdout.close()
        assert p.wait(timeout=120) != 0


def test_the_helper_is_forked_early_only_for_a_check_that_may_have_a_run_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run records are kept for checks over directories: a check that names files and no
    directory (a pre-commit hook's) forks no helper as it starts."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src").mkdir()
    (tmp_path / "a.py").write_text("x = 1\n")
    assert launch._may_have_a_record([])  # (the default, ".")
    assert launch._may_have_a_record(["src"])
    assert launch._may_have_a_record(["check", "--output-format", "concise"])
    assert launch._may_have_a_record(["a.py", "src"])
    assert not launch._may_have_a_record(["check", "--force-exclude", "a.py"])
    assert not launch._may_have_a_record(["--stdin-filename", "a.py", "-"])


def test_work_is_deferred_only_by_a_check_that_the_console_script_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    held: list[str] = []

    def hold() -> int:
        held.append("held")
        return -1

    # In process (a test's, an editor's): the caller writes now.
    assert launch._deferred is None
    assert not launch.defer(lambda: None, hold)
    # The console script's check, where no process may be forked.
    monkeypatch.setattr(launch, "_deferred", [])
    monkeypatch.setenv(helper.ENV_OFF, "1")
    assert not launch.defer(lambda: None, hold)
    assert held == [] and launch._deferred == []


# A check whose record takes a while to write, noting when it is written.
_SLOW_RECORD = """
import os, sys, time
from pathlib import Path
from repro_lint import run_cache
real = run_cache.save
def save(root, record, notes):
    time.sleep(float(os.environ["WRITE_SECONDS"]))
    real(root, record, notes)
    Path(os.environ["WRITTEN"]).write_text("written")
run_cache.save = save
from repro_lint.launch import run
sys.argv = ["repro-lint", *sys.argv[1:]]
run()
"""


def _check_writing_slowly(
    tmp_path: Path, *args: str, extra: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    """A console-script check (``_SLOW_RECORD``: its record takes 3 s to write) of a copy of
    the examples: what it printed, the copy, and the file that appears once the record is
    written."""
    project = tmp_path / "project"
    shutil.copytree(EXAMPLES, project, ignore=shutil.ignore_patterns(".repro_lint_cache"))
    written = tmp_path / "written"
    env = {
        "REPRO_LINT_NO_DAEMON": "1",
        "PATH": "",
        "PYTHONPATH": ":".join(sys.path),
        "WRITTEN": str(written),
        "WRITE_SECONDS": "3",
        **(extra or {}),
    }
    done = subprocess.run(
        [sys.executable, "-c", _SLOW_RECORD, *args],
        cwd=project,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    return done, project, written


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no process can be forked here")
def test_a_check_ends_before_its_record_is_written_and_the_next_run_waits_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = ["check", ".", "--output-format", "concise"]
    done, project, written = _check_writing_slowly(tmp_path, *args)
    monkeypatch.chdir(project)
    want = CliRunner().invoke(main, [*args, "--no-cache"])
    assert (done.returncode, done.stdout) == (want.exit_code, want.stdout) == (1, want.stdout)
    # The check printed its findings and ended; a process of its own writes the record, and
    # the check's output ended with the check (the pipes were not held open meanwhile).
    assert not written.exists()
    # The next run waits for it, and is answered from it.
    again = CliRunner().invoke(main, [*args, "-v"])
    assert written.exists()
    assert "answered from the run record" in again.stderr
    assert again.stdout == want.stdout


@pytest.mark.parametrize(
    ("option", "extra"),
    [("-v", {}), ("-q", {helper.ENV_OFF: "1"}), ("-q", {"CI": "true"})],
    ids=["-v", "REPRO_LINT_NO_HELPER", "in CI"],
)
def test_a_check_that_shows_its_notes_or_forks_nothing_writes_its_record_itself(
    tmp_path: Path, option: str, extra: dict[str, str]
) -> None:
    done, _, written = _check_writing_slowly(tmp_path, "check", ".", option, extra=extra)
    assert done.returncode == 1, done.stderr
    # Written before the check ended (left behind, it would appear 3 s later).
    assert written.exists()


def test_only_a_short_writing_is_left_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    from repro_lint.cli import DEFER_LINTED, _Shown, _writes_behind

    monkeypatch.delenv("CI", raising=False)
    shown = _Shown(frozenset(), None, False, True, False, False, False, False, 0.0, 0.0, False)
    assert _writes_behind(shown, False, 1)
    assert _writes_behind(shown, False, DEFER_LINTED)
    # A cold run's cache takes seconds to write: the next run would wait for it.
    assert not _writes_behind(shown, False, DEFER_LINTED + 1)
    assert not _writes_behind(shown, True, 1)  # (fixes)
    assert not _writes_behind(dataclasses.replace(shown, verbose=True), False, 1)
    for value, behind in (("true", False), ("1", False), ("false", True), ("", True)):
        monkeypatch.setenv("CI", value)
        assert _writes_behind(shown, False, 1) is behind
