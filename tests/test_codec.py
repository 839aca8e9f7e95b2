"""The compact rows the run record stores results in: lossless, and checked field by field."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from repro_lint.codec import FormatError, Rows, results_from_rows
from repro_lint.diagnostics import Diagnostic, Edit, FileResult, Fix, FixSafety, Location


def finding(code: str = "RPL101", **changes: Any) -> Diagnostic:
    fields: dict[str, Any] = {
        "code": code,
        "name": "missing-seed",
        "message": "`torch` is used but never seeded",
        "filename": "train.py",
        "location": Location(3, 1),
        "end_location": Location(3, 9),
        "noqa_row": 3,
        "url": f"https://example.invalid/{code}.md",
    }
    fields.update(changes)
    return Diagnostic(**fields)


RESULTS = [
    FileResult(
        "train.py",
        (
            finding(),
            finding(
                "RPL301",
                name="dataloader-missing-generator",
                severity="warning",
                url=None,
                noqa_row=None,
                fix=Fix(
                    FixSafety.UNSAFE,
                    "Seed the loader",
                    (
                        Edit("generator=g, ", Location(9, 20), Location(9, 20)),
                        Edit("import torch\n", Location(1, 1), Location(1, 1), "main.py"),
                    ),
                ),
            ),
            # A finding the fix of another file's finding moved here (its own file name).
            finding(filename="other.py", fix=Fix(FixSafety.DISPLAY_ONLY, "See there", ())),
        ),
        unsettled=(finding("RPL401", name="nondeterministic-op", message="`index_add_`"),),
    ),
    FileResult(
        "notebook.ipynb",
        (finding(filename="notebook.ipynb", properties=(("cell", 2), ("verdict", [1, "x"]))),),
        cells=("import torch", "", "torch.rand(3)"),
    ),
]


def written() -> dict[str, Any]:
    rows = Rows()
    results = [rows.result(result) for result in RESULTS]
    # What the record keeps is what JSON gives back.
    data: dict[str, Any] = json.loads(json.dumps({"kinds": rows.kinds, "results": results}))
    return data


def test_results_come_back_as_they_were_written() -> None:
    data = written()
    assert results_from_rows(data["kinds"], data["results"]) == [
        FileResult(r.filename, r.diagnostics, unsettled=r.unsettled, cells=r.cells) for r in RESULTS
    ]
    # One kind per (code, name, url, severity), shared by the findings that have it.
    assert len(data["kinds"]) == 3


def test_an_unsettled_finding_the_pass_kept_is_written_as_its_index() -> None:
    kept = finding("RPL401", name="nondeterministic-op", message="`index_add_`")
    listed = finding(properties=(("verdict", [1, "x"]),))
    result = FileResult(
        "model.py",
        (finding(), kept, listed),
        unsettled=(kept, listed, finding("RPL402", name="nondeterministic-config")),
    )
    rows = Rows()
    data: list[Any] = json.loads(json.dumps([rows.kinds, [rows.result(result)]]))
    unsettled = data[1][0][2]
    # The kept one by index; one that cannot be hashed, and one of its own, in full.
    assert unsettled[0] == 1 and isinstance(unsettled[1], list) and isinstance(unsettled[2], list)
    assert results_from_rows(rows.kinds, data[1]) == [result]
    for bad in (3, -1):
        data[1][0][2][0] = bad
        with pytest.raises(FormatError, match="index is not among the findings"):
            results_from_rows(rows.kinds, data[1])


def _set(data: dict[str, Any], path: tuple[Any, ...], value: Any) -> None:
    target = data
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value


@pytest.mark.parametrize(
    ("path", "value", "reason"),
    [
        (("kinds", 0, 0), 101, "kind of finding"),
        (("kinds", 0), ["RPL101", "missing-seed", None], "kind of finding"),
        (("results", 0, 0), None, "a result is not"),
        (("results", 0, 1, 0, 0), 99, "not in the table"),
        (("results", 0, 1, 0, 0), True, "not in the table"),
        (("results", 0, 1, 0, 2), -1, "non-negative"),
        (("results", 0, 1, 0, 3), "1", "non-negative"),
        (("results", 0, 1, 0, 6), True, "wrong type"),
        (("results", 0, 1, 0, 7), 5, "wrong type"),
        (("results", 0, 1, 1, 8, 0), "always", "applicability"),
        (("results", 0, 1, 1, 8, 2, 0, 5), 3, "an edit is not"),
        (("results", 0, 1, 1, 8, 2, 0, 1), 2.5, "non-negative"),
        (("results", 0, 1, 0, 9), [["cell"]], "property"),
        (("results", 0, 2), {}, "not a list"),
        (("results", 1, 3, 0), 7, "notebook cell"),
        (("results", 0, 1, 0), [0, "short"], "10 fields"),
    ],
)
def test_a_row_of_the_wrong_shape_is_refused(
    path: tuple[Any, ...], value: Any, reason: str
) -> None:
    data = copy.deepcopy(written())
    _set(data, path, value)
    with pytest.raises(FormatError, match=reason):
        results_from_rows(data["kinds"], data["results"])
