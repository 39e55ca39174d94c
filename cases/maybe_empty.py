"""Inputs that may be empty: hypothesis draws sizes from 0, and a launch over zero blocks must still
return an (empty) result."""

import torch
import triton
import triton.language as tl

from harness import Backward, Case, inputs


@triton.jit
def relu_kernel(in_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.maximum(tl.load(in_ptr + offsets, mask=mask), 0.0), mask=mask)


def launch(k, x: torch.Tensor) -> torch.Tensor:
    out = k.empty_like(x)
    n_elements = out.numel()
    k.relu_kernel[(triton.cdiv(n_elements, 128),)](x, out, n_elements, BLOCK=128)  # zero programs when empty
    return out


def backward(k, grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return torch.where(x > 0, grad, torch.zeros_like(grad))


CASE = Case(
    name="maybe_empty",
    kernels=(relu_kernel,),
    launch=launch,
    reference=torch.relu,
    make_inputs=inputs.randn(1),
    shapes=inputs.shapes(64, 300, min_size=0),  # (rows, cols), either of them 0
    example_shape=(4, 33),
    max_batch=1 << 14,
    backward=Backward(backward),
    tags=frozenset({"elementwise", "empty"}),
    description="relu over a (rows, cols) tensor whose rows or cols may be 0",
)
