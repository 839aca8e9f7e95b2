"""What a file's code says about the kernels RPL202 weighs, as summary events.

``KernelFacts`` rides along the project summary's traversal (``summary.py`` feeds it) and
records, per function, through the collector's events:

- ``["v", what]``: a cuDNN convolution is built or run (``what`` as in ``determinism.Kernel``);
- ``["a", what]``: an attention kernel that dispatches to SDPA is built or run;
- ``["g"]``: the code selects a CUDA device (``.cuda()``, ``"cuda"``, ``torch.cuda.*``, a
  cuDNN or CUDA backend setting, a framework that uses the GPU whenever there is one);
- ``["t"]``: the code trains (``backward``, ``zero_grad``, an optimizer step, a trainer's
  ``fit`` or ``train``, a gradient scaler);
- ``["n"]``: the code runs without gradients (``no_grad``/``inference_mode``, ``.eval()``);
- ``["h"]``: the code freezes a model but its head (linear probing): every parameter but the
  ``weight``/``bias`` named in a list, or all of them and then those of ``model.<head>`` again;
- ``["d", kind]``: a deterministic setting of ``determinism``'s kinds (the summary itself
  records the original ``cudnn`` and ``algorithms`` ones);
- ``["x", ref]``: a callable of a project module picked by name at run time
  (``models.__dict__[name]()``): the program model weighs every one the module defines.

Direct kernel calls (``F.scaled_dot_product_attention``, ``F.conv2d``, a MultiheadAttention
called with ``need_weights=False``) inside a gradient-free region run forward only and are not
recorded. Nothing here imports torch.
"""

from __future__ import annotations

import re
from typing import Any, Protocol

import libcst as cst

from repro_lint import determinism as det
from repro_lint import randomness as rng
from repro_lint.arguments import (
    argument,
    dict_literal_items,
    literal_bool,
    literal_int,
    literal_str,
    mentions_string,
)
from repro_lint.names import Names, dotted_name

Json = Any
_CUBLAS = "CUBLAS_WORKSPACE_CONFIG"
_ENV_SETTERS = frozenset({"os.environ.setdefault", "os.putenv", "os.environ.update"})
_MMENGINE_SEEDING = frozenset(
    {"mmengine.runner.set_random_seed", "mmengine.runner.utils.set_random_seed"}
)
_BACKENDS = ("torch.backends.cudnn.", "torch.backends.cuda.")
_ATTN_IMPLEMENTATION = "attn_implementation"
_EAGER = "eager"
# What a model's head is called (``fc``, ``head``, ``classifier``, ``last_linear``): trained
# again after the whole model was frozen, only it trains. Another part (``layer4``) trains
# its convolutions.
_HEAD = re.compile(r"^(fc|linear|last_linear|logits)$|head|classifier", re.I)


class EventSink(Protocol):
    """Where the facts go: the summary collector's per-function event list."""

    def event(self, node: cst.CSTNode, tag: str, *payload: Json, dedup: Json = None) -> None: ...

    def function_key(self) -> str: ...

    def class_key(self) -> str | None: ...

    def branched(self) -> bool: ...


def _on(value: cst.BaseExpression) -> bool:
    """A switch that may be on: a true literal, or a value decided at run time."""
    return literal_bool(value) is not False and literal_str(value) not in ("warn",)


class KernelFacts:
    """Collects one file's kernel, device and training evidence during the summary pass."""

    def __init__(self, names: Names, sink: EventSink) -> None:
        self._names = names
        self._sink = sink
        # Per function being visited: how many gradient-free regions enclose the code.
        self._grad_free: list[int] = [0]
        self._with_grad_free: list[bool] = []
        # MultiheadAttention modules: attributes per class, local names per function.
        self._mha_attributes: dict[str, set[str]] = {}
        self._mha_locals: dict[str, set[str]] = {}
        # Dict literals bound to local names, per function (for ``f(**kwargs)``).
        self._dicts: dict[str, dict[str, dict[str, cst.BaseExpression]]] = {}
        # Local names of model configs that select eager attention, per function.
        self._eager_configs: dict[str, set[str]] = {}
        # Models whose every parameter the function froze, per function (``model``,
        # ``model.module``), as written.
        self._frozen: dict[str, set[str]] = {}

    def _qualified(self, node: cst.CSTNode) -> str | None:
        return self._names.qualified_name(node)

    def _event(self, node: cst.CSTNode, tag: str, *payload: Json) -> None:
        # One piece of evidence per function is enough; settings count once per kind.
        dedup = (tag, str(payload[0])) if tag in ("d", "x") else (tag,)
        self._sink.event(node, tag, *payload, dedup=dedup)

    @property
    def _in_grad_free(self) -> bool:
        return self._grad_free[-1] > 0

    # -- scopes ---------------------------------------------------------------------------------

    def enter_function(self, node: cst.FunctionDef) -> None:
        free = any(self._grad_free_expression(d.decorator) for d in node.decorators)
        self._grad_free.append(1 if free else 0)
        if free:
            self._event(node, "n")

    def leave_function(self) -> None:
        self._grad_free.pop()

    def enter_with(self, node: cst.With) -> None:
        free = False
        for item in node.items:
            expression = item.item
            if self._grad_free_expression(expression):
                free = True
            elif type(expression) is cst.Call:
                self._sdpa_context(expression)
        self._with_grad_free.append(free)
        if free:
            self._grad_free[-1] += 1
            self._event(node, "n")

    def leave_with(self) -> None:
        if self._with_grad_free.pop():
            self._grad_free[-1] -= 1

    def _grad_free_expression(self, expression: cst.BaseExpression) -> bool:
        func = expression.func if type(expression) is cst.Call else expression
        qualified = self._qualified(func)
        if qualified in det.NO_GRAD:
            return True
        if qualified == det.SET_GRAD_ENABLED and type(expression) is cst.Call:
            arg = argument(expression, "mode", 0)
            return arg is not None and literal_bool(arg.value) is False
        return False

    def _sdpa_context(self, call: cst.Call) -> None:
        """``with sdpa_kernel(SDPBackend.MATH):`` covers attention; any other backend list
        says the program runs attention."""
        qualified = self._qualified(call.func)
        if qualified not in det.SDPA_CONTEXTS:
            return
        if qualified == "torch.backends.cuda.sdp_kernel":
            fast = [argument(call, name) for name in ("enable_flash", "enable_mem_efficient")]
            math_only = all(a is not None and literal_bool(a.value) is False for a in fast)
        else:
            arg = argument(call, "backends", 0)
            values: list[cst.BaseExpression] = []
            if arg is not None:
                value = arg.value
                if isinstance(value, cst.List | cst.Tuple):
                    values = [e.value for e in value.elements]
                else:
                    values = [value]
            math_only = bool(values) and all(
                self._qualified(v) == det.SDPA_MATH_BACKEND for v in values
            )
        if math_only:
            self._event(call, "d", det.SDPA_MATH)
        else:
            self._event(call, "a", "sdpa_kernel")

    # -- calls ----------------------------------------------------------------------------------

    def call(self, node: cst.Call, qualified: str | None) -> None:
        func = node.func
        for arg in node.args:
            keyword = arg.keyword
            if keyword is None:
                continue
            if keyword.value == "device_map":
                self._event(node, "g")
            elif keyword.value == "need_weights" and literal_bool(arg.value) is False:
                if self._is_mha(func) and not self._in_grad_free:
                    self._event(node, "a", "nn.MultiheadAttention(need_weights=False)")
        if type(func) is cst.Attribute:
            self._method(node, func)
        elif type(func) is cst.Subscript:
            self._lookup(node, func.value, subscript=True)
        elif type(func) is cst.Call and self._qualified(func.func) == "builtins.getattr":
            first = argument(func, None, 0)
            if first is not None:
                self._lookup(node, first.value, subscript=False)
        if qualified is not None and qualified.startswith(det.KNOWN_PREFIXES):
            self._known(node, qualified)

    def _method(self, node: cst.Call, func: cst.Attribute) -> None:
        """Methods on objects whose type is not known: what their names say for sure."""
        name = func.attr.value
        receiver = func.value
        if name == "cuda":
            self._event(node, "g")
        elif name in ("backward", "zero_grad") or (name == "fit" and self._trainer(receiver)):
            self._event(node, "t")
        elif name == "train":
            own = type(receiver) is cst.Name and receiver.value in ("self", "cls")
            mode = argument(node, "mode", 0)
            if not own and (mode is None or literal_bool(mode.value) is not False):
                self._event(node, "t")
        elif name == "step" and _optimizer_like(receiver):
            self._event(node, "t")
        elif name == "eval" and not node.args:
            self._event(node, "n")
        elif name == "requires_grad_":
            mode = argument(node, "requires_grad", 0)
            on = True if mode is None else literal_bool(mode.value)
            if on is not None:
                self._requires_grad(node, _dotted(receiver), on=on)

    # -- frozen backbones ------------------------------------------------------------------------

    def loop(self, node: cst.For) -> None:
        """``for name, p in model.named_parameters(): if name not in ["fc.weight", "fc.bias"]:
        p.requires_grad = False`` (the head's parameters named), or a loop that sets every
        parameter of a model, or of its head, alike."""
        iterated = node.iter
        if self._sink.branched() or not (
            type(iterated) is cst.Call
            and type(iterated.func) is cst.Attribute
            and iterated.func.attr.value in ("parameters", "named_parameters")
        ):
            return
        owner = _dotted(iterated.func.value)
        target = node.target
        name: str | None = None
        if type(target) is cst.Tuple and len(target.elements) == 2:
            first, second = (element.value for element in target.elements)
            if not (type(first) is cst.Name and type(second) is cst.Name):
                return
            name, parameter = first.value, second.value
        elif type(target) is cst.Name:
            parameter = target.value
        else:
            return
        body = _only_statement(node.body)
        if type(body) is cst.If and body.orelse is None and name is not None:
            if not _names_head_parameters(body.test, name):
                return
            on = _sets_requires_grad(_only_statement(body.body), parameter)
            if on is False:
                self._event(node, "h")
            return
        on = _sets_requires_grad(body, parameter)
        if on is not None:
            self._requires_grad(node, owner, on=on)

    def _requires_grad(self, node: cst.CSTNode, owner: str | None, *, on: bool) -> None:
        """Every parameter of ``owner`` frozen (``on`` False) or trained again: a model frozen
        and then its own ``<head>`` trained again is frozen but for its head. Only a freeze on
        every path counts (``if args.freeze:`` leaves the fine-tuning path training all)."""
        if owner is None or self._sink.branched():
            return
        frozen = self._frozen.setdefault(self._sink.function_key(), set())
        if not on:
            frozen.add(owner)
            return
        parent, _, attribute = owner.rpartition(".")
        if parent in frozen and _HEAD.search(attribute):
            self._event(node, "h")

    def _trainer(self, receiver: cst.BaseExpression) -> bool:
        """``trainer.fit(model)``, ``L.Trainer(...).fit(model)``: a Lightning-style trainer, not
        a scikit-learn estimator (whose ``fit`` trains nothing on the GPU)."""
        if type(receiver) is cst.Call:
            return self._qualified(receiver.func) in rng.LIGHTNING_TRAINERS
        try:
            name = dotted_name(receiver).rsplit(".", 1)[-1].lower()
        except TypeError:
            return False
        return "trainer" in name

    def _is_mha(self, callee: cst.BaseExpression) -> bool:
        """``attn(...)`` or ``self.attn(...)`` where that name holds a MultiheadAttention."""
        if type(callee) is cst.Name:
            return callee.value in self._mha_locals.get(self._sink.function_key(), ())
        klass = self._sink.class_key()
        return (
            klass is not None
            and type(callee) is cst.Attribute
            and _is_self(callee.value)
            and callee.attr.value in self._mha_attributes.get(klass, ())
        )

    def _lookup(self, node: cst.Call, holder: cst.BaseExpression, *, subscript: bool) -> None:
        """``models.__dict__[name](...)`` or ``getattr(models, name)(...)``: a callable of a
        module picked at run time."""
        if subscript:
            if not (type(holder) is cst.Attribute and holder.attr.value == "__dict__"):
                return
            holder = holder.value
        module = self._qualified(holder)
        if module is None:
            return
        if module in det.CONV_MODULES:
            self._event(node, "v", f"{module}.<name>" + det.INFERRED)
        elif not rng.is_library(module, self._names.module_name):
            self._event(node, "x", ["q", module])

    def _known(self, node: cst.Call, qualified: str) -> None:
        if qualified.startswith(det.CUDA_PREFIXES) or (
            qualified in det.CUDA_FRAMEWORKS and not self._cpu_only_framework(node)
        ):
            self._event(node, "g")
        if qualified in det.TRAINING_CALLS:
            self._event(node, "t")
        self._kernels(node, qualified)
        self._settings(node, qualified)

    @staticmethod
    def _cpu_only_framework(node: cst.Call) -> bool:
        """``Accelerator(cpu=True)``, ``Trainer(accelerator="cpu")``: no GPU whatever the
        machine has."""
        cpu = argument(node, "cpu")
        if cpu is not None and literal_bool(cpu.value) is True:
            return True
        accelerator = argument(node, "accelerator")
        return accelerator is not None and literal_str(accelerator.value) == "cpu"

    def _kernels(self, node: cst.Call, qualified: str) -> None:
        conv = det.conv_kernel(qualified)
        if conv is not None and not (qualified in rng.CONV_FUNCTIONS and self._in_grad_free):
            self._event(node, "v", conv.what)
        if qualified == det.MHA_FORWARD:
            weights = argument(node, "need_weights")
            if weights is not None and literal_bool(weights.value) is False:
                if not self._in_grad_free:
                    self._event(node, "a", "F.multi_head_attention_forward(need_weights=False)")
            return
        name = argument(node, "model_name", 0) if qualified in det.TIMM_FACTORIES else None
        attention = det.attention_kernel(
            qualified, literal_str(name.value) if name is not None else None
        )
        if attention is None:
            return
        if qualified == det.SDPA and self._in_grad_free:
            return
        if self._eager(node):
            # The eager implementation is matmul and softmax: deterministic.
            return
        self._event(node, "a", attention.what)

    def _selects_eager(self, node: cst.Call) -> bool:
        """``attn_implementation="eager"`` passed directly or in a ``**kwargs`` dict."""
        value = self._keyword(node, _ATTN_IMPLEMENTATION)
        return value is not None and literal_str(value) == _EAGER

    def _eager(self, node: cst.Call) -> bool:
        """A Hugging Face model built with eager attention: by keyword, or from a config
        object of this function that selects it (``config=cfg``, ``from_config(cfg)``)."""
        if self._selects_eager(node):
            return True
        names = self._eager_configs.get(self._sink.function_key())
        if not names:
            return False
        config = argument(node, "config")
        if config is None and type(node.func) is cst.Attribute:
            if node.func.attr.value in ("from_config", "_from_config"):
                config = argument(node, "config", 0)
        return config is not None and type(config.value) is cst.Name and config.value.value in names

    # -- settings -------------------------------------------------------------------------------

    def _settings(self, node: cst.Call, qualified: str) -> None:
        if qualified in rng.USE_DETERMINISTIC:
            mode = argument(node, "mode", 0) or argument(node, "d", 0)
            if mode is None:
                return
            if literal_bool(mode.value) is False:
                self._event(node, "d", det.ALGORITHMS_OFF)
            elif not self._keyword_true(node, "warn_only"):
                self._event(node, "d", det.STRICT)
        elif qualified == rng.DEBUG_MODE:
            mode = argument(node, "debug_mode", 0)
            if mode is not None and (
                literal_int(mode.value) == 2 or literal_str(mode.value) == "error"
            ):
                self._event(node, "d", det.STRICT)
        elif qualified in rng.LIGHTNING_TRAINERS:
            self._lightning(node)
        elif qualified in det.TRAINING_ARGUMENTS:
            value = self._keyword(node, "full_determinism")
            if value is not None and _on(value):
                self._both(node)
        elif qualified in det.SEEDING_SWITCHES:
            arg = argument(node, "deterministic", det.SEEDING_SWITCHES[qualified])
            if arg is not None and _on(arg.value):
                self._both(node)
        elif qualified in det.FULL_DETERMINISM:
            if not self._keyword_true(node, "warn_only"):
                self._event(node, "d", det.STRICT)
        elif qualified in (
            "mmengine.runner.set_random_seed",
            "mmengine.runner.utils.set_random_seed",
        ):
            arg = argument(node, "deterministic", 1)
            if arg is not None and literal_bool(arg.value) is True:
                self._event(node, "d", det.STRICT)
        elif qualified in det.RUNNERS:
            self._runner(node)
        elif qualified in det.SDPA_SWITCHES:
            arg = argument(node, "enabled", 0)
            if arg is not None and literal_bool(arg.value) is False:
                self._event(node, "d", det.SDPA_SWITCHES[qualified])
        elif qualified in _ENV_SETTERS and mentions_string(node, _CUBLAS):
            self._event(node, "d", det.CUBLAS)

    def _lightning(self, node: cst.Call) -> None:
        value = self._keyword(node, "deterministic")
        if value is not None:
            if literal_bool(value) is False:
                self._event(node, "d", det.ALGORITHMS_OFF)
            elif _on(value):
                self._event(node, "d", det.STRICT)
        if self._keyword(node, "benchmark") is not None:
            self._event(node, "d", det.BENCHMARK)

    def _runner(self, node: cst.Call) -> None:
        """mmengine's ``Runner(randomness=dict(deterministic=True), env_cfg=...)``."""
        randomness = self._mapping(self._keyword(node, "randomness"))
        if randomness is not None:
            value = randomness.get("deterministic")
            if value is not None and _on(value):
                self._both(node)
        env = self._mapping(self._keyword(node, "env_cfg"))
        if env is not None and "cudnn_benchmark" in env:
            self._event(node, "d", det.BENCHMARK)

    def _both(self, node: cst.Call) -> None:
        for kind in ("algorithms", "cudnn", det.STRICT):
            self._event(node, "d", kind)

    def _keyword_true(self, node: cst.Call, keyword: str) -> bool:
        value = self._keyword(node, keyword)
        return value is not None and literal_bool(value) is True

    def _keyword(self, node: cst.Call, keyword: str) -> cst.BaseExpression | None:
        """A keyword argument's value, also when passed in a ``**kwargs`` dict built in this
        function (``kwargs = dict(...)``, ``kwargs["k"] = v``)."""
        arg = argument(node, keyword)
        if arg is not None:
            return arg.value
        for arg in node.args:
            if arg.star == "**":
                mapping = self._mapping(arg.value)
                if mapping is not None and keyword in mapping:
                    return mapping[keyword]
        return None

    def _mapping(self, value: cst.BaseExpression | None) -> dict[str, cst.BaseExpression] | None:
        if value is None:
            return None
        items = dict_literal_items(value)
        if items is not None:
            return items
        if type(value) is cst.Name:
            return self._dicts.get(self._sink.function_key(), {}).get(value.value)
        return None

    # -- assignments and literals ------------------------------------------------------------

    def assign(self, node: cst.Assign) -> None:
        value = node.value
        items = dict_literal_items(value) if isinstance(value, cst.Dict | cst.Call) else None
        constructed = self._qualified(value.func) if type(value) is cst.Call else None
        mha = (
            constructed is not None
            and constructed.startswith("torch.nn.")
            and (constructed.rsplit(".", 1)[-1] == det.MHA_LAYER)
        )
        for target in node.targets:
            target_node = target.target
            if type(target_node) is cst.Attribute and not _is_self(target_node.value):
                qualified = self._qualified(target_node)
                if qualified is not None and qualified.startswith(_BACKENDS):
                    self._event(node, "g")
                    self._flag(node, qualified, value)
            if type(target_node) is cst.Name:
                key = self._sink.function_key()
                if items is not None:
                    self._dicts.setdefault(key, {})[target_node.value] = dict(items)
                if type(value) is cst.Call and self._selects_eager(value):
                    # ``config = AutoConfig.from_pretrained(name, attn_implementation="eager")``
                    self._eager_configs.setdefault(key, set()).add(target_node.value)
                if mha:
                    self._mha_locals.setdefault(key, set()).add(target_node.value)
            elif (
                type(target_node) is cst.Attribute
                and type(target_node.value) is cst.Name
                and target_node.attr.value.lstrip("_") == _ATTN_IMPLEMENTATION
                and literal_str(value) == _EAGER
            ):
                # ``config._attn_implementation = "eager"``
                key = self._sink.function_key()
                self._eager_configs.setdefault(key, set()).add(target_node.value.value)
            elif type(target_node) is cst.Attribute and mha:
                klass = self._sink.class_key()
                if klass is not None and _is_self(target_node.value):
                    self._mha_attributes.setdefault(klass, set()).add(target_node.attr.value)
            elif type(target_node) is cst.Subscript:
                self._item(node, target_node, value)

    def _flag(self, node: cst.Assign, qualified: str, value: cst.BaseExpression) -> None:
        if qualified == f"{rng.CUDNN}.benchmark":
            self._event(node, "d", det.BENCHMARK)
            if literal_bool(value) is None:
                self._event(node, "d", det.BENCHMARK_VARIABLE)
        elif qualified == f"{rng.CUDNN}.deterministic" and literal_bool(value) is False:
            self._event(node, "d", det.CUDNN_OFF)

    def _item(self, node: cst.Assign, target: cst.Subscript, value: cst.BaseExpression) -> None:
        """``os.environ["CUBLAS_WORKSPACE_CONFIG"] = ...``; ``kwargs["key"] = value``."""
        holder = target.value
        if self._qualified(holder) == "os.environ" and mentions_string(target, _CUBLAS):
            self._event(node, "d", det.CUBLAS)
            return
        if type(holder) is cst.Name and len(target.slice) == 1:
            index = target.slice[0].slice
            if type(index) is cst.Index:
                key = literal_str(index.value)
                mapping = self._dicts.get(self._sink.function_key(), {}).get(holder.value)
                if key is not None and mapping is not None:
                    mapping[key] = value

    def string(self, node: cst.SimpleString) -> None:
        raw = node.value
        # Cheap text checks first: strings are everywhere, device names are short.
        if len(raw) <= 12 and ("cu" in raw or "gpu" in raw or "nccl" in raw):
            value = literal_str(node)
            if value is not None and det.cuda_string(value):
                self._event(node, "g")

    def formatted_string(self, node: cst.FormattedString) -> None:
        """``f"cuda:{local_rank}"``: a GPU picked by index."""
        parts = node.parts
        if (
            len(parts) == 2
            and type(parts[0]) is cst.FormattedStringText
            and parts[0].value == det.CUDA_FSTRING_PREFIX
            and type(parts[1]) is cst.FormattedStringExpression
        ):
            self._event(node, "g")


def _dotted(node: cst.BaseExpression) -> str | None:
    try:
        return dotted_name(node)
    except TypeError:
        return None


def _only_statement(body: cst.BaseSuite | cst.CSTNode | None) -> cst.CSTNode | None:
    """The one statement of a block (a simple statement line holding one), or None."""
    if isinstance(body, cst.IndentedBlock | cst.SimpleStatementSuite):
        if len(body.body) != 1:
            return None
        body = body.body[0]
    if type(body) is cst.SimpleStatementLine:
        return body.body[0] if len(body.body) == 1 else None
    return body


def _sets_requires_grad(statement: cst.CSTNode | None, parameter: str) -> bool | None:
    """``p.requires_grad = <bool>`` or ``p.requires_grad_(<bool>)``: the value set."""
    if type(statement) is cst.Assign and len(statement.targets) == 1:
        target = statement.targets[0].target
        if (
            type(target) is cst.Attribute
            and target.attr.value == "requires_grad"
            and type(target.value) is cst.Name
            and target.value.value == parameter
        ):
            return literal_bool(statement.value)
    if type(statement) is cst.Expr and type(statement.value) is cst.Call:
        call = statement.value
        func = call.func
        if (
            type(func) is cst.Attribute
            and func.attr.value == "requires_grad_"
            and type(func.value) is cst.Name
            and func.value.value == parameter
        ):
            mode = argument(call, "requires_grad", 0)
            return True if mode is None else literal_bool(mode.value)
    return None


def _names_head_parameters(test: cst.BaseExpression, name: str) -> bool:
    """``name not in ["fc.weight", "fc.bias"]`` (also ``'%s.weight' % key`` and f-strings):
    every parameter but a few weights and biases, those of a head."""
    if not (
        type(test) is cst.Comparison
        and type(test.left) is cst.Name
        and test.left.value == name
        and len(test.comparisons) == 1
        and type(test.comparisons[0].operator) is cst.NotIn
    ):
        return False
    listed = test.comparisons[0].comparator
    if not isinstance(listed, cst.List | cst.Tuple | cst.Set) or not listed.elements:
        return False
    return len(listed.elements) <= 4 and all(
        _parameter_suffix(element.value) in ("weight", "bias") for element in listed.elements
    )


def _parameter_suffix(node: cst.BaseExpression) -> str | None:
    """The last dotted part a parameter name's string ends with, as written."""
    if type(node) is cst.BinaryOperation and type(node.operator) is cst.Modulo:
        node = node.left
    if type(node) is cst.FormattedString:
        last = node.parts[-1] if node.parts else None
        text = last.value if type(last) is cst.FormattedStringText else None
    else:
        text = literal_str(node)
    if text is None or "." not in text:
        return None
    return text.rsplit(".", 1)[-1]


def _is_self(node: cst.BaseExpression) -> bool:
    return type(node) is cst.Name and node.value == "self"


def _optimizer_like(receiver: cst.BaseExpression) -> bool:
    """``optimizer.step()``, ``self.opt.step()``, ``scaler.step(opt)``."""
    try:
        name = dotted_name(receiver).rsplit(".", 1)[-1].lower()
    except TypeError:
        return False
    return "opt" in name or "scaler" in name


__all__ = ["EventSink", "KernelFacts"]
