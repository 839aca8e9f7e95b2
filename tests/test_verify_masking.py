"""Printed output with volatile fields masked: what two runs of a reproducible script print
differently, and what they must not hide."""

from __future__ import annotations

import socket
import tempfile

import pytest

from repro_lint.verify.masking import first_difference, mask, mask_line

# (line as printed by one run, the same line as printed by another run)
VOLATILE = [
    ("iter 0: loss 3.4553, time 305.43ms, mfu 0.03%", "iter 0: loss 3.4553, time 209.79ms, mfu 1.20%"),
    ("| epoch 1 | 200/2983 batches | ms/batch 45.23 | loss 6.12", "| epoch 1 | 200/2983 batches | ms/batch 51.02 | loss 6.12"),
    ("Epoch 3: 100%|####| 25/25 [00:01<00:00, 19.23it/s, loss=0.231]", "Epoch 3: 100%|####| 25/25 [00:02<00:00, 11.86it/s, loss=0.231]"),
    ("  0%|          | 0/8 [00:00<?, ?it/s]", "  0%|          | 0/8 [00:01<?, ?it/s]"),
    ("started 2026-11-25T03:01:21.010180", "started 2026-11-26T17:44:02.998001"),
    ("Wed Nov 25 03:01:21 2026 training", "Thu Nov 26 17:44:02 2026 training"),
    ("[12:01:33] INFO step 3", "[12:09:01] INFO step 3"),
    ("peak memory 155.0 MB", "peak memory 161.3 MB"),
    ("allocated: 1.2 GiB", "allocated: 1.4 GiB"),
    ("worker pid 4242 ready", "worker pid 5151 ready"),
    ("rendezvous at 127.0.0.1:29500", "rendezvous at 127.0.0.1:41233"),
    ("scratch in /tmp/tmpab12cd34/run", "scratch in /tmp/tmpzz99yy11/run"),
    ("<__main__.Net object at 0x7f12ba4bcdf0>", "<__main__.Net object at 0x7f99ab00c1d0>"),
    ("throughput 1234.5 samples/s", "throughput 1187.2 samples/s"),
    ("eta 0:01:02", "eta 0:00:59"),
    ("took 3.2 s", "took 2.9 s"),
    ("| step   3 | ms/batch  45.23 | loss  3.47", "| step   3 | ms/batch 145.23 | loss  3.47"),
    ("run id 1b4e28ba-2fa1-11d2-883f-0016d3cca427", "run id 6fa459ea-ee8a-3ca4-894e-db77e160355e"),
]  # fmt: skip

# Lines whose difference is a real difference in results.
MEANINGFUL = [
    ("iter 0: loss 3.4553", "iter 0: loss 3.4975"),
    ("accuracy: 98.5%", "accuracy: 98.1%"),
    ("val loss 2.3456 | ppl 10.44", "val loss 2.3460 | ppl 10.44"),
    ("step 10 lr 0.001 loss 1.2", "step 10 lr 0.002 loss 1.2"),
    ("Epoch 3: 100%|####| 25/25 [00:01<00:00, 19.23it/s, loss=0.231]", "Epoch 3: 100%|####| 25/25 [00:01<00:00, 19.23it/s, loss=0.232]"),
    ("errors per class [0.0, 6194.0, 2657.0]", "errors per class [0.0, 6073.0, 2681.0]"),
]  # fmt: skip


@pytest.mark.parametrize(("first", "second"), VOLATILE)
def test_volatile_fields_are_masked(first: str, second: str) -> None:
    assert first != second
    assert mask_line(first) == mask_line(second)


@pytest.mark.parametrize(("first", "second"), MEANINGFUL)
def test_results_are_not_masked(first: str, second: str) -> None:
    assert mask_line(first) != mask_line(second)


def test_this_machines_name_and_temporary_directory_are_masked() -> None:
    host = socket.gethostname()
    temporary = tempfile.gettempdir()
    assert mask_line(f"running on {host}") == mask_line("running on <host>")
    assert mask_line(f"wrote {temporary}/xyz/ckpt.pt") == "wrote <tmp>"


def test_a_carriage_return_rewrites_its_line() -> None:
    """Progress bars redraw their line as often as time allows: only what a terminal shows
    at the end counts, so runs that redrew it a different number of times agree."""
    first = "\r 10%|#   | 1/10\r 50%|#####  | 5/10\r100%|##########| 10/10\nloss 1.0\n"
    second = "\r100%|##########| 10/10\nloss 1.0\n"
    assert mask(first) == mask(second) == ["100%|##########| 10/10", "loss 1.0"]


def test_ansi_colours_are_ignored() -> None:
    assert mask("\x1b[32mloss 1.0\x1b[0m\n") == ["loss 1.0"]


def test_the_first_differing_line_is_reported() -> None:
    found = first_difference(
        "stdout", "time 3ms\nloss 1.0\nloss 2.0\n", "time 4ms\nloss 1.0\nloss 2.5\n"
    )
    assert found is not None
    assert (found.stream, found.line, found.first, found.second) == (
        "stdout",
        3,
        "loss 2.0",
        "loss 2.5",
    )
    assert "line 3 differs" in found.message


def test_a_run_that_printed_more_is_a_difference() -> None:
    found = first_difference("stdout", "a\nb\n", "a\n")
    assert found is not None
    assert (found.line, found.first, found.second) == (2, "b", None)
    assert first_difference("stdout", "time 1s\n", "time 2s\n") is None
