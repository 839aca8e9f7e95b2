"""The helper process a check forks to import the per-file pass ahead (``repro_lint.helper``),
and a run after an edit that it lints for: the same findings as without it."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from projects import HELPERS, TRAIN_WITH_HELPERS

from repro_lint import engine, launch
from repro_lint import helper as helper_module
from repro_lint.config import Config
from repro_lint.file_pass import lint_one
from repro_lint.helper import ENV_OFF, Helper, can_fork, fork_work, spare_core
from repro_lint.moved_lines import shift_prefix
from repro_lint.settings import Settings

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

needs_fork = pytest.mark.skipif(not can_fork(), reason="no helper can be forked here")
needs_two_cores = pytest.mark.skipif(
    not (can_fork() and spare_core()), reason="no process can be forked onto another core here"
)


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


def _ended(pid: int, seconds: float = 30) -> bool:
    """Whether the process ``pid`` (not a child of this one) ends within ``seconds``: gone,
    or a zombie waiting for whoever adopted it to reap it."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as stream:
                if stream.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        except OSError:
            return _gone(pid)
        time.sleep(0.01)
    return False


# A helper that waits for its work (``Helper.start_waiting``) finds these by name.
_WARMED: list[str] = []


def _warm() -> None:
    _WARMED.append("warm")


def _multiplier(factor: int) -> Callable[[Any], Any]:
    return lambda request: (request * factor, list(_WARMED))


def _forking() -> Callable[[Any], Any]:
    """A handler that forks work that never ends, and answers its process's id."""

    def handle(request: Any) -> Any:
        work = fork_work(lambda: time.sleep(300))
        assert work is not None
        return work.pid

    return handle


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
def test_requests_sent_ahead_are_answered_in_order_and_one_never_asked_for_is_dropped() -> None:
    helper = _started(_doubler)
    for request in (1, 2, 3):
        helper.send(request)
    assert helper.ask(2) == 4  # (the answer to 1 is read, and dropped)
    assert helper.ask(5) == 10  # (so is the one to 3; 5 is sent now)
    assert helper.answered == 2
    helper.send(6)
    helper.stop()  # (an answer not read yet does not hold it up)
    assert not helper.alive and _gone(helper.pid)
    assert helper.ask(6) is None


@needs_fork
def test_a_helper_that_waits_runs_its_imports_then_takes_its_work_by_name() -> None:
    helper = Helper.start_waiting(_warm)
    assert helper is not None and helper.waiting
    assert helper.ask(1) is None  # (no work yet: the check does it itself)
    assert helper.alive
    helper.prepare(__name__, "_multiplier", 3)
    assert not helper.waiting
    assert helper.ask(2) == (6, ["warm"])
    helper.prepare(__name__, "_multiplier", 5)  # (given once: ignored)
    assert helper.ask(1) == (3, ["warm"])
    helper.stop()


@needs_fork
def test_a_helper_given_work_it_cannot_make_answers_nothing() -> None:
    helper = Helper.start_waiting(_warm)
    assert helper is not None
    helper.prepare(__name__, "_no_such_function")
    assert helper.ask(1) is None
    assert not helper.alive and _gone(helper.pid)


@needs_fork
def test_the_helper_forked_as_the_process_starts_is_taken_once_or_dropped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(launch, "_early", None)
    launch.fork_early(_warm)
    taken = launch.take_early()
    assert taken is not None and taken.waiting
    assert launch.take_early() is None
    taken.prepare(__name__, "_multiplier", 2)
    assert taken.ask(4) == (8, ["warm"])
    taken.stop()
    launch.fork_early(_warm)
    early = launch._early
    assert early is not None
    launch.drop_early()
    assert not early.alive and _gone(early.pid)
    assert launch.take_early() is None
    launch.drop_early()  # (nothing left: harmless)


@needs_two_cores
def test_work_forked_returns_its_result_once_and_a_failure_says_so() -> None:
    work = fork_work(os.getpid)
    assert work is not None
    assert work.result() == (True, work.pid)
    assert work.result() == (False, None)
    failed = fork_work(lambda: 1 / 0)
    assert failed is not None
    assert failed.result() == (False, None)
    endless = fork_work(lambda: time.sleep(300))
    assert endless is not None
    endless.cancel()
    assert _gone(endless.pid)


@needs_two_cores
@pytest.mark.parametrize("how", ["stopped", "closed"])
def test_work_an_idle_helper_forked_ends_with_it_and_is_reaped_by_it(how: str) -> None:
    helper = _started(_forking)
    pid = helper.ask("fork")
    assert isinstance(pid, int) and not _ended(pid, 0.05)
    if how == "stopped":
        helper.stop()  # (idle: told to end, it ends its work first)
    else:
        os.close(helper._requests)  # (as when the check exits)
        os.waitpid(helper.pid, 0)
        os.close(helper._answers)
        helper._requests = helper._answers = -1
    assert _gone(pid)  # (reaped by the helper: not left for whoever adopts it)


def _forking_and_busy(record: str) -> Callable[[Any], Any]:
    """A handler that forks work that never ends, notes its process's id in ``record``, and
    never answers."""

    def handle(request: Any) -> Any:
        work = fork_work(lambda: time.sleep(300))
        assert work is not None
        Path(record).write_text(str(work.pid))
        time.sleep(300)

    return handle


@needs_two_cores
def test_work_a_busy_helper_forked_is_killed_with_it(tmp_path: Path) -> None:
    record = tmp_path / "pid"
    helper = _started(lambda: _forking_and_busy(str(record)))
    helper.send("fork")
    deadline = time.monotonic() + 30
    while not record.exists() or not record.read_text():
        assert time.monotonic() < deadline
        time.sleep(0.01)
    pid = int(record.read_text())
    started = time.monotonic()
    helper.stop()  # (busy: killed at once, with its process group)
    assert time.monotonic() - started < 0.5
    assert _gone(helper.pid) and _ended(pid)


@needs_two_cores
def test_the_lint_behind_the_shift_prefix_is_begun_with_the_file_and_taken_for_that_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "model.py"
    text = (EXAMPLES / "model.py").read_text()
    path.write_text(text)
    settings = Settings.from_config(Config())
    handle = engine.helper_handler(lambda: settings)
    handle(("file", "model.py", str(path), False, True, False))
    shifted = shift_prefix(text) + text
    expected = lint_one(shifted, "model.py", settings, path)
    linted: list[str] = []

    def counted(text: str, *args: Any, **kwargs: Any) -> Any:
        if text.startswith(shift_prefix(text)):  # (not the file's own lint)
            linted.append(text)
        return lint_one(text, *args, **kwargs)

    monkeypatch.setattr(engine, "lint_one", counted)
    assert handle(("text", shifted, "model.py", str(path))) == expected
    assert linted == []  # (the lint begun with the file's answered)
    # Another text (the file changed since) is linted here.
    handle(("file", "model.py", str(path), False, True, False))
    other = shift_prefix(text) + text + "\n"
    assert handle(("text", other, "model.py", str(path))) == lint_one(
        other, "model.py", settings, path
    )
    assert linted == [other]
    # None is begun for a file whose parse is not kept (not one linted again after an edit).
    handle(("file", "model.py", str(path), False, False, False))
    assert handle(("text", shifted, "model.py", str(path))) == expected
    assert linted == [other, shifted]


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


def _imported_libcst(done: subprocess.CompletedProcess[str]) -> bool:
    """Whether the check itself imported libcst (``-X importtime``; a helper's imports are
    not written to the check's streams)."""
    lines = done.stderr.splitlines()
    return any(
        line.startswith("import time:") and line.rsplit("|", 1)[-1].strip() == "libcst"
        for line in lines
    )


@needs_fork
@pytest.mark.parametrize("pass_again", [False, True], ids=["after a cold run", "after a pass"])
def test_a_module_edited_is_summarised_by_the_helper_not_the_check(
    tmp_path: Path, pass_again: bool
) -> None:
    """A module the program reads whole, parsed for no rule of its own (its summary is
    deferred): after an edit, the helper summarises it as it lints it, and the check takes
    that summary for the project pass instead of importing libcst to make it itself. So too
    after another file's edit made the project pass run again (``engine._still_whole``)."""
    (tmp_path / "train.py").write_text(TRAIN_WITH_HELPERS)
    helpers = tmp_path / "helpers.py"
    helpers.write_text(HELPERS)
    args = (".", "--output-format", "concise", "-v")
    first = _check(tmp_path, *args)
    assert "consumed at helpers.py:5" in first.stdout
    if pass_again:
        train = tmp_path / "train.py"
        train.write_text(train.read_text() + "\n\ndef added():\n    return 1\n")
        first = _check(tmp_path, *args)
        assert "project pass run" in first.stderr
    helpers.write_text(helpers.read_text() + "# appended\n")
    env = {"REPRO_LINT_NO_DAEMON": "1", "PYTHONPATH": ":".join(sys.path)}
    script = "from repro_lint.launch import run; run()"
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", script, "check", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.stdout == first.stdout
    assert "linted 1 of 2 files (by a helper process)" in done.stderr
    assert "project pass reused" in done.stderr
    assert not _imported_libcst(done), done.stderr


@pytest.mark.parametrize("pass_again", [False, True], ids=["after a cold run", "after a pass"])
def test_a_module_edited_is_summarised_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pass_again: bool
) -> None:
    """Without a helper too, the run after an edit summarises such a module as it lints it,
    and the project pass's loader takes that summary rather than linting the file again.
    So too after an edit elsewhere made the project pass run again: that pass had the
    module's whole summary from the cache (the result the loader stored), not from the
    loader, and its record still says the module is read whole."""
    from repro_lint import cli, file_pass, project_pass

    (tmp_path / "train.py").write_text(TRAIN_WITH_HELPERS)
    helpers = tmp_path / "helpers.py"
    helpers.write_text(HELPERS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(ENV_OFF, "1")
    monkeypatch.setenv("REPRO_LINT_NO_DAEMON", "1")

    def check() -> tuple[object, str]:
        monkeypatch.setattr(sys, "argv", ["repro-lint", ".", "--output-format", "concise"])
        out = io.StringIO()
        with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as ended:
            cli.run()
        return ended.value.code, out.getvalue()

    first = check()
    if pass_again:
        train = tmp_path / "train.py"
        train.write_text(train.read_text() + "\n\ndef added():\n    return 1\n")
        first = check()
    loaded: list[str] = []
    summarise = file_pass.lint_one

    def counted(text: str, display: str, *args: Any, **kwargs: Any) -> Any:
        loaded.append(display)
        return summarise(text, display, *args, **kwargs)

    monkeypatch.setattr(project_pass, "lint_one", counted)
    helpers.write_text(helpers.read_text() + "# appended\n")
    assert check() == first
    assert loaded == []
