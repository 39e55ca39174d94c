"""Softmax over the last dimension of a (batch, rows, cols) tensor: a 2-D grid, one row reduction per program."""

import torch
import triton
import triton.language as tl

from harness import Backward, Case, Tolerance, inputs


@triton.jit
def softmax_kernel(in_ptr, out_ptr, n_rows, n_cols, BLOCK_N: tl.constexpr):
    row = tl.program_id(0) * n_rows + tl.program_id(1)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * n_cols + cols, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    out = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * n_cols + cols, out.to(out_ptr.dtype.element_ty), mask=mask)


def launch(k, x: torch.Tensor) -> torch.Tensor:
    out = k.empty_like(x)
    batch, n_rows, n_cols = x.shape
    k.softmax_kernel[(batch, n_rows)](x, out, n_rows, n_cols, BLOCK_N=triton.next_power_of_2(n_cols))
    return out


def backward(k, grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    y = torch.softmax(x.float(), dim=-1)
    g = grad.float()
    return (y * (g - (g * y).sum(dim=-1, keepdim=True))).to(x.dtype)


CASE = Case(
    name="softmax_rows",
    kernels=(softmax_kernel,),
    launch=launch,
    reference=lambda x: torch.softmax(x, dim=-1),
    make_inputs=inputs.randn(1, scale=3),
    shapes=inputs.shapes(16, 33, 300),
    example_shape=(4, 5, 33),
    max_batch=1 << 15,  # --perf times (32768, 5, 33)
    backward=Backward(backward),
    tolerances={torch.float32: Tolerance(atol=1e-6, rtol=1e-5)},
    tags=frozenset({"reduction", "2d-grid"}),
    description="grid (batch, rows); the block covers a row, next_power_of_2(cols) wide",
)
