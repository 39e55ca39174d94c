"""Elementwise add of two tensors: the vector-add kernel of the torch.compile Triton tutorial."""

from math import prod

import torch
import triton
import triton.language as tl

from harness import Backward, Case, inputs


@triton.jit
def add_kernel(in_ptr0, in_ptr1, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(in_ptr0 + offsets, mask=mask)
    y = tl.load(in_ptr1 + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def launch(k, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = k.empty_like(x)
    n_elements = out.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)
    k.add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=128)
    return out


def backward(k, grad: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return grad, grad


def numel(x_shape, y_shape):
    return prod(x_shape)


CASE = Case(
    name="add",
    kernels=(add_kernel,),
    launch=launch,
    reference=lambda x, y: x + y,
    make_inputs=inputs.randn(2),
    shapes=inputs.shapes(4096),
    example_shape=(300,),
    max_batch=1 << 22,  # --perf times 4M elements
    backward=Backward(backward),
    flops=numel,
    tags=frozenset({"elementwise", "tutorial"}),
    description="x + y, two inputs, a lambda grid over BLOCK_SIZE",
)
