"""The ``repro-lint`` command's entry point, and the client side of the daemon.

When this user has started a daemon for this installation (``repro-lint daemon start``), a
check is handed to it: the daemon has libcst, the rules and the last run record in memory
already, so a run after a one-file edit answers in a fraction of the time a new process
needs just to import them. Anything else, and every check when no daemon answers, runs in
this process as before. The answer is the same either way: the daemon runs the same
command, in the caller's directory, environment and umask, and sends back its standard
output, standard error and exit status.

This module imports nothing heavy: without a daemon, a run pays one ``stat`` for it.
Not handed over: checks that read standard input, the other commands, ``--help`` and
``--version``, and any run with ``REPRO_LINT_NO_DAEMON`` set.

The daemon's socket lives in a directory only this user can enter (refused otherwise), and
the daemon answers only connections from its own user (peer credentials, where the system
gives them).
"""

from __future__ import annotations

import hashlib
import os
import stat
import struct
import sys

# (Not ``typing.TYPE_CHECKING``: importing typing costs the daemon's client 6 ms.)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import NoReturn

    from repro_lint.helper import Helper

# Where the daemon's socket is made, instead of the default (tests, or a shorter path).
ENV_DIRECTORY = "REPRO_LINT_DAEMON_DIR"
# Set (to anything but an empty string) to run every command in its own process.
ENV_OFF = "REPRO_LINT_NO_DAEMON"
PROTOCOL = 1

# Frames: one byte of kind, four of length, then the payload.
_HEADER = struct.Struct(">cI")
REQUEST = b"r"  # client: a command to run (a Python literal: json costs the client 10 ms)
STATUS = b"p"  # client: what the daemon is (answered with STATUS and JSON)
STOP = b"q"  # client: stop (answered with STOP)
STDOUT = b"o"
STDERR = b"e"
EXIT = b"x"  # daemon: the exit status (decimal), the last frame of an answer
REFUSED = b"s"  # daemon: not run (the reason); the client runs the command itself

# ``repro-lint daemon start``'s default: stop after this many seconds without a check.
DEFAULT_IDLE_TIMEOUT = 3 * 3600.0

# The commands other than ``check``; ``tests/test_daemon.py`` keeps this equal to the CLI's.
OTHER_COMMANDS = frozenset({"clean", "daemon", "explain", "rules", "server", "verify"})


def daemon_directory() -> str:
    """The directory of this user's daemon sockets."""
    chosen = os.environ.get(ENV_DIRECTORY)
    if chosen:
        return chosen
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return os.path.join(runtime, "repro-lint")
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "repro-lint", "daemon")


def socket_path() -> str:
    """The socket of the daemon for this installation: this interpreter and this copy of
    repro-lint (another virtual environment, or another checkout, has its own)."""
    package = os.path.dirname(os.path.abspath(__file__))
    ident = hashlib.sha256(f"{sys.executable}\0{package}".encode()).hexdigest()[:16]
    return os.path.join(daemon_directory(), f"{ident}.sock")


def directory_problem(directory: str) -> str | None:
    """Why ``directory`` may not hold a daemon's socket (None when it may): it must be a
    real directory, owned by this user, that no one else can enter or write."""
    try:
        info = os.lstat(directory)
    except OSError as exc:
        return f"{directory}: {exc.strerror}"
    if not stat.S_ISDIR(info.st_mode):
        return f"{directory} is not a directory"
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        return f"{directory} belongs to another user"
    if info.st_mode & 0o077:
        return f"{directory} is open to other users (chmod 700 it)"
    return None


def make_private_directory(directory: str) -> str | None:
    """Make ``directory`` (mode 0700) if it is missing: why it may not hold a daemon's
    socket, or None when it may."""
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
    except OSError as exc:
        return f"cannot make {directory}: {exc.strerror}"
    return directory_problem(directory)


def send_frame(connection: object, kind: bytes, payload: bytes) -> None:
    connection.sendall(_HEADER.pack(kind, len(payload)) + payload)  # type: ignore[attr-defined]


def receive_frame(connection: object) -> tuple[bytes, bytes] | None:
    """The next frame, or None at the end of the stream."""
    head = _receive(connection, _HEADER.size)
    if head is None:
        return None
    kind, length = _HEADER.unpack(head)
    payload = _receive(connection, length)
    if payload is None:
        return None
    return kind, payload


def _receive(connection: object, size: int) -> bytes | None:
    chunks = []
    while size:
        chunk = connection.recv(min(size, 1 << 20))  # type: ignore[attr-defined]
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def is_check(args: list[str]) -> bool:
    """Whether this command line is a check (``check`` is the default command)."""
    return not (args and (args[0] in OTHER_COMMANDS or args[0] in ("--help", "-h", "--version")))


def forwardable(args: list[str]) -> bool:
    """Whether this command line is a check the daemon may run."""
    if os.environ.get(ENV_OFF) or not is_check(args):
        return False
    for arg in args:
        if arg in ("-", "--stdin-filename") or arg.startswith("--stdin-filename="):
            return False
    return True


def connect(path: str) -> object | None:
    """A connection to the daemon listening at ``path`` (``socket_path()``), if one is."""
    import socket

    if directory_problem(os.path.dirname(path)) is not None:
        return None
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(path)
    except OSError:
        connection.close()
        return None
    return connection


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def forward(args: list[str]) -> int | None:
    """Run ``args`` in the daemon: its exit status, or None when no daemon ran it (nothing
    was printed then)."""
    path = socket_path()
    if not os.path.exists(path):
        return None
    connection = connect(path)
    if connection is None:
        return None
    with connection:  # type: ignore[attr-defined]
        streams = (sys.stdout, sys.stderr)
        try:
            request = {
                "protocol": PROTOCOL,
                "argv": args,
                "cwd": os.getcwd(),
                "env": dict(os.environ),
                "umask": _umask(),
                "tty": [_isatty(stream) for stream in streams],
                "encoding": [[s.encoding or "utf-8", s.errors or "strict"] for s in streams],
            }
            send_frame(connection, REQUEST, repr(request).encode("utf-8", "surrogateescape"))
        except OSError:  # (no working directory any more; the daemon gone meanwhile)
            return None
        answered = False
        while True:
            try:
                frame = receive_frame(connection)
            except OSError:
                frame = None
            if frame is None:
                if not answered:
                    return None
                sys.stderr.write("error: the repro-lint daemon stopped before it finished\n")
                return 2
            kind, payload = frame
            if kind == REFUSED and not answered:
                return None
            answered = True
            if kind == EXIT:
                return int(payload)
            stream = sys.stdout if kind == STDOUT else sys.stderr
            stream.flush()
            stream.buffer.write(payload)
            stream.buffer.flush()


def _isatty(stream: object) -> bool:
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError):
        return False


def run() -> None:
    """The ``repro-lint`` console script."""
    args = sys.argv[1:]
    if os.name == "posix" and forwardable(args):
        try:
            code = forward(args)
        except KeyboardInterrupt:
            sys.exit(130)
        if code is not None:
            sys.exit(code)
    from repro_lint import dataclass_code
    from repro_lint.collector import importing

    with importing():
        store = dataclass_code.install()
    if is_check(args) and _may_have_a_record(args):
        # The helper a check after an edit lints with starts its imports now, while this
        # process imports the command line and reads the configuration and run record.
        # (Forked outside the pause above: the helper's collector runs as any process's.)
        fork_early(_import_per_file_pass)
    with importing():
        from repro_lint.cli import run as run_here

    if not is_check(args):
        run_here()
        return
    global _deferred
    _deferred = []
    try:
        run_here()
    except SystemExit as exc:
        done = exc
    except Exception:
        _finish(_taken(), behind=False)
        raise
    except BaseException:  # (Ctrl-C: nothing more is written, the locks are let go)
        for _, fd in _taken():
            os.close(fd)
        raise
    else:
        done = SystemExit(0)
    drop_early()  # (a check that never took it: a usage error, --help)
    _exit_now(done, store.save, _taken())


# The helper this process forked as it started (``fork_early``), until the check takes it.
_early: Helper | None = None
# How the process ``_finish`` forks ends (whatever replaces ``os._exit`` later: a test's).
_exit_process = os._exit
# What the check this process runs leaves to be done once it has ended (``defer``): None
# unless the console script runs a check here.
_deferred: list[tuple[Callable[[], object], int]] | None = None


def defer(work: Callable[[], object], hold: Callable[[], int | None]) -> bool:
    """Have ``work`` done after the check's output is written and its status known, in a
    process forked as the check's own ends (``_exit_now``), which the check does not wait
    for: what only a later run needs (writing the results cache and the run record, about a
    tenth of a run after a one-line edit). ``hold`` takes the lock that makes a later run
    wait until it is done (``cache.writing``: a file descriptor, which the forked
    process keeps until the work is done). False, with nothing kept, where it cannot be so
    (the caller does the work now): outside a check that the console script runs, where no
    process may be forked (``helper.can_fork``: ``REPRO_LINT_NO_HELPER`` set, say), or
    without the lock."""
    if _deferred is None:
        return False
    from repro_lint.helper import can_fork

    if not can_fork():
        return False
    fd = hold()
    if fd is None:
        return False
    _deferred.append((work, fd))
    return True


def _taken() -> list[tuple[Callable[[], object], int]]:
    """What the check left to be done (``defer``); nothing more is taken from now on."""
    global _deferred
    found, _deferred = _deferred or [], None
    return found


def _finish(works: list[tuple[Callable[[], object], int]], behind: bool) -> None:
    """Do ``works`` (``defer``), with ``behind`` in a process forked now, which ends once they
    are done while the caller goes on at once; where no process can be forked, or without
    ``behind``, they are done here first.

    The process writes nothing to the check's streams (they point at the null device: a
    caller reading the check's output to its end, as pre-commit and CI do, is not kept
    waiting) and ignores Ctrl-C and a closed terminal: what it writes is written atomically,
    and a later run that finds it unwritten lints again."""
    if not works:
        return
    pid = -1
    if behind:
        try:
            pid = os.fork()
        except OSError:
            pid = -1
    if pid == 0:  # pragma: no cover - runs in the forked process
        _behind(works)
    if pid > 0:
        return
    try:
        for work, _ in works:
            work()
    finally:
        for _, fd in works:
            os.close(fd)


def _behind(works: list[tuple[Callable[[], object], int]]) -> NoReturn:  # pragma: no cover
    """``_finish``'s forked process: ``works`` done, then the process ends, whatever happens
    (it never returns into the check's code)."""
    code = 0
    try:
        import gc
        import signal

        # (A collection would touch, and so copy, every page it shares with the check.)
        gc.disable()
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        sys.stdout = sys.stderr = open(null, "w", closefd=False)
        for work, _ in works:
            try:
                work()
            except Exception:  # (a failure costs the next run speed only: it lints again)
                code = 1
    except BaseException:
        code = 1
    _exit_process(code)


def fork_early(warm: Callable[[], object]) -> None:
    """Fork a helper that runs ``warm`` and waits (``Helper.start_waiting``), for the check
    this process is about to run to take (``take_early``); nothing where none can be forked.
    A helper not taken ends when this process does (or ``drop_early`` stops it first)."""
    global _early
    if _early is None:
        from repro_lint.helper import Helper

        _early = Helper.start_waiting(warm)


def take_early() -> Helper | None:
    """The helper ``fork_early`` forked, still waiting for its work (it is the caller's from
    now on); None when there is none."""
    global _early
    found, _early = _early, None
    return found if found is not None and found.alive and found.waiting else None


def drop_early() -> None:
    """Stop the helper ``fork_early`` forked, unless a check took it (a process that forked
    none imports nothing for this)."""
    found = take_early()
    if found is not None:
        found.stop()


def _may_have_a_record(args: list[str]) -> bool:
    """Whether a check with these arguments may have a run record, which is kept only for
    checks over directories (``cli._answer_from_record``): one that names files and no
    directory, as a pre-commit hook does, forks no helper early (it would cost that check
    about 8 ms for nothing). Told from the words that name existing paths: an option's value
    taken for a path at worst forks a helper the check then stops, or leaves the check to fork
    its own when it finds a record."""
    named = [arg for arg in args if not arg.startswith("-")]
    return any(os.path.isdir(arg) for arg in named) or not any(os.path.isfile(arg) for arg in named)


def _import_per_file_pass() -> None:
    """What a check's helper imports before it is given its work (``fork_early``)."""
    from repro_lint.collector import importing
    from repro_lint.file_pass import import_tree_pass

    with importing():
        import repro_lint.engine  # noqa: F401
    import_tree_pass()


def _exit_now(
    done: SystemExit,
    before: Callable[[], object],
    deferred: list[tuple[Callable[[], object], int]] | None = None,
) -> NoReturn:
    """End a check's process as ``done`` would, without taking the interpreter apart.

    A run leaves every file's result, the run record and the modules it imported alive, and
    Python frees them all one by one on its way out: 20 to 30 ms after a one-line edit in a
    project of 3,000 files, a tenth of the run. A check has closed what it wrote by now
    (fixes, the cache and the run record are written atomically, and click closed any file
    it opened), so once standard output and standard error are flushed and ``before`` has
    run (what this module's caller registered to run at exit), the process ends at once.
    Where that cannot be done as Python would (a message as the exit status, a stream that
    cannot be flushed: a closed pipe), Python's own exit runs instead. What the check left
    to be done after it (``deferred``, see ``defer``) is then done in a process of its own
    (and here, first, when Python's own exit runs)."""
    works = deferred or []
    code = done.code
    if code is not None and type(code) is not int:
        _finish(works, behind=False)
        raise done
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        _finish(works, behind=False)
        raise done from None
    before()
    _finish(works, behind=True)
    os._exit(code or 0)


__all__ = [
    "defer",
    "drop_early",
    "fork_early",
    "forward",
    "forwardable",
    "is_check",
    "run",
    "socket_path",
    "take_early",
]
