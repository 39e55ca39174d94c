"""Cases planted to check where blame lands: a mistake in a case's launcher is the case's error, a limit of Triton's
interpreter is "not tested here", an error torch raises is still the cell's to measure, and a program torch refuses on
a path, the control's as well as the styles', is the environment's.

Not part of the default chart: the matrix loads them only when named with `--cases`.
"""

import time

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

from .planted import _planted, copy_kernel


@triton.jit
def _tanh_of(x):
    return libdevice.tanh(x)  # a device-library function: Triton's interpreter has none of them


@triton.jit
def tanh_kernel(in_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, _tanh_of(tl.load(in_ptr + offsets, mask=mask)), mask=mask)


def _copy(k, x: torch.Tensor) -> torch.Tensor:
    out = k.empty_like(x)
    n = x.numel()
    k.copy_kernel[(triton.cdiv(n, 64),)](x, out, n, BLOCK=64)
    return out


def _copy_without_n_elements(k, x: torch.Tensor) -> torch.Tensor:
    out = k.empty_like(x)
    k.copy_kernel[(triton.cdiv(x.numel(), 64),)](x, out, BLOCK=64)  # the kernel's n_elements is missing
    return out


def _require_multiple_of_64(x: torch.Tensor) -> None:
    if x.numel() % 64:
        raise ValueError(f"planted: {x.numel()} elements, not a multiple of 64")


def _copy_checking_size(k, x: torch.Tensor) -> torch.Tensor:
    _require_multiple_of_64(x)  # refuses example_shape (40,): every call raises
    return _copy(k, x)


def _copy_through_a_misspelt_name(k, x: torch.Tensor) -> torch.Tensor:
    out = k.empty_like(x)
    k.copy_kernal[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)  # no kernel of that name
    return out


def _copy_times_a_longer_vector(k, x: torch.Tensor) -> torch.Tensor:
    # torch refuses the product (n and n + 1 elements) for every n: torch's error, though the case's code made the
    # call, is the cell's to measure
    return _copy(k, x) @ torch.ones(x.shape[0] + 1, dtype=x.dtype, device=x.device)


def _copy_after_waiting_for_ever(k, x: torch.Tensor) -> torch.Tensor:
    while True:  # a wait on something that never comes: every call hangs, in plain eager as in every style
        time.sleep(0.05)
    return _copy(k, x)


def _reference_waiting_for_ever(x: torch.Tensor) -> torch.Tensor:
    while True:  # the case's plain PyTorch answer never comes: every cell, the control's too, meets it
        time.sleep(0.05)
    return x.clone()


def _graph_break_then_copy(k, x: torch.Tensor) -> torch.Tensor:
    torch._dynamo.graph_break()  # nothing in plain eager; compiled with fullgraph=True, torch refuses it
    return _copy(k, x)


def _graph_break_then_identity(x: torch.Tensor) -> torch.Tensor:
    torch._dynamo.graph_break()  # the control's program too: the path, not the wrapping, is what fails
    return x.clone()


def _tanh(k, x: torch.Tensor) -> torch.Tensor:
    out = k.empty_like(x)
    n = x.numel()
    k.tanh_kernel[(triton.cdiv(n, 64),)](x, out, n, BLOCK=64)
    return out


CASES = [
    _planted("blame_ok", copy_kernel, _copy),
    _planted("blame_missing_argument", copy_kernel, _copy_without_n_elements),
    _planted("blame_launcher_raises", copy_kernel, _copy_checking_size),
    _planted("blame_launcher_hangs", copy_kernel, _copy_after_waiting_for_ever),
    _planted("blame_reference_hangs", copy_kernel, _copy, reference=_reference_waiting_for_ever),
    _planted("blame_misspelt_kernel", copy_kernel, _copy_through_a_misspelt_name),
    _planted("blame_torch_refuses", copy_kernel, _copy_times_a_longer_vector),
    _planted("blame_libdevice", tanh_kernel, _tanh, reference=torch.tanh),
    _planted("blame_graph_break", copy_kernel, _graph_break_then_copy, reference=_graph_break_then_identity),
]
