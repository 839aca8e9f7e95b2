"""benchmarks/cold_split.py on a five-file project: not part of the suite's timing, but it
must keep classifying files as the per-file pass treats them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import cold_split

FILES = {
    # cudnn.benchmark = True: a finding.
    "flagged.py": "import torch\n\ntorch.backends.cudnn.benchmark = True\n",
    # A catalog word (``pad``) in a call that the catalog's conditions clear.
    "padding.py": (
        "import torch.nn.functional as F\n\n\ndef widen(x):\n    return F.pad(x, (0, 1))\n"
    ),
    # No rule's trigger word, but a script's shape: parsed as a possible entry point.
    "script.py": "import json\n\n\ndef main():\n    print(json.dumps({}))\n\n\nmain()\n",
    # Imports something, no trigger, no entry shape: its summary waits.
    "helpers.py": "import json\n\n\ndef dump(value):\n    return json.dumps(value)\n",
    # Imports nothing: settled from its text.
    "constants.py": "WIDTH = 3\n",
}


def test_every_file_lands_in_its_class(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name, text in FILES.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    cold_split.main([str(tmp_path)])
    out = capsys.readouterr().out
    counts = {
        line.split()[0]: int(line.split()[1])
        for line in out.splitlines()
        if line.split() and line.split()[0] in cold_split.CLASSES
    }
    assert counts == {
        "findings": 1,
        "catalog-only": 1,
        "rules-only": 0,
        "entry-only": 1,
        "deferred": 1,
        "settled": 1,
    }
    assert "libcst parse floor" in out
    assert "ast parse and walk of every node" in out
