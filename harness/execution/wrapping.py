"""Building the wrapping styles (the chart's columns, harness.model.columns) from a case's launcher and kernels."""

from __future__ import annotations

import inspect
import linecache
import sys
import types
from typing import Any, Callable, Mapping

import torch
from torch.utils.flop_counter import register_flop_formula

from harness.authoring.case import Case, kernel_name
from harness.authoring.launcher import rebound, takes_namespace
from harness.execution.poison import empty, empty_like
from harness.model.columns import OP_NAMESPACE, OPERATOR_STYLES, ShippedKind, Wrapping


def kernel_namespace(kernels: tuple[Any, ...]) -> types.SimpleNamespace:
    """The `k` a launcher is given: its kernels by name, and the harness's poisoned allocators."""
    return launcher_namespace(**{kernel_name(k): k for k in kernels})


def launcher_namespace(**kernels: Any) -> types.SimpleNamespace:
    """A `k` holding the given objects under the kernels' names (wrapped kernels, recorders), with the allocators."""
    return types.SimpleNamespace(**kernels, empty_like=empty_like, empty=empty)


def launch_with(launch: Callable[..., Any], kernels: tuple[Any, ...], standing: Mapping[str, Any], *args: Any) -> Any:
    """launch(*args) with `standing[name]` in the place of each case kernel of that name (a wrapped kernel, a
    recorder), in either form a launcher takes (harness.authoring.launcher)."""
    if takes_namespace(launch):
        return launch(launcher_namespace(**{**{kernel_name(k): k for k in kernels}, **standing}), *args)
    return _rebound_by_name(launch, kernels, **standing)(*args)


def _rebound_by_name(launch: Callable[..., Any], kernels: tuple[Any, ...], **standing: Any) -> Callable[..., Any]:
    by_name = {kernel_name(k): k for k in kernels}
    return rebound(launch, {id(by_name[name]): value for name, value in standing.items()})


def plain_call(launch: Callable[..., Any], kernels: tuple[Any, ...]) -> Callable[..., Any]:
    """The launcher as its callers call it, on the kernels as they are: itself in the globals form; in the `k`
    form, a function giving it the namespace (built once: Dynamo sees the same object every call)."""
    if not takes_namespace(launch):
        return launch
    k = kernel_namespace(kernels)
    return lambda *inputs: launch(k, *inputs)


# Built once a process: the styles' callables hold the operators and Functions registered for them.
_built: dict[tuple[str, Wrapping, bool], Callable[..., Any]] = {}


def build(case: Case, wrapping: Wrapping, cpu_fallback: bool = False) -> Callable[..., Any]:
    """The callable a user would write for this style: fn(*inputs) -> outputs.

    With `cpu_fallback`, the operator styles are built again under their own names with the case's
    reference registered as their CPU kernel (`register_kernel("cpu")`), so the fallback never changes
    what the other rows measure.
    """
    key = (case.name, wrapping, cpu_fallback)
    if key not in _built:
        _built[key] = _build(case, wrapping, cpu_fallback)
    return _built[key]


def _signed(signature: inspect.Signature, name: str, body: Callable[..., Any]) -> Callable[..., Any]:
    """Give `body(*args)` the op's signature (Case.signature), so torch.library can infer the schema."""
    body.__signature__ = signature  # type: ignore[attr-defined]
    body.__name__ = name
    return body


# The kernels are wrapped on every call, inside the op: wrap_triton decides then whether to trace (torch runs a
# triton_op's body with wrapping disabled in eager). A `k` launcher gets them in its namespace; a globals one
# runs as a copy whose globals name them (harness.authoring.launcher).
_TRITON_OP_TEMPLATE = """
def {name}(*_tcm_inputs):
    _tcm_k = _tcm_namespace({wrapped})
    return _tcm_launch(_tcm_k, *_tcm_inputs)
"""

_TRITON_OP_GLOBALS_TEMPLATE = """
def {name}(*_tcm_inputs):
    return _tcm_rebound(_tcm_launch, {{{bound}}})(*_tcm_inputs)
"""

# A custom_op's body calls the launcher as its callers do, on the kernels as they are (a namespace built once).
_CUSTOM_OP_TEMPLATE = """
def {name}(*_tcm_inputs):
    return _tcm_launch({k}*_tcm_inputs)
"""


def run_as_module(module_name: str, filename: str, source: str, **names: Any) -> dict[str, Any]:
    """Run source as module `module_name` read from `filename`, its text in linecache (with no mtime, so it is
    never re-read from disk): inspect, Dynamo, Triton and torch's kernel discovery read it like any file."""
    module = types.ModuleType(module_name)
    module.__file__ = filename
    module.__package__ = module_name.rpartition(".")[0]  # its relative imports resolve as in the file it stands for
    module.__dict__.update(names)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    sys.modules[module_name] = module
    exec(compile(source, filename, "exec"), module.__dict__)
    return module.__dict__


def _generated_module(name: str, source: str, title: str, **names: Any) -> dict[str, Any]:
    return run_as_module(f"tcm_generated.{name}", f"<triton-compat-matrix: {title}>", source, **names)


def operator_body_source(name: str, style: Wrapping, launch: Callable[..., Any], kernels: tuple[Any, ...]) -> str:
    """The source of an operator style's body, `name(*inputs)`. A triton_op's names each kernel in a
    `wrap_triton(kernel)` call, as users write it: torch finds a triton_op's kernels by reading that source
    (torch._library.triton.get_inner_triton_kernels) and hashes them into AOTAutograd's cache key; a kernel reached
    only through an object built elsewhere is invisible to it, and editing that kernel would not invalidate the
    cache. Its free names: `_tcm_launch`, each kernel under its own name, `wrap_triton`,
    `_tcm_namespace`, `_tcm_rebound` and `_tcm_k`. The chart runs it in a module of its own; the reproducer
    (harness.execution.reproducer) writes it and runs it the same way."""
    names = [kernel_name(kernel) for kernel in kernels]
    if style is Wrapping.CUSTOM_OP:
        return _CUSTOM_OP_TEMPLATE.format(name=name, k="_tcm_k, " if takes_namespace(launch) else "")
    if takes_namespace(launch):
        return _TRITON_OP_TEMPLATE.format(name=name, wrapped=", ".join(f"{n}=wrap_triton({n})" for n in names))
    return _TRITON_OP_GLOBALS_TEMPLATE.format(name=name, bound=", ".join(f"id({n}): wrap_triton({n})" for n in names))


def operator_body_title(name: str, style: Wrapping) -> str:
    return f"{name} {style.value}"


def _operator_body(name: str, style: Wrapping, launch: Callable[..., Any], kernels: tuple[Any, ...]) -> Callable[..., Any]:
    namespace = _generated_module(name, operator_body_source(name, style, launch, kernels), operator_body_title(name, style),
                                  wrap_triton=torch.library.wrap_triton, _tcm_launch=launch, _tcm_namespace=launcher_namespace,
                                  _tcm_rebound=rebound, _tcm_k=kernel_namespace(kernels), **{kernel_name(k): k for k in kernels})
    return namespace[name]


def _operator(
    name: str, launch: Callable[..., Any], kernels: tuple[Any, ...], style: Wrapping, mutates: frozenset[str], fake: Callable[..., Any],
    signature: inspect.Signature,
) -> Any:
    """A triton_op (kernels wrapped with wrap_triton, traced into) or a custom_op (opaque, with a fake)."""
    qualified = f"{OP_NAMESPACE}::{name}"
    body = _signed(signature, name, _operator_body(name, style, launch, kernels))
    if style is Wrapping.TRITON_OP:
        return torch.library.triton_op(qualified, body, mutates_args=tuple(mutates))
    op = torch.library.custom_op(qualified, body, mutates_args=tuple(mutates))
    op.register_fake(_signed(signature, name, fake))
    return op


def _as_tuple(value: Any) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def _input_grads(tensor_grads: Any, inputs: tuple[Any, ...], given: tuple[int, ...] | None = None) -> tuple[Any, ...]:
    """The backward gives the gradients of the inputs at the positions `given` (Backward.gives), or one per tensor
    input passed; autograd wants one per input."""
    grads = iter(_as_tuple(tensor_grads))
    if given is not None:
        by_position = dict(zip(given, grads))
        return tuple(by_position.get(i) for i in range(len(inputs)))
    return tuple(next(grads) if isinstance(x, torch.Tensor) else None for x in inputs)


def backward_fake(given: tuple[int, ...], *args: Any) -> Any:
    """A backward operator's fake: an empty gradient like each of its arguments at the positions `given` (the inputs
    whose gradients it gives, among what it takes), None for an input passed as None."""
    grads = tuple(None if args[i] is None else torch.empty_like(args[i]) for i in given)
    return grads[0] if len(grads) == 1 else grads


def fake_gradient_positions(case: Case) -> tuple[int, ...]:
    """Where, among what the backward takes, lie the inputs whose gradients it gives (its fake makes one like each)."""
    takes = case.backward_takes
    return tuple(takes.index(name) for name in case.gradients_given)


def _backward_callable(case: Case, style: Wrapping) -> Callable[..., Any]:
    """backward(grad, *inputs) -> gradients of the tensor inputs, built in the given style."""
    assert case.backward is not None
    bwd = case.backward
    if not bwd.kernels:
        if takes_namespace(bwd.launch):
            return lambda grad, *inputs: bwd.launch(None, grad, *inputs)
        return bwd.launch
    if style in OPERATOR_STYLES:
        given = fake_gradient_positions(case)

        def fake(*args: Any) -> Any:
            return backward_fake(given, *args)

        return _operator(f"{case.name}_backward_{style.value}", bwd.launch, bwd.kernels, style, frozenset(), fake,
                         case.backward_signature)
    return plain_call(bwd.launch, bwd.kernels)


# An operator style's autograd, as torch.library's register_autograd takes it: the tensor inputs saved, the scalars
# kept, and the results the backward takes (Case.kept_results: the operator returns every result of a launcher that
# returns a tuple). Free names: `backward_of` (the case's backward in the operator's style, given what
# Backward.takes names) and `_input_grads`.
_OPERATOR_AUTOGRAD_TEMPLATE = """
def setup_context(ctx, inputs, output):
    ctx.inputs_meta = [isinstance(x, torch.Tensor) for x in inputs]
    ctx.scalars = [None if isinstance(x, torch.Tensor) else x for x in inputs]
    ctx.save_for_backward(*[x for x in inputs if isinstance(x, torch.Tensor)]{kept})


def backward(ctx, {grads}):
    saved = iter(ctx.saved_tensors)
    inputs = tuple(next(saved) if is_tensor else scalar for is_tensor, scalar in zip(ctx.inputs_meta, ctx.scalars))
    {names}
    return _input_grads(backward_of({takes}), inputs{given})
"""


def _result_gradient_names(case: Case) -> list[str]:
    """A name for the gradient of each value the operator returns: the outputs' as Backward.takes names them, the
    kept results' unused."""
    if not case.returns:
        return list(case.gradient_names)
    outputs = dict(zip(case.outputs or case.returns, case.gradient_names))
    return [outputs.get(name, f"_grad_{name}") for name in case.returns]


def _given(case: Case) -> str:
    positions = case.gives_positions
    return "" if positions is None else f", {positions!r}"


def operator_autograd_source(case: Case) -> str:
    """The source of an operator style's setup_context and backward (register_autograd). The chart runs this text,
    and the reproducer (harness.execution.reproducer) writes it."""
    indices = [case.returns.index(name) for name in case.kept_results]
    params = [p.name for p in case.input_parameters()]
    names = [f"{', '.join(params)}, = inputs"] + ([f"{', '.join(case.kept_results)}, = saved"] if indices else [])
    return _OPERATOR_AUTOGRAD_TEMPLATE.format(
        kept="".join(", output" if len(case.returns) == 1 else f", output[{i}]" for i in indices), grads=", ".join(_result_gradient_names(case)),
        names="\n    ".join(names), takes=", ".join(case.backward_takes), given=_given(case))


def _register_autograd(case: Case, op: Any, style: Wrapping) -> None:
    name = op._name.split("::")[-1]
    namespace = _generated_module(f"{name}_autograd", operator_autograd_source(case), f"{name}'s autograd", torch=torch,
                                  backward_of=_backward_callable(case, style), _input_grads=_input_grads)
    op.register_autograd(namespace["backward"], setup_context=namespace["setup_context"])


_FUNCTION_TEMPLATE = """
class {name}(torch.autograd.Function):
    @staticmethod
    def forward(ctx, {args}):
        {forward}

    @staticmethod
    def backward(ctx, {grads}):
        {unpack} = ctx.saved_tensors
        {restore}
        return _input_grads(backward_of({takes}), ({args},){given})
"""


def function_name(case: Case) -> str:
    return f"{case.name}_function"


def function_source(case: Case) -> str:
    """The source of the case's torch.autograd.Function, the raw_autograd style: the launcher in a Function written
    out as a user would, with named arguments (Dynamo treats a varargs forward differently). Its free names:
    `launcher` (the case's launcher), `k` (its kernel namespace, where it takes one), `backward_of(grad, *inputs)`
    (the case's backward, the gradients of the tensor inputs) and `_input_grads`. The chart runs this text, and
    the reproducer (harness.execution.reproducer) writes it."""
    params = case.input_parameters()
    names = [p.name for p in params]
    optional = case.optional_inputs  # saved like tensors: save_for_backward takes None
    tensors = [p.name for p in params if p.annotation is torch.Tensor or p.name in optional]
    others = [n for n in names if n not in tensors]
    kept = list(case.kept_results)
    # The launcher is called as written: with the namespace, or not.
    call = f"launcher({'k, ' if takes_namespace(case.launch) else ''}{', '.join(names)})"
    forward = [f"ctx.save_for_backward({', '.join(tensors + kept)})", "; ".join(f"ctx.{n} = {n}" for n in others) or "pass"]
    if case.returns:  # the results by name; the forward saves what the backward takes and returns the outputs
        forward = [f"{', '.join(case.returns)}{',' if len(case.returns) > 1 else ''} = {call}", *forward,
                   f"return {', '.join(case.outputs or case.returns)}"]
    else:
        forward.append(f"return {call}")
    takes = list(case.backward_takes) if case.backward is not None else [*case.gradient_names, *names]
    return _FUNCTION_TEMPLATE.format(
        name=function_name(case),
        args=", ".join(names),
        forward="\n        ".join(forward),
        grads=", ".join(case.gradient_names),
        unpack="(" + "".join(f"{n}, " for n in tensors + kept) + ")",
        restore="; ".join(f"{n} = ctx.{n}" for n in others) or "pass",
        takes=", ".join(takes),
        given=_given(case),
    )


def no_backward_message(case: Case) -> str:
    return f"case {case.name!r} declares no backward"


def _autograd_function(case: Case) -> type:
    """The case's autograd.Function (function_source), with the raw style's backward."""
    backward = _backward_callable(case, Wrapping.RAW) if case.backward else None

    def no_backward(*args: Any) -> Any:
        raise NotImplementedError(no_backward_message(case))

    namespace = _generated_module(function_name(case), function_source(case), f"{case.name} autograd.Function", torch=torch,
                                  launcher=case.launch, k=kernel_namespace(case.kernels), backward_of=backward or no_backward,
                                  _input_grads=_input_grads)
    return namespace[function_name(case)]


def _register_flops(case: Case, op: Any) -> None:
    formula = case.flops
    assert formula is not None
    packet = getattr(getattr(torch.ops, OP_NAMESPACE), op._name.split("::")[-1])
    register_flop_formula(packet)(lambda *shapes, out_shape=None, **kwargs: formula(*shapes))


_CALLER_TEMPLATE = """
def {name}({args}):
    {body}
"""


def call_returning_outputs(case: Case, call: str) -> str:
    """The body of a function that makes `call` (the launcher's, or an operator's that returns every result) and
    returns what the op gives its callers: the outputs among the named results (Case.returns), or all it returns."""
    if len(case.returns) < 2:
        return f"return {call}"
    return f"{', '.join(case.returns)}, = {call}\n    return {', '.join(case.outputs or case.returns)}"


def _caller(name: str, case: Case, callee: str, title: str, all_results: bool = False, **names: Any) -> Callable[..., Any]:
    """The plain function a user calls: the case's inputs as named parameters, passed to `callee` as written
    in a model or a library's Python API (`Fn.apply(x, y)`, `torch.ops.tcm.op(x, y)`). The rows see this
    function, never a bound `apply` or an operator object held as an attribute: strict export of a module
    holding `Fn.apply` fails where the same Function called from a function passes (torch 2.11), a failure
    no user meets. A callee that gives `all_results` (the launcher, the operator styles) has the outputs taken."""
    args = ", ".join(p.name for p in case.input_parameters())
    call = f"{callee}({args})"
    body = call_returning_outputs(case, call) if all_results else f"return {call}"
    source = _CALLER_TEMPLATE.format(name=name, args=args, body=body)
    return _generated_module(f"{name}_caller", source, title, torch=torch, **names)[name]


def _build(case: Case, wrapping: Wrapping, cpu_fallback: bool) -> Callable[..., Any]:
    if wrapping is Wrapping.CONTROL:  # the reference as written; one that takes its outputs where it returns more
        if not case.returns:
            return case.reference
        return _caller(f"{case.name}_{wrapping.value}", case, "reference", f"{case.name} calling its reference",
                       all_results=True, reference=case.reference)

    if wrapping is Wrapping.RAW:
        # A plain function that launches the kernel: a globals launcher is the shape users write already. Any other is
        # called from a module-level function of the case's named inputs, as a user calls it: a `k` launcher's plain_call
        # is a closure over the kernels' namespace, and aot_compile saves a compiled function's closure with it
        # (pickle refuses the JITFunction's RLock) where a module-level function's globals are the loading process's.
        launcher = plain_call(case.launch, case.kernels)
        if launcher is case.launch and not case.returns:
            return launcher
        return _caller(f"{case.name}_{wrapping.value}", case, "launcher", f"{case.name} calling its launcher",
                       all_results=True, launcher=launcher)

    if wrapping is Wrapping.SHIPPED:
        return _shipped_caller(case)

    if wrapping is Wrapping.RAW_AUTOGRAD:
        function = _autograd_function(case)
        return _caller(f"{case.name}_{wrapping.value}", case, f"{function.__name__}.apply",
                       f"{case.name} calling its autograd.Function", **{function.__name__: function})

    if wrapping in OPERATOR_STYLES:
        name = operator(case, wrapping, cpu_fallback)._name
        return _caller(name, case, f"torch.ops.{OP_NAMESPACE}.{name}", f"{name} calling its operator", all_results=True)

    raise ValueError(f"unknown wrapping {wrapping!r}")


# torch.library registrations are process-wide and cannot be repeated: register each once.
_operators: dict[tuple[str, Wrapping, bool], Any] = {}


def operator(case: Case, wrapping: Wrapping, cpu_fallback: bool = False) -> Any:
    """The torch.library operator an operator style registers (what opcheck tests), its fake, autograd and
    flop formula registered with it."""
    assert wrapping in OPERATOR_STYLES, wrapping
    key = (case.name, wrapping, cpu_fallback)
    if key not in _operators:
        _operators[key] = _register_operator(case, wrapping, cpu_fallback)
    return _operators[key]


def _register_operator(case: Case, wrapping: Wrapping, cpu_fallback: bool) -> Any:
    name = f"{case.name}_{wrapping.value}" + ("_cpu_fallback" if cpu_fallback else "")
    op = _operator(name, case.launch, case.kernels, wrapping, case.mutates, lambda *inputs: case.reference(*inputs), case.signature)
    if case.backward is not None:
        _register_autograd(case, op, wrapping)
    if case.flops is not None and not cpu_fallback:
        _register_flops(case, op)
    if cpu_fallback:
        op.register_kernel("cpu")(_signed(case.signature, name, lambda *inputs: case.reference(*inputs)))
    return op


def shipped_operator(case: Case) -> Any:
    """The library's own torch.library operator, as opcheck takes it."""
    assert case.shipped_kind is ShippedKind.OPERATOR, case.shipped_kind
    return case.shipped


def shipped_qualname(case: Case) -> str:
    """The shipped operator's "namespace::name" (an overload packet, an overload or a custom_op's object alike)."""
    shipped = case.shipped
    return str(getattr(shipped, "_qualname", None) or getattr(shipped, "_qualified_op_name", None) or getattr(shipped, "_name", ""))


def _shipped_caller(case: Case) -> Callable[..., Any]:
    """The library's op called as its users call it: `torch.ops.ns.name(x, y)`, `Function.apply(x, y)` or
    `function(x, y)`, from a function of the case's named inputs (see _caller)."""
    shipped, kind = case.shipped, case.shipped_kind
    title = f"{case.name} calling its shipped op"
    if kind is ShippedKind.OPERATOR:
        namespace, _, op_name = shipped_qualname(case).partition("::")
        if op_name:  # by its torch.ops name, as a model calls a library's op (an overload packet or a custom_op alike)
            return _caller(f"{case.name}_shipped", case, f"torch.ops.{namespace}.{op_name.split('.')[0]}", title)
        return _caller(f"{case.name}_shipped", case, "_tcm_shipped", title, _tcm_shipped=shipped)
    if kind is ShippedKind.AUTOGRAD_FUNCTION:
        function = shipped.__self__  # type: ignore[union-attr]
        return _caller(f"{case.name}_shipped", case, f"{function.__name__}.apply", title, **{function.__name__: function})
    return _caller(f"{case.name}_shipped", case, "_tcm_shipped", title, _tcm_shipped=shipped)
