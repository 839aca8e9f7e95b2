"""The helper process a check forks to import the per-file pass ahead (``repro_lint.helper``),
and a run after an edit that it lints for: the same findings as without it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from repro_lint import helper as helper_module
from repro_lint.helper import ENV_OFF, Helper, can_fork

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

needs_fork = pytest.mark.skipif(not can_fork(), reason="no helper can be forked here")


def _started(prepare: Callable[[], Callable[[Any], Any]]) -> Helper:
    helper = Helper.start(prepare)
    assert helper is not None
    return helper


def _doubler() -> Callable[[Any], Any]:
    return lambda request: request * 2


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@needs_fork
def test_answers_each_request_then_stops_and_is_reaped() -> None:
    helper = _started(_doubler)
    assert [helper.ask(n) for n in (1, "ab", [3])] == [2, "abab", [3, 3]]
    assert helper.answered == 3
    helper.stop()
    assert not helper.alive and _gone(helper.pid)
    assert helper.ask(1) is None  # (stopped: the check does the work itself)
    helper.stop()  # (twice is harmless)


@needs_fork
def test_a_request_that_fails_stops_the_helper() -> None:
    def prepare() -> Callable[[Any], Any]:
        def handle(request: Any) -> Any:
            if request == "boom":
                raise RuntimeError("boom")
            return request

        return handle

    helper = _started(prepare)
    assert helper.ask("fine") == "fine"
    assert helper.ask("boom") is None
    assert not helper.alive and _gone(helper.pid)
    assert helper.answered == 1


@needs_fork
def test_a_helper_whose_imports_fail_answers_nothing() -> None:
    def prepare() -> Callable[[Any], Any]:
        raise ImportError("not installed")

    helper = _started(prepare)
    assert helper.ask(1) is None
    assert not helper.alive


@needs_fork
def test_a_helper_that_does_not_answer_in_time_is_given_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def prepare() -> Callable[[Any], Any]:
        time.sleep(60)
        return _doubler()

    monkeypatch.setattr(helper_module, "PATIENCE_SECONDS", 0.2)
    helper = _started(prepare)
    started = time.monotonic()
    assert helper.ask(1) is None
    assert time.monotonic() - started < 30
    assert not helper.alive and _gone(helper.pid)


@needs_fork
def test_the_helper_never_writes_to_the_checks_streams(capfd: pytest.CaptureFixture[str]) -> None:
    def prepare() -> Callable[[Any], Any]:
        print("imported", flush=True)
        print("warning", file=sys.stderr, flush=True)

        def handle(request: Any) -> Any:
            print("handled", flush=True)
            os.write(2, b"raw\n")
            return request

        return handle

    print("before", end="")  # (buffered in this process when the helper is forked)
    helper = _started(prepare)
    assert helper.ask(7) == 7
    helper.stop()
    out, err = capfd.readouterr()
    assert (out, err) == ("before", "")


@needs_fork
def test_the_helper_ends_when_the_check_closes_its_end() -> None:
    helper = _started(_doubler)
    assert helper.ask(2) == 4
    os.close(helper._requests)  # (as when the check exits)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        pid, status = os.waitpid(helper.pid, os.WNOHANG)
        if pid:
            assert os.waitstatus_to_exitcode(status) == 0
            break
        time.sleep(0.01)
    else:
        pytest.fail("the helper did not end")
    os.close(helper._answers)
    helper._requests = helper._answers = -1


def test_no_helper_when_switched_off_or_with_other_threads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(ENV_OFF, "1")
    assert not can_fork()
    assert Helper.start(_doubler) is None
    monkeypatch.delenv(ENV_OFF)
    import threading

    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert not can_fork()
    finally:
        stop.set()
        thread.join()


def _check(project: Path, *args: str, helper: bool = True) -> subprocess.CompletedProcess[str]:
    env = {
        "REPRO_LINT_NO_DAEMON": "1",
        "PATH": "",
        "PYTHONPATH": ":".join(sys.path),
        "PYTHONHASHSEED": "0",
    }
    if not helper:
        env[ENV_OFF] = "1"
    command = [sys.executable, "-c", "from repro_lint.launch import run; run()", "check", *args]
    return subprocess.run(
        command, cwd=project, capture_output=True, text=True, env=env, timeout=300
    )


@needs_fork
@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda text: "# a line on top\n" + text, id="a line inserted at the top"),
        pytest.param(lambda text: text + "# appended\n", id="a comment appended"),
        pytest.param(lambda text: text + "\n\ndef added():\n    return 1\n", id="code added"),
        pytest.param(lambda text: text + "\ndef broken(:\n", id="a syntax error"),
    ],
)
def test_a_run_after_an_edit_prints_the_same_with_and_without_the_helper(
    tmp_path: Path, edit: Callable[[str], str]
) -> None:
    runs = {}
    for helper in (True, False):
        project = tmp_path / ("helped" if helper else "alone")
        shutil.copytree(EXAMPLES, project, ignore=shutil.ignore_patterns(".repro_lint_cache"))
        args = (".", "--output-format", "concise", "-v")
        first = _check(project, *args, helper=helper)
        assert first.returncode == 1, first.stderr
        model = project / "model.py"
        model.write_text(edit(model.read_text()))
        runs[helper] = _check(project, *args, helper=helper)
    helped, alone = runs[True], runs[False]
    assert (helped.returncode, helped.stdout) == (alone.returncode, alone.stdout)
    assert "model.py" in helped.stdout
    assert "linted 1 of 6 files (by a helper process)" in helped.stderr
    assert "linted 1 of 6 files (the others" in alone.stderr


def test_a_process_that_goes_on_after_the_command_forks_no_helper_later(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``cli.run`` marks its process as one run while the command runs, and only then: a
    test, or any caller that goes on, checks in process afterwards without a helper."""
    from repro_lint import cli

    seen = []
    monkeypatch.setattr(cli, "main", lambda **_: seen.append(cli._STANDALONE))
    cli.run()
    assert seen == [True]
    assert cli._STANDALONE is False
