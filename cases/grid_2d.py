"""A 2-D grid over rows and columns, both dynamic under export: two Dims, and a grid computed from both."""

import torch
import triton
import triton.language as tl

from harness import Backward, Case, inputs


@triton.jit
def square_2d_kernel(x_ptr, out_ptr, n_rows, n_cols, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    offsets = rows[:, None] * n_cols + cols[None, :]
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x * x, mask=mask)


def launch(k, x: torch.Tensor) -> torch.Tensor:
    out = k.empty_like(x)
    rows, cols = x.shape
    grid = lambda meta: (triton.cdiv(rows, meta["BLOCK_R"]), triton.cdiv(cols, meta["BLOCK_C"]))
    k.square_2d_kernel[grid](x, out, rows, cols, BLOCK_R=16, BLOCK_C=64)
    return out


def backward(k, grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return 2 * x * grad


CASE = Case(
    name="grid_2d",
    kernels=(square_2d_kernel,),
    launch=launch,
    reference=lambda x: x * x,
    make_inputs=inputs.randn(1),
    shapes=inputs.shapes(300, 300),
    example_shape=(17, 65),
    max_batch=4096,
    dynamic_dims={1: 4096},  # the columns are dynamic too: export with two Dims
    backward=Backward(backward),
    tags=frozenset({"elementwise", "2-D grid", "dynamic shapes"}),
    description="x * x on a 2-D grid (rows, columns); export marks both dims dynamic (two Dims)",
)
