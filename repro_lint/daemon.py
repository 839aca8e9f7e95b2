"""The daemon: one long-lived process that runs this user's checks (see ``launch``).

It keeps what every new process would build again: the imported modules (libcst and the
rules are most of a one-file run's start-up), and, decoded while it waits, the run records
its last run read or wrote (``run_cache.prepare``). It runs one command at a time, in the
caller's directory, environment and umask, with the caller's standard streams' encodings
and terminal flags, and streams back what the command prints. Between commands it forgets
what depended on the file system or the environment (memoised lookups, the sealing key).

It stops when asked (``repro-lint daemon stop``), after ``idle_timeout`` seconds without a
command, and when repro-lint's own code changes (the command is then run by the caller).
"""

from __future__ import annotations

import ast
import contextlib
import gc
import io
import json
import os
import socket
import struct
import sys
import time
from collections.abc import Iterator
from typing import Any

from repro_lint import __version__, launch

# Seconds a connection has to send its request.
REQUEST_TIMEOUT = 30.0
# The daemon's exit status when this installation's daemon was running already.
ALREADY_RUNNING = 3


class _Channel(io.RawIOBase):
    """A writable stream whose writes are sent as frames of one kind."""

    def __init__(self, connection: socket.socket, kind: bytes, tty: bool) -> None:
        super().__init__()
        self._connection = connection
        self._kind = kind
        self._tty = tty

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self._tty

    def write(self, data: Any) -> int:
        payload = bytes(data)
        if payload:
            launch.send_frame(self._connection, self._kind, payload)
        return len(payload)


def _text_stream(
    connection: socket.socket, kind: bytes, tty: bool, encoding: Any
) -> io.TextIOWrapper:
    name, errors = encoding
    buffered = io.BufferedWriter(_Channel(connection, kind, tty))
    # As Python sets up its own: standard output line-buffered on a terminal, standard error
    # always.
    line_buffering = tty or kind == launch.STDERR
    return io.TextIOWrapper(buffered, encoding=name, errors=errors, line_buffering=line_buffering)


def code_fingerprint() -> str:
    """repro-lint's code as it is on disk now (the cache's fingerprint, not memoised)."""
    from repro_lint import cache

    return cache.tool_fingerprint(fresh=True)


def _peer_is_this_user(connection: socket.socket) -> bool:
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:  # (the socket's directory is this user's alone)
        return True
    credentials = connection.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", credentials)
    return bool(uid == os.getuid())


@contextlib.contextmanager
def _as_caller(request: dict[str, Any], connection: socket.socket) -> Iterator[None]:
    """The process set up as the caller's for one command, and put back after."""
    saved_directory = os.getcwd()
    saved_environment = dict(os.environ)
    saved_streams = (sys.stdin, sys.stdout, sys.stderr, sys.argv)
    saved_mask = os.umask(int(request["umask"]))
    out_tty, err_tty = request["tty"]
    out_encoding, err_encoding = request["encoding"]
    stdout = _text_stream(connection, launch.STDOUT, bool(out_tty), out_encoding)
    stderr = _text_stream(connection, launch.STDERR, bool(err_tty), err_encoding)
    stdin = open(os.devnull, encoding="utf-8")  # (checks of stdin are not sent here)
    try:
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.stdin, sys.stdout, sys.stderr = stdin, stdout, stderr
        sys.argv = ["repro-lint", *request["argv"]]
        yield
    finally:
        for stream in (stdout, stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        stdin.close()
        sys.stdin, sys.stdout, sys.stderr, sys.argv = saved_streams
        os.environ.clear()
        os.environ.update(saved_environment)
        os.chdir(saved_directory)
        os.umask(saved_mask)


def _forget() -> None:
    """Forget what a command may have memoised about the file system or the environment:
    every ``functools`` cache of repro-lint's modules, and the sealing key (found through
    ``XDG_CACHE_HOME``)."""
    from repro_lint import cache

    for name, module in list(sys.modules.items()):
        if module is None or not (name == "repro_lint" or name.startswith("repro_lint.")):
            continue
        for value in list(vars(module).values()):
            clear = getattr(value, "cache_clear", None)
            if callable(clear) and getattr(value, "__module__", None) == name:
                clear()
    cache.forget_key()


class Daemon:
    """The server: ``serve`` until stopped, idle, or out of date."""

    def __init__(self, idle_timeout: float) -> None:
        self.idle_timeout = idle_timeout
        self.fingerprint = code_fingerprint()
        self.started = time.time()
        self.commands = 0

    def status(self) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "version": __version__,
            "started": self.started,
            "commands": self.commands,
            "idle_timeout": self.idle_timeout,
            "socket": launch.socket_path(),
        }

    def answer(self, connection: socket.socket) -> bool:
        """Answer one connection; False once the daemon should stop."""
        if not _peer_is_this_user(connection):
            return True
        frame = launch.receive_frame(connection)
        if frame is None:
            return True
        kind, payload = frame
        if kind == launch.STOP:
            launch.send_frame(connection, launch.STOP, b"")
            return False
        if kind == launch.STATUS:
            launch.send_frame(connection, launch.STATUS, json.dumps(self.status()).encode())
            return True
        if kind != launch.REQUEST:
            return True
        connection.settimeout(None)
        request = ast.literal_eval(payload.decode("utf-8", "surrogateescape"))
        if not isinstance(request, dict):
            return True
        if request.get("protocol") != launch.PROTOCOL:
            launch.send_frame(connection, launch.REFUSED, b"another protocol")
            return True
        if code_fingerprint() != self.fingerprint:
            launch.send_frame(connection, launch.REFUSED, b"repro-lint's code changed")
            return False
        if not os.path.isdir(request["cwd"]):
            launch.send_frame(connection, launch.REFUSED, b"no such directory")
            return True
        self.run(request, connection)
        return True

    def run(self, request: dict[str, Any], connection: socket.socket) -> None:
        from repro_lint import cli, run_cache

        self.commands += 1
        gc.unfreeze()
        try:
            with _as_caller(request, connection):
                try:
                    status = cli.execute(request["argv"])
                    sys.stdout.flush()
                    sys.stderr.flush()
                    launch.send_frame(connection, launch.EXIT, str(status).encode())
                except OSError:
                    pass  # (the caller went away: it was interrupted)
                connection.close()
                # The caller has its answer. Free what the command left, and decode the
                # next command's record ahead (still in the caller's environment, whose
                # sealing key it is sealed with).
                gc.collect()
                run_cache.prepare()
        finally:
            _forget()
            gc.freeze()  # (the collector need not walk the modules and the records again)

    def serve(self, listener: socket.socket) -> None:
        listener.settimeout(self.idle_timeout)
        while True:
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                return
            # A caller that connects and sends nothing must not hold the daemon: its request is
            # awaited this long (the command itself then runs without a limit).
            connection.settimeout(REQUEST_TIMEOUT)
            with connection:
                try:
                    going_on = self.answer(connection)
                except (OSError, ValueError, KeyError, TypeError, SyntaxError, RecursionError):
                    going_on = True  # (a malformed request, or a caller gone)
            if not going_on:
                return


def listen(path: str) -> socket.socket:
    """A listening socket at ``path``, replacing a dead daemon's (made under another name
    first, so that ``path`` is never a half-made socket)."""
    problem = launch.make_private_directory(os.path.dirname(path))
    if problem is not None:
        raise OSError(problem)
    temporary = f"{path}.{os.getpid()}"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        listener.bind(temporary)
        os.chmod(temporary, 0o600)
        listener.listen(16)
        os.replace(temporary, path)
    except BaseException:
        listener.close()
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return listener


class _Stopped(BaseException):
    """SIGTERM: the daemon stops, within a command too (which then gets no exit status: its
    caller says so, or runs the command itself if nothing was printed yet)."""


def _terminated(_signal: int, _frame: object) -> None:
    raise _Stopped


def main(idle_timeout: float = launch.DEFAULT_IDLE_TIMEOUT) -> int:
    """Run the daemon in this process until it stops (``repro-lint daemon start`` starts
    this in the background): 0, or 3 when this installation's daemon was running already."""
    import fcntl
    import signal

    # ``-m`` put the working directory (the daemon's own) first on the import path.
    if sys.path and sys.path[0] in ("", os.getcwd()):
        del sys.path[0]
    path = launch.socket_path()
    problem = launch.make_private_directory(os.path.dirname(path))
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    # One daemon per installation: the lock is held for the daemon's life (two `daemon
    # start` at once leave one daemon, not two behind one socket).
    lock = os.open(f"{path}.lock", os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(lock)
        return ALREADY_RUNNING
    # What every command needs, imported once, with what a run imports only when it parses.
    from repro_lint import cli, engine, run_cache, settings  # noqa: F401

    engine.import_analysis()

    run_cache.resident()
    daemon = Daemon(idle_timeout)
    listener = listen(path)
    identity = os.stat(path).st_ino
    signal.signal(signal.SIGTERM, _terminated)
    try:
        gc.freeze()
        daemon.serve(listener)
    except _Stopped:
        pass
    finally:
        listener.close()
        with contextlib.suppress(OSError):
            if os.stat(path).st_ino == identity:  # (not a newer daemon's)
                os.unlink(path)
        os.close(lock)
    return 0


def running() -> dict[str, Any] | None:
    """The running daemon's status (``Daemon.status``), or None when none answers."""
    answer = request(launch.STATUS)
    if answer is None or answer[0] != launch.STATUS:
        return None
    status: dict[str, Any] = json.loads(answer[1])
    return status


def request(kind: bytes) -> tuple[bytes, bytes] | None:
    """Send the running daemon a STATUS or STOP frame: its answer, or None without one."""
    connection = launch.connect(launch.socket_path())
    if connection is None:
        return None
    with connection:  # type: ignore[attr-defined]
        try:
            launch.send_frame(connection, kind, b"")
            return launch.receive_frame(connection)
        except OSError:
            return None


if __name__ == "__main__":
    sys.exit(main(float(sys.argv[1]) if len(sys.argv) > 1 else launch.DEFAULT_IDLE_TIMEOUT))
