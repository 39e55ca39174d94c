"""Wrapping styles (the chart's columns), each built from a case's launcher and kernels."""

from __future__ import annotations

import enum
import inspect
import math
from types import SimpleNamespace
from typing import Any, Callable

import torch

from harness.case import Case, kernel_name

OP_NAMESPACE = "tcm"


class Wrapping(str, enum.Enum):
    RAW = "raw"  # @triton.jit launched from a plain Python function
    RAW_AUTOGRAD = "raw_autograd"  # the same launcher inside a torch.autograd.Function with the case's backward
    TRITON_OP = "triton_op"  # torch.library.triton_op + wrap_triton
    CUSTOM_OP = "custom_op"  # torch.library.custom_op + register_fake: opaque to the compiler
    CONTROL = "control"  # the case's plain PyTorch reference, no Triton at all

    @property
    def title(self) -> str:
        return _TITLES[self]


_TITLES = {
    Wrapping.RAW: "raw @triton.jit",
    Wrapping.RAW_AUTOGRAD: "raw kernel in autograd.Function",
    Wrapping.TRITON_OP: "triton_op + wrap_triton",
    Wrapping.CUSTOM_OP: "custom_op + register_fake",
    Wrapping.CONTROL: "control (PyTorch reference)",
}


def _poison(tensor: torch.Tensor) -> torch.Tensor:
    # NaN for floats, the largest value for integers: an element the kernel does not write cannot match.
    if tensor.is_floating_point() or tensor.is_complex():
        return tensor.fill_(math.nan)
    if tensor.dtype == torch.bool:
        return tensor.fill_(True)
    return tensor.fill_(torch.iinfo(tensor.dtype).max)


def empty_like(tensor: torch.Tensor, **kwargs: Any) -> torch.Tensor:
    return _poison(torch.empty_like(tensor, **kwargs))


def empty(*size: Any, **kwargs: Any) -> torch.Tensor:
    return _poison(torch.empty(*size, **kwargs))


def kernel_namespace(kernels: tuple[Any, ...], wrap: Callable[[Any], Any] | None = None) -> SimpleNamespace:
    named = {kernel_name(k): (wrap(k) if wrap else k) for k in kernels}
    return SimpleNamespace(**named, empty_like=empty_like, empty=empty)


# torch.library registrations are process-wide and cannot be repeated: build each once.
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


def _signature_of(launch: Callable[..., Any], name: str, body: Callable[..., Any]) -> Callable[..., Any]:
    """Give `body(*args)` the launcher's signature minus `k`, so torch.library can infer the schema."""
    sig = inspect.signature(launch)
    body.__signature__ = sig.replace(parameters=list(sig.parameters.values())[1:])  # type: ignore[attr-defined]
    body.__name__ = name
    return body


def _operator(
    name: str, launch: Callable[..., Any], kernels: tuple[Any, ...], style: Wrapping, mutates: frozenset[str], fake: Callable[..., Any]
) -> Any:
    """A triton_op (kernels wrapped with wrap_triton, traced into) or a custom_op (opaque, with a fake)."""
    k = kernel_namespace(kernels, torch.library.wrap_triton if style is Wrapping.TRITON_OP else None)

    def body(*inputs: Any) -> Any:
        return launch(k, *inputs)

    qualified = f"{OP_NAMESPACE}::{name}"
    if style is Wrapping.TRITON_OP:
        return torch.library.triton_op(qualified, _signature_of(launch, name, body), mutates_args=tuple(mutates))
    op = torch.library.custom_op(qualified, _signature_of(launch, name, body), mutates_args=tuple(mutates))
    op.register_fake(_signature_of(launch, name, fake))
    return op


def _as_tuple(value: Any) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def _input_grads(case: Case, tensor_grads: Any, inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    """The backward gives one gradient per tensor input; autograd wants one per input."""
    grads = iter(_as_tuple(tensor_grads))
    return tuple(next(grads) if isinstance(x, torch.Tensor) else None for x in inputs)


def _backward_callable(case: Case, style: Wrapping) -> Callable[..., Any]:
    """backward(grad, *inputs) -> gradients of the tensor inputs, built in the given style."""
    assert case.backward is not None
    bwd = case.backward
    if not bwd.kernels:
        return lambda grad, *inputs: bwd.launch(None, grad, *inputs)
    if style in (Wrapping.TRITON_OP, Wrapping.CUSTOM_OP):

        def fake(grad: Any, *inputs: Any) -> Any:
            grads = tuple(torch.empty_like(x) for x in inputs if isinstance(x, torch.Tensor))
            return grads[0] if len(grads) == 1 else grads

        return _operator(f"{case.name}_backward_{style.value}", bwd.launch, bwd.kernels, style, frozenset(), fake)
    k = kernel_namespace(bwd.kernels)
    return lambda grad, *inputs: bwd.launch(k, grad, *inputs)


def _register_autograd(case: Case, op: Any, style: Wrapping) -> None:
    backward = _backward_callable(case, style)

    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        ctx.inputs_meta = [isinstance(x, torch.Tensor) for x in inputs]
        ctx.scalars = [None if isinstance(x, torch.Tensor) else x for x in inputs]
        ctx.save_for_backward(*[x for x in inputs if isinstance(x, torch.Tensor)])

    def op_backward(ctx: Any, grad: Any) -> Any:
        saved = iter(ctx.saved_tensors)
        inputs = tuple(next(saved) if is_tensor else scalar for is_tensor, scalar in zip(ctx.inputs_meta, ctx.scalars))
        return _input_grads(case, backward(grad, *inputs), inputs)

    op.register_autograd(op_backward, setup_context=setup_context)


def _register_flops(case: Case, op: Any) -> None:
    from torch.utils.flop_counter import register_flop_formula

    formula = case.flops
    assert formula is not None
    packet = getattr(getattr(torch.ops, OP_NAMESPACE), op._name.split("::")[-1])
    register_flop_formula(packet)(lambda *shapes, out_shape=None, **kwargs: formula(*shapes))


def _build(case: Case, wrapping: Wrapping, cpu_fallback: bool) -> Callable[..., Any]:
    if wrapping is Wrapping.CONTROL:
        return case.reference

    if wrapping is Wrapping.RAW:
        k = kernel_namespace(case.kernels)
        return lambda *inputs: case.launch(k, *inputs)

    if wrapping is Wrapping.RAW_AUTOGRAD:
        k = kernel_namespace(case.kernels)
        backward = _backward_callable(case, Wrapping.RAW) if case.backward else None

        class KernelFunction(torch.autograd.Function):
            @staticmethod
            def forward(ctx: Any, *inputs: Any) -> Any:
                ctx.save_for_backward(*[x for x in inputs if isinstance(x, torch.Tensor)])
                ctx.scalars = [None if isinstance(x, torch.Tensor) else x for x in inputs]
                return case.launch(k, *inputs)

            @staticmethod
            def backward(ctx: Any, grad: Any) -> Any:
                if backward is None:
                    raise NotImplementedError(f"case {case.name!r} declares no backward")
                saved = iter(ctx.saved_tensors)
                inputs = tuple(next(saved) if scalar is None else scalar for scalar in ctx.scalars)
                return _input_grads(case, backward(grad, *inputs), inputs)

        KernelFunction.__name__ = f"{case.name}_function"
        return lambda *inputs: KernelFunction.apply(*inputs)

    if wrapping in (Wrapping.TRITON_OP, Wrapping.CUSTOM_OP):
        name = f"{case.name}_{wrapping.value}" + ("_cpu_fallback" if cpu_fallback else "")
        op = _operator(name, case.launch, case.kernels, wrapping, case.mutates, lambda *inputs: case.reference(*inputs))
        if case.backward is not None:
            _register_autograd(case, op, wrapping)
        if case.flops is not None and not cpu_fallback:
            _register_flops(case, op)
        if cpu_fallback:
            op.register_kernel("cpu")(_signature_of(case.launch, name, lambda *inputs: case.reference(*inputs)))
        return op

    raise ValueError(f"unknown wrapping {wrapping!r}")
