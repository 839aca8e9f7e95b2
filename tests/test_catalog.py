"""The op catalog: its invariants, and self-checks against the installed torch."""

from __future__ import annotations

import inspect
import itertools
import re
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from repro_lint.catalog import (
    BY_ID,
    DETERMINISTIC_MODE_SINCE,
    ENTRIES,
    HAS_NO_DETERMINISTIC_KERNEL,
    MISSING,
    NEEDS_DETERMINISTIC_MODE,
    UNKNOWN,
    Api,
    ApiKind,
    Behaviour,
    Device,
    Entry,
    Scope,
    TensorFacts,
    Value,
    apis_named,
    reported,
)
from repro_lint.torch_versions import TorchVersion, parse_version

# -- invariants -------------------------------------------------------------------------------


def test_ids_are_unique_kebab_case() -> None:
    ids = [entry.id for entry in ENTRIES]
    assert len(ids) == len(set(ids))
    for entry_id in ids:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", entry_id), entry_id


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.id)
def test_history_is_ordered_and_changes(entry: Entry) -> None:
    assert entry.apis and entry.history
    starts = [period.since for period in entry.history]
    assert starts == sorted(starts) and len(set(starts)) == len(starts)
    behaviours = [period.behaviour for period in entry.history]
    assert all(a is not b for a, b in itertools.pairwise(behaviours))
    # Before its first period the catalog does not vouch for the op; from then on it does.
    # A release older than deterministic mode itself runs the kernels that its first release
    # listed as having no deterministic implementation, uncaught.
    before = TorchVersion(entry.since.major, entry.since.minor - 1)
    first = entry.history[0]
    predates_mode = (
        first.since == DETERMINISTIC_MODE_SINCE and first.behaviour in HAS_NO_DETERMINISTIC_KERNEL
    )
    assert entry.behaviour(before) is (Behaviour.SILENT if predates_mode else None)
    assert entry.behaviour(TorchVersion(99, 0)) is entry.history[-1].behaviour


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.id)
def test_raising_entries_name_the_alert_caller(entry: Entry) -> None:
    if any(period.behaviour is Behaviour.RAISES for period in entry.history):
        assert entry.caller, "an op that raises must say what PyTorch's alert names"


@pytest.mark.parametrize("entry", reported(), ids=lambda e: e.id)
def test_reported_entries_have_an_example_of_their_main_api(entry: Entry) -> None:
    assert entry.example is not None
    assert re.search(rf"\b{re.escape(entry.main_api.short)}\(", entry.example), entry.example


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.id)
def test_conditions_read_parameters_the_api_has(entry: Entry) -> None:
    for api in entry.apis:
        known = set(api.params) | set(api.forward) | {"input"}
        # Keyword-only parameters (``dtype`` of torch.cumsum, ``reduce`` of scatter_, ``aggr``
        # of the graph layers) are read by keyword; the self-checks below verify their names.
        unknown = api.when.params() - known - {"dtype", "reduce", "aggr"}
        assert not unknown, (api.name, unknown)


def test_shadowing_entries_share_an_api_and_take_precedence() -> None:
    for entry in ENTRIES:
        if entry.shadowed_by is None:
            continue
        other = BY_ID[entry.shadowed_by]
        assert {a.name for a in entry.apis} & {a.name for a in other.apis}
        # Precedence: the shadowing entry has no deterministic kernel whenever this one is
        # reported.
        for period in entry.history:
            assert other.behaviour(period.since) in HAS_NO_DETERMINISTIC_KERNEL


def test_every_behaviour_and_scope_is_used() -> None:
    behaviours = {period.behaviour for entry in ENTRIES for period in entry.history}
    assert behaviours == set(Behaviour)
    assert {entry.scope for entry in ENTRIES} == set(Scope)


def test_lookup_by_name_follows_module_paths() -> None:
    assert apis_named("torch.nn.modules.upsampling.Upsample") == apis_named("torch.nn.Upsample")
    assert apis_named("torch.nn.Upsample")
    assert apis_named("numpy.median") == ()


class _View:
    def __init__(self, **values: Value) -> None:
        self.values = values

    def value(self, param: str) -> Value:
        return self.values.get(param, MISSING)


def _api(entry_id: str, name: str) -> Api:
    return next(api for api in BY_ID[entry_id].apis if api.name == name)


def test_conditions_are_three_valued() -> None:
    bincount = _api("bincount-weights-cuda", "torch.bincount").when
    assert bincount.evaluate(_View()) is False
    assert bincount.evaluate(_View(weights=None)) is False
    assert bincount.evaluate(_View(weights=UNKNOWN)) is True
    interpolate = _api("interpolate-bicubic-backward-cuda", "torch.nn.functional.interpolate")
    assert interpolate.when.evaluate(_View()) is False
    assert interpolate.when.evaluate(_View(mode="bicubic")) is True
    assert interpolate.when.evaluate(_View(mode="bicubic", antialias=True)) is False
    assert interpolate.when.evaluate(_View(mode=UNKNOWN)) is None
    # Only what the call leaves open is described: one part, then two.
    assert len(interpolate.when.undecided(_View(mode=UNKNOWN))) == 1
    assert len(interpolate.when.undecided(_View(mode=UNKNOWN, antialias=UNKNOWN))) == 2
    assert interpolate.when.undecided(_View(mode="bicubic")) == ()
    pool = _api("adaptive-avg-pool2d-backward-cuda", "torch.nn.AdaptiveAvgPool2d").when
    assert pool.evaluate(_View(output_size=1)) is False
    assert pool.evaluate(_View(output_size=(1, 1))) is False
    assert pool.evaluate(_View(output_size=(7, 7))) is True
    assert pool.evaluate(_View(output_size=(1, None))) is True
    assert pool.evaluate(_View(output_size=UNKNOWN)) is None
    # Spatial input must be proven; unknown is quiet.
    nll = _api("nll-loss2d-forward-cuda", "torch.nn.functional.nll_loss").when
    assert nll.evaluate(_View(input=TensorFacts())) is False
    assert nll.evaluate(_View(input=TensorFacts(ndim=4))) is True
    assert nll.evaluate(_View(input=TensorFacts(ndim=4), reduction="none")) is False
    assert nll.evaluate(_View(input=TensorFacts(ndim=2))) is False
    # histc: floating when decidable, so unknown input is reported.
    histc = _api("histc-float-cuda", "torch.histc").when
    assert histc.evaluate(_View(input=TensorFacts(floating=False))) is False
    assert histc.evaluate(_View(input=TensorFacts())) is None


def test_version_awareness() -> None:
    cumsum, cumsum_1d = BY_ID["cumsum-cuda"], BY_ID["cumsum-1d-cuda"]
    assert cumsum.behaviour(TorchVersion(1, 12)) is None
    assert cumsum.behaviour(TorchVersion(2, 5)) is Behaviour.RAISES
    assert cumsum.behaviour(TorchVersion(2, 13)) is Behaviour.DETERMINISTIC
    assert cumsum_1d.behaviour(TorchVersion(2, 5)) is None
    assert cumsum_1d.behaviour(TorchVersion(2, 13)) is Behaviour.FIXED_BY_MODE
    kthvalue = BY_ID["kthvalue-cuda"]
    assert kthvalue.behaviour(TorchVersion(2, 9)) is Behaviour.RAISES
    assert kthvalue.behaviour(TorchVersion(2, 10)) is Behaviour.DETERMINISTIC
    assert kthvalue.until == TorchVersion(2, 10) and cumsum_1d.until is None


def test_catalog_imports_without_torch_or_libcst() -> None:
    code = (
        "import sys\n"
        "sys.modules['torch'] = None\n"
        "sys.modules['libcst'] = None\n"
        "import repro_lint.catalog\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# -- self-checks against the installed torch ----------------------------------------------------

torch_only = pytest.mark.torch


def _installed() -> TorchVersion:
    import torch

    version = parse_version(torch.__version__.split("+")[0])
    assert version is not None
    return version


def _resolve(qualified: str) -> Any:
    import torch

    obj: Any = torch
    for part in qualified.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


ALL_APIS = sorted({api.name for entry in ENTRIES if entry.package is None for api in entry.apis})
LIBRARY_APIS = sorted(
    {(entry.package, api.name) for entry in ENTRIES if entry.package for api in entry.apis}
)


@torch_only
@pytest.mark.parametrize("name", ALL_APIS)
def test_every_api_resolves_on_the_installed_torch(name: str) -> None:
    assert callable(_resolve(name))


@torch_only
@pytest.mark.parametrize(("package", "name"), LIBRARY_APIS)
def test_every_library_api_resolves_in_its_package(package: str, name: str) -> None:
    """Third-party names exist in their package, where it is installed (the check runs
    wherever it is; without the package there is nothing to check)."""
    import importlib

    pytest.importorskip(package)
    parts = name.split(".")
    for split in range(len(parts) - 1, 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for part in parts[split:]:
            obj = getattr(obj, part)
        assert callable(obj), name
        return
    pytest.fail(f"no module of {name} imports")


def _docstring_apis() -> dict[str, set[str]]:
    """The ops in the two lists of ``use_deterministic_algorithms.__doc__``, by list."""
    import torch

    doc = torch.use_deterministic_algorithms.__doc__ or ""
    parts = re.split(r"normally-nondeterministic operations will (act|throw)", doc)
    assert len(parts) == 5, "the docstring's layout changed; update this parser"
    pattern = re.compile(r"^\s*\* :(?:class|func|meth):`(torch\.[\w.]+)`", re.MULTILINE)
    lists = {parts[1]: set(pattern.findall(parts[2])), parts[3]: set(pattern.findall(parts[4]))}
    return {"fixed": lists["act"], "raises": lists["throw"]}


@torch_only
def test_docstring_parser_finds_both_lists() -> None:
    lists = _docstring_apis()
    assert "torch.nn.Conv2d" in lists["fixed"] and "torch.Tensor.put_" in lists["raises"]


@torch_only
@pytest.mark.parametrize("section", ["fixed", "raises"])
def test_every_op_in_the_docstring_maps_to_an_entry(section: str) -> None:
    """A torch release that lists a new op fails here until the catalog covers it; where
    the catalog disagrees with the docstring for the installed release it says why."""
    installed = _installed()
    expected = Behaviour.FIXED_BY_MODE if section == "fixed" else Behaviour.RAISES
    for name in sorted(_docstring_apis()[section]):
        entries = [entry for entry, _ in apis_named(name)]
        assert entries, f"{name} ({section} in the docstring) has no catalog entry"
        agrees = [entry for entry in entries if entry.behaviour(installed) is expected]
        explained = [entry for entry in entries if entry.correction]
        assert agrees or explained, f"{name}: catalog and docstring disagree without a note"


def _overloads(api: Api) -> list[list[str]]:
    """Parameter names of each signature of ``api`` (the tensor itself named ``input``, or
    left out for a Tensor method), from Python or from the aten operator schemas."""
    import torch

    obj = _resolve(api.name)
    target = obj.__init__ if api.kind is ApiKind.MODULE else obj
    # ``F.max_pool3d`` and friends dispatch on ``return_indices`` to the function with it.
    if inspect.isfunction(target) and target in torch._jit_internal.boolean_dispatched:
        target = torch._jit_internal.boolean_dispatched[target]["if_true"]
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        signature = None
    if signature is not None and not any(
        p.kind is inspect.Parameter.VAR_POSITIONAL for p in signature.parameters.values()
    ):
        return [[name for name in signature.parameters if name != "self"]]
    found = []
    for schema in torch._C._jit_get_schemas_for_operator(f"aten::{api.short}"):
        names = [argument.name for argument in schema.arguments]
        if api.kind is ApiKind.METHOD:
            found.append([name for name in names if name != "self"])
        else:
            found.append(["input" if name == "self" else name for name in names])
    return found


@torch_only
@pytest.mark.parametrize(
    ("entry", "api"),
    [pytest.param(e, a, id=f"{e.id}:{a.name}") for e in reported() for a in e.apis],
)
def test_condition_parameters_exist_on_the_installed_torch(entry: Entry, api: Api) -> None:
    overloads = _overloads(api)
    if not overloads:
        pytest.skip(f"{api.name} documents no signature")
    for param in sorted(api.when.params() - set(api.forward)):
        if param == "input" and api.kind is ApiKind.METHOD:
            continue
        position = api.params.index(param) if param in api.params else None
        matches = []
        for names in overloads:
            if position is None:
                matches.append(param in names)
            else:
                matches.append(position < len(names) and names[position] == param)
        assert any(matches), (api.name, param, overloads)


@contextmanager
def _deterministic_mode() -> Iterator[None]:
    import torch

    before = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before, warn_only=warn_only)


def _probes() -> dict[str, Callable[[], object]]:
    """CPU code for each entry that deterministic mode judges on the CPU."""
    import torch
    from torch.nn import functional

    idx = torch.tensor([0, 1, 1, 2])
    ones = torch.ones(4)

    def unpool(dims: int) -> object:
        pool = getattr(functional, f"max_pool{dims}d")
        unpool = getattr(functional, f"max_unpool{dims}d")
        out, indices = pool(torch.randn(1, 1, *([4] * dims)), 2, return_indices=True)
        return unpool(out, indices, 2)

    def getitem_backward() -> object:
        x = torch.randn(5, requires_grad=True)
        return torch.autograd.grad(x[idx].sum(), x)

    def setitem() -> object:
        x = torch.zeros(5)
        x[idx] = ones
        return x

    def resize_quantized() -> object:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # quantized dtypes are deprecated in 2.13
            quantized = torch.quantize_per_tensor(torch.rand(4), 0.1, 0, torch.quint8)
        return quantized.resize_(8)

    return {
        "put-accumulate-false": lambda: torch.zeros(4).put_(idx, ones),
        "max-unpool1d": lambda: unpool(1),
        "max-unpool2d": lambda: unpool(2),
        "max-unpool3d": lambda: unpool(3),
        "resize-quantized": resize_quantized,
        "index-put-accumulate-false": lambda: torch.zeros(4).index_put_((idx,), ones),
        "index-put-accumulate-true-cpu": lambda: torch.zeros(4).index_put_(
            (idx,), ones, accumulate=True
        ),
        "put-accumulate-true-cpu": lambda: torch.zeros(4).put_(idx, ones, accumulate=True),
        "index-copy": lambda: torch.zeros(3).index_copy_(0, idx, ones),
        "getitem-backward-cpu": getitem_backward,
        "setitem-duplicate-indices": setitem,
    }


def _judged_on_cpu(behaviours: frozenset[Behaviour]) -> set[str]:
    installed = _installed()
    return {
        entry.id
        for entry in ENTRIES
        if entry.device in (Device.CPU, Device.ANY) and entry.behaviour(installed) in behaviours
    }


@torch_only
def test_every_cpu_entry_has_a_probe() -> None:
    judged = _judged_on_cpu(frozenset({Behaviour.RAISES}) | NEEDS_DETERMINISTIC_MODE)
    assert judged == set(_probes())


CPU_ENTRIES = [entry for entry in ENTRIES if entry.device in (Device.CPU, Device.ANY)]


@torch_only
@pytest.mark.parametrize("entry", CPU_ENTRIES, ids=lambda e: e.id)
def test_cpu_entries_behave_as_catalogued(entry: Entry) -> None:
    """Where the op raises on the CPU, PyTorch's error names the catalogued caller; where
    deterministic mode fixes it, the op runs in deterministic mode."""
    behaviour = entry.behaviour(_installed())
    probe = _probes()[entry.id]
    if behaviour is Behaviour.RAISES:
        with _deterministic_mode(), pytest.raises(RuntimeError) as raised:
            probe()
        message = str(raised.value)
        assert f"{entry.caller} does not have a deterministic implementation" in message
    else:
        assert behaviour is Behaviour.FIXED_BY_MODE
        with _deterministic_mode():
            probe()
