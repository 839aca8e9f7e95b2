"""The daemon: checks handed to it answer exactly as in a process of their own; only this
user's private directory holds its socket; it stops when asked, when idle, and when the code
changes; what it cannot run, the caller runs."""

from __future__ import annotations

import gc
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from repro_lint import daemon as server
from repro_lint import launch
from repro_lint.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

pytestmark = pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="no Unix sockets")


def _environment(directory: Path, **extra: str) -> dict[str, str]:
    environment = {k: v for k, v in os.environ.items() if k != launch.ENV_OFF}
    environment[launch.ENV_DIRECTORY] = str(directory)
    environment["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), environment.get("PYTHONPATH")) if p
    )
    environment.update(extra)
    return environment


def _repro(
    args: list[str], cwd: Path, environment: dict[str, str], stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "repro_lint", *args],
        cwd=cwd,
        env=environment,
        input=stdin,
        capture_output=True,
        timeout=300,
    )


def _commands_run(environment: dict[str, str]) -> int:
    status = _repro(["daemon", "status"], ROOT, environment)
    assert status.returncode == 0, status
    found = re.search(rb"(\d+) checks run", status.stdout)
    assert found is not None, status.stdout
    return int(found.group(1))


@pytest.fixture
def socket_directory() -> Iterator[Path]:
    # Short: a Unix socket's path has room for about a hundred bytes.
    base = Path(tempfile.mkdtemp(prefix="rl-"))
    try:
        yield base / "daemon"
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def running(socket_directory: Path) -> Iterator[dict[str, str]]:
    environment = _environment(socket_directory)
    started = _repro(["daemon", "start", "--idle-timeout", "300"], ROOT, environment)
    assert started.returncode == 0, started
    assert b"daemon started" in started.stdout
    try:
        yield environment
    finally:
        _repro(["daemon", "stop"], ROOT, environment)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    target = tmp_path / "project"
    shutil.copytree(EXAMPLES, target)
    return target


# -- the client: what it hands over --------------------------------------------------------


def test_the_other_commands_are_the_cli_s() -> None:
    assert set(main.commands) - {"check"} == launch.OTHER_COMMANDS


@pytest.mark.parametrize(
    ("args", "handed"),
    [
        ([], True),
        (["src/"], True),
        (["check", "--fix", "a.py"], True),
        (["--select", "RPL201", "."], True),
        (["-"], False),
        (["check", "--stdin-filename", "a.py", "-"], False),
        (["--stdin-filename=a.py"], False),
        (["verify", "a.py"], False),
        (["server"], False),
        (["daemon", "status"], False),
        (["--version"], False),
        (["-h"], False),
    ],
)
def test_only_checks_that_do_not_read_stdin_are_handed_over(
    args: list[str], handed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(launch.ENV_OFF, raising=False)
    assert launch.forwardable(args) is handed


def test_the_switch_keeps_every_command_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(launch.ENV_OFF, "1")
    assert not launch.forwardable(["src/"])


def test_a_socket_directory_must_be_this_user_s_alone(tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    assert launch.directory_problem(str(private)) is None
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o755)
    assert "open to other users" in (launch.directory_problem(str(shared)) or "")
    link = tmp_path / "link"
    link.symlink_to(private)
    assert "not a directory" in (launch.directory_problem(str(link)) or "")
    assert launch.directory_problem(str(tmp_path / "missing")) is not None


def test_without_a_daemon_nothing_is_handed_over(
    socket_directory: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(launch.ENV_DIRECTORY, str(socket_directory))
    assert launch.forward(["."]) is None
    # A dead daemon's socket: refused, and the caller runs the check.
    socket_directory.mkdir(mode=0o700)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(launch.socket_path())
    dead.close()
    assert launch.forward(["."]) is None


# -- the daemon, end to end ----------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["."],
        ["--output-format", "json", "."],
        ["--output-format", "sarif", "train.py"],
        ["--statistics", "--exit-zero", "."],
        ["--diff", "."],
        ["--select", "RPL999", "."],  # a configuration error: exit 2 with the reason
        ["missing.py"],
        ["-v", "."],
    ],
)
def test_a_check_answers_as_in_its_own_process(
    args: list[str], running: dict[str, str], project: Path
) -> None:
    before = _commands_run(running)
    handed = _repro(args, project, running)
    assert _commands_run(running) == before + 1, "the daemon did not run it"
    alone = _repro(args, project, {**running, launch.ENV_OFF: "1"})
    assert _commands_run(running) == before + 1
    assert handed.returncode == alone.returncode
    # -v notes the cache's state (a record found or not), which the first run changes.
    if "-v" not in args:
        assert handed.stdout == alone.stdout
        assert handed.stderr == alone.stderr
    assert handed.stdout == _repro(args, project, running).stdout


def test_a_fix_through_the_daemon_writes_what_a_fix_alone_writes(
    running: dict[str, str], project: Path, tmp_path: Path
) -> None:
    twin = tmp_path / "twin"
    shutil.copytree(project, twin)
    handed = _repro(["--fix", "--show-fixes", "."], project, running)
    alone = _repro(["--fix", "--show-fixes", "."], twin, {**running, launch.ENV_OFF: "1"})
    assert (handed.returncode, handed.stdout) == (alone.returncode, alone.stdout)
    for path in sorted(twin.rglob("*.py")):
        mine = project / path.relative_to(twin)
        assert mine.read_bytes() == path.read_bytes(), path.name
    assert any(
        (EXAMPLES / p.relative_to(twin)).read_bytes() != p.read_bytes() for p in twin.rglob("*.py")
    ), "nothing was fixed: the comparison proves nothing"


def test_a_check_runs_in_the_caller_s_directory(running: dict[str, str], project: Path) -> None:
    alone = {**running, launch.ENV_OFF: "1"}
    before = _commands_run(running)
    from_inside = _repro(["train.py"], project, running)
    from_above = _repro(["project/train.py"], project.parent, running)
    assert _commands_run(running) == before + 2
    assert from_inside.stdout == _repro(["train.py"], project, alone).stdout
    assert from_above.stdout == _repro(["project/train.py"], project.parent, alone).stdout
    assert b"project/train.py" not in from_inside.stdout
    assert b"project/train.py" in from_above.stdout


def test_a_check_of_stdin_is_not_handed_over(running: dict[str, str], project: Path) -> None:
    before = _commands_run(running)
    text = (project / "train.py").read_bytes()
    handed = _repro(["--stdin-filename", "train.py", "-"], project, running, stdin=text)
    assert _commands_run(running) == before
    assert handed.returncode == 1 and b"RPL" in handed.stdout


def test_start_twice_stop_and_status(running: dict[str, str]) -> None:
    again = _repro(["daemon", "start"], ROOT, running)
    assert again.returncode == 0 and b"already running" in again.stdout
    stopped = _repro(["daemon", "stop"], ROOT, running)
    assert b"daemon stopped" in stopped.stdout
    path = Path(running[launch.ENV_DIRECTORY])
    assert not list(path.glob("*.sock"))
    status = _repro(["daemon", "status"], ROOT, running)
    assert status.returncode == 1 and b"no repro-lint daemon" in status.stdout
    assert b"no repro-lint daemon" in _repro(["daemon", "stop"], ROOT, running).stdout


def test_an_idle_daemon_stops_and_takes_its_socket(socket_directory: Path) -> None:
    environment = _environment(socket_directory)
    started = _repro(["daemon", "start", "--idle-timeout", "1"], ROOT, environment)
    assert started.returncode == 0, started
    deadline = time.monotonic() + 30
    while list(socket_directory.glob("*.sock")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not list(socket_directory.glob("*.sock"))
    assert _repro(["daemon", "status"], ROOT, environment).returncode == 1


def test_a_directory_open_to_others_is_refused(socket_directory: Path, project: Path) -> None:
    socket_directory.mkdir()
    socket_directory.chmod(0o755)
    environment = _environment(socket_directory)
    started = _repro(["daemon", "start"], ROOT, environment)
    assert started.returncode == 2
    assert b"open to other users" in started.stderr
    assert not list(socket_directory.iterdir())
    # The check itself still runs, in its own process.
    checked = _repro(["."], project, environment)
    assert checked.returncode == 1 and b"RPL" in checked.stdout


# -- the daemon's side, in this process ------------------------------------------------------


def _request(args: list[str], cwd: Path) -> bytes:
    request = {
        "protocol": launch.PROTOCOL,
        "argv": args,
        "cwd": str(cwd),
        "env": dict(os.environ),
        "umask": 0o022,
        "tty": [False, False],
        "encoding": [["utf-8", "strict"], ["utf-8", "strict"]],
    }
    return repr(request).encode()


def _answers(ours: socket.socket) -> list[tuple[bytes, bytes]]:
    frames = []
    while (frame := launch.receive_frame(ours)) is not None:
        frames.append(frame)
    return frames


def test_a_daemon_whose_code_changed_refuses_and_stops(project: Path) -> None:
    daemon = server.Daemon(idle_timeout=60)
    daemon.fingerprint = "a build that is not on disk"
    ours, theirs = socket.socketpair()
    with ours, theirs:
        launch.send_frame(ours, launch.REQUEST, _request(["."], project))
        assert daemon.answer(theirs) is False
        theirs.close()
        assert _answers(ours) == [(launch.REFUSED, b"repro-lint's code changed")]
    assert daemon.commands == 0


def test_a_command_leaves_the_process_as_it_found_it(project: Path, tmp_path: Path) -> None:
    daemon = server.Daemon(idle_timeout=60)
    here = os.getcwd()
    environment = dict(os.environ)
    streams = (sys.stdout, sys.stderr, sys.stdin)
    ours, theirs = socket.socketpair()
    with ours, theirs:
        launch.send_frame(ours, launch.REQUEST, _request(["--no-cache", "train.py"], project))
        try:
            assert daemon.answer(theirs) is True
        finally:
            gc.unfreeze()  # (the daemon freezes what it keeps between commands)
        frames = _answers(ours)
    assert (os.getcwd(), dict(os.environ)) == (here, environment)
    assert (sys.stdout, sys.stderr, sys.stdin) == streams
    assert frames[-1] == (launch.EXIT, b"1")
    printed = b"".join(payload for kind, payload in frames if kind == launch.STDOUT)
    alone = CliRunner().invoke(main, ["--no-cache", str(project / "train.py")])
    assert printed.decode().replace(str(project) + os.sep, "") == alone.stdout.replace(
        str(project) + os.sep, ""
    )
    assert daemon.commands == 1


def test_the_peer_of_a_connection_is_this_user() -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        assert server._peer_is_this_user(theirs)


def test_the_readme_s_local_hook_runs_what_the_published_hook_runs(
    code_blocks: Callable[[Path], dict[str, str]],
) -> None:
    block = code_blocks(ROOT / "README.md")[
        "# .pre-commit-config.yaml (a local hook: the repro-lint, and the daemon, of your "
        "environment)"
    ]
    [local] = yaml.safe_load(block)["repos"][0]["hooks"]
    published = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    [hook] = [h for h in published if h["id"] == local["id"]]
    assert local["language"] == "system"
    for key in ("entry", "types_or", "require_serial"):
        assert local[key] == hook[key], key


def test_between_commands_the_daemon_forgets_what_it_learnt_of_the_file_system(
    project: Path,
) -> None:
    from repro_lint import cache, files, summary

    summary.tree_packages(project / "train.py")
    files.module_name(project / "train.py")
    cache.sealing_key()
    assert summary._tree_packages.cache_info().currsize
    assert summary._project_root.cache_info().currsize
    assert files._is_package_dir.cache_info().currsize
    server._forget()
    assert summary._tree_packages.cache_info().currsize == 0
    assert summary._project_root.cache_info().currsize == 0
    assert files._is_package_dir.cache_info().currsize == 0
    assert cache._KEY is None


def _pid(environment: dict[str, str]) -> int:
    status = _repro(["daemon", "status"], ROOT, environment)
    found = re.search(rb"pid (\d+)", status.stdout)
    assert status.returncode == 0 and found is not None, status
    return int(found.group(1))


def test_sigterm_stops_the_daemon_and_takes_its_socket(running: dict[str, str]) -> None:
    os.kill(_pid(running), signal.SIGTERM)
    directory = Path(running[launch.ENV_DIRECTORY])
    deadline = time.monotonic() + 30
    while list(directory.glob("*.sock")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not list(directory.glob("*.sock"))


def test_two_starts_at_once_leave_one_daemon(socket_directory: Path) -> None:
    environment = _environment(socket_directory)
    command = [sys.executable, "-m", "repro_lint", "daemon", "start", "--idle-timeout", "60"]
    starts = [
        subprocess.Popen(command, cwd=ROOT, env=environment, stdout=subprocess.PIPE)
        for _ in range(2)
    ]
    try:
        outputs = [start.communicate(timeout=120)[0] for start in starts]
        assert [start.returncode for start in starts] == [0, 0]
        pid = _pid(environment)
        assert sum(f"(pid {pid})".encode() in output for output in outputs) == 2, outputs
        assert len([o for o in outputs if b"daemon started" in o]) == 1, outputs
    finally:
        _repro(["daemon", "stop"], ROOT, environment)


def test_a_prepared_record_is_used_once_and_only_while_its_file_is_the_same(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from repro_lint import cache, run_cache

    monkeypatch.setattr(cache, "_KEY", None)  # (put back as it was, whatever happens below)
    monkeypatch.setattr(run_cache, "_resident", True)
    monkeypatch.setattr(run_cache, "_used", set())
    monkeypatch.setattr(run_cache, "_prepared", {})
    decoded: list[str] = []
    load = run_cache._load

    def counted(root: Path, key: str, notes: list[str]) -> run_cache.RunRecord | None:
        decoded.append(key)
        return load(root, key, notes)

    monkeypatch.setattr(run_cache, "_load", counted)
    runner = CliRunner()
    first = runner.invoke(main, [str(project)])
    run_cache.prepare()
    [path] = run_cache._prepared
    decoded.clear()
    second = runner.invoke(main, [str(project)])
    assert (second.exit_code, second.stdout) == (first.exit_code, first.stdout)
    assert decoded == [], "the prepared record was not used"
    assert not run_cache._prepared
    # The record's file replaced by a copy of itself (a new inode): decoded again.
    run_cache.prepare()
    copy = path.with_name("copy")
    shutil.copyfile(path, copy)
    os.replace(copy, path)
    decoded.clear()
    third = runner.invoke(main, [str(project)])
    assert (third.exit_code, third.stdout) == (first.exit_code, first.stdout)
    assert len(decoded) == 1
    # Another user's key (another XDG_CACHE_HOME): decoded again, and refused.
    run_cache.prepare()
    monkeypatch.setenv("XDG_CACHE_HOME", str(project.parent / "elsewhere"))
    server._forget()
    decoded.clear()
    fourth = runner.invoke(main, [str(project), "-v"])
    assert fourth.exit_code == first.exit_code
    assert len(decoded) == 1
    assert "it will be rebuilt" in fourth.stderr


def test_without_a_working_directory_the_caller_runs_the_check(
    running: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _commands_run(running)
    monkeypatch.setenv(launch.ENV_DIRECTORY, running[launch.ENV_DIRECTORY])
    monkeypatch.delenv(launch.ENV_OFF, raising=False)
    assert os.path.exists(launch.socket_path()), "not the daemon the fixture started"

    def removed() -> str:
        raise FileNotFoundError(2, "No such file or directory")

    monkeypatch.setattr(os, "getcwd", removed)
    assert launch.forward(["."]) is None
    monkeypatch.undo()
    assert _commands_run(running) == before


def test_a_caller_that_sends_nothing_does_not_hold_the_daemon(
    socket_directory: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(server, "REQUEST_TIMEOUT", 0.5)
    listener = server.listen(str(socket_directory / "test.sock"))
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stopping = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with listener, silent, stopping:
        silent.connect(str(socket_directory / "test.sock"))
        stopping.connect(str(socket_directory / "test.sock"))
        launch.send_frame(stopping, launch.STOP, b"")
        started = time.monotonic()
        server.Daemon(idle_timeout=60).serve(listener)  # (returns once it reads the STOP)
        assert time.monotonic() - started < 30
        assert launch.receive_frame(stopping) == (launch.STOP, b"")
