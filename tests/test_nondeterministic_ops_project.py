"""RPL402 across files: the programs that reach a call decide, and the fix goes to the entry
point, which may be another file than the finding."""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Callable
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner, Result
from projects import relative_json

from repro_lint.cli import main

MODEL = """\
import torch


def count(labels):
    totals = torch.zeros(10)
    totals.index_add_(0, labels, torch.ones(len(labels)))
    return totals
"""
TRAIN = """\
import torch

from model import count


def main():
    print(count(torch.tensor([1, 2, 2])))


if __name__ == "__main__":
    main()
"""
ENABLED = TRAIN.replace(
    'if __name__ == "__main__":\n',
    'if __name__ == "__main__":\n    torch.use_deterministic_algorithms(True)\n',
)


def write(root: Path, files: dict[str, str]) -> None:
    (root / "pyproject.toml").write_text(
        '[project]\nname = "p"\nversion = "0"\ndependencies = ["torch>=2.10"]\n'
        '[tool.repro-lint]\nselect = ["RPL402"]\n',
        encoding="utf-8",
    )
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")


def run(root: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> Result:
    monkeypatch.chdir(root)
    return CliRunner().invoke(main, ["check", ".", "--no-cache", *args], catch_exceptions=False)


def findings(result: Result) -> list[dict[str, object]]:
    data: list[dict[str, object]] = relative_json(result.stdout)
    return data


def test_the_fix_for_a_call_in_a_module_goes_to_the_entry_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, {"model.py": MODEL, "train.py": TRAIN})
    found = findings(run(tmp_path, monkeypatch, "--output-format", "json"))
    assert [(f["filename"], f["code"], f["location"]["row"]) for f in found] == [  # type: ignore[index]
        ("model.py", "RPL402", 6)
    ]
    edits = found[0]["fix"]["edits"]  # type: ignore[index]
    assert [(e["filename"], e["location"]["row"]) for e in edits] == [("train.py", 11)]
    result = run(tmp_path, monkeypatch, "--fix")
    assert result.exit_code == 0, result.stdout
    assert (tmp_path / "model.py").read_text(encoding="utf-8") == MODEL
    assert (tmp_path / "train.py").read_text(encoding="utf-8") == TRAIN.replace(
        "    main()\n", "    torch.use_deterministic_algorithms(True, warn_only=True)\n    main()\n"
    )
    assert run(tmp_path, monkeypatch).exit_code == 0


def test_no_finding_when_every_entry_point_turns_the_mode_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, {"model.py": MODEL, "train.py": ENABLED})
    assert run(tmp_path, monkeypatch).exit_code == 0


def test_only_the_entry_points_that_need_it_are_edited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, {"model.py": MODEL, "train.py": ENABLED, "evaluate.py": TRAIN})
    found = findings(run(tmp_path, monkeypatch, "--output-format", "json"))
    assert len(found) == 1
    edits = found[0]["fix"]["edits"]  # type: ignore[index]
    assert {e["filename"] for e in edits} == {"evaluate.py"}
    run(tmp_path, monkeypatch, "--fix")
    assert (tmp_path / "train.py").read_text(encoding="utf-8") == ENABLED
    assert "use_deterministic_algorithms(True, warn_only=True)" in (
        tmp_path / "evaluate.py"
    ).read_text(encoding="utf-8")


def test_a_module_checked_alone_is_judged_per_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What pre-commit does with a changed library module: no entry point is in the run.
    The hazard is reported, but library code gets no fix (no global mode set on import)."""
    write(tmp_path, {"model.py": MODEL, "train.py": ENABLED})
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(
        main, ["check", "model.py", "--no-cache", "--output-format", "json"]
    )
    found = findings(result)
    assert [(f["code"], f["location"]["row"]) for f in found] == [("RPL402", 6)]  # type: ignore[index]
    assert found[0]["fix"] is None
    # A script doing the same at module level is fixed in place.
    (tmp_path / "script.py").write_text(
        "import torch\n\nlabels = torch.tensor([0, 1, 1])\n"
        "totals = torch.zeros(10).index_add_(0, labels, torch.ones(3))\n",
        encoding="utf-8",
    )
    result = CliRunner().invoke(
        main, ["check", "script.py", "--no-cache", "--output-format", "json"]
    )
    (script,) = findings(result)
    assert script["fix"]["applicability"] == "safe"  # type: ignore[index]
    assert all("filename" not in e for e in script["fix"]["edits"])  # type: ignore[index]


def test_sarif_carries_a_fix_in_another_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sarif_schema: dict[str, object]
) -> None:
    write(tmp_path, {"model.py": MODEL, "train.py": TRAIN})
    document = json.loads(run(tmp_path, monkeypatch, "--output-format", "sarif").stdout)
    jsonschema.Draft4Validator(sarif_schema).validate(document)
    (result,) = document["runs"][0]["results"]
    changes = result["fixes"][0]["artifactChanges"]
    assert [c["artifactLocation"]["uri"] for c in changes] == ["train.py"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "model.py"


UNSET = """\
import torch


def unset_deterministic():
    torch.use_deterministic_algorithms(False)
"""
TRAIN_UNSET = """\
import torch

from model import count
from unset import unset_deterministic


def main():
    print(count(torch.tensor([1, 2, 2])))
    unset_deterministic()


if __name__ == "__main__":
    main()
"""


def test_no_fix_where_the_program_switches_the_mode_off_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fix at the top of the main block would be undone by a helper the program calls:
    the override is reported instead, and ``--fix`` leaves every file alone."""
    files = {"model.py": MODEL, "train.py": TRAIN_UNSET, "unset.py": UNSET}
    write(tmp_path, files)
    (finding,) = findings(run(tmp_path, monkeypatch, "--output-format", "json"))
    assert finding["fix"] is None
    assert str(finding["message"]).endswith(
        "(no fix: unset.py:5 switches deterministic mode off again)"
    )
    run(tmp_path, monkeypatch, "--fix")
    for name, text in files.items():
        assert (tmp_path / name).read_text(encoding="utf-8") == text


def test_a_switch_off_the_program_never_reaches_is_no_override(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, {"model.py": MODEL, "train.py": TRAIN, "unset.py": UNSET})
    (finding,) = findings(run(tmp_path, monkeypatch, "--output-format", "json"))
    assert finding["fix"] is not None
    assert "switches deterministic mode off" not in str(finding["message"])


GRAPH_MODEL = """\
import torch
from torch_geometric.nn import GCNConv


class GCN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = GCNConv(16, 4)

    def forward(self, x, edge_index):
        return self.conv(x, edge_index)
"""


def test_library_layers_that_deterministic_mode_fixes_follow_the_programs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RPL403: a PyG layer in a model module is quiet when every entry point that reaches
    it turns deterministic mode on, and reported when one does not."""
    program = TRAIN.replace("from model import count", "from graph import GCN").replace(
        "print(count(torch.tensor([1, 2, 2])))", "print(GCN())"
    )
    enabled = program.replace(
        'if __name__ == "__main__":\n',
        'if __name__ == "__main__":\n    torch.use_deterministic_algorithms(True)\n',
    )
    write(tmp_path, {"graph.py": GRAPH_MODEL, "train.py": enabled})
    assert run(tmp_path, monkeypatch, "--select", "RPL403").exit_code == 0
    (tmp_path / "evaluate.py").write_text(program, encoding="utf-8")
    found = findings(run(tmp_path, monkeypatch, "--select", "RPL403", "--output-format", "json"))
    assert [(f["filename"], f["code"], f["location"]["row"]) for f in found] == [  # type: ignore[index]
        ("graph.py", "RPL403", 8)
    ]


# -- backward-only hazards in a helper, judged by its callers in other modules -------------------

RESIZE = """\
import torch.nn.functional as F


def upscale(x, factor):
    return F.interpolate(x, scale_factor=factor, mode="bicubic")
"""
CALLERS = {
    "frames.py": """\
import torch
from torch.utils.data import Dataset

from ops import upscale


class Frames(Dataset):
    def __getitem__(self, index):
        return upscale(torch.load(f"{index}.pt"), 4)
""",
    "evaluate.py": """\
import torch

from ops import upscale


@torch.no_grad()
def evaluate(model, images):
    return model(upscale(images, 2))
""",
    "model.py": """\
from torch import nn

import ops


class Net(nn.Module):
    def predict(self, x):
        return self.forward(ops.upscale(x, 2))

    def _multiscale(self, x):
        return self.forward(ops.upscale(x, 0.5))
""",
}


def _rpl401(root: Path, monkeypatch: pytest.MonkeyPatch, *paths: str) -> list[tuple[object, ...]]:
    result = run(root, monkeypatch, "--select", "RPL401", "--output-format", "json", *paths)
    return [(f["filename"], f["location"]["row"]) for f in findings(result)]  # type: ignore[index]


def test_a_helper_only_data_and_evaluation_code_calls_is_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, {"ops.py": RESIZE, **CALLERS})
    assert _rpl401(tmp_path, monkeypatch) == []
    # Pre-commit passes the helper's module alone: its callers are still found.
    monkeypatch.chdir(tmp_path)
    alone = CliRunner().invoke(
        main, ["check", "ops.py", "--select", "RPL401", "--no-cache", "--output-format", "json"]
    )
    assert findings(alone) == []


def test_a_helper_a_training_step_calls_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    train = """\
from ops import upscale


def step(model, images, target, optimizer):
    loss = (upscale(model(images), 2) - target).abs().mean()
    loss.backward()
    optimizer.step()
"""
    write(tmp_path, {"ops.py": RESIZE, **CALLERS, "train.py": train})
    assert _rpl401(tmp_path, monkeypatch) == [("ops.py", 5)]


@pytest.mark.parametrize(
    ("name", "text"),
    [
        pytest.param(
            "augment.py",
            "from torchvision import transforms\n\nfrom ops import upscale\n\n"
            "pipeline = transforms.Lambda(upscale)\n",
            id="passed on as a value",
        ),
        pytest.param(
            "model.py",
            CALLERS["model.py"].replace("_multiscale", "multiscale"),
            id="a public method may be called from anywhere",
        ),
        pytest.param(
            "ops.py",
            RESIZE + "\n\nTABLE = {'up': upscale}\n",
            id="its own module passes it on",
        ),
        pytest.param(
            "__init__.py",
            "from ops import upscale as resize\n",
            id="bound under another name",
        ),
    ],
)
def test_a_helper_others_may_call_with_grad_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, text: str
) -> None:
    write(tmp_path, {"ops.py": RESIZE, **CALLERS, name: text})
    assert _rpl401(tmp_path, monkeypatch) == [("ops.py", 5)]


# A helper of a helper: ``prepare`` (a plain function of another module) calls ``upscale``,
# and is itself called only by data code, directly or through ``augment`` in its own module.
PIPELINE = {
    "pipeline.py": """\
from ops import upscale


def prepare(frames, size):
    return upscale(frames, size)


def augment(frames):
    return prepare(frames.flip(-1), 2)
""",
    "frames.py": """\
import torch
from torch.utils.data import Dataset

import pipeline


class Frames(Dataset):
    def __getitem__(self, index):
        clip = torch.load(f"{index}.pt")
        return pipeline.prepare(clip, 4), pipeline.augment(clip)
""",
}


# The same, within one module: ``upscale`` is called by ``prepare`` and ``augment`` there,
# plain functions that only data code calls (``augment`` through ``prepare``'s caller).
IN_ONE_MODULE = {
    "ops.py": RESIZE
    + """

def prepare(frames):
    return upscale(frames.float(), 2)


def augment(frames):
    return prepare(frames.flip(-1))
""",
    "frames.py": """\
import torch
from torch.utils.data import Dataset

import ops


class Frames(Dataset):
    def __getitem__(self, index):
        clip = torch.load(f"{index}.pt")
        return ops.prepare(clip), ops.augment(clip)
""",
}


@pytest.mark.parametrize(
    "files", [PIPELINE, IN_ONE_MODULE], ids=["in other modules", "in its own module"]
)
def test_a_helper_that_data_code_s_plain_helpers_call_is_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str]
) -> None:
    write(tmp_path, {"ops.py": RESIZE, **files})
    assert _rpl401(tmp_path, monkeypatch) == []


@pytest.mark.parametrize(
    ("files", "name", "text"),
    [
        pytest.param(
            PIPELINE,
            "train.py",
            "import pipeline\n\n\ndef step(model, clip):\n"
            "    model(pipeline.augment(clip)).sum().backward()\n",
            id="a training step calls the helper's caller",
        ),
        pytest.param(
            PIPELINE,
            "train.py",
            "import pipeline\n\n\nclass Trainer:\n    def step(self, clip):\n"
            "        self.model(pipeline.prepare(clip, 2)).sum().backward()\n",
            id="a method may be called from anywhere",
        ),
        pytest.param(
            PIPELINE,
            "pipeline.py",
            PIPELINE["pipeline.py"] + "\n\nSTEPS = [augment]\n",
            id="its own module passes the caller on",
        ),
        pytest.param(
            PIPELINE,
            "pipeline.py",
            PIPELINE["pipeline.py"].replace("def augment", "@register\ndef augment"),
            id="a decorated caller may run anywhere",
        ),
        pytest.param(
            PIPELINE,
            "pipeline.py",
            "import torch\n"
            + PIPELINE["pipeline.py"].replace(
                "    return prepare(frames.flip(-1), 2)",
                "    with torch.enable_grad():\n        return prepare(frames.flip(-1), 2)",
            ),
            id="the caller switches grad on around the call",
        ),
        pytest.param(
            PIPELINE,
            "train.py",
            "import torch\n\nimport pipeline\n\n\ndef step(model):\n"
            "    model(pipeline.augment(torch.load('x.pt'))).sum().backward()\n",
            id="the caller runs in training, whatever it is passed",
        ),
        pytest.param(
            IN_ONE_MODULE,
            "train.py",
            "import ops\n\n\ndef step(model, clip):\n"
            "    model(ops.augment(clip)).sum().backward()\n",
            id="a training step calls the caller in the helper's module",
        ),
        pytest.param(
            IN_ONE_MODULE,
            "train.py",
            "import ops\n\n\ndef step(model, clip):\n"
            "    model(ops.upscale(model(clip), 2)).sum().backward()\n",
            id="another module calls the helper itself in training",
        ),
        pytest.param(
            IN_ONE_MODULE,
            "ops.py",
            IN_ONE_MODULE["ops.py"]
            + "\n\nclass Head:\n    def forward(self, x):\n        return upscale(x, 2)\n",
            id="a method of its module calls it",
        ),
        pytest.param(
            IN_ONE_MODULE,
            "ops.py",
            IN_ONE_MODULE["ops.py"] + "\n\nSTEPS = [augment]\n",
            id="its module passes a caller on",
        ),
        pytest.param(
            PIPELINE,
            "pipeline.py",
            PIPELINE["pipeline.py"].replace(
                "def augment(frames):\n    return prepare(frames.flip(-1), 2)",
                "def resizer(size):\n    return lambda frames: upscale(frames, size)\n\n\n"
                "def augment(frames):\n    return resizer(2)(frames.flip(-1))",
            ),
            id="a lambda's call runs wherever the lambda goes",
        ),
        pytest.param(
            IN_ONE_MODULE,
            "ops.py",
            IN_ONE_MODULE["ops.py"].replace(
                "def prepare(frames):\n    return upscale(frames.float(), 2)",
                "def prepare(frames):\n    for clip in frames:\n        yield upscale(clip, 2)",
            ),
            id="a generator's body runs where it is iterated",
        ),
    ],
)
def test_a_helper_whose_plain_callers_training_may_run_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str], name: str, text: str
) -> None:
    write(tmp_path, {"ops.py": RESIZE, **files, name: text})
    assert _rpl401(tmp_path, monkeypatch) == [("ops.py", 5)]


def test_a_helper_nothing_calls_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Library code: its users are not in the project."""
    write(tmp_path, {"ops.py": RESIZE})
    assert _rpl401(tmp_path, monkeypatch) == [("ops.py", 5)]


def _editor(root: Path) -> Callable[[str, str], None]:
    """Writes a file of ``root`` with a stamp of its own each time (edits within one clock
    tick would otherwise keep a file's stamp)."""
    steps = itertools.count(1)

    def edit(name: str, text: str) -> None:
        step = next(steps)
        path = root / name
        path.write_text(text, encoding="utf-8")
        os.utime(path, ns=(step, 10**9 * (1000 + step)))

    return edit


def _words_read(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The words the project's text is read for from now on (a tree read for each)."""
    from repro_lint import text_questions

    read: list[str] = []
    real_naming_files = text_questions.naming_files

    def naming_files(tree: text_questions.Tree, word: str) -> list[tuple[Path, int]]:
        read.append(word)
        return real_naming_files(tree, word)

    # (The program model asks through its own name, a pass checked again through the module's.)
    monkeypatch.setattr("repro_lint.program.naming_files", naming_files)
    monkeypatch.setattr(text_questions, "naming_files", naming_files)
    return read


def test_an_edit_of_a_module_an_earlier_pass_summarised_runs_the_pass_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``model.py`` is deferred by the per-file pass (no rule of its own runs there) and
    summarised by the first project pass, which the cache keeps. A second pass (another file
    edited) reads that whole summary; a third run, after an edit that leaves the file
    deferred but changes what its summary says, must not keep the second pass: its record
    once held the first pass's digest of the deferred file, which the edited file matches."""
    write(tmp_path, {"ops.py": RESIZE, **CALLERS})
    monkeypatch.chdir(tmp_path)
    edit = _editor(tmp_path)

    def cached() -> list[tuple[object, ...]]:
        result = CliRunner().invoke(
            main, ["check", ".", "--select", "RPL401", "--output-format", "json"]
        )
        return [(f["filename"], f["location"]["row"]) for f in findings(result)]  # type: ignore[index]

    assert cached() == []
    edit("frames.py", CALLERS["frames.py"] + "\n    def __len__(self):\n        return 8\n")
    assert cached() == []
    # The private method is made public: callable from anywhere, with gradients.
    edit("model.py", CALLERS["model.py"].replace("_multiscale", "multiscale"))
    assert cached() == _rpl401(tmp_path, monkeypatch) == [("ops.py", 5)]


def test_a_pass_run_again_takes_the_last_ones_answers_about_the_text_while_they_hold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A code edit runs the project pass again; what it asks of the project's text (which
    files name the helper, whether a private method is named elsewhere) is answered from
    the last pass's answers and the edited files, without reading the tree for each
    question, while the tree has the same files. Each run finds what a run without a
    cache finds."""
    write(tmp_path, {"ops.py": RESIZE, **CALLERS})
    read = _words_read(monkeypatch)
    edit = _editor(tmp_path)

    def both() -> list[tuple[object, ...]]:
        """The findings of a run with the cache, checked against a run without it."""
        args = ["check", ".", "--select", "RPL401", "--output-format", "json"]
        cached = CliRunner().invoke(main, args)
        found: list[tuple[object, ...]] = [
            (f["filename"], f["location"]["row"])  # type: ignore[index]
            for f in findings(cached)
        ]
        read_now = list(read)
        assert findings(CliRunner().invoke(main, [*args, "--no-cache"])) == findings(cached)
        read[:] = read_now
        return found

    monkeypatch.chdir(tmp_path)
    assert both() == [] and read == ["upscale"]
    # The data code's summary changes (a method added): asked again, answered as before.
    read.clear()
    edit("frames.py", CALLERS["frames.py"] + "\n    def __len__(self):\n        return 8\n")
    assert both() == [] and read == []
    # A training step instead: the answers hold, the verdict changes (a plain function's
    # call is judged by that function's callers: who names ``step`` is a new question).
    edit(
        "evaluate.py",
        CALLERS["evaluate.py"]
        .replace("@torch.no_grad()\n", "")
        .replace("return model(upscale(images, 2))", "upscale(model(images), 2).sum().backward()")
        .replace("def evaluate", "def step"),
    )
    assert both() == [("ops.py", 5)] and read == ["step"]
    read.clear()
    edit("evaluate.py", CALLERS["evaluate.py"])
    assert both() == [] and read == []
    # The private method is made public: whether ``_multiscale`` is named elsewhere is
    # answered from the edited file, and the method is now callable from anywhere.
    edit("model.py", CALLERS["model.py"].replace("_multiscale", "multiscale"))
    assert both() == [("ops.py", 5)] and read == []
    edit("model.py", CALLERS["model.py"])
    assert both() == []


def test_answers_about_the_text_are_read_again_once_the_tree_has_other_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run's record holds for ``src`` (the directory linted) while a file is added
    elsewhere in the project's tree, which the last pass's answers do not know about: the
    tree is read again, and the new file's training step keeps the finding."""
    (tmp_path / "src").mkdir()
    (tmp_path / "tools").mkdir()
    write(tmp_path / "src", {"ops.py": RESIZE, **CALLERS})
    (tmp_path / "src" / "pyproject.toml").rename(tmp_path / "pyproject.toml")
    read = _words_read(monkeypatch)
    monkeypatch.chdir(tmp_path)
    args = ["check", "src", "--select", "RPL401", "--output-format", "json"]
    assert findings(CliRunner().invoke(main, args)) == []
    frames = tmp_path / "src" / "frames.py"
    frames.write_text(CALLERS["frames.py"] + "\nSIZE = 8\n", encoding="utf-8")
    (tmp_path / "tools" / "train.py").write_text(
        "from src.ops import upscale\n\n\ndef step(m, x):\n    upscale(m(x), 2).sum().backward()\n",
        encoding="utf-8",
    )
    read.clear()
    cached = findings(CliRunner().invoke(main, args, catch_exceptions=False))
    # (``step`` calls the helper where a backward reaches: who calls ``step``?)
    assert read == ["upscale", "step"]
    assert cached == findings(CliRunner().invoke(main, [*args, "--no-cache"]))
    assert [(f["filename"], f["location"]["row"]) for f in cached] == [("src/ops.py", 5)]  # type: ignore[index]
