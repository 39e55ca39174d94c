"""sin(x): the `mysin` kernel of the torch.compile Triton tutorial."""

from math import prod

import torch
import triton
import triton.language as tl

from harness import Backward, Case, inputs


@triton.jit
def sin_kernel(in_ptr0, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(in_ptr0 + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.sin(x.to(tl.float32)).to(x.dtype), mask=mask)


@triton.jit
def cos_kernel(in_ptr0, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(in_ptr0 + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.cos(x.to(tl.float32)).to(x.dtype), mask=mask)


def launch(k, x: torch.Tensor) -> torch.Tensor:
    out = k.empty_like(x)
    n_elements = x.numel()
    k.sin_kernel[(triton.cdiv(n_elements, 64),)](x, out, n_elements, BLOCK_SIZE=64)
    return out


def backward(k, grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """grad * cos(x), with cos from its own kernel: the tutorial's mysin/mycos."""
    cos = k.empty_like(x)
    n_elements = x.numel()
    k.cos_kernel[(triton.cdiv(n_elements, 64),)](x, cos, n_elements, BLOCK_SIZE=64)
    return grad * cos


CASE = Case(
    name="sin",
    kernels=(sin_kernel,),
    launch=launch,
    reference=torch.sin,
    make_inputs=inputs.randn(1, scale=3),
    shapes=inputs.shapes(4096),
    example_shape=(300,),
    max_batch=1 << 22,  # --perf times 4M elements
    backward=Backward(backward, kernels=(cos_kernel,)),
    flops=lambda x_shape: prod(x_shape),
    tags=frozenset({"elementwise", "tutorial"}),
    description="tl.sin, a fixed tuple grid",
)
