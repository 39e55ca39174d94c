"""The library's kernels and the launchers the cases name (each takes the harness's namespace `k` first)."""

import torch
import triton
import triton.language as tl

from . import helpers
from ._executions import executed

executed.append(__name__)


@triton.jit
def copy_kernel(in_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(in_ptr + offsets, mask=mask), mask=mask)


# Its body on its def's line: the warm-cache row cannot put a statement in front of it without moving a line.
@triton.jit
def one_line_copy_kernel(in_ptr, out_ptr, n_elements, BLOCK: tl.constexpr): tl.store(out_ptr + tl.arange(0, BLOCK), tl.load(in_ptr + tl.arange(0, BLOCK), mask=tl.arange(0, BLOCK) < n_elements), mask=tl.arange(0, BLOCK) < n_elements)  # noqa: E501,E704


def assigned_copy_kernel(in_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(in_ptr + offsets, mask=mask), mask=mask)


# Decorated by assignment after its def, as some libraries write it (Cut Cross-Entropy's kernels).
assigned_copy_kernel = triton.jit(assigned_copy_kernel)


def launch_copy(k, x: torch.Tensor) -> torch.Tensor:
    out = k.empty_like(x)
    k.copy_kernel[helpers.grid(x.numel())](x, out, x.numel(), BLOCK=helpers.BLOCK)
    return out


def launch_one_line_copy(k, x: torch.Tensor) -> torch.Tensor:
    out = k.empty_like(x)
    k.one_line_copy_kernel[(1,)](x, out, x.numel(), BLOCK=1024)
    return out


def launch_assigned_copy(k, x: torch.Tensor) -> torch.Tensor:
    out = k.empty_like(x)
    k.assigned_copy_kernel[helpers.grid(x.numel())](x, out, x.numel(), BLOCK=helpers.BLOCK)
    return out
