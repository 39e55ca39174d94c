"""A kernel given non-contiguous views: it takes the strides and must not assume a dense row-major layout."""

import torch
import triton
import triton.language as tl

from harness import Backward, Case, inputs


@triton.jit
def double_strided_kernel(x_ptr, out_ptr, n_cols, stride_x_row, stride_x_col, stride_out_row, stride_out_col,
                          BLOCK_C: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x_row + cols * stride_x_col, mask=mask)
    tl.store(out_ptr + row * stride_out_row + cols * stride_out_col, x * 2, mask=mask)


def launch(k, x: torch.Tensor) -> torch.Tensor:
    out = k.empty_like(x)  # keeps x's layout: a transposed input gets a transposed output
    n_rows, n_cols = x.shape
    grid = (n_rows, triton.cdiv(n_cols, 64))
    k.double_strided_kernel[grid](x, out, n_cols, x.stride(0), x.stride(1), out.stride(0), out.stride(1), BLOCK_C=64)
    return out


def make_inputs(shape, dtype, device, generator):
    rows, cols = shape
    # A transposed view: stride 1 along the rows, so dim 1 is the strided one.
    return (torch.randn((cols, rows), generator=generator).to(device=device, dtype=dtype).t(),)


def backward(k, grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return grad * 2


CASE = Case(
    name="strided",
    kernels=(double_strided_kernel,),
    launch=launch,
    reference=lambda x: x * 2,
    make_inputs=make_inputs,
    shapes=inputs.shapes(300, 200),
    example_shape=(8, 65),
    max_batch=1 << 14,
    backward=Backward(backward),
    tags=frozenset({"elementwise", "strided", "2d-grid"}),
    description="a transposed (rows, cols) view; the kernel indexes with the strides it is given",
)
