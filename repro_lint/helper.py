"""A helper process forked as a check starts, which imports the per-file pass while the check
reads its run record, then lints the files that changed for it.

A run after a one-file edit, in a process of its own, spends about 60 ms importing libcst and
the rules, and about as long reading its run record, taking the files' stamps and listing
them; it needs the imports only once it knows which files changed. A helper forked before the
record is read does the imports meanwhile, on another core, and lints what the check sends it
(``engine.helper_handler`` says what it answers). On one core nothing is gained, and little lost.

It is forked only where that is safe: on a POSIX system other than macOS, from a process
running one thread, and not with ``REPRO_LINT_NO_HELPER`` set. The check sends requests on
one pipe and reads answers on another (pickled; both ends are this same program). The helper
never writes to the check's standard streams (its own point at the null device), never runs
the check's exit handlers, ignores Ctrl-C (the check stops it), and ends when the check
closes its end or dies. Anything that goes wrong makes the check do the work itself, as
without a helper: the answers are the same either way.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import struct
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import NoReturn

# Set (to anything but an empty string) to do all the work in the check's own process.
ENV_OFF = "REPRO_LINT_NO_HELPER"
_HEADER = struct.Struct(">Q")
# How long the check waits for one answer before it does the work itself (the largest files
# of a big project take a few seconds to lint).
PATIENCE_SECONDS = 300.0


def can_fork() -> bool:
    """Whether a helper may be forked from this process now."""
    if os.environ.get(ENV_OFF) or not hasattr(os, "fork") or sys.platform == "darwin":
        return False
    # Forking a process with other threads can leave the child holding their locks.
    threading = sys.modules.get("threading")
    return threading is None or threading.active_count() == 1


class Helper:
    """The check's side of a helper: ``ask`` it, ``stop`` it."""

    def __init__(self, pid: int, requests: int, answers: int) -> None:
        self.pid = pid
        self._requests = requests
        self._answers = answers
        # Requests answered (the others were done by the check itself).
        self.answered = 0

    @property
    def alive(self) -> bool:
        return self._requests >= 0

    @classmethod
    def start(cls, prepare: Callable[[], Callable[[Any], Any]]) -> Helper | None:
        """Fork a helper that calls ``prepare`` (the imports) and answers each request with
        the handler it returns; None where none can be forked."""
        if not can_fork():
            return None
        try:
            # (What the check's streams hold is written once, by the check.)
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):
            return None
        requests_read, requests_write = os.pipe()
        answers_read, answers_write = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            for fd in (requests_read, requests_write, answers_read, answers_write):
                os.close(fd)
            return None
        if pid == 0:  # pragma: no cover - the child's coverage is not collected
            _serve(prepare, requests_read, answers_write, (requests_write, answers_read))
        os.close(requests_read)
        os.close(answers_write)
        return cls(pid, requests_write, answers_read)

    def ask(self, request: Any) -> Any:
        """The helper's answer to ``request``, or None when it has none (it failed or ended,
        and is stopped): the check then does the work itself."""
        if not self.alive:
            return None
        try:
            _write(self._requests, pickle.dumps(request, pickle.HIGHEST_PROTOCOL))
            answered, answer = pickle.loads(_read(self._answers, PATIENCE_SECONDS))
        except Exception:  # (ended, timed out, or an answer that does not load)
            self.stop()
            return None
        if not answered:
            self.stop()  # (a request that failed may have left its state half done)
            return None
        self.answered += 1
        return answer

    def stop(self) -> None:
        """End the helper now (it may be busy), and reap it."""
        if not self.alive:
            return
        for fd in (self._requests, self._answers):
            os.close(fd)
        self._requests = self._answers = -1
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass


def _serve(
    prepare: Callable[[], Callable[[Any], Any]],
    requests: int,
    answers: int,
    parents: Sequence[int],
) -> NoReturn:  # pragma: no cover - runs in the forked child
    code = 0
    try:
        for fd in parents:
            os.close(fd)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        # (Also the streams that replace the standard ones: a test's capture, say.)
        sys.stdout = sys.stderr = open(null, "w", closefd=False)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        handle = prepare()
        while True:
            try:
                request = pickle.loads(_read(requests, None))
            except EOFError:
                break
            try:
                reply: tuple[bool, Any] = (True, handle(request))
            except Exception:
                reply = (False, None)
            _write(answers, pickle.dumps(reply, pickle.HIGHEST_PROTOCOL))
    except BaseException:
        code = 1
    os._exit(code)


def _write(fd: int, payload: bytes) -> None:
    data = memoryview(_HEADER.pack(len(payload)) + payload)
    while data:
        data = data[os.write(fd, data) :]


def _read(fd: int, timeout: float | None) -> bytes:
    """One message; EOFError at the end of the pipe, TimeoutError if none comes in time."""
    header = _read_exactly(fd, _HEADER.size, timeout)
    return _read_exactly(fd, _HEADER.unpack(header)[0], timeout)


def _read_exactly(fd: int, size: int, timeout: float | None) -> bytes:
    parts = []
    while size:
        if timeout is not None and not select.select([fd], [], [], timeout)[0]:
            raise TimeoutError("no answer in time")
        part = os.read(fd, min(size, 1 << 20))
        if not part:
            raise EOFError("the pipe was closed")
        parts.append(part)
        size -= len(part)
    return b"".join(parts)


__all__ = ["ENV_OFF", "PATIENCE_SECONDS", "Helper", "can_fork"]
