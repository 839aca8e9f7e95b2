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
- ``decoding`` pauses it while the cache is decoded, and while the summaries that a cold run's
  workers send marshalled are unpacked (nothing decoded can form a cycle). In a
  process that runs once and exits (``one_shot``), the decoded data is then frozen: the
  collector never looks at it again, while reference counting still frees whatever is
  dropped. A long-lived process (the language server) does not freeze, since freezing also
  keeps any cyclic garbage then waiting for a collection until exit.
- ``importing`` pauses it while modules are imported: a run that parses makes about 70,000
  containers on its way (classes, functions, tables), alive until it exits, and the
  collections they triggered traversed the growing heap a hundred times (10 ms of the 140 ms
  those imports took). In a one-shot process what they made is then frozen, as above.
- ``analysing`` pauses it while the project pass builds its model of the program: indexes,
  answers and profiles that stay alive until the pass ends. After a code edit in the
  benchmark corpus, the six full collections they triggered took 0.3 s and freed nothing.
  In a one-shot process the pass's data is then frozen, its cycles included (the model's
  indexes point back at it): a full collection of the run's data to free them, 0.3 s
  more, would only give back memory to a process about to exit. A file's pass run within
  (a module summarised on demand) still frees its own cycles at its end.

A process that turned the collector off keeps it off.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator

_ONE_SHOT = False
# How many of the pauses below are in effect (a pause within another is still one of ours).
_PAUSES = 0


def one_shot() -> None:
    """Declare this process one run that exits when it is done (the command line)."""
    global _ONE_SHOT
    _ONE_SHOT = True


@contextlib.contextmanager
def _paused(after: Callable[[], object]) -> Iterator[None]:
    """Automatic collection paused, ``after`` run before it resumes (within another pause,
    ``after`` runs and the outer pause goes on); nothing at all in a process that turned
    the collector off."""
    global _PAUSES
    outermost = gc.isenabled()
    if not outermost and not _PAUSES:
        yield
        return
    gc.disable()
    _PAUSES += 1
    try:
        yield
    finally:
        _PAUSES -= 1
        after()
        if outermost:
            gc.enable()


def one_pass() -> contextlib.AbstractContextManager[None]:
    """Automatic collection paused for one file's pass; the cycles it leaves freed after."""
    return _paused(lambda: gc.collect(0))


def _freeze_if_one_shot() -> None:
    if _ONE_SHOT:
        gc.freeze()


def decoding() -> contextlib.AbstractContextManager[None]:
    """Automatic collection paused while data without cycles is decoded (then frozen in a
    one-shot process)."""
    return _paused(_freeze_if_one_shot)


def importing() -> contextlib.AbstractContextManager[None]:
    """Automatic collection paused while modules are imported (what they make frozen in a
    one-shot process)."""
    return _paused(_freeze_if_one_shot)


def analysing() -> contextlib.AbstractContextManager[None]:
    """Automatic collection paused while the project pass runs (what it leaves frozen in a
    one-shot process)."""
    return _paused(_freeze_if_one_shot)


__all__ = ["analysing", "decoding", "importing", "one_pass", "one_shot"]
