"""A kernel with a buffer input that takes no gradient (a rotary embedding's cos table): x * cos. `scaled_by_buffer`
declares it (no_grad); `scaled_by_buffer_undeclared` does not, so training checks a gradient for the buffer too,
which the backward does not give."""

import dataclasses
from typing import Optional, Tuple

import torch
import triton
import triton.language as tl

from harness import Backward, Case, inputs


@triton.jit
def mul_kernel(x_ptr, c_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * tl.load(c_ptr + offsets, mask=mask), mask=mask)


def scale(k, x: torch.Tensor, cos: torch.Tensor) -> torch.Tensor:
    out = k.empty_like(x)
    k.mul_kernel[(triton.cdiv(x.numel(), 64),)](x, cos, out, x.numel(), BLOCK=64)
    return out


def backward(k, grad: torch.Tensor, x: torch.Tensor, cos: torch.Tensor) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
    return grad * cos, None  # the buffer's gradient is never used


CASE = Case(name="scaled_by_buffer", kernels=(mul_kernel,), launch=scale, reference=lambda x, cos: x * cos, make_inputs=inputs.randn(2),
            shapes=inputs.shapes(300), example_shape=(40,), dtypes=(torch.float32,), backward=Backward(backward),
            no_grad=frozenset({"cos"}))
CASES = [CASE, dataclasses.replace(CASE, name="scaled_by_buffer_undeclared", no_grad=frozenset())]
