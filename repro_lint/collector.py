"""When Python's cyclic garbage collector runs during a run.

By default the collector starts a collection every 700 container allocations, and every 10th
and 100th of them also looks at the older objects. Two parts of a run allocate in bulk data
that is not garbage: a file's pass builds its libcst tree and the analysis's records (tens of
thousands of containers, alive until the pass ends), and reading the cache decodes hundreds
of thousands of lists and dicts that live until the run ends. The collections these
allocations trigger traverse that data again and again and free nothing. On the benchmark
corpus that was a seventh of a cold run and more than a third of a run after a one-line edit.

- ``one_pass`` pauses automatic collection for one file's pass and runs one collection of
  the youngest generation at its end: that frees the cycles the pass leaves (its records
  point at each other, a binding at its scope), so memory stays as it was.
- ``decoding`` pauses it while JSON is decoded, and while the summaries that a cold run's
  workers send marshalled are unpacked (nothing decoded can form a cycle). In a
  process that runs once and exits (``one_shot``), the decoded data is then frozen: the
  collector never looks at it again, while reference counting still frees whatever is
  dropped. A long-lived process (the language server) does not freeze, since freezing also
  keeps any cyclic garbage then waiting for a collection until exit.

A process that turned the collector off keeps it off.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator

_ONE_SHOT = False


def one_shot() -> None:
    """Declare this process one run that exits when it is done (the command line)."""
    global _ONE_SHOT
    _ONE_SHOT = True


@contextlib.contextmanager
def _paused(after: Callable[[], object]) -> Iterator[None]:
    """Automatic collection paused, ``after`` run before it resumes; nothing at all in a
    process that turned the collector off."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        after()
        gc.enable()


def one_pass() -> contextlib.AbstractContextManager[None]:
    """Automatic collection paused for one file's pass; the cycles it leaves freed after."""
    return _paused(lambda: gc.collect(0))


def decoding() -> contextlib.AbstractContextManager[None]:
    """Automatic collection paused while data without cycles is decoded (then frozen in a
    one-shot process)."""
    return _paused(lambda: gc.freeze() if _ONE_SHOT else None)


__all__ = ["decoding", "one_pass", "one_shot"]
