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
    TRITON_OP = "triton_op"  # torch.library.triton_op + wrap_triton
    CUSTOM_OP = "custom_op"  # torch.library.custom_op + register_fake: opaque to the compiler
    CONTROL = "control"  # the case's plain PyTorch reference, no Triton at all

    @property
    def title(self) -> str:
        return _TITLES[self]


_TITLES = {
    Wrapping.RAW: "raw @triton.jit",
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


def kernel_namespace(case: Case, wrap: Callable[[Any], Any] | None = None) -> SimpleNamespace:
    kernels = {kernel_name(k): (wrap(k) if wrap else k) for k in case.kernels}
    return SimpleNamespace(**kernels, empty_like=empty_like, empty=empty)


def _with_input_signature(case: Case, body: Callable[..., Any]) -> Callable[..., Any]:
    """Give `body(*inputs)` the launcher's signature minus `k`, so torch.library can infer the schema."""
    launch_sig = inspect.signature(case.launch)
    body.__signature__ = launch_sig.replace(parameters=case.input_parameters())  # type: ignore[attr-defined]
    body.__name__ = case.name
    return body


def op_name(case: Case, wrapping: Wrapping) -> str:
    return f"{OP_NAMESPACE}::{case.name}_{wrapping.value}"


# torch.library registrations are process-wide and cannot be repeated: build each once.
_built: dict[tuple[str, Wrapping], Callable[..., Any]] = {}


def build(case: Case, wrapping: Wrapping) -> Callable[..., Any]:
    """The callable a user would write for this style: fn(*inputs) -> outputs."""
    key = (case.name, wrapping)
    if key not in _built:
        _built[key] = _build(case, wrapping)
    return _built[key]


def _build(case: Case, wrapping: Wrapping) -> Callable[..., Any]:
    if wrapping is Wrapping.CONTROL:
        return case.reference

    if wrapping is Wrapping.RAW:
        k = kernel_namespace(case)

        def raw(*inputs: Any) -> Any:
            return case.launch(k, *inputs)

        return raw

    if wrapping is Wrapping.TRITON_OP:
        k = kernel_namespace(case, torch.library.wrap_triton)

        def body(*inputs: Any) -> Any:
            return case.launch(k, *inputs)

        op = torch.library.triton_op(
            op_name(case, wrapping), _with_input_signature(case, body), mutates_args=tuple(case.mutates)
        )
        return op

    if wrapping is Wrapping.CUSTOM_OP:
        k = kernel_namespace(case)

        def opaque(*inputs: Any) -> Any:
            return case.launch(k, *inputs)

        op = torch.library.custom_op(
            op_name(case, wrapping), _with_input_signature(case, opaque), mutates_args=tuple(case.mutates)
        )

        def fake(*inputs: Any) -> Any:
            return case.reference(*inputs)

        op.register_fake(_with_input_signature(case, fake))
        return op

    raise ValueError(f"unknown wrapping {wrapping!r}")
