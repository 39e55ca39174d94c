"""x * w with a weight shared by every row: the weight's gradient is a column sum, which the backward kernel
computes by looping over blocks of rows (a `for` over a runtime bound, accumulating in registers)."""

import torch
import triton
import triton.language as tl

from harness import Backward, Case, Tolerance, inputs


@triton.jit
def row_scale_kernel(x_ptr, w_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask)
    tl.store(out_ptr + row * n_cols + cols, x * tl.load(w_ptr + cols, mask=mask), mask=mask)


@triton.jit
def column_sum_kernel(g_ptr, x_ptr, dw_ptr, n_rows, n_cols, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    """dw[c] = sum over rows of g[r, c] * x[r, c], a program per block of columns, looping over blocks of rows."""
    cols = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    acc = tl.zeros([BLOCK_C], dtype=tl.float32)
    for start in range(0, n_rows, BLOCK_R):
        rows = start + tl.arange(0, BLOCK_R)
        mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
        offsets = rows[:, None] * n_cols + cols[None, :]
        g = tl.load(g_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
        x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
        acc += tl.sum(g * x, axis=0)
    tl.store(dw_ptr + cols, acc.to(dw_ptr.dtype.element_ty), mask=cols < n_cols)


def launch(k, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    out = k.empty_like(x)
    rows, cols = x.shape
    k.row_scale_kernel[(rows,)](x, w, out, cols, BLOCK=triton.next_power_of_2(cols))
    return out


def backward(k, grad: torch.Tensor, x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    rows, cols = x.shape
    dw = k.empty_like(w)
    k.column_sum_kernel[(triton.cdiv(cols, 32),)](grad.contiguous(), x, dw, rows, cols, BLOCK_R=16, BLOCK_C=32)
    return grad * w, dw


def make_inputs(shape, dtype, device, generator):
    rows, cols = shape
    x = torch.randn((rows, cols), generator=generator)
    w = torch.randn((cols,), generator=generator)
    return x.to(device=device, dtype=dtype), w.to(device=device, dtype=dtype)


CASE = Case(
    name="column_sum_grad",
    kernels=(row_scale_kernel,),
    launch=launch,
    reference=lambda x, w: x * w,
    make_inputs=make_inputs,
    shapes=inputs.shapes(200, 300),
    example_shape=(4, 100),
    unbatched=frozenset({"w"}),
    backward=Backward(backward, kernels=(column_sum_kernel,)),
    tolerances={torch.float16: Tolerance(atol=1e-2, rtol=1e-2), torch.bfloat16: Tolerance(atol=5e-2, rtol=2e-2)},
    tags=frozenset({"training", "reduction"}),
    description="a backward kernel that loops over blocks of rows for the shared weight's gradient",
)
