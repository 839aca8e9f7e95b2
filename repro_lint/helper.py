"""A helper process forked as a check starts, which imports the per-file pass while the check
reads its run record, then lints the files that changed for it.

A run after a one-file edit, in a process of its own, spends about 60 ms importing libcst and
the rules, and about as long reading its run record, taking the files' stamps and listing
them; it needs the imports only once it knows which files changed. A helper forked before the
record is read does the imports meanwhile, on another core, and lints what the check sends it
(``engine.helper_handler`` says what it answers). On one core nothing is gained, and little lost.

The console script forks it as soon as it knows the command is a check (``launch.fork_early``),
before it imports the command line's own modules or reads the configuration: the helper then
imports the per-file pass while the check starts too, and is given its work once the check
knows it has a record to read (``Helper.prepare``), or is stopped. A check run otherwise (a
test's, in process) forks its helper when it finds the record (``Helper.start``). The check
sends the requests for the files that changed as soon as the record names them
(``Helper.send``), and takes the answers once it is ready for them (``Helper.ask``). A helper
may fork a process of its own for work the check is likely to ask for next (``fork_work``),
which then runs on the core the waiting check leaves free; the helper's process group holds
those processes, and they end with it.

It is forked only where that is safe: on a POSIX system other than macOS, from a process
running one thread, and not with ``REPRO_LINT_NO_HELPER`` set. The check sends requests on
one pipe and reads answers on another (pickled; both ends are this same program). The helper
never writes to the check's standard streams (its own point at the null device), never runs
the check's exit handlers, ignores Ctrl-C (the check stops it), and ends when the check
closes its end or dies. Anything that goes wrong makes the check do the work itself, as
without a helper: the answers are the same either way.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import pickle
import select
import signal
import struct
import sys
import time
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

    def __init__(self, pid: int, requests: int, answers: int, waiting: bool = False) -> None:
        self.pid = pid
        self._requests = requests
        self._answers = answers
        # Requests answered (the others were done by the check itself).
        self.answered = 0
        # Forked by ``start_waiting`` and not yet given its work (``prepare``).
        self.waiting = waiting
        # Requests sent ahead (``send``) whose answers are not read yet, oldest first.
        self._sent: list[Any] = []
        # Requests written and not answered yet; answers read (see ``stop``).
        self._outstanding = 0
        self._replies = 0

    @property
    def alive(self) -> bool:
        return self._requests >= 0

    @classmethod
    def start(cls, prepare: Callable[[], Callable[[Any], Any]]) -> Helper | None:
        """Fork a helper that calls ``prepare`` (the imports) and answers each request with
        the handler it returns; None where none can be forked."""
        return cls._fork(prepare, None)

    @classmethod
    def start_waiting(cls, warm: Callable[[], object]) -> Helper | None:
        """Fork a helper that calls ``warm`` (the imports), then waits to be given its work
        (``prepare``) before it answers anything; None where none can be forked."""
        return cls._fork(None, warm)

    def prepare(self, module: str, name: str, *args: Any) -> None:
        """Give a helper forked by ``start_waiting`` its work: there, ``module``'s function
        ``name`` is called with ``args`` (which must pickle) and returns the handler of each
        request. Sent without waiting for an answer: a helper that fails to make its handler
        ends, and the next ``ask`` finds it gone."""
        if not self.alive or not self.waiting:
            return
        self.waiting = False
        try:
            _write(self._requests, pickle.dumps((module, name, args), pickle.HIGHEST_PROTOCOL))
        except Exception:
            self.stop()

    @classmethod
    def _fork(
        cls,
        prepare: Callable[[], Callable[[Any], Any]] | None,
        warm: Callable[[], object] | None,
    ) -> Helper | None:
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
            _serve(prepare, warm, requests_read, answers_write, (requests_write, answers_read))
        # Its own process group (set by both, whichever runs first), which the processes it
        # forks (``fork_work``) share: ``stop`` ends them all.
        with contextlib.suppress(OSError):
            os.setpgid(pid, pid)
        os.close(requests_read)
        os.close(answers_write)
        return cls(pid, requests_write, answers_read, waiting=prepare is None)

    def send(self, request: Any) -> None:
        """Send ``request`` now, and go on: the helper works on it while the check does
        something else, and ``ask`` with an equal request takes its answer. The answers come
        in the order the requests were sent: one never asked for is read and dropped by the
        next ``ask``."""
        if not self.alive or self.waiting:
            return
        if not self._written(request):
            return
        self._sent.append(request)

    def ask(self, request: Any) -> Any:
        """The helper's answer to ``request`` (sent now, unless it was sent ahead), or None
        when it has none (it failed or ended, and is stopped): the check then does the work
        itself."""
        while self._sent and self.alive:
            sent = self._sent.pop(0)
            answered, answer = self._answer()
            if sent == request:
                self.answered += answered
                return answer
        if not self.alive or self.waiting or not self._written(request):
            return None
        answered, answer = self._answer()
        self.answered += answered
        return answer

    def _written(self, request: Any) -> bool:
        """Whether ``request`` was written (if not, the helper is stopped)."""
        try:
            _write(self._requests, pickle.dumps(request, pickle.HIGHEST_PROTOCOL))
        except Exception:
            self.stop()
            return False
        self._outstanding += 1
        return True

    def _answer(self) -> tuple[bool, Any]:
        """Whether the next answer came, and the answer (None, the helper stopped, if not)."""
        try:
            answered, answer = pickle.loads(_read(self._answers, PATIENCE_SECONDS))
        except Exception:  # (ended, timed out, or an answer that does not load)
            self.stop()
            return False, None
        self._outstanding -= 1
        self._replies += 1
        if not answered:
            self.stop()  # (a request that failed may have left its state half done)
            return False, None
        return True, answer

    def stop(self) -> None:
        """End the helper now (it may be busy), and reap it.

        One that is idle (it has answered, and every request since) is waiting for the next
        request: closing the pipes ends it, and it ends and reaps the processes it forked
        (``fork_work``) first. Any other, or one that does not end at once, is killed with its
        whole process group; a process it forked then ends too, but whoever adopts it reaps
        it."""
        if not self.alive:
            return
        idle = self._replies > 0 and self._outstanding == 0
        for fd in (self._requests, self._answers):
            os.close(fd)
        self._requests = self._answers = -1
        self._sent.clear()
        if idle and _reaped(self.pid, _IDLE_END_SECONDS):
            return
        try:
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except OSError:  # (no group of its own)
                os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass


# How long ``Helper.stop`` waits for an idle helper to end of itself.
_IDLE_END_SECONDS = 1.0


def _reaped(pid: int, seconds: float) -> bool:
    """Whether the child ``pid`` ended within ``seconds`` (and was reaped)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            if os.waitpid(pid, os.WNOHANG)[0]:
                return True
        except ChildProcessError:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.0005)


# In a helper: its own ends of the check's pipes, which a process it forks closes; and the
# work of such processes not yet taken (``fork_work``), ended with the helper.
_ends: tuple[int, ...] = ()
_working: list[Work] = []


class Work:
    """What a process forked by ``fork_work`` returns, once (``result``)."""

    def __init__(self, pid: int, fd: int) -> None:
        self.pid = pid
        self._fd = fd

    def result(self) -> tuple[bool, Any]:
        """Whether the work was done, and what it returned (it is waited for)."""
        if self._fd < 0:
            return False, None
        try:
            reply: tuple[bool, Any] = pickle.loads(_read(self._fd, PATIENCE_SECONDS))
        except Exception:
            reply = (False, None)
        self.cancel()
        return reply

    def cancel(self) -> None:
        """End the process (done or not) and reap it."""
        if self in _working:
            _working.remove(self)
        if self._fd < 0:
            return
        os.close(self._fd)
        self._fd = -1
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass


def spare_core() -> bool:
    """Whether this process may run on more than one core."""
    cores = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    return (len(cores) if cores is not None else os.cpu_count() or 1) > 1


def fork_work(work: Callable[[], Any]) -> Work | None:
    """In a helper: ``work`` done in a process forked from this one, on another core, while
    this one goes on (its result pickled back); None where no other core or no process is
    there for it. Work not taken ends with the helper."""
    if not spare_core():
        return None
    try:
        read, write = os.pipe()
    except OSError:
        return None
    try:
        pid = os.fork()
    except OSError:
        os.close(read)
        os.close(write)
        return None
    if pid == 0:  # pragma: no cover - runs in the forked child
        code = 0
        try:
            for fd in (read, *_ends):
                os.close(fd)
            try:
                reply: tuple[bool, Any] = (True, work())
            except Exception:
                reply = (False, None)
            _write(write, pickle.dumps(reply, pickle.HIGHEST_PROTOCOL))
        except BaseException:
            code = 1
        os._exit(code)
    os.close(write)
    found = Work(pid, read)
    _working.append(found)
    return found


def _serve(
    prepare: Callable[[], Callable[[Any], Any]] | None,
    warm: Callable[[], object] | None,
    requests: int,
    answers: int,
    parents: Sequence[int],
) -> NoReturn:  # pragma: no cover - runs in the forked child
    global _ends
    code = 0
    try:
        with contextlib.suppress(OSError):
            os.setpgid(0, 0)
        _ends = (requests, answers)
        for fd in parents:
            os.close(fd)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        # (Also the streams that replace the standard ones: a test's capture, say.)
        sys.stdout = sys.stderr = open(null, "w", closefd=False)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        handle = _handler(prepare, warm, requests)
        while handle is not None:
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
    for work in list(_working):
        work.cancel()
    os._exit(code)


def _handler(
    prepare: Callable[[], Callable[[Any], Any]] | None,
    warm: Callable[[], object] | None,
    requests: int,
) -> Callable[[Any], Any] | None:  # pragma: no cover - runs in the forked child
    """The helper's handler of requests: ``prepare``'s, or for a helper that waits, what the
    first message names once ``warm`` has run (None: the check ended without sending it)."""
    if prepare is not None:
        return prepare()
    if warm is not None:
        warm()
    try:
        module, name, args = pickle.loads(_read(requests, None))
    except EOFError:
        return None
    handler: Callable[[Any], Any] = getattr(importlib.import_module(module), name)(*args)
    return handler


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


__all__ = [
    "ENV_OFF",
    "PATIENCE_SECONDS",
    "Helper",
    "Work",
    "can_fork",
    "fork_work",
    "spare_core",
]
