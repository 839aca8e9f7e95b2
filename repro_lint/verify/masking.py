"""Printed output with its volatile fields masked: durations and rates, progress bars,
timestamps and dates, memory figures, pids, ports, host names, temporary paths and object
addresses. Two runs of a reproducible script print the same masked text."""

from __future__ import annotations

import re
import socket
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass

_NUMBER = r"[-+]?(?:\d+(?:[.,]\d+)*|\.\d+)(?:[eE][-+]?\d+)?"
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*"
_DAY = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*"
# Keys whose value is a measurement of time, speed or memory.
_KEYS = (
    r"time|times|elapsed|duration|dt|eta|mfu|throughput|speed|took|latency|wall|fps|tflops"
    r"|gflops|flops|ms/batch|ms/step|ms/it|s/step|sec/step|s/batch|step_time|data_time"
    r"|iter_time|batch_time|samples_per_second|steps_per_second|it_per_sec|mem|memory|max_mem"
    r"|allocated|reserved|rss|vram|pid|port|seed_time|timestamp|date|epoch_time|runtime"
)
_TIME_UNITS = r"ms|us|µs|ns|s|sec|secs|seconds?|mins?|minutes?|h|hrs?|hours?|days?"
_MEMORY_UNITS = r"[KMGT]i?B|B|bytes|[kKMGT]"
_RATE = (
    r"(?:it|its|iters?|samples?|tokens?|toks?|img|imgs|images?|ex|examples?|batch(?:es)?"
    r"|steps?|seq|seqs|sequences?|frames?|words?)/(?:s|sec|second)|s/(?:it|iter|step|batch)"
)


def _patterns() -> list[tuple[re.Pattern[str], str]]:
    temporary = re.escape(tempfile.gettempdir().rstrip("/"))
    found = [
        # Temporary paths first: their random names hold digits the other masks would split.
        (rf"(?:{temporary}|/tmp|/var/folders|/private/var/folders)/[^\s'\"),:;\]]*", "<tmp>"),
        (r"\btmp[a-z0-9_]{6,}\b", "<tmp>"),
        (r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", "<uuid>"),
        (r"\b0x[0-9a-fA-F]{6,}\b", "<address>"),
        # Dates and times of day.
        (
            r"\b\d{4}-\d{2}-\d{2}(?:[T _]\d{2}[:\-]\d{2}(?:[:\-]\d{2}(?:[.,]\d+)?)?)?"
            r"(?:Z|[+-]\d{2}:?\d{2})?\b",
            "<date>",
        ),
        (r"\b\d{4}/\d{2}/\d{2}\b|\b\d{1,2}/\d{1,2}/\d{2,4}\b", "<date>"),
        (rf"\b(?:{_DAY},? )?{_MONTH} +\d{{1,2}}(?:,? \d{{4}})?\b", "<date>"),
        (rf"\b\d{{1,2}} {_MONTH}(?: \d{{4}})?\b", "<date>"),
        (r"\b\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?(?:\s?[AaPp][Mm])?\b", "<time>"),
        # tqdm's elapsed<remaining clock ([00:01<00:02, 3.45it/s, loss=0.2]).
        (r"\[<time><(?:<time>|\?)", "[<progress>"),
        # Rates, then durations and memory sizes with their units.
        (rf"{_NUMBER}\s?(?:{_RATE})\b", "<rate>"),
        (rf"(?<![\w.]){_NUMBER}\s?(?:{_TIME_UNITS})(?![\w/])", "<duration>"),
        (rf"(?<![\w.]){_NUMBER}\s?(?:{_MEMORY_UNITS})(?![\w/])", "<memory>"),
        # A measurement named by its key: "time 3.2", "mfu: 12.5%", "pid=4242".
        (rf"(?i)\b({_KEYS})\b(\s*[:=]?\s*)(?:<\w+>|{_NUMBER})%?", r"\1\2<volatile>"),
        (r"\b(?:localhost|\d{1,3}(?:\.\d{1,3}){3}|\[[0-9a-fA-F:]+\]):\d{2,5}\b", "<host:port>"),
    ]
    host = socket.gethostname()
    if host:
        found.append((rf"(?<![\w.-]){re.escape(host)}(?![\w-])", "<host>"))
        short = host.split(".")[0]
        if short != host:
            found.append((rf"(?<![\w.-]){re.escape(short)}(?![\w-])", "<host>"))
    return [(re.compile(pattern), replacement) for pattern, replacement in found]


_PATTERNS = _patterns()


# Padding next to a placeholder: a field printed with a width (``{ms:5.2f}``) is padded
# differently when its value has more or fewer digits.
_PADDING_BEFORE = re.compile(r"(?<=\S)[ \t]+(?=<[\w:]+>)")
_PADDING_AFTER = re.compile(r"(<[\w:]+>)[ \t]+(?=\S)")


def mask_line(line: str) -> str:
    """One printed line with its volatile fields replaced by placeholders."""
    for pattern, replacement in _PATTERNS:
        line = pattern.sub(replacement, line)
    return _PADDING_AFTER.sub(r"\1 ", _PADDING_BEFORE.sub(" ", line))


def mask(text: str) -> list[str]:
    """Printed text as lines a terminal would show (a carriage return rewrites its line, as
    progress bars do), volatile fields masked; blank lines dropped."""
    lines = []
    for raw in _ANSI.sub("", text).split("\n"):
        shown = raw.rstrip("\r").rsplit("\r", 1)[-1].rstrip()
        if shown:
            lines.append(mask_line(shown))
    return lines


@dataclass(frozen=True)
class OutputDifference:
    """The first line where two runs' masked output differs."""

    stream: str
    line: int
    first: str | None
    second: str | None

    @property
    def message(self) -> str:
        if self.first is None or self.second is None:
            longer = "first" if self.second is None else "second"
            text = self.first if self.second is None else self.second
            return f"{self.stream}: the {longer} run printed more, from line {self.line}: {text}"
        return (
            f"{self.stream} line {self.line} differs after masking volatile fields:\n"
            f"    first:  {self.first}\n    second: {self.second}"
        )


def first_difference(stream: str, first: str, second: str) -> OutputDifference | None:
    """Where two runs' output differs once volatile fields are masked, if anywhere."""
    left, right = mask(first), mask(second)
    for number, (a, b) in enumerate(zip(left, right, strict=False), start=1):
        if a != b:
            return OutputDifference(stream, number, a, b)
    if len(left) != len(right):
        shorter = min(len(left), len(right))
        return OutputDifference(
            stream,
            shorter + 1,
            left[shorter] if len(left) > shorter else None,
            right[shorter] if len(right) > shorter else None,
        )
    return None


def differences(pairs: Sequence[tuple[str, str, str]]) -> list[OutputDifference]:
    """The first masked difference of each (stream, first, second) that has one."""
    return [d for s, a, b in pairs if (d := first_difference(s, a, b)) is not None]
