"""A kernel that converts a Python float argument with `.to(...)`: on a GPU the argument is a scalar of the kernel's;
Triton's CPU interpreter hands the kernel the float itself, which has no `.to`."""

import torch
import triton
import triton.language as tl

from harness import Case, inputs


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x * alpha.to(tl.float32), mask=mask)


def scale(k, x: torch.Tensor) -> torch.Tensor:
    out = k.empty_like(x)
    k.scale_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), 0.5, BLOCK=64)
    return out


CASE = Case(name="float_scalar", kernels=(scale_kernel,), launch=scale, reference=lambda x: x * 0.5, make_inputs=inputs.randn(1),
            shapes=inputs.shapes(300), example_shape=(40,), dtypes=(torch.float32,))
